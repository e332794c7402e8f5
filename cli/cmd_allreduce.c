/* d5 allreduce: the allreduce of a communicator backend across message sizes,
 * as nccl-tests' all_reduce_perf reports it (algbw, busbw, #wrong), with d5's
 * adaptive measurement: median time and its 95% CI. Rank 0 prints, and with
 * --trace writes one Perfetto trace of every rank's sizes and samples. */
#include "comm_cli.h"
#include "output_options.h"

#include <stdlib.h>
#include <string.h>

typedef struct ar_opts {
    const char *min_bytes, *max_bytes, *sizes, *comm, *dtype, *mpi_thread, *trace;
    cli_outputs out; /* --json */
    int factor, check, threads;
    double time_s, timeout_s;
} ar_opts;

typedef struct ar_run {
    d5_comm *comm;
    void *buf; /* backend memory */
    size_t count;
    d5_dtype dtype;
} ar_run;

static d5_status one_allreduce(void *ctx)
{
    ar_run *a = ctx;
    return d5_comm_allreduce(a->comm, a->buf, a->count, a->dtype, "allreduce");
}

/* Small integers, so that sums are exact; docs/level3.md. */
static double pattern(size_t i, int32_t r)
{
    return (double)((i * 7 + (size_t)r * 13) % 61) - 30;
}

/* One allreduce of the check pattern; every element against the exact sum.
 * Returns the wrong elements over every rank in *wrong. */
static d5_status check(ar_run *a, void *host, double *wrong)
{
    int32_t rank = d5_comm_rank(a->comm), size = d5_comm_size(a->comm);
    size_t e = d5_dtype_size(a->dtype);
    for (size_t i = 0; i < a->count; i++) {
        if (a->dtype == D5_F32)
            ((float *)host)[i] = (float)pattern(i, rank);
        else
            ((double *)host)[i] = pattern(i, rank);
    }
    d5_status s = d5_comm_mem_upload(a->comm, a->buf, host, a->count * e);
    if (s == D5_OK) s = d5_comm_allreduce(a->comm, a->buf, a->count, a->dtype, "check");
    if (s == D5_OK) s = d5_comm_mem_download(a->comm, host, a->buf, a->count * e);
    if (s == D5_ERR_TIMEOUT) return s; /* the communicator takes no more calls */
    double bad = 0;
    for (size_t i = 0; s == D5_OK && i < a->count; i++) {
        double want = 0, got = a->dtype == D5_F32 ? ((float *)host)[i] : ((double *)host)[i];
        for (int32_t r = 0; r < size; r++) want += pattern(i, r);
        bad += got != want;
    }
    /* Zeros again for the sizes still to be timed. */
    memset(host, 0, a->count * e);
    if (s == D5_OK) s = d5_comm_mem_upload(a->comm, a->buf, host, a->count * e);
    double v[2] = {s != D5_OK, bad};
    d5_status g = d5_comm_agree(a->comm, v, 2, D5_COMM_SUM);
    if (s == D5_OK && g == D5_OK && v[0] > 0)
        s = d5_error(D5_ERR_BACKEND, "rank %d: the check failed on another rank", (int)rank);
    *wrong = v[1];
    return s != D5_OK ? s : g;
}

typedef struct ar_row {
    d5_measurement m;
    double wrong;        /* -1: not checked */
    double sent, recv;   /* bytes per operation, the most loaded rank */
    double algbw, busbw; /* GB/s */
} ar_row;

/* After the measurement of a size: the bytes of the most loaded rank, the
 * bandwidths and, with --check, the wrong elements. */
static d5_status finish_size(ar_run *a, void *host, const ar_opts *o, ar_row *row, int32_t p)
{
    d5_comm_counter k = {0};
    if (d5_comm_counters(a->comm, D5_COMM_OP_ALLREDUCE, "allreduce", &k) != D5_OK || !k.calls)
        k.calls = 1;
    double v[2] = {(double)k.bytes_sent / (double)k.calls, (double)k.bytes_recv / (double)k.calls};
    d5_status s = d5_comm_agree(a->comm, v, 2, D5_COMM_MAX);
    row->sent = v[0];
    row->recv = v[1];
    double bytes = (double)(a->count * d5_dtype_size(a->dtype)), t = row->m.stats.median;
    row->algbw = t > 0 ? bytes / t : 0;
    row->busbw = row->algbw * 2.0 * (p - 1) / p;
    row->wrong = -1;
    if (s == D5_OK && o->check) s = check(a, host, &row->wrong);
    if (s != D5_OK) d5_measurement_free(&row->m);
    return s;
}

/* With --trace: a region per size ("64 KiB") around its measurement and
 * check, and the batches and agreements of its samples (comm_measure). */
static d5_status run_size(ar_run *a, void *host, const ar_opts *o, d5_timer *trace, ar_row *row)
{
    int32_t p = d5_comm_size(a->comm);
    comm_measure_params mp = {o->time_s, 1.0, 0, trace};
    char key[32];
    comm_format_bytes(a->count * d5_dtype_size(a->dtype), key, sizeof key);
    if (trace && d5_timer_start(trace, key) != D5_OK) trace = NULL;
    d5_comm_counters_reset(a->comm);
    d5_status s = comm_measure(a->comm, one_allreduce, a, &mp, &row->m);
    if (s == D5_OK) s = finish_size(a, host, o, row, p);
    if (trace && d5_timer_end(trace, key) != D5_OK) {
        /* The trace misses this size's region. */
    }
    return s;
}

static void print_header(void)
{
    printf("#\n# %12s %12s %7s  %-34s %11s %11s %7s\n", "size(B)", "count", "type",
           "time(us) median [95% CI]", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
}

static void print_row(const ar_run *a, const ar_row *r)
{
    char t[64], wrong[24];
    comm_format_time(&r->m, t, sizeof t);
    if (r->wrong < 0)
        snprintf(wrong, sizeof wrong, "N/A");
    else
        snprintf(wrong, sizeof wrong, "%.0f", r->wrong);
    printf("  %12zu %12zu %7s  %-34s %11.3f %11.3f %7s\n", a->count * d5_dtype_size(a->dtype),
           a->count, a->dtype == D5_F32 ? "float" : "double", t, r->algbw, r->busbw, wrong);
    fflush(stdout);
}

static d5_status record(d5_results *res, const ar_opts *o, const ar_run *a, const ar_row *r)
{
    char name[96];
    snprintf(name, sizeof name, "allreduce/%s/%s/%zu", o->comm, d5_dtype_name(a->dtype),
             a->count * d5_dtype_size(a->dtype));
    size_t idx;
    d5_status s = d5_results_add(res, name, &r->m, "ns", &idx);
    if (s == D5_OK) s = d5_results_counter(res, idx, "algbw", r->algbw, "GB/s");
    if (s == D5_OK) s = d5_results_counter(res, idx, "busbw", r->busbw, "GB/s");
    if (s == D5_OK) s = d5_results_counter(res, idx, "bytes_sent", r->sent, "B");
    if (s == D5_OK) s = d5_results_counter(res, idx, "bytes_recv", r->recv, "B");
    if (s == D5_OK && r->wrong >= 0) s = d5_results_counter(res, idx, "wrong", r->wrong, "");
    return s;
}

static d5_status context(d5_results *res, d5_comm *c, const ar_opts *o, int over, const char *why)
{
    d5_comm_info info;
    d5_comm_info_get(c, &info);
    d5_status s = d5_results_context(res, "command", "d5 allreduce");
    if (s == D5_OK) s = d5_results_context(res, "comm_backend", info.backend);
    if (s == D5_OK) s = d5_results_context(res, "dtype", o->dtype);
    if (s == D5_OK) s = d5_results_context_number(res, "ranks", info.size);
    if (s == D5_OK) s = d5_results_context_number(res, "local_ranks", info.local_size);
    if (s == D5_OK) s = d5_results_context(res, "mpi_library", info.library);
    if (s == D5_OK)
        s = d5_results_context(res, "counts", info.exact_counts ? "messages" : "payload");
    if (s == D5_OK) s = d5_results_context(res, "oversubscribed", over ? "yes" : "no");
    if (s == D5_OK && over)
        s = d5_results_context(res, "oversubscribed_detail",
                               "oversubscribed: timings not meaningful");
    if (s == D5_OK) s = d5_results_context(res, "ranks_and_cpus", why);
    if (s == D5_OK) s = d5_results_context_number(res, "comm_timeout_s", d5_comm_timeout(c));
    if (s == D5_OK) s = cli_contention_context(res);
    return s;
}

static int parse_dtype(const char *v, d5_dtype *t)
{
    if (strcmp(v, "f32") == 0 || strcmp(v, "float32") == 0 || strcmp(v, "float") == 0)
        *t = D5_F32;
    else if (strcmp(v, "f64") == 0 || strcmp(v, "float64") == 0 || strcmp(v, "double") == 0)
        *t = D5_F64;
    else
        return 0;
    return 1;
}

/* Checks --comm against the backend table: unknown is bad usage. */
static int check_comm(const char *name)
{
    char list[128] = "";
    size_t used = 0;
    for (size_t i = 0; i < d5_comm_backend_count(); i++) {
        d5_comm_backend_info b;
        if (d5_comm_backend_at(i, &b) != D5_OK) continue;
        if (strcmp(b.name, name) == 0) return -1;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", b.name);
    }
    fprintf(stderr, "d5 allreduce: --comm %s: no such communicator backend (backends: %s)\n", name,
            list);
    return D5_EXIT_USAGE;
}

/* --trace: one Perfetto trace of every rank, when the sizes went well on
 * every rank (otherwise some would not come to the merge). */
static d5_status write_trace(d5_comm *c, d5_timer *trace, const char *path, d5_status s)
{
    double bad = s != D5_OK;
    if (s == D5_ERR_TIMEOUT) return s;
    d5_status g = d5_comm_agree(c, &bad, 1, D5_COMM_MAX);
    if (s != D5_OK || g != D5_OK || bad > 0) return s != D5_OK ? s : g;
    s = d5_comm_trace_merge(c, trace, path);
    if (s == D5_OK && d5_comm_rank(c) == 0)
        printf("# trace: %s (a process per rank; ui.perfetto.dev opens it)\n", path);
    return s;
}

static int sweep(d5_comm *c, const ar_opts *o, const cli_spec *spec, d5_dtype t,
                 const uint64_t *sizes, size_t nsizes)
{
    int32_t rank = d5_comm_rank(c), size = d5_comm_size(c);
    size_t e = d5_dtype_size(t), maxb = 0;
    for (size_t i = 0; i < nsizes; i++) maxb = sizes[i] / e * e > maxb ? sizes[i] / e * e : maxb;
    char why[96];
    int over = comm_oversubscribed(c, why, sizeof why);
    int rc = -1;
    if (rank == 0) {
        cli_echo(stdout, spec);
        rc = cli_threads_apply("allreduce", o->threads);
        if (rc < 0 && !cli_output_ok("allreduce", "--trace", o->trace, 0)) rc = D5_EXIT_INPUT;
    } else if (d5_threads_set(o->threads) != D5_OK) {
        rc = D5_EXIT_CHECK;
    }
    d5_comm_info info;
    d5_comm_info_get(c, &info);
    if (rank == 0) {
        static const char *const levels[] = {"single", "funneled", "serialized", "multiple"};
        printf("# ranks: %d (%s); backend %s; %s, thread level %s\n", (int)size, why, info.backend,
               info.library, levels[info.thread_level]);
        printf("# counters: %s\n",
               info.exact_counts ? "every message d5 posts" : "the payload handed to the library");
        if (over) printf("# oversubscribed: timings not meaningful (%s)\n", why);
        if (d5_comm_timeout(c) > 0)
            printf("# communication time-out: %g s (then the job ends)\n", d5_comm_timeout(c));
        else if (o->timeout_s > 0)
            printf("# communication time-out: ignored by the %s backend\n", info.backend);
    }
    ar_run a = {c, NULL, 0, t};
    void *host = NULL;
    /* Timed allreduces sum zeros (no denormals, no overflow); --check fills
     * its own pattern. */
    d5_status s = d5_comm_mem_alloc(c, maxb, &a.buf);
    if (s == D5_OK && !(host = calloc(maxb ? maxb : 1, 1)))
        s = d5_error(D5_ERR_NOMEM, "rank %d: out of memory for %zu bytes", (int)rank, maxb);
    if (s == D5_OK) s = d5_comm_mem_upload(c, a.buf, host, maxb);
    d5_timer *trace = NULL;
    d5_timer_params tp = d5_timer_default_params();
    tp.name = "d5 allreduce";
    if (s == D5_OK && o->trace) s = d5_timer_create(&tp, &trace);
    double ok[2] = {s != D5_OK || rc >= 0, 0};
    d5_status g = d5_comm_agree(c, ok, 1, D5_COMM_MAX);
    if (s == D5_OK && g == D5_OK && ok[0] > 0)
        s = d5_error(D5_ERR_BACKEND, "rank %d: another rank could not start", (int)rank);
    if (s == D5_OK) s = g;
    d5_results *res = NULL;
    if (s == D5_OK && rank == 0) s = d5_results_create(&res);
    if (s == D5_OK && rank == 0) print_header();
    double wrong = 0;
    uint64_t last = UINT64_MAX;
    for (size_t i = 0; s == D5_OK && i < nsizes; i++) {
        a.count = sizes[i] / e;
        if (a.count * e == last) continue;
        last = a.count * e;
        ar_row row;
        s = run_size(&a, host, o, trace, &row);
        if (s != D5_OK) break;
        if (rank == 0) {
            print_row(&a, &row);
            cli_contention_note(&row.m);
            s = record(res, o, &a, &row);
        }
        if (row.wrong > 0) wrong += row.wrong;
        d5_measurement_free(&row.m);
    }
    if (o->trace) s = write_trace(c, trace, o->trace, s);
    d5_timer_free(trace);
    if (rank == 0 && rc < 0) {
        cli_contention_end("allreduce", NULL);
        if (over)
            fprintf(stderr,
                    "d5 allreduce: warning: oversubscribed (%s): timings not "
                    "meaningful\n",
                    why);
        if (s == D5_OK) s = context(res, c, o, over, why);
        cli_outputs_params outputs = {.command = "allreduce"};
        if (s == D5_OK) s = cli_outputs_write(&o->out, &outputs, res);
    }
    d5_results_free(res);
    free(host);
    d5_comm_mem_free(c, a.buf);
    if (rc >= 0) return rc;
    if (s != D5_OK) return comm_fail(c, "allreduce", s);
    if (wrong > 0) {
        if (rank == 0) fprintf(stderr, "d5 allreduce: %.0f elements wrong\n", wrong);
        return D5_EXIT_CHECK;
    }
    return D5_EXIT_OK;
}

int cmd_allreduce(int argc, char **argv)
{
    ar_opts o = {"8", "64M", NULL, "mpi", "f32", "single", NULL, {NULL, NULL, NULL, NULL, NULL},
                 2,   0,     0,    1.0,   0};
    const cli_opt opts[] = {
        {"min-bytes", CLI_STRING, &o.min_bytes, "SIZE", "smallest message (-b; default 8)", 0, 0},
        {"max-bytes", CLI_STRING, &o.max_bytes, "SIZE",
         "largest message (-e; default 64M; K, M, G are powers of 1024)", 0, 0},
        {"factor", CLI_INT, &o.factor, "F", "size multiplier between rows (-f; default 2)", 2,
         1 << 20},
        {"sizes", CLI_STRING, &o.sizes, "LIST",
         "deepbench (bench/deepbench/allreduce.csv) or a CSV file with a size_floats column, "
         "instead of -b/-e/-f",
         0, 0},
        {"comm", CLI_STRING, &o.comm, "NAME",
         "communicator backend: mpi (default), ring, recdbl, "
         "nccl",
         0, 0},
        {"dtype", CLI_STRING, &o.dtype, "T", "f32 (default) or f64", 0, 0},
        {"mpi-thread", CLI_STRING, &o.mpi_thread, "LEVEL",
         "thread support asked of MPI: single (default: the command calls MPI from one thread "
         "and runs no parallel region), funneled, serialized, multiple",
         0, 0},
        {"check", CLI_FLAG, &o.check, NULL,
         "verify every element of one more allreduce against the exact sum (#wrong)", 0, 0},
        {"time", CLI_DOUBLE, &o.time_s, "S", "time budget per size in seconds (default 1)", 0.001,
         3600},
        CLI_OUTPUT_JSON(&o.out), /* written by rank 0 */
        {"trace", CLI_STRING, &o.trace, "FILE",
         "write one Chrome/Perfetto trace of every rank (rank 0): a region per size, its batches "
         "and their agreements, on one time line",
         0, 0},
        {"comm-timeout", CLI_DOUBLE, &o.timeout_s, "S", COMM_TIMEOUT_HELP, 0, 1e6},
        {"threads", CLI_INT, &o.threads, "N", CLI_THREADS_HELP, 0, 4096},
    };
    const cli_spec spec = {CLI_SPEC(
        "allreduce",
        "[-b SIZE] [-e SIZE] [-f F] [--sizes deepbench|FILE] [--comm mpi|ring|recdbl|nccl] "
        "[--dtype f32|f64] [--check] [--time S] [--json FILE] [--trace FILE] [--comm-timeout S]",
        "Times the in-place sum allreduce of a communicator backend across message sizes, on\n"
        "every rank of the job (mpirun -n P d5 allreduce; alone it is a job of one rank).\n"
        "Each sample times a batch of allreduces and takes the slowest rank's time, agreed by\n"
        "all ranks, which therefore take the same samples. Printed by rank 0, as nccl-tests\n"
        "does: size, count, type, median time with its 95% CI, algbw = size / time and\n"
        "busbw = algbw * 2(P-1)/P, and with --check the elements that differ from the exact\n"
        "sum. Ranks beyond the node's CPUs are reported as oversubscribed: such timings are\n"
        "not meaningful.",
        opts)};
    int rc = comm_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    d5_dtype t;
    if (!parse_dtype(o.dtype, &t)) {
        fprintf(stderr, "d5 allreduce: --dtype %s: expected f32 or f64\n", o.dtype);
        return D5_EXIT_USAGE;
    }
    static const char *const levels[] = {"single", "funneled", "serialized", "multiple"};
    int32_t level = -1;
    for (int32_t i = 0; i < 4; i++)
        if (strcmp(o.mpi_thread, levels[i]) == 0) level = i;
    if (level < 0) {
        fprintf(stderr,
                "d5 allreduce: --mpi-thread %s: expected single, funneled, serialized or "
                "multiple\n",
                o.mpi_thread);
        return D5_EXIT_USAGE;
    }
    uint64_t lo, hi;
    if (!comm_parse_bytes(o.min_bytes, &lo) || !comm_parse_bytes(o.max_bytes, &hi)) {
        fprintf(stderr,
                "d5 allreduce: --min-bytes %s / --max-bytes %s: expected sizes such as "
                "8, 1K, 64M\n",
                o.min_bytes, o.max_bytes);
        return D5_EXIT_USAGE;
    }
    if ((rc = check_comm(o.comm)) >= 0) return rc;
    uint64_t *sizes = NULL;
    size_t nsizes = 0;
    d5_status s;
    if (o.sizes) {
        if ((s = comm_sizes_csv(o.sizes, d5_dtype_size(t), &sizes, &nsizes)) != D5_OK)
            return cli_fail("allreduce", s);
    } else if ((s = comm_sizes_geometric(lo, hi, o.factor, &sizes, &nsizes)) != D5_OK) {
        fprintf(stderr, "d5 allreduce: %s\n", d5_last_error());
        return D5_EXIT_USAGE;
    }

    d5_comm_params cp = d5_comm_default_params();
    cp.backend = o.comm;
    cp.thread_level = level;
    cp.timeout_s = o.timeout_s;
    d5_comm *c = NULL;
    s = d5_comm_create(&cp, &c);
    if (s != D5_OK) {
        free(sizes);
        return cli_fail("allreduce", s);
    }
    rc = sweep(c, &o, &spec, t, sizes, nsizes);
    d5_comm_free(c);
    free(sizes);
    return rc;
}
