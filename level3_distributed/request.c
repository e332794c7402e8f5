/* Requests of non-blocking operations: the communicator keeps the pending
 * ones, so that freeing it completes them. */
#include "comm_internal.h"

d5_status d5__request_new(d5_comm *c, const d5__op_args *a, d5_comm_request **out)
{
    d5_comm_request *r = d5_calloc(1, sizeof *r, "communication request");
    if (!r) return D5_ERR_NOMEM;
    r->comm = c;
    r->a = *a;
    r->mpi = MPI_REQUEST_NULL;
    r->type = MPI_DATATYPE_NULL;
#if D5_SIM
    r->tested_at = -1;
#endif
    r->next = c->pending;
    if (c->pending) c->pending->prev = r;
    c->pending = r;
    *out = r;
    return D5_OK;
}

void d5__request_free(d5_comm_request *r)
{
    if (!r) return;
    if (r->release) r->release(r);
    /* Only after a failure, or when given up, is an MPI request still active
     * here. A message given up is cancelled; a collective can be neither
     * cancelled nor freed, and is left to MPI. */
    if (r->mpi != MPI_REQUEST_NULL && r->abandoned) {
        if (r->a.op == D5_COMM_OP_SEND || r->a.op == D5_COMM_OP_RECV) {
            MPI_Cancel(&r->mpi);
            MPI_Request_free(&r->mpi);
        }
    } else if (r->mpi != MPI_REQUEST_NULL) {
        MPI_Request_free(&r->mpi);
    }
    if (r->prev)
        r->prev->next = r->next;
    else
        r->comm->pending = r->next;
    if (r->next) r->next->prev = r->prev;
    d5_free(r);
}

d5_status d5__request_mpi_progress(d5_comm_request *r, int blocking, int *done)
{
    MPI_Status st;
    int flag = 1;
    int rc = blocking ? MPI_Wait(&r->mpi, &st) : MPI_Test(&r->mpi, &flag, &st);
    if (rc != MPI_SUCCESS)
        return d5__mpi_fail(r->comm, rc, "%s: %s", d5_comm_op_name(r->a.op),
                            blocking ? "MPI_Wait" : "MPI_Test");
    if (flag && r->a.op == D5_COMM_OP_RECV) {
        int n = 0;
        rc = MPI_Get_count(&st, r->type, &n);
        if (rc != MPI_SUCCESS || n < 0) return d5__mpi_fail(r->comm, rc, "recv: MPI_Get_count");
        d5__count(r->comm, r->a.op, r->a.slot, r->a.gen, 0, (uint64_t)n * r->elem, 0, 1);
    }
    *done = flag;
    return D5_OK;
}
