/* The communicator: MPI initialisation shared by every communicator of the
 * process, creation over a backend of backends.def, and what every operation
 * does whatever the backend: argument checks, counters, timer regions. */
#include "comm_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- MPI, once per process ---- */

static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int live_comms; /* communicators alive */
static int owns_mpi;   /* 1 when d5 initialised MPI */
/* 1 once a freed communicator gave up an operation that never completed
 * (after a time-out): MPI_Finalize would wait for the missing rank. */
static int abandoned;

static int mpi_level(int32_t level)
{
    static const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                                 MPI_THREAD_MULTIPLE};
    return levels[level];
}

static int32_t d5_level(int provided)
{
    if (provided == MPI_THREAD_MULTIPLE) return D5_COMM_THREAD_MULTIPLE;
    if (provided == MPI_THREAD_SERIALIZED) return D5_COMM_THREAD_SERIALIZED;
    if (provided == MPI_THREAD_FUNNELED) return D5_COMM_THREAD_FUNNELED;
    return D5_COMM_THREAD_SINGLE;
}

static d5_status mpi_acquire(int32_t level, int32_t *provided_out, int32_t *owns_out)
{
    pthread_mutex_lock(&mpi_lock);
    int finalized = 0, initialized = 0, provided = MPI_THREAD_SINGLE;
    MPI_Finalized(&finalized);
    if (finalized) {
        pthread_mutex_unlock(&mpi_lock);
        return d5_error(D5_ERR_STATE,
                        "communicator: MPI was finalised in this process (when its last "
                        "communicator was freed) and cannot be initialised again; keep one "
                        "communicator alive for the whole program");
    }
    MPI_Initialized(&initialized);
    int rc = MPI_SUCCESS;
    if (!initialized) {
        rc = MPI_Init_thread(NULL, NULL, mpi_level(level), &provided);
        if (rc == MPI_SUCCESS) owns_mpi = 1;
    } else {
        rc = MPI_Query_thread(&provided);
    }
    if (rc != MPI_SUCCESS) {
        pthread_mutex_unlock(&mpi_lock);
        return d5__mpi_fail(NULL, rc, "%s", initialized ? "MPI_Query_thread" : "MPI_Init_thread");
    }
    live_comms++;
    *provided_out = d5_level(provided);
    *owns_out = owns_mpi;
    pthread_mutex_unlock(&mpi_lock);
    return D5_OK;
}

static void mpi_release(void)
{
    pthread_mutex_lock(&mpi_lock);
    if (--live_comms == 0 && owns_mpi) {
        if (!abandoned) MPI_Finalize();
        owns_mpi = 0;
    }
    pthread_mutex_unlock(&mpi_lock);
}

/* ---- Helpers of every file ---- */

d5_status d5__mpi_fail(const d5_comm *c, int rc, const char *fmt, ...)
{
    char what[256], msg[MPI_MAX_ERROR_STRING + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    if (c) return d5_error(D5_ERR_BACKEND, "rank %d: %s: %s", (int)c->rank, what, msg);
    return d5_error(D5_ERR_BACKEND, "%s: %s", what, msg);
}

MPI_Datatype d5__mpi_type(d5_dtype t)
{
    switch (t) {
    case D5_F32: return MPI_FLOAT;
    case D5_F64: return MPI_DOUBLE;
    case D5_F16:
    case D5_BF16: return MPI_UINT16_T;
    case D5_I8: return MPI_INT8_T;
    case D5_U8:
    case D5_BOOL: return MPI_UINT8_T;
    case D5_I16: return MPI_INT16_T;
    case D5_I32: return MPI_INT32_T;
    case D5_I64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

d5_status d5__check_int_count(const d5_comm *c, const char *what, size_t count)
{
    if (count <= (size_t)INT32_MAX) return D5_OK;
    return d5_error(D5_ERR_RANGE,
                    "rank %d: %s: a message of %zu elements exceeds MPI's int count (%d)",
                    (int)c->rank, what, count, INT32_MAX);
}

/* MPI guarantees tags up to 32767; d5's collectives cycle through them. */
int d5__coll_tag(d5_comm *c)
{
    return (int)(c->coll_seq++ % 32768u);
}

#if D5_SIM
/* Built with SimGrid's smpicc (d5-sim-allreduce): a sum costs the simulated
 * time of the model the driver sets, alpha + bytes * seconds per byte,
 * instead of the arithmetic, when that model is given. */
#include <smpi/smpi.h>
double d5__sim_reduce_alpha_s = 0, d5__sim_reduce_s_per_byte = 0;
#endif

void d5__reduce_sum(void *dst, const void *src, size_t n, d5_dtype t)
{
#if D5_SIM
    if (d5__sim_reduce_s_per_byte > 0) {
        smpi_execute(d5__sim_reduce_alpha_s +
                     (double)(n * d5_dtype_size(t)) * d5__sim_reduce_s_per_byte);
        return;
    }
#endif
    d5_comm_reduce_sum(dst, src, n, t);
}

/* ---- Creation ---- */

d5_comm_params d5_comm_default_params(void)
{
    return (d5_comm_params){
        .backend = "mpi", .thread_level = D5_COMM_THREAD_FUNNELED, .device = -1, .timeout_s = 0};
}

static d5_status describe(d5_comm *c)
{
    int rank = 0, size = 1, lrank = 0, lsize = 1, len = 0;
    int rc = MPI_Comm_rank(c->coll, &rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(c->coll, &size);
    MPI_Comm node = MPI_COMM_NULL;
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_split_type(c->coll, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(node, &lrank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(node, &lsize);
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS) return d5__mpi_fail(NULL, rc, "communicator: rank, size and node");
    c->rank = rank;
    c->size = size;
    c->local_rank = lrank;
    c->local_size = lsize;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS) lib[0] = '\0';
    lib[strcspn(lib, "\n,")] = '\0';
    /* Cut to the fields' sizes on purpose (the precision says so to the compiler). */
    snprintf(c->library, sizeof c->library, "%.*s", (int)sizeof c->library - 1, lib);
    char host[MPI_MAX_PROCESSOR_NAME + 1] = "";
    if (MPI_Get_processor_name(host, &len) != MPI_SUCCESS) host[0] = '\0';
    snprintf(c->host, sizeof c->host, "%.*s", (int)sizeof c->host - 1, host);
    return D5_OK;
}

static d5_status open_mpi_comms(d5_comm *c)
{
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->coll);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(c->coll, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(c->coll, &c->p2p);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(c->p2p, MPI_ERRORS_RETURN);
    if (rc != MPI_SUCCESS) return d5__mpi_fail(NULL, rc, "communicator: MPI_Comm_dup");
    return describe(c);
}

static void close_mpi_comms(d5_comm *c)
{
    if (c->p2p != MPI_COMM_NULL) MPI_Comm_free(&c->p2p);
    if (c->coll != MPI_COMM_NULL) MPI_Comm_free(&c->coll);
}

/* Under a time-out collectives are MPI's non-blocking ones, which do not
 * match blocking ones: every rank has a time-out, or none. */
static d5_status agree_timeout(d5_comm *c)
{
    int mine[2] = {c->timeout_ns > 0, c->timeout_ns == 0}, all[2] = {0, 0};
    int rc = MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, c->coll);
    if (rc != MPI_SUCCESS) return d5__mpi_fail(c, rc, "communicator: agreeing on the time-out");
    if (all[0] && all[1])
        return d5_error(D5_ERR_INVALID,
                        "rank %d: communicator: a time-out on some ranks only (here %g s): give "
                        "every rank one, or none",
                        (int)c->rank, c->timeout_s);
    return D5_OK;
}

d5_status d5_comm_create(const d5_comm_params *params, d5_comm **out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_comm_create: NULL output");
    d5_comm_params p = params ? *params : d5_comm_default_params();
    const char *name = p.backend ? p.backend : "mpi";
    const d5__backend *b = d5__backend_find(name);
    if (!b) {
        char names[128];
        d5__backend_names(names, sizeof names);
        return d5_error(D5_ERR_UNSUPPORTED, "communicator backend '%s' is unknown (backends: %s)",
                        name, names);
    }
    const char *why = d5__backend_unavailable(b);
    if (why) return d5_error(D5_ERR_UNSUPPORTED, "communicator backend '%s': %s", name, why);
    if (p.thread_level < D5_COMM_THREAD_SINGLE || p.thread_level > D5_COMM_THREAD_MULTIPLE)
        return d5_error(D5_ERR_INVALID, "communicator: thread level %d is outside 0..3",
                        (int)p.thread_level);
    if (!(p.timeout_s >= 0) || isinf(p.timeout_s))
        return d5_error(D5_ERR_INVALID,
                        "communicator: time-out %g s: expected 0 (none) or a finite number of "
                        "seconds",
                        p.timeout_s);

    d5_comm *c = d5_calloc(1, sizeof *c, "communicator");
    if (!c) return D5_ERR_NOMEM;
    c->backend = b;
    c->ops = b->ops;
    c->coll = c->p2p = MPI_COMM_NULL;
    c->device = -1;
    if (p.timeout_s > 0 && !b->ops->no_timeout) {
        /* At least 1 ns, at most about 30 years: beyond, forever. */
        c->timeout_s = p.timeout_s;
        c->timeout_ns = (uint64_t)fmax(1, ceil(fmin(p.timeout_s, 1e9) * 1e9));
    }
    int32_t owns = 0;
    d5_status s = mpi_acquire(p.thread_level, &c->thread_level, &owns);
    if (s != D5_OK) {
        d5_free(c);
        return s;
    }
    s = open_mpi_comms(c);
    if (s == D5_OK) s = agree_timeout(c);
    if (s == D5_OK && c->ops->init) s = c->ops->init(c, &p);
    if (s != D5_OK) {
        close_mpi_comms(c);
        d5_free(c);
        mpi_release();
        return s;
    }
    *out = c;
    return D5_OK;
}

/* Under a time-out: what is pending (a timed-out operation among it) gets
 * the time-out once more, all together; what is still incomplete then is
 * given up, and MPI is no longer finalised. */
static void drain(d5_comm *c)
{
    uint64_t deadline = d5__deadline(c);
    while (c->pending) {
        d5_comm_request *r = c->pending;
        d5_status s;
        if (!d5__request_wait_quiet(r, deadline, &s)) {
            r->abandoned = 1;
            pthread_mutex_lock(&mpi_lock);
            abandoned = 1;
            pthread_mutex_unlock(&mpi_lock);
        }
        d5__request_free(r);
    }
}

void d5_comm_free(d5_comm *c)
{
    if (!c) return;
    if (c->timeout_ns) drain(c);
    while (c->pending) {
        d5_comm_request *r = c->pending;
        int done = 0;
        if (r->progress(r, 1, &done) != D5_OK) {
            /* Freeing cannot fail: the request ends here either way. */
        }
        d5__request_free(r);
    }
    if (c->ops->fini) c->ops->fini(c);
    close_mpi_comms(c);
    d5__counters_free(&c->counters);
    d5_free(c);
    mpi_release();
}

void d5_comm_abort(d5_comm *c, int code)
{
    fflush(stdout);
    fflush(stderr);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Abort(c ? c->coll : MPI_COMM_WORLD, code);
    /* MPI_Abort does not return; without MPI this process is the job. */
    _Exit(code);
}

double d5_comm_timeout(const d5_comm *c)
{
    return c ? c->timeout_s : 0;
}

void d5_comm_info_get(const d5_comm *c, d5_comm_info *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!c) return;
    out->backend = c->backend->name;
    out->rank = c->rank;
    out->size = c->size;
    out->local_rank = c->local_rank;
    out->local_size = c->local_size;
    out->thread_level = c->thread_level;
    out->exact_counts = c->backend->exact_counts;
    out->device = c->device;
    pthread_mutex_lock(&mpi_lock);
    out->owns_mpi = owns_mpi;
    pthread_mutex_unlock(&mpi_lock);
    snprintf(out->library, sizeof out->library, "%s", c->library);
    snprintf(out->host, sizeof out->host, "%s", c->host);
}

int32_t d5_comm_rank(const d5_comm *c)
{
    return c ? c->rank : -1;
}

int32_t d5_comm_size(const d5_comm *c)
{
    return c ? c->size : 0;
}

d5_status d5_comm_attach_timer(d5_comm *c, d5_timer *t)
{
    if (!c) return d5_error(D5_ERR_INVALID, "d5_comm_attach_timer: NULL communicator");
    if (!t) {
        c->timer = NULL;
        return D5_OK;
    }
    d5_timer_id ids[4];
    const char *keys[4] = {D5_KEY_COMM, D5_KEY_ALLREDUCE, D5_KEY_BROADCAST, D5_KEY_WAIT};
    for (int i = 0; i < 4; i++) {
        d5_status s = d5_timer_key(t, keys[i], &ids[i]);
        if (s != D5_OK) return s;
    }
    c->key_comm = ids[0];
    c->key_allreduce = ids[1];
    c->key_broadcast = ids[2];
    c->key_wait = ids[3];
    c->timer = t;
    return D5_OK;
}

/* ---- Memory ---- */

d5_status d5_comm_mem_alloc(d5_comm *c, size_t bytes, void **out)
{
    if (!c || !out) return d5_error(D5_ERR_INVALID, "d5_comm_mem_alloc: NULL argument");
    if (c->ops->mem_alloc) return c->ops->mem_alloc(c, bytes, out);
    d5_allocator a = d5_allocator_get();
    void *p = a.alloc(a.ctx, bytes ? bytes : 64, 64);
    if (!p)
        return d5_error(D5_ERR_NOMEM, "rank %d: out of memory allocating %zu bytes to communicate",
                        (int)c->rank, bytes);
    *out = p;
    return D5_OK;
}

void d5_comm_mem_free(d5_comm *c, void *p)
{
    if (!c || !p) return;
    if (c->ops->mem_free)
        c->ops->mem_free(c, p);
    else
        d5_free(p);
}

static d5_status mem_copy(d5_comm *c, void *dst, const void *src, size_t bytes, int to_device)
{
    if (!c || ((!dst || !src) && bytes))
        return d5_error(D5_ERR_INVALID, "d5_comm_mem_%s: NULL argument",
                        to_device ? "upload" : "download");
    if (!bytes) return D5_OK;
    if (c->ops->mem_copy) return c->ops->mem_copy(c, dst, src, bytes, to_device);
    memcpy(dst, src, bytes);
    return D5_OK;
}

d5_status d5_comm_mem_upload(d5_comm *c, void *dst, const void *host, size_t bytes)
{
    return mem_copy(c, dst, host, bytes, 1);
}

d5_status d5_comm_mem_download(d5_comm *c, void *host, const void *src, size_t bytes)
{
    return mem_copy(c, host, src, bytes, 0);
}
