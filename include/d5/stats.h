/* d5 statistics: summaries with the median's nonparametric confidence interval,
 * adaptive measurement, and the Mann-Whitney U rank test.
 *
 * Following Hoefler & Belli, "Scientific Benchmarking of Parallel Computing
 * Systems" (SC15): warm-up runs are excluded, repetitions go on until the 95%
 * confidence interval of the median is tight (or a budget ends), normality is
 * never assumed, and two runs are compared with a rank test.
 */
#ifndef D5_STATS_H
#define D5_STATS_H

#include "d5/core.h"
#include "d5/threads.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A summary of n samples. Quantiles interpolate linearly between order
 * statistics (Hyndman & Fan type 7, numpy's default). The median's confidence
 * interval is [x(ci_rank_lo), x(ci_rank_hi)] with 1-based ranks: exact binomial
 * order statistics for n <= D5_STATS_EXACT_MAX, the normal approximation of
 * Le Boudec beyond. When n is too small for any interval to reach the level
 * (n < 6 at 95%), the interval is [min, max] and ci_coverage says what it covers. */
typedef struct d5_stats {
    size_t n;
    double min, p5, q1, median, q3, p95, max;
    double mean, stdev; /* stdev is the sample standard deviation (n - 1) */
    double iqr;         /* q3 - q1 */
    double ci_low, ci_high;
    size_t ci_rank_lo, ci_rank_hi;
    double ci_level;    /* requested, e.g. 0.95 */
    double ci_coverage; /* achieved coverage of [ci_low, ci_high] */
} d5_stats;

#define D5_STATS_EXACT_MAX 100

/* Summarises x[0..n-1] (not modified) at confidence level 0.95.
 * D5_ERR_INVALID for n == 0 or a NaN sample; D5_ERR_NOMEM. */
D5_API D5_NODISCARD d5_status d5_stats_compute(const double *x, size_t n, d5_stats *out);
/* As d5_stats_compute with another level in (0, 1). */
D5_API D5_NODISCARD d5_status d5_stats_compute_level(const double *x, size_t n, double level,
                                                     d5_stats *out);
/* The 1-based ranks of the median's confidence interval for n samples, and its
 * coverage. D5_ERR_INVALID for n == 0 or a level outside (0, 1). */
D5_API D5_NODISCARD d5_status d5_stats_median_ci_ranks(size_t n, double level, size_t *lo,
                                                       size_t *hi, double *coverage);
/* Quantile q in [0, 1] of sorted[0..n-1] (type 7). */
D5_API double d5_stats_quantile_sorted(const double *sorted, size_t n, double q);

/* ---- Stability: is the median worth reporting? --------------------------------- */

/* Fewer samples than this are not searched for modes. */
#define D5_STATS_MODES_MIN_N 20
/* A median whose CI half-width exceeds this fraction of it is unstable. */
#define D5_STABLE_MAX_REL_CI 0.05

/* Number of modes of x[0..n-1]: peaks of a Gaussian kernel density estimate
 * (Silverman's bandwidth, over the 1st..99th percentiles) that reach 10% of
 * the highest peak and are separated from the previous mode by a valley below
 * 60% of the lower of the two. 0 when n < D5_STATS_MODES_MIN_N (or out of
 * memory), else at least 1. */
D5_API int32_t d5_stats_modes(const double *x, size_t n);

typedef struct d5_stability {
    int32_t unstable; /* 1: report the median as unstable, not as a result */
    int32_t modes;    /* d5_stats_modes */
    double rel_ci;    /* the median's CI half-width / median */
    char reason[96];  /* "2 modes in 480 samples", "median's CI is +-9% of it" */
} d5_stability;

/* The rule: unstable when the samples have two or more modes, or when the
 * median's CI half-width exceeds D5_STABLE_MAX_REL_CI of the median. `st` are
 * the samples' statistics. D5_ERR_INVALID for NULL arguments. */
D5_API D5_NODISCARD d5_status d5_stability_check(const double *x, size_t n, const d5_stats *st,
                                                 d5_stability *out);

/* ---- Adaptive measurement --------------------------------------------------- */

typedef struct d5_measure_params {
    uint32_t warmup;   /* runs before measuring, discarded (default 3) */
    uint32_t min_reps; /* never fewer samples (default 10) */
    uint32_t max_reps; /* never more samples (default 10000) */
    double max_time_s; /* budget for the measured runs, seconds (default 10) */
    double rel_ci;     /* stop when the CI half-width <= rel_ci * median (default 0.02) */
    double level;      /* confidence level (default 0.95) */
} d5_measure_params;

D5_API d5_measure_params d5_measure_default_params(void);

typedef enum d5_stop_reason {
    D5_STOP_CI = 0,       /* the confidence interval reached the requested width */
    D5_STOP_MAX_REPS = 1, /* max_reps samples were taken */
    D5_STOP_TIME = 2      /* the time budget ran out */
} d5_stop_reason;

/* "ci", "max-reps", "time". */
D5_API const char *d5_stop_reason_name(d5_stop_reason r);

typedef struct d5_measurement {
    double *samples; /* n samples in the order taken; owned, see d5_measurement_free */
    size_t n;
    uint32_t warmup; /* runs discarded */
    d5_stats stats;
    d5_stop_reason stop;
    double rel_ci_reached;            /* CI half-width / median at the end */
    double elapsed_s;                 /* wall time of the measured runs, warm-up excluded */
    d5_stability stability;           /* unstable runs are reported as such */
    d5_contention contention;         /* what competed for the cores during the measured runs */
    double nivcsw_per_rep;            /* involuntary context switches of this process per run */
    int32_t threads_min, threads_max; /* team sizes used (d5_threads_adapt may change it) */
} d5_measurement;

/* One run of the code under test; d5 times it with the monotonic clock (ns). */
typedef d5_status (*d5_run_fn)(void *ctx);
/* One sample produced by the code itself (e.g. ns per iteration of an inner
 * loop, or a GPU event time), in any unit. */
typedef d5_status (*d5_sample_fn)(void *ctx, double *sample);

/* Runs fn adaptively and stores the samples in ns. A failing run stops the
 * measurement and its status is returned; `out` is then untouched. Between
 * runs it calls d5_threads_adapt (automatic thread count). It does not stop
 * at a tight CI while the samples are multimodal: it goes on to its budget
 * and the result says "unstable". Contention on the cores is measured over
 * the measured runs and stored in `out`. */
D5_API D5_NODISCARD d5_status d5_measure_run(d5_run_fn fn, void *ctx, const d5_measure_params *p,
                                             d5_measurement *out);
/* Same loop for self-measured samples. */
D5_API D5_NODISCARD d5_status d5_measure_samples(d5_sample_fn fn, void *ctx,
                                                 const d5_measure_params *p, d5_measurement *out);
D5_API void d5_measurement_free(d5_measurement *m);

/* ---- Mann-Whitney U ------------------------------------------------------------ */

typedef struct d5_mwu {
    double u_a;          /* U of sample a: number of pairs (a_i > b_j), ties count 1/2 */
    double u_b;          /* na * nb - u_a */
    double z;            /* normal approximation (tie and continuity corrected) */
    double p_value;      /* two-sided */
    int exact;           /* 1 when p_value comes from the exact distribution (no ties, small) */
    double effect;       /* u_a / (na * nb): probability that a random a exceeds a random b */
    double median_ratio; /* median(a) / median(b) */
} d5_mwu;

/* Compares two independent sample sets. Exact p-values when there are no ties
 * and na, nb <= 50; otherwise the tie-corrected normal approximation.
 * D5_ERR_INVALID for an empty set or NaN. */
D5_API D5_NODISCARD d5_status d5_mann_whitney(const double *a, size_t na, const double *b,
                                              size_t nb, d5_mwu *out);

#ifdef __cplusplus
}
#endif
#endif
