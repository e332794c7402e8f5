/* d5 run: latency and throughput of an ONNX model, a per-operator breakdown,
 * FrameworkOverhead, memory, and optionally a trace of one iteration. */
#define _POSIX_C_SOURCE 200809L
#include "output_options.h"
#include "op_runner.h"
#include "netload.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

static double mono_ms(void)
{
    return (double)d5_monotonic_ns() * 1e-6;
}

static double peak_rss_bytes(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 : 0;
}

static d5_status run_inference(void *ctx)
{
    return d5_executor_inference(ctx);
}
static d5_status run_training(void *ctx)
{
    return d5_executor_inference_and_backprop(ctx);
}

typedef struct op_row {
    const char *op;
    int nodes;
    double median_ns, flops;
} op_row;

/* Per-operator-type totals of the nodes timed alone, largest first. */
static void print_breakdown(const d5_executor *ex, const d5_overhead *o)
{
    op_row rows[256];
    int n = 0;
    for (int32_t i = 0; i < o->nodes; i++) {
        d5_exec_node node;
        d5_executor_node_at(ex, i, &node);
        int k = 0;
        while (k < n && strcmp(rows[k].op, node.op_type) != 0) k++;
        if (k == n) {
            if (n == 256) continue;
            rows[n++] = (op_row){node.op_type, 0, 0, 0};
        }
        rows[k].nodes++;
        rows[k].median_ns += o->node[i].stats.median;
        rows[k].flops += node.flops;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && rows[j - 1].median_ns < rows[j].median_ns; j--) {
            op_row t = rows[j];
            rows[j] = rows[j - 1];
            rows[j - 1] = t;
        }
    printf("\nper operator (each node timed alone; backends chosen per node):\n");
    printf("  %-24s %5s %14s %9s %10s\n", "operator", "nodes", "median sum", "% of sum", "GFLOP/s");
    for (int k = 0; k < n; k++) {
        char t[32];
        d5_format_duration(rows[k].median_ns, t, sizeof t);
        printf("  %-24s %5d %14s %8.1f%% %10.2f\n", rows[k].op, rows[k].nodes, t,
               100 * rows[k].median_ns / o->sum_median,
               rows[k].median_ns > 0 ? rows[k].flops / rows[k].median_ns : 0);
    }
}

/* ---- Copies between host and device memory ---- */

typedef struct copy_run {
    d5_executor *ex;
    int32_t i;
} copy_run;

static d5_status run_copy(void *ctx)
{
    const copy_run *c = ctx;
    return d5_executor_run_copy(c->ex, c->i);
}

/* Each copy of the schedule timed alone (they run inside every inference and
 * count in FrameworkOverhead); m[i] receives copy i's measurement. */
static d5_status measure_copies(d5_executor *ex, double seconds, d5_measurement *m)
{
    int32_t n = d5_executor_copy_count(ex);
    d5_measure_params mp = d5_measure_default_params();
    mp.max_time_s = seconds / (n > 0 ? n : 1);
    d5_status s = D5_OK;
    printf("\ncopies between memories (each timed alone; part of every run):\n");
    printf("  %-28s %-14s %10s %12s %10s  %s\n", "value", "from -> to", "bytes", "median", "GB/s",
           "when");
    for (int32_t i = 0; i < n && s == D5_OK; i++) {
        d5_exec_copy c;
        d5_executor_copy_at(ex, i, &c);
        copy_run cr = {ex, i};
        s = d5_measure_run(run_copy, &cr, &mp, &m[i]);
        if (s != D5_OK) break;
        char way[64], bytes[32], t[32];
        snprintf(way, sizeof way, "%s -> %s", c.from, c.to);
        d5_format_bytes((double)c.bytes, bytes, sizeof bytes);
        d5_format_duration(m[i].stats.median, t, sizeof t);
        printf("  %-28.28s %-14s %10s %12s %10.2f  %s\n", c.value, way, bytes, t,
               m[i].stats.median > 0 ? (double)c.bytes / m[i].stats.median : 0,
               c.once       ? "first run only"
               : c.node < 0 ? "after the graph"
                            : "every run");
    }
    return s;
}

static void free_copies(d5_measurement *m, const d5_executor *ex)
{
    for (int32_t i = 0; m && i < d5_executor_copy_count(ex); i++) d5_measurement_free(&m[i]);
    free(m);
}

/* FrameworkOverhead as a result when its flag is OK; otherwise the value is
 * shown marked with the flag and its reason, never as a confident result. */
static void print_overhead(const d5_overhead *o)
{
    char g[32], sum[32], v[96];
    d5_format_duration(o->graph.stats.median, g, sizeof g);
    d5_format_duration(o->sum_median, sum, sizeof sum);
    snprintf(v, sizeof v, "%+.2f%% [%+.2f%%, %+.2f%%] over %u rounds", 100 * o->overhead,
             100 * o->overhead_lo, 100 * o->overhead_hi, (unsigned)o->rounds);
    printf("\nFrameworkOverhead  graph %s vs sum of nodes %s (medians), paired: ", g, sum);
    if (o->flag == D5_OVERHEAD_OK)
        printf("%s\n", v);
    else if (o->flag == D5_OVERHEAD_IMPLAUSIBLE)
        printf("implausible (%s; the graph cannot be that much faster than its nodes alone: "
               "the timings are disturbed)\n",
               v);
    else if (o->halfwidth > D5_OVERHEAD_UNSTABLE_HALFWIDTH)
        printf("unstable (%s; the machine is noisy)\n", v);
    else
        printf("unstable (%s; the CI did not narrow to +-%.1f%% before the %s ran out)\n", v,
               100 * o->target, o->stop == D5_STOP_TIME ? "time budget" : "repetition limit");
}

static d5_status save_outputs(const d5_network *net, const d5_executor *ex, const char *dir)
{
    char path[4096];
    if (mkdir(dir, 0777) != 0) {
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return d5_error(D5_ERR_IO, "--save-outputs: cannot create the folder %s", dir);
    }
    for (int32_t i = 0; i < d5_network_output_count(net); i++) {
        d5_tensor t;
        const char *name = d5_network_output_name(net, i);
        d5_status s = d5_executor_fetch(ex, name, &t);
        int n = snprintf(path, sizeof path, "%s/output_%d.pb", dir, (int)i);
        if (s == D5_OK && (n < 0 || (size_t)n >= sizeof path))
            s = d5_error(D5_ERR_INVALID, "--save-outputs: the path %s is too long", dir);
        if (s == D5_OK) s = d5_onnx_tensor_write(path, &t, name);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

/* The backends that ran: "dnnl=5,ref=2" per backend, and "conv1=dnnl,..." per
 * node (a value for --node-backend that repeats the choice). */
static d5_status backends_context(d5_results *r, const d5_executor *ex)
{
    d5_backend_nodes used[16];
    int32_t n = d5_executor_backend_nodes(ex, used, 16);
    char counts[1024] = "";
    size_t at = 0;
    for (int32_t k = 0; k < n && k < 16 && at < sizeof counts; k++)
        at += (size_t)snprintf(counts + at, sizeof counts - at, "%s%s=%d", k ? "," : "",
                               used[k].backend, (int)used[k].nodes);
    d5_status s = d5_results_context(r, "backends_used", counts);
    size_t size = 1;
    for (int32_t i = 0; i < d5_executor_node_count(ex); i++) {
        d5_exec_node node;
        d5_executor_node_at(ex, i, &node);
        size += strlen(node.name) + strlen(node.backend) + 2;
    }
    char *nodes = malloc(size);
    if (!nodes) return s == D5_OK ? d5_error(D5_ERR_NOMEM, "run: the node backends") : s;
    at = 0;
    nodes[0] = '\0';
    for (int32_t i = 0; i < d5_executor_node_count(ex); i++) {
        d5_exec_node node;
        d5_executor_node_at(ex, i, &node);
        if (node.view) continue; /* it does not run */
        at += (size_t)snprintf(nodes + at, size - at, "%s%s=%s", at ? "," : "", node.name,
                               node.backend);
    }
    if (s == D5_OK) s = d5_results_context(r, "node_backends", nodes);
    free(nodes);
    return s;
}

/* "dnnl 7 nodes, ref 2 nodes" for the console. */
static void print_backends(const d5_executor *ex, const char *requested)
{
    d5_backend_nodes used[16];
    int32_t n = d5_executor_backend_nodes(ex, used, 16);
    printf("backends    %s", n ? "" : "none (every node folded at load)");
    for (int32_t k = 0; k < n && k < 16; k++)
        printf("%s%s %d node%s", k ? ", " : "", used[k].backend, (int)used[k].nodes,
               used[k].nodes == 1 ? "" : "s");
    printf(" (requested %s)\n", requested);
}

/* PATH without a ".json" ending, plus `suffix` (malloc'd). */
static char *memory_sibling(const char *path, const char *suffix)
{
    size_t n = strlen(path);
    if (n > 5 && strcmp(path + n - 5, ".json") == 0) n -= 5;
    char *p = malloc(n + strlen(suffix) + 1);
    if (p) snprintf(p, n + strlen(suffix) + 1, "%.*s%s", (int)n, path, suffix);
    return p;
}

/* --memory FILE.json: one run recorded on a timer of its own; the table, then
 * FILE.json, FILE_timeline.csv and FILE_trace.json (the nodes as regions, the
 * memory as counter tracks). */
static d5_status record_memory(d5_executor *ex, int backprop, const char *model, const char *path)
{
    char *csv = memory_sibling(path, "_timeline.csv"), *tr = memory_sibling(path, "_trace.json");
    char name[4200];
    snprintf(name, sizeof name, "%s %s", model, backprop ? "inference and backprop" : "inference");
    d5_memory_profile p;
    memset(&p, 0, sizeof p);
    d5_timer *timer = NULL;
    d5_status s = csv && tr ? D5_OK : d5_error(D5_ERR_NOMEM, "run: the memory report's paths");
    if (s == D5_OK) s = d5_timer_create(NULL, &timer);
    if (s == D5_OK) s = d5_executor_record_memory(ex, backprop, timer, name, &p);
    if (s == D5_OK) printf("\n");
    if (s == D5_OK) s = d5_memory_profile_print(stdout, &p, 10);
    if (s == D5_OK) s = d5_memory_profile_write_json(&p, path);
    if (s == D5_OK) s = d5_memory_profile_write_timeline(&p, csv);
    if (s == D5_OK) s = d5_memory_profile_add_regions(&p, timer);
    if (s == D5_OK) s = d5_memory_profile_write_trace(&p, timer, tr);
    if (s == D5_OK) printf("memory report written to %s, %s and %s\n", path, csv, tr);
    d5_memory_profile_free(&p);
    d5_timer_free(timer);
    free(csv);
    free(tr);
    return s;
}

static d5_status write_json(const char *path, const char *model, int64_t batch, const char *backend,
                            const d5_measurement *m, const d5_executor *ex, const d5_overhead *o,
                            const d5_memory_plan *plan, double load_ms, int backprop,
                            const char *optimized, const d5_measurement *copies)
{
    d5_results *r = NULL;
    size_t idx;
    d5_status s = d5_results_create(&r);
    if (s == D5_OK) s = d5_results_context(r, "model", model);
    if (s == D5_OK) s = d5_results_context(r, "backend_requested", backend);
    if (s == D5_OK) s = d5_results_context(r, "optimize", optimized);
    if (s == D5_OK) s = backends_context(r, ex);
    if (s == D5_OK) s = d5_results_context_number(r, "batch", (double)batch);
    if (s == D5_OK) s = cli_contention_context(r);
    if (s == D5_OK) s = d5_results_context_number(r, "load_ms", load_ms);
    if (s == D5_OK) s = d5_results_context_number(r, "arena_bytes", (double)plan->arena_bytes);
    if (s == D5_OK) s = d5_results_context_number(r, "param_bytes", (double)plan->param_bytes);
    if (s == D5_OK)
        s = d5_results_context_number(r, "blocked_values", (double)plan->blocked_values);
    if (s == D5_OK) s = d5_results_context_number(r, "peak_rss_bytes", peak_rss_bytes());
    if (s == D5_OK && plan->device_bytes)
        s = d5_results_context_number(r, "device_bytes", (double)plan->device_bytes);
    for (int32_t i = 0; s == D5_OK && copies && i < d5_executor_copy_count(ex); i++) {
        d5_exec_copy c;
        char name[512];
        d5_executor_copy_at(ex, i, &c);
        snprintf(name, sizeof name, "copy/%s/%s->%s", c.value, c.from, c.to);
        s = d5_results_add(r, name, &copies[i], "ns", &idx);
        if (s == D5_OK) s = d5_results_counter(r, idx, "bytes", (double)c.bytes, "B");
        if (s == D5_OK) s = d5_results_counter(r, idx, "once", c.once, "bool");
    }
    if (s == D5_OK)
        s = d5_results_add(r, backprop ? "run/inference_and_backprop" : "run/inference", m, "ns",
                           &idx);
    if (s == D5_OK)
        s = d5_results_counter(r, idx, "samples_per_second", 1e9 * (double)batch / m->stats.median,
                               "1/s");
    if (s == D5_OK && o) {
        s = d5_results_add(r, "run/framework_overhead/graph", &o->graph, "ns", &idx);
        if (s == D5_OK) s = d5_results_counter(r, idx, "overhead", o->overhead, "ratio");
        if (s == D5_OK) s = d5_results_counter(r, idx, "overhead_lo", o->overhead_lo, "ratio");
        if (s == D5_OK) s = d5_results_counter(r, idx, "overhead_hi", o->overhead_hi, "ratio");
        if (s == D5_OK) s = d5_results_counter(r, idx, "sum_of_nodes_ns", o->sum_median, "ns");
        if (s == D5_OK)
            s = d5_results_counter(r, idx, "framework_overhead_flag", o->flag, "d5_overhead_flag");
        if (s == D5_OK) s = d5_results_counter(r, idx, "rounds", o->rounds, "rounds");
        if (s == D5_OK)
            s = d5_results_context(r, "framework_overhead_flag", d5_overhead_flag_name(o->flag));
        for (int32_t i = 0; s == D5_OK && i < o->nodes; i++) {
            d5_exec_node node;
            char name[512];
            d5_executor_node_at(ex, i, &node);
            snprintf(name, sizeof name, "node/%s/%s/%s", node.op_type, node.name, node.backend);
            s = d5_results_add(r, name, &o->node[i], "ns", &idx);
            if (s == D5_OK && node.flops > 0)
                s = d5_results_counter(r, idx, "GFLOP/s", node.flops / o->node[i].stats.median,
                                       "GFLOP/s");
        }
    }
    if (s == D5_OK) s = cli_json_write_results(NULL, "run", r, path);
    d5_results_free(r);
    return s;
}

/* ---- The system report: a sampler over the latency measurement ---- */

/* NULL when --system-hz is 0, and when the sampler cannot start without
 * --system asking for its files (the run goes on, saying why). */
static d5_status system_start(double hz, const char *csv, d5_sysmon **out)
{
    d5_status s = d5_sysmon_begin(hz, out);
    if (s == D5_OK || csv) return s;
    fprintf(stderr, "d5 run: no system report: %s\n", d5_last_error());
    return D5_OK;
}

/* A measurement that stopped early at a tight CI may be shorter than a
 * sampling period: more runs, counted, until the sampler has covered five
 * periods (at most 10 s); then the sampler stops. */
static d5_status system_extend(d5_sysmon *m, d5_executor *ex, int backprop, double *runs)
{
    double period_ns = 1e9 / d5_sysmon_hz(m);
    double need_ns = 5 * period_ns < 1e10 ? 5 * period_ns : 1e10;
    d5_status s = D5_OK;
    while (s == D5_OK && (double)(d5_monotonic_ns() - d5_sysmon_origin_mono_ns(m)) < need_ns) {
        s = backprop ? run_training(ex) : run_inference(ex);
        *runs += 1;
    }
    d5_status t = d5_sysmon_stop(m);
    return s != D5_OK ? s : t;
}

/* The stopped sampler's line, and --system FILE with its .json sibling (FILE
 * without ".csv", plus ".json"). */
static d5_status system_report(d5_sysmon *m, const d5_measurement *meas, double extra_runs,
                               int backprop, const char *csv)
{
    if (!m) return D5_OK;
    /* Every run in the sampled time: warm-up, measured, extra. */
    d5_status s = d5_sysmon_set_work(m, (double)meas->warmup + (double)meas->n + extra_runs,
                                     backprop ? "step" : "inference");
    if (s != D5_OK) return s;
    char line[1024];
    d5_sysmon_summary_line(m, line, sizeof line);
    printf("system      %s\n", line);
    if (!csv) return D5_OK;
    size_t n = strlen(csv);
    if (n > 4 && strcmp(csv + n - 4, ".csv") == 0) n -= 4;
    char *js = malloc(n + 6);
    if (!js) return d5_error(D5_ERR_NOMEM, "run: the system report's path");
    snprintf(js, n + 6, "%.*s.json", (int)n, csv);
    s = d5_sysmon_write_csv(m, csv);
    if (s == D5_OK) s = d5_sysmon_write_json(m, js);
    if (s == D5_OK) printf("system      samples written to %s and %s\n", csv, js);
    free(js);
    return s;
}

/* The options of d5 run. */
typedef struct run_args {
    const char *model, *inputs, *save, *backend, *node_backends, *trace, *lib;
    const char *optimize, *precision, *memory, *system_csv;
    const char *backend_option; /* --backend as given (NULL: the default list) */
    cli_outputs outs;           /* --json */
    int batch, threads, backprop, no_overhead;
    double seconds, rel_ci, system_hz;
    d5_optimize_level level;
    char backend_help[160];
    cli_opt opts[18];
    cli_spec spec;
} run_args;

/* The option table and the spec, bound to *a. */
static void bind_run_args(run_args *a)
{
    snprintf(a->backend_help, sizeof a->backend_help,
             "backends in order of preference, or auto (measure each per node; default %s)",
             d5_backend_default_list());
    const cli_opt opts[] = {
        {"batch", CLI_INT, &a->batch, "N", "batch size: the first dimension of every input", 1,
         1 << 20},
        {"inputs", CLI_STRING, &a->inputs, "A.pb,...",
         "TensorProto files, one per graph input in order (default: seeded random data)", 0, 0},
        {"save-outputs", CLI_STRING, &a->save, "DIR", "write the outputs as output_K.pb into DIR",
         0, 0},
        {"backend", CLI_STRING, &a->backend, "LIST", a->backend_help, 0, 0},
        {"node-backend", CLI_STRING, &a->node_backends, "NODE=B,...", "per-node backend overrides",
         0, 0},
        {"lib", CLI_STRING, &a->lib, "LIB.so",
         "custom operator library (d5 compile-op): its operators replace built-in ones", 0, 0},
        {"threads", CLI_INT, &a->threads, "N", CLI_THREADS_HELP, 0, 4096},
        {"backprop", CLI_FLAG, &a->backprop, NULL,
         "time inference and backpropagation from the first output (seeded with ones)", 0, 0},
        {"precision", CLI_STRING, &a->precision, "f32|bf16|f16|tf32",
         "compute precision of Conv, Gemm, MatMul and FusedConv: bf16 and f16 on dnnl (float32 "
         "accumulation), tf32 on the cuda backend's tensor cores (default f32)",
         0, 0},
        {"optimize", CLI_STRING, &a->optimize, "none|basic|all",
         "graph optimisation passes before compiling (default all; none with --backprop)", 0, 0},
        {"time", CLI_DOUBLE, &a->seconds, "S", "time budget of each measurement (default 5)", 0.01,
         3600},
        {"rel-ci", CLI_DOUBLE, &a->rel_ci, "X",
         "stop when the median's 95% CI half-width is below X of it (default 0.02)", 1e-4, 1},
        {"no-overhead", CLI_FLAG, &a->no_overhead, NULL,
         "skip the per-operator breakdown and FrameworkOverhead", 0, 0},
        CLI_OUTPUT_JSON_AS(&a->outs, "write the results as JSON (Google Benchmark schema)"),
        {"trace", CLI_STRING, &a->trace, "FILE",
         "write a Chrome/Perfetto trace of one iteration, node by node", 0, 0},
        {"system-hz", CLI_DOUBLE, &a->system_hz, "HZ",
         "samples per second of the system sampler while the latency is measured (default 10; "
         "0: off)",
         0, 1000},
        {"system", CLI_STRING, &a->system_csv, "FILE",
         "write the system samples as CSV to FILE and the system report to its .json sibling", 0,
         0},
        {"memory", CLI_STRING, &a->memory, "FILE.json",
         "record one run's memory per operator (planned and heap bytes, the peak and where): "
         "a table, FILE.json, FILE_timeline.csv and FILE_trace.json",
         0, 0},
    };
    _Static_assert(sizeof opts == sizeof a->opts, "a->opts holds every option");
    memcpy(a->opts, opts, sizeof opts);
    a->spec = (cli_spec){
        CLI_SPEC(
            "run",
            "MODEL.onnx [--batch N] [--inputs A.pb,...] [--save-outputs DIR] [--backend LIST]\n"
            "       [--threads N] [--backprop] [--precision P] [--optimize LEVEL] [--json FILE] "
            "[--trace FILE]\n"
            "       [--time S] [--memory FILE.json] [--system FILE] [--system-hz HZ]",
            "Loads an ONNX model, optimises the graph for inference (--optimize: identities\n"
            "removed, BatchNormalization folded into the Conv before it, Conv + Add + Relu "
            "fused),\n"
            "compiles it (shapes, constant folding, a backend per node, a memory plan) and\n"
            "measures it: latency median with its 95% confidence interval (warm-up excluded,\n"
            "repetitions until the interval is tight or the time budget is spent) and\n"
            "throughput. Then each node is timed alone: a per-operator breakdown and\n"
            "FrameworkOverhead (whole graph against the sum of its nodes). Peak memory is the\n"
            "planned activation arena plus the parameters; peak RSS is the process's.\n\n"
            "A device backend in the list (--backend cuda,ref) runs its nodes on device\n"
            "memory: values stay on the device between them, and are copied only at graph\n"
            "inputs and outputs and where a node falls back to a host backend (the copies\n"
            "are listed and timed alone; constants go up once, at the first run).\n\n"
            "While the latency is measured (and for more runs, counted, until five sampling\n"
            "periods have passed), a sampler records the machine (--system-hz): CPU, memory,\n"
            "disk and network traffic, GPUs, and the energy per inference where RAPL or NVML\n"
            "measure it, in one line; --system FILE keeps the samples (CSV) and the report\n"
            "(FILE's .json sibling).",
            a->opts),
        .positional = "MODEL", .pos_value = &a->model};
}

/* Parses and checks the options, echoes them, checks the outputs and sets
 * the threads: -1 to go on, or an exit status. */
static int parse_run_args(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof *a);
    a->seconds = 5;
    a->rel_ci = 0.02;
    a->system_hz = 10;
    bind_run_args(a);
    int rc = cli_parse(&a->spec, argc, argv);
    if (rc >= 0) return rc;
    if (a->system_csv && a->system_hz == 0) {
        fprintf(stderr, "d5 run: --system needs --system-hz above 0 (see 'd5 run --help')\n");
        return D5_EXIT_USAGE;
    }
    if ((rc = cli_check_backends("run", "backend", a->backend, 1)) >= 0) return rc;
    if ((rc = netload_optimize_level("run", a->optimize, a->backprop, &a->level)) >= 0) return rc;
    const char *p = a->precision;
    if (p && strcmp(p, "f32") != 0 && strcmp(p, "bf16") != 0 && strcmp(p, "f16") != 0 &&
        strcmp(p, "tf32") != 0) {
        fprintf(stderr, "d5 run: --precision '%s': expected f32, bf16, f16 or tf32\n", p);
        return D5_EXIT_USAGE;
    }
    /* NULL: the default list, whose backends that cannot run here are skipped. */
    a->backend_option = a->backend;
    if (!a->backend) a->backend = d5_backend_default_list();
    cli_echo(stdout, &a->spec);
    if (!cli_outputs_check("run", &a->outs) || !cli_output_ok("run", "--trace", a->trace, 0) ||
        !cli_output_ok("run", "--save-outputs", a->save, 1) ||
        !cli_output_ok("run", "--memory", a->memory, 0) ||
        !cli_output_ok("run", "--system", a->system_csv, 0))
        return D5_EXIT_INPUT;
    return cli_threads_apply("run", a->threads);
}

/* What a run of d5 run holds, freed by run_state_free. */
typedef struct run_state {
    d5_network *net;
    d5_executor *ex;
    d5_op_library *library;
    d5_tensor *in;
    int32_t nin;
    d5_measurement m;
    d5_sysmon *sys;
    d5_measurement *copies;
    d5_overhead o;
    d5_optimize_report opt;
    d5_memory_plan plan;
    double load_ms, optimize_ms, compile_ms, extra_runs;
    int64_t b; /* the batch: the first input's first dimension */
    char opt_text[512];
} run_state;

static void run_state_free(run_state *st)
{
    free_copies(st->copies, st->ex);
    d5_sysmon_free(st->sys);
    d5_overhead_free(&st->o);
    d5_measurement_free(&st->m);
    netload_inputs_free(st->in, st->nin);
    d5_executor_free(st->ex);
    d5_op_library_close(st->library);
    d5_network_free(st->net);
}

/* Loads, optimises and compiles the model and feeds its inputs: -1 to go
 * on, or an exit status after saying what is wrong. */
static int load_model(const run_args *a, run_state *st)
{
    double t0 = mono_ms();
    cli_progress(1, 4, "loading %s", a->model);
    d5_status s = netload_open(a->model, a->batch, 0, &st->net);
    st->load_ms = mono_ms() - t0;
    d5_status bad = s == D5_OK ? d5_executor_check_node_backends(st->net, a->node_backends) : D5_OK;
    if (bad != D5_OK) return cli_bad_backend_option("run", "node-backend", a->node_backends, bad);
    double t_opt = mono_ms();
    if (s == D5_OK) s = d5_network_optimize(st->net, a->level, &st->opt);
    st->optimize_ms = mono_ms() - t_opt;
    if (s == D5_OK && d5_executor_check_node_backends(st->net, a->node_backends) != D5_OK) {
        fprintf(stderr,
                "d5 run: --node-backend %s names a node that --optimize %s removed or fused into "
                "another; give --optimize none to keep every node\n",
                a->node_backends, d5_optimize_name(a->level));
        return D5_EXIT_USAGE;
    }
    if (s == D5_OK && a->lib) s = probe_library(a->lib, 30);
    if (s == D5_OK && a->lib) s = d5_op_library_open(a->lib, &st->library);
    d5_executor_options eo = d5_executor_default_options();
    eo.backend = a->backend_option;
    eo.node_backends = a->node_backends;
    eo.backprop = a->backprop;
    eo.compute_precision = a->precision;
    eo.libraries = st->library ? &st->library : NULL;
    eo.nlibraries = st->library ? 1 : 0;
    /* Control flow is resolved at create, from the integer and bool inputs
     * (a trip count, a condition): they are read first and bound then. */
    int control = s == D5_OK && d5_network_has_control_flow(st->net);
    const char *names[64];
    d5_tensor values[64];
    if (control) s = netload_inputs(st->net, a->inputs, 1, &st->in, &st->nin);
    for (int32_t i = 0; control && s == D5_OK && i < st->nin && eo.nconst < 64; i++)
        if (!d5_dtype_is_float((d5_dtype)st->in[i].desc.dtype)) {
            names[eo.nconst] = d5_network_input_name(st->net, i);
            values[eo.nconst++] = st->in[i];
        }
    eo.const_names = names;
    eo.const_values = values;
    double t1 = mono_ms();
    if (s == D5_OK) s = d5_executor_create(st->net, &eo, &st->ex);
    st->compile_ms = mono_ms() - t1;
    if (s == D5_OK && !control) s = netload_inputs(st->net, a->inputs, 1, &st->in, &st->nin);
    for (int32_t i = 0; s == D5_OK && i < st->nin; i++)
        if (!control || d5_dtype_is_float((d5_dtype)st->in[i].desc.dtype))
            s = d5_executor_feed(st->ex, d5_network_input_name(st->net, i), &st->in[i]);
    if (s != D5_OK) return cli_fail("run", s);
    st->b = 1;
    int32_t v;
    d5_value_info info;
    if (st->nin > 0 &&
        d5_network_find_value(st->net, d5_network_input_name(st->net, 0), &v) == D5_OK) {
        d5_network_value_at(st->net, v, &info);
        if (info.desc.ndim > 0) st->b = info.desc.shape[0];
    }
    d5_executor_memory(st->ex, &st->plan);
    return -1;
}

/* The model's lines: nodes, optimisation, load times, backends, layout and
 * device copies. */
static void print_model(const run_args *a, run_state *st)
{
    d5_executor *ex = st->ex;
    struct stat sb;
    char x[32], y[32], z[32];
    d5_format_bytes(stat(a->model, &sb) == 0 ? (double)sb.st_size : 0, x, sizeof x);
    printf("model       %s: %d nodes scheduled, %d folded at load, %lld parameters, file %s\n",
           a->model, (int)d5_executor_node_count(ex), (int)d5_executor_folded_count(ex),
           (long long)d5_network_param_elements(st->net), x);
    netload_optimize_text(&st->opt, st->opt_text, sizeof st->opt_text);
    printf("optimize    %s\n", st->opt_text);
    printf("load        %.1f ms to read, %.1f ms to optimise, %.1f ms to compile\n", st->load_ms,
           st->optimize_ms, st->compile_ms);
    print_backends(ex, a->backend);
    if (st->plan.blocked_values > 0)
        printf("layout      %d values kept in oneDNN's blocked layout between its operators\n",
               (int)st->plan.blocked_values);
    if (d5_executor_copy_count(ex) == 0) return;
    size_t every = 0, once = 0;
    int32_t nevery = 0;
    for (int32_t i = 0; i < d5_executor_copy_count(ex); i++) {
        d5_exec_copy cp;
        d5_executor_copy_at(ex, i, &cp);
        if (cp.once)
            once += cp.bytes;
        else
            every += cp.bytes, nevery++;
    }
    d5_format_bytes((double)every, x, sizeof x);
    d5_format_bytes((double)once, y, sizeof y);
    d5_format_bytes((double)st->plan.device_bytes, z, sizeof z);
    printf("device      %s of device arena; %d copies (%s) every run between host and "
           "device, constants (%s) at the first run\n",
           z, (int)nevery, x, y);
}

/* The latency and throughput, the system report and the saved outputs. */
static d5_status measure_latency(const run_args *a, run_state *st)
{
    d5_measure_params mp = d5_measure_default_params();
    mp.max_time_s = a->seconds;
    mp.rel_ci = a->rel_ci;
    cli_progress(2, 4, "measuring %s (up to %g s)",
                 a->backprop ? "inference and backprop" : "inference", a->seconds);
    d5_status s = system_start(a->system_hz, a->system_csv, &st->sys);
    if (s == D5_OK)
        s = d5_measure_run(a->backprop ? run_training : run_inference, st->ex, &mp, &st->m);
    if (s == D5_OK && st->sys) s = system_extend(st->sys, st->ex, a->backprop, &st->extra_runs);
    if (s != D5_OK) return s;
    const d5_measurement *m = &st->m;
    char x[32], y[32], z[32];
    d5_format_duration(m->stats.median, x, sizeof x);
    d5_format_duration(m->stats.ci_low, y, sizeof y);
    d5_format_duration(m->stats.ci_high, z, sizeof z);
    cli_contention_note(m);
    printf("latency     %s [%s, %s] per batch of %lld (n=%zu, stop: %s)%s%s%s\n", x, y, z,
           (long long)st->b, m->n, d5_stop_reason_name(m->stop),
           m->stability.unstable ? "  UNSTABLE: " : "",
           m->stability.unstable ? m->stability.reason : "",
           m->contention.contended ? "  CONTENDED" : "");
    double b = (double)st->b;
    printf("throughput  %.1f samples/s [%.1f, %.1f]\n", 1e9 * b / m->stats.median,
           1e9 * b / m->stats.ci_high, 1e9 * b / m->stats.ci_low);
    s = system_report(st->sys, m, st->extra_runs, a->backprop, a->system_csv);
    if (s == D5_OK && a->save) s = save_outputs(st->net, st->ex, a->save);
    return s;
}

/* The per-operator breakdown and FrameworkOverhead, the copies and the
 * memory line. */
static d5_status measure_parts(run_args *a, run_state *st)
{
    d5_executor *ex = st->ex;
    d5_status s = D5_OK;
    if (!a->no_overhead && d5_executor_node_count(ex) == 0) {
        printf("\nFrameworkOverhead  undefined: no node runs at inference (all folded at load)\n");
        a->no_overhead = 1;
    }
    if (!a->no_overhead) {
        cli_progress(3, 4, "timing rounds of the graph, then each of its %d nodes alone",
                     (int)d5_executor_node_count(ex));
        d5_measure_params mp = d5_measure_default_params();
        mp.max_time_s = a->seconds; /* graph and nodes share it, interleaved */
        mp.rel_ci = a->rel_ci;
        if ((s = d5_overhead_measure(ex, &mp, &st->o)) != D5_OK) return s;
        print_breakdown(ex, &st->o);
        print_overhead(&st->o);
    }
    int32_t ncopies = d5_executor_copy_count(ex);
    if (ncopies > 0) {
        st->copies = calloc((size_t)ncopies, sizeof *st->copies);
        if (!st->copies) return d5_error(D5_ERR_NOMEM, "run: the copies' measurements");
        if ((s = measure_copies(ex, a->seconds, st->copies)) != D5_OK) return s;
    }
    char x[32], y[32], z[32], w[32];
    d5_format_bytes((double)st->plan.arena_bytes, x, sizeof x);
    d5_format_bytes((double)st->plan.unshared_bytes, y, sizeof y);
    d5_format_bytes((double)st->plan.param_bytes, z, sizeof z);
    d5_format_bytes(peak_rss_bytes(), w, sizeof w);
    printf("memory      activations %s planned (%s without reuse), parameters %s, peak RSS %s\n", x,
           y, z, w);
    return D5_OK;
}

/* One iteration traced into `path`. */
static d5_status trace_once(const run_args *a, run_state *st)
{
    cli_progress(4, 4, "tracing one iteration into %s", a->trace);
    d5_timer *timer = NULL;
    d5_timer_params tp = d5_timer_default_params();
    /* Nodes on a GPU: their regions on CUDA events too, beside the host clock. */
    if (d5_executor_copy_count(st->ex) > 0 && d5_backend_available("cuda", NULL, 0))
        tp.clocks |= D5_TIMER_CUDA;
    d5_status s = d5_timer_create(&tp, &timer);
    if (s == D5_OK) s = d5_executor_attach_timer(st->ex, timer);
    if (s == D5_OK) s = a->backprop ? run_training(st->ex) : run_inference(st->ex);
    if (s == D5_OK) s = d5_report_trace(timer, a->trace);
    d5_timer_free(timer);
    return s;
}

int cmd_run(int argc, char **argv)
{
    run_args *a = malloc(sizeof *a);
    run_state st;
    memset(&st, 0, sizeof st);
    int rc = a ? parse_run_args(argc, argv, a) : cli_fail("run", d5_error(D5_ERR_NOMEM, "run"));
    if (rc < 0) rc = load_model(a, &st);
    if (rc < 0) {
        print_model(a, &st);
        d5_status s = measure_latency(a, &st);
        if (s == D5_OK) s = measure_parts(a, &st);
        if (s == D5_OK && a->memory) s = record_memory(st.ex, a->backprop, a->model, a->memory);
        if (s == D5_OK && a->trace) s = trace_once(a, &st);
        if (s == D5_OK) cli_contention_end("run", NULL);
        if (s == D5_OK && a->outs.json)
            s = write_json(a->outs.json, a->model, st.b, a->backend, &st.m, st.ex,
                           a->no_overhead ? NULL : &st.o, &st.plan,
                           st.load_ms + st.optimize_ms + st.compile_ms, a->backprop, st.opt_text,
                           st.copies);
        rc = s == D5_OK ? D5_EXIT_OK : cli_fail("run", s);
    }
    run_state_free(&st);
    free(a);
    return rc;
}
