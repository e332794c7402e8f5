/* nccl: NVIDIA NCCL's collectives and point-to-point messages on device
 * memory, one CUDA device per rank (the local rank modulo the devices, or
 * d5_comm_params.device). MPI carries NCCL's unique id and the agreement that
 * every rank has a device. Operations run on one stream of the communicator;
 * blocking forms synchronise it, non-blocking forms record an event that
 * d5_comm_test queries. The counters record the payload (d5_comm_counter).
 * This file is built into the nccl plugin (nccl_plugin.c), which d5 loads the
 * first time the backend is asked for (nccl_load.c). */
#include "../comm_internal.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>

typedef struct nccl_state {
    ncclComm_t comm;
    cudaStream_t stream;
} nccl_state;

static d5_status cuda_fail(const d5_comm *c, cudaError_t e, const char *what)
{
    return d5_error(D5_ERR_BACKEND, "rank %d: nccl backend: %s: %s", (int)c->rank, what,
                    cudaGetErrorString(e));
}

static d5_status nccl_fail(const d5_comm *c, ncclResult_t r, const char *what, size_t count)
{
    return d5_error(D5_ERR_BACKEND, "rank %d: nccl backend: %s of %zu elements: %s", (int)c->rank,
                    what, count, ncclGetErrorString(r));
}

/* Every rank must have a device, or none goes on. */
static d5_status check_devices(d5_comm *c, const d5_comm_params *p, int *count)
{
    char why[200] = "";
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
        snprintf(why, sizeof why, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    else if (n == 0)
        snprintf(why, sizeof why, "no device is visible");
    else if (p->device >= n)
        snprintf(why, sizeof why, "device %d asked for, %d present", (int)p->device, n);
    int ok = why[0] == '\0', all = ok;
    int rc = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->coll);
    if (rc != MPI_SUCCESS) return d5__mpi_fail(c, rc, "nccl backend: device check");
    if (!all)
        return d5_error(D5_ERR_NODEVICE,
                        "communicator backend nccl not run: no CUDA device (rank %d: %s)",
                        (int)c->rank, ok ? "has one, but another rank has none" : why);
    *count = n;
    return D5_OK;
}

static void fini(d5_comm *c)
{
    nccl_state *st = c->state;
    if (!st) return;
    if (st->comm) ncclCommDestroy(st->comm);
    if (st->stream) cudaStreamDestroy(st->stream);
    d5_free(st);
    c->state = NULL;
}

static d5_status init(d5_comm *c, const d5_comm_params *p)
{
    int n = 0;
    d5_status s = check_devices(c, p, &n);
    if (s != D5_OK) return s;
    c->device = p->device >= 0 ? p->device : c->local_rank % n;
    nccl_state *st = d5_calloc(1, sizeof *st, "nccl backend");
    int ok = st != NULL;
    cudaError_t e = cudaSuccess;
    if (ok) e = cudaSetDevice(c->device);
    if (ok && e == cudaSuccess) e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking);
    ok = ok && e == cudaSuccess;
    int ready = ok; /* every rank set up its device and stream */
    int rc = MPI_Allreduce(&ok, &ready, 1, MPI_INT, MPI_MIN, c->coll);
    struct {
        int ok;
        ncclUniqueId id;
    } msg = {0};
    if (c->rank == 0) msg.ok = ready && ncclGetUniqueId(&msg.id) == ncclSuccess;
    if (rc == MPI_SUCCESS) rc = MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, c->coll);
    ncclResult_t nr = ncclSuccess;
    if (rc == MPI_SUCCESS && msg.ok) nr = ncclCommInitRank(&st->comm, c->size, msg.id, c->rank);
    int mine = rc == MPI_SUCCESS && msg.ok && nr == ncclSuccess, all = mine;
    if (rc == MPI_SUCCESS) rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, c->coll);
    c->state = st;
    if (all && rc == MPI_SUCCESS) return D5_OK;
    fini(c);
    if (!st) return D5_ERR_NOMEM;
    if (rc != MPI_SUCCESS) return d5__mpi_fail(c, rc, "nccl backend: sharing NCCL's unique id");
    if (e != cudaSuccess) return cuda_fail(c, e, "setting up the device and stream");
    if (nr != ncclSuccess) return nccl_fail(c, nr, "ncclCommInitRank", 0);
    return d5_error(D5_ERR_BACKEND, "rank %d: nccl backend: setting up NCCL failed on %s",
                    (int)c->rank, ready ? "another rank" : "a rank without its device or stream");
}

static nccl_state *state(d5_comm *c)
{
    return c->state;
}

static d5_status sync(d5_comm *c, ncclResult_t r, const char *what, size_t count)
{
    if (r != ncclSuccess) return nccl_fail(c, r, what, count);
    cudaError_t e = cudaStreamSynchronize(state(c)->stream);
    return e == cudaSuccess ? D5_OK : cuda_fail(c, e, what);
}

static d5_status event_progress(d5_comm_request *r, int blocking, int *done)
{
    cudaError_t e = blocking ? cudaEventSynchronize(r->state) : cudaEventQuery(r->state);
    if (e == cudaErrorNotReady) {
        *done = 0;
        return D5_OK;
    }
    if (e != cudaSuccess) return cuda_fail(r->comm, e, "waiting for an operation");
    *done = 1;
    return D5_OK;
}

static void event_release(d5_comm_request *r)
{
    if (r->state) cudaEventDestroy(r->state);
    r->state = NULL;
}

/* Records the event that completes a request for what was just enqueued. */
static d5_status enqueued(d5_comm *c, ncclResult_t nr, const char *what, size_t count,
                          d5_comm_request *r)
{
    if (nr != ncclSuccess) return nccl_fail(c, nr, what, count);
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e != cudaSuccess) return cuda_fail(c, e, "cudaEventCreate");
    r->state = ev;
    r->release = event_release;
    r->progress = event_progress;
    e = cudaEventRecord(ev, state(c)->stream);
    return e == cudaSuccess ? D5_OK : cuda_fail(c, e, "cudaEventRecord");
}

static ncclDataType_t sum_type(d5_dtype t)
{
    return t == D5_F32 ? ncclFloat32 : ncclFloat64;
}

static uint64_t payload(const d5_comm *c, const d5__op_args *a)
{
    return c->size > 1 ? a->count * d5_dtype_size(a->dtype) : 0;
}

static d5_status allreduce(d5_comm *c, const d5__op_args *a)
{
    ncclResult_t r = ncclAllReduce(a->buf, a->buf, a->count, sum_type(a->dtype), ncclSum,
                                   state(c)->comm, state(c)->stream);
    d5_status s = sync(c, r, "ncclAllReduce", a->count);
    if (s == D5_OK) d5__count_payload(c, a->op, a->slot, a->gen, payload(c, a), payload(c, a));
    return s;
}

static d5_status iallreduce(d5_comm *c, const d5__op_args *a, d5_comm_request *rq)
{
    ncclResult_t r = ncclAllReduce(a->buf, a->buf, a->count, sum_type(a->dtype), ncclSum,
                                   state(c)->comm, state(c)->stream);
    d5_status s = enqueued(c, r, "ncclAllReduce", a->count, rq);
    if (s == D5_OK) d5__count_payload(c, a->op, a->slot, a->gen, payload(c, a), payload(c, a));
    return s;
}

static d5_status broadcast(d5_comm *c, const d5__op_args *a)
{
    size_t bytes = a->count * d5_dtype_size(a->dtype);
    ncclResult_t r =
        ncclBroadcast(a->buf, a->buf, bytes, ncclUint8, a->peer, state(c)->comm, state(c)->stream);
    d5_status s = sync(c, r, "ncclBroadcast", a->count);
    int root = c->rank == a->peer;
    if (s == D5_OK)
        d5__count_payload(c, a->op, a->slot, a->gen, root ? payload(c, a) : 0,
                          root ? 0 : payload(c, a));
    return s;
}

static ncclResult_t p2p(d5_comm *c, const d5__op_args *a)
{
    size_t bytes = a->count * d5_dtype_size(a->dtype);
    if (a->op == D5_COMM_OP_SEND)
        return ncclSend(a->buf, bytes, ncclUint8, a->peer, state(c)->comm, state(c)->stream);
    return ncclRecv(a->buf, bytes, ncclUint8, a->peer, state(c)->comm, state(c)->stream);
}

static void count_p2p(d5_comm *c, const d5__op_args *a)
{
    uint64_t bytes = a->count * d5_dtype_size(a->dtype);
    int send = a->op == D5_COMM_OP_SEND;
    d5__count(c, a->op, a->slot, a->gen, send ? bytes : 0, send ? 0 : bytes, send, !send);
}

static d5_status send_recv(d5_comm *c, const d5__op_args *a)
{
    d5_status s = sync(c, p2p(c, a), a->op == D5_COMM_OP_SEND ? "ncclSend" : "ncclRecv", a->count);
    if (s == D5_OK) count_p2p(c, a);
    return s;
}

static d5_status isend_irecv(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    d5_status s =
        enqueued(c, p2p(c, a), a->op == D5_COMM_OP_SEND ? "ncclSend" : "ncclRecv", a->count, r);
    if (s == D5_OK) count_p2p(c, a);
    return s;
}

static d5_status mem_alloc(d5_comm *c, size_t bytes, void **out)
{
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 64);
    if (e != cudaSuccess)
        return d5_error(D5_ERR_NOMEM, "rank %d: cudaMalloc of %zu bytes on device %d: %s",
                        (int)c->rank, bytes, (int)c->device, cudaGetErrorString(e));
    return D5_OK;
}

static void mem_free(d5_comm *c, void *p)
{
    (void)c;
    cudaFree(p);
}

static d5_status mem_copy(d5_comm *c, void *dst, const void *src, size_t bytes, int to_device)
{
    cudaError_t e =
        cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? D5_OK : cuda_fail(c, e, "cudaMemcpy");
}

const d5__comm_ops d5__nccl_plugin_ops = {
    .init = init,
    .fini = fini,
    .allreduce = allreduce,
    .iallreduce = iallreduce,
    .broadcast = broadcast,
    .send = send_recv,
    .recv = send_recv,
    .isend = isend_irecv,
    .irecv = isend_irecv,
    .mem_alloc = mem_alloc,
    .mem_free = mem_free,
    .mem_copy = mem_copy,
    .no_timeout = 1, /* a wait on the device: d5_comm_params.timeout_s is ignored */
};
