/* Builds LeNet-5 in memory, compiles it on the default backends, runs one
 * batch, prints the first logits and the FrameworkOverhead of the network.
 *
 *   run_model [MODEL] [BATCH]      (defaults: lenet 8)
 */
#include <d5/d5.h>

#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, d5_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "lenet";
    d5_model_params mp = d5_model_default_params();
    mp.batch = argc > 2 ? atoi(argv[2]) : 8;
    mp.seed = 1;
    d5_network *net;
    if (d5_model_build(name, &mp, &net) != D5_OK) return fail("model");

    d5_executor *ex;
    if (d5_executor_create(net, NULL, &ex) != D5_OK) return fail("executor");
    d5_memory_plan plan;
    d5_executor_memory(ex, &plan);
    printf("%s: %d nodes, %lld parameters, %zu activation bytes planned (%zu without reuse)\n",
           name, (int)d5_executor_node_count(ex), (long long)d5_network_param_elements(net),
           plan.arena_bytes, plan.unshared_bytes);

    /* Feed an input of ones, run, read the logits. */
    int32_t v;
    d5_value_info in;
    if (d5_network_find_value(net, "input", &v) != D5_OK) return fail("input");
    d5_network_value_at(net, v, &in);
    d5_tensor x;
    if (d5_tensor_alloc(&in.desc, &x) != D5_OK) return fail("alloc");
    for (int64_t i = 0; i < d5_tensor_desc_numel(&x.desc); i++) ((float *)x.data)[i] = 1.0f;
    d5_tensor logits;
    if (d5_executor_feed(ex, "input", &x) != D5_OK || d5_executor_inference(ex) != D5_OK ||
        d5_executor_fetch(ex, "logits", &logits) != D5_OK)
        return fail("inference");
    printf("logits[0][0..2] = %.5f %.5f %.5f\n", ((float *)logits.data)[0],
           ((float *)logits.data)[1], ((float *)logits.data)[2]);

    d5_measure_params p = d5_measure_default_params();
    p.max_time_s = 0.5;
    d5_overhead o;
    if (d5_overhead_measure(ex, &p, &o) != D5_OK) return fail("overhead");
    printf("inference %.1f us median; sum of its nodes alone %.1f us; overhead %+.1f%%\n",
           o.graph.stats.median / 1e3, o.sum_median / 1e3, 100 * o.overhead);
    d5_overhead_free(&o);
    d5_tensor_free(&x);
    d5_executor_free(ex);
    d5_network_free(net);
    return 0;
}
