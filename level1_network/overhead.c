/* The FrameworkOverhead metric (Deep500): the time of a whole inference
 * against the sum of its operators each timed alone on the same buffers, with
 * the same measurement parameters. The overhead's interval is conservative:
 * the graph's CI bounds against the sums of the nodes' CI bounds. */
#include "executor_internal.h"

#include <string.h>

static d5_status run_graph(void *ctx)
{
    return d5_executor_inference(ctx);
}

typedef struct one_node {
    d5_executor *ex;
    int32_t i;
} one_node;

static d5_status run_one(void *ctx)
{
    one_node *o = ctx;
    return d5_executor_run_node(o->ex, o->i);
}

d5_status d5_overhead_measure(d5_executor *ex, const d5_measure_params *p, d5_overhead *out)
{
    memset(out, 0, sizeof *out);
    d5_measure_params mp = p ? *p : d5_measure_default_params();
    out->node = d5_calloc((size_t)ex->nnodes + 1, sizeof *out->node, "overhead");
    if (!out->node) return D5_ERR_NOMEM;
    d5_status s = d5_measure_run(run_graph, ex, &mp, &out->graph);
    for (int32_t i = 0; s == D5_OK && i < ex->nnodes; i++) {
        one_node o = {ex, i};
        if ((s = d5_measure_run(run_one, &o, &mp, &out->node[i])) != D5_OK) break;
        out->nodes++;
        out->sum_median += out->node[i].stats.median;
        out->sum_lo += out->node[i].stats.ci_low;
        out->sum_hi += out->node[i].stats.ci_high;
    }
    if (s != D5_OK) {
        d5_overhead_free(out);
        return s;
    }
    const d5_stats *g = &out->graph.stats;
    if (out->sum_median > 0) {
        out->overhead = g->median / out->sum_median - 1;
        out->overhead_lo = out->sum_hi > 0 ? g->ci_low / out->sum_hi - 1 : 0;
        out->overhead_hi = out->sum_lo > 0 ? g->ci_high / out->sum_lo - 1 : 0;
    }
    return D5_OK;
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
