/* The operator part of `d5 bench`: a DeepBench subset of GEMM and convolution
 * on every available fast backend. */
#include "cli.h"
#include "op_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *op, *size;
} cases[] = {
    {"Gemm", "M=1760,N=128,K=1760,a_t=N,b_t=N"},
    {"Gemm", "M=2560,N=64,K=2560,a_t=N,b_t=N"},
    {"Conv", "W=56,H=56,C=64,N=16,K=64,S=3,R=3,pad_w=1,pad_h=1,wstride=1,hstride=1"},
    {"Conv", "W=28,H=28,C=192,N=16,K=64,S=1,R=1,pad_w=0,pad_h=0,wstride=1,hstride=1"},
};

/* Every backend of the registry that has the operator and can run here, but
 * the reference one, which would take minutes on these sizes (see
 * `d5 test-operator --backend ref`). */
static int fast_backend(const char *op, const char *name, const d5_op_desc **d)
{
    return strcmp(name, "ref") != 0 && d5_op_find(op, name, d) == D5_OK;
}

d5_status d5_suite_operators(d5_results *r, double max_time, cli_rates *rates)
{
    run_opts o = {.max_time = max_time, .validate_max_gflop = 0, .timeout = 10 * max_time + 30};
    d5_status s = D5_OK;
    for (size_t i = 0; s == D5_OK && i < sizeof cases / sizeof cases[0]; i++) {
        op_case *list;
        size_t n;
        s = sizes_load(cases[i].op, 2, cases[i].size, &list, &n);
        for (size_t b = 0; s == D5_OK && b < d5_backend_count(); b++) {
            const d5_op_desc *d;
            const char *backend = d5_backend_name(b);
            if (!fast_backend(cases[i].op, backend, &d)) continue;
            target t = {{0}, d, NULL};
            snprintf(t.label, sizeof t.label, "%s", backend);
            outcome res;
            run_here(&o, &list[0], &t, &res);
            char name[512];
            snprintf(name, sizeof name, "%s/%s/%s", cases[i].op, list[0].label, backend);
            if (!res.ok) {
                s = d5_results_add_error(r, name, res.status);
                continue;
            }
            size_t idx;
            double med = res.m.stats.median;
            s = d5_results_add(r, name, &res.m, "ns", &idx);
            if (s == D5_OK) s = d5_results_counter(r, idx, "GFLOP/s", res.flops / med, "GFLOP/s");
            if (s == D5_OK && rates) s = cli_rates_note(rates, idx, res.flops / med);
            cli_contention_note(&res.m);
            d5_measurement_free(&res.m);
        }
        if (s == D5_OK) free(list);
    }
    return s;
}
