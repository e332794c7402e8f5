/* d5 compare: two benchmark results files compared benchmark by benchmark.
 *
 * A benchmark set is what one results file holds: d5's results JSON (written
 * by d5_results_write_json: `d5 bench`'s results.json, `d5 run --json`, ...)
 * or Google Benchmark's JSON (--benchmark_out_format=json). Two sets are
 * compared by benchmark name: the medians with their confidence intervals, the
 * ratio of medians B/A, the two-sided Mann-Whitney U p-value of the samples,
 * and a verdict. A difference is a verdict only when the test is significant
 * (p < alpha) and the ratio lies beyond 1 +/- threshold; without samples on
 * both sides there is no test and no verdict.
 *
 * Times are in nanoseconds throughout; Google Benchmark's time units (ns, us,
 * ms, s) are converted when a file is read.
 */
#ifndef D5_COMPARE_H
#define D5_COMPARE_H

#include "d5/core.h"
#include "d5/stats.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Benchmark sets ------------------------------------------------------------ */

typedef struct d5_bench_set d5_bench_set;

/* One benchmark of a set, borrowed until the set is freed. */
typedef struct d5_bench_entry {
    const char *name;
    const char *error;      /* why the benchmark failed, or NULL */
    const double *samples;  /* n samples in ns, in the order taken; NULL when none */
    size_t n;               /* 0 when the file holds no samples of it */
    double median;          /* ns; NaN when unknown */
    double ci_low, ci_high; /* the median's 95% CI in ns; NaN when unknown */
    const char *source;     /* where the samples came from: "results.json", "samples.csv",
                               "repetitions" (Google Benchmark), "added", or "" when none */
} d5_bench_entry;

/* An empty set; `label` names it in messages and in the comparison (a path,
 * "baseline"; copied; NULL for ""). Free with d5_bench_set_free. */
D5_API D5_NODISCARD d5_status d5_bench_set_create(const char *label, d5_bench_set **out);
/* Reads a results file: d5 results JSON or Google Benchmark JSON. A folder
 * stands for its results.json. d5 samples come from the "samples" array of
 * each benchmark's "d5" block, or for an older results.json from samples.csv
 * in the same folder when it is there. Google Benchmark samples are the
 * "iteration" entries of a run with --benchmark_repetitions (real_time); a run
 * with aggregates only gives medians without samples. D5_ERR_IO for a path
 * that is missing, unreadable or not a regular file (a FIFO is refused, not
 * opened), or a folder without results.json; D5_ERR_FORMAT, naming the file
 * and the entry, for a file that is not JSON, has no "benchmarks" or an empty
 * list, an entry without a name or a time, a time unit other than ns, us, ms
 * or s, or a samples.csv that disagrees with the JSON; D5_ERR_NOMEM. */
D5_API D5_NODISCARD d5_status d5_bench_set_load(const char *path, d5_bench_set **out);
D5_API void d5_bench_set_free(d5_bench_set *set);

/* Adds a benchmark with n >= 1 samples in ns (copied); its median and CI are
 * computed from them. D5_ERR_INVALID for a NULL argument, no samples, a NaN
 * sample or a name already in the set; D5_ERR_NOMEM. */
D5_API D5_NODISCARD d5_status d5_bench_set_add_samples(d5_bench_set *set, const char *name,
                                                       const double *samples, size_t n);
/* Adds a benchmark known only by its median and CI (ns; NaN for unknown).
 * D5_ERR_INVALID as above. */
D5_API D5_NODISCARD d5_status d5_bench_set_add_median(d5_bench_set *set, const char *name,
                                                      double median, double ci_low, double ci_high);
/* Adds a benchmark that failed, with the reason. D5_ERR_INVALID as above. */
D5_API D5_NODISCARD d5_status d5_bench_set_add_error(d5_bench_set *set, const char *name,
                                                     const char *reason);

D5_API size_t d5_bench_set_count(const d5_bench_set *set);
/* The i-th benchmark in the order of the file. D5_ERR_INVALID out of range. */
D5_API D5_NODISCARD d5_status d5_bench_set_at(const d5_bench_set *set, size_t i,
                                              d5_bench_entry *out);
/* The label (for a loaded set: the file read, a folder's results.json). */
D5_API const char *d5_bench_set_label(const d5_bench_set *set);
/* "d5", "google-benchmark", or "" for a set built by hand. */
D5_API const char *d5_bench_set_format(const d5_bench_set *set);

/* ---- Comparison ------------------------------------------------------------------ */

typedef struct d5_compare_params {
    double alpha;     /* significance level of the Mann-Whitney test (default 0.05) */
    double threshold; /* smallest relative change of the median that counts (default 0.05) */
} d5_compare_params;

D5_API d5_compare_params d5_compare_default_params(void);

/* The verdicts: X(ENUM, key in JSON, text). */
#define D5_VERDICT_LIST(X)                                                                         \
    X(SAME, "same", "no significant difference")                                                   \
    X(FASTER, "faster", "faster")                                                                  \
    X(SLOWER, "slower", "slower")                                                                  \
    X(NO_SAMPLES, "no_samples", "no samples: p-value unavailable")                                 \
    X(ONLY_A, "only_a", "only in A")                                                               \
    X(ONLY_B, "only_b", "only in B")                                                               \
    X(FAILED, "failed", "failed")

typedef enum d5_verdict {
#define D5__VERDICT_ENUM(name, key, text) D5_VERDICT_##name,
    D5_VERDICT_LIST(D5__VERDICT_ENUM)
#undef D5__VERDICT_ENUM
        D5_VERDICT_COUNT
} d5_verdict;

/* "slower"; "unknown" outside the list. */
D5_API const char *d5_verdict_name(d5_verdict v);
/* "no significant difference"; "unknown" outside the list. */
D5_API const char *d5_verdict_str(d5_verdict v);

/* One benchmark in one of the two sets. */
typedef struct d5_compare_side {
    int present;            /* the set has this benchmark */
    int failed;             /* ... and it failed there */
    size_t n;               /* samples; 0 when none */
    double median;          /* ns; NaN when unknown */
    double ci_low, ci_high; /* ns; NaN when unknown */
} d5_compare_side;

typedef struct d5_compare_row {
    char *name; /* owned by the comparison */
    d5_compare_side a, b;
    double ratio;   /* median B / median A; NaN when either is unknown */
    double p_value; /* two-sided Mann-Whitney U; NaN without samples on both sides */
    int exact;      /* 1 when p_value is exact (no ties, at most 50 samples a side) */
    d5_verdict verdict;
    char note[256]; /* the verdict in words where its name is not enough
                       ("no samples: p-value unavailable (none in A)",
                       "failed in B: crashed"), else "" */
} d5_compare_row;

typedef struct d5_comparison {
    d5_compare_row *rows; /* A's benchmarks in A's order, then those only in B */
    size_t nrows;
    d5_compare_params params;
    size_t count[D5_VERDICT_COUNT]; /* rows per verdict */
    char *label_a, *label_b;        /* the sets' labels (owned) */
    char format_a[24], format_b[24];
} d5_comparison;

/* Compares set b against set a. `p` may be NULL for the defaults. `out` is
 * filled (free it with d5_comparison_free) and owns everything it points to;
 * the sets may be freed afterwards. D5_ERR_INVALID for NULL sets or output, or
 * alpha outside (0, 1) or a negative threshold; D5_ERR_NOMEM (out untouched). */
D5_API D5_NODISCARD d5_status d5_compare_sets(const d5_bench_set *a, const d5_bench_set *b,
                                              const d5_compare_params *p, d5_comparison *out);
/* Frees what d5_compare_sets allocated and clears *c; NULL is a no-op. */
D5_API void d5_comparison_free(d5_comparison *c);
/* An aligned table (benchmark, A median [CI], B median [CI], ratio, p, verdict)
 * and a summary line. D5_ERR_IO when the stream fails. */
D5_API D5_NODISCARD d5_status d5_comparison_print(FILE *f, const d5_comparison *c);
/* The one summary line, e.g. "3 compared: 1 slower, 0 faster, 2 no significant
 * difference; 1 without samples; 1 only in A (threshold 5%, alpha 0.05)". */
D5_API void d5_comparison_summary(const d5_comparison *c, char *buf, size_t size);
/* {"schema_version", "context": {...}, "a": {"path", "format"}, "b": {...},
 * "params": {"alpha", "threshold"}, "benchmarks": [{"name", "verdict", "verdict_text",
 * "a": {"n", "median_ns", "ci_low_ns", "ci_high_ns"} or null, "b": ..., "ratio",
 * "p_value", "exact"}], "summary": {verdict: count}}; unknown numbers are
 * null. Written atomically. D5_ERR_IO naming the path. */
D5_API D5_NODISCARD d5_status d5_comparison_write_json(const d5_comparison *c, const char *path);

#ifdef __cplusplus
}
#endif
#endif
