/* The network part of `d5 bench`: built-in models optimised for inference
 * (d5_network_optimize, all passes) and compiled on the default
 * backends, their inference timed whole and node by node (FrameworkOverhead). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *model;
    int64_t batch;
} cases[] = {
    {"lenet", 64},
    {"resnet20", 32},
};

/* Times one model; then records one inference's memory (its peak a counter;
 * the profile kept in *mem when mem is not NULL). */
static d5_status one(d5_results *r, const char *model, int64_t batch, double max_time,
                     d5_memory_profile *mem)
{
    d5_model_params mp = d5_model_default_params();
    mp.batch = batch;
    mp.seed = 1;
    d5_network *net = NULL;
    d5_executor *ex = NULL;
    d5_overhead o;
    char name[128];
    size_t idx;
    memset(&o, 0, sizeof o);
    d5_status s = d5_model_build(model, &mp, &net);
    if (s == D5_OK) s = d5_network_optimize(net, D5_OPTIMIZE_ALL, NULL);
    if (s == D5_OK) s = d5_executor_create(net, NULL, &ex);
    d5_measure_params p = d5_measure_default_params();
    p.max_time_s = max_time;
    if (s == D5_OK) s = d5_overhead_measure(ex, &p, &o);
    snprintf(name, sizeof name, "network/%s/batch%lld/inference", model, (long long)batch);
    if (s == D5_OK) s = d5_results_add(r, name, &o.graph, "ns", &idx);
    if (s == D5_OK) cli_contention_note(&o.graph);
    if (s == D5_OK)
        s = d5_results_counter(r, idx, "samples_per_second",
                               1e9 * (double)batch / o.graph.stats.median, "1/s");
    if (s == D5_OK) s = d5_results_counter(r, idx, "framework_overhead", o.overhead, "ratio");
    if (s == D5_OK) s = d5_results_counter(r, idx, "framework_overhead_lo", o.overhead_lo, "ratio");
    if (s == D5_OK) s = d5_results_counter(r, idx, "framework_overhead_hi", o.overhead_hi, "ratio");
    if (s == D5_OK) s = d5_results_counter(r, idx, "sum_of_nodes_ns", o.sum_median, "ns");
    if (s == D5_OK)
        s = d5_results_counter(r, idx, "framework_overhead_flag", o.flag, "d5_overhead_flag");
    if (s == D5_OK) s = d5_results_counter(r, idx, "framework_overhead_rounds", o.rounds, "rounds");
    d5_memory_profile prof;
    memset(&prof, 0, sizeof prof);
    if (s == D5_OK) s = d5_executor_record_memory(ex, 0, NULL, model, &prof);
    if (s == D5_OK)
        s = d5_results_counter(r, idx, "memory_peak_bytes", (double)prof.peak_bytes, "B");
    if (s == D5_OK && mem) {
        d5_memory_profile_free(mem);
        *mem = prof;
    } else {
        d5_memory_profile_free(&prof);
    }
    d5_overhead_free(&o);
    d5_executor_free(ex);
    d5_network_free(net);
    return s;
}

d5_status d5_suite_network(d5_results *r, double max_time, d5_memory_profile *mem)
{
    d5_status s = D5_OK;
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; s == D5_OK && i < n; i++)
        s = one(r, cases[i].model, cases[i].batch, max_time, i + 1 == n ? mem : NULL);
    return s;
}
