/* The engine of d5's own algorithms: a schedule is a list of steps, each a
 * receive and a send between two local actions. Every message is counted
 * when it is posted, at its exact size. */
#include "comm_internal.h"

#include <string.h>

d5_status d5__sched_create(d5_comm *c, const d5__op_args *a, size_t scratch_bytes, d5__sched **out)
{
    d5__sched *s = d5_calloc(1, sizeof *s, "communication schedule");
    if (!s) return D5_ERR_NOMEM;
    s->comm = c;
    s->a = *a;
    s->tag = d5__coll_tag(c);
    s->req[0] = s->req[1] = MPI_REQUEST_NULL;
    if (scratch_bytes) {
        d5_allocator al = d5_allocator_get();
        s->scratch = al.alloc(al.ctx, scratch_bytes, 64);
        if (!s->scratch) {
            d5_free(s);
            return d5_error(D5_ERR_NOMEM,
                            "rank %d: %s of %zu %s: out of memory for %zu bytes of scratch",
                            (int)c->rank, d5_comm_op_name(a->op), a->count, d5_dtype_name(a->dtype),
                            scratch_bytes);
        }
    }
    *out = s;
    return D5_OK;
}

d5_status d5__sched_step(d5__sched *s, d5__step **out)
{
    if (d5_grow(&s->steps, &s->cap, s->nsteps + 1, sizeof *s->steps, "communication schedule") !=
        D5_OK)
        return D5_ERR_NOMEM;
    d5__step *st = &s->steps[s->nsteps++];
    memset(st, 0, sizeof *st);
    st->send_to = st->recv_from = -1;
    *out = st;
    return D5_OK;
}

void d5__sched_free(d5__sched *s)
{
    if (!s) return;
    for (int i = 0; i < 2; i++)
        if (s->req[i] != MPI_REQUEST_NULL) {
            /* After a failure only: give the messages up. */
            MPI_Cancel(&s->req[i]);
            MPI_Request_free(&s->req[i]);
        }
    d5_free(s->scratch);
    d5_free(s->steps);
    d5_free(s);
}

static void act(const d5__act *x, d5_dtype t)
{
    size_t e = d5_dtype_size(t);
    switch (x->kind) {
    case D5__ACT_NONE: break;
    case D5__ACT_COPY:
        if (x->n) memcpy(x->dst, x->src, x->n * e);
        break;
    case D5__ACT_PAD:
        if (x->n) memcpy(x->dst, x->src, x->n * e);
        memset((char *)x->dst + x->n * e, 0, (x->pad - x->n) * e);
        break;
    case D5__ACT_REDUCE: d5__reduce_sum(x->dst, x->src, x->n, t); break;
    }
}

static d5_status fail(const d5__sched *s, int rc, const char *call, int peer)
{
    const d5_comm *c = s->comm;
    return d5__mpi_fail(c, rc, "%s %s of %zu %s: step %zu of %zu: %s (rank %d)", c->backend->name,
                        d5_comm_op_name(s->a.op), s->a.count, d5_dtype_name(s->a.dtype), s->cur + 1,
                        s->nsteps, call, peer);
}

static d5_status post(d5__sched *s, const d5__step *st)
{
    d5_comm *c = s->comm;
    MPI_Datatype type = d5__mpi_type(s->a.dtype);
    uint64_t e = d5_dtype_size(s->a.dtype);
    act(&st->pre, s->a.dtype);
    if (st->recv_from >= 0) {
        int rc = MPI_Irecv(st->recv_buf, (int)st->recv_count, type, st->recv_from, s->tag, c->coll,
                           &s->req[0]);
        if (rc != MPI_SUCCESS) return fail(s, rc, "MPI_Irecv", st->recv_from);
        d5__count(c, s->a.op, s->a.slot, s->a.gen, 0, st->recv_count * e, 0, 1);
    }
    if (st->send_to >= 0) {
        int rc = MPI_Isend(st->send_buf, (int)st->send_count, type, st->send_to, s->tag, c->coll,
                           &s->req[1]);
        if (rc != MPI_SUCCESS) return fail(s, rc, "MPI_Isend", st->send_to);
        d5__count(c, s->a.op, s->a.slot, s->a.gen, st->send_count * e, 0, 1, 0);
    }
    return D5_OK;
}

d5_status d5__sched_progress(d5__sched *s, int blocking, int *done)
{
    while (s->cur < s->nsteps) {
        const d5__step *st = &s->steps[s->cur];
        if (!s->posted) {
            d5_status e = post(s, st);
            if (e != D5_OK) return e;
            s->posted = 1;
        }
        int flag = 1;
        int rc = blocking ? MPI_Waitall(2, s->req, MPI_STATUSES_IGNORE)
                          : MPI_Testall(2, s->req, &flag, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return fail(s, rc, blocking ? "MPI_Waitall" : "MPI_Testall",
                        st->recv_from >= 0 ? st->recv_from : st->send_to);
        if (!flag) {
            *done = 0;
            return D5_OK;
        }
        act(&st->post, s->a.dtype);
        s->cur++;
        s->posted = 0;
    }
    *done = 1;
    return D5_OK;
}

d5_status d5__sched_run(d5__sched *s)
{
    int done = 0;
    d5_status st = d5__sched_progress(s, 1, &done);
    d5__sched_free(s);
    return st;
}

static d5_status req_progress(d5_comm_request *r, int blocking, int *done)
{
    return d5__sched_progress(r->state, blocking, done);
}

static void req_release(d5_comm_request *r)
{
    d5__sched_free(r->state);
    r->state = NULL;
}

d5_status d5__sched_start(d5__sched *s, d5_comm_request *r)
{
    r->state = s;
    r->progress = req_progress;
    r->release = req_release;
    int done = 0;
    return d5__sched_progress(s, 0, &done);
}

d5_status d5__sched_go(d5_comm *c, const d5__op_args *a, d5__sched_build_fn build,
                       d5_comm_request *r)
{
    d5__sched *sc = NULL;
    d5_status s = build(c, a, &sc);
    if (s != D5_OK) {
        d5__sched_free(sc);
        return s;
    }
    return r ? d5__sched_start(sc, r) : d5__sched_run(sc);
}
