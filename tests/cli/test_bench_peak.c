/* The peak d5 bench rates its operators against (cli/bench_peak.c): the
 * higher of the two it measures, whichever was contended; and the %peak
 * counters written against it. */
#define _GNU_SOURCE
#include "cli.h"
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static d5_machine_peaks peak(double median, int contended)
{
    d5_machine_peaks p;
    memset(&p, 0, sizeof p);
    p.fp32_all.median = median;
    p.contention.contended = contended;
    return p;
}

Test(bench_peak, the_higher_of_the_two)
{
    /* Contended before the suite (201 GFLOP/s), 389 after: the one after. */
    d5_machine_peaks before = peak(201, 1), after = peak(389, 0);
    cli_peak_choice c = cli_bench_peak(&before, &after);
    cr_assert_float_eq(c.gflops, 389, 0);
    cr_assert_str_eq(c.which, "after");
    cr_assert(strstr(c.why, "the one before the suite was measured under contention"), "%s", c.why);
    /* The first higher: the first, whatever the second's contention. */
    before = peak(400, 0);
    after = peak(389, 1);
    c = cli_bench_peak(&before, &after);
    cr_assert_float_eq(c.gflops, 400, 0);
    cr_assert_str_eq(c.which, "before");
    cr_assert(strstr(c.why, "the one after the suite was measured under contention"), "%s", c.why);
    after = peak(389, 0);
    c = cli_bench_peak(&before, &after);
    cr_assert_str_eq(c.why, "the higher of the two");
    /* Equal: the first. */
    after = peak(400, 0);
    cr_assert_str_eq(cli_bench_peak(&before, &after).which, "before");
}

Test(bench_peak, a_missing_measurement_is_not_a_peak)
{
    d5_machine_peaks before = peak(300, 0), none = peak(0, 0), nan_peak = peak(NAN, 0);
    cli_peak_choice c = cli_bench_peak(&before, &none);
    cr_assert_float_eq(c.gflops, 300, 0);
    cr_assert_str_eq(c.why, "the only one measured");
    c = cli_bench_peak(&nan_peak, &before);
    cr_assert_float_eq(c.gflops, 300, 0);
    cr_assert_str_eq(c.which, "after");
    c = cli_bench_peak(&none, &nan_peak);
    cr_assert_float_eq(c.gflops, 0, 0);
    cr_assert_str_eq(c.which, "none");
    c = cli_bench_peak(NULL, NULL);
    cr_assert_float_eq(c.gflops, 0, 0);
}

Test(bench_peak, pct_peak_against_the_chosen_peak)
{
    d5_results *r;
    cr_assert_eq(d5_results_create(&r), D5_OK);
    d5_measurement m;
    memset(&m, 0, sizeof m);
    double x[3] = {1, 2, 3};
    m.samples = x;
    m.n = 3;
    m.stats.median = 2;
    size_t i0, i1;
    cr_assert_eq(d5_results_add(r, "Gemm/a/blas", &m, "ns", &i0), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_results_add(r, "Gemm/b/blas", &m, "ns", &i1), D5_OK, "%s", d5_last_error());
    cli_rates rates = {0};
    cr_assert_eq(cli_rates_note(&rates, i0, 300), D5_OK);
    cr_assert_eq(cli_rates_note(&rates, i1, 450), D5_OK);
    cr_assert_eq(cli_rates_pct_peak(r, &rates, 400), D5_OK);
    char *dir = tmpdir_make(), path[4200];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    cr_assert_eq(d5_results_write_csv(r, path), D5_OK, "%s", d5_last_error());
    char *text = slurp(path, NULL);
    cr_assert_not_null(text);
    /* The counter columns come last: pct_peak, then the flag above 100%. */
    cr_assert(strstr(text, ",pct_peak,peak_under_measured\n"), "%s", text);
    cr_assert(strstr(text, ",75,\n"), "300 of 400: %s", text);
    cr_assert(strstr(text, ",112.5,1\n"), "450 of 400: %s", text);
    free(text);
    rmtree(dir);
    free(dir);
    d5_results_free(r);
    for (size_t k = 0; k < CLI_RATES_MAX - 2; k++)
        cr_assert_eq(cli_rates_note(&rates, 0, 1), D5_OK);
    cr_assert_eq(cli_rates_note(&rates, 0, 1), D5_ERR_RANGE);
}
