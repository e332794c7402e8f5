#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static d5_results *sample_results(void)
{
    d5_results *r;
    cr_assert_eq(d5_results_create(&r), D5_OK);
    d5_measurement m = fixed_measurement();
    size_t idx;
    cr_assert_eq(d5_results_add(r, "gemm/1760x128x1760", &m, "ns", &idx), D5_OK);
    cr_assert_eq(idx, 0);
    cr_assert_eq(d5_results_counter(r, idx, "GFLOP/s", 12.5, "GFLOP/s"), D5_OK);
    d5_measurement_free(&m);
    cr_assert_eq(d5_results_add_error(r, "conv/broken", "crashed: SIGSEGV"), D5_OK);
    cr_assert_eq(d5_results_context(r, "suite", "unit"), D5_OK);
    cr_assert_eq(d5_results_context_number(r, "peak_gflops", 99.5), D5_OK);
    cr_assert_eq(d5_results_count(r), 2);
    return r;
}

Test(results, json_follows_google_benchmark_layout)
{
    d5_results *r = sample_results();
    char *dir = tmpdir_make(), *p;
    cr_assert_geq(asprintf(&p, "%s/r.json", dir), 0);
    cr_assert_eq(d5_results_write_json(r, p), D5_OK);
    json_t *doc = json_read(p);
    json_t *ctx = json_object_get(doc, "context");
    cr_assert_str_eq(json_string_value(json_object_get(ctx, "suite")), "unit");
    cr_assert(fabs(json_number_value(json_object_get(ctx, "peak_gflops")) - 99.5) < 1e-12);
    cr_assert(json_is_integer(json_object_get(ctx, "num_cpus")));
    json_t *b = json_object_get(doc, "benchmarks");
    cr_assert_eq(json_array_size(b), 5); /* mean, median, stddev, cv + the failed one */
    const char *aggs[4] = {"mean", "median", "stddev", "cv"};
    for (int i = 0; i < 4; i++) {
        json_t *e = json_array_get(b, (size_t)i);
        cr_assert_str_eq(json_string_value(json_object_get(e, "run_name")), "gemm/1760x128x1760");
        cr_assert_str_eq(json_string_value(json_object_get(e, "run_type")), "aggregate");
        cr_assert_str_eq(json_string_value(json_object_get(e, "aggregate_name")), aggs[i]);
        cr_assert_str_eq(json_string_value(json_object_get(e, "time_unit")), "ns");
        cr_assert_eq(json_integer_value(json_object_get(e, "repetitions")), 10);
        cr_assert(json_is_number(json_object_get(e, "real_time")));
        cr_assert(json_is_number(json_object_get(e, "GFLOP/s")));
    }
    json_t *med = json_array_get(b, 1);
    cr_assert_str_eq(json_string_value(json_object_get(med, "name")), "gemm/1760x128x1760_median");
    cr_assert(fabs(json_number_value(json_object_get(med, "real_time")) - 102) < 1e-9);
    json_t *d5 = json_object_get(med, "d5");
    cr_assert_str_eq(json_string_value(json_object_get(d5, "stop")), "ci"); /* 2 / 102 < 2% */
    cr_assert(fabs(json_number_value(json_object_get(json_object_get(d5, "stats"), "ci_low")) -
                   100) < 1e-9);
    json_t *bad = json_array_get(b, 4);
    cr_assert(json_is_true(json_object_get(bad, "error_occurred")));
    cr_assert_str_eq(json_string_value(json_object_get(bad, "error_message")), "crashed: SIGSEGV");
    json_decref(doc);
    free(p);
    rmtree(dir);
    free(dir);
    d5_results_free(r);
}

Test(results, csv_and_samples_and_table)
{
    d5_results *r = sample_results();
    char *dir = tmpdir_make(), *p, *ps;
    cr_assert_geq(asprintf(&p, "%s/r.csv", dir), 0);
    cr_assert_geq(asprintf(&ps, "%s/s.csv", dir), 0);
    cr_assert_eq(d5_results_write_csv(r, p), D5_OK);
    cr_assert_eq(d5_results_write_samples_csv(r, ps), D5_OK);
    char *csv = slurp(p, NULL);
    cr_assert_eq(count_lines(csv), 3);
    const char *header =
        "name,unit,n,median,ci_low,ci_high,mean,stdev,min,p5,p95,max,stop,error,unstable,contended,"
        "others_cores,GFLOP/s\n";
    cr_assert(strncmp(csv, header, strlen(header)) == 0, "%s", csv);
    cr_assert(strstr(csv, "\ngemm/1760x128x1760,ns,10,102,"), "%s", csv);
    cr_assert(strstr(csv, ",ci,,0,"), "stable, no error: %s", csv);
    cr_assert(strstr(csv, ",12.5\n"), "%s", csv);
    cr_assert(strstr(csv, ",crashed: SIGSEGV,"), "%s", csv);
    char *s = slurp(ps, NULL);
    cr_assert_eq(count_lines(s), 11);
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(d5_results_print(f, r), D5_OK);
    fclose(f);
    cr_assert(strstr(buf, "102 ns"), "%s", buf);
    cr_assert(strstr(buf, "FAILED"));
    cr_assert(strstr(buf, "GFLOP/s=12.5"));
    free(buf);
    free(csv);
    free(s);
    free(p);
    free(ps);
    rmtree(dir);
    free(dir);
    d5_results_free(r);
}

Test(results, bad_calls)
{
    d5_results *r;
    cr_assert_eq(d5_results_create(&r), D5_OK);
    d5_measurement empty = {0};
    cr_assert_eq(d5_results_add(r, "x", &empty, "ns", NULL), D5_ERR_INVALID);
    cr_assert_eq(d5_results_counter(r, 3, "c", 1, ""), D5_ERR_INVALID);
    cr_assert_eq(d5_results_write_json(r, "/nonexistent-d5/r.json"), D5_ERR_IO);
    d5_results_free(r);
    d5_results_free(NULL);
}
