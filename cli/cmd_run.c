/* d5 run: latency and throughput of an ONNX model, a per-operator breakdown,
 * FrameworkOverhead, memory, and optionally a trace of one iteration. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
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
    *out = NULL;
    if (hz <= 0) return D5_OK;
    d5_sysmon_params p = d5_sysmon_default_params();
    p.hz = hz;
    d5_sysmon *m = NULL;
    d5_status s = d5_sysmon_create(&p, &m);
    if (s == D5_OK) s = d5_sysmon_start(m);
    if (s == D5_OK) {
        *out = m;
        return D5_OK;
    }
    d5_sysmon_free(m);
    if (csv) return s;
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

int cmd_run(int argc, char **argv)
{
    const char *model = NULL, *inputs = NULL, *save = NULL, *backend = NULL;
    const char *node_backends = NULL, *json = NULL, *trace = NULL, *lib = NULL, *optimize = NULL;
    const char *precision = NULL;
    const char *memory = NULL;
    int batch = 0, threads = 0, backprop = 0, no_overhead = 0;
    double seconds = 5, rel_ci = 0.02;
    double system_hz = 10;
    const char *system_csv = NULL;
    char backend_help[160];
    snprintf(backend_help, sizeof backend_help,
             "backends in order of preference, or auto (measure each per node; default %s)",
             d5_backend_default_list());
    const cli_opt opts[] = {
        {"batch", CLI_INT, &batch, "N", "batch size: the first dimension of every input", 1,
         1 << 20},
        {"inputs", CLI_STRING, &inputs, "A.pb,...",
         "TensorProto files, one per graph input in order (default: seeded random data)", 0, 0},
        {"save-outputs", CLI_STRING, &save, "DIR", "write the outputs as output_K.pb into DIR", 0,
         0},
        {"backend", CLI_STRING, &backend, "LIST", backend_help, 0, 0},
        {"node-backend", CLI_STRING, &node_backends, "NODE=B,...", "per-node backend overrides", 0,
         0},
        {"lib", CLI_STRING, &lib, "LIB.so",
         "custom operator library (d5 compile-op): its operators replace built-in ones", 0, 0},
        {"threads", CLI_INT, &threads, "N", CLI_THREADS_HELP, 0, 4096},
        {"backprop", CLI_FLAG, &backprop, NULL,
         "time inference and backpropagation from the first output (seeded with ones)", 0, 0},
        {"precision", CLI_STRING, &precision, "f32|bf16|f16|tf32",
         "compute precision of Conv, Gemm, MatMul and FusedConv: bf16 and f16 on dnnl (float32 "
         "accumulation), tf32 on the cuda backend's tensor cores (default f32)",
         0, 0},
        {"optimize", CLI_STRING, &optimize, "none|basic|all",
         "graph optimisation passes before compiling (default all; none with --backprop)", 0, 0},
        {"time", CLI_DOUBLE, &seconds, "S", "time budget of each measurement (default 5)", 0.01,
         3600},
        {"rel-ci", CLI_DOUBLE, &rel_ci, "X",
         "stop when the median's 95% CI half-width is below X of it (default 0.02)", 1e-4, 1},
        {"no-overhead", CLI_FLAG, &no_overhead, NULL,
         "skip the per-operator breakdown and FrameworkOverhead", 0, 0},
        {"json", CLI_STRING, &json, "FILE", "write the results as JSON (Google Benchmark schema)",
         0, 0},
        {"trace", CLI_STRING, &trace, "FILE",
         "write a Chrome/Perfetto trace of one iteration, node by node", 0, 0},
        {"system-hz", CLI_DOUBLE, &system_hz, "HZ",
         "samples per second of the system sampler while the latency is measured (default 10; "
         "0: off)",
         0, 1000},
        {"system", CLI_STRING, &system_csv, "FILE",
         "write the system samples as CSV to FILE and the system report to its .json sibling", 0,
         0},
        {"memory", CLI_STRING, &memory, "FILE.json",
         "record one run's memory per operator (planned and heap bytes, the peak and where): "
         "a table, FILE.json, FILE_timeline.csv and FILE_trace.json",
         0, 0},
    };
    const cli_spec spec = {
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
            opts),
        .positional = "MODEL", .pos_value = &model};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (system_csv && system_hz == 0) {
        fprintf(stderr, "d5 run: --system needs --system-hz above 0 (see 'd5 run --help')\n");
        return D5_EXIT_USAGE;
    }
    if ((rc = cli_check_backends("run", "backend", backend, 1)) >= 0) return rc;
    d5_optimize_level level;
    if ((rc = netload_optimize_level("run", optimize, backprop, &level)) >= 0) return rc;
    if (precision && strcmp(precision, "f32") != 0 && strcmp(precision, "bf16") != 0 &&
        strcmp(precision, "f16") != 0 && strcmp(precision, "tf32") != 0) {
        fprintf(stderr, "d5 run: --precision '%s': expected f32, bf16, f16 or tf32\n", precision);
        return D5_EXIT_USAGE;
    }
    /* NULL: the default list, whose backends that cannot run here are skipped. */
    const char *backend_option = backend;
    if (!backend) backend = d5_backend_default_list();
    cli_echo(stdout, &spec);
    if (!cli_output_ok("run", "--json", json, 0) || !cli_output_ok("run", "--trace", trace, 0) ||
        !cli_output_ok("run", "--save-outputs", save, 1) ||
        !cli_output_ok("run", "--memory", memory, 0))
        return D5_EXIT_INPUT;
    if (!cli_output_ok("run", "--system", system_csv, 0)) return D5_EXIT_INPUT;
    if ((rc = cli_threads_apply("run", threads)) >= 0) return rc;
    d5_status s = D5_OK;

    d5_network *net = NULL;
    d5_executor *ex = NULL;
    d5_op_library *library = NULL;
    d5_tensor *in = NULL;
    int32_t nin = 0;
    d5_measurement m = {0};
    d5_sysmon *sys = NULL;
    d5_measurement *copies = NULL;
    d5_overhead o;
    memset(&o, 0, sizeof o);
    struct stat st;
    double t0 = mono_ms();
    cli_progress(1, 4, "loading %s", model);
    s = netload_open(model, batch, 0, &net);
    double load_ms = mono_ms() - t0;
    d5_status bad = s == D5_OK ? d5_executor_check_node_backends(net, node_backends) : D5_OK;
    if (bad != D5_OK) {
        d5_network_free(net);
        return cli_bad_backend_option("run", "node-backend", node_backends, bad);
    }
    d5_optimize_report opt;
    memset(&opt, 0, sizeof opt);
    double t_opt = mono_ms();
    if (s == D5_OK) s = d5_network_optimize(net, level, &opt);
    double optimize_ms = mono_ms() - t_opt;
    if (s == D5_OK && d5_executor_check_node_backends(net, node_backends) != D5_OK) {
        fprintf(stderr,
                "d5 run: --node-backend %s names a node that --optimize %s removed or fused into "
                "another; give --optimize none to keep every node\n",
                node_backends, d5_optimize_name(level));
        d5_network_free(net);
        return D5_EXIT_USAGE;
    }
    if (s == D5_OK && lib) s = probe_library(lib, 30);
    if (s == D5_OK && lib) s = d5_op_library_open(lib, &library);
    d5_executor_options eo = d5_executor_default_options();
    eo.backend = backend_option;
    eo.node_backends = node_backends;
    eo.backprop = backprop;
    eo.compute_precision = precision;
    eo.libraries = library ? &library : NULL;
    eo.nlibraries = library ? 1 : 0;
    double t1 = mono_ms();
    if (s == D5_OK) s = d5_executor_create(net, &eo, &ex);
    double compile_ms = mono_ms() - t1;
    if (s == D5_OK) s = netload_inputs(net, inputs, 1, &in, &nin);
    for (int32_t i = 0; s == D5_OK && i < nin; i++)
        s = d5_executor_feed(ex, d5_network_input_name(net, i), &in[i]);
    if (s != D5_OK) goto fail;

    int64_t b = 1;
    {
        int32_t v;
        d5_value_info info;
        if (nin > 0 && d5_network_find_value(net, d5_network_input_name(net, 0), &v) == D5_OK) {
            d5_network_value_at(net, v, &info);
            if (info.desc.ndim > 0) b = info.desc.shape[0];
        }
    }
    d5_memory_plan plan;
    d5_executor_memory(ex, &plan);
    char a[32], c[32], d[32], e[32];
    d5_format_bytes(stat(model, &st) == 0 ? (double)st.st_size : 0, a, sizeof a);
    printf("model       %s: %d nodes scheduled, %d folded at load, %lld parameters, file %s\n",
           model, (int)d5_executor_node_count(ex), (int)d5_executor_folded_count(ex),
           (long long)d5_network_param_elements(net), a);
    char opt_text[512];
    netload_optimize_text(&opt, opt_text, sizeof opt_text);
    printf("optimize    %s\n", opt_text);
    printf("load        %.1f ms to read, %.1f ms to optimise, %.1f ms to compile\n", load_ms,
           optimize_ms, compile_ms);
    print_backends(ex, backend);
    if (plan.blocked_values > 0)
        printf("layout      %d values kept in oneDNN's blocked layout between its operators\n",
               (int)plan.blocked_values);
    if (d5_executor_copy_count(ex) > 0) {
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
        d5_format_bytes((double)every, a, sizeof a);
        d5_format_bytes((double)once, c, sizeof c);
        d5_format_bytes((double)plan.device_bytes, d, sizeof d);
        printf("device      %s of device arena; %d copies (%s) every run between host and "
               "device, constants (%s) at the first run\n",
               d, (int)nevery, a, c);
    }

    d5_measure_params mp = d5_measure_default_params();
    mp.max_time_s = seconds;
    mp.rel_ci = rel_ci;
    cli_progress(2, 4, "measuring %s (up to %g s)",
                 backprop ? "inference and backprop" : "inference", seconds);
    if ((s = system_start(system_hz, system_csv, &sys)) != D5_OK) goto fail;
    s = d5_measure_run(backprop ? run_training : run_inference, ex, &mp, &m);
    double extra_runs = 0;
    if (s == D5_OK && sys) s = system_extend(sys, ex, backprop, &extra_runs);
    if (s != D5_OK) goto fail;
    d5_format_duration(m.stats.median, a, sizeof a);
    d5_format_duration(m.stats.ci_low, c, sizeof c);
    d5_format_duration(m.stats.ci_high, d, sizeof d);
    cli_contention_note(&m);
    printf("latency     %s [%s, %s] per batch of %lld (n=%zu, stop: %s)%s%s%s\n", a, c, d,
           (long long)b, m.n, d5_stop_reason_name(m.stop),
           m.stability.unstable ? "  UNSTABLE: " : "",
           m.stability.unstable ? m.stability.reason : "",
           m.contention.contended ? "  CONTENDED" : "");
    printf("throughput  %.1f samples/s [%.1f, %.1f]\n", 1e9 * (double)b / m.stats.median,
           1e9 * (double)b / m.stats.ci_high, 1e9 * (double)b / m.stats.ci_low);
    if ((s = system_report(sys, &m, extra_runs, backprop, system_csv)) != D5_OK) goto fail;
    if (save && (s = save_outputs(net, ex, save)) != D5_OK) goto fail;

    if (!no_overhead && d5_executor_node_count(ex) == 0) {
        printf("\nFrameworkOverhead  undefined: no node runs at inference (all folded at load)\n");
        no_overhead = 1;
    }
    if (!no_overhead) {
        cli_progress(3, 4, "timing rounds of the graph, then each of its %d nodes alone",
                     (int)d5_executor_node_count(ex));
        mp.max_time_s = seconds; /* graph and nodes share it, interleaved */
        if ((s = d5_overhead_measure(ex, &mp, &o)) != D5_OK) goto fail;
        print_breakdown(ex, &o);
        print_overhead(&o);
    }
    int32_t ncopies = d5_executor_copy_count(ex);
    if (ncopies > 0) {
        copies = calloc((size_t)ncopies, sizeof *copies);
        if (!copies) {
            s = d5_error(D5_ERR_NOMEM, "run: the copies' measurements");
            goto fail;
        }
        if ((s = measure_copies(ex, seconds, copies)) != D5_OK) goto fail;
    }
    d5_format_bytes((double)plan.arena_bytes, a, sizeof a);
    d5_format_bytes((double)plan.unshared_bytes, c, sizeof c);
    d5_format_bytes((double)plan.param_bytes, d, sizeof d);
    d5_format_bytes(peak_rss_bytes(), e, sizeof e);
    printf("memory      activations %s planned (%s without reuse), parameters %s, peak RSS %s\n", a,
           c, d, e);

    if (memory && (s = record_memory(ex, backprop, model, memory)) != D5_OK) goto fail;
    if (trace) {
        cli_progress(4, 4, "tracing one iteration into %s", trace);
        d5_timer *timer = NULL;
        d5_timer_params tp = d5_timer_default_params();
        /* Nodes on a GPU: their regions on CUDA events too, beside the host clock. */
        if (d5_executor_copy_count(ex) > 0 && d5_backend_available("cuda", NULL, 0))
            tp.clocks |= D5_TIMER_CUDA;
        s = d5_timer_create(&tp, &timer);
        if (s == D5_OK) s = d5_executor_attach_timer(ex, timer);
        if (s == D5_OK) s = backprop ? run_training(ex) : run_inference(ex);
        if (s == D5_OK) s = d5_report_trace(timer, trace);
        d5_timer_free(timer);
        if (s != D5_OK) goto fail;
    }
    cli_contention_end("run", NULL);
    if (json &&
        (s = write_json(json, model, b, backend, &m, ex, no_overhead ? NULL : &o, &plan,
                        load_ms + optimize_ms + compile_ms, backprop, opt_text, copies)) != D5_OK)
        goto fail;
    free_copies(copies, ex);
    d5_sysmon_free(sys);
    d5_overhead_free(&o);
    d5_measurement_free(&m);
    netload_inputs_free(in, nin);
    d5_executor_free(ex);
    d5_op_library_close(library);
    d5_network_free(net);
    return D5_EXIT_OK;
fail:;
    int code = cli_fail("run", s);
    free_copies(copies, ex);
    d5_sysmon_free(sys);
    d5_overhead_free(&o);
    d5_measurement_free(&m);
    netload_inputs_free(in, nin);
    d5_executor_free(ex);
    d5_op_library_close(library);
    d5_network_free(net);
    return code;
}
