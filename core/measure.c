/* Adaptive measurement: warm-up, then repetitions until the median's
 * confidence interval is tight or a budget ends. */
#include "d5/stats.h"
#include "internal.h"

#include <math.h>
#include <string.h>

d5_measure_params d5_measure_default_params(void)
{
    return (d5_measure_params){.warmup = 3,
                               .min_reps = 10,
                               .max_reps = 10000,
                               .max_time_s = 10.0,
                               .rel_ci = 0.02,
                               .level = 0.95};
}

const char *d5_stop_reason_name(d5_stop_reason r)
{
    switch (r) {
    case D5_STOP_CI: return "ci";
    case D5_STOP_MAX_REPS: return "max-reps";
    case D5_STOP_TIME: return "time";
    }
    return "unknown";
}

void d5_measurement_free(d5_measurement *m)
{
    if (!m) return;
    d5_free(m->samples);
    m->samples = NULL;
    m->n = 0;
}

static d5_status check_params(const d5_measure_params *p)
{
    if (p->min_reps < 1 || p->max_reps < p->min_reps)
        return d5_error(
            D5_ERR_INVALID,
            "measurement needs 1 <= min_reps <= max_reps (got min_reps %u, max_reps %u)",
            p->min_reps, p->max_reps);
    if (!(p->max_time_s > 0))
        return d5_error(D5_ERR_INVALID, "measurement time budget %g s must be positive",
                        p->max_time_s);
    if (!(p->rel_ci > 0))
        return d5_error(D5_ERR_INVALID, "relative CI target %g must be positive", p->rel_ci);
    if (!(p->level > 0 && p->level < 1))
        return d5_error(D5_ERR_INVALID, "confidence level %g is outside (0, 1)", p->level);
    return D5_OK;
}

/* Relative half-width of the median's CI: max distance from the median to a
 * CI bound, over the median. */
static double rel_halfwidth(const d5_stats *s)
{
    double hw = fmax(s->median - s->ci_low, s->ci_high - s->median);
    if (s->median == 0) return hw == 0 ? 0 : INFINITY;
    return hw / fabs(s->median);
}

static d5_status measure(d5_run_fn run, d5_sample_fn sample, void *ctx,
                         const d5_measure_params *params, d5_measurement *out)
{
    d5_measure_params p = params ? *params : d5_measure_default_params();
    if (!out || (!run && !sample)) return d5_error(D5_ERR_INVALID, "d5_measure: NULL argument");
    d5_status s = check_params(&p);
    if (s != D5_OK) return s;

    for (uint32_t i = 0; i < p.warmup; i++) {
        double ignored;
        s = run ? run(ctx) : sample(ctx, &ignored);
        if (s != D5_OK) return s;
    }

    size_t cap = p.min_reps < 64 ? 64 : p.min_reps;
    double *x = d5_alloc(cap * sizeof *x, "measurement samples");
    if (!x) return D5_ERR_NOMEM;
    size_t n = 0, next_check = p.min_reps;
    int32_t tmin = d5_threads_team(), tmax = tmin;
    d5_load_sample load0;
    d5_load_sample_take(&load0);
    d5_stop_reason stop = D5_STOP_MAX_REPS;
    d5_stats st;
    memset(&st, 0, sizeof st);
    double reached = INFINITY;
    uint64_t t0 = d5__mono_ns(), budget = (uint64_t)(p.max_time_s * 1e9);

    for (;;) {
        if (n == cap) {
            double *g = d5_realloc(x, cap * sizeof *x, 2 * cap * sizeof *x, "measurement samples");
            if (!g) {
                d5_free(x);
                return D5_ERR_NOMEM;
            }
            x = g;
            cap *= 2;
        }
        double v;
        if (run) {
            uint64_t a = d5__mono_ns();
            s = run(ctx);
            v = (double)(d5__mono_ns() - a);
        } else {
            s = sample(ctx, &v);
        }
        if (s != D5_OK) {
            d5_free(x);
            return s;
        }
        x[n++] = v;
        int32_t team = d5_threads_adapt();
        tmin = team < tmin ? team : tmin;
        tmax = team > tmax ? team : tmax;
        int over_time = d5__mono_ns() - t0 >= budget;
        if (n >= next_check || n >= p.max_reps || over_time) {
            /* Checking costs a sort: check at every sample while few, then
             * after each 1/16 growth. */
            next_check = n + (n < 64 ? 1 : n / 16);
            s = d5_stats_compute_level(x, n, p.level, &st);
            if (s != D5_OK) {
                d5_free(x);
                return s;
            }
            reached = rel_halfwidth(&st);
            /* A tight CI over several modes is no result: go on to the budget. */
            if (n >= p.min_reps && reached <= p.rel_ci && st.ci_coverage >= p.level &&
                d5_stats_modes(x, n) < 2) {
                stop = D5_STOP_CI;
                break;
            }
            if (n >= p.max_reps) {
                stop = D5_STOP_MAX_REPS;
                break;
            }
            if (over_time && n >= p.min_reps) {
                stop = D5_STOP_TIME;
                break;
            }
        }
    }
    d5_load_sample load1;
    d5_load_sample_take(&load1);
    memset(out, 0, sizeof *out);
    int32_t intended = d5__threads_intended();
    d5_contention_between(&load0, &load1, intended > tmax ? intended : tmax, &out->contention);
    out->nivcsw_per_rep = (double)(load1.nivcsw - load0.nivcsw) / (double)n;
    out->threads_min = tmin;
    out->threads_max = tmax;
    s = d5_stability_check(x, n, &st, &out->stability);
    if (s != D5_OK) {
        d5_free(x);
        return s;
    }
    out->samples = x;
    out->n = n;
    out->warmup = p.warmup;
    out->stats = st;
    out->stop = stop;
    out->rel_ci_reached = reached;
    out->elapsed_s = (double)(d5__mono_ns() - t0) * 1e-9;
    return D5_OK;
}

d5_status d5_measure_run(d5_run_fn fn, void *ctx, const d5_measure_params *p, d5_measurement *out)
{
    if (!fn) return d5_error(D5_ERR_INVALID, "d5_measure_run: NULL function");
    return measure(fn, NULL, ctx, p, out);
}

d5_status d5_measure_samples(d5_sample_fn fn, void *ctx, const d5_measure_params *p,
                             d5_measurement *out)
{
    if (!fn) return d5_error(D5_ERR_INVALID, "d5_measure_samples: NULL function");
    return measure(NULL, fn, ctx, p, out);
}
