/* bench/memory: what the memory report costs. A network's inference (CIFAR
 * ResNet-20 at batch 32 by default, optimised as d5 run does) timed with the
 * accounting off, with heap accounting on, and recorded node by node
 * (d5_executor_record_memory, the profile built each time), side by side in
 * interleaved rounds; then one d5_alloc + d5_free pair the same three ways
 * beside the allocator's own functions. Each "on" is compared with "off" by
 * the median of the per-round ratios with its 95% CI, and a rank test.
 *
 *     d5-bench-memory [--model FILE.onnx | --name resnet20] [--batch 32] [--time S]
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <stdlib.h>
#include <string.h>

enum { OFF, COUNTERS, RECORDED, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"accounting off", "heap accounting on",
                                                     "recorded node by node"};

typedef struct samples {
    double *x[NVARIANTS];
    size_t n, cap;
} samples;

static d5_status grow(samples *s)
{
    if (s->n < s->cap) return D5_OK;
    size_t cap = s->cap ? 2 * s->cap : 256;
    for (int v = 0; v < NVARIANTS; v++) {
        double *p = d5_realloc(s->x[v], s->cap * sizeof *p, cap * sizeof *p, "bench samples");
        if (!p) return D5_ERR_NOMEM;
        s->x[v] = p;
    }
    s->cap = cap;
    return D5_OK;
}

static double now_ns(void)
{
    return (double)d5_monotonic_ns();
}

/* One inference the way of variant v, timed. */
static d5_status run_network(d5_executor *ex, int v, double *ns)
{
    double t0 = now_ns();
    d5_status s = D5_OK;
    if (v == OFF) {
        s = d5_executor_inference(ex);
    } else if (v == COUNTERS) {
        s = d5_memory_track_begin(NULL);
        if (s == D5_OK) s = d5_executor_inference(ex);
        d5_status e = d5_memory_track_end(NULL);
        if (s == D5_OK) s = e;
    } else {
        d5_memory_profile p;
        s = d5_executor_record_memory(ex, 0, NULL, "bench", &p);
        d5_memory_profile_free(&p);
    }
    *ns = now_ns() - t0;
    return s;
}

/* 64 d5_alloc + d5_free pairs of 256 bytes (variant v; NVARIANTS: the
 * allocator's own functions), per pair. */
#define PAIRS 64
static d5_status run_pairs(int v, double *ns)
{
    static void *p[PAIRS];
    d5_memory_track_params tp = d5_memory_track_default_params();
    tp.log = v == RECORDED;
    d5_status s = v == COUNTERS || v == RECORDED ? d5_memory_track_begin(&tp) : D5_OK;
    if (s != D5_OK) return s;
    d5_allocator a = d5_allocator_get();
    double t0 = now_ns();
    if (v == NVARIANTS) {
        for (int i = 0; i < PAIRS; i++) p[i] = a.alloc(a.ctx, 256, 16);
        for (int i = 0; i < PAIRS; i++) a.free(a.ctx, p[i]);
    } else {
        for (int i = 0; i < PAIRS; i++) p[i] = d5_alloc(256, "bench");
        for (int i = 0; i < PAIRS; i++) d5_free(p[i]);
    }
    *ns = (now_ns() - t0) / PAIRS;
    if (v == COUNTERS || v == RECORDED) s = d5_memory_track_end(NULL);
    for (int i = 0; s == D5_OK && i < PAIRS; i++)
        if (!p[i]) s = d5_error(D5_ERR_NOMEM, "bench: allocation failed");
    return s;
}

/* Rounds of every variant once, in an order that rotates, after 5 warm-up
 * rounds, until `seconds` of rounds (at least 20). */
static d5_status rounds(d5_executor *ex, double seconds, samples *out)
{
    d5_status s = D5_OK;
    double ns;
    for (size_t k = 0; s == D5_OK && k < 5; k++)
        for (int v = 0; s == D5_OK && v < NVARIANTS; v++) s = run_network(ex, v, &ns);
    double t0 = now_ns();
    for (size_t k = 0; s == D5_OK && k < 100000; k++) {
        if (k >= 20 && now_ns() - t0 > seconds * 1e9) break;
        if ((s = grow(out)) != D5_OK) break;
        for (int j = 0; s == D5_OK && j < NVARIANTS; j++) {
            int v = (int)((j + k) % NVARIANTS);
            s = run_network(ex, v, &ns);
            out->x[v][out->n] = ns;
        }
        if (s == D5_OK) out->n++;
    }
    return s;
}

static void print_stats(const char *name, const d5_stats *st, const char *unit)
{
    printf("  %-34s %10.4g %s [%.4g, %.4g] (n=%zu)\n", name, st->median, unit, st->ci_low,
           st->ci_high, st->n);
}

/* "on" against "off": the per-round ratios' median with its CI, and the rank
 * test of the two sample sets. */
static d5_status compare(const char *name, const double *on, const double *off, size_t n)
{
    double *r = d5_alloc((n + 1) * sizeof *r, "bench ratios");
    if (!r) return D5_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) r[i] = on[i] / off[i];
    d5_stats st;
    d5_mwu u;
    d5_status s = d5_stats_compute(r, n, &st);
    if (s == D5_OK) s = d5_mann_whitney(on, n, off, n, &u);
    if (s == D5_OK)
        printf("  %-34s x%.4f [%.4f, %.4f] (%+.2f%%), Mann-Whitney p = %.2g\n", name, st.median,
               st.ci_low, st.ci_high, 100 * (st.median - 1), u.p_value);
    d5_free(r);
    return s;
}

static d5_status load(const char *model, const char *name, int batch, d5_network **net)
{
    d5_status s;
    if (model) {
        s = d5_onnx_load(model, net);
        if (s == D5_OK) s = d5_network_set_batch(*net, batch, 0);
    } else {
        d5_model_params mp = d5_model_default_params();
        mp.batch = batch;
        mp.seed = 1;
        s = d5_model_build(name, &mp, net);
    }
    d5_optimize_report rep;
    if (s == D5_OK) s = d5_network_optimize(*net, D5_OPTIMIZE_ALL, &rep);
    return s;
}

/* Random inputs from a fixed seed. */
static d5_status feed(d5_network *net, d5_executor *ex)
{
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < d5_network_input_count(net); i++) {
        int32_t v;
        d5_value_info info;
        d5_tensor t;
        s = d5_network_find_value(net, d5_network_input_name(net, i), &v);
        if (s != D5_OK) break;
        d5_network_value_at(net, v, &info);
        if ((s = d5_tensor_alloc(&info.desc, &t)) != D5_OK) break;
        d5_rng r;
        d5_rng_seed(&r, 1 + (uint64_t)i);
        if (info.desc.dtype == D5_F32)
            for (int64_t k = 0; k < d5_tensor_desc_numel(&info.desc); k++)
                ((float *)t.data)[k] = (float)d5_rng_normal(&r);
        s = d5_executor_feed(ex, d5_network_input_name(net, i), &t);
        d5_tensor_free(&t);
    }
    return s;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *name = "resnet20";
    int batch = 32, threads = 0;
    double seconds = 20;
    const cli_opt opts[] = {
        {"model", CLI_STRING, &model, "FILE.onnx", "the network (default: --name, built)", 0, 0},
        {"name", CLI_STRING, &name, "MODEL", "a built-in model (default resnet20)", 0, 0},
        {"batch", CLI_INT, &batch, "N", "batch size (default 32)", 1, 1 << 16},
        {"time", CLI_DOUBLE, &seconds, "S", "time budget of the network's rounds (default 20)", 0.1,
         3600},
        {"threads", CLI_INT, &threads, "N", CLI_THREADS_HELP, 0, 4096},
    };
    const cli_spec spec = {
        CLI_SPEC("bench-memory", "[--model FILE.onnx | --name MODEL] [--batch N] [--time S]",
                 "The cost of the memory report: inference with the accounting off, with\n"
                 "heap accounting on, and recorded node by node, in interleaved rounds; then\n"
                 "one d5_alloc + d5_free pair the same ways and through the allocator's\n"
                 "own functions.",
                 opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    cli_echo(stdout, &spec);
    if ((rc = cli_threads_apply("bench-memory", threads)) >= 0) return rc;
    d5_network *net = NULL;
    d5_executor *ex = NULL;
    samples net_s = {{NULL}, 0, 0}, pair_s = {{NULL}, 0, 0};
    double *direct = NULL;
    d5_status s = load(model, name, batch, &net);
    if (s == D5_OK) s = d5_executor_create(net, NULL, &ex);
    if (s == D5_OK) s = feed(net, ex);
    if (s == D5_OK) {
        d5_memory_plan plan;
        d5_executor_memory(ex, &plan);
        printf("network     %s, batch %d: %d nodes, arena %.2f MiB\n", model ? model : name, batch,
               (int)d5_executor_node_count(ex), (double)plan.arena_bytes / 1048576);
        s = rounds(ex, seconds, &net_s);
    }
    if (s == D5_OK) {
        printf("\none inference (ns; median [95%% CI])\n");
        for (int v = 0; s == D5_OK && v < NVARIANTS; v++) {
            d5_stats st;
            s = d5_stats_compute(net_s.x[v], net_s.n, &st);
            if (s == D5_OK) print_stats(variant_names[v], &st, "ns");
        }
        printf("against accounting off (per-round ratio, median [95%% CI])\n");
        for (int v = 1; s == D5_OK && v < NVARIANTS; v++)
            s = compare(variant_names[v], net_s.x[v], net_s.x[OFF], net_s.n);
    }
    /* The allocation pair: the three variants and the allocator's own
     * functions, each round in a rotating order. */
    if (s == D5_OK) s = grow(&pair_s);
    direct = s == D5_OK ? d5_alloc(100000 * sizeof *direct, "bench samples") : NULL;
    if (s == D5_OK && !direct) s = D5_ERR_NOMEM;
    double t0 = now_ns(), ns;
    for (size_t k = 0; s == D5_OK && k < 100000 && now_ns() - t0 < 2e9; k++) {
        if ((s = grow(&pair_s)) != D5_OK) break;
        if (k == 0) /* warm-up */
            for (int v = 0; s == D5_OK && v <= NVARIANTS; v++) s = run_pairs(v, &ns);
        for (int j = 0; s == D5_OK && j < 4; j++) {
            int v = (int)((j + k) % 4);
            s = run_pairs(v == 3 ? NVARIANTS : v, &ns);
            if (v == 3)
                direct[pair_s.n] = ns;
            else
                pair_s.x[v][pair_s.n] = ns;
        }
        if (s == D5_OK) pair_s.n++;
    }
    if (s == D5_OK) {
        printf("\none d5_alloc + d5_free pair of 256 bytes (ns; median [95%% CI])\n");
        d5_stats st;
        s = d5_stats_compute(direct, pair_s.n, &st);
        if (s == D5_OK) print_stats("allocator's own functions", &st, "ns");
        const char *names[NVARIANTS] = {"accounting off", "heap accounting on",
                                        "heap accounting on, logged"};
        for (int v = 0; s == D5_OK && v < NVARIANTS; v++) {
            s = d5_stats_compute(pair_s.x[v], pair_s.n, &st);
            if (s == D5_OK) print_stats(names[v], &st, "ns");
        }
        printf("against the allocator's own functions (per-round ratio)\n");
        for (int v = 0; s == D5_OK && v < NVARIANTS; v++)
            s = compare(names[v], pair_s.x[v], direct, pair_s.n);
    }
    for (int v = 0; v < NVARIANTS; v++) {
        d5_free(net_s.x[v]);
        d5_free(pair_s.x[v]);
    }
    d5_free(direct);
    d5_executor_free(ex);
    d5_network_free(net);
    if (s != D5_OK) return cli_fail("bench-memory", s);
    return D5_EXIT_OK;
}
