/* d5 pingpong: latency and bandwidth between ranks 0 and 1 across message
 * sizes, and with --fit the alpha-beta model t(S) = alpha + beta S. */
#include "comm_cli.h"
#include "output_options.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pp_run {
    d5_comm *comm;
    void *buf;
    size_t bytes;
    int32_t rank;
} pp_run;

/* One round trip: rank 0 sends and waits for the echo; rank 1 echoes. */
static d5_status round_trip(void *ctx)
{
    pp_run *p = ctx;
    d5_status s = D5_OK;
    if (p->rank == 0) {
        s = d5_comm_send(p->comm, p->buf, p->bytes, D5_U8, 1, 1, "ping");
        if (s == D5_OK) s = d5_comm_recv(p->comm, p->buf, p->bytes, D5_U8, 1, 2, "pong");
    } else if (p->rank == 1) {
        s = d5_comm_recv(p->comm, p->buf, p->bytes, D5_U8, 0, 1, "ping");
        if (s == D5_OK) s = d5_comm_send(p->comm, p->buf, p->bytes, D5_U8, 0, 2, "pong");
    }
    return s;
}

typedef struct pp_opts {
    const char *min_bytes, *max_bytes;
    cli_outputs out; /* --json */
    int factor, fit;
    double time_s, timeout_s;
} pp_opts;

static void print_fit(const uint64_t *sizes, const double *median_ns, size_t n,
                      const d5_alpha_beta *f)
{
    printf("#\n# alpha-beta fit t(S) = alpha + beta * S (least squares on relative residuals, "
           "%zu sizes)\n",
           n);
    printf("#   alpha = %.3f us (latency)   beta = %.5f ns/B (1/beta = %.2f GB/s)   R^2 = %.5f\n",
           f->alpha_s * 1e6, f->beta_s_per_byte * 1e9,
           f->beta_s_per_byte > 0 ? 1e-9 / f->beta_s_per_byte : INFINITY, f->r2);
    printf("# %12s %14s %12s %9s\n", "size(B)", "measured(us)", "fit(us)", "rel.err");
    for (size_t i = 0; i < n; i++) {
        double fit = f->alpha_s + f->beta_s_per_byte * (double)sizes[i], t = median_ns[i] * 1e-9;
        printf("  %12llu %14.3f %12.3f %+8.1f%%\n", (unsigned long long)sizes[i], t * 1e6,
               fit * 1e6, 100 * (fit - t) / t);
    }
}

static d5_status record(d5_results *res, uint64_t bytes, const d5_measurement *m)
{
    char name[64];
    snprintf(name, sizeof name, "pingpong/%llu", (unsigned long long)bytes);
    size_t idx;
    d5_status s = d5_results_add(res, name, m, "ns", &idx);
    double t = m->stats.median;
    if (s == D5_OK) s = d5_results_counter(res, idx, "bandwidth", t > 0 ? bytes / t : 0, "GB/s");
    return s;
}

static int sweep(d5_comm *c, const pp_opts *o, const cli_spec *spec, const uint64_t *sizes,
                 size_t n)
{
    int32_t rank = d5_comm_rank(c), size = d5_comm_size(c);
    char why[96];
    int over = comm_oversubscribed(c, why, sizeof why);
    if (rank == 0) {
        cli_echo(stdout, spec);
        printf("# ranks: %d (%s); ranks 0 and 1 exchange messages%s\n", (int)size, why,
               size > 2 ? ", the others wait" : "");
        printf("# latency: half the round trip; bandwidth: size / latency\n");
        if (over) printf("# oversubscribed: timings not meaningful (%s)\n", why);
        if (d5_comm_timeout(c) > 0)
            printf("# communication time-out: %g s (then the job ends)\n", d5_comm_timeout(c));
        printf("#\n# %12s  %-34s %15s %6s\n", "size(B)", "latency(us) median [95% CI]",
               "bandwidth(GB/s)", "n");
    }
    pp_run p = {c, NULL, 0, rank};
    d5_status s = d5_comm_mem_alloc(c, sizes[n - 1], &p.buf);
    if (s == D5_OK) memset(p.buf, 0, sizes[n - 1]);
    double *med = calloc(n, sizeof *med);
    if (s == D5_OK && !med) s = d5_error(D5_ERR_NOMEM, "out of memory");
    d5_results *res = NULL;
    if (s == D5_OK && rank == 0) s = d5_results_create(&res);
    double bad = s != D5_OK; /* every rank starts, or none */
    d5_status g = d5_comm_agree(c, &bad, 1, D5_COMM_MAX);
    if (s == D5_OK && g == D5_OK && bad > 0)
        s = d5_error(D5_ERR_BACKEND, "rank %d: another rank could not start", (int)rank);
    if (s == D5_OK) s = g;
    comm_measure_params mp = {o->time_s, 0.5, 1, NULL};
    for (size_t i = 0; s == D5_OK && i < n; i++) {
        p.bytes = sizes[i];
        d5_measurement m;
        s = comm_measure(c, round_trip, &p, &mp, &m);
        if (s != D5_OK) break;
        med[i] = m.stats.median;
        if (rank == 0) {
            char t[64];
            comm_format_time(&m, t, sizeof t);
            printf("  %12llu  %-34s %15.3f %6zu\n", (unsigned long long)sizes[i], t,
                   m.stats.median > 0 ? (double)sizes[i] / m.stats.median : 0, m.n);
            fflush(stdout);
            s = record(res, sizes[i], &m);
        }
        d5_measurement_free(&m);
    }
    d5_alpha_beta f;
    int fitted = 0;
    if (s == D5_OK && o->fit) {
        double *bytes = malloc(n * sizeof *bytes), *secs = malloc(n * sizeof *secs);
        if (!bytes || !secs) s = d5_error(D5_ERR_NOMEM, "out of memory");
        for (size_t i = 0; s == D5_OK && i < n; i++)
            bytes[i] = (double)sizes[i], secs[i] = med[i] * 1e-9;
        if (s == D5_OK) s = d5_alpha_beta_fit(bytes, secs, n, &f);
        fitted = s == D5_OK;
        if (fitted && rank == 0) print_fit(sizes, med, n, &f);
        free(bytes);
        free(secs);
    }
    if (s == D5_OK && rank == 0) {
        if (over)
            fprintf(stderr, "d5 pingpong: warning: oversubscribed (%s): timings not meaningful\n",
                    why);
        s = d5_results_context(res, "command", "d5 pingpong");
        if (s == D5_OK) s = d5_results_context_number(res, "ranks", size);
        if (s == D5_OK) s = d5_results_context(res, "oversubscribed", over ? "yes" : "no");
        if (s == D5_OK && fitted) s = d5_results_context_number(res, "alpha_s", f.alpha_s);
        if (s == D5_OK && fitted)
            s = d5_results_context_number(res, "beta_s_per_byte", f.beta_s_per_byte);
        if (s == D5_OK && fitted) s = d5_results_context_number(res, "fit_r2", f.r2);
        cli_outputs_params outputs = {.command = "pingpong"};
        if (s == D5_OK) s = cli_outputs_write(&o->out, &outputs, res);
    }
    d5_results_free(res);
    free(med);
    d5_comm_mem_free(c, p.buf);
    return s == D5_OK ? D5_EXIT_OK : comm_fail(c, "pingpong", s);
}

int cmd_pingpong(int argc, char **argv)
{
    pp_opts o = {"0", "4M", {NULL, NULL, NULL, NULL, NULL}, 2, 0, 0.5, 0};
    const cli_opt opts[] = {
        {"min-bytes", CLI_STRING, &o.min_bytes, "SIZE", "smallest message (-b; default 0)", 0, 0},
        {"max-bytes", CLI_STRING, &o.max_bytes, "SIZE",
         "largest message (-e; default 4M; K, M, G are powers of 1024)", 0, 0},
        {"factor", CLI_INT, &o.factor, "F", "size multiplier between rows (-f; default 2)", 2,
         1 << 20},
        {"fit", CLI_FLAG, &o.fit, NULL,
         "fit t(S) = alpha + beta * S: latency alpha, inverse bandwidth beta, R^2, and the "
         "fit's relative error at each size",
         0, 0},
        {"time", CLI_DOUBLE, &o.time_s, "S", "time budget per size in seconds (default 0.5)", 0.001,
         3600},
        CLI_OUTPUT_JSON(&o.out), /* written by rank 0 */
        {"comm-timeout", CLI_DOUBLE, &o.timeout_s, "S", COMM_TIMEOUT_HELP, 0, 1e6},
    };
    const cli_spec spec = {CLI_SPEC(
        "pingpong",
        "[-b SIZE] [-e SIZE] [-f F] [--fit] [--time S] [--json FILE] [--comm-timeout S]",
        "Measures the round trip of a message between ranks 0 and 1 of the job (mpirun -n 2\n"
        "d5 pingpong) for each size: latency, half the round trip, as a median with its 95% CI,\n"
        "and bandwidth, size / latency. With --fit, the alpha-beta model of a message's time\n"
        "and how far it is from each measurement: the model that level 3's scaling estimates\n"
        "use.",
        opts)};
    int rc = comm_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    uint64_t lo, hi, *sizes = NULL;
    size_t n = 0;
    if (!comm_parse_bytes(o.min_bytes, &lo) || !comm_parse_bytes(o.max_bytes, &hi)) {
        fprintf(stderr,
                "d5 pingpong: --min-bytes %s / --max-bytes %s: expected sizes such as "
                "0, 1K, 4M\n",
                o.min_bytes, o.max_bytes);
        return D5_EXIT_USAGE;
    }
    d5_status s = comm_sizes_geometric(lo, hi, o.factor, &sizes, &n);
    if (s != D5_OK) {
        fprintf(stderr, "d5 pingpong: %s\n", d5_last_error());
        return D5_EXIT_USAGE;
    }
    if (o.fit && n < 2) {
        fprintf(stderr, "d5 pingpong: --fit needs at least 2 sizes\n");
        free(sizes);
        return D5_EXIT_USAGE;
    }
    /* MPI is called from one thread and no parallel region runs. */
    d5_comm_params cp = d5_comm_default_params();
    cp.thread_level = D5_COMM_THREAD_SINGLE;
    cp.timeout_s = o.timeout_s;
    d5_comm *c = NULL;
    s = d5_comm_create(&cp, &c);
    if (s != D5_OK) {
        free(sizes);
        return cli_fail("pingpong", s);
    }
    if (d5_comm_size(c) < 2) {
        fprintf(stderr, "d5 pingpong: needs 2 ranks (mpirun -n 2 d5 pingpong); this job has %d\n",
                (int)d5_comm_size(c));
        rc = D5_EXIT_USAGE;
    } else {
        rc = sweep(c, &o, &spec, sizes, n);
    }
    d5_comm_free(c);
    free(sizes);
    return rc;
}
