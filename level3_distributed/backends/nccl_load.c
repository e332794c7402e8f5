/* nccl in a build with the CUDA toolkit and NCCL: the backend lives in the
 * nccl plugin (nccl.c, nccl_plugin.c), which d5 loads the first time a
 * communicator of this backend is created, so that neither d5 nor level 3
 * needs the CUDA runtime or NCCL to start. Creating a communicator loads it, on
 * every rank, and the plugin's table serves the communicator from then on. */
#include "../../core/plugin.h"
#include "../comm_internal.h"

/* The plugin loads on every rank, or no rank goes on. Its table then takes
 * the place of this one for the communicator. */
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
    c->ops = t;
    return c->ops->init(c, p);
}

/* no_timeout as in the plugin's table (nccl.c): it is read before init. */
const d5__comm_ops d5__comm_ops_nccl = {.init = init, .no_timeout = 1};
