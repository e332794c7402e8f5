/* FrameworkOverhead: interleaved rounds, the paired median read back from the
 * stored samples, the flag rule on known answers, budgets, errors and
 * out-of-memory paths. */
#include "support.h"

#include "d5/executor.h"
#include "d5/models.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static d5_network *lenet(int64_t batch)
{
    d5_model_params mp = d5_model_default_params();
    mp.batch = batch;
    mp.seed = 1;
    d5_network *net = NULL;
    cr_assert_eq(d5_model_build("lenet", &mp, &net), D5_OK, "%s", d5_last_error());
    return net;
}

static d5_executor *compile(const d5_network *net)
{
    d5_executor *ex = NULL;
    cr_assert_eq(d5_executor_create(net, NULL, &ex), D5_OK, "%s", d5_last_error());
    return ex;
}

/* The default measurement with these repetition bounds. */
static d5_measure_params reps(uint32_t warmup, uint32_t min_reps, uint32_t max_reps)
{
    d5_measure_params mp = d5_measure_default_params();
    mp.warmup = warmup;
    mp.min_reps = min_reps;
    mp.max_reps = max_reps;
    return mp;
}

/* The start of every whole-graph run, on a monotonic clock. */
typedef struct graph_starts {
    d5_timer *clock;
    double t[4096];
    size_t n;
} graph_starts;

static d5_status on_graph_start(void *user, const d5_event_info *info)
{
    graph_starts *g = user;
    if (info->event == D5_EVENT_BEFORE_EXECUTOR && g->n < sizeof g->t / sizeof g->t[0])
        g->t[g->n++] = d5_timer_now_ns(g->clock);
    return D5_OK;
}

static double round_sum(const d5_overhead *o, size_t k)
{
    double sum = 0;
    for (int32_t i = 0; i < o->nodes; i++) sum += o->node[i].samples[k];
    return sum;
}

Test(overhead, lenet_rounds_are_paired_and_interleaved)
{
    d5_network *net = lenet(4);
    d5_executor *ex = compile(net);
    graph_starts *g = calloc(1, sizeof *g);
    cr_assert_not_null(g);
    d5_timer_params tp = d5_timer_default_params();
    tp.cpu_clock = D5_CPU_CLOCK_MONOTONIC;
    cr_assert_eq(d5_timer_create(&tp, &g->clock), D5_OK);
    cr_assert_eq(d5_executor_add_handler(ex, on_graph_start, g), D5_OK);

    d5_measure_params mp = reps(2, 12, 400);
    mp.max_time_s = 0.2;
    d5_overhead o;
    cr_assert_eq(d5_overhead_measure(ex, &mp, &o), D5_OK, "%s", d5_last_error());

    /* One graph run per round, warm-up included; every measurement has one
     * sample per round. */
    cr_assert_eq(o.nodes, d5_executor_node_count(ex));
    cr_assert_geq(o.rounds, mp.min_reps);
    cr_assert_leq(o.rounds, mp.max_reps);
    cr_assert_eq(g->n, (size_t)mp.warmup + o.rounds);
    cr_assert_eq(o.graph.n, (size_t)o.rounds);
    cr_assert_eq(o.graph.warmup, mp.warmup);
    for (int32_t i = 0; i < o.nodes; i++) {
        cr_assert_eq(o.node[i].n, (size_t)o.rounds, "node %d", (int)i);
        cr_assert_eq(o.node[i].stop, o.stop);
    }

    /* The overhead is the median of the per-round ratios, with its CI. */
    double *r = malloc(o.rounds * sizeof *r);
    cr_assert_not_null(r);
    for (size_t k = 0; k < o.rounds; k++) r[k] = o.graph.samples[k] / round_sum(&o, k) - 1;
    d5_stats rs;
    cr_assert_eq(d5_stats_compute_level(r, o.rounds, mp.level, &rs), D5_OK);
    cr_assert_float_eq(o.overhead, rs.median, 1e-12);
    cr_assert_float_eq(o.overhead_lo, rs.ci_low, 1e-12);
    cr_assert_float_eq(o.overhead_hi, rs.ci_high, 1e-12);
    cr_assert(o.overhead_lo <= o.overhead && o.overhead <= o.overhead_hi);
    cr_assert_float_eq(o.halfwidth, fmax(rs.median - rs.ci_low, rs.ci_high - rs.median), 1e-12);
    free(r);

    /* The nodes' summaries, their sums and the flag. */
    double sum = 0, lo = 0, hi = 0;
    for (int32_t i = 0; i < o.nodes; i++) {
        sum += o.node[i].stats.median;
        lo += o.node[i].stats.ci_low;
        hi += o.node[i].stats.ci_high;
    }
    cr_assert_float_eq(o.sum_median, sum, 1e-9 * sum);
    cr_assert_float_eq(o.sum_lo, lo, 1e-9 * sum);
    cr_assert_float_eq(o.sum_hi, hi, 1e-9 * sum);
    cr_assert_eq(o.stable, o.stop == D5_STOP_CI);
    cr_assert_float_eq(o.target, 0.02, 1e-15);
    if (o.stable) cr_assert_leq(o.halfwidth, o.target);
    cr_assert_eq(o.flag, d5_overhead_classify(o.overhead, o.overhead_lo, o.overhead_hi, o.stable));
    cr_assert(o.elapsed_s > 0);

    /* Interleaved: between two graph runs, every node of the round ran, so
     * the starts of successive graph runs are at least graph + sum of nodes
     * apart. Measured back to back, they would be only the graph apart. */
    double gaps = 0, rounds = 0;
    for (size_t k = 0; k + 1 < o.rounds; k++) {
        gaps += g->t[mp.warmup + k + 1] - g->t[mp.warmup + k];
        rounds += o.graph.samples[k] + round_sum(&o, k);
    }
    cr_assert_geq(gaps, 0.9 * rounds, "graph runs %g ns apart in all, rounds %g ns", gaps, rounds);

    d5_overhead_free(&o);
    cr_assert_null(o.node);
    d5_timer_free(g->clock);
    free(g);
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(overhead, budget_of_rounds_is_not_stable)
{
    /* Five rounds cannot give a 95% interval: the repetition limit stops
     * them, and the result is not OK whatever its value. */
    d5_network *net = lenet(2);
    d5_executor *ex = compile(net);
    d5_measure_params mp = reps(0, 5, 5);
    mp.rel_ci = 0.5;
    d5_overhead o;
    cr_assert_eq(d5_overhead_measure(ex, &mp, &o), D5_OK, "%s", d5_last_error());
    cr_assert_eq(o.rounds, 5);
    cr_assert_eq(o.stop, D5_STOP_MAX_REPS);
    cr_assert_eq(o.graph.stop, D5_STOP_MAX_REPS);
    cr_assert_eq(o.stable, 0);
    cr_assert_neq(o.flag, D5_OVERHEAD_OK);
    cr_assert_float_eq(o.target, 0.5, 1e-15);
    d5_overhead_free(&o);
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(overhead, classify_known_answers)
{
    /* Precise and plausible, small negative overheads included. */
    cr_assert_eq(d5_overhead_classify(0.03, 0.02, 0.04, 1), D5_OVERHEAD_OK);
    cr_assert_eq(d5_overhead_classify(-0.05, -0.07, -0.04, 1), D5_OVERHEAD_OK);
    cr_assert_eq(d5_overhead_classify(2.0, 1.95, 2.05, 1), D5_OVERHEAD_OK);
    /* Boundaries: the median at -0.10 and the half-width at 0.10 are allowed. */
    cr_assert_eq(d5_overhead_classify(-0.10, -0.11, -0.09, 1), D5_OVERHEAD_OK);
    cr_assert_eq(d5_overhead_classify(0.0, -0.10, 0.05, 1), D5_OVERHEAD_OK);
    /* Unstable: a wide interval, on either side, or a budget that ran out. */
    cr_assert_eq(d5_overhead_classify(0.34, 0.20, 0.50, 1), D5_OVERHEAD_UNSTABLE);
    cr_assert_eq(d5_overhead_classify(0.05, -0.08, 0.06, 1), D5_OVERHEAD_UNSTABLE);
    cr_assert_eq(d5_overhead_classify(0.03, 0.02, 0.04, 0), D5_OVERHEAD_UNSTABLE);
    cr_assert_eq(d5_overhead_classify(0.0, -0.25, 0.0, 1), D5_OVERHEAD_UNSTABLE);
    /* Implausible: the median below -10%, or the low bound below -25%, even
     * when the interval is also wide or the budget ran out. */
    cr_assert_eq(d5_overhead_classify(-0.15, -0.16, -0.14, 1), D5_OVERHEAD_IMPLAUSIBLE);
    cr_assert_eq(d5_overhead_classify(-0.101, -0.11, -0.09, 1), D5_OVERHEAD_IMPLAUSIBLE);
    cr_assert_eq(d5_overhead_classify(-0.05, -0.30, 0.20, 1), D5_OVERHEAD_IMPLAUSIBLE);
    cr_assert_eq(d5_overhead_classify(-0.15, -0.16, -0.14, 0), D5_OVERHEAD_IMPLAUSIBLE);
    /* NaN is never OK. */
    cr_assert_eq(d5_overhead_classify(NAN, NAN, NAN, 1), D5_OVERHEAD_UNSTABLE);
    cr_assert_eq(d5_overhead_classify(0.01, NAN, 0.02, 1), D5_OVERHEAD_UNSTABLE);
    cr_assert_eq(d5_overhead_classify(NAN, 0.0, 0.02, 1), D5_OVERHEAD_UNSTABLE);
}

Test(overhead, flag_names)
{
    cr_assert_str_eq(d5_overhead_flag_name(D5_OVERHEAD_OK), "ok");
    cr_assert_str_eq(d5_overhead_flag_name(D5_OVERHEAD_UNSTABLE), "unstable");
    cr_assert_str_eq(d5_overhead_flag_name(D5_OVERHEAD_IMPLAUSIBLE), "implausible");
    cr_assert_str_eq(d5_overhead_flag_name(3), "unknown");
    cr_assert_str_eq(d5_overhead_flag_name(-1), "unknown");
}

Test(overhead, errors_leave_nothing_to_free)
{
    d5_network *net = lenet(1);
    d5_executor *ex = compile(net);
    d5_overhead o;
    memset(&o, 0xff, sizeof o);
    d5_measure_params mp = d5_measure_default_params();
    mp.min_reps = 0;
    cr_assert_eq(d5_overhead_measure(ex, &mp, &o), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "min_reps"), "%s", d5_last_error());
    cr_assert_null(o.node);
    cr_assert_null(o.graph.samples);
    cr_assert_eq(o.nodes, 0);
    mp = d5_measure_default_params();
    mp.level = 1;
    cr_assert_eq(d5_overhead_measure(ex, &mp, &o), D5_ERR_INVALID);
    cr_assert_eq(d5_overhead_measure(NULL, NULL, &o), D5_ERR_INVALID);
    cr_assert_eq(d5_overhead_measure(ex, NULL, NULL), D5_ERR_INVALID);
    d5_overhead_free(&o);
    d5_overhead_free(NULL);
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(overhead, a_graph_folded_at_create_has_no_overhead)
{
    /* Shape of an initializer: evaluated once at create, nothing runs. */
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("folded", &net), D5_OK);
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 1, (int64_t[]){3}, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    cr_assert_eq(d5_network_add_initializer_take(net, "c", &t), D5_OK);
    cr_assert_eq(d5_network_add_node(net, "shape", "Shape", NULL, (const char *[]){"c"}, 1,
                                     (const char *[]){"s"}, 1, NULL, NULL),
                 D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_add_output(net, "s", NULL), D5_OK);
    d5_executor *ex = compile(net);
    cr_assert_eq(d5_executor_node_count(ex), 0);
    d5_overhead o;
    cr_assert_eq(d5_overhead_measure(ex, NULL, &o), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "runs no node"), "%s", d5_last_error());
    cr_assert_null(o.node);
    d5_executor_free(ex);
    d5_network_free(net);
}

Test(overhead, out_of_memory_anywhere_fails_cleanly)
{
    /* Every allocation of a measurement fails in turn: it reports it, leaves
     * nothing behind, and `out` needs no freeing. */
    d5_network *net = lenet(1);
    d5_executor *ex = compile(net);
    cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
    for (int32_t i = 0; i < d5_executor_node_count(ex); i++)
        cr_assert_eq(d5_executor_run_node(ex, i), D5_OK);
    d5_measure_params mp = reps(1, 40, 70); /* grows the arrays once past 64 rounds */
    int succeeded = 0;
    for (long budget = 0; budget < 10000 && !succeeded; budget++) {
        d5_overhead o;
        failing_alloc_install(budget);
        d5_status s = d5_overhead_measure(ex, &mp, &o);
        if (s == D5_OK) {
            succeeded = 1;
            cr_assert_geq(o.rounds, mp.min_reps);
            d5_overhead_free(&o);
        } else {
            cr_assert_eq(s, D5_ERR_NOMEM, "budget %ld: %s", budget, d5_last_error());
            cr_assert_null(o.node);
            cr_assert_null(o.graph.samples);
        }
        long live = failing_alloc_live();
        failing_alloc_remove();
        cr_assert_eq(live, 0, "budget %ld: %ld blocks leaked", budget, live);
    }
    cr_assert(succeeded);
    d5_executor_free(ex);
    d5_network_free(net);
}
