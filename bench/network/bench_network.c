/* bench/network: whole networks on d5 against ONNX Runtime (onnxruntime-node,
 * CPU execution provider), on the same ONNX files, in one run.
 *
 * Each case builds a built-in model (include/d5/models.h, seed 1), saves it
 * with d5_onnx_save, and times inference on both sides with the same input
 * (ort_bench.js generates the same seeded values) and the same thread count:
 * d5 loads the file with d5_onnx_load, optimises the graph (--optimize, default
 * all) and compiles it with the executor's default backends; ONNX Runtime runs
 * it with all graph optimisations. The two
 * sides alternate in blocks (d5, ORT, d5, ORT, ...) with an equal share of the
 * time budget, their samples are pooled, and the table gives medians with 95%
 * confidence intervals, the ratio d5/ORT of the medians, the Mann-Whitney U
 * p-value and the largest difference between the two outputs, followed by the
 * cost of one call through ORT's Node.js binding (binding_cost.c). Then
 * FrameworkOverhead of LeNet at batch 64 and CIFAR ResNet-20 at batch 32, and, measured first so
 * that the process's peak RSS is its own, the load time and memory of the largest built-in model.
 *
 * The transformer cases time the ONNX files that bench/network/transformers.py
 * exports from PyTorch (BERT-style encoder at batch 1 and 8, GPT-2-style
 * decoder with a causal mask, ViT-style classifier; opset 17, fixed shapes)
 * from the folder given with --transformers-dir; without it they are skipped.
 * Their token ids are the same xorshift32 sequence, (x >> 8) % 1000, on both
 * sides. The full-sized transformers that `d5 model` builds (bert-base,
 * gpt2-small with its 50,257-word output, vit-b16; 128 tokens, batch 1) are
 * built-in cases. --cases runs only the inference cases named (and skips the
 * load and FrameworkOverhead parts).
 *
 *     bench/network/install.sh build/ort
 *     /usr/bin/python3 bench/network/transformers.py build/transformers
 *     d5-bench-network --ort-dir build/ort [--time 5] [--json FILE]
 *         [--transformers-dir build/transformers] [--cases bert_b1,bert_b8,gpt2_b4,vit_b16]
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_network.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef D5_SOURCE_DIR
#define D5_SOURCE_DIR "."
#endif

#define BENCH_WARMUP   5      /* runs discarded before each block, on both sides */
#define BENCH_MAX_REPS 100000 /* samples per side at most, over all blocks */
#define BENCH_MIN_REPS 3      /* per block, even past the budget (as ort_bench.js) */

typedef struct bench_case {
    const char *model;
    int64_t batch;
    const char *file; /* NULL: a built-in model; else a file under --transformers-dir */
    int64_t ids;      /* > 0: the input is int64 token ids in [0, ids) */
    const char *id;   /* the name --cases selects it by */
} bench_case;

static const bench_case cases[] = {
    {"lenet", 1, NULL, 0, "lenet_b1"},
    {"lenet", 64, NULL, 0, "lenet_b64"},
    {"resnet20", 32, NULL, 0, "resnet20_b32"},
    {"resnet18", 1, NULL, 0, "resnet18_b1"},
    {"resnet50", 1, NULL, 0, "resnet50_b1"},
    {"resnet18-cifar", 32, NULL, 0, "resnet18-cifar_b32"},
    {"bert", 1, "test_bert_b1/model.onnx", 1000, "bert_b1"},
    {"bert", 8, "test_bert_b8/model.onnx", 1000, "bert_b8"},
    {"gpt2", 4, "test_gpt2_b4/model.onnx", 1000, "gpt2_b4"},
    {"gpt2-s1024", 1, "test_gpt2_s1024_b1/model.onnx", 1000, "gpt2_s1024_b1"},
    {"vit", 16, "test_vit_b16/model.onnx", 0, "vit_b16"},
    {"bert-base", 1, NULL, 1000, "bert-base_b1"},
    {"gpt2-small", 1, NULL, 1000, "gpt2-small_b1"},
    {"vit-b16", 1, NULL, 0, "vit-b16_b1"},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* 1 when `id` is an item of the comma-separated `list` (NULL: every case). */
static int selected(const char *list, const char *id)
{
    if (!list) return 1;
    size_t len = strlen(id);
    for (const char *p = list; p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, id, n) == 0) return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* A growable array of samples. */
typedef struct pool {
    double *x;
    size_t n, cap;
} pool;

static d5_status pool_add(pool *p, const double *x, size_t n)
{
    d5_status s = d5_grow(&p->x, &p->cap, p->n + n, sizeof *p->x, "pooled samples");
    if (s != D5_OK) return s;
    memcpy(p->x + p->n, x, n * sizeof *x);
    p->n += n;
    return D5_OK;
}

static d5_status run_inference(void *ctx)
{
    return d5_executor_inference(ctx);
}

/* The largest |d5 - ORT| over the values ORT returned, relative to max |ORT|. */
static double output_diff(const net_side *d, const ort_result *o)
{
    d5_tensor y;
    const char *name = d5_network_output_name(d->net, 0);
    if (!o->output || d5_executor_fetch(d->ex, name, &y) != D5_OK || y.desc.dtype != D5_F32)
        return NAN;
    size_t n = (size_t)d5_tensor_desc_numel(&y.desc);
    if (n > o->noutput) n = o->noutput;
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double a = ((const float *)y.data)[i], b = o->output[i];
        diff = fmax(diff, fabs(a - b));
        scale = fmax(scale, fabs(b));
    }
    return scale > 0 ? diff / scale : diff;
}

/* Pooled samples as a measurement for d5_results. */
static d5_status pooled_measurement(const pool *p, d5_measurement *m)
{
    memset(m, 0, sizeof *m);
    m->samples = p->x;
    m->n = p->n;
    m->warmup = BENCH_WARMUP;
    m->stop = D5_STOP_TIME;
    return d5_stats_compute(p->x, p->n, &m->stats);
}

typedef struct bench_ctx {
    const char *dir;
    const ort_side *ort; /* NULL: ONNX Runtime unavailable */
    char ort_skip[512];  /* why, when unavailable */
    double seconds;
    int blocks;
    d5_optimize_level optimize;
    d5_results *r;
    char ort_version[64];
} bench_ctx;

/* Adds both sides of a case to the results; the d5 entry carries the ratio
 * of the medians, the p-value and the output difference. */
static d5_status record_case(bench_ctx *b, const char *name, const pool *dp, const pool *op,
                             const d5_mwu *u, int64_t batch, double diff)
{
    d5_measurement md, mo;
    size_t idx;
    char key[256];
    snprintf(key, sizeof key, "network/%s/d5", name);
    d5_status s = pooled_measurement(dp, &md);
    if (s == D5_OK) s = d5_results_add(b->r, key, &md, "ns", &idx);
    if (s == D5_OK)
        s = d5_results_counter(b->r, idx, "samples_per_second",
                               1e9 * (double)batch / md.stats.median, "1/s");
    if (s != D5_OK || op->n == 0) return s;
    s = pooled_measurement(op, &mo);
    if (s == D5_OK)
        s = d5_results_counter(b->r, idx, "ratio_to_ort", md.stats.median / mo.stats.median,
                               "ratio");
    if (s == D5_OK) s = d5_results_counter(b->r, idx, "mwu_p", u->p_value, "p");
    if (s == D5_OK && !isnan(diff))
        s = d5_results_counter(b->r, idx, "max_rel_output_diff", diff, "ratio");
    snprintf(key, sizeof key, "network/%s/ort", name);
    if (s == D5_OK) s = d5_results_add(b->r, key, &mo, "ns", &idx);
    if (s == D5_OK)
        s = d5_results_counter(b->r, idx, "samples_per_second",
                               1e9 * (double)batch / mo.stats.median, "1/s");
    return s;
}

/* Measures one case, both sides alternating in blocks, and prints its row. */
static d5_status run_case(bench_ctx *b, const bench_case *c, const char *path)
{
    char name[128], dstr[BENCH_CI_STR], ostr[BENCH_CI_STR] = "skipped", why[512] = "";
    snprintf(name, sizeof name, "%s/batch:%lld", c->model, (long long)c->batch);
    net_side d;
    pool dp = {0}, op = {0};
    ort_result last = {0};
    const ort_side *ort = b->ort;
    d5_status s = net_side_open(path, c->batch, b->optimize, c->ids, &d);
    if (s != D5_OK) return s;
    d5_measure_params mp = d5_measure_default_params();
    mp.warmup = BENCH_WARMUP;
    mp.min_reps = BENCH_MIN_REPS;
    mp.max_reps = (uint32_t)(BENCH_MAX_REPS / b->blocks);
    mp.max_time_s = b->seconds / b->blocks;
    mp.rel_ci = 1e-9; /* both sides spend their whole budget */
    for (int blk = 0; blk < b->blocks && s == D5_OK; blk++) {
        d5_measurement m;
        cli_progress(blk + 1, b->blocks, "%s: d5 then ORT, %.1f s each", name, mp.max_time_s);
        s = d5_measure_run(run_inference, d.ex, &mp, &m);
        if (s != D5_OK) break;
        s = pool_add(&dp, m.samples, m.n);
        d5_measurement_free(&m);
        if (s != D5_OK || !ort) continue;
        ort_result_free(&last);
        const ort_request rq = {
            path, c->batch, d.shape, mp.max_time_s, BENCH_WARMUP, (int32_t)mp.max_reps, 0, c->ids};
        if (ort_run(ort, &rq, &last) != D5_OK) {
            snprintf(why, sizeof why, "%s", d5_last_error());
            ort = NULL;
            op.n = 0;
            continue;
        }
        s = pool_add(&op, last.samples, last.n);
        if (!b->ort_version[0]) snprintf(b->ort_version, sizeof b->ort_version, "%s", last.version);
    }
    d5_stats ds, os;
    d5_mwu u;
    memset(&u, 0, sizeof u);
    double diff = NAN;
    if (s == D5_OK) s = d5_stats_compute(dp.x, dp.n, &ds);
    if (s == D5_OK) bench_ci_str(&ds, dstr, sizeof dstr);
    if (s == D5_OK && op.n > 0) {
        s = d5_stats_compute(op.x, op.n, &os);
        if (s == D5_OK) s = d5_mann_whitney(dp.x, dp.n, op.x, op.n, &u);
        if (s == D5_OK) bench_ci_str(&os, ostr, sizeof ostr);
        diff = output_diff(&d, &last);
    }
    if (s == D5_OK) {
        char counts[48];
        snprintf(counts, sizeof counts, "%zu/%zu", dp.n, op.n);
        if (op.n > 0)
            printf("%-22s %-30s %-30s %7.3f %9.2g %13s %9.1e\n", name, dstr, ostr,
                   ds.median / os.median, u.p_value, counts, diff);
        else
            printf("%-22s %-30s %-30s %7s %9s %13s %9s\n", name, dstr, ostr, "-", "-", counts, "-");
        if (why[0]) printf("  ORT: skipped (%s)\n", why);
        fflush(stdout);
        s = record_case(b, name, &dp, &op, &u, c->batch, diff);
    }
    ort_result_free(&last);
    d5_free(dp.x);
    d5_free(op.x);
    net_side_close(&d);
    return s;
}

/* FrameworkOverhead: the whole graph against the sum of its nodes timed alone. */
static d5_status run_overhead(bench_ctx *b, const char *model, const char *path, int64_t batch)
{
    net_side d;
    d5_overhead o;
    memset(&o, 0, sizeof o);
    d5_status s = net_side_open(path, batch, b->optimize, 0, &d);
    if (s != D5_OK) return s;
    d5_measure_params mp = d5_measure_default_params();
    mp.warmup = BENCH_WARMUP;
    mp.max_time_s = b->seconds / 4 > 0.05 ? b->seconds / 4 : 0.05;
    cli_progress(1, 1, "FrameworkOverhead of %s at batch %lld", model, (long long)batch);
    s = d5_overhead_measure(d.ex, &mp, &o);
    if (s == D5_OK) {
        char g[BENCH_CI_STR], lo[32], m[32], hi[32];
        bench_ci_str(&o.graph.stats, g, sizeof g);
        d5_format_duration(o.sum_median, m, sizeof m);
        d5_format_duration(o.sum_lo, lo, sizeof lo);
        d5_format_duration(o.sum_hi, hi, sizeof hi);
        printf("\nFrameworkOverhead, %s batch %lld (%d nodes; d5 only)\n", model, (long long)batch,
               (int)o.nodes);
        printf("  whole graph        %s (n=%zu)\n", g, o.graph.n);
        printf("  sum of nodes alone %s [%s, %s]\n", m, lo, hi);
        printf("  overhead           %+.2f%% [%+.2f%%, %+.2f%%]\n", 100 * o.overhead,
               100 * o.overhead_lo, 100 * o.overhead_hi);
        size_t idx;
        char key[128];
        snprintf(key, sizeof key, "overhead/%s/batch:%lld/graph", model, (long long)batch);
        s = d5_results_add(b->r, key, &o.graph, "ns", &idx);
        if (s == D5_OK) s = d5_results_counter(b->r, idx, "overhead", o.overhead, "ratio");
        if (s == D5_OK) s = d5_results_counter(b->r, idx, "overhead_lo", o.overhead_lo, "ratio");
        if (s == D5_OK) s = d5_results_counter(b->r, idx, "overhead_hi", o.overhead_hi, "ratio");
        if (s == D5_OK) s = d5_results_counter(b->r, idx, "sum_of_nodes_ns", o.sum_median, "ns");
    }
    d5_overhead_free(&o);
    net_side_close(&d);
    return s;
}

/* The model file of `model` in the working folder, built on first use. */
static d5_status model_file(const char *dir, const char *model, char *path, size_t size)
{
    struct stat st;
    char file[256];
    snprintf(file, sizeof file, "%s.onnx", model);
    d5_status s = bench_path(path, size, dir, file);
    if (s != D5_OK || stat(path, &st) == 0) return s;
    return bench_save_model(model, path);
}

/* Prints a failed part and records it; the other parts go on. */
static void report_failure(const char *what, d5_status s, d5_results *r)
{
    char reason[1024];
    snprintf(reason, sizeof reason, "%s: %s", d5_status_str(s), d5_last_error());
    printf("%s: d5 failed: %s\n", what, reason);
    if (d5_results_add_error(r, what, reason) != D5_OK)
        fprintf(stderr, "bench-network: could not record the failure of %s\n", what);
}

/* Removes the model files and the folder unless they are to be kept. */
static void clean_up(const char *dir)
{
    char path[4096], file[256];
    for (int32_t i = 0; i < d5_model_count(); i++) {
        snprintf(file, sizeof file, "%s.onnx", d5_model_name(i));
        if (bench_path(path, sizeof path, dir, file) == D5_OK) unlink(path);
    }
    if (bench_path(path, sizeof path, dir, "ort_stderr.txt") == D5_OK) unlink(path);
    if (bench_path(path, sizeof path, dir, BENCH_IDENTITY_FILE) == D5_OK) unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    cli_wait_policy_restart(argv); /* d5's OpenMP wait policy, as the d5 tool has it */
    const char *ort_dir = NULL, *node = "node", *json = NULL, *keep_dir = NULL, *optimize = "all";
    const char *script = D5_SOURCE_DIR "/bench/network/ort_bench.js";
    const char *xfmr_dir = NULL, *only = NULL;
    double seconds = 5;
    int threads = 2, blocks = 2, failures = 0;
    const cli_opt opts[] = {
        {"time", CLI_DOUBLE, &seconds, "S", "time budget per side and case, seconds (default 5)",
         0.05, 3600},
        {"blocks", CLI_INT, &blocks, "B", "alternating blocks per side (default 2)", 1, 100},
        {"threads", CLI_INT, &threads, "N", "threads on both sides (default 2)", 1, 4096},
        {"ort-dir", CLI_STRING, &ort_dir, "DIR", "where bench/network/install.sh put node_modules",
         0, 0},
        {"node", CLI_STRING, &node, "PATH", "the Node.js executable (default node)", 0, 0},
        {"script", CLI_STRING, &script, "FILE", "ort_bench.js (default: the source tree's)", 0, 0},
        {"models-dir", CLI_STRING, &keep_dir, "DIR",
         "write the ONNX files into DIR and keep them (default: a temporary folder)", 0, 0},
        {"transformers-dir", CLI_STRING, &xfmr_dir, "DIR",
         "the folder bench/network/transformers.py wrote (default: skip those cases)", 0, 0},
        {"cases", CLI_STRING, &only, "LIST",
         "only these inference cases, comma-separated (lenet_b1, lenet_b64, resnet20_b32, "
         "resnet18_b1, resnet50_b1, resnet18-cifar_b32, bert_b1, bert_b8, gpt2_b4, gpt2_s1024_b1, "
         "vit_b16, bert-base_b1, gpt2-small_b1, vit-b16_b1); "
         "skips the load and FrameworkOverhead parts",
         0, 0},
        {"optimize", CLI_STRING, &optimize, "none|basic|all",
         "d5's graph optimisation passes (default all, as ORT's)", 0, 0},
        {"json", CLI_STRING, &json, "FILE", "write the results as JSON (Google Benchmark schema)",
         0, 0},
    };
    const cli_spec spec = {CLI_SPEC(
        "bench-network",
        "[--ort-dir DIR] [--time S] [--blocks B] [--threads N] [--optimize LEVEL] [--json FILE]\n"
        "       [--transformers-dir DIR] [--cases LIST]",
        "Whole-network inference, load time and memory: d5 against ONNX "
        "Runtime\n(onnxruntime-node, CPU) on the same ONNX files.",
        opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    cli_echo(stdout, &spec);
    d5_optimize_level level;
    if (d5_optimize_parse(optimize, &level) != D5_OK) {
        fprintf(stderr, "bench-network: --optimize %s: expected none, basic or all\n", optimize);
        return D5_EXIT_USAGE;
    }

    char dir[4096];
    if (keep_dir) {
        if ((size_t)snprintf(dir, sizeof dir, "%s", keep_dir) >= sizeof dir - 64) {
            fprintf(stderr, "bench-network: --models-dir %s is too long\n", keep_dir);
            return D5_EXIT_USAGE;
        }
        if (mkdir(dir, 0777) != 0 && access(dir, W_OK) != 0) {
            fprintf(stderr, "bench-network: cannot create or write the folder %s\n", dir);
            return D5_EXIT_INPUT;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        int n = snprintf(dir, sizeof dir, "%s/d5-bench-network-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (n < 0 || (size_t)n >= sizeof dir - 64 || !mkdtemp(dir)) {
            fprintf(stderr, "bench-network: cannot create a temporary folder %s\n", dir);
            return D5_EXIT_INPUT;
        }
    }
    d5_results *r = NULL;
    d5_status s = d5_results_create(&r);
    if (s == D5_OK) s = d5_threads_set(threads);
    if (s != D5_OK) return cli_fail("bench-network", s);

    bench_ctx b = {dir, NULL, "", seconds, blocks, level, r, ""};
    ort_side ort = {node, script, ort_dir, dir, threads};
    if (ort_probe(&ort) == D5_OK)
        b.ort = &ort;
    else
        snprintf(b.ort_skip, sizeof b.ort_skip, "%s", d5_last_error());
    if (!b.ort) printf("ORT: skipped (%s)\n", b.ort_skip);
    bench_print_load("start");
    printf("# threads %d on both sides; d5: graph optimisation %s; ORT: CPU execution provider, "
           "intra-op %d, inter-op 1, graph optimisation all\n",
           threads, optimize, threads);

    for (const char *p = only; p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int known = 0;
        for (int i = 0; i < NCASES; i++)
            known |= strlen(cases[i].id) == n && strncmp(p, cases[i].id, n) == 0;
        if (!known) {
            fprintf(stderr, "bench-network: --cases: no case named '%.*s'\n", (int)n, p);
            return D5_EXIT_USAGE;
        }
        p = end ? end + 1 : NULL;
    }
    if (!only && (s = bench_load_memory(dir, b.ort, seconds, level, r)) != D5_OK) {
        failures++;
        report_failure("load", s, r);
    }

    printf("\ninference, %d alternating blocks of %.2f s per side; ratio = d5 median / ORT "
           "median\n",
           blocks, seconds / blocks);
    printf("%-22s %-30s %-30s %7s %9s %13s %9s\n", "case", "d5 median [95% CI]",
           "ORT median [95% CI]", "d5/ORT", "MWU p", "n d5/ORT", "out diff");
    char path[4096];
    for (int i = 0; i < NCASES; i++) {
        char what[128];
        if (!selected(only, cases[i].id)) continue;
        snprintf(what, sizeof what, "network/%s/batch:%lld", cases[i].model,
                 (long long)cases[i].batch);
        if (cases[i].file && !xfmr_dir) {
            printf("%-22s skipped (no --transformers-dir; see bench/network/transformers.py)\n",
                   cases[i].id);
            continue;
        }
        if (cases[i].file)
            s = bench_path(path, sizeof path, xfmr_dir, cases[i].file);
        else
            s = model_file(dir, cases[i].model, path, sizeof path);
        if (s == D5_OK) s = run_case(&b, &cases[i], path);
        if (s != D5_OK) {
            failures++;
            report_failure(what, s, r);
        }
    }
    if (b.ort_version[0]) printf("ORT: onnxruntime-node %s\n", b.ort_version);
    /* The binding's own cost per call, beside the ratios: a small share of
     * the ORT medians except for the smallest cases. */
    if (b.ort && (s = bench_binding_cost(dir, b.ort, seconds / blocks, r)) != D5_OK) {
        failures++;
        report_failure("ort/binding", s, r);
    }

    static const bench_case overhead_cases[] = {{"lenet", 64, NULL, 0, "lenet_b64"},
                                                {"resnet20", 32, NULL, 0, "resnet20_b32"}};
    for (size_t i = 0; !only && i < sizeof overhead_cases / sizeof overhead_cases[0]; i++) {
        const bench_case *c = &overhead_cases[i];
        s = model_file(dir, c->model, path, sizeof path);
        if (s == D5_OK) s = run_overhead(&b, c->model, path, c->batch);
        if (s != D5_OK) {
            char what[128];
            snprintf(what, sizeof what, "overhead/%s/batch:%lld", c->model, (long long)c->batch);
            failures++;
            report_failure(what, s, r);
        }
    }

    printf("\n");
    bench_print_load("end");
    if (!keep_dir) clean_up(dir);
    s = d5_results_context_number(r, "threads", threads);
    if (s == D5_OK) s = d5_results_context_number(r, "time_per_side_s", seconds);
    if (s == D5_OK) s = d5_results_context(r, "ort", b.ort ? b.ort_version : b.ort_skip);
    if (s == D5_OK) s = d5_results_context(r, "optimize", optimize);
    if (s == D5_OK && json) s = d5_results_write_json(r, json);
    d5_results_free(r);
    if (s != D5_OK) return cli_fail("bench-network", s);
    return failures ? D5_EXIT_CHECK : D5_EXIT_OK;
}
