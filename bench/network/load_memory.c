/* bench/network: load time and memory of the largest built-in model, d5
 * against ONNX Runtime.
 *
 * The model is built and saved by a child process, so that this process's
 * peak RSS (getrusage's maxrss, which only grows) covers nothing but loading.
 * d5's load is d5_onnx_load, the batch, the graph optimisation passes and
 * d5_executor_create (shapes,
 * constant folding, backends, operator instances, the memory plan): what it
 * takes before the first inference can run, as ONNX Runtime's session
 * creation is. Each load is timed, then freed outside the timing. Memory is
 * reported three ways: the executor's plan (parameters read in place plus the
 * activation arena), the process's peak RSS, and the peak's growth over the
 * RSS before loading, against the ONNX file's size.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_network.h"

#include "d5/timer.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOAD_BATCH    1
#define LOAD_WARMUP   1
#define LOAD_MAX_REPS 10
#define LOAD_MAX_KEPT 16

typedef struct load_ctx {
    const char *path;
    d5_optimize_level level;
    d5_memory_plan plan;
    int have_plan;
    double read_ns[LOAD_MAX_KEPT], compile_ns[LOAD_MAX_KEPT];
    size_t calls;
} load_ctx;

/* One load: read, set the batch, compile; timed; then freed. */
static d5_status load_once(void *arg, double *sample)
{
    load_ctx *c = arg;
    d5_network *net = NULL;
    d5_executor *ex = NULL;
    d5_executor_options eo = d5_executor_default_options();
    double t0 = (double)d5_monotonic_ns();
    d5_status s = d5_onnx_load(c->path, &net);
    if (s == D5_OK) s = d5_network_set_batch(net, LOAD_BATCH, 0);
    if (s == D5_OK) s = d5_network_optimize(net, c->level, NULL);
    double t1 = (double)d5_monotonic_ns();
    if (s == D5_OK) s = d5_executor_create(net, &eo, &ex);
    double t2 = (double)d5_monotonic_ns();
    if (s == D5_OK && !c->have_plan) {
        d5_executor_memory(ex, &c->plan);
        c->have_plan = 1;
    }
    if (s == D5_OK && c->calls < LOAD_MAX_KEPT) {
        c->read_ns[c->calls] = t1 - t0;
        c->compile_ns[c->calls] = t2 - t1;
        c->calls++;
    }
    d5_executor_free(ex);
    d5_network_free(net);
    *sample = t2 - t0;
    return s;
}

/* The built-in model with the most parameters. */
static d5_status largest_model(const char **name, int64_t *params)
{
    *name = NULL;
    *params = -1;
    for (int32_t i = 0; i < d5_model_count(); i++) {
        int64_t n;
        d5_status s = d5_model_param_elements(d5_model_name(i), NULL, &n);
        if (s != D5_OK) return s;
        if (n > *params) {
            *params = n;
            *name = d5_model_name(i);
        }
    }
    return *name ? D5_OK : d5_error(D5_ERR_NOTFOUND, "no built-in model to load");
}

/* Builds and saves the model in a child process. */
static d5_status save_in_child(const char *name, const char *path)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return d5_error(D5_ERR_IO, "cannot fork to build %s", name);
    if (pid == 0) {
        d5_status s = bench_save_model(name, path);
        if (s != D5_OK) fprintf(stderr, "building %s: %s\n", name, d5_last_error());
        _exit(s == D5_OK ? 0 : 1);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return d5_error(D5_ERR_IO, "building and saving %s as %s failed (see the message above)",
                        name, path);
    return D5_OK;
}

static double median_of(double *x, size_t n)
{
    d5_stats st;
    return n > 0 && d5_stats_compute(x, n, &st) == D5_OK ? st.median : 0;
}

static void print_row(const char *who, const d5_stats *st, double before, double peak, double file)
{
    char ci[BENCH_CI_STR], b[32], p[32], g[32];
    bench_ci_str(st, ci, sizeof ci);
    d5_format_bytes(before, b, sizeof b);
    d5_format_bytes(peak, p, sizeof p);
    d5_format_bytes(peak - before, g, sizeof g);
    printf("%-22s %-30s %4zu %11s %11s %11s %7.2f\n", who, ci, st->n, b, p, g,
           (peak - before) / file);
}

static d5_status add_load(d5_results *r, const char *key, const d5_measurement *m, double peak,
                          double growth, double file, size_t *idx)
{
    d5_status s = d5_results_add(r, key, m, "ns", idx);
    if (s == D5_OK) s = d5_results_counter(r, *idx, "peak_rss_bytes", peak, "B");
    if (s == D5_OK) s = d5_results_counter(r, *idx, "rss_growth_bytes", growth, "B");
    if (s == D5_OK) s = d5_results_counter(r, *idx, "file_bytes", file, "B");
    return s;
}

d5_status bench_load_memory(const char *dir, const ort_side *ort, double seconds,
                            d5_optimize_level level, d5_results *r)
{
    const char *name;
    int64_t params;
    char path[4096], fname[256], key[256], a[32], b[32], c[32], d[32];
    struct stat st;
    d5_status s = largest_model(&name, &params);
    if (s != D5_OK) return s;
    snprintf(fname, sizeof fname, "%s.onnx", name);
    if ((s = bench_path(path, sizeof path, dir, fname)) != D5_OK) return s;
    cli_progress(1, 3, "building %s", name);
    if ((s = save_in_child(name, path)) != D5_OK) return s;
    if (stat(path, &st) != 0) return d5_error(D5_ERR_IO, "%s was not written", path);
    double file = (double)st.st_size;

    cli_progress(2, 3, "loading %s with d5", name);
    load_ctx lc = {path, level, {0}, 0, {0}, {0}, 0};
    d5_measure_params mp = d5_measure_default_params();
    mp.warmup = LOAD_WARMUP;
    mp.min_reps = 3;
    mp.max_reps = LOAD_MAX_REPS;
    mp.max_time_s = seconds;
    mp.rel_ci = 1e-9;
    double before = bench_rss_now();
    d5_measurement m;
    if ((s = d5_measure_samples(load_once, &lc, &mp, &m)) != D5_OK) return s;
    double peak = bench_rss_peak();

    ort_result o = {0};
    char why[512] = "";
    if (ort) {
        cli_progress(3, 3, "creating ONNX Runtime sessions of %s", name);
        const ort_request rq = {path, LOAD_BATCH, NULL, seconds, LOAD_WARMUP, LOAD_MAX_REPS, 1, 0};
        if (ort_run(ort, &rq, &o) != D5_OK) snprintf(why, sizeof why, "%s", d5_last_error());
    }

    d5_format_bytes(file, a, sizeof a);
    printf("\nload and memory: %s (%.1f M parameters, ONNX file %s), batch %d\n", name,
           (double)params / 1e6, a, LOAD_BATCH);
    printf("%-22s %-30s %4s %11s %11s %11s %7s\n", "", "load median [95% CI]", "n", "RSS before",
           "peak RSS", "growth", "g/file");
    print_row("d5 load + compile", &m.stats, before, peak, file);
    size_t idx;
    snprintf(key, sizeof key, "load/%s/d5", name);
    s = add_load(r, key, &m, peak, peak - before, file, &idx);
    if (s == D5_OK) s = d5_results_counter(r, idx, "param_bytes", (double)lc.plan.param_bytes, "B");
    if (s == D5_OK) s = d5_results_counter(r, idx, "arena_bytes", (double)lc.plan.arena_bytes, "B");
    if (s == D5_OK && o.n > 0) {
        d5_measurement mo;
        memset(&mo, 0, sizeof mo);
        mo.samples = o.samples;
        mo.n = o.n;
        mo.warmup = LOAD_WARMUP;
        mo.stop = D5_STOP_MAX_REPS;
        d5_mwu u;
        s = d5_stats_compute(o.samples, o.n, &mo.stats);
        if (s == D5_OK) s = d5_mann_whitney(m.samples, m.n, o.samples, o.n, &u);
        if (s == D5_OK) {
            print_row("ORT session creation", &mo.stats, o.rss_before, o.max_rss, file);
            printf("d5/ORT load time ratio %.3f (Mann-Whitney U p = %.2g); ORT RSS with one "
                   "session alive %.1f MiB\n",
                   m.stats.median / mo.stats.median, u.p_value, o.rss / 1048576);
            s = d5_results_counter(r, idx, "ratio_to_ort", m.stats.median / mo.stats.median,
                                   "ratio");
        }
        snprintf(key, sizeof key, "load/%s/ort", name);
        if (s == D5_OK) s = add_load(r, key, &mo, o.max_rss, o.max_rss - o.rss_before, file, &idx);
    } else if (ort || why[0]) {
        printf("ORT: skipped (%s)\n", why[0] ? why : "no samples");
    }
    d5_format_duration(median_of(lc.read_ns, lc.calls), a, sizeof a);
    d5_format_duration(median_of(lc.compile_ns, lc.calls), b, sizeof b);
    printf("d5 load: read and optimise %s + compile %s (medians)\n", a, b);
    d5_format_bytes((double)lc.plan.param_bytes, a, sizeof a);
    d5_format_bytes((double)lc.plan.arena_bytes, b, sizeof b);
    d5_format_bytes((double)lc.plan.unshared_bytes, c, sizeof c);
    d5_format_bytes((double)(lc.plan.param_bytes + lc.plan.arena_bytes), d, sizeof d);
    printf("d5 plan: parameters %s + activation arena %s (%s without reuse) = %s\n", a, b, c, d);
    fflush(stdout);
    ort_result_free(&o);
    d5_measurement_free(&m);
    return s;
}
