/* d5_comm_iprobe: whether a point-to-point message waits, without receiving
 * it (the servers of asgd and ssp answer whichever worker pushed first). */
#include "d5/distributed.h"

#if D5_HAVE_MPI
#include "comm_internal.h"

#include <string.h>

d5_status d5_comm_iprobe(d5_comm *c, int32_t source, int32_t tag, d5_comm_probe *out)
{
    if (!c || !out) return d5_error(D5_ERR_INVALID, "d5_comm_iprobe: NULL argument");
    memset(out, 0, sizeof *out);
#if D5_SIM
    d5__sim_pay();
#endif
    if (source != D5_COMM_ANY_SOURCE && (source < 0 || source >= c->size))
        return d5_error(D5_ERR_INVALID, "rank %d: probe: source %d is outside 0..%d", (int)c->rank,
                        (int)source, (int)c->size - 1);
    if (tag != D5_COMM_ANY_TAG && (tag < 0 || tag > D5_COMM_TAG_MAX))
        return d5_error(D5_ERR_INVALID, "rank %d: probe: tag %d is outside 0..%d", (int)c->rank,
                        (int)tag, D5_COMM_TAG_MAX);
    if (strcmp(c->backend->name, "nccl") == 0)
        return d5_error(D5_ERR_UNSUPPORTED, "rank %d: probe: the nccl backend cannot probe",
                        (int)c->rank);
    int flag = 0, bytes = 0;
    MPI_Status st;
    int rc = MPI_Iprobe(source == D5_COMM_ANY_SOURCE ? MPI_ANY_SOURCE : source,
                        tag == D5_COMM_ANY_TAG ? MPI_ANY_TAG : tag, c->p2p, &flag, &st);
    if (rc == MPI_SUCCESS && flag) rc = MPI_Get_count(&st, MPI_BYTE, &bytes);
    if (rc != MPI_SUCCESS)
        return d5__mpi_fail(c, rc, "probe of source %d tag %d: MPI_Iprobe", (int)source, (int)tag);
    out->found = flag != 0;
    if (flag) {
        out->source = st.MPI_SOURCE;
        out->tag = st.MPI_TAG;
        out->bytes = (size_t)bytes;
    }
    return D5_OK;
}
#else
d5_status d5_comm_iprobe(d5_comm *c, int32_t source, int32_t tag, d5_comm_probe *out)
{
    (void)c;
    (void)source;
    (void)tag;
    (void)out;
    return d5_error(D5_ERR_UNSUPPORTED, "d5 was built without MPI");
}
#endif
