/* The instability rule on synthetic sample sets with known answers. */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

/* Standard normal deviates from a seeded generator (Box-Muller). */
static double normal(uint64_t *state)
{
    double u = 0, v = 0;
    while (u <= 0)
        u = (double)((*state = *state * 6364136223846793005u + 1442695040888963407u) >> 11) /
            9007199254740992.0;
    v = (double)((*state = *state * 6364136223846793005u + 1442695040888963407u) >> 11) /
        9007199254740992.0;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static double uniform(uint64_t *state)
{
    return (double)((*state = *state * 6364136223846793005u + 1442695040888963407u) >> 11) /
           9007199254740992.0;
}

/* n samples: a fraction `second` of them around m2, the rest around m1, both
 * with standard deviation sd. */
static double *mixture(size_t n, double m1, double m2, double sd, double second, uint64_t seed)
{
    double *x = malloc(n * sizeof *x);
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++) x[i] = (uniform(&st) < second ? m2 : m1) + sd * normal(&st);
    return x;
}

static d5_stability check(const double *x, size_t n)
{
    d5_stats st;
    cr_assert_eq(d5_stats_compute(x, n, &st), D5_OK);
    d5_stability s;
    cr_assert_eq(d5_stability_check(x, n, &st, &s), D5_OK);
    return s;
}

Test(stability, one_normal_mode_is_stable)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        double *x = mixture(500, 100, 0, 2, 0, seed);
        cr_assert_eq(d5_stats_modes(x, 500), 1, "seed %llu", (unsigned long long)seed);
        d5_stability s = check(x, 500);
        cr_assert_not(s.unstable, "seed %llu: %s", (unsigned long long)seed, s.reason);
        free(x);
    }
}

Test(stability, a_skewed_timing_distribution_has_one_mode)
{
    /* Log-normal, as run times often are, with 1% of far outliers. */
    for (uint64_t seed = 1; seed <= 20; seed++) {
        uint64_t st = seed;
        double x[1000];
        for (int i = 0; i < 1000; i++)
            x[i] = i % 100 == 0 ? 500 + 50 * uniform(&st) : 100 * exp(0.25 * normal(&st));
        cr_assert_eq(d5_stats_modes(x, 1000), 1, "seed %llu", (unsigned long long)seed);
    }
}

Test(stability, two_separated_modes_are_unstable)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        double *x = mixture(400, 100, 130, 2, 0.5, seed);
        cr_assert_eq(d5_stats_modes(x, 400), 2, "seed %llu", (unsigned long long)seed);
        d5_stability s = check(x, 400);
        cr_assert(s.unstable);
        cr_assert_eq(s.modes, 2);
        free(x);
        /* A minority mode of 15% counts too. */
        x = mixture(400, 100, 130, 2, 0.15, seed);
        cr_assert_eq(d5_stats_modes(x, 400), 2, "seed %llu", (unsigned long long)seed);
        free(x);
    }
}

Test(stability, close_modes_merge_and_quantised_samples_are_one_mode)
{
    /* Means 1.5 standard deviations apart: one bump, not two. */
    double *x = mixture(400, 100, 103, 2, 0.5, 7);
    cr_assert_eq(d5_stats_modes(x, 400), 1);
    free(x);
    /* A clock with a 0.5 us quantum: samples on three ticks are one mode. */
    double q[60];
    for (int i = 0; i < 60; i++) q[i] = 4.5 + 0.5 * (i % 3);
    cr_assert_eq(d5_stats_modes(q, 60), 1);
}

Test(stability, wide_ci_is_unstable_and_few_samples_have_no_modes)
{
    double x[10] = {50, 150, 70, 130, 90, 110, 60, 140, 80, 120};
    cr_assert_eq(d5_stats_modes(x, 10), 0);
    d5_stability s = check(x, 10);
    cr_assert(s.unstable);
    cr_assert_gt(s.rel_ci, D5_STABLE_MAX_REL_CI);
    double y[10] = {100, 100.1, 99.9, 100, 100.2, 99.8, 100, 100.1, 99.9, 100};
    s = check(y, 10);
    cr_assert_not(s.unstable, "%s", s.reason);
    cr_assert_eq(d5_stability_check(NULL, 10, NULL, &s), D5_ERR_INVALID);
}

/* A bimodal source does not stop at a tight CI: it runs to its budget and is
 * reported unstable. */
static d5_status bimodal(void *ctx, double *v)
{
    uint64_t *st = ctx;
    *v = (uniform(st) < 0.5 ? 100 : 130) + normal(st);
    return D5_OK;
}

Test(stability, measurement_of_a_bimodal_source_goes_to_its_budget)
{
    uint64_t st = 3;
    d5_measure_params p = d5_measure_default_params();
    p.max_reps = 3000;
    p.rel_ci = 0.2; /* reached within a few dozen samples */
    d5_measurement m;
    cr_assert_eq(d5_measure_samples(bimodal, &st, &p, &m), D5_OK);
    cr_assert_neq(m.stop, D5_STOP_CI);
    cr_assert_eq(m.n, 3000);
    cr_assert(m.stability.unstable);
    cr_assert_eq(m.stability.modes, 2);
    d5_measurement_free(&m);
}
