/* Point-to-point messages on host memory, for every backend but nccl. They go
 * over their own duplicate of MPI_COMM_WORLD, so that the caller's tags never
 * meet d5's collectives. */
#include "comm_internal.h"

static const char *tname(const d5__op_args *a)
{
    return d5_dtype_name(a->dtype);
}

d5_status d5__p2p_send(d5_comm *c, const d5__op_args *a)
{
    int rc = MPI_Send(a->buf, (int)a->count, d5__mpi_type(a->dtype), a->peer, a->tag, c->p2p);
    if (rc != MPI_SUCCESS)
        return d5__mpi_fail(c, rc, "send of %zu %s to rank %d (tag %d): MPI_Send", a->count,
                            tname(a), (int)a->peer, (int)a->tag);
    d5__count(c, a->op, a->slot, a->gen, a->count * d5_dtype_size(a->dtype), 0, 1, 0);
    return D5_OK;
}

d5_status d5__p2p_recv(d5_comm *c, const d5__op_args *a)
{
    MPI_Status st;
    MPI_Datatype type = d5__mpi_type(a->dtype);
    int rc = MPI_Recv(a->buf, (int)a->count, type, a->peer, a->tag, c->p2p, &st);
    int n = 0;
    if (rc == MPI_SUCCESS) rc = MPI_Get_count(&st, type, &n);
    if (rc != MPI_SUCCESS)
        return d5__mpi_fail(c, rc, "recv of up to %zu %s from rank %d (tag %d): MPI_Recv", a->count,
                            tname(a), (int)a->peer, (int)a->tag);
    d5__count(c, a->op, a->slot, a->gen, 0, (uint64_t)n * d5_dtype_size(a->dtype), 0, 1);
    return D5_OK;
}

d5_status d5__p2p_isend(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    int rc =
        MPI_Isend(a->buf, (int)a->count, d5__mpi_type(a->dtype), a->peer, a->tag, c->p2p, &r->mpi);
    if (rc != MPI_SUCCESS)
        return d5__mpi_fail(c, rc, "isend of %zu %s to rank %d (tag %d): MPI_Isend", a->count,
                            tname(a), (int)a->peer, (int)a->tag);
    r->progress = d5__request_mpi_progress;
    d5__count(c, a->op, a->slot, a->gen, a->count * d5_dtype_size(a->dtype), 0, 1, 0);
    return D5_OK;
}

d5_status d5__p2p_irecv(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    r->type = d5__mpi_type(a->dtype);
    r->elem = d5_dtype_size(a->dtype);
    int rc = MPI_Irecv(a->buf, (int)a->count, r->type, a->peer, a->tag, c->p2p, &r->mpi);
    if (rc != MPI_SUCCESS)
        return d5__mpi_fail(c, rc, "irecv of up to %zu %s from rank %d (tag %d): MPI_Irecv",
                            a->count, tname(a), (int)a->peer, (int)a->tag);
    r->progress = d5__request_mpi_progress;
    return D5_OK;
}
