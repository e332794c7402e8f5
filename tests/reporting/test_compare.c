/* Comparison of two benchmark sets: verdicts on synthetic samples with known
 * answers, the p-value against exact enumeration, and the readers of d5 and
 * Google Benchmark JSON. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DATA D5_SOURCE_DIR "/tests/cli/data/"

/* Uniform numbers in [lo, hi) from a fixed 64-bit LCG. */
static void uniform(uint64_t seed, double lo, double hi, double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = lo + (hi - lo) * (double)(seed >> 11) / 9007199254740992.0;
    }
}

static d5_bench_set *set_of(const char *label)
{
    d5_bench_set *s;
    cr_assert_eq(d5_bench_set_create(label, &s), D5_OK);
    return s;
}

/* Compares one benchmark "x" with samples a and b. */
static d5_compare_row compare_one(const double *a, size_t na, const double *b, size_t nb,
                                  const d5_compare_params *p, d5_comparison *c)
{
    d5_bench_set *sa = set_of("A"), *sb = set_of("B");
    cr_assert_eq(d5_bench_set_add_samples(sa, "x", a, na), D5_OK);
    cr_assert_eq(d5_bench_set_add_samples(sb, "x", b, nb), D5_OK);
    cr_assert_eq(d5_compare_sets(sa, sb, p, c), D5_OK, "%s", d5_last_error());
    d5_bench_set_free(sa);
    d5_bench_set_free(sb);
    cr_assert_eq(c->nrows, 1);
    return c->rows[0];
}

Test(compare, equal_distributions_are_no_significant_difference)
{
    double a[200], b[200];
    uniform(1, 100, 110, a, 200);
    uniform(2, 100, 110, b, 200);
    d5_comparison c;
    d5_compare_row r = compare_one(a, 200, b, 200, NULL, &c);
    cr_assert_eq(r.verdict, D5_VERDICT_SAME, "p = %g, ratio %g", r.p_value, r.ratio);
    cr_assert_gt(r.p_value, 0.05);
    cr_assert(fabs(r.ratio - 1) < 0.02, "ratio %g", r.ratio);
    cr_assert_eq(c.count[D5_VERDICT_SAME], 1);
    d5_comparison_free(&c);
    /* The same samples on both sides: U is half the pairs, p = 1. */
    r = compare_one(a, 50, a, 50, NULL, &c);
    cr_assert_eq(r.verdict, D5_VERDICT_SAME);
    cr_assert(fabs(r.p_value - 1) < 1e-12, "p = %g", r.p_value);
    cr_assert(fabs(r.ratio - 1) < 1e-15);
    d5_comparison_free(&c);
}

Test(compare, a_shift_of_20_percent_is_slower_or_faster)
{
    double a[40], b[40];
    uniform(3, 100, 110, a, 40);
    uniform(4, 120, 132, b, 40); /* 1.2 times A's range */
    d5_comparison c;
    d5_compare_row r = compare_one(a, 40, b, 40, NULL, &c);
    cr_assert_eq(r.verdict, D5_VERDICT_SLOWER, "%s", d5_verdict_name(r.verdict));
    cr_assert_lt(r.p_value, 1e-6);
    cr_assert(fabs(r.ratio - 1.2) < 0.03, "ratio %g", r.ratio);
    cr_assert_eq(r.a.n, 40);
    cr_assert(r.a.ci_low <= r.a.median && r.a.median <= r.a.ci_high);
    cr_assert_eq(c.count[D5_VERDICT_SLOWER], 1);
    d5_comparison_free(&c);
    r = compare_one(b, 40, a, 40, NULL, &c);
    cr_assert_eq(r.verdict, D5_VERDICT_FASTER, "%s", d5_verdict_name(r.verdict));
    cr_assert(fabs(r.ratio - 1 / 1.2) < 0.03, "ratio %g", r.ratio);
    d5_comparison_free(&c);
}

Test(compare, a_significant_change_within_the_threshold_is_no_verdict)
{
    double a[300], b[300];
    uniform(5, 100, 101, a, 300);
    uniform(6, 103, 104, b, 300); /* +3%: p is tiny, the change below 5% */
    d5_comparison c;
    d5_compare_row r = compare_one(a, 300, b, 300, NULL, &c);
    cr_assert_lt(r.p_value, 1e-10);
    cr_assert_eq(r.verdict, D5_VERDICT_SAME, "%s", d5_verdict_name(r.verdict));
    d5_comparison_free(&c);
    d5_compare_params p = d5_compare_default_params();
    p.threshold = 0.02;
    r = compare_one(a, 300, b, 300, &p, &c);
    cr_assert_eq(r.verdict, D5_VERDICT_SLOWER);
    d5_comparison_free(&c);
    /* A large change that the test cannot confirm at a strict alpha. */
    double x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8}; /* exact p = 2 / C(8, 4) = 1/35 */
    r = compare_one(x, 4, y, 4, NULL, &c);
    cr_assert_eq(r.verdict, D5_VERDICT_SLOWER);
    d5_comparison_free(&c);
    p = d5_compare_default_params();
    p.alpha = 0.01;
    r = compare_one(x, 4, y, 4, &p, &c);
    cr_assert_eq(r.verdict, D5_VERDICT_SAME);
    cr_assert(strstr(r.note, "with 4 and 4 samples p cannot fall below 0.0286"), "%s", r.note);
    d5_comparison_free(&c);
}

/* The two-sided exact p-value by enumerating every way of choosing which na
 * of the na + nb pooled values belong to A (no ties). */
static double enumerated_p(const double *a, size_t na, const double *b, size_t nb)
{
    size_t n = na + nb;
    double pool[16];
    cr_assert_leq(n, 16);
    for (size_t i = 0; i < n; i++) pool[i] = i < na ? a[i] : b[i - na];
    double u_obs = 0;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++) u_obs += a[i] > b[j];
    double le = 0, ge = 0, total = 0;
    for (uint32_t mask = 0; mask < (1u << n); mask++) {
        if ((size_t)__builtin_popcount(mask) != na) continue;
        double u = 0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++)
                if ((mask >> i & 1) && !(mask >> j & 1)) u += pool[i] > pool[j];
        total++;
        le += u <= u_obs;
        ge += u >= u_obs;
    }
    return fmin(1, 2 * fmin(le, ge) / total);
}

Test(compare, small_p_value_matches_exact_enumeration)
{
    double a[5] = {12.1, 9.8, 11.4, 13.9, 10.7}, b[6] = {11.9, 14.2, 13.1, 15.6, 12.8, 14.9};
    double want = enumerated_p(a, 5, b, 6);
    d5_comparison c;
    d5_compare_row r = compare_one(a, 5, b, 6, NULL, &c);
    cr_assert(r.exact);
    cr_assert(fabs(r.p_value - want) < 1e-12, "p %.15g, enumeration %.15g", r.p_value, want);
    cr_assert(want > 0.05 && want < 0.06, "a case just above alpha: %g", want); /* 0.0519 */
    cr_assert_eq(r.verdict, D5_VERDICT_SAME, "ratio %g, but p > 0.05", r.ratio);
    d5_comparison_free(&c);
}

Test(compare, missing_samples_sides_and_failures_give_no_verdict)
{
    d5_bench_set *a = set_of("base"), *b = set_of("new");
    double x[10], y[10];
    uniform(7, 100, 101, x, 10);
    uniform(8, 200, 201, y, 10);
    cr_assert_eq(d5_bench_set_add_samples(a, "both", x, 10), D5_OK);
    cr_assert_eq(d5_bench_set_add_median(b, "both", 200, NAN, NAN), D5_OK);
    cr_assert_eq(d5_bench_set_add_samples(a, "only-a", x, 10), D5_OK);
    cr_assert_eq(d5_bench_set_add_samples(a, "broken", x, 10), D5_OK);
    cr_assert_eq(d5_bench_set_add_error(b, "broken", "crashed: SIGSEGV"), D5_OK);
    cr_assert_eq(d5_bench_set_add_samples(b, "only-b", y, 10), D5_OK);
    cr_assert_eq(d5_bench_set_add_samples(a, "only-a", x, 10), D5_ERR_INVALID); /* twice */
    cr_assert_eq(d5_bench_set_add_samples(a, "empty", x, 0), D5_ERR_INVALID);
    d5_comparison c;
    cr_assert_eq(d5_compare_sets(a, b, NULL, &c), D5_OK);
    cr_assert_eq(c.nrows, 4);
    const char *names[4] = {"both", "only-a", "broken", "only-b"};
    d5_verdict want[4] = {D5_VERDICT_NO_SAMPLES, D5_VERDICT_ONLY_A, D5_VERDICT_FAILED,
                          D5_VERDICT_ONLY_B};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(c.rows[i].name, names[i]);
        cr_assert_eq(c.rows[i].verdict, want[i], "%s: %s", names[i],
                     d5_verdict_name(c.rows[i].verdict));
        cr_assert(isnan(c.rows[i].p_value), "%s has a p-value", names[i]);
    }
    cr_assert_str_eq(c.rows[0].note, "no samples: p-value unavailable (none in B)");
    cr_assert(fabs(c.rows[0].ratio - 200 / c.rows[0].a.median) < 1e-12); /* medians still known */
    cr_assert_str_eq(c.rows[2].note, "failed in B: crashed: SIGSEGV");
    cr_assert(c.rows[2].b.failed && !c.rows[2].a.failed);
    cr_assert(!c.rows[1].b.present && !c.rows[3].a.present);
    cr_assert_eq(c.count[D5_VERDICT_SLOWER] + c.count[D5_VERDICT_FASTER], 0);
    char line[256];
    d5_comparison_summary(&c, line, sizeof line);
    cr_assert_str_eq(line, "0 compared: 0 slower, 0 faster, 0 no significant difference; 1 "
                           "without samples; 1 failed; 1 only in A; 1 only in B (threshold 5%, "
                           "alpha 0.05)");
    d5_comparison_free(&c);
    d5_comparison_free(&c); /* cleared: a second free is harmless */
    d5_compare_params bad = {.alpha = 0, .threshold = 0.05};
    cr_assert_eq(d5_compare_sets(a, b, &bad, &c), D5_ERR_INVALID);
    d5_bench_set_free(a);
    d5_bench_set_free(b);
}

/* Google Benchmark JSON: repetitions are the samples, in any time unit. */
Test(compare, google_benchmark_json_is_read_in_ns)
{
    d5_bench_set *a, *b, *g;
    cr_assert_eq(d5_bench_set_load(DATA "gbench_a.json", &a), D5_OK, "%s", d5_last_error());
    cr_assert_str_eq(d5_bench_set_format(a), "google-benchmark");
    cr_assert_eq(d5_bench_set_count(a), 3); /* BigO and RMS are not benchmarks of their own */
    d5_bench_entry e;
    cr_assert_eq(d5_bench_set_at(a, 0, &e), D5_OK);
    cr_assert_str_eq(e.name, "BM_Sort/1024");
    cr_assert_eq(e.n, 5);
    cr_assert_str_eq(e.source, "repetitions");
    const double sort_us[5] = {10.2, 10.4, 10.1, 10.3, 10.5};
    for (int i = 0; i < 5; i++)
        cr_assert(fabs(e.samples[i] - sort_us[i] * 1e3) < 1e-9, "%g", e.samples[i]);
    cr_assert(fabs(e.median - 10300) < 1e-9);
    cr_assert_eq(d5_bench_set_at(a, 2, &e), D5_OK);
    cr_assert_str_eq(e.error, "allocation of 1 GiB failed");
    cr_assert_eq(d5_bench_set_at(a, 3, &e), D5_ERR_INVALID);

    cr_assert_eq(d5_bench_set_load(DATA "gbench_b.json", &b), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_bench_set_at(b, 0, &e), D5_OK);
    cr_assert(fabs(e.median - 13400) < 1e-6, "0.0134 ms is 13400 ns: %g", e.median);
    d5_comparison c;
    cr_assert_eq(d5_compare_sets(a, b, NULL, &c), D5_OK);
    cr_assert_eq(c.nrows, 4);
    cr_assert_eq(c.rows[0].verdict, D5_VERDICT_SLOWER); /* +30%, 5 against 5 */
    cr_assert(fabs(c.rows[0].p_value - 2.0 / 252) < 1e-12, "p %g", c.rows[0].p_value);
    cr_assert(fabs(c.rows[0].ratio - 13.4 / 10.3) < 1e-9);
    cr_assert_eq(c.rows[1].verdict, D5_VERDICT_SAME); /* ns against ms: the same times */
    cr_assert(fabs(c.rows[1].ratio - 1) < 1e-9, "ratio %g", c.rows[1].ratio);
    cr_assert_eq(c.rows[2].verdict, D5_VERDICT_FAILED);
    cr_assert_str_eq(c.rows[2].note, "failed in A: allocation of 1 GiB failed");
    cr_assert_eq(c.rows[3].verdict, D5_VERDICT_ONLY_B);
    d5_comparison_free(&c);

    /* Aggregates only: medians, no samples, no verdict however large the change. */
    cr_assert_eq(d5_bench_set_load(DATA "gbench_aggregates.json", &g), D5_OK);
    cr_assert_eq(d5_bench_set_at(g, 0, &e), D5_OK);
    cr_assert_eq(e.n, 0);
    cr_assert(fabs(e.median - 20100) < 1e-6);
    cr_assert(isnan(e.ci_low));
    cr_assert_eq(d5_compare_sets(a, g, NULL, &c), D5_OK);
    cr_assert_eq(c.rows[0].verdict, D5_VERDICT_NO_SAMPLES);
    cr_assert(fabs(c.rows[0].ratio - 20.1 / 10.3) < 1e-9);
    d5_comparison_free(&c);
    d5_bench_set_free(a);
    d5_bench_set_free(b);
    d5_bench_set_free(g);
}

/* write_text, returning the file's path (free it). */
static char *write_file(const char *dir, const char *name, const char *text)
{
    write_text(dir, name, text);
    return path_join(dir, name);
}

static d5_status load_text(const char *dir, const char *text, d5_bench_set **out)
{
    char *p = write_file(dir, "r.json", text);
    d5_status s = d5_bench_set_load(p, out);
    free(p);
    return s;
}

Test(compare, bad_files_are_refused_with_the_reason)
{
    char *t = tmpdir_make();
    d5_bench_set *s = NULL;
    cr_assert_eq(d5_bench_set_load("/nonexistent-d5/r.json", &s), D5_ERR_IO);
    cr_assert(strstr(d5_last_error(), "No such file"), "%s", d5_last_error());
    cr_assert_eq(d5_bench_set_load(t, &s), D5_ERR_IO); /* a folder without results.json */
    cr_assert(strstr(d5_last_error(), "has no results.json"), "%s", d5_last_error());
    cr_assert_eq(load_text(t, "not json\n", &s), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "is not JSON"), "%s", d5_last_error());
    cr_assert_eq(load_text(t, "{\"context\": {}}", &s), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "has no \"benchmarks\" list"), "%s", d5_last_error());
    cr_assert_eq(load_text(t, "{\"benchmarks\": []}", &s), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "is empty"), "%s", d5_last_error());
    cr_assert_eq(load_text(t, "{\"benchmarks\": [3]}", &s), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "benchmarks[0] is not an object"), "%s", d5_last_error());
    cr_assert_eq(load_text(t, "{\"benchmarks\": [{\"real_time\": 1, \"time_unit\": \"ns\"}]}", &s),
                 D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "has no \"name\""), "%s", d5_last_error());
    cr_assert_eq(load_text(t,
                           "{\"benchmarks\": [{\"name\": \"x\", \"run_type\": \"iteration\", "
                           "\"real_time\": 1, \"time_unit\": \"parsec\"}]}",
                           &s),
                 D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "time_unit 'parsec'; expected ns, us, ms or s"), "%s",
              d5_last_error());
    cr_assert_eq(load_text(t, "{\"benchmarks\": [{\"name\": \"x\", \"time_unit\": \"ns\"}]}", &s),
                 D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "('x') has no number \"real_time\""), "%s", d5_last_error());
    char *fifo;
    cr_assert_geq(asprintf(&fifo, "%s/fifo", t), 0);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_eq(d5_bench_set_load(fifo, &s), D5_ERR_IO); /* refused, not opened */
    cr_assert(strstr(d5_last_error(), "is a FIFO"), "%s", d5_last_error());
    cr_assert_null(s);
    free(fifo);
    rmtree(t);
    free(t);
}

/* Before run_type (Google Benchmark < 1.5): aggregates are known by their suffix. */
Test(compare, older_google_benchmark_layout)
{
    char *t = tmpdir_make();
    d5_bench_set *s;
    cr_assert_eq(
        load_text(t,
                  "{\"benchmarks\": [{\"name\": \"BM_x\", \"real_time\": 2, \"time_unit\": "
                  "\"us\"}, {\"name\": \"BM_x\", \"real_time\": 4, \"time_unit\": "
                  "\"us\"}, {\"name\": \"BM_x_mean\", \"real_time\": 3, \"time_unit\": "
                  "\"us\"}, {\"name\": \"BM_y_median\", \"real_time\": 7, "
                  "\"time_unit\": \"s\"}]}",
                  &s),
        D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_bench_set_count(s), 2);
    d5_bench_entry e;
    cr_assert_eq(d5_bench_set_at(s, 0, &e), D5_OK);
    cr_assert_str_eq(e.name, "BM_x");
    cr_assert_eq(e.n, 2);
    cr_assert(fabs(e.median - 3000) < 1e-9);
    cr_assert_eq(d5_bench_set_at(s, 1, &e), D5_OK);
    cr_assert_str_eq(e.name, "BM_y");
    cr_assert_eq(e.n, 0);
    cr_assert(fabs(e.median - 7e9) < 1e-3);
    d5_bench_set_free(s);
    rmtree(t);
    free(t);
}

static d5_status counting(void *ctx, double *v)
{
    int *i = ctx;
    *v = 1000 + 37 * ((*i)++ % 7); /* ns */
    return D5_OK;
}

/* d5 results JSON carries its samples; an older one without them is completed
 * from samples.csv beside it, and a samples.csv of another run is refused. */
Test(compare, d5_results_with_samples_or_samples_csv)
{
    d5_results *r;
    cr_assert_eq(d5_results_create(&r), D5_OK);
    d5_measure_params p = d5_measure_default_params();
    p.warmup = 0;
    p.min_reps = p.max_reps = 21;
    d5_measurement m;
    int i = 0;
    cr_assert_eq(d5_measure_samples(counting, &i, &p, &m), D5_OK);
    cr_assert_eq(d5_results_add(r, "conv/\"quoted\",name", &m, "ns", NULL), D5_OK);
    cr_assert_eq(d5_results_add_error(r, "gemm/broken", "crashed"), D5_OK);
    char *t = tmpdir_make(), *json, *csv;
    cr_assert_geq(asprintf(&json, "%s/results.json", t), 0);
    cr_assert_geq(asprintf(&csv, "%s/samples.csv", t), 0);
    cr_assert_eq(d5_results_write_json(r, json), D5_OK);

    d5_bench_set *s;
    cr_assert_eq(d5_bench_set_load(t, &s), D5_OK, "%s", d5_last_error()); /* the folder */
    cr_assert_str_eq(d5_bench_set_format(s), "d5");
    cr_assert_str_eq(d5_bench_set_label(s), json);
    cr_assert_eq(d5_bench_set_count(s), 2);
    d5_bench_entry e;
    cr_assert_eq(d5_bench_set_at(s, 0, &e), D5_OK);
    cr_assert_str_eq(e.name, "conv/\"quoted\",name");
    cr_assert_str_eq(e.source, "results.json");
    cr_assert_eq(e.n, 21);
    for (size_t k = 0; k < 21; k++) cr_assert_eq(e.samples[k], m.samples[k]);
    cr_assert_eq(e.median, m.stats.median);
    cr_assert_eq(e.ci_low, m.stats.ci_low);
    cr_assert_eq(e.ci_high, m.stats.ci_high);
    cr_assert_eq(d5_bench_set_at(s, 1, &e), D5_OK);
    cr_assert_str_eq(e.error, "crashed");
    d5_bench_set_free(s);

    /* The same file as an older d5 wrote it: no samples in the JSON. */
    json_error_t err;
    json_t *doc = json_load_file(json, 0, &err);
    cr_assert_not_null(doc);
    json_t *med = json_array_get(json_object_get(doc, "benchmarks"), 1);
    cr_assert_eq(json_object_del(json_object_get(med, "d5"), "samples"), 0);
    cr_assert_eq(json_dump_file(doc, json, 0), 0);
    json_decref(doc);
    cr_assert_eq(d5_bench_set_load(json, &s), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_bench_set_at(s, 0, &e), D5_OK);
    cr_assert_eq(e.n, 0, "no samples.csv yet");
    cr_assert_str_eq(e.source, "");
    cr_assert_eq(e.median, m.stats.median);
    cr_assert_eq(e.ci_low, m.stats.ci_low);
    d5_bench_set_free(s);
    cr_assert_eq(d5_results_write_samples_csv(r, csv), D5_OK);
    cr_assert_eq(d5_bench_set_load(json, &s), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_bench_set_at(s, 0, &e), D5_OK);
    cr_assert_str_eq(e.source, "samples.csv");
    cr_assert_eq(e.n, 21);
    for (size_t k = 0; k < 21; k++) cr_assert_eq(e.samples[k], m.samples[k]);
    d5_bench_set_free(s);

    /* A samples.csv with a sample missing, or of another run. */
    char *text = slurp(csv, NULL);
    char *last = strrchr(text, '\n');
    *last = '\0';
    *(strrchr(text, '\n') + 1) = '\0';
    free(write_file(t, "samples.csv", text));
    cr_assert_eq(d5_bench_set_load(json, &s), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "has 20 samples of 'conv/\"quoted\",name'"), "%s",
              d5_last_error());
    FILE *f = fopen(csv, "w");
    fputs("name,unit,index,value\n", f);
    for (int k = 0; k < 21; k++) fprintf(f, "\"conv/\"\"quoted\"\",name\",us,%d,%d\n", k, 5 + k);
    fclose(f);
    cr_assert_eq(d5_bench_set_load(json, &s), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "does not belong to"), "%s", d5_last_error());
    free(write_file(t, "samples.csv", "name,unit,index,value\nx,ns,0\n"));
    cr_assert_eq(d5_bench_set_load(json, &s), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "line 2: expected 4 fields"), "%s", d5_last_error());
    free(text);
    free(json);
    free(csv);
    d5_measurement_free(&m);
    d5_results_free(r);
    rmtree(t);
    free(t);
}

Test(compare, table_and_json)
{
    d5_bench_set *a = set_of("a.json"), *b = set_of("b.json");
    double x[30], y[30];
    uniform(9, 1e6, 1.02e6, x, 30);
    uniform(10, 1.3e6, 1.33e6, y, 30);
    cr_assert_eq(d5_bench_set_add_samples(a, "resnet20/inference", x, 30), D5_OK);
    cr_assert_eq(d5_bench_set_add_samples(b, "resnet20/inference", y, 30), D5_OK);
    cr_assert_eq(d5_bench_set_add_median(a, "lenet/step", 2500, NAN, NAN), D5_OK);
    cr_assert_eq(d5_bench_set_add_median(b, "lenet/step", 2600, NAN, NAN), D5_OK);
    d5_comparison c;
    cr_assert_eq(d5_compare_sets(a, b, NULL, &c), D5_OK);
    d5_bench_set_free(a);
    d5_bench_set_free(b);
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(d5_comparison_print(f, &c), D5_OK);
    fclose(f);
    cr_assert(strstr(buf, "benchmark           A median [95% CI]"), "%s", buf);
    cr_assert(
        strstr(buf, "resnet20/inference  1.01 ms [1.00 ms, 1.01 ms]  1.32 ms [1.31 ms, 1.32 ms]"),
        "%s", buf);
    cr_assert(strstr(buf, "<0.001  slower\n"), "%s", buf);
    cr_assert(strstr(buf, "lenet/step          2.50 us                     2.60 us "), "%s", buf);
    cr_assert(strstr(buf, "1.040       -  no samples: p-value unavailable (none in A and B)\n"),
              "%s", buf);
    cr_assert(strstr(buf, "\n1 compared: 1 slower, 0 faster, 0 no significant difference; 1 "
                          "without samples (threshold 5%, alpha 0.05)\n"),
              "%s", buf);
    /* The columns line up: the verdicts start at the same offset on every line. */
    const char *heads[3] = {"verdict\n", "slower\n", "no samples"};
    size_t at = 0;
    const char *line = buf;
    for (int k = 0; k < 3; k++) {
        const char *v = strstr(line, heads[k]);
        cr_assert_not_null(v, "line %d", k);
        cr_assert_null(memchr(line, '\n', (size_t)(v - line)), "'%s' is on line %d", heads[k], k);
        if (k == 0) at = (size_t)(v - line);
        cr_assert_eq((size_t)(v - line), at, "line %d: %s", k, buf);
        line = strchr(v, '\n') + 1;
    }
    free(buf);

    char *t = tmpdir_make(), *p;
    cr_assert_geq(asprintf(&p, "%s/c.json", t), 0);
    cr_assert_eq(d5_comparison_write_json(&c, p), D5_OK);
    json_t *doc = json_read(p);
    cr_assert_eq(json_integer_value(json_object_get(doc, "schema_version")), 1);
    cr_assert(json_is_object(json_object_get(json_object_get(doc, "context"), "d5")));
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "a"), "path")),
                     "a.json");
    json_t *rows_j = json_object_get(doc, "benchmarks");
    cr_assert_eq(json_array_size(rows_j), 2);
    json_t *r0 = json_array_get(rows_j, 0), *r1 = json_array_get(rows_j, 1);
    cr_assert_str_eq(json_string_value(json_object_get(r0, "verdict")), "slower");
    cr_assert(fabs(json_number_value(json_object_get(r0, "ratio")) - c.rows[0].ratio) < 1e-9);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(r0, "b"), "n")), 30);
    cr_assert_str_eq(json_string_value(json_object_get(r1, "verdict")), "no_samples");
    cr_assert(json_is_null(json_object_get(r1, "p_value")));
    cr_assert(json_is_null(json_object_get(json_object_get(r1, "a"), "ci_low_ns")));
    json_t *sum = json_object_get(doc, "summary");
    cr_assert_eq(json_integer_value(json_object_get(sum, "slower")), 1);
    cr_assert_eq(json_integer_value(json_object_get(sum, "no_samples")), 1);
    json_decref(doc);
    cr_assert_eq(d5_comparison_write_json(&c, "/nonexistent-d5/c.json"), D5_ERR_IO);
    d5_comparison_free(&c);
    free(p);
    rmtree(t);
    free(t);
}

/* Out of memory at every allocation: a status, nothing left allocated. */
Test(compare, out_of_memory_anywhere_leaks_nothing)
{
    int loaded = 0, compared = 0;
    for (long budget = 0; budget < 400 && !(loaded && compared); budget++) {
        failing_alloc_install(budget);
        d5_bench_set *a = NULL, *b = NULL;
        d5_status s = d5_bench_set_load(DATA "gbench_a.json", &a);
        if (s == D5_OK) s = d5_bench_set_load(DATA "gbench_b.json", &b);
        if (s == D5_OK) {
            loaded = 1;
            d5_comparison c;
            s = d5_compare_sets(a, b, NULL, &c);
            if (s == D5_OK) {
                compared = 1;
                d5_comparison_free(&c);
            }
        }
        cr_assert(s == D5_OK || s == D5_ERR_NOMEM, "budget %ld: %s (%s)", budget, d5_status_name(s),
                  d5_last_error());
        d5_bench_set_free(a);
        d5_bench_set_free(b);
        cr_assert_eq(failing_alloc_live(), 0, "budget %ld leaks", budget);
        failing_alloc_remove();
    }
    cr_assert(loaded && compared);
}

Test(compare, verdict_names)
{
    cr_assert_str_eq(d5_verdict_name(D5_VERDICT_SLOWER), "slower");
    cr_assert_str_eq(d5_verdict_str(D5_VERDICT_SAME), "no significant difference");
    cr_assert_str_eq(d5_verdict_name(D5_VERDICT_COUNT), "unknown");
    d5_compare_params p = d5_compare_default_params();
    cr_assert_eq(p.alpha, 0.05);
    cr_assert_eq(p.threshold, 0.05);
}
