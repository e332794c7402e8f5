/* nccl in a build with the CUDA toolkit and NCCL: the backend lives in the
 * nccl plugin (nccl.c, nccl_plugin.c), which d5 loads the first time a
 * communicator of this backend is created, so that neither d5 nor level 3
 * needs the CUDA runtime or NCCL to start. Each function of this table hands
 * over to the plugin's; creating the communicator loads it, on every rank. */
#include "../../core/plugin.h"
#include "../comm_internal.h"

#include <stdatomic.h>

/* Set by the first init that loaded the plugin: every later call has it. */
static _Atomic(const d5__comm_ops *) plugin;

static const d5__comm_ops *ops(void)
{
    return atomic_load(&plugin);
}

/* The plugin loads on every rank, or no rank goes on. */
static d5_status init(d5_comm *c, const d5_comm_params *p)
{
    const void *t;
    char why[384];
    d5_status s = d5__plugin_load("nccl", &t, why, sizeof why);
    int ok = s == D5_OK, all = ok;
    int rc = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, c->coll);
    if (rc != MPI_SUCCESS) return d5__mpi_fail(c, rc, "nccl backend: loading its plugin");
    if (!all)
        return d5_error(ok ? D5_ERR_NODEVICE : s, "communicator backend nccl not run: rank %d: %s",
                        (int)c->rank, ok ? "another rank could not load the nccl plugin" : why);
    atomic_store(&plugin, t);
    return ops()->init(c, p);
}

static void fini(d5_comm *c)
{
    if (ops()) ops()->fini(c);
}

static d5_status allreduce(d5_comm *c, const d5__op_args *a)
{
    return ops()->allreduce(c, a);
}

static d5_status iallreduce(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    return ops()->iallreduce(c, a, r);
}

static d5_status broadcast(d5_comm *c, const d5__op_args *a)
{
    return ops()->broadcast(c, a);
}

static d5_status nccl_send(d5_comm *c, const d5__op_args *a)
{
    return ops()->send(c, a);
}

static d5_status nccl_recv(d5_comm *c, const d5__op_args *a)
{
    return ops()->recv(c, a);
}

static d5_status nccl_isend(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    return ops()->isend(c, a, r);
}

static d5_status nccl_irecv(d5_comm *c, const d5__op_args *a, d5_comm_request *r)
{
    return ops()->irecv(c, a, r);
}

static d5_status mem_alloc(d5_comm *c, size_t bytes, void **out)
{
    return ops()->mem_alloc(c, bytes, out);
}

static void mem_free(d5_comm *c, void *p)
{
    ops()->mem_free(c, p);
}

static d5_status mem_copy(d5_comm *c, void *dst, const void *src, size_t bytes, int to_device)
{
    return ops()->mem_copy(c, dst, src, bytes, to_device);
}

/* The same entries as the plugin's table (nccl.c), each handing over. */
const d5__comm_ops d5__comm_ops_nccl = {
    .init = init,
    .fini = fini,
    .allreduce = allreduce,
    .iallreduce = iallreduce,
    .broadcast = broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .isend = nccl_isend,
    .irecv = nccl_irecv,
    .mem_alloc = mem_alloc,
    .mem_free = mem_free,
    .mem_copy = mem_copy,
    .no_timeout = 1,
};
