/* The timer-overhead suite: what one start+end pair and one clock read cost. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define BATCH 1000 /* pairs or reads per sample: one sample is their mean */

typedef struct pair_ctx {
    d5_timer *t;
    int by_id;
    d5_timer_id id;
} pair_ctx;

static d5_status pair_sample(void *arg, double *ns)
{
    pair_ctx *c = arg;
    d5_status s = d5_timer_reset(c->t); /* outside the timed loop; keeps the memory */
    if (s != D5_OK) return s;
    uint64_t t0 = d5_monotonic_ns();
    if (c->by_id) {
        for (int i = 0; i < BATCH && s == D5_OK; i++) {
            s = d5_timer_start_id(c->t, c->id);
            if (s == D5_OK) s = d5_timer_end_id(c->t, c->id);
        }
    } else {
        for (int i = 0; i < BATCH && s == D5_OK; i++) {
            s = d5_timer_start(c->t, D5_KEY_FORWARD);
            if (s == D5_OK) s = d5_timer_end(c->t, D5_KEY_FORWARD);
        }
    }
    *ns = (double)(d5_monotonic_ns() - t0) / BATCH;
    return s;
}

static volatile uint64_t sink;

static d5_status gettime_sample(void *arg, double *ns)
{
    (void)arg;
    uint64_t acc = 0, t0 = d5_monotonic_ns();
    for (int i = 0; i < BATCH; i++) acc += d5_monotonic_ns();
    *ns = (double)(d5_monotonic_ns() - t0) / BATCH;
    sink = acc;
    return D5_OK;
}

#if defined(__x86_64__) || defined(__i386__)
static d5_status rdtsc_sample(void *arg, double *ns)
{
    (void)arg;
    uint64_t acc = 0, t0 = d5_monotonic_ns();
    for (int i = 0; i < BATCH; i++) acc += __rdtsc();
    *ns = (double)(d5_monotonic_ns() - t0) / BATCH;
    sink = acc;
    return D5_OK;
}
#endif

static d5_status add(d5_results *r, const char *name, d5_sample_fn fn, void *ctx,
                     const d5_measure_params *mp)
{
    d5_measurement m;
    d5_status s = d5_measure_samples(fn, ctx, mp, &m);
    if (s != D5_OK) return d5_results_add_error(r, name, d5_last_error());
    size_t idx;
    s = d5_results_add(r, name, &m, "ns", &idx);
    if (s == D5_OK) s = d5_results_counter(r, idx, "batch", BATCH, "per sample");
    d5_measurement_free(&m);
    return s;
}

static d5_status timer_variant(d5_results *r, const char *name, d5_cpu_clock clock, int by_id,
                               const d5_measure_params *mp)
{
    d5_timer_params tp = d5_timer_default_params();
    tp.cpu_clock = clock;
    pair_ctx c = {NULL, by_id, D5_KEY_ID_FORWARD};
    d5_status s = d5_timer_create(&tp, &c.t);
    if (s == D5_ERR_UNSUPPORTED) return d5_results_add_error(r, name, d5_last_error());
    if (s != D5_OK) return s;
    s = add(r, name, pair_sample, &c, mp);
    d5_timer_free(c.t);
    return s;
}

d5_status d5_suite_timer_overhead(d5_results *r, const d5_measure_params *mp)
{
    d5_status s = timer_variant(r, "timer/pair/tsc/string-key", D5_CPU_CLOCK_TSC, 0, mp);
    if (s == D5_OK) s = timer_variant(r, "timer/pair/tsc/id", D5_CPU_CLOCK_TSC, 1, mp);
    if (s == D5_OK)
        s = timer_variant(r, "timer/pair/monotonic/string-key", D5_CPU_CLOCK_MONOTONIC, 0, mp);
#if defined(__x86_64__) || defined(__i386__)
    if (s == D5_OK) s = add(r, "clock/read/rdtsc", rdtsc_sample, NULL, mp);
#endif
    if (s == D5_OK) s = add(r, "clock/read/clock_gettime", gettime_sample, NULL, mp);
    return s;
}
