/* The operations of d5_comm: checks, counters and timer regions around the
 * backend's implementation. */
#include "comm_internal.h"

#include <string.h>

#if D5_SIM
#include <simgrid/engine.h>
#endif

/* ---- Timer regions ---- */

typedef struct regions {
    d5_timer_id ids[2];
    int n;
} regions;

/* COMM, and `key` unless it is COMM again. A region the caller holds open is
 * left to the caller; a failure to record is not the operation's failure. */
static void regions_begin(d5_comm *c, regions *g, d5_timer_id key)
{
    g->n = 0;
    if (!c->timer) return;
    if (d5_timer_start_id(c->timer, c->key_comm) == D5_OK) g->ids[g->n++] = c->key_comm;
    if (key != c->key_comm && d5_timer_start_id(c->timer, key) == D5_OK) g->ids[g->n++] = key;
}

static void regions_end(d5_comm *c, regions *g)
{
    while (g->n > 0)
        if (d5_timer_end_id(c->timer, g->ids[--g->n]) != D5_OK) {
            /* Recording failed; the operation did not. */
        }
}

/* ---- Arguments ---- */

static d5_status prepare(d5_comm *c, d5_comm_op op, const void *buf, size_t count, d5_dtype t,
                         const char *name, d5__op_args *a)
{
    if (!c) return d5_error(D5_ERR_INVALID, "%s: NULL communicator", d5_comm_op_name(op));
    const char *label = name ? name : "";
    if (d5_dtype_size(t) == 0)
        return d5_error(D5_ERR_INVALID, "rank %d: %s of %zu elements%s%s: %d is not a d5 dtype",
                        (int)c->rank, d5_comm_op_name(op), count, name ? " named " : "", label,
                        (int)t);
    if (!buf && count)
        return d5_error(D5_ERR_INVALID, "rank %d: %s of %zu %s%s%s: NULL buffer", (int)c->rank,
                        d5_comm_op_name(op), count, d5_dtype_name(t), name ? " named " : "", label);
    d5_status s = d5__check_usable(c, d5_comm_op_name(op));
    if (s != D5_OK) return s;
#if D5_SIM
    d5__sim_pay();
#endif
    memset(a, 0, sizeof *a);
    a->buf = (void *)buf;
    a->count = count;
    a->dtype = t;
    a->op = op;
    a->gen = c->counters.generation;
    return d5__counters_slot(&c->counters, name, &a->slot);
}

static d5_status check_rank(const d5_comm *c, d5_comm_op op, const char *role, int32_t r,
                            size_t count, d5_dtype t)
{
    if (r >= 0 && r < c->size) return D5_OK;
    return d5_error(D5_ERR_INVALID, "rank %d: %s of %zu %s: %s %d is outside 0..%d", (int)c->rank,
                    d5_comm_op_name(op), count, d5_dtype_name(t), role, (int)r, (int)c->size - 1);
}

static d5_status check_tag(const d5_comm *c, d5_comm_op op, int32_t tag)
{
    if (tag >= 0 && tag <= D5_COMM_TAG_MAX) return D5_OK;
    return d5_error(D5_ERR_INVALID, "rank %d: %s: tag %d is outside 0..%d", (int)c->rank,
                    d5_comm_op_name(op), (int)tag, D5_COMM_TAG_MAX);
}

static d5_status check_sum(const d5_comm *c, size_t count, d5_dtype t)
{
    if (t == D5_F32 || t == D5_F64) return D5_OK;
    return d5_error(D5_ERR_UNSUPPORTED,
                    "rank %d: allreduce of %zu %s: only float32 and float64 are summed",
                    (int)c->rank, count, d5_dtype_name(t));
}

/* ---- Non-blocking starts ---- */

static d5_status done_progress(d5_comm_request *r, int blocking, int *done)
{
    (void)r;
    (void)blocking;
    *done = 1;
    return D5_OK;
}

typedef d5_status (*start_fn)(d5_comm *c, const d5__op_args *a, d5_comm_request *r);

static d5_status start(d5_comm *c, const d5__op_args *a, start_fn fn, d5_comm_request **req)
{
    d5_comm_request *r;
    d5_status s = d5__request_new(c, a, &r);
    if (s != D5_OK) return s;
    regions g;
    regions_begin(c, &g, c->key_comm);
    d5__count_call(c, a->op, a->slot);
    s = fn ? fn(c, a, r) : D5_OK;
    if (!fn) r->progress = done_progress;
    regions_end(c, &g);
    if (s != D5_OK) {
        d5__request_free(r);
        return s;
    }
    *req = r;
    return D5_OK;
}

/* ---- Blocking operations under a time-out ----
 * The operation's non-blocking form, waited for until the deadline. A request
 * that timed out stays with the communicator (d5_comm_free completes it or
 * gives it up), and so do the caller's buffers. */

static d5_status timed_end(d5_comm_request *r, d5_status s, uint64_t deadline)
{
    if (s == D5_OK) s = d5__request_wait(r, deadline, 0);
    if (s != D5_ERR_TIMEOUT) d5__request_free(r);
    return s;
}

static d5_status timed(d5_comm *c, const d5__op_args *a, start_fn fn)
{
    uint64_t deadline = d5__deadline(c);
    d5_comm_request *r;
    d5_status s = d5__request_new(c, a, &r);
    if (s != D5_OK) return s;
    return timed_end(r, fn(c, a, r), deadline);
}

static d5_status ibarrier(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    (void)a;
    int rc = MPI_Ibarrier(c->coll, &r->mpi);
    if (rc != MPI_SUCCESS) return d5__mpi_fail(c, rc, "barrier: MPI_Ibarrier");
    r->progress = d5__request_mpi_progress;
    return D5_OK;
}

/* ---- Operations ---- */

d5_status d5_comm_barrier(d5_comm *c)
{
    if (!c) return d5_error(D5_ERR_INVALID, "barrier: NULL communicator");
    d5_status s = d5__check_usable(c, "barrier");
    if (s != D5_OK) return s;
#if D5_SIM
    d5__sim_pay();
#endif
    regions g;
    regions_begin(c, &g, c->key_comm);
    d5__count_call(c, D5_COMM_OP_BARRIER, -1);
    if (c->timeout_ns) {
        d5__op_args a = {.op = D5_COMM_OP_BARRIER, .slot = -1, .gen = c->counters.generation};
        s = timed(c, &a, ibarrier);
        regions_end(c, &g);
        return s;
    }
    int rc = MPI_Barrier(c->coll);
    regions_end(c, &g);
    return rc == MPI_SUCCESS ? D5_OK : d5__mpi_fail(c, rc, "barrier: MPI_Barrier");
}

d5_status d5_comm_allreduce(d5_comm *c, void *buf, size_t count, d5_dtype dtype, const char *name)
{
    d5__op_args a;
    d5_status s = prepare(c, D5_COMM_OP_ALLREDUCE, buf, count, dtype, name, &a);
    if (s == D5_OK) s = check_sum(c, count, dtype);
    if (s != D5_OK) return s;
    regions g;
    regions_begin(c, &g, c->key_allreduce);
    d5__count_call(c, a.op, a.slot);
    if (count && c->timeout_ns)
        s = timed(c, &a, c->ops->iallreduce);
    else if (count)
        s = c->ops->allreduce(c, &a);
    regions_end(c, &g);
    return s;
}

d5_status d5_comm_iallreduce(d5_comm *c, void *buf, size_t count, d5_dtype dtype, const char *name,
                             d5_comm_request **req)
{
    if (req) *req = NULL;
    if (!req) return d5_error(D5_ERR_INVALID, "iallreduce: NULL request output");
    d5__op_args a;
    d5_status s = prepare(c, D5_COMM_OP_ALLREDUCE, buf, count, dtype, name, &a);
    if (s == D5_OK) s = check_sum(c, count, dtype);
    if (s != D5_OK) return s;
    return start(c, &a, count ? c->ops->iallreduce : NULL, req);
}

d5_status d5_comm_broadcast(d5_comm *c, void *buf, size_t count, d5_dtype dtype, int32_t root,
                            const char *name)
{
    d5__op_args a;
    d5_status s = prepare(c, D5_COMM_OP_BROADCAST, buf, count, dtype, name, &a);
    if (s == D5_OK) s = check_rank(c, a.op, "root", root, count, dtype);
    if (s != D5_OK) return s;
    a.peer = root;
    regions g;
    regions_begin(c, &g, c->key_broadcast);
    d5__count_call(c, a.op, a.slot);
    if (count && c->timeout_ns)
        s = timed(c, &a, c->ops->ibroadcast);
    else if (count)
        s = c->ops->broadcast(c, &a);
    regions_end(c, &g);
    return s;
}

static d5_status p2p_args(d5_comm *c, d5_comm_op op, const void *buf, size_t count, d5_dtype t,
                          int32_t peer, int32_t tag, const char *name, d5__op_args *a)
{
    d5_status s = prepare(c, op, buf, count, t, name, a);
    if (s == D5_OK)
        s = check_rank(c, op, op == D5_COMM_OP_SEND ? "destination" : "source", peer, count, t);
    if (s == D5_OK) s = check_tag(c, op, tag);
    if (s == D5_OK) s = d5__check_int_count(c, d5_comm_op_name(op), count);
    a->peer = peer;
    a->tag = tag;
    return s;
}

d5_status d5_comm_send(d5_comm *c, const void *buf, size_t count, d5_dtype dtype, int32_t dest,
                       int32_t tag, const char *name)
{
    d5__op_args a;
    d5_status s = p2p_args(c, D5_COMM_OP_SEND, buf, count, dtype, dest, tag, name, &a);
    if (s != D5_OK) return s;
    regions g;
    regions_begin(c, &g, c->key_comm);
    d5__count_call(c, a.op, a.slot);
    if (c->timeout_ns)
        s = timed(c, &a, d5__p2p_isend);
    else
        s = c->ops->send ? c->ops->send(c, &a) : d5__p2p_send(c, &a);
    regions_end(c, &g);
    return s;
}

d5_status d5_comm_recv(d5_comm *c, void *buf, size_t count, d5_dtype dtype, int32_t source,
                       int32_t tag, const char *name)
{
    d5__op_args a;
    d5_status s = p2p_args(c, D5_COMM_OP_RECV, buf, count, dtype, source, tag, name, &a);
    if (s != D5_OK) return s;
    regions g;
    regions_begin(c, &g, c->key_comm);
    d5__count_call(c, a.op, a.slot);
    if (c->timeout_ns)
        s = timed(c, &a, d5__p2p_irecv);
    else
        s = c->ops->recv ? c->ops->recv(c, &a) : d5__p2p_recv(c, &a);
    regions_end(c, &g);
    return s;
}

d5_status d5_comm_isend(d5_comm *c, const void *buf, size_t count, d5_dtype dtype, int32_t dest,
                        int32_t tag, const char *name, d5_comm_request **req)
{
    if (req) *req = NULL;
    if (!req) return d5_error(D5_ERR_INVALID, "isend: NULL request output");
    d5__op_args a;
    d5_status s = p2p_args(c, D5_COMM_OP_SEND, buf, count, dtype, dest, tag, name, &a);
    if (s != D5_OK) return s;
    return start(c, &a, c->ops->isend ? c->ops->isend : d5__p2p_isend, req);
}

d5_status d5_comm_irecv(d5_comm *c, void *buf, size_t count, d5_dtype dtype, int32_t source,
                        int32_t tag, const char *name, d5_comm_request **req)
{
    if (req) *req = NULL;
    if (!req) return d5_error(D5_ERR_INVALID, "irecv: NULL request output");
    d5__op_args a;
    d5_status s = p2p_args(c, D5_COMM_OP_RECV, buf, count, dtype, source, tag, name, &a);
    if (s != D5_OK) return s;
    return start(c, &a, c->ops->irecv ? c->ops->irecv : d5__p2p_irecv, req);
}

d5_status d5_comm_wait(d5_comm_request **req)
{
    if (!req) return d5_error(D5_ERR_INVALID, "d5_comm_wait: NULL request pointer");
    d5_comm_request *r = *req;
    if (!r) return D5_OK;
    d5_comm *c = r->comm;
    *req = NULL;
    d5_status s = d5__check_usable(c, "wait");
    if (s != D5_OK) return s; /* the request is left to d5_comm_free */
#if D5_SIM
    d5__sim_pay();
#endif
    regions g;
    regions_begin(c, &g, c->key_wait);
    if (c->timeout_ns) {
        s = d5__request_wait(r, d5__deadline(c), 1);
    } else {
        int done = 0;
        s = r->progress(r, 1, &done);
    }
    regions_end(c, &g);
    if (s != D5_ERR_TIMEOUT) d5__request_free(r);
    return s;
}

d5_status d5_comm_test(d5_comm_request **req, int32_t *done)
{
    if (!req || !done) return d5_error(D5_ERR_INVALID, "d5_comm_test: NULL argument");
    d5_comm_request *r = *req;
    if (!r) {
        *done = 1;
        return D5_OK;
    }
    d5_comm *c = r->comm;
    d5_status s = d5__check_usable(c, "test");
    if (s != D5_OK) { /* the request is left to d5_comm_free */
        *req = NULL;
        *done = 1;
        return s;
    }
#if D5_SIM
    /* d5-sim-train: tested again with no simulated time passed, a request
     * cannot have moved (whatever completes at this time had completed at
     * the last test; what that test posted needs time to arrive). Every call
     * into SMPI costs the simulator a round of every rank: answered here. */
    if (r->tested_at == simgrid_get_clock()) {
        *done = 0;
        return D5_OK;
    }
    r->tested_at = simgrid_get_clock();
#endif
    regions g;
    regions_begin(c, &g, c->key_comm);
    int d = 0;
    s = r->progress(r, 0, &d);
    regions_end(c, &g);
    if (s != D5_OK || d) {
        d5__request_free(r);
        *req = NULL;
        d = 1;
    }
    *done = d;
    return s;
}

d5_status d5_comm_agree(d5_comm *c, double *values, size_t n, d5_comm_reduce op)
{
    d5__op_args a;
    d5_status s = prepare(c, D5_COMM_OP_AGREE, values, n, D5_F64, NULL, &a);
    if (s == D5_OK) s = d5__check_int_count(c, "agree", n);
    if (s == D5_OK && (op < D5_COMM_SUM || op > D5_COMM_MIN))
        s = d5_error(D5_ERR_INVALID, "rank %d: agree: reduction %d is not sum, max or min",
                     (int)c->rank, (int)op);
    if (s != D5_OK) return s;
    MPI_Op mop = op == D5_COMM_SUM ? MPI_SUM : op == D5_COMM_MAX ? MPI_MAX : MPI_MIN;
    regions g;
    regions_begin(c, &g, c->key_comm);
    d5__count_call(c, a.op, -1);
    if (n && c->timeout_ns) {
        uint64_t deadline = d5__deadline(c);
        d5_comm_request *r;
        s = d5__request_new(c, &a, &r);
        if (s == D5_OK) {
            int rc =
                MPI_Iallreduce(MPI_IN_PLACE, values, (int)n, MPI_DOUBLE, mop, c->coll, &r->mpi);
            r->progress = d5__request_mpi_progress;
            s = rc == MPI_SUCCESS ? D5_OK
                                  : d5__mpi_fail(c, rc, "agree on %zu values: MPI_Iallreduce", n);
            s = timed_end(r, s, deadline);
        }
        regions_end(c, &g);
        if (s != D5_OK) return s;
    } else {
        int rc = n ? MPI_Allreduce(MPI_IN_PLACE, values, (int)n, MPI_DOUBLE, mop, c->coll) : 0;
        regions_end(c, &g);
        if (rc != MPI_SUCCESS) return d5__mpi_fail(c, rc, "agree on %zu values: MPI_Allreduce", n);
    }
    uint64_t bytes = c->size > 1 ? 8 * (uint64_t)n : 0;
    d5__count_payload(c, a.op, -1, a.gen, bytes, bytes);
    return D5_OK;
}
