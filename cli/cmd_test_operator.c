/* d5 test-operator: one operator across problem sizes and backends, timed with
 * d5's statistics, optionally validated against the ref backend. Custom
 * operators run in a child process so that a crash or a hang is a row of the
 * table, not the end of the sweep. */
#define _GNU_SOURCE
#include "cli.h"
#include "sizes.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct target {
    char label[160]; /* "blas" or "custom:libmedian.so:MedianPool" */
    const d5_op_desc *desc;
    d5_op_library *lib; /* custom operators only */
} target;

typedef struct topts {
    const char *op, *sizes, *backends, *json, *csv, *heatmap;
    double max_time, validate_max_gflop, timeout;
    int validate, gradient, list, no_peak, limit;
} topts;

/* What one (size, backend) run gave. */
typedef struct outcome {
    int ok;           /* measured */
    char status[256]; /* "ok", "FAIL ...", "crashed: signal 11", "timed out", error */
    d5_measurement m;
    double flops, bytes;
    int validated, valid; /* a comparison with ref was made, and it passed */
    double err_linf, err_rel;
    int grad_checked, grad_ok;
} outcome;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- One run, in this process ---- */

typedef struct bench_ctx {
    d5_op *op;
    d5_tensor *in, *out;
} bench_ctx;

static d5_status forward_once(void *arg)
{
    bench_ctx *c = arg;
    return d5_op_forward(c->op, c->in, c->out);
}

static void free_tensors(d5_tensor *t, int32_t n)
{
    for (int32_t i = 0; t && i < n; i++) d5_tensor_free(&t[i]);
    free(t);
}

static void run_here(const topts *o, const op_case *c, const target *t, outcome *r)
{
    memset(r, 0, sizeof *r);
    d5_attrs attrs = {c->attrs, c->nattrs};
    d5_op *op = NULL;
    d5_status s = d5_op_create_desc(t->desc, c->in, c->nin, &attrs, 0, &op);
    int32_t nout = s == D5_OK ? d5_op_noutputs(op) : 0;
    d5_tensor *in = calloc((size_t)c->nin + 1, sizeof *in),
              *out = calloc((size_t)nout + 1, sizeof *out);
    d5_rng rng;
    d5_rng_seed(&rng, 1);
    for (int32_t i = 0; s == D5_OK && i < c->nin; i++) {
        s = d5_tensor_alloc(&c->in[i], &in[i]);
        if (s == D5_OK) d5_tensor_fill_uniform(&in[i], &rng, -1, 1);
    }
    for (int32_t i = 0; s == D5_OK && i < nout; i++)
        s = d5_tensor_alloc(d5_op_output_desc(op, i), &out[i]);
    if (s == D5_OK) d5_op_cost(op, &r->flops, &r->bytes);
    /* One trial run decides the repetitions of very long operators: at least
     * one sample always, warm-up only when it fits the budget. */
    bench_ctx ctx = {op, in, out};
    double t0 = now_s();
    if (s == D5_OK) s = forward_once(&ctx);
    double trial = now_s() - t0;
    d5_measure_params mp = d5_measure_default_params();
    mp.max_time_s = o->max_time;
    if (trial > o->max_time / 20) {
        mp.warmup = 0;
        mp.min_reps = trial > o->max_time / 2 ? 1 : 5;
    }
    if (s == D5_OK) s = d5_measure_run(forward_once, &ctx, &mp, &r->m);
    if (s == D5_OK) {
        r->ok = 1;
        snprintf(r->status, sizeof r->status, "ok");
    }
    /* Validation against ref, within the size limit the ref can handle. */
    const d5_op_desc *ref = NULL;
    if (s == D5_OK && (o->validate || o->gradient) && strcmp(t->desc->backend, "ref") != 0 &&
        d5_op_find(t->desc->name, "ref", &ref) == D5_OK) {
        if (r->flops > o->validate_max_gflop * 1e9) {
            snprintf(r->status, sizeof r->status,
                     "ok (not validated: %.1f GFLOP exceeds "
                     "--validate-max-gflop %g)",
                     r->flops * 1e-9, o->validate_max_gflop);
        } else {
            d5_check_params cp = d5_check_default_params();
            cp.heatmap_csv = o->heatmap;
            d5_forward_check fc;
            if (o->validate && (s = d5_validate_forward(t->desc, ref, c->in, c->nin, NULL, &attrs,
                                                        0, &cp, &fc)) == D5_OK) {
                r->validated = 1;
                r->valid = fc.passed;
                r->err_linf = fc.out[0].linf;
                r->err_rel = fc.out[0].max_rel;
                if (!fc.passed)
                    snprintf(r->status, sizeof r->status,
                             "FAIL: output 0 element %lld is %.7g, ref %.7g (linf %.3g > %.3g)",
                             (long long)fc.out[0].worst, fc.out[0].got, fc.out[0].want,
                             fc.out[0].linf, fc.tol[0]);
            }
            if (s == D5_OK && o->gradient && t->desc->backward) {
                s = d5_validate_backward(t->desc, ref, c->in, c->nin, NULL, &attrs, 0, &cp, &fc);
                if (s == D5_OK) {
                    r->grad_checked = 1;
                    r->grad_ok = fc.passed;
                    for (int32_t i = 0; !fc.passed && i < fc.noutputs; i++)
                        if (fc.out[i].linf > fc.tol[i])
                            snprintf(r->status, sizeof r->status,
                                     "FAIL: gradient of input %d element %lld is %.7g, ref %.7g", i,
                                     (long long)fc.out[i].worst, fc.out[i].got, fc.out[i].want);
                }
            }
        }
    }
    if (s != D5_OK) {
        snprintf(r->status, sizeof r->status, "error: %s", d5_last_error());
        if (r->ok) d5_measurement_free(&r->m);
        r->ok = 0;
    }
    free_tensors(in, c->nin);
    free_tensors(out, nout);
    d5_op_free(op);
}

/* ---- One run in a child process (custom operators) ---- */

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) return 0;
        c += w;
        n -= (size_t)w;
    }
    return 1;
}

static int read_all(int fd, void *p, size_t n, double deadline)
{
    char *c = p;
    while (n) {
        int left = (int)((deadline - now_s()) * 1000);
        if (left <= 0) return -1;
        struct pollfd pf = {fd, POLLIN, 0};
        int pr = poll(&pf, 1, left);
        if (pr == 0) return -1;
        if (pr < 0 && errno == EINTR) continue;
        ssize_t got = read(fd, c, n);
        if (got <= 0) return 0;
        c += got;
        n -= (size_t)got;
    }
    return 1;
}

static void run_isolated(const topts *o, const op_case *c, const target *t, outcome *r)
{
    memset(r, 0, sizeof *r);
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(r->status, sizeof r->status, "error: pipe: %s", strerror(errno));
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->status, sizeof r->status, "error: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        outcome mine;
        run_here(o, c, t, &mine);
        int ok = write_all(fds[1], &mine, sizeof mine);
        if (ok && mine.ok) ok = write_all(fds[1], mine.m.samples, mine.m.n * sizeof(double));
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    double deadline = now_s() + o->timeout;
    int got = read_all(fds[0], r, sizeof *r, deadline);
    double *samples = NULL;
    if (got == 1 && r->ok) {
        samples = d5_alloc(r->m.n * sizeof *samples, "samples");
        got = samples ? read_all(fds[0], samples, r->m.n * sizeof *samples, deadline) : 0;
        r->m.samples = samples;
    }
    close(fds[0]);
    if (got == -1) kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != 1) {
        if (samples) d5_free(samples);
        memset(r, 0, sizeof *r);
        if (got == -1)
            snprintf(r->status, sizeof r->status, "timed out after %.0f s", o->timeout);
        else if (WIFSIGNALED(status))
            snprintf(r->status, sizeof r->status, "crashed: signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        else
            snprintf(r->status, sizeof r->status, "crashed: exit status %d", WEXITSTATUS(status));
    }
}

/* ---- Targets ---- */

static int add_builtin(target *ts, int *n, const char *op, const char *backend, int quiet_missing)
{
    const d5_op_desc *d;
    d5_status s = d5_op_find(op, backend, &d);
    if (s != D5_OK) {
        if (quiet_missing) return 1;
        fprintf(stderr, "d5 test-operator: %s\n", d5_last_error());
        return 0;
    }
    ts[*n] = (target){{0}, d, NULL};
    snprintf(ts[*n].label, sizeof ts[*n].label, "%s", backend);
    (*n)++;
    return 1;
}

/* "ref,blas", "all", "custom:LIB:NAME". Returns an exit code or -1. */
static int parse_targets(const char *op, const char *spec, target *ts, int *n, int max)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && *n < max;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "all") == 0) {
            static const char *const all[] = {"ref", "blas", "dnnl", "cuda"};
            for (size_t i = 0; i < 4 && *n < max; i++) add_builtin(ts, n, op, all[i], 1);
        } else if (strncmp(tok, "custom:", 7) == 0) {
            char *lib = tok + 7, *name = strrchr(lib, ':');
            if (!name || name == lib || !name[1]) {
                fprintf(stderr,
                        "d5 test-operator: --backend %s: expected custom:LIBRARY:OPERATOR\n", tok);
                return D5_EXIT_USAGE;
            }
            *name++ = '\0';
            d5_op_library *l;
            d5_status s = d5_op_library_open(lib, &l);
            const d5_op_desc *d = NULL;
            if (s == D5_OK) s = d5_op_library_find(l, name, &d);
            if (s != D5_OK) {
                fprintf(stderr, "d5 test-operator: %s\n", d5_last_error());
                if (s == D5_OK) d5_op_library_close(l);
                return D5_EXIT_INPUT;
            }
            ts[*n] = (target){{0}, d, l};
            snprintf(ts[*n].label, sizeof ts[*n].label, "custom:%s", name);
            (*n)++;
        } else if (!add_builtin(ts, n, op, tok, 0)) {
            return D5_EXIT_INPUT;
        }
    }
    if (*n == 0) {
        fprintf(stderr, "d5 test-operator: no backend of '%s' has %s here\n", spec, op);
        return D5_EXIT_INPUT;
    }
    return -1;
}

static int list_operators(void)
{
    printf("%-26s %-8s %-9s %s\n", "operator", "backend", "backward", "available");
    for (size_t i = 0; i < d5_op_count(); i++) {
        const d5_op_desc *d = d5_op_at(i);
        char why[256];
        int ok = d5_backend_available(d->backend, why, sizeof why);
        printf("%-26s %-8s %-9s %s\n", d->name, d->backend, d->backward ? "yes" : "no",
               ok ? "yes" : why);
    }
    return D5_EXIT_OK;
}

static void print_row(const op_case *c, const target *t, const outcome *r, double peak)
{
    char med[32] = "-", ci[80] = "-", lo[32], hi[32];
    double gflops = 0, pct = 0;
    if (r->ok) {
        d5_format_duration(r->m.stats.median, med, sizeof med);
        d5_format_duration(r->m.stats.ci_low, lo, sizeof lo);
        d5_format_duration(r->m.stats.ci_high, hi, sizeof hi);
        snprintf(ci, sizeof ci, "[%s, %s]", lo, hi);
        gflops = r->flops / r->m.stats.median;
        pct = peak > 0 ? 100 * gflops / peak : 0;
    }
    char err[32] = "-";
    if (r->validated) snprintf(err, sizeof err, "%.2g", r->err_linf);
    printf("%-40s %-14s %10s %-24s %5zu %9.2f %6.1f%% %8s  %s\n", c->label, t->label, med, ci,
           r->ok ? r->m.n : 0, gflops, pct, err, r->status);
    fflush(stdout);
}

int cmd_test_operator(int argc, char **argv)
{
    topts o = {.sizes = "smoke",
               .backends = "all",
               .max_time = 2.0,
               .validate_max_gflop = 20,
               .timeout = 0};
    const cli_opt opts[] = {
        {"sizes", CLI_STRING, &o.sizes, "SPEC",
         "smoke (default), deepbench-train, deepbench-infer, FILE.csv, or \"K=V,...[;K=V,...]\"", 0,
         0},
        {"backend", CLI_STRING, &o.backends, "LIST",
         "ref,blas,dnnl,cuda,custom:LIB:NAME or all (default: every available)", 0, 0},
        {"validate", CLI_FLAG, &o.validate, NULL, "compare every output with the ref backend", 0,
         0},
        {"gradient", CLI_FLAG, &o.gradient, NULL,
         "compare the backward pass with the ref backend's", 0, 0},
        {"validate-max-gflop", CLI_DOUBLE, &o.validate_max_gflop, "G",
         "skip validation of sizes above G GFLOP (default 20)", 0, 1e6},
        {"heatmap", CLI_STRING, &o.heatmap, "FILE",
         "write |output - ref| of the last validated run as CSV", 0, 0},
        {"max-time", CLI_DOUBLE, &o.max_time, "S",
         "time budget per size and backend in seconds (default 2)", 0.001, 3600},
        {"timeout", CLI_DOUBLE, &o.timeout, "S",
         "kill a custom operator's run after S seconds (default 10 x max-time + 30)", 1, 86400},
        {"limit", CLI_INT, &o.limit, "N", "only the first N sizes", 0, 1000000},
        {"json", CLI_STRING, &o.json, "FILE", "write results as Google Benchmark JSON", 0, 0},
        {"csv", CLI_STRING, &o.csv, "FILE", "write results as CSV", 0, 0},
        {"no-peak", CLI_FLAG, &o.no_peak, NULL, "do not measure the FMA peak for the % peak column",
         0, 0},
        {"list", CLI_FLAG, &o.list, NULL, "list the built-in operators and backends, then exit", 0,
         0},
    };
    const char *op = NULL;
    const cli_spec spec = {
        "test-operator",
        "OP [--sizes SPEC] [--backend LIST] [--validate] [--gradient] [--json FILE] [--csv FILE] "
        "[--max-time S]",
        "Times operator OP (an ONNX operator name: Gemm, MatMul, Conv, Relu, ...) on each\n"
        "problem size and backend: median with its 95% CI over adaptive repetitions, GFLOP/s,\n"
        "% of the machine's measured FP32 peak, and with --validate the largest difference\n"
        "from the ref backend. Sizes: Gemm/MatMul take M,N,K[,a_t,b_t]; Conv takes DeepBench's\n"
        "W,H,C,N,K,S,R,pad_w,pad_h,wstride,hstride; other operators take shape=AxBx... for\n"
        "every input. DeepBench's lists (Baidu DeepBench, Apache-2.0) live in bench/deepbench.\n"
        "Custom operators (built with 'd5 compile-op') run in a child process: a crash or hang\n"
        "is reported as a row and the sweep goes on. 'd5 test-operator --list x' lists operators.",
        opts,
        sizeof opts / sizeof opts[0],
        "OP",
        &op};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (o.list) return list_operators();
    o.op = op;
    if (o.timeout == 0) o.timeout = 10 * o.max_time + 30;

    target ts[16];
    int nt = 0;
    rc = parse_targets(op, o.backends, ts, &nt, 16);
    if (rc >= 0) return rc;
    op_case *cases;
    size_t ncases;
    d5_status s = sizes_load(op, ts[0].desc->min_inputs, o.sizes, &cases, &ncases);
    if (s != D5_OK) {
        for (int i = 0; i < nt; i++) d5_op_library_close(ts[i].lib);
        return cli_fail("test-operator", s);
    }
    if (o.limit > 0 && (size_t)o.limit < ncases) ncases = (size_t)o.limit;
    cli_echo(stdout, &spec);
    printf("#   %-14s = %s\n", "OP", op);

    double peak = 0;
    if (!o.no_peak) {
        d5_machine_measure_params mp = d5_machine_measure_default_params();
        mp.max_time_s = 0.2;
        mp.triad_bytes = 64u << 20;
        d5_machine_peaks pk;
        if (d5_machine_measure(&mp, &pk) == D5_OK) peak = pk.fp32_all.median;
        printf("# FP32 FMA peak, all cores: %.1f GFLOP/s (%% peak column)\n", peak);
    }
    printf("%-40s %-14s %10s %-24s %5s %9s %7s %8s  %s\n", "size", "backend", "median", "95% CI",
           "n", "GFLOP/s", "%peak", "err", "status");
    d5_results *res = NULL;
    s = d5_results_create(&res);
    if (s == D5_OK) s = d5_results_context(res, "operator", op);
    if (s == D5_OK) s = d5_results_context_number(res, "fp32_peak_gflops", peak);
    int failed = 0, tty = isatty(2);
    size_t step = 0, steps = ncases * (size_t)nt;
    for (size_t i = 0; s == D5_OK && i < ncases; i++)
        for (int k = 0; s == D5_OK && k < nt; k++) {
            step++;
            if (tty)
                fprintf(stderr, "\r[%zu/%zu] %s %s ...\033[K", step, steps, cases[i].label,
                        ts[k].label);
            outcome r;
            if (ts[k].lib)
                run_isolated(&o, &cases[i], &ts[k], &r);
            else
                run_here(&o, &cases[i], &ts[k], &r);
            if (tty) fprintf(stderr, "\r\033[K");
            print_row(&cases[i], &ts[k], &r, peak);
            char name[400];
            snprintf(name, sizeof name, "%.60s/%.160s/%.160s", op, cases[i].label, ts[k].label);
            if ((r.validated && !r.valid) || (r.grad_checked && !r.grad_ok) ||
                strncmp(r.status, "crashed", 7) == 0 || strncmp(r.status, "timed out", 9) == 0)
                failed = 1;
            if (!r.ok) {
                s = d5_results_add_error(res, name, r.status);
                continue;
            }
            size_t idx;
            s = d5_results_add(res, name, &r.m, "ns", &idx);
            double med = r.m.stats.median;
            if (s == D5_OK) s = d5_results_counter(res, idx, "GFLOP/s", r.flops / med, "GFLOP/s");
            if (s == D5_OK) s = d5_results_counter(res, idx, "GB/s", r.bytes / med, "GB/s");
            if (s == D5_OK && peak > 0)
                s = d5_results_counter(res, idx, "pct_peak", 100 * r.flops / med / peak, "%");
            if (s == D5_OK) s = d5_results_counter(res, idx, "flops", r.flops, "FLOP");
            if (s == D5_OK && r.validated)
                s = d5_results_counter(res, idx, "error_linf", r.err_linf, "");
            d5_measurement_free(&r.m);
        }
    if (s == D5_OK && o.json) s = d5_results_write_json(res, o.json);
    if (s == D5_OK && o.csv) s = d5_results_write_csv(res, o.csv);
    d5_results_free(res);
    free(cases);
    for (int i = 0; i < nt; i++) d5_op_library_close(ts[i].lib);
    if (s != D5_OK) return cli_fail("test-operator", s);
    return failed ? D5_EXIT_CHECK : D5_EXIT_OK;
}
