/* d5 pingpong: latency and bandwidth between ranks 0 and 1 across message
 * sizes, and with --fit the alpha-beta model t(S) = alpha + beta S and the
 * piecewise model; with --exchange, what a step of a ring allreduce costs:
 * both ranks sending and receiving at once, and both adding what came in. */
#include "comm_cli.h"
#include "output_options.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct pp_run {
    d5_comm *comm;
    void *buf, *in; /* in: what an exchange receives */
    size_t bytes;
    int32_t rank;
    int half; /* the half of buf (twice the largest size) the next exchange uses */
} pp_run;

/* One step of a ring: ranks 0 and 1 add what came in last (so that what
 * they send was just written, as in a ring, where every chunk sent is one
 * that the step before summed or received), then send each other `bytes` at
 * once. Steps alternate between the two halves of buf, as a ring of 2 ranks
 * between its two chunks, so that the memory touched is the allreduce's:
 * two chunks and what comes in. The exchange's own time is this less the
 * sum's (reduce()). */
static d5_status exchange(void *ctx)
{
    pp_run *p = ctx;
    if (p->rank > 1) return D5_OK;
    char *chunk = (char *)p->buf + (p->half ? p->bytes : 0);
    p->half ^= 1;
    d5_comm_reduce_sum(chunk, p->in, p->bytes / sizeof(float), D5_F32);
    int32_t peer = 1 - p->rank;
    d5_comm_request *rq = NULL, *sq = NULL;
    d5_status s = d5_comm_irecv(p->comm, p->in, p->bytes, D5_U8, peer, 3, "exchange in", &rq);
    if (s == D5_OK)
        s = d5_comm_isend(p->comm, chunk, p->bytes, D5_U8, peer, 3, "exchange out", &sq);
    d5_status w = rq ? d5_comm_wait(&rq) : D5_OK;
    d5_status v = sq ? d5_comm_wait(&sq) : D5_OK;
    return s != D5_OK ? s : w != D5_OK ? w : v;
}

/* The reduction after an exchange: ranks 0 and 1 add what came in, at once. */
static d5_status reduce(void *ctx)
{
    pp_run *p = ctx;
    if (p->rank <= 1) d5_comm_reduce_sum(p->buf, p->in, p->bytes / sizeof(float), D5_F32);
    return D5_OK;
}

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
    int factor, fit, exchange;
    double time_s, timeout_s;
} pp_opts;

static void print_piecewise(const char *what, const d5_piecewise *m)
{
    printf("# piecewise fit of the %s (%d segment%s, weighted R^2 = %.5f):\n", what, (int)m->nseg,
           m->nseg == 1 ? "" : "s", m->r2);
    for (int32_t k = 0; k < m->nseg; k++)
        printf("#   from %10.0f B: alpha = %.3f us, beta = %.5f ns/B (1/beta = %.2f GB/s)\n",
               m->from_bytes[k], m->alpha_s[k] * 1e6, m->beta_s_per_byte[k] * 1e9,
               m->beta_s_per_byte[k] > 0 ? 1e-9 / m->beta_s_per_byte[k] : INFINITY);
}

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

/* The fits of --fit, printed by rank 0 and kept in the results' context:
 * the alpha-beta line and the piecewise model of the times med[] (one way,
 * or an exchange), and with --exchange the line of the reduction's red[]. */
static d5_status fit_all(const pp_opts *o, int32_t rank, const uint64_t *sizes, const double *med,
                         const double *red, size_t n, d5_results *res)
{
    double *bytes = malloc(n * sizeof *bytes), *secs = malloc(2 * n * sizeof *secs);
    if (!bytes || !secs) {
        free(bytes);
        free(secs);
        return d5_error(D5_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        bytes[i] = (double)sizes[i];
        secs[i] = med[i] * 1e-9;
        secs[n + i] = red ? red[i] * 1e-9 : 0;
    }
    d5_alpha_beta f, r;
    d5_piecewise pw;
    d5_status s = d5_alpha_beta_fit(bytes, secs, n, &f);
    if (s == D5_OK) s = d5_piecewise_fit(bytes, secs, n, D5_PIECEWISE_MAX, &pw);
    /* The reduction of sizes under one float does nothing: left out. */
    size_t skip = 0;
    while (red && skip < n && sizes[skip] < sizeof(float)) skip++;
    if (s == D5_OK && red) s = d5_alpha_beta_fit(bytes + skip, secs + n + skip, n - skip, &r);
    const char *what = o->exchange ? "exchange" : "one-way time";
    if (s == D5_OK && rank == 0) {
        if (!o->exchange) print_fit(sizes, med, n, &f);
        printf("#\n");
        print_piecewise(what, &pw);
        if (red)
            printf("# reduction (float32 sum of what came in, on both ranks at once): %.3f us + "
                   "%.5f ns/B (%.2f GB/s of input), R^2 = %.5f\n",
                   r.alpha_s * 1e6, r.beta_s_per_byte * 1e9,
                   r.beta_s_per_byte > 0 ? 1e-9 / r.beta_s_per_byte : INFINITY, r.r2);
        printf("# %12s %14s %12s %9s\n", "size(B)", "measured(us)", "piecewise(us)", "rel.err");
        for (size_t i = 0; i < n; i++) {
            double t = secs[i], m = d5_piecewise_time_s(&pw, bytes[i]);
            printf("  %12llu %14.3f %12.3f %+8.1f%%\n", (unsigned long long)sizes[i], t * 1e6,
                   m * 1e6, 100 * (m - t) / t);
        }
    }
    if (s == D5_OK && rank == 0 && !o->exchange) {
        s = d5_results_context_number(res, "alpha_s", f.alpha_s);
        if (s == D5_OK) s = d5_results_context_number(res, "beta_s_per_byte", f.beta_s_per_byte);
        if (s == D5_OK) s = d5_results_context_number(res, "fit_r2", f.r2);
    }
    /* The piecewise model: "<what>_segments" and per segment k its start,
     * alpha and beta; the reduction's alpha and seconds per byte. */
    const char *key = o->exchange ? "exchange" : "oneway";
    char name[64];
    if (s == D5_OK && rank == 0) {
        snprintf(name, sizeof name, "%s_segments", key);
        s = d5_results_context_number(res, name, pw.nseg);
    }
    for (int32_t k = 0; s == D5_OK && rank == 0 && k < pw.nseg; k++) {
        snprintf(name, sizeof name, "%s_%d_from_bytes", key, (int)k);
        s = d5_results_context_number(res, name, pw.from_bytes[k]);
        snprintf(name, sizeof name, "%s_%d_alpha_s", key, (int)k);
        if (s == D5_OK) s = d5_results_context_number(res, name, pw.alpha_s[k]);
        snprintf(name, sizeof name, "%s_%d_beta_s_per_byte", key, (int)k);
        if (s == D5_OK) s = d5_results_context_number(res, name, pw.beta_s_per_byte[k]);
    }
    if (s == D5_OK && rank == 0 && red) {
        s = d5_results_context_number(res, "reduce_alpha_s", r.alpha_s);
        if (s == D5_OK) s = d5_results_context_number(res, "reduce_s_per_byte", r.beta_s_per_byte);
    }
    free(bytes);
    free(secs);
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
        if (o->exchange)
            printf("# exchange: both ranks send and receive the size at once, data they have just "
                   "written, the time of the slower; reduce: both add it (float32) to a buffer at "
                   "once\n");
        else
            printf("# latency: half the round trip; bandwidth: size / latency\n");
        if (over) printf("# oversubscribed: timings not meaningful (%s)\n", why);
        if (d5_comm_timeout(c) > 0)
            printf("# communication time-out: %g s (then the job ends)\n", d5_comm_timeout(c));
        if (o->exchange)
            printf("#\n# %12s  %-34s %15s %6s %12s\n", "size(B)", "exchange(us) median [95% CI]",
                   "bandwidth(GB/s)", "n", "reduce(us)");
        else
            printf("#\n# %12s  %-34s %15s %6s\n", "size(B)", "latency(us) median [95% CI]",
                   "bandwidth(GB/s)", "n");
    }
    pp_run p = {c, NULL, NULL, 0, rank, 0};
    size_t room = o->exchange ? 2 * sizes[n - 1] : sizes[n - 1];
    d5_status s = d5_comm_mem_alloc(c, room, &p.buf);
    if (s == D5_OK) memset(p.buf, 0, room);
    if (s == D5_OK && o->exchange) s = d5_comm_mem_alloc(c, sizes[n - 1], &p.in);
    if (s == D5_OK && p.in) memset(p.in, 0, sizes[n - 1]);
    double *med = calloc(2 * n, sizeof *med), *red = o->exchange && med ? med + n : NULL;
    if (s == D5_OK && !med) s = d5_error(D5_ERR_NOMEM, "out of memory");
    d5_results *res = NULL;
    if (s == D5_OK && rank == 0) s = d5_results_create(&res);
    double bad = s != D5_OK; /* every rank starts, or none */
    d5_status g = d5_comm_agree(c, &bad, 1, D5_COMM_MAX);
    if (s == D5_OK && g == D5_OK && bad > 0)
        s = d5_error(D5_ERR_BACKEND, "rank %d: another rank could not start", (int)rank);
    if (s == D5_OK) s = g;
    comm_measure_params mp = {o->time_s, o->exchange ? 1 : 0.5, !o->exchange, NULL};
    for (size_t i = 0; s == D5_OK && i < n; i++) {
        p.bytes = sizes[i];
        d5_measurement m, r;
        memset(&r, 0, sizeof r);
        s = comm_measure(c, o->exchange ? exchange : round_trip, &p, &mp, &m);
        if (s != D5_OK) break;
        med[i] = m.stats.median;
        if (red) {
            comm_measure_params rp = {o->time_s / 2, 1, 0, NULL};
            s = comm_measure(c, reduce, &p, &rp, &r);
            red[i] = s == D5_OK ? r.stats.median : 0;
            /* The exchange alone: the step less its sum (at least a tenth of the step). */
            med[i] = fmax(med[i] - red[i], 0.1 * med[i]);
        }
        if (s == D5_OK && rank == 0) {
            char t[64];
            comm_format_time(&m, t, sizeof t);
            printf("  %12llu  %-34s %15.3f %6zu", (unsigned long long)sizes[i], t,
                   m.stats.median > 0 ? (double)sizes[i] / m.stats.median : 0, m.n);
            if (red) printf(" %12.3f", red[i] * 1e-3);
            printf("\n");
            fflush(stdout);
            s = record(res, sizes[i], &m);
        }
        d5_measurement_free(&m);
        d5_measurement_free(&r);
    }
    if (s == D5_OK && o->fit) s = fit_all(o, rank, sizes, med, red, n, res);
    if (s == D5_OK && rank == 0) {
        if (over)
            fprintf(stderr, "d5 pingpong: warning: oversubscribed (%s): timings not meaningful\n",
                    why);
        s = d5_results_context(res, "command", "d5 pingpong");
        if (s == D5_OK) s = d5_results_context_number(res, "ranks", size);
        if (s == D5_OK) s = d5_results_context(res, "oversubscribed", over ? "yes" : "no");
        if (s == D5_OK) s = d5_results_context(res, "mode", o->exchange ? "exchange" : "pingpong");
        cli_outputs_params outputs = {.command = "pingpong"};
        if (s == D5_OK) s = cli_outputs_write(&o->out, &outputs, res);
    }
    d5_results_free(res);
    free(med);
    d5_comm_mem_free(c, p.buf);
    if (p.in) d5_comm_mem_free(c, p.in);
    return s == D5_OK ? D5_EXIT_OK : comm_fail(c, "pingpong", s);
}

int cmd_pingpong(int argc, char **argv)
{
    pp_opts o = {"0", "4M", {NULL, NULL, NULL, NULL, NULL}, 2, 0, 0, 0.5, 0};
    const cli_opt opts[] = {
        {"min-bytes", CLI_STRING, &o.min_bytes, "SIZE", "smallest message (-b; default 0)", 0, 0},
        {"max-bytes", CLI_STRING, &o.max_bytes, "SIZE",
         "largest message (-e; default 4M; K, M, G are powers of 1024)", 0, 0},
        {"factor", CLI_INT, &o.factor, "F", "size multiplier between rows (-f; default 2)", 2,
         1 << 20},
        {"fit", CLI_FLAG, &o.fit, NULL,
         "fit t(S) = alpha + beta * S: latency alpha, inverse bandwidth beta, R^2, and the "
         "fit's relative error at each size; then the piecewise model (a line per range of "
         "sizes, d5_piecewise_fit) and its error at each size",
         0, 0},
        {"exchange", CLI_FLAG, &o.exchange, NULL,
         "time a step of a ring allreduce instead: ranks 0 and 1 add what came in (float32), "
         "then send each other the size at once (the slower rank's time, less the sum's, timed "
         "too); with --fit the piecewise model of the exchange and the line of the sum, which "
         "d5_piecewise_ring_allreduce_s turns into a ring allreduce's time",
         0, 0},
        {"time", CLI_DOUBLE, &o.time_s, "S", "time budget per size in seconds (default 0.5)", 0.001,
         3600},
        CLI_OUTPUT_JSON(&o.out), /* written by rank 0 */
        {"comm-timeout", CLI_DOUBLE, &o.timeout_s, "S", COMM_TIMEOUT_HELP, 0, 1e6},
    };
    const cli_spec spec = {CLI_SPEC(
        "pingpong",
        "[-b SIZE] [-e SIZE] [-f F] [--fit] [--exchange] [--time S] [--json FILE] "
        "[--comm-timeout S]",
        "Measures the round trip of a message between ranks 0 and 1 of the job (mpirun -n 2\n"
        "d5 pingpong) for each size: latency, half the round trip, as a median with its 95% CI,\n"
        "and bandwidth, size / latency. With --fit, the alpha-beta model of a message's time\n"
        "and how far it is from each measurement (the model of d5 scaling --model-ranks), and\n"
        "the piecewise model, a line per range of sizes. With --exchange, a ring allreduce's\n"
        "step instead: both ranks send and receive at once, then add what came in; its\n"
        "piecewise fit predicts the ring allreduce (bench/allreduce/bench_alpha_beta.sh).",
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
