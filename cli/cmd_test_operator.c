/* d5 test-operator: one operator across problem sizes and backends, timed with
 * d5's statistics, optionally validated against the ref backend. Custom
 * operators run in a child process so that a crash or a hang is a row of the
 * table, not the end of the sweep. */
#define _GNU_SOURCE
#include "output_options.h"
#include "cli.h"
#include "op_runner.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct topts {
    run_opts run;
    const char *sizes, *backends, *dtype;
    cli_outputs out; /* --json and --csv */
    int list, all, no_peak, limit, threads;
} topts;

/* ---- Targets ---- */

static int add_builtin(target *ts, int *n, const char *op, const char *backend, int quiet_missing)
{
    const d5_op_desc *d;
    d5_status s = d5_op_find(op, backend, &d);
    if (s != D5_OK) {
        /* "all": a backend without the operator is skipped silently, one that
         * has it but cannot run here (cuda without a device) is named. */
        if (quiet_missing && s == D5_ERR_NODEVICE)
            fprintf(stderr, "d5 test-operator: skipping %s: %s\n", backend, d5_last_error());
        if (quiet_missing) return 1;
        fprintf(stderr, "d5 test-operator: %s\n", d5_last_error());
        return 0;
    }
    ts[*n] = (target){{0}, d, NULL};
    snprintf(ts[*n].label, sizeof ts[*n].label, "%s", backend);
    (*n)++;
    return 1;
}

/* "ref,blas", "all", "custom:LIB:NAME". Returns an exit code or -1: a name
 * that is no backend, or one unavailable here, is a usage error (2); a
 * backend without the operator is bad input (3). */
static int parse_targets(const char *op, const char *spec, double o_timeout, target *ts, int *n,
                         int max, int quiet)
{
    char buf[2048];
    int rc;
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && *n < max;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "all") == 0) {
            for (size_t i = 0; i < d5_backend_count() && *n < max; i++)
                add_builtin(ts, n, op, d5_backend_name(i), 1);
        } else if (strncmp(tok, "custom:", 7) == 0) {
            char *lib = tok + 7, *name = strrchr(lib, ':');
            if (!name || name == lib || !name[1]) {
                fprintf(stderr,
                        "d5 test-operator: --backend %s: expected custom:LIBRARY:OPERATOR\n", tok);
                return D5_EXIT_USAGE;
            }
            *name++ = '\0';
            d5_op_library *l = NULL;
            d5_status s = probe_library(lib, o_timeout);
            if (s == D5_OK) s = d5_op_library_open(lib, &l);
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
        } else if ((rc = cli_check_backends("test-operator", "backend", tok, 0)) >= 0) {
            return rc;
        } else if (!add_builtin(ts, n, op, tok, quiet)) {
            return D5_EXIT_INPUT;
        }
    }
    int known = 0;
    for (size_t i = 0; i < d5_op_count() && !known; i++) known = strcmp(d5_op_at(i)->name, op) == 0;
    if (*n == 0 && !known && strstr(spec, "custom:") == NULL) {
        fprintf(stderr,
                "d5 test-operator: d5 has no operator '%s' (see 'd5 test-operator --list x')\n",
                op);
        return D5_EXIT_INPUT;
    }
    if (*n == 0) {
        if (!quiet) fprintf(stderr, "d5 test-operator: no backend of '%s' has %s here\n", spec, op);
        return D5_EXIT_INPUT;
    }
    return -1;
}

/* The backend registry, then every built-in operator. */
static int list_operators(void)
{
    printf("%-8s %9s  %-9s  %s\n", "backend", "operators", "available", "dtypes");
    for (size_t i = 0; i < d5_backend_count(); i++) {
        d5_backend_info b;
        if (d5_backend_at(i, &b) != D5_OK) continue;
        printf("%-8s %9d  %-9s  %s\n%20s%s\n", b.name, (int)b.operators, b.available ? "yes" : "no",
               b.dtypes, "", b.description);
        if (!b.available) printf("%20sunavailable: %s\n", "", b.reason);
    }
    printf("\n%-26s %-8s %-9s %s\n", "operator", "backend", "backward", "available");
    for (size_t i = 0; i < d5_op_count(); i++) {
        const d5_op_desc *d = d5_op_at(i);
        char why[256];
        int ok = d5_backend_available(d->backend, why, sizeof why);
        printf("%-26s %-8s %-9s %s\n", d->name, d->backend, d->backward ? "yes" : "no",
               ok ? "yes" : why);
    }
    return D5_EXIT_OK;
}

static void print_row(int width, const op_case *c, const target *t, const outcome *r, double peak,
                      int show_speedup, double speedup)
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
    char pcts[16] = "-";
    /* Above 100% the peak was measured low (a busy machine): flagged, never plain. */
    if (r->ok && peak > 0) snprintf(pcts, sizeof pcts, "%.1f%%%s", pct, pct > 100 ? "!" : "");
    char flags[160] = "";
    if (r->ok && pct > 100)
        snprintf(flags, sizeof flags, " [peak under-measured: %.0f%% of it]", pct);
    if (r->ok && r->m.stability.unstable)
        snprintf(flags + strlen(flags), sizeof flags - strlen(flags), " [unstable: %s]",
                 r->m.stability.reason);
    if (r->ok && (r->m.contention.contended || r->m.threads_min < cli_threads_intended()))
        snprintf(flags + strlen(flags), sizeof flags - strlen(flags), " [contended: %d threads]",
                 (int)r->m.threads_min);
    char sp[16] = "";
    if (show_speedup) snprintf(sp, sizeof sp, speedup > 0 ? "%.2fx" : "-", speedup);
    printf("%-*s %-14s %-5s %10s %-24s %5zu %9.2f %7s %8s %*s%s%s%s\n", width, c->label, t->label,
           precision_name(c->precision), med, ci, r->ok ? r->m.n : 0, gflops, pcts, err,
           show_speedup ? 7 : 0, sp, show_speedup ? "  " : " ", r->status, flags);
    fflush(stdout);
}

/* The all-core peak of every precision asked for: FP32 always, the
 * low-precision kernels of the others (d5_machine_peak_of), one line each. */
static void measure_peaks(unsigned precisions, double peaks[PREC_COUNT])
{
    static const uint32_t kinds[PREC_COUNT] = {
        0, (1u << D5_PEAK_BF16_DOT) | (1u << D5_PEAK_AMX_BF16), 1u << D5_PEAK_F16_FMA,
        (1u << D5_PEAK_INT8_DOT) | (1u << D5_PEAK_AMX_INT8)};
    d5_machine_measure_params mp = d5_machine_measure_default_params();
    mp.max_time_s = 0.2;
    mp.triad_bytes = 64u << 20;
    mp.lowp = 0;
    for (int p = 0; p < PREC_COUNT; p++)
        if (precisions & (1u << p)) mp.lowp |= kinds[p];
    d5_machine_peaks pk;
    if (d5_machine_measure(&mp, &pk) != D5_OK) memset(&pk, 0, sizeof pk);
    peaks[PREC_F32] = pk.fp32_all.median;
    printf("# FP32 FMA peak, all cores: %.1f GFLOP/s (%% peak column)\n", peaks[PREC_F32]);
    for (int p = 1; p < PREC_COUNT; p++) {
        if (!(precisions & (1u << p))) continue;
        const char *kernel;
        peaks[p] = d5_machine_peak_of(&pk, precision_dtype(p), &kernel);
        const char *unit = p == PREC_I8 ? "GOP/s" : "GFLOP/s";
        for (int i = 0; peaks[p] > 0 && i < D5_PEAK_KINDS; i++)
            if (strcmp(pk.lowp[i].name ? pk.lowp[i].name : "", kernel) == 0)
                printf("# %s peak, all cores: %.1f %s (%s, %s: %%peak of %s rows)\n",
                       precision_name(p), peaks[p], unit, kernel, pk.lowp[i].instruction,
                       precision_name(p));
        for (int i = 0; peaks[p] == 0 && i < D5_PEAK_KINDS; i++)
            if (kinds[p] & (1u << i))
                printf("# %s peak: none (%s: %s); its rows have no %%peak\n", precision_name(p),
                       pk.lowp[i].name ? pk.lowp[i].name : "?", pk.lowp[i].reason);
    }
}

/* The state of one sweep over sizes, backends and precisions. */
typedef struct sweep {
    const topts *o;
    const char *op;
    int width, speedups;
    const double *peaks;
    d5_results *res;
    size_t step, steps, measured, unsupported;
    int tty, failed;
    size_t rows_failed; /* rows that failed a check, crashed or could not run */
} sweep;

/* One row: the case in precision p on target t, printed and recorded. The
 * float32 row comes first and leaves its median for the others' speed-up. */
static d5_status sweep_row(sweep *sw, const op_case *base, const target *t, int p,
                           double *f32_median)
{
    op_case c;
    sizes_in_precision(t->lib ? "" : sw->op, base, p, &c);
    target run = *t;
    outcome r;
    memset(&r, 0, sizeof r);
    sw->step++;
    if (c.op[0] && d5_op_find(c.op, t->desc->backend, &run.desc) != D5_OK) {
        r.unsupported = 1;
        snprintf(r.status, sizeof r.status, "%s unsupported: %s", d5_dtype_name(precision_dtype(p)),
                 d5_last_error());
    } else {
        if (sw->tty)
            fprintf(stderr, "\r[%zu/%zu] %s %s %s ...\033[K", sw->step, sw->steps, c.label,
                    t->label, precision_name(p));
        run_case(&sw->o->run, &c, &run, &r);
        if (sw->tty) fprintf(stderr, "\r\033[K");
    }
    double med = r.ok ? r.m.stats.median : 0, speedup = 0;
    if (p == PREC_F32) *f32_median = med;
    if (p != PREC_F32 && med > 0 && *f32_median > 0) speedup = *f32_median / med;
    print_row(sw->width, &c, t, &r, sw->peaks[p], sw->speedups, speedup);
    if (r.ok) cli_contention_note(&r.m);
    sw->unsupported += r.unsupported != 0;
    char name[420];
    snprintf(name, sizeof name, "%.60s/%.160s/%.160s%s%s", sw->op, c.label, t->label,
             p == PREC_F32 ? "" : "/", p == PREC_F32 ? "" : precision_name(p));
    if ((r.validated && !r.valid) || (r.grad_checked && !r.grad_ok) ||
        strncmp(r.status, "crashed", 7) == 0 || strncmp(r.status, "timed out", 9) == 0)
        sw->failed = 1;
    if (sw->failed || (!r.ok && !r.unsupported)) sw->rows_failed++;
    if (!r.ok) return d5_results_add_error(sw->res, name, r.status);
    sw->measured++;
    size_t idx;
    const char *rate = p == PREC_I8 ? "GOP/s" : "GFLOP/s";
    d5_status s = d5_results_add(sw->res, name, &r.m, "ns", &idx);
    if (s == D5_OK) s = d5_results_counter(sw->res, idx, rate, r.flops / med, rate);
    if (s == D5_OK) s = d5_results_counter(sw->res, idx, "GB/s", r.bytes / med, "GB/s");
    if (s == D5_OK && sw->peaks[p] > 0)
        s = d5_results_counter(sw->res, idx, "pct_peak", 100 * r.flops / med / sw->peaks[p], "%");
    if (s == D5_OK) s = d5_results_counter(sw->res, idx, "flops", r.flops, "FLOP");
    if (s == D5_OK && r.validated)
        s = d5_results_counter(sw->res, idx, "error_linf", r.err_linf, "");
    if (s == D5_OK && r.validated && p != PREC_F32)
        s = d5_results_counter(sw->res, idx, "error_tolerance", r.err_tol, "");
    if (s == D5_OK && speedup > 0)
        s = d5_results_counter(sw->res, idx, "speedup_vs_f32", speedup, "x");
    d5_measurement_free(&r.m);
    return s;
}

static void close_targets(target *ts, int nt)
{
    for (int i = 0; i < nt; i++) d5_op_library_close(ts[i].lib);
}

/* The table of one operator: every size, backend and precision. Returns an
 * exit code; *rows_failed counts the rows that failed. */
static int test_one(const topts *o, const char *op, const double *peaks, unsigned precisions,
                    d5_results *res, size_t *rows_failed)
{
    target ts[16];
    int nt = 0;
    int rc = parse_targets(op, o->backends, o->run.timeout, ts, &nt, 16, o->all);
    if (rc >= 0) return o->all && rc == D5_EXIT_INPUT && nt == 0 ? D5_EXIT_OK : rc;
    op_case *cases;
    size_t ncases;
    d5_status s = sizes_load(op, ts[0].desc->min_inputs, o->sizes, &cases, &ncases);
    if (s != D5_OK) {
        close_targets(ts, nt);
        if (o->all) {
            printf("%s: no cases: %s\n", op, d5_last_error());
            (*rows_failed)++;
            return D5_EXIT_CHECK;
        }
        return cli_fail("test-operator", s);
    }
    if (o->limit > 0 && (size_t)o->limit < ncases) ncases = (size_t)o->limit;
    if (o->all)
        printf("\n## %s\n", op);
    else
        printf("#   %-14s = %s\n", "OP", op);
    for (int p = 0; p < PREC_COUNT; p++)
        if ((precisions & (1u << p)) && p == PREC_I8 && sizes_family(op) != FAMILY_SHAPE)
            printf("# i8: %s runs as %s: %s uint8, %s int8, int32 out%s\n", op,
                   sizes_family(op) == FAMILY_CONV ? "ConvInteger" : "MatMulInteger",
                   sizes_family(op) == FAMILY_CONV ? "X" : "A [M,K]",
                   sizes_family(op) == FAMILY_CONV ? "W" : "B [K,N]",
                   strcmp(op, "Gemm") == 0 ? " (Gemm's transposes dropped)" : "");
    int width = 4;
    for (size_t i = 0; i < ncases; i++)
        if ((int)strlen(cases[i].label) > width) width = (int)strlen(cases[i].label);
    int speedups = (precisions & 1u) && (precisions & ~1u);
    printf("%-*s %-14s %-5s %10s %-24s %5s %9s %7s %8s %*s%s%s\n", width, "size", "backend",
           "dtype", "median", "95% CI", "n", "GFLOP/s", "%peak", "err", speedups ? 7 : 0,
           speedups ? "vs f32" : "", speedups ? "  " : " ", "status");
    sweep sw = {o, op, width, speedups, peaks, res, 0, 0, 0, 0, isatty(2), 0, 0};
    for (int p = 0; p < PREC_COUNT; p++) sw.steps += (precisions >> p) & 1u;
    sw.steps *= ncases * (size_t)nt;
    for (size_t i = 0; s == D5_OK && i < ncases; i++)
        for (int k = 0; s == D5_OK && k < nt; k++) {
            double f32_median = 0;
            for (int p = 0; s == D5_OK && p < PREC_COUNT; p++)
                if (precisions & (1u << p)) s = sweep_row(&sw, &cases[i], &ts[k], p, &f32_median);
        }
    free(cases);
    close_targets(ts, nt);
    *rows_failed += sw.rows_failed;
    if (s != D5_OK) return cli_fail("test-operator", s);
    if (sw.measured == 0 && sw.unsupported == sw.steps) {
        if (o->all) return D5_EXIT_OK; /* another precision's row said so */
        fprintf(stderr,
                "d5 test-operator: no backend here runs %s in --dtype %s; nothing was measured\n",
                op, o->dtype);
        return D5_EXIT_CHECK;
    }
    if (sw.measured == 0) {
        fprintf(stderr, "d5 test-operator: %s: all %zu rows failed; nothing was measured\n", op,
                sw.steps);
        return D5_EXIT_CHECK;
    }
    return sw.failed || sw.rows_failed ? D5_EXIT_CHECK : D5_EXIT_OK;
}

/* --all: every built-in operator, once each, in the registry's order. */
static int test_all(const topts *o, const double *peaks, unsigned precisions, d5_results *res)
{
    size_t ops = 0, failed_ops = 0, rows_failed = 0;
    char failed[2048] = "";
    for (size_t i = 0; i < d5_op_count(); i++) {
        const char *op = d5_op_at(i)->name;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = strcmp(d5_op_at(j)->name, op) == 0;
        if (seen) continue;
        ops++;
        if (!isatty(1)) fprintf(stderr, "[%zu] %s\n", ops, op);
        int rc = test_one(o, op, peaks, precisions, res, &rows_failed);
        if (rc == D5_EXIT_OK) continue;
        if (rc != D5_EXIT_CHECK) return rc;
        failed_ops++;
        size_t used = strlen(failed);
        if (used < sizeof failed - 1)
            snprintf(failed + used, sizeof failed - used, "%s%s", used ? ", " : "", op);
    }
    printf("\n# %zu operators, %zu failed%s%s\n", ops, failed_ops, failed_ops ? ": " : "", failed);
    return failed_ops ? D5_EXIT_CHECK : D5_EXIT_OK;
}

int cmd_test_operator(int argc, char **argv)
{
    topts o = {.run = {.max_time = 0, .validate_max_gflop = 20},
               .sizes = "smoke",
               .backends = "all",
               .dtype = "f32"};
    char backend_help[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < d5_backend_count() && used < sizeof backend_help; i++)
        used += (size_t)snprintf(backend_help + used, sizeof backend_help - used, "%s,",
                                 d5_backend_name(i));
    if (used < sizeof backend_help)
        snprintf(backend_help + used, sizeof backend_help - used,
                 "custom:LIB:NAME or all (default: every available)");
    const cli_opt opts[] = {
        {"sizes", CLI_STRING, &o.sizes, "SPEC",
         "smoke (default: the operator's own cases), deepbench-train, deepbench-infer, FILE.csv, "
         "\"K=V,...[;K=V,...]\", or cases \"f32[2,3] i64[1]={0} | axis=1[;...]\" "
         "(docs/level0.md)",
         0, 0},
        {"backend", CLI_STRING, &o.backends, "LIST", backend_help, 0, 0},
        {"dtype", CLI_STRING, &o.dtype, "LIST",
         "precisions: f32 (default), bf16, f16, i8 (Gemm and MatMul as MatMulInteger, Conv as "
         "ConvInteger: uint8 x int8 into int32), a comma-separated list, or all",
         0, 0},
        {"validate", CLI_FLAG, &o.run.validate, NULL,
         "compare every output (other precisions than f32: output 0) with the ref backend", 0, 0},
        {"gradient", CLI_FLAG, &o.run.gradient, NULL,
         "check the backward pass against central finite differences (up to 256 elements of "
         "each input) and, for other backends, against ref's",
         0, 0},
        {"gradient-elements", CLI_INT, &o.run.grad_elements, "N",
         "elements of each input checked against finite differences, evenly spaced (default "
         "256; 32 with --all)",
         0, 1 << 30},
        {"all", CLI_FLAG, &o.all, NULL,
         "every built-in operator on every backend of --backend, validated against ref (as "
         "--validate), with its default cases; max-time 0.02 s unless given; exit 1 if any "
         "row fails",
         0, 0},
        {"validate-max-gflop", CLI_DOUBLE, &o.run.validate_max_gflop, "G",
         "skip validation of sizes above G GFLOP (default 20)", 0, 1e6},
        {"heatmap", CLI_STRING, &o.run.heatmap, "FILE",
         "write |output - ref| of the last validated run as CSV", 0, 0},
        {"max-time", CLI_DOUBLE, &o.run.max_time, "S",
         "time budget per size and backend in seconds (default 2; 0.02 with --all)", 0.001, 3600},
        {"timeout", CLI_DOUBLE, &o.run.timeout, "S",
         "kill a custom operator's run after S seconds (default 10 x max-time + 30)", 1, 86400},
        {"limit", CLI_INT, &o.limit, "N", "only the first N sizes", 0, 1000000},
        CLI_OUTPUT_JSON(&o.out),
        CLI_OUTPUT_CSV(&o.out),
        {"no-peak", CLI_FLAG, &o.no_peak, NULL,
         "do not measure the peaks (of each precision) for the % peak column", 0, 0},
        {"list", CLI_FLAG, &o.list, NULL, "list the built-in operators and backends, then exit", 0,
         0},
        {"threads", CLI_INT, &o.threads, "N", CLI_THREADS_HELP, 0, 4096},
    };
    const char *op = NULL;
    const cli_spec spec = {
        CLI_SPEC(
            "test-operator",
            "OP [--sizes SPEC] [--backend LIST] [--dtype LIST] [--validate] [--gradient] [--json "
            "FILE] [--csv FILE] [--max-time S] | --all [--gradient] | --list",
            "Times operator OP (an ONNX operator name: Gemm, MatMul, Conv, Relu, ...) on each\n"
            "problem size, backend and precision: median with its 95% CI over adaptive\n"
            "repetitions, GFLOP/s (GOP/s for i8), % of the machine's measured peak of that\n"
            "precision, and with --validate the largest difference from the ref backend on the\n"
            "same values (bf16 and f16 against float32 within u(1 + sqrt(K)) of the largest\n"
            "output, u = 2^-8 or 2^-11 and K the length of each sum; i8 exactly). A backend\n"
            "that cannot run a precision gets a row saying so. Every operator has default\n"
            "cases (--sizes smoke): its own typed inputs and attributes where it needs them\n"
            "(Reshape's shape, Gather's indices, MaxPool's kernel), else its family's sizes.\n"
            "Sizes: Gemm/MatMul take M,N,K[,a_t,b_t]; Conv takes DeepBench's\n"
            "W,H,C,N,K,S,R,pad_w,pad_h,wstride,hstride; other operators take shape=AxBx... for\n"
            "every input, or case specs such as \"f32[2,8,16,16] | kernel_shape=[3,3]\". The\n"
            "recurrent cells' weights are drawn in +-1/sqrt(hidden), as frameworks initialise\n"
            "them. DeepBench's lists (Baidu DeepBench, Apache-2.0) live in bench/deepbench.\n"
            "--all runs every operator on every backend against ref, as a check of the whole\n"
            "registry. Custom operators (built with 'd5 compile-op') run in a child process: a\n"
            "crash or hang is reported as a row and the sweep goes on. 'd5 test-operator\n"
            "--list' lists the backends and operators.",
            opts),
        .positional = "OP", .pos_value = &op, .pos_optional = 1};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (o.list) return list_operators();
    if (!op && !o.all) {
        fprintf(stderr, "d5 test-operator: missing OP (or --all, or --list)\n");
        cli_usage(stderr, &spec);
        return D5_EXIT_USAGE;
    }
    if (op && o.all) {
        fprintf(stderr, "d5 test-operator: give OP or --all, not both\n");
        return D5_EXIT_USAGE;
    }
    unsigned precisions;
    if (precision_parse(o.dtype, &precisions) != D5_OK) {
        fprintf(stderr, "d5 test-operator: --dtype %s\n", d5_last_error());
        return D5_EXIT_USAGE;
    }
    if (o.run.max_time == 0) o.run.max_time = o.all ? 0.02 : 2.0;
    if (o.all) o.run.validate = 1;
    if (o.run.grad_elements == 0) o.run.grad_elements = o.all ? 32 : 256;
    if (o.run.timeout == 0) o.run.timeout = 10 * o.run.max_time + 30;
    if (op) { /* an unknown operator or backend fails before any work */
        target ts[16];
        int nt = 0;
        rc = parse_targets(op, o.backends, o.run.timeout, ts, &nt, 16, 0);
        close_targets(ts, nt);
        if (rc >= 0) return rc;
    }
    cli_echo(stdout, &spec);
    if (!cli_outputs_check("test-operator", &o.out) ||
        !cli_output_ok("test-operator", "--heatmap", o.run.heatmap, 0))
        return D5_EXIT_INPUT;
    if ((rc = cli_threads_apply("test-operator", o.threads)) >= 0) return rc;

    double peaks[PREC_COUNT] = {0};
    if (!o.no_peak) measure_peaks(precisions, peaks);
    d5_results *res = NULL;
    d5_status s = d5_results_create(&res);
    if (s == D5_OK) s = d5_results_context(res, "operator", op ? op : "all");
    if (s == D5_OK) s = d5_results_context_number(res, "fp32_peak_gflops", peaks[PREC_F32]);
    for (int p = 1; s == D5_OK && p < PREC_COUNT; p++)
        if (precisions & (1u << p)) {
            char key[32];
            snprintf(key, sizeof key, "%s_peak_%s", precision_name(p),
                     p == PREC_I8 ? "gops" : "gflops");
            s = d5_results_context_number(res, key, peaks[p]);
        }
    if (s != D5_OK) {
        d5_results_free(res);
        return cli_fail("test-operator", s);
    }
    size_t rows_failed = 0;
    rc = o.all ? test_all(&o, peaks, precisions, res)
               : test_one(&o, op, peaks, precisions, res, &rows_failed);
    cli_contention_end("test-operator", NULL);
    s = cli_contention_context(res);
    cli_outputs_params outputs = {.spec = &spec};
    if (s == D5_OK) s = cli_outputs_write(&o.out, &outputs, res);
    d5_results_free(res);
    if (s != D5_OK) return cli_fail("test-operator", s);
    return rc;
}
