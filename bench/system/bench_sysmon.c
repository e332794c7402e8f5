/* bench/system: what the system sampler costs a computation. A fixed workload
 * (a dependent floating-point chain on every core) is timed with the sampler
 * off, at 10 Hz and at 100 Hz, in alternating blocks, and the medians are
 * compared: ratio to the sampler-off median with a bootstrap 95% CI and a
 * Mann-Whitney U p-value. The sampler's own CPU time is printed beside.
 *
 *     d5-bench-sysmon [--rounds N] [--reps K] [--work-ms MS] [--threads N]
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct worker {
    pthread_t thread;
    uint64_t iters;
    double seed, out;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    double x = w->seed;
    for (uint64_t i = 0; i < w->iters; i++) x = x * 0.999999 + 1e-3;
    w->out = x;
    return NULL;
}

/* One repetition: `threads` workers of `iters` steps each; ns. */
static double rep(worker *w, int threads, uint64_t iters)
{
    uint64_t t0 = d5_monotonic_ns();
    for (int i = 0; i < threads; i++) {
        w[i].iters = iters;
        w[i].seed = 2.0 + i;
        if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) w[i].thread = pthread_self();
    }
    for (int i = 0; i < threads; i++)
        if (!pthread_equal(w[i].thread, pthread_self()))
            pthread_join(w[i].thread, NULL);
        else
            work(&w[i]);
    return (double)(d5_monotonic_ns() - t0);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *x, size_t n)
{
    qsort(x, n, sizeof *x, by_value);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* 95% percentile-bootstrap interval of median(a) / median(b). */
static void ratio_ci(const double *a, size_t na, const double *b, size_t nb, double *lo, double *hi)
{
    enum { B = 2000 };
    double *ra = malloc(na * sizeof *ra), *rb = malloc(nb * sizeof *rb), *r = malloc(B * sizeof *r);
    d5_rng g;
    d5_rng_seed(&g, 42);
    for (int k = 0; ra && rb && r && k < B; k++) {
        for (size_t i = 0; i < na; i++) ra[i] = a[d5_rng_below(&g, na)];
        for (size_t i = 0; i < nb; i++) rb[i] = b[d5_rng_below(&g, nb)];
        r[k] = median_of(ra, na) / median_of(rb, nb);
    }
    if (ra && rb && r) {
        qsort(r, B, sizeof *r, by_value);
        *lo = r[(size_t)(0.025 * B)];
        *hi = r[(size_t)(0.975 * B) - 1];
    } else {
        *lo = *hi = 0;
    }
    free(ra);
    free(rb);
    free(r);
}

int main(int argc, char **argv)
{
    int rounds = 30, reps = 5, threads = 0;
    double work_ms = 20;
    const cli_opt opts[] = {
        {"rounds", CLI_INT, &rounds, "N", "blocks of each configuration (default 30)", 3, 100000},
        {"reps", CLI_INT, &reps, "K", "repetitions per block (default 5)", 1, 100000},
        {"work-ms", CLI_DOUBLE, &work_ms, "MS", "duration of one repetition (default 20 ms)", 1,
         10000},
        {"threads", CLI_INT, &threads, "N", "workers per repetition (default: the online cores)", 0,
         4096},
    };
    const cli_spec spec = {CLI_SPEC(
        "bench-sysmon", "[--rounds N] [--reps K] [--work-ms MS] [--threads N]",
        "The cost of d5's system sampler to a computation on every core: the same workload\n"
        "with the sampler off, at 10 Hz and at 100 Hz, in alternating blocks; ratios of\n"
        "medians with bootstrap 95% CIs, and the sampler's own CPU time.",
        opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (threads == 0) {
        d5_cores c;
        threads = d5_cores_query(&c) == D5_OK && c.usable > 0 ? c.usable : 1;
    }
    cli_echo(stdout, &spec);
    FILE *la = fopen("/proc/loadavg", "r");
    char load[128] = "unknown";
    if (la) {
        if (!fgets(load, sizeof load, la)) snprintf(load, sizeof load, "unknown\n");
        fclose(la);
    }
    printf("# workers: %d; load average before: %s", threads, load);

    worker *w = calloc((size_t)threads, sizeof *w);
    if (!w) return D5_EXIT_CHECK;
    /* Calibrate one worker's steps to --work-ms: the fastest of five tries, as
     * a busy machine only slows a try down. */
    uint64_t iters = 1000000;
    double t = rep(w, 1, iters);
    for (int k = 0; k < 4; k++) {
        double u = rep(w, 1, iters);
        t = u < t ? u : t;
    }
    iters = (uint64_t)((double)iters * work_ms * 1e6 / t);
    if (iters < 1000) iters = 1000;

    enum { NCONF = 3 };
    const double hz[NCONF] = {0, 10, 100};
    const char *name[NCONF] = {"off", "10 Hz", "100 Hz"};
    size_t cap = (size_t)rounds * (size_t)reps;
    double *x[NCONF], cpu_s[NCONF] = {0}, wall_s[NCONF] = {0}, samples[NCONF] = {0};
    size_t n[NCONF] = {0};
    for (int c = 0; c < NCONF; c++) x[c] = malloc(cap * sizeof *x[c]);
    if (!x[0] || !x[1] || !x[2]) return D5_EXIT_CHECK;
    for (int k = 0; k < reps; k++) rep(w, threads, iters); /* warm-up */
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < NCONF; j++) {
            int c = (r + j) % NCONF; /* each configuration first, second and third in turn */
            d5_sysmon *m = NULL;
            d5_status s = d5_sysmon_begin(hz[c], &m);
            if (s != D5_OK) return cli_fail("bench-sysmon", s);
            for (int k = 0; k < reps; k++) x[c][n[c]++] = rep(w, threads, iters);
            if (m) {
                d5_sysmon_overhead o;
                s = d5_sysmon_stop(m);
                if (s == D5_OK) s = d5_sysmon_overhead_get(m, &o);
                if (s != D5_OK) return cli_fail("bench-sysmon", s);
                cpu_s[c] += o.thread_cpu_s;
                wall_s[c] += o.wall_s;
                samples[c] += (double)d5_sysmon_sample_count(m);
                d5_sysmon_free(m);
            }
        }
    }
    d5_stats st[NCONF];
    printf("\n%-8s %28s %6s %22s %10s\n", "sampler", "median [95% CI] per rep", "n",
           "ratio to off [95% CI]", "MWU p");
    for (int c = 0; c < NCONF; c++) {
        d5_status s = d5_stats_compute(x[c], n[c], &st[c]);
        if (s != D5_OK) return cli_fail("bench-sysmon", s);
        char a[32], b[32], d[32], ratio[64] = "", p[32] = "";
        d5_format_duration(st[c].median, a, sizeof a);
        d5_format_duration(st[c].ci_low, b, sizeof b);
        d5_format_duration(st[c].ci_high, d, sizeof d);
        if (c > 0) {
            double lo, hi;
            d5_mwu u;
            ratio_ci(x[c], n[c], x[0], n[0], &lo, &hi);
            snprintf(ratio, sizeof ratio, "%.4f [%.4f, %.4f]", st[c].median / st[0].median, lo, hi);
            if (d5_mann_whitney(x[c], n[c], x[0], n[0], &u) == D5_OK)
                snprintf(p, sizeof p, "%.2g", u.p_value);
        }
        char med[128];
        snprintf(med, sizeof med, "%s [%s, %s]", a, b, d);
        printf("%-8s %28s %6zu %22s %10s\n", name[c], med, n[c], ratio, p);
    }
    printf("\nthe sampler's own CPU time (its thread, CLOCK_THREAD_CPUTIME_ID):\n");
    for (int c = 1; c < NCONF; c++)
        printf("  %-7s %.3f%% of one core, %.0f us per sample (%.0f samples in %.1f s)\n", name[c],
               100 * cpu_s[c] / wall_s[c], 1e6 * cpu_s[c] / samples[c], samples[c], wall_s[c]);
    la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fgets(load, sizeof load, la)) printf("# load average after: %s", load);
        fclose(la);
    }
    for (int c = 0; c < NCONF; c++) free(x[c]);
    free(w);
    return D5_EXIT_OK;
}
