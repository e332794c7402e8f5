/* The communicator under mpirun (any number of ranks): allreduce of every
 * backend against the exact sum, byte counters against the formulas of
 * docs/level3.md, broadcast, point to point, non-blocking forms, agreement,
 * timer regions, and the errors. */
#include "mpi_check.h"

#include <stdlib.h>
#include <string.h>

static int rank, size;

/* ---- The formulas (docs/level3.md), written independently of the library ---- */

typedef struct traffic {
    uint64_t sent, recv, msgs_sent, msgs_recv;
} traffic;

static traffic allreduce_traffic(const char *backend, size_t n, size_t e)
{
    traffic t = {0, 0, 0, 0};
    uint64_t s = (uint64_t)n * e, p = (uint64_t)size;
    if (size == 1 || n == 0) return t;
    if (strcmp(backend, "ring") == 0) {
        uint64_t chunk = (n + p - 1) / p;
        t.sent = t.recv = 2 * (p - 1) * chunk * e;
        t.msgs_sent = t.msgs_recv = 2 * (p - 1);
    } else if (strcmp(backend, "recdbl") == 0) {
        int pof2 = 1, steps = 0;
        while (pof2 * 2 <= size) pof2 *= 2, steps++;
        int rem = size - pof2;
        uint64_t m = rank < 2 * rem ? (rank % 2 ? (uint64_t)steps + 1 : 1) : (uint64_t)steps;
        t.sent = t.recv = m * s;
        t.msgs_sent = t.msgs_recv = m;
    } else { /* the payload of a delegated collective */
        t.sent = t.recv = s;
        t.msgs_sent = t.msgs_recv = 1;
    }
    return t;
}

static traffic broadcast_traffic(const char *backend, size_t n, size_t e, int root)
{
    traffic t = {0, 0, 0, 0};
    uint64_t s = (uint64_t)n * e;
    if (size == 1 || n == 0) return t;
    if (strcmp(backend, "mpi") == 0) {
        if (rank == root)
            t.sent = s, t.msgs_sent = 1;
        else
            t.recv = s, t.msgs_recv = 1;
        return t;
    }
    int v = (rank - root + size) % size, low = v ? (v & -v) : size;
    if (v) t.recv = s, t.msgs_recv = 1;
    for (int m = 1; m < low && v + m < size; m <<= 1) t.sent += s, t.msgs_sent++;
    return t;
}

static void check_traffic(d5_comm *c, d5_comm_op op, const char *name, traffic want,
                          const char *what)
{
    d5_comm_counter k;
    memset(&k, 0, sizeof k);
    CHECK_OK(d5_comm_counters(c, op, name, &k));
    CHECK(k.bytes_sent == want.sent && k.bytes_recv == want.recv && k.msgs_sent == want.msgs_sent &&
              k.msgs_recv == want.msgs_recv,
          "%s: counted sent %llu B / %llu msgs, recv %llu B / %llu msgs; formula %llu / %llu, "
          "%llu / %llu",
          what, (unsigned long long)k.bytes_sent, (unsigned long long)k.msgs_sent,
          (unsigned long long)k.bytes_recv, (unsigned long long)k.msgs_recv,
          (unsigned long long)want.sent, (unsigned long long)want.msgs_sent,
          (unsigned long long)want.recv, (unsigned long long)want.msgs_recv);
}

/* ---- Allreduce ---- */

static void allreduce_case(d5_comm *c, const char *backend, size_t n, d5_dtype t, void *buf)
{
    char what[96];
    snprintf(what, sizeof what, "%s allreduce of %zu %s", backend, n, d5_dtype_name(t));
    d5_comm_counters_reset(c);
    mpi_check_fill(buf, n, t, rank);
    CHECK_OK(d5_comm_allreduce(c, buf, n, t, "grad"));
    size_t bad = mpi_check_wrong(buf, n, t, size);
    CHECK(bad == 0, "%s: %zu elements wrong", what, bad);
    check_traffic(c, D5_COMM_OP_ALLREDUCE, "grad", allreduce_traffic(backend, n, d5_dtype_size(t)),
                  what);
    d5_comm_counter k;
    CHECK_OK(d5_comm_counters(c, D5_COMM_OP_ALL, NULL, &k));
    CHECK(k.calls == 1, "%s: %llu calls counted", what, (unsigned long long)k.calls);

    /* The non-blocking form, advanced by test, then completed by wait. */
    mpi_check_fill(buf, n, t, rank);
    d5_comm_request *r = NULL;
    CHECK_OK(d5_comm_iallreduce(c, buf, n, t, "igrad", &r));
    int32_t done = 0;
    for (int i = 0; i < 3 && r && !done; i++) CHECK_OK(d5_comm_test(&r, &done));
    CHECK_OK(d5_comm_wait(&r));
    CHECK(r == NULL, "%s: wait left the request", what);
    bad = mpi_check_wrong(buf, n, t, size);
    CHECK(bad == 0, "%s, non-blocking: %zu elements wrong", what, bad);
    check_traffic(c, D5_COMM_OP_ALLREDUCE, "igrad", allreduce_traffic(backend, n, d5_dtype_size(t)),
                  what);
}

static void backend_allreduce(d5_comm *c, const char *backend, void *buf)
{
    static const size_t counts[] = {0, 1, 7, 1000, 1u << 20};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
            allreduce_case(c, backend, counts[i], k ? D5_F64 : D5_F32, buf);
    /* One large case: 64 MiB of float32. */
    allreduce_case(c, backend, (64u << 20) / 4, D5_F32, buf);
}

/* ---- Broadcast, point to point ---- */

static void backend_broadcast(d5_comm *c, const char *backend)
{
    int32_t data[1000];
    for (int root = 0; root<size; root += size> 2 ? size - 1 : 1) {
        for (int i = 0; i < 1000; i++) data[i] = rank == root ? i * 3 + root : -1;
        d5_comm_counters_reset(c);
        CHECK_OK(d5_comm_broadcast(c, data, 1000, D5_I32, root, "weights"));
        int bad = 0;
        for (int i = 0; i < 1000; i++) bad += data[i] != i * 3 + root;
        CHECK(bad == 0, "%s broadcast from %d: %d elements wrong", backend, root, bad);
        char what[64];
        snprintf(what, sizeof what, "%s broadcast from rank %d", backend, root);
        check_traffic(c, D5_COMM_OP_BROADCAST, "weights", broadcast_traffic(backend, 1000, 4, root),
                      what);
    }
}

static void backend_p2p(d5_comm *c, const char *backend)
{
    double out[64], in[64];
    for (int i = 0; i < 64; i++) out[i] = rank * 100 + i, in[i] = -1;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    d5_comm_counters_reset(c);
    d5_comm_request *r = NULL;
    CHECK_OK(d5_comm_isend(c, out, 64, D5_F64, right, 7, "halo", &r));
    CHECK_OK(d5_comm_recv(c, in, 64, D5_F64, left, 7, "halo"));
    CHECK_OK(d5_comm_wait(&r));
    int bad = 0;
    for (int i = 0; i < 64; i++) bad += in[i] != left * 100 + i;
    CHECK(bad == 0, "%s isend/recv: %d elements wrong", backend, bad);
    /* Blocking send against a non-blocking receive of a larger buffer. */
    CHECK_OK(d5_comm_irecv(c, in, 64, D5_F64, left, 8, "halo", &r));
    CHECK_OK(d5_comm_send(c, out, 32, D5_F64, right, 8, "halo"));
    CHECK_OK(d5_comm_wait(&r));
    traffic want = {64 * 8 + 32 * 8, 64 * 8 + 32 * 8, 2, 2};
    d5_comm_counter k;
    CHECK_OK(d5_comm_counters(c, D5_COMM_OP_SEND, "halo", &k));
    CHECK(k.bytes_sent == want.sent && k.msgs_sent == 2, "%s sends: %llu B in %llu", backend,
          (unsigned long long)k.bytes_sent, (unsigned long long)k.msgs_sent);
    CHECK_OK(d5_comm_counters(c, D5_COMM_OP_RECV, "halo", &k));
    CHECK(k.bytes_recv == want.recv && k.msgs_recv == 2, "%s receives: %llu B in %llu", backend,
          (unsigned long long)k.bytes_recv, (unsigned long long)k.msgs_recv);
}

/* ---- Timer, agreement, errors ---- */

static size_t key_count(d5_timer *t, const char *key)
{
    d5_timer_id id;
    if (d5_timer_key(t, key, &id) != D5_OK) return (size_t)-1;
    return d5_timer_count(t, id, D5_TIMER_CPU);
}

static void timer_regions(d5_comm *c)
{
    d5_timer *t = NULL;
    CHECK_OK(d5_timer_create(NULL, &t));
    if (!t) return;
    CHECK_OK(d5_comm_attach_timer(c, t));
    float v[16] = {0};
    CHECK_OK(d5_comm_allreduce(c, v, 16, D5_F32, NULL));
    CHECK_OK(d5_comm_broadcast(c, v, 16, D5_F32, 0, NULL));
    d5_comm_request *r = NULL;
    CHECK_OK(d5_comm_iallreduce(c, v, 16, D5_F32, NULL, &r));
    CHECK_OK(d5_comm_wait(&r));
    CHECK(key_count(t, D5_KEY_ALLREDUCE) == 1, "ALLREDUCE regions: %zu",
          key_count(t, D5_KEY_ALLREDUCE));
    CHECK(key_count(t, D5_KEY_BROADCAST) == 1, "BROADCAST regions: %zu",
          key_count(t, D5_KEY_BROADCAST));
    CHECK(key_count(t, D5_KEY_WAIT) == 1, "WAIT regions: %zu", key_count(t, D5_KEY_WAIT));
    CHECK(key_count(t, D5_KEY_COMM) == 4, "COMM regions: %zu", key_count(t, D5_KEY_COMM));
    /* A COMM region the caller holds covers the operations inside it. */
    CHECK_OK(d5_timer_start(t, D5_KEY_COMM));
    CHECK_OK(d5_comm_allreduce(c, v, 16, D5_F32, NULL));
    CHECK_OK(d5_timer_end(t, D5_KEY_COMM));
    CHECK(key_count(t, D5_KEY_COMM) == 5, "COMM regions with the caller's: %zu",
          key_count(t, D5_KEY_COMM));
    CHECK(key_count(t, D5_KEY_ALLREDUCE) == 2, "ALLREDUCE regions: %zu",
          key_count(t, D5_KEY_ALLREDUCE));
    CHECK_OK(d5_comm_attach_timer(c, NULL));
    d5_timer_free(t);
}

static void agreement(d5_comm *c)
{
    double v[3] = {rank + 1, rank + 1, rank + 1};
    CHECK_OK(d5_comm_agree(c, v, 1, D5_COMM_SUM));
    CHECK_OK(d5_comm_agree(c, v + 1, 1, D5_COMM_MAX));
    CHECK_OK(d5_comm_agree(c, v + 2, 1, D5_COMM_MIN));
    CHECK(v[0] == size * (size + 1) / 2.0 && v[1] == size && v[2] == 1,
          "agree: sum %g, max %g, min %g", v[0], v[1], v[2]);
    CHECK_OK(d5_comm_barrier(c));
}

static void errors(d5_comm *c)
{
    int32_t ints[4] = {0};
    CHECK_STATUS(d5_comm_allreduce(c, ints, 4, D5_I32, "ints"), D5_ERR_UNSUPPORTED);
    CHECK(strstr(d5_last_error(), "rank ") && strstr(d5_last_error(), "int32"),
          "allreduce of int32: '%s'", d5_last_error());
    CHECK_STATUS(d5_comm_broadcast(c, ints, 4, D5_I32, size, NULL), D5_ERR_INVALID);
    CHECK_STATUS(d5_comm_send(c, ints, 4, D5_I32, 0, -1, NULL), D5_ERR_INVALID);
    CHECK_STATUS(d5_comm_send(c, ints, 4, D5_I32, 0, D5_COMM_TAG_MAX + 1, NULL), D5_ERR_INVALID);
    CHECK_STATUS(d5_comm_recv(c, ints, 4, D5_I32, -1, 0, NULL), D5_ERR_INVALID);
    CHECK_STATUS(d5_comm_allreduce(c, NULL, 4, D5_F32, NULL), D5_ERR_INVALID);
    CHECK_STATUS(d5_comm_agree(c, NULL, 0, (d5_comm_reduce)9), D5_ERR_INVALID);
    d5_comm_counter k;
    CHECK_STATUS(d5_comm_counters(c, D5_COMM_OP_ALL, "never-used", &k), D5_ERR_NOTFOUND);
    CHECK_STATUS(d5_comm_counters(c, (d5_comm_op)42, NULL, &k), D5_ERR_INVALID);
    CHECK(strcmp(d5_comm_op_name(D5_COMM_OP_BROADCAST), "broadcast") == 0, "op name");
}

/* ---- nccl ---- */

/* nccl's allreduce of device buffers (d5_comm_mem_alloc) of both types,
 * downloaded and compared with the exact sum. */
static void nccl_allreduce(d5_comm *c)
{
    const size_t n = 4099;
    const d5_dtype types[] = {D5_F32, D5_F64};
    double host[4099];
    for (int k = 0; k < 2; k++) {
        size_t bytes = n * d5_dtype_size(types[k]);
        void *dev = NULL;
        CHECK_OK(d5_comm_mem_alloc(c, bytes, &dev));
        if (!dev) continue;
        mpi_check_fill(host, n, types[k], rank);
        CHECK_OK(d5_comm_mem_upload(c, dev, host, bytes));
        CHECK_OK(d5_comm_allreduce(c, dev, n, types[k], "nccl device buffer"));
        memset(host, 0, sizeof host);
        CHECK_OK(d5_comm_mem_download(c, host, dev, bytes));
        size_t bad = mpi_check_wrong(host, n, types[k], size);
        CHECK(bad == 0, "nccl: allreduce of %zu %s on the device: %zu wrong", n,
              d5_dtype_name(types[k]), bad);
        d5_comm_mem_free(c, dev);
    }
}

/* ---- Creation ---- */

static void creation(void)
{
    d5_comm_params p = d5_comm_default_params();
    d5_comm *c = NULL;
    p.backend = "bogus";
    CHECK_STATUS(d5_comm_create(&p, &c), D5_ERR_UNSUPPORTED);
    CHECK(strstr(d5_last_error(), "'bogus'") && strstr(d5_last_error(), "mpi, ring, recdbl, nccl"),
          "unknown backend: '%s'", d5_last_error());
    /* nccl: run where every rank has a CUDA device; otherwise refused, and
     * the device check is skipped (said on rank 0). */
    int built = 0;
    for (size_t i = 0; i < d5_comm_backend_count(); i++) {
        d5_comm_backend_info b;
        CHECK_OK(d5_comm_backend_at(i, &b));
        if (strcmp(b.name, "nccl") == 0) built = b.built;
    }
    p.backend = "nccl";
    d5_status s = d5_comm_create(&p, &c);
    if (s == D5_OK) { /* a machine with a GPU on every rank */
        nccl_allreduce(c);
        d5_comm_free(c);
    } else if (built) {
        CHECK(s == D5_ERR_NODEVICE && strstr(d5_last_error(), "not run: no CUDA device"),
              "nccl without a device: %s: '%s'", d5_status_name(s), d5_last_error());
    } else {
        CHECK(s == D5_ERR_UNSUPPORTED, "nccl not built: %s", d5_status_name(s));
    }
    if (s != D5_OK && rank == 0)
        printf("nccl allreduce on the device: skipped: %s\n", d5_last_error());
    p.backend = "mpi";
    p.thread_level = 7;
    CHECK_STATUS(d5_comm_create(&p, &c), D5_ERR_INVALID);
}

static void pending_at_free(void *buf)
{
    const char *backends[] = {"mpi", "ring", "recdbl"};
    for (int b = 0; b < 3; b++) {
        d5_comm *c = mpi_check_open(backends[b], 0);
        if (!c) continue;
        mpi_check_fill(buf, 4096, D5_F32, rank);
        d5_comm_request *r = NULL;
        CHECK_OK(d5_comm_iallreduce(c, buf, 4096, D5_F32, "pending", &r));
        d5_comm_counters_reset(c); /* while the request is in flight */
        d5_comm_free(c);           /* completes it */
        size_t bad = mpi_check_wrong(buf, 4096, D5_F32, size);
        CHECK(bad == 0, "%s: allreduce completed by free: %zu wrong", backends[b], bad);
    }
}

int main(void)
{
    d5_comm *world = mpi_check_world("test_comm", 0);
    if (!world) return 1;
    rank = mpi_check_rank;
    size = d5_comm_size(world);
    d5_comm_info info;
    d5_comm_info_get(world, &info);
    CHECK(info.size == size && info.local_size >= 1 && info.local_size <= size &&
              info.library[0] != '\0' && strcmp(info.backend, "mpi") == 0,
          "info: size %d, local %d, library '%s'", info.size, info.local_size, info.library);

    void *buf = malloc(64u << 20);
    if (!buf) return 1;
    creation();
    const char *backends[] = {"mpi", "ring", "recdbl"};
    for (int b = 0; b < 3; b++) {
        d5_comm *c = mpi_check_open(backends[b], 0);
        if (!c) continue;
        backend_allreduce(c, backends[b], buf);
        backend_broadcast(c, backends[b]);
        backend_p2p(c, backends[b]);
        timer_regions(c);
        CHECK(d5_comm_counter_names(c) >= 1 && d5_comm_counter_name(c, 0) != NULL,
              "%s: counter names", backends[b]);
        d5_comm_free(c);
    }
    pending_at_free(buf);
    agreement(world);
    errors(world);
    free(buf);
    int rc = mpi_check_finish(world, "test_comm");
    d5_comm_free(world);
    return rc;
}
