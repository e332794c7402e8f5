/* The FrameworkOverhead metric (Deep500): the time of a whole inference
 * against the sum of its operators each timed alone on the same buffers.
 *
 * The two are measured in interleaved rounds (the graph once, then every node
 * alone once), so that each round's ratio graph / sum of nodes compares times
 * taken on the same machine state; the overhead is the median of those
 * ratios with its order-statistics confidence interval, and a flag says when
 * that interval is too wide, or too low, to be a result. */
#include "executor_internal.h"

#include <math.h>
#include <string.h>

const char *d5_overhead_flag_name(int flag)
{
    switch (flag) {
    case D5_OVERHEAD_OK: return "ok";
    case D5_OVERHEAD_UNSTABLE: return "unstable";
    case D5_OVERHEAD_IMPLAUSIBLE: return "implausible";
    }
    return "unknown";
}

d5_overhead_flag d5_overhead_classify(double median, double lo, double hi, int32_t stopped_by_ci)
{
    if (median < D5_OVERHEAD_IMPLAUSIBLE_MEDIAN || lo < D5_OVERHEAD_IMPLAUSIBLE_LOW)
        return D5_OVERHEAD_IMPLAUSIBLE;
    if (isnan(median) || isnan(lo) || isnan(hi)) return D5_OVERHEAD_UNSTABLE;
    double hw = fmax(median - lo, hi - median);
    if (!stopped_by_ci || !(hw <= D5_OVERHEAD_UNSTABLE_HALFWIDTH)) return D5_OVERHEAD_UNSTABLE;
    return D5_OVERHEAD_OK;
}

static d5_status check_params(const d5_measure_params *p)
{
    if (p->min_reps < 1 || p->max_reps < p->min_reps)
        return d5_error(D5_ERR_INVALID,
                        "FrameworkOverhead needs 1 <= min_reps <= max_reps (got min_reps %u, "
                        "max_reps %u)",
                        p->min_reps, p->max_reps);
    if (!(p->max_time_s > 0))
        return d5_error(D5_ERR_INVALID, "FrameworkOverhead: time budget %g s must be positive",
                        p->max_time_s);
    if (!(p->rel_ci > 0))
        return d5_error(D5_ERR_INVALID, "FrameworkOverhead: CI target %g must be positive",
                        p->rel_ci);
    if (!(p->level > 0 && p->level < 1))
        return d5_error(D5_ERR_INVALID, "FrameworkOverhead: confidence level %g is outside (0, 1)",
                        p->level);
    return D5_OK;
}

/* The largest distance from the median to a bound of its CI. */
static double halfwidth(const d5_stats *s)
{
    return fmax(s->median - s->ci_low, s->ci_high - s->median);
}

/* One round: the graph once, then every node alone once; times in ns. */
static d5_status run_round(d5_executor *ex, const d5_timer *clock, double *graph, double *node)
{
    double a = d5_timer_now_ns(clock);
    d5_status s = d5_executor_inference(ex);
    *graph = d5_timer_now_ns(clock) - a;
    for (int32_t i = 0; s == D5_OK && i < ex->nnodes; i++) {
        a = d5_timer_now_ns(clock);
        s = d5_executor_run_node(ex, i);
        node[i] = d5_timer_now_ns(clock) - a;
    }
    return s;
}

/* Grows the per-round arrays (the graph's, each node's, the ratios) from
 * `cap` to `2 * cap` samples. On failure the arrays already grown stay valid
 * and are freed with the rest. */
static d5_status grow(d5_overhead *o, int32_t nnodes, double **r, size_t cap)
{
    size_t old = cap * sizeof(double), size = 2 * old;
    double *g = d5_realloc(*r, old, size, "overhead ratios");
    if (!g) return D5_ERR_NOMEM;
    *r = g;
    if (!(g = d5_realloc(o->graph.samples, old, size, "overhead samples"))) return D5_ERR_NOMEM;
    o->graph.samples = g;
    for (int32_t i = 0; i < nnodes; i++) {
        if (!(g = d5_realloc(o->node[i].samples, old, size, "overhead samples")))
            return D5_ERR_NOMEM;
        o->node[i].samples = g;
    }
    return D5_OK;
}

/* Fills a measurement's summary from its n samples. */
static d5_status summarise(d5_measurement *m, size_t n, const d5_measure_params *p,
                           d5_stop_reason stop)
{
    m->n = n;
    m->warmup = p->warmup;
    m->stop = stop;
    d5_status s = d5_stats_compute_level(m->samples, n, p->level, &m->stats);
    if (s != D5_OK) return s;
    double hw = halfwidth(&m->stats), total = 0;
    m->rel_ci_reached = m->stats.median != 0 ? hw / fabs(m->stats.median) : hw == 0 ? 0 : INFINITY;
    for (size_t k = 0; k < n; k++) total += m->samples[k];
    m->elapsed_s = total * 1e-9;
    return D5_OK;
}

/* The rounds, into out (zeroed, with node[] allocated). */
static d5_status measure(d5_executor *ex, const d5_measure_params *p, const d5_timer *clock,
                         double *scratch, double **r, d5_overhead *out)
{
    const int32_t nn = ex->nnodes;
    double g;
    d5_status s = D5_OK;
    for (uint32_t w = 0; s == D5_OK && w < p->warmup; w++) s = run_round(ex, clock, &g, scratch);
    if (s != D5_OK) return s;

    size_t cap = 32, n = 0, next_check = p->min_reps;
    if ((s = grow(out, nn, r, cap)) != D5_OK) return s;
    cap *= 2;
    out->target = fmax(p->rel_ci, D5_OVERHEAD_TARGET_MIN);
    d5_stop_reason stop = D5_STOP_MAX_REPS;
    d5_stats rs;
    memset(&rs, 0, sizeof rs);
    double t0 = d5_timer_now_ns(clock), budget = p->max_time_s * 1e9;
    int32_t tmin = d5_threads_team(), tmax = tmin;
    d5_load_sample load0, load1;
    d5_load_sample_take(&load0);
    for (;;) {
        if (n == cap) {
            if ((s = grow(out, nn, r, cap)) != D5_OK) return s;
            cap *= 2;
        }
        if ((s = run_round(ex, clock, &g, scratch)) != D5_OK) return s;
        double sum = 0;
        for (int32_t i = 0; i < nn; i++) {
            sum += scratch[i];
            out->node[i].samples[n] = scratch[i];
        }
        if (!(sum > 0))
            return d5_error(D5_ERR_NUMERIC,
                            "FrameworkOverhead: the %d nodes of round %zu took no measurable "
                            "time on the monotonic clock",
                            (int)nn, n + 1);
        out->graph.samples[n] = g;
        (*r)[n++] = g / sum - 1;
        int32_t team = d5_threads_adapt();
        tmin = team < tmin ? team : tmin;
        tmax = team > tmax ? team : tmax;
        int over_time = d5_timer_now_ns(clock) - t0 >= budget;
        if (n < next_check && n < p->max_reps && !over_time) continue;
        /* Checking costs a sort: at every round while few, then after each
         * 1/16 growth, as d5_measure_run does. */
        next_check = n + (n < 64 ? 1 : n / 16);
        if ((s = d5_stats_compute_level(*r, n, p->level, &rs)) != D5_OK) return s;
        if (n >= p->min_reps && halfwidth(&rs) <= out->target && rs.ci_coverage >= p->level) {
            stop = D5_STOP_CI;
            break;
        }
        if (n >= p->max_reps) break;
        if (over_time && n >= p->min_reps) {
            stop = D5_STOP_TIME;
            break;
        }
    }
    out->elapsed_s = (d5_timer_now_ns(clock) - t0) * 1e-9;

    if ((s = summarise(&out->graph, n, p, stop)) != D5_OK) return s;
    /* The graph's measurement carries what competed for the cores and its
     * stability, as d5_measure_run's do. */
    d5_load_sample_take(&load1);
    d5_threads_info ti;
    d5_threads_info_get(&ti);
    int32_t intended = ti.requested > 0 ? ti.requested : ti.usable;
    d5_contention_between(&load0, &load1, intended > tmax ? intended : tmax,
                          &out->graph.contention);
    out->graph.threads_min = tmin;
    out->graph.threads_max = tmax;
    out->graph.nivcsw_per_rep = (double)(load1.nivcsw - load0.nivcsw) / (double)n;
    s = d5_stability_check(out->graph.samples, n, &out->graph.stats, &out->graph.stability);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < nn; i++) {
        if ((s = summarise(&out->node[i], n, p, stop)) != D5_OK) return s;
        out->sum_median += out->node[i].stats.median;
        out->sum_lo += out->node[i].stats.ci_low;
        out->sum_hi += out->node[i].stats.ci_high;
    }
    out->overhead = rs.median;
    out->overhead_lo = rs.ci_low;
    out->overhead_hi = rs.ci_high;
    out->rounds = (uint32_t)n;
    out->stop = stop;
    out->stable = stop == D5_STOP_CI;
    out->halfwidth = halfwidth(&rs);
    out->flag = (int32_t)d5_overhead_classify(rs.median, rs.ci_low, rs.ci_high, out->stable);
    return D5_OK;
}

d5_status d5_overhead_measure(d5_executor *ex, const d5_measure_params *p, d5_overhead *out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_overhead_measure: NULL output");
    memset(out, 0, sizeof *out);
    if (!ex) return d5_error(D5_ERR_INVALID, "d5_overhead_measure: NULL executor");
    d5_measure_params mp = p ? *p : d5_measure_default_params();
    d5_status s = check_params(&mp);
    if (s != D5_OK) return s;
    if (ex->nnodes == 0)
        return d5_error(D5_ERR_INVALID,
                        "FrameworkOverhead: the executor runs no node (%d were evaluated at "
                        "create), so there is no sum of nodes to compare the graph with",
                        (int)ex->nfolded);

    d5_timer_params tp = d5_timer_default_params();
    tp.cpu_clock = D5_CPU_CLOCK_MONOTONIC;
    tp.name = "overhead";
    d5_timer *clock = NULL;
    double *scratch = NULL, *r = NULL;
    s = d5_timer_create(&tp, &clock);
    if (s == D5_OK) {
        out->node = d5_calloc((size_t)ex->nnodes, sizeof *out->node, "overhead nodes");
        scratch = d5_alloc((size_t)ex->nnodes * sizeof *scratch, "overhead round");
        if (out->node) out->nodes = ex->nnodes;
        if (!out->node || !scratch) s = D5_ERR_NOMEM;
    }
    if (s == D5_OK) s = measure(ex, &mp, clock, scratch, &r, out);
    d5_free(r);
    d5_free(scratch);
    d5_timer_free(clock);
    if (s != D5_OK) {
        d5_overhead_free(out);
        memset(out, 0, sizeof *out);
    }
    return s;
}

void d5_overhead_free(d5_overhead *o)
{
    if (!o) return;
    d5_measurement_free(&o->graph);
    for (int32_t i = 0; o->node && i < o->nodes; i++) d5_measurement_free(&o->node[i]);
    d5_free(o->node);
    o->node = NULL;
    o->nodes = 0;
}
