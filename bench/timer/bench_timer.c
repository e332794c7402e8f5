/* bench/timer: the cost of one start+end pair of d5's region timer, side by
 * side with the Python timer it replaces (bench/timer/maelstrom_timer.py),
 * measured in the same run and summarised with the same statistics.
 *
 *     d5-bench-timer [--python /usr/bin/python3] [--time S]
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#ifndef D5_SOURCE_DIR
#define D5_SOURCE_DIR "."
#endif

/* Runs the Python reference and reads its samples (ns per pair). */
static d5_status python_samples(const char *python, double seconds, d5_measurement *m)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s/bench/timer/maelstrom_timer.py' --seconds %g", python,
             D5_SOURCE_DIR, seconds);
    FILE *p = popen(cmd, "r");
    if (!p) return d5_error(D5_ERR_IO, "cannot run '%s'", cmd);
    size_t cap = 1024, n = 0;
    double *x = malloc(cap * sizeof *x);
    double v;
    while (x && fscanf(p, "%lf", &v) == 1) {
        if (n == cap) {
            double *g = realloc(x, 2 * cap * sizeof *x);
            if (!g) break;
            x = g;
            cap *= 2;
        }
        x[n++] = v;
    }
    int rc = pclose(p);
    if (!x || n == 0 || rc != 0) {
        free(x);
        return d5_error(D5_ERR_IO, "the Python reference ('%s') gave no samples (exit %d)", cmd,
                        rc);
    }
    memset(m, 0, sizeof *m);
    m->samples = d5_alloc(n * sizeof *x, "python samples");
    if (!m->samples) {
        free(x);
        return D5_ERR_NOMEM;
    }
    memcpy(m->samples, x, n * sizeof *x);
    free(x);
    m->n = n;
    m->stop = D5_STOP_TIME;
    return d5_stats_compute(m->samples, n, &m->stats);
}

int main(int argc, char **argv)
{
    const char *python = "/usr/bin/python3";
    double seconds = 2.0;
    const cli_opt opts[] = {
        {"python", CLI_STRING, &python, "PATH",
         "Python interpreter for the reference (default /usr/bin/python3)", 0, 0},
        {"time", CLI_DOUBLE, &seconds, "S", "time budget of each side in seconds (default 2)", 0.1,
         600},
    };
    const cli_spec spec = {
        CLI_SPEC("bench-timer", "[--python PATH] [--time S]",
                 "Cost of one timer start+end pair: d5 (TSC and monotonic clocks, by name\n"
                 "and by id) against a MAELSTROM-style Python timer, in one run.",
                 opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    cli_echo(stdout, &spec);

    d5_results *r;
    d5_status s = d5_results_create(&r);
    d5_measure_params mp = d5_measure_default_params();
    mp.max_time_s = seconds;
    mp.rel_ci = 0.01;
    if (s == D5_OK) s = d5_suite_timer_overhead(r, &mp);
    d5_measurement py;
    if (s == D5_OK) s = python_samples(python, seconds, &py);
    if (s == D5_OK) s = d5_results_add(r, "python/maelstrom-timer/pair", &py, "ns", NULL);
    if (s != D5_OK) return cli_fail("bench-timer", s);
    s = d5_results_print(stdout, r);

    /* The headline: each d5 variant against the Python pair, as a ratio of
     * medians and a rank test on the two sample sets. */
    size_t ipy;
    const double *ys;
    size_t ny;
    d5_stats ps;
    if (s == D5_OK) s = d5_results_find(r, "python/maelstrom-timer/pair", &ipy);
    if (s == D5_OK) s = d5_results_samples(r, ipy, &ys, &ny, &ps);
    if (s == D5_OK)
        printf("\nd5 against the Python timer (ratio of medians; Mann-Whitney U two-sided p)\n");
    const char *variants[] = {"timer/pair/tsc/string-key", "timer/pair/tsc/id",
                              "timer/pair/monotonic/string-key"};
    for (size_t v = 0; s == D5_OK && v < sizeof variants / sizeof variants[0]; v++) {
        size_t i;
        const double *xs;
        size_t nx;
        d5_stats xst;
        d5_mwu u;
        if (d5_results_find(r, variants[v], &i) != D5_OK ||
            d5_results_samples(r, i, &xs, &nx, &xst) != D5_OK) {
            printf("  %-34s not measured: %s\n", variants[v], d5_last_error());
            continue;
        }
        s = d5_mann_whitney(xs, nx, ys, ny, &u);
        if (s == D5_OK)
            printf(
                "  %-34s %7.1f ns vs %7.1f ns: %.4f x the Python cost (%.0f x faster), p = %.2g\n",
                variants[v], xst.median, ps.median, xst.median / ps.median, ps.median / xst.median,
                u.p_value);
    }
    d5_results_free(r);
    d5_measurement_free(&py);
    if (s != D5_OK) return cli_fail("bench-timer", s);
    return D5_EXIT_OK;
}
