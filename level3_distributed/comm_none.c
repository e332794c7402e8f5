/* The communicator in a build without MPI: the same functions, each saying
 * that d5 was built without MPI. The backend list (backends.c) and the
 * alpha-beta fit work as usual. */
#include "backends.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_MPI "d5 was built without MPI (install libopenmpi-dev and openmpi-bin, reconfigure)"

static d5_status none(const char *what)
{
    return d5_error(D5_ERR_UNSUPPORTED, "%s: " NO_MPI, what);
}

d5_comm_params d5_comm_default_params(void)
{
    return (d5_comm_params){
        .backend = "mpi", .thread_level = D5_COMM_THREAD_FUNNELED, .device = -1, .timeout_s = 0};
}

d5_status d5_comm_create(const d5_comm_params *params, d5_comm **out)
{
    const char *name = params && params->backend ? params->backend : "mpi";
    if (!out) return d5_error(D5_ERR_INVALID, "d5_comm_create: NULL output");
    if (!d5__backend_find(name)) {
        char names[128];
        d5__backend_names(names, sizeof names);
        return d5_error(D5_ERR_UNSUPPORTED, "communicator backend '%s' is unknown (backends: %s)",
                        name, names);
    }
    return d5_error(D5_ERR_UNSUPPORTED, "communicator backend '%s': " NO_MPI, name);
}

void d5_comm_free(d5_comm *c)
{
    (void)c;
}

void d5_comm_info_get(const d5_comm *c, d5_comm_info *out)
{
    (void)c;
    if (out) memset(out, 0, sizeof *out);
}

int32_t d5_comm_rank(const d5_comm *c)
{
    (void)c;
    return -1;
}

int32_t d5_comm_size(const d5_comm *c)
{
    (void)c;
    return 0;
}

d5_status d5_comm_mem_alloc(d5_comm *c, size_t bytes, void **out)
{
    (void)c, (void)bytes, (void)out;
    return none("d5_comm_mem_alloc");
}

void d5_comm_mem_free(d5_comm *c, void *p)
{
    (void)c, (void)p;
}

d5_status d5_comm_mem_upload(d5_comm *c, void *dst, const void *host, size_t bytes)
{
    (void)c, (void)dst, (void)host, (void)bytes;
    return none("d5_comm_mem_upload");
}

d5_status d5_comm_mem_download(d5_comm *c, void *host, const void *src, size_t bytes)
{
    (void)c, (void)host, (void)src, (void)bytes;
    return none("d5_comm_mem_download");
}

d5_status d5_comm_barrier(d5_comm *c)
{
    (void)c;
    return none("barrier");
}

d5_status d5_comm_broadcast(d5_comm *c, void *buf, size_t count, d5_dtype dtype, int32_t root,
                            const char *name)
{
    (void)c, (void)buf, (void)count, (void)dtype, (void)root, (void)name;
    return none("broadcast");
}

d5_status d5_comm_allreduce(d5_comm *c, void *buf, size_t count, d5_dtype dtype, const char *name)
{
    (void)c, (void)buf, (void)count, (void)dtype, (void)name;
    return none("allreduce");
}

d5_status d5_comm_send(d5_comm *c, const void *buf, size_t count, d5_dtype dtype, int32_t dest,
                       int32_t tag, const char *name)
{
    (void)c, (void)buf, (void)count, (void)dtype, (void)dest, (void)tag, (void)name;
    return none("send");
}

d5_status d5_comm_recv(d5_comm *c, void *buf, size_t count, d5_dtype dtype, int32_t source,
                       int32_t tag, const char *name)
{
    (void)c, (void)buf, (void)count, (void)dtype, (void)source, (void)tag, (void)name;
    return none("recv");
}

d5_status d5_comm_isend(d5_comm *c, const void *buf, size_t count, d5_dtype dtype, int32_t dest,
                        int32_t tag, const char *name, d5_comm_request **req)
{
    (void)c, (void)buf, (void)count, (void)dtype, (void)dest, (void)tag, (void)name;
    if (req) *req = NULL;
    return none("isend");
}

d5_status d5_comm_irecv(d5_comm *c, void *buf, size_t count, d5_dtype dtype, int32_t source,
                        int32_t tag, const char *name, d5_comm_request **req)
{
    (void)c, (void)buf, (void)count, (void)dtype, (void)source, (void)tag, (void)name;
    if (req) *req = NULL;
    return none("irecv");
}

d5_status d5_comm_iallreduce(d5_comm *c, void *buf, size_t count, d5_dtype dtype, const char *name,
                             d5_comm_request **req)
{
    (void)c, (void)buf, (void)count, (void)dtype, (void)name;
    if (req) *req = NULL;
    return none("iallreduce");
}

d5_status d5_comm_wait(d5_comm_request **req)
{
    (void)req;
    return none("d5_comm_wait");
}

d5_status d5_comm_test(d5_comm_request **req, int32_t *done)
{
    (void)req;
    if (done) *done = 1;
    return none("d5_comm_test");
}

d5_status d5_comm_agree(d5_comm *c, double *values, size_t n, d5_comm_reduce op)
{
    (void)c, (void)values, (void)n, (void)op;
    return none("agree");
}

d5_status d5_comm_counters(const d5_comm *c, d5_comm_op op, const char *name, d5_comm_counter *out)
{
    (void)c, (void)op, (void)name, (void)out;
    return none("d5_comm_counters");
}

size_t d5_comm_counter_names(const d5_comm *c)
{
    (void)c;
    return 0;
}

const char *d5_comm_counter_name(const d5_comm *c, size_t i)
{
    (void)c, (void)i;
    return NULL;
}

void d5_comm_counters_reset(d5_comm *c)
{
    (void)c;
}

d5_status d5_comm_attach_timer(d5_comm *c, d5_timer *t)
{
    (void)c, (void)t;
    return none("d5_comm_attach_timer");
}

void d5_comm_abort(d5_comm *c, int code)
{
    (void)c;
    fflush(stdout);
    fflush(stderr);
    _Exit(code); /* without MPI this process is the whole job */
}

double d5_comm_timeout(const d5_comm *c)
{
    (void)c;
    return 0;
}

d5_status d5_comm_trace_merge(d5_comm *c, d5_timer *t, const char *path)
{
    (void)c, (void)t, (void)path;
    return none("d5_comm_trace_merge");
}
