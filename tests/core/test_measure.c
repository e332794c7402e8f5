#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <time.h>

typedef struct counter_ctx {
    int calls;
    int fail_at; /* 0: never */
    int pattern; /* 0: tight around 100, 1: alternating 1 and 100, 2: sleep 1 ms, then alternate */
} counter_ctx;

static d5_status sample(void *arg, double *v)
{
    counter_ctx *c = arg;
    c->calls++;
    if (c->fail_at && c->calls == c->fail_at)
        return d5_error(D5_ERR_BACKEND, "run %d broke", c->calls);
    switch (c->pattern) {
    case 0: *v = 100 + (c->calls % 3) * 0.1; break;
    case 1: *v = (c->calls % 2) ? 1 : 100; break;
    default: {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        *v = (c->calls % 2) ? 1 : 100;
    }
    }
    return D5_OK;
}

/* Measures `sample` (c says how it behaves) with the default parameters but
 * for warmup and, where not 0, min_reps, max_reps and max_time_s; asserts that
 * the measurement succeeds. */
static d5_measurement measure(counter_ctx *c, uint32_t warmup, uint32_t min_reps, uint32_t max_reps,
                              double max_time_s)
{
    d5_measure_params p = d5_measure_default_params();
    p.warmup = warmup;
    if (min_reps) p.min_reps = min_reps;
    if (max_reps) p.max_reps = max_reps;
    if (max_time_s) p.max_time_s = max_time_s;
    d5_measurement m;
    cr_assert_eq(d5_measure_samples(sample, c, &p, &m), D5_OK, "%s", d5_last_error());
    return m;
}

Test(measure, stops_when_the_ci_is_tight_and_excludes_warmup)
{
    counter_ctx c = {0, 0, 0};
    d5_measurement m = measure(&c, 4, 10, 0, 0);
    cr_assert_eq(m.stop, D5_STOP_CI);
    cr_assert_eq(m.n, 10);
    cr_assert_eq(m.warmup, 4);
    cr_assert_eq(c.calls, 14); /* warm-up runs happened but are not samples */
    cr_assert(fabs(m.stats.median - 100.1) < 1e-9);
    cr_assert(m.rel_ci_reached <= 0.02);
    cr_assert_str_eq(d5_stop_reason_name(m.stop), "ci");
    d5_measurement_free(&m);
    cr_assert_null(m.samples);
}

Test(measure, stops_at_max_reps_when_the_ci_never_tightens)
{
    counter_ctx c = {0, 0, 1};
    d5_measurement m = measure(&c, 0, 0, 50, 100);
    cr_assert_eq(m.stop, D5_STOP_MAX_REPS);
    cr_assert_eq(m.n, 50);
    cr_assert(m.rel_ci_reached > 0.02);
    d5_measurement_free(&m);
}

Test(measure, stops_when_the_time_budget_ends)
{
    counter_ctx c = {0, 0, 2};
    d5_measurement m = measure(&c, 0, 5, 100000, 0.03);
    cr_assert_eq(m.stop, D5_STOP_TIME);
    cr_assert_geq(m.n, 5);
    cr_assert_lt(m.n, 1000);
    cr_assert_geq(m.elapsed_s, 0.03);
    d5_measurement_free(&m);
}

Test(measure, min_reps_is_honoured_past_the_budget)
{
    counter_ctx c = {0, 0, 2};
    d5_measurement m = measure(&c, 0, 60, 0, 0.001);
    cr_assert_eq(m.stop, D5_STOP_TIME);
    cr_assert_eq(m.n, 60);
    d5_measurement_free(&m);
}

Test(measure, a_failing_run_stops_the_measurement)
{
    counter_ctx c = {0, 7, 0};
    d5_measurement m;
    memset(&m, 0xab, sizeof m);
    d5_measurement before = m;
    cr_assert_eq(d5_measure_samples(sample, &c, NULL, &m), D5_ERR_BACKEND);
    cr_assert_str_eq(d5_last_error(), "run 7 broke");
    cr_assert_eq(memcmp(&m, &before, sizeof m), 0, "output must be untouched on failure");
}

Test(measure, bad_parameters_are_rejected)
{
    counter_ctx c = {0, 0, 0};
    d5_measure_params p = d5_measure_default_params();
    d5_measurement m;
    p.min_reps = 0;
    cr_assert_eq(d5_measure_samples(sample, &c, &p, &m), D5_ERR_INVALID);
    p = d5_measure_default_params();
    p.max_reps = 5;
    cr_assert_eq(d5_measure_samples(sample, &c, &p, &m), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "max_reps 5"));
    p = d5_measure_default_params();
    p.rel_ci = 0;
    cr_assert_eq(d5_measure_samples(sample, &c, &p, &m), D5_ERR_INVALID);
    p = d5_measure_default_params();
    p.level = 1;
    cr_assert_eq(d5_measure_samples(sample, &c, &p, &m), D5_ERR_INVALID);
    cr_assert_eq(d5_measure_samples(NULL, &c, NULL, &m), D5_ERR_INVALID);
    cr_assert_eq(c.calls, 0);
}

static d5_status sleep_200us(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    return D5_OK;
}

Test(measure, run_mode_times_each_call_in_ns)
{
    d5_measure_params p = d5_measure_default_params();
    p.max_time_s = 0.5;
    d5_measurement m;
    cr_assert_eq(d5_measure_run(sleep_200us, NULL, &p, &m), D5_OK);
    cr_assert_geq(m.stats.min, 200000.0); /* a sleep never returns early */
    cr_assert_geq(m.n, 10);
    d5_measurement_free(&m);
}
