/* mpi: the MPI library's own collectives, whichever algorithm it picks for the
 * size and the job (Open MPI's tuned component, MPICH's, a vendor's). The
 * counters record the payload (d5_comm_counter): what moves inside MPI is its
 * own business. Buffers larger than MPI's int count go in pieces. */
#include "../comm_internal.h"

#include <limits.h>

static const size_t piece = INT_MAX;

/* Blocking forms under a time-out use the non-blocking ones (MPI_Iallreduce,
 * MPI_Ibcast), which take at most INT_MAX elements. */

static d5_status allreduce(d5_comm *c, const d5__op_args *a)
{
    size_t e = d5_dtype_size(a->dtype);
    MPI_Datatype type = d5__mpi_type(a->dtype);
    for (size_t off = 0; off < a->count; off += piece) {
        size_t n = a->count - off < piece ? a->count - off : piece;
        int rc =
            MPI_Allreduce(MPI_IN_PLACE, (char *)a->buf + off * e, (int)n, type, MPI_SUM, c->coll);
        if (rc != MPI_SUCCESS)
            return d5__mpi_fail(c, rc, "allreduce of %zu %s: MPI_Allreduce", a->count,
                                d5_dtype_name(a->dtype));
    }
    uint64_t bytes = c->size > 1 ? a->count * e : 0;
    d5__count_payload(c, a->op, a->slot, a->gen, bytes, bytes);
    return D5_OK;
}

static d5_status iallreduce(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    d5_status s = d5__check_int_count(c, "iallreduce", a->count);
    if (s != D5_OK) return s;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, a->buf, (int)a->count, d5__mpi_type(a->dtype), MPI_SUM,
                            c->coll, &r->mpi);
    if (rc != MPI_SUCCESS)
        return d5__mpi_fail(c, rc, "iallreduce of %zu %s: MPI_Iallreduce", a->count,
                            d5_dtype_name(a->dtype));
    r->progress = d5__request_mpi_progress;
    uint64_t bytes = c->size > 1 ? a->count * d5_dtype_size(a->dtype) : 0;
    d5__count_payload(c, a->op, a->slot, a->gen, bytes, bytes);
    return D5_OK;
}

static d5_status broadcast(d5_comm *c, const d5__op_args *a)
{
    size_t e = d5_dtype_size(a->dtype);
    MPI_Datatype type = d5__mpi_type(a->dtype);
    for (size_t off = 0; off < a->count; off += piece) {
        size_t n = a->count - off < piece ? a->count - off : piece;
        int rc = MPI_Bcast((char *)a->buf + off * e, (int)n, type, a->peer, c->coll);
        if (rc != MPI_SUCCESS)
            return d5__mpi_fail(c, rc, "broadcast of %zu %s from rank %d: MPI_Bcast", a->count,
                                d5_dtype_name(a->dtype), (int)a->peer);
    }
    uint64_t bytes = c->size > 1 ? a->count * e : 0;
    int root = c->rank == a->peer;
    d5__count_payload(c, a->op, a->slot, a->gen, root ? bytes : 0, root ? 0 : bytes);
    return D5_OK;
}

static d5_status ibroadcast(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    d5_status s = d5__check_int_count(c, "broadcast", a->count);
    if (s != D5_OK) return s;
    int rc = MPI_Ibcast(a->buf, (int)a->count, d5__mpi_type(a->dtype), a->peer, c->coll, &r->mpi);
    if (rc != MPI_SUCCESS)
        return d5__mpi_fail(c, rc, "broadcast of %zu %s from rank %d: MPI_Ibcast", a->count,
                            d5_dtype_name(a->dtype), (int)a->peer);
    r->progress = d5__request_mpi_progress;
    uint64_t bytes = c->size > 1 ? a->count * d5_dtype_size(a->dtype) : 0;
    int root = c->rank == a->peer;
    d5__count_payload(c, a->op, a->slot, a->gen, root ? bytes : 0, root ? 0 : bytes);
    return D5_OK;
}

const d5__comm_ops d5__comm_ops_mpi = {
    .allreduce = allreduce,
    .iallreduce = iallreduce,
    .broadcast = broadcast,
    .ibroadcast = ibroadcast,
};
