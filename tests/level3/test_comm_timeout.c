/* Time-outs of the communicator under mpirun (d5_comm_params.timeout_s).
 * Every backend still gives exact results under a time-out (small messages
 * and 1 MiB, blocking and not) and counts what it counted without one. On two
 * ranks or more, rank 1 comes late to an operation: the others get
 * D5_ERR_TIMEOUT after about the time-out, naming the operation, and every
 * later call fails at once; rank 1's operation still completes, because the
 * others' d5_comm_free gives theirs the time-out once more. */
#define _POSIX_C_SOURCE 200809L
#include "mpi_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;

static double now_s(void)
{
    return (double)d5_monotonic_ns() * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* The counters of (op, name) are the same on both communicators. */
static void same_counts(d5_comm *timed, d5_comm *plain, d5_comm_op op, const char *name,
                        const char *what)
{
    d5_comm_counter a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    CHECK_OK(d5_comm_counters(timed, op, name, &a));
    CHECK_OK(d5_comm_counters(plain, op, name, &b));
    CHECK(memcmp(&a, &b, sizeof a) == 0,
          "%s: counted %llu calls, %llu/%llu B, %llu/%llu msgs with a time-out; %llu, %llu/%llu, "
          "%llu/%llu without",
          what, (unsigned long long)a.calls, (unsigned long long)a.bytes_sent,
          (unsigned long long)a.bytes_recv, (unsigned long long)a.msgs_sent,
          (unsigned long long)a.msgs_recv, (unsigned long long)b.calls,
          (unsigned long long)b.bytes_sent, (unsigned long long)b.bytes_recv,
          (unsigned long long)b.msgs_sent, (unsigned long long)b.msgs_recv);
}

/* ---- Exact results under a time-out ---- */

static void allreduces(d5_comm *c, d5_comm *plain, const char *backend, void *buf)
{
    static const struct {
        size_t n;
        d5_dtype t;
    } cases[] = {{0, D5_F32},
                 {1, D5_F32},
                 {7, D5_F32},
                 {1000, D5_F32},
                 {1u << 18, D5_F32} /* 1 MiB */,
                 {1000, D5_F64},
                 {1u << 17, D5_F64}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t n = cases[k].n;
        d5_dtype t = cases[k].t;
        char what[96];
        snprintf(what, sizeof what, "%s allreduce of %zu %s", backend, n, d5_dtype_name(t));
        d5_comm_counters_reset(c);
        d5_comm_counters_reset(plain);
        mpi_check_fill(buf, n, t, rank);
        CHECK_OK(d5_comm_allreduce(c, buf, n, t, "grad"));
        CHECK(mpi_check_wrong(buf, n, t, size) == 0, "%s: %zu wrong", what,
              mpi_check_wrong(buf, n, t, size));
        mpi_check_fill(buf, n, t, rank);
        CHECK_OK(d5_comm_allreduce(plain, buf, n, t, "grad"));
        same_counts(c, plain, D5_COMM_OP_ALLREDUCE, "grad", what);
        /* Non-blocking, completed by a wait under the time-out. */
        mpi_check_fill(buf, n, t, rank);
        d5_comm_request *r = NULL;
        int32_t done = 0;
        CHECK_OK(d5_comm_iallreduce(c, buf, n, t, "igrad", &r));
        CHECK_OK(d5_comm_test(&r, &done));
        CHECK_OK(d5_comm_wait(&r));
        CHECK(r == NULL && mpi_check_wrong(buf, n, t, size) == 0, "%s, non-blocking: %zu wrong",
              what, mpi_check_wrong(buf, n, t, size));
    }
}

static void broadcasts(d5_comm *c, d5_comm *plain, const char *backend)
{
    size_t n = (1u << 20) / 4;
    int32_t *data = malloc(n * sizeof *data);
    if (!data) return;
    int root = size - 1;
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < n; i++) data[i] = rank == root ? (int32_t)(i * 3) : -1;
        CHECK_OK(d5_comm_broadcast(k ? plain : c, data, n, D5_I32, root, "weights"));
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += data[i] != (int32_t)(i * 3);
        CHECK(bad == 0, "%s broadcast of 1 MiB from rank %d: %zu wrong", backend, root, bad);
    }
    same_counts(c, plain, D5_COMM_OP_BROADCAST, "weights", backend);
    free(data);
}

/* Each rank sends to its right and receives from its left, both ways round:
 * a blocking receive against a non-blocking send, then a blocking send
 * against a receive posted before. */
static void point_to_point(d5_comm *c, d5_comm *plain, const char *backend)
{
    static const size_t counts[] = {16, (1u << 20) / 8};
    double *out = malloc((1u << 20)), *in = malloc((1u << 20));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (size_t k = 0; out && in && k < 2; k++) {
        size_t n = counts[k];
        for (int pass = 0; pass < 2; pass++) {
            d5_comm *x = pass ? plain : c;
            for (size_t i = 0; i < n; i++) out[i] = rank * 1e6 + (double)i, in[i] = -1;
            d5_comm_request *r = NULL;
            CHECK_OK(d5_comm_isend(x, out, n, D5_F64, right, 3, "halo", &r));
            CHECK_OK(d5_comm_recv(x, in, n, D5_F64, left, 3, "halo"));
            CHECK_OK(d5_comm_wait(&r));
            CHECK_OK(d5_comm_irecv(x, out, n, D5_F64, left, 4, "halo", &r));
            CHECK_OK(d5_comm_send(x, in, n, D5_F64, right, 4, "halo"));
            CHECK_OK(d5_comm_wait(&r));
            size_t bad = 0; /* what came round twice: from two ranks to the left */
            int from = (rank + 2 * size - 2) % size;
            for (size_t i = 0; i < n; i++) bad += out[i] != from * 1e6 + (double)i;
            CHECK(bad == 0, "%s point to point of %zu doubles: %zu wrong", backend, n, bad);
        }
    }
    same_counts(c, plain, D5_COMM_OP_SEND, "halo", backend);
    same_counts(c, plain, D5_COMM_OP_RECV, "halo", backend);
    free(out);
    free(in);
}

static void correct_under_timeout(const char *backend, void *buf)
{
    d5_comm *c = mpi_check_open(backend, 30), *plain = mpi_check_open(backend, 0);
    if (c && plain) {
        CHECK(d5_comm_timeout(c) == 30 && d5_comm_timeout(plain) == 0, "%s: time-outs %g, %g",
              backend, d5_comm_timeout(c), d5_comm_timeout(plain));
        allreduces(c, plain, backend, buf);
        broadcasts(c, plain, backend);
        point_to_point(c, plain, backend);
        CHECK_OK(d5_comm_barrier(c));
        double v[2] = {rank, 1};
        CHECK_OK(d5_comm_agree(c, v, 2, D5_COMM_SUM));
        CHECK(v[0] == size * (size - 1) / 2.0 && v[1] == size, "%s agree: %g %g", backend, v[0],
              v[1]);
    }
    d5_comm_free(plain);
    d5_comm_free(c);
}

/* ---- A rank that comes late ---- */

typedef struct late_case {
    const char *backend;
    const char *what; /* the operation, as the message names it */
    double timeout_s; /* the others wait this long */
    d5_status (*op)(d5_comm *c, void *buf, size_t n);
} late_case;

static d5_status op_allreduce(d5_comm *c, void *buf, size_t n)
{
    return d5_comm_allreduce(c, buf, n, D5_F32, "grad");
}

static d5_status op_wait(d5_comm *c, void *buf, size_t n)
{
    d5_comm_request *r = NULL;
    d5_status s = d5_comm_iallreduce(c, buf, n, D5_F32, "igrad", &r);
    return s == D5_OK ? d5_comm_wait(&r) : s;
}

static d5_status op_broadcast(d5_comm *c, void *buf, size_t n)
{
    return d5_comm_broadcast(c, buf, n, D5_F32, 1, "weights");
}

static d5_status op_barrier(d5_comm *c, void *buf, size_t n)
{
    (void)buf, (void)n;
    return d5_comm_barrier(c);
}

static d5_status op_agree(d5_comm *c, void *buf, size_t n)
{
    (void)n;
    return d5_comm_agree(c, buf, 2, D5_COMM_MAX);
}

/* Rank 0 receives from rank 1; the others have nothing to do. */
static d5_status op_recv(d5_comm *c, void *buf, size_t n)
{
    if (rank == 1) return d5_comm_send(c, buf, n, D5_F32, 0, 5, "halo");
    if (rank == 0) return d5_comm_recv(c, buf, n, D5_F32, 1, 5, "halo");
    return D5_OK;
}

static void late(const late_case *k, float *buf, size_t n)
{
    d5_comm *c = mpi_check_open(k->backend, k->timeout_s);
    if (!c) return;
    mpi_check_fill(buf, n, D5_F32, rank);
    CHECK_OK(d5_comm_barrier(c)); /* the ranks start together */
    int waits = rank != 1 && (k->op != op_recv || rank == 0);
    if (rank == 1) {
        sleep_s(k->timeout_s * 1.3);
        CHECK_OK(k->op(c, buf, n)); /* the others' d5_comm_free completes it */
    } else if (waits) {
        double t0 = now_s();
        d5_status s = k->op(c, buf, n);
        double took = now_s() - t0;
        const char *msg = d5_last_error();
        char me[32];
        snprintf(me, sizeof me, "rank %d: ", rank);
        CHECK(s == D5_ERR_TIMEOUT, "%s %s: %s (expected D5_ERR_TIMEOUT): %s", k->backend, k->what,
              d5_status_name(s), msg);
        /* Not before the time-out; how much later depends on the machine's
         * load, and a time-out at all means the late rank was not waited for. */
        CHECK(took >= k->timeout_s * 0.999,
              "%s %s: timed out after %.3f s, the time-out being %g s", k->backend, k->what, took,
              k->timeout_s);
        CHECK(strncmp(msg, me, strlen(me)) == 0 && strstr(msg, k->what) &&
                  strstr(msg, "did not complete within") &&
                  strstr(msg, "a rank has crashed, hangs or is far behind"),
              "%s: the message: '%s'", k->what, msg);
        /* From now on every call fails at once, naming the first: "not
         * started" (a barrier that waited, rank 1 still asleep, would time
         * out in its turn instead). */
        s = d5_comm_barrier(c);
        CHECK(s == D5_ERR_TIMEOUT && strstr(d5_last_error(), k->what) &&
                  strstr(d5_last_error(), "barrier: not started: ") &&
                  strstr(d5_last_error(), "earlier time-out"),
              "%s: a barrier after it: %s: '%s'", k->what, d5_status_name(s), d5_last_error());
        float more[4] = {0};
        CHECK_STATUS(d5_comm_allreduce(c, more, 4, D5_F32, NULL), D5_ERR_TIMEOUT);
        d5_comm_request *r = NULL;
        CHECK_STATUS(d5_comm_iallreduce(c, more, 4, D5_F32, NULL, &r), D5_ERR_TIMEOUT);
        CHECK(r == NULL, "a request after the time-out");
        CHECK(d5_comm_timeout(c) == k->timeout_s, "d5_comm_timeout: %g", d5_comm_timeout(c));
    }
    d5_comm_free(c);
    /* The operation that timed out completed in d5_comm_free. */
    if (waits && (k->op == op_allreduce || k->op == op_wait))
        CHECK(mpi_check_wrong(buf, n, D5_F32, size) == 0, "%s %s, completed by free: %zu wrong",
              k->backend, k->what, mpi_check_wrong(buf, n, D5_F32, size));
    if (rank == 0 && k->op == op_recv) {
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += buf[i] != (float)mpi_check_pattern(i, 1);
        CHECK(bad == 0, "recv completed by free: %zu wrong", bad);
    }
}

static void params(void)
{
    d5_comm_params p = d5_comm_default_params();
    CHECK(p.timeout_s == 0, "default time-out %g", p.timeout_s);
    d5_comm *c = NULL;
    p.timeout_s = -1;
    CHECK_STATUS(d5_comm_create(&p, &c), D5_ERR_INVALID);
    CHECK(strstr(d5_last_error(), "time-out -1 s"), "'%s'", d5_last_error());
    p.timeout_s = NAN;
    CHECK_STATUS(d5_comm_create(&p, &c), D5_ERR_INVALID);
    p.timeout_s = INFINITY;
    CHECK_STATUS(d5_comm_create(&p, &c), D5_ERR_INVALID);
    CHECK(d5_comm_timeout(NULL) == 0, "d5_comm_timeout(NULL)");
    /* A time-out on some ranks only: MPI's non-blocking collectives would
     * meet blocking ones. Refused on every rank. */
    if (size >= 2) {
        p.timeout_s = rank == 0 ? 5 : 0;
        CHECK_STATUS(d5_comm_create(&p, &c), D5_ERR_INVALID);
        CHECK(strstr(d5_last_error(), "some ranks only") && c == NULL, "'%s'", d5_last_error());
    }
}

int main(void)
{
    d5_comm *world = mpi_check_world("test_comm_timeout", 0);
    if (!world) return 1;
    rank = mpi_check_rank;
    size = d5_comm_size(world);
    void *buf = malloc(1u << 20);
    if (!buf) return 1;
    params();
    const char *backends[] = {"mpi", "ring", "recdbl"};
    for (int b = 0; b < 3; b++) correct_under_timeout(backends[b], buf);
    if (size >= 2) {
        const late_case cases[] = {
            {"mpi", "allreduce 'grad' (1000 float32)", 1.0, op_allreduce},
            {"ring", "allreduce 'grad' (1000 float32)", 1.0, op_allreduce},
            {"recdbl", "allreduce 'grad' (1000 float32)", 1.0, op_allreduce},
            {"ring", "wait on allreduce 'igrad' (1000 float32)", 0.6, op_wait},
            {"mpi", "wait on allreduce 'igrad' (1000 float32)", 0.6, op_wait},
            {"mpi", "broadcast 'weights' (1000 float32) from rank 1", 0.6, op_broadcast},
            {"recdbl", "broadcast 'weights' (1000 float32) from rank 1", 0.6, op_broadcast},
            {"mpi", "barrier did not", 0.6, op_barrier},
            {"ring", "agree (2 float64)", 0.6, op_agree},
            {"mpi", "recv 'halo' (1000 float32) from rank 1", 0.6, op_recv},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) late(&cases[i], buf, 1000);
    }
    free(buf);
    int rc = mpi_check_finish(world, "test_comm_timeout");
    d5_comm_free(world);
    return rc;
}
