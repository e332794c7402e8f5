/* bench/network: what one call through ONNX Runtime's Node.js binding costs
 * when the model does nearly nothing. The ORT samples of the table are
 * `await session.run(feeds)` timed in ort_bench.js, so they include the
 * binding (the promise, a setImmediate hop, the feeds' and the output's
 * conversion); here the same harness runs an Identity of one float, whose own
 * work is a copy of four bytes, and its median is that per-call cost. */
#define _POSIX_C_SOURCE 200809L
#include "bench_network.h"

#include <stdio.h>
#include <string.h>

/* input [1, 1] float32 -> Identity -> output. */
static d5_status save_identity(const char *path)
{
    d5_network *net = NULL;
    d5_tensor_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.dtype = D5_F32;
    desc.ndim = 2;
    desc.shape[0] = 1;
    desc.shape[1] = 1;
    const char *in[1] = {"input"}, *out[1] = {"output"};
    d5_status s = d5_network_create("identity", &net);
    if (s == D5_OK) s = d5_network_add_input(net, "input", &desc, NULL);
    if (s == D5_OK)
        s = d5_network_add_node(net, "identity", "Identity", NULL, in, 1, out, 1, NULL, NULL);
    if (s == D5_OK) s = d5_network_add_output(net, "output", &desc);
    if (s == D5_OK) s = d5_onnx_save(net, path);
    d5_network_free(net);
    return s;
}

d5_status bench_binding_cost(const char *dir, const ort_side *ort, double seconds, d5_results *r)
{
    char path[4096], ci[BENCH_CI_STR];
    d5_status s = bench_path(path, sizeof path, dir, BENCH_IDENTITY_FILE);
    if (s == D5_OK) s = save_identity(path);
    if (s != D5_OK) return s;
    ort_result o = {0};
    const ort_request rq = {path, 1, "1", seconds, 100, BENCH_BINDING_MAX_REPS, 0, 0};
    if (ort_run(ort, &rq, &o) != D5_OK) {
        printf("ORT binding per call: not measured (%s)\n", d5_last_error());
        return D5_OK;
    }
    d5_measurement m;
    memset(&m, 0, sizeof m);
    m.samples = o.samples;
    m.n = o.n;
    m.warmup = 100;
    m.stop = D5_STOP_TIME;
    s = d5_stats_compute(o.samples, o.n, &m.stats);
    if (s == D5_OK) {
        bench_ci_str(&m.stats, ci, sizeof ci);
        printf("ORT binding per call (session.run of an Identity of 1 float, same harness): %s, "
               "n=%zu; the ORT medians above include it\n",
               ci, o.n);
        size_t idx;
        s = d5_results_add(r, "ort/binding/identity", &m, "ns", &idx);
    }
    ort_result_free(&o);
    return s;
}
