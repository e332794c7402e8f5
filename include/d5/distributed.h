/* d5 level 3: the communicator of distributed training.
 *
 *     d5_comm *c;
 *     d5_comm_params p = d5_comm_default_params();
 *     p.backend = "ring";
 *     d5_comm_create(&p, &c);               (collective: every rank calls it)
 *     d5_comm_allreduce(c, grad, n, D5_F32, "conv1.weight");
 *     d5_comm_counters(c, D5_COMM_OP_ALLREDUCE, NULL, &bytes);
 *     d5_comm_free(c);
 *
 * A communicator spans every process of the job (MPI_COMM_WORLD, launched by
 * mpirun, mpiexec or srun; a program started alone is a job of one). Its
 * operations go through one backend, chosen by name at creation:
 *
 *   mpi     the MPI library's own collectives (MPI_Allreduce, MPI_Bcast, ...)
 *   ring    d5's ring allreduce on MPI point-to-point messages: reduce-scatter,
 *           then allgather, in chunks of ceil(count / P) elements
 *   recdbl  d5's recursive doubling on point-to-point messages; a job whose
 *           size is not a power of two folds its extra ranks in and out
 *   nccl    NVIDIA NCCL on device memory (built with the CUDA toolkit and NCCL)
 *
 * Every operation counts the bytes and messages it sends and receives, per
 * operation kind and per name (the tensor or tag the caller passes), and
 * records regions into an attached d5_timer. docs/level3.md gives the byte
 * formulas of each backend.
 *
 * MPI: d5_comm_create initialises MPI (MPI_Init_thread) when nobody has, and
 * then finalises it when the last communicator is freed; MPI cannot be
 * initialised again in that process, so a program that creates communicators
 * one after another keeps one alive. A program that initialised MPI itself
 * finalises it itself, after freeing its communicators. MPI types never appear
 * here: d5 built without MPI has the same functions, which return
 * D5_ERR_UNSUPPORTED ("d5 was built without MPI"), except the backend list,
 * d5_comm_op_name and d5_alpha_beta_fit, which work.
 *
 * Collective calls (create, free, barrier, broadcast, allreduce, agree and
 * their non-blocking forms) must be made by every rank, in the same order,
 * with matching counts. A communicator is not thread safe: use it from one
 * thread at a time (by default MPI is initialised at MPI_THREAD_FUNNELED: the
 * thread that created it). Errors never abort the job: MPI runs with
 * MPI_ERRORS_RETURN and its failures come back as D5_ERR_BACKEND with the
 * rank, the operation, the count and MPI's message.
 */
#ifndef D5_DISTRIBUTED_H
#define D5_DISTRIBUTED_H

#include "d5/core.h"
#include "d5/timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Timer keys recorded by the communicator beside D5_KEY_COMM. */
#define D5_KEY_ALLREDUCE "ALLREDUCE"
#define D5_KEY_BROADCAST "BROADCAST"
#define D5_KEY_WAIT      "WAIT"

/* Tags of d5_comm_send and d5_comm_recv: 0 .. D5_COMM_TAG_MAX. */
#define D5_COMM_TAG_MAX 32767

typedef struct d5_comm d5_comm;
typedef struct d5_comm_request d5_comm_request;

/* ---- Backends -------------------------------------------------------------------------- */

typedef struct d5_comm_backend_info {
    const char *name;        /* "ring" */
    const char *description; /* one line */
    int32_t built;           /* 0 when this build of d5 lacks it (nccl without CUDA/NCCL) */
    int32_t exact_counts;    /* 1: collectives count every message d5 posts; 0: they count
                                the payload handed to a library (see d5_comm_counter) */
} d5_comm_backend_info;

/* Number of backends (built or not) and one of them, in the order d5 lists
 * them. D5_ERR_RANGE for i >= d5_comm_backend_count(). */
D5_API size_t d5_comm_backend_count(void);
D5_API D5_NODISCARD d5_status d5_comm_backend_at(size_t i, d5_comm_backend_info *out);

/* ---- Creation -------------------------------------------------------------------------- */

/* Thread support asked of MPI_Init_thread when d5 initialises MPI. */
typedef enum d5_comm_thread_level {
    D5_COMM_THREAD_SINGLE = 0,
    D5_COMM_THREAD_FUNNELED = 1,
    D5_COMM_THREAD_SERIALIZED = 2,
    D5_COMM_THREAD_MULTIPLE = 3
} d5_comm_thread_level;

typedef struct d5_comm_params {
    const char *backend;  /* "mpi" (default), "ring", "recdbl" or "nccl"; copied */
    int32_t thread_level; /* a d5_comm_thread_level; default FUNNELED */
    int32_t device;       /* nccl: the CUDA device; -1 (default): local rank modulo devices */
} d5_comm_params;

D5_API d5_comm_params d5_comm_default_params(void);

/* Creates a communicator over every rank of the job (params NULL for the
 * defaults). Collective. An unknown backend is D5_ERR_UNSUPPORTED naming the
 * backends there are; nccl is D5_ERR_UNSUPPORTED when this build lacks it and
 * D5_ERR_NODEVICE ("not run: no CUDA device") when a rank has no usable CUDA
 * device, on every rank alike. D5_ERR_STATE once MPI has been finalised. */
D5_API D5_NODISCARD d5_status d5_comm_create(const d5_comm_params *params, d5_comm **out);
/* Frees the communicator (collective): requests still pending are waited for
 * and their handles become invalid. Finalises MPI when d5 initialised it and
 * this was the last communicator. NULL is a no-op. */
D5_API void d5_comm_free(d5_comm *c);

typedef struct d5_comm_info {
    const char *backend;  /* name of the backend (static) */
    int32_t rank, size;   /* in the job */
    int32_t local_rank;   /* among the ranks on this node (MPI_COMM_TYPE_SHARED) */
    int32_t local_size;   /* ranks on this node */
    int32_t thread_level; /* the d5_comm_thread_level MPI provides */
    int32_t owns_mpi;     /* 1 when d5 initialised MPI and will finalise it */
    int32_t exact_counts; /* as d5_comm_backend_info */
    int32_t device;       /* nccl: the CUDA device; -1 otherwise */
    char library[160];    /* MPI_Get_library_version, first line */
    char host[64];        /* MPI_Get_processor_name */
} d5_comm_info;

D5_API void d5_comm_info_get(const d5_comm *c, d5_comm_info *out);
D5_API int32_t d5_comm_rank(const d5_comm *c);
D5_API int32_t d5_comm_size(const d5_comm *c);

/* ---- Memory for operations --------------------------------------------------------------- */

/* Buffers of the mpi, ring and recdbl backends are host memory; those of nccl
 * are device memory on the communicator's device. These allocate what the
 * backend takes (64-byte aligned host memory through d5's allocator, or
 * cudaMalloc), so that one program drives every backend. Free with
 * d5_comm_mem_free (NULL is a no-op). */
D5_API D5_NODISCARD d5_status d5_comm_mem_alloc(d5_comm *c, size_t bytes, void **out);
D5_API void d5_comm_mem_free(d5_comm *c, void *p);
/* Copies between host memory and memory from d5_comm_mem_alloc. */
D5_API D5_NODISCARD d5_status d5_comm_mem_upload(d5_comm *c, void *dst, const void *host,
                                                 size_t bytes);
D5_API D5_NODISCARD d5_status d5_comm_mem_download(d5_comm *c, void *host, const void *src,
                                                   size_t bytes);

/* ---- Operations ---------------------------------------------------------------------------- */

/* `name` (may be NULL; copied when first seen) labels the operation in the
 * counters: a tensor name, a phase. Counts are elements of `dtype`. Buffers are
 * borrowed for the call (blocking forms) or until the request completes
 * (non-blocking forms), and must not be touched meanwhile. Bad arguments are
 * D5_ERR_INVALID; an MPI, NCCL or CUDA failure is D5_ERR_BACKEND; a message
 * over MPI's int count of elements is D5_ERR_RANGE. */

/* Waits until every rank has called it. */
D5_API D5_NODISCARD d5_status d5_comm_barrier(d5_comm *c);
/* Copies `count` elements from rank `root`'s buffer into every rank's. Any dtype. */
D5_API D5_NODISCARD d5_status d5_comm_broadcast(d5_comm *c, void *buf, size_t count, d5_dtype dtype,
                                                int32_t root, const char *name);
/* Sums `buf` over every rank, in place: afterwards each rank holds the sum,
 * the same bits on every rank. float32 and float64 (others:
 * D5_ERR_UNSUPPORTED). count 0 is a valid no-op that is still counted as a call. */
D5_API D5_NODISCARD d5_status d5_comm_allreduce(d5_comm *c, void *buf, size_t count, d5_dtype dtype,
                                                const char *name);
/* Point to point, with tag 0..D5_COMM_TAG_MAX (the nccl backend does not match
 * tags: messages between two ranks arrive in order). A received message may be
 * shorter than `count`; the counters record its real size; a longer one is
 * D5_ERR_BACKEND (truncated). */
D5_API D5_NODISCARD d5_status d5_comm_send(d5_comm *c, const void *buf, size_t count,
                                           d5_dtype dtype, int32_t dest, int32_t tag,
                                           const char *name);
D5_API D5_NODISCARD d5_status d5_comm_recv(d5_comm *c, void *buf, size_t count, d5_dtype dtype,
                                           int32_t source, int32_t tag, const char *name);

/* Non-blocking forms: start the operation and return a request in *req that
 * d5_comm_wait or d5_comm_test completes. d5's own algorithms (ring, recdbl)
 * advance inside d5_comm_test and d5_comm_wait, as MPI's non-blocking
 * collectives do without a progress thread. On failure *req is NULL. */
D5_API D5_NODISCARD d5_status d5_comm_isend(d5_comm *c, const void *buf, size_t count,
                                            d5_dtype dtype, int32_t dest, int32_t tag,
                                            const char *name, d5_comm_request **req);
D5_API D5_NODISCARD d5_status d5_comm_irecv(d5_comm *c, void *buf, size_t count, d5_dtype dtype,
                                            int32_t source, int32_t tag, const char *name,
                                            d5_comm_request **req);
D5_API D5_NODISCARD d5_status d5_comm_iallreduce(d5_comm *c, void *buf, size_t count,
                                                 d5_dtype dtype, const char *name,
                                                 d5_comm_request **req);
/* Completes the request and frees it (*req becomes NULL), also on failure.
 * NULL *req is a no-op. */
D5_API D5_NODISCARD d5_status d5_comm_wait(d5_comm_request **req);
/* Advances the request; *done is 1 when it completed, and then (or on
 * failure) the request is freed and *req becomes NULL. */
D5_API D5_NODISCARD d5_status d5_comm_test(d5_comm_request **req, int32_t *done);

/* Host-side agreement: reduces n doubles over every rank in place with MPI,
 * whatever the backend, so that every rank holds the same values: a time, a
 * stop decision, a loss. Counted as D5_COMM_OP_AGREE, never as an allreduce. */
typedef enum d5_comm_reduce { D5_COMM_SUM = 0, D5_COMM_MAX = 1, D5_COMM_MIN = 2 } d5_comm_reduce;
D5_API D5_NODISCARD d5_status d5_comm_agree(d5_comm *c, double *values, size_t n,
                                            d5_comm_reduce op);

/* ---- Counters ------------------------------------------------------------------------------ */

#define D5_COMM_OP_LIST(X)                                                                         \
    X(ALLREDUCE, "allreduce")                                                                      \
    X(BROADCAST, "broadcast")                                                                      \
    X(SEND, "send")                                                                                \
    X(RECV, "recv")                                                                                \
    X(BARRIER, "barrier")                                                                          \
    X(AGREE, "agree")

typedef enum d5_comm_op {
    D5_COMM_OP_ALL = -1, /* in queries: the sum over every kind */
#define D5__COMM_OP_ENUM(name, text) D5_COMM_OP_##name,
    D5_COMM_OP_LIST(D5__COMM_OP_ENUM)
#undef D5__COMM_OP_ENUM
        D5_COMM_OP_COUNT
} d5_comm_op;

/* "allreduce" etc.; "all" for D5_COMM_OP_ALL; "unknown" otherwise. */
D5_API const char *d5_comm_op_name(d5_comm_op op);

/* What this rank sent and received. With d5's own algorithms (ring, recdbl,
 * and their broadcast) and for point-to-point operations, every message d5
 * posted, padding included. Collectives delegated to a library (the mpi and
 * nccl backends, agree) count their payload as one message each way: an
 * allreduce of S bytes sends S and receives S; a broadcast sends S at the root
 * and receives S elsewhere; a barrier moves nothing. Non-blocking operations
 * count their messages when they are posted (receives: when they complete, at
 * their real size). */
typedef struct d5_comm_counter {
    uint64_t calls; /* operations started */
    uint64_t bytes_sent, bytes_recv;
    uint64_t msgs_sent, msgs_recv;
} d5_comm_counter;

/* This rank's counters since creation or the last reset, for one kind of
 * operation or D5_COMM_OP_ALL, and for the operations that passed `name`, or
 * all of them with name NULL. D5_ERR_NOTFOUND for a name no operation passed;
 * D5_ERR_INVALID for an unknown kind. */
D5_API D5_NODISCARD d5_status d5_comm_counters(const d5_comm *c, d5_comm_op op, const char *name,
                                               d5_comm_counter *out);
/* The names seen since the last reset, in the order first seen; the string is
 * borrowed until the next reset or free. NULL for i out of range. */
D5_API size_t d5_comm_counter_names(const d5_comm *c);
D5_API const char *d5_comm_counter_name(const d5_comm *c, size_t i);
/* Zeroes every counter and forgets the names. */
D5_API void d5_comm_counters_reset(d5_comm *c);

/* ---- Timing ---------------------------------------------------------------------------------- */

/* Attaches a timer (borrowed: it must outlive the communicator or be detached
 * with NULL). From then on every operation records D5_KEY_COMM around the
 * time the caller spends inside it (unless the caller has COMM open itself:
 * the caller's region then covers it), blocking allreduces D5_KEY_ALLREDUCE,
 * blocking broadcasts D5_KEY_BROADCAST, and d5_comm_wait D5_KEY_WAIT. A
 * failure to record never fails an operation. */
D5_API D5_NODISCARD d5_status d5_comm_attach_timer(d5_comm *c, d5_timer *t);

/* ---- The alpha-beta model ----------------------------------------------------------------- */

/* t(S) = alpha + beta * S fitted to n measured (bytes, seconds) points by
 * least squares on relative residuals (weights 1/t^2, so that a 1 us latency
 * counts as much as a 10 ms transfer). r2 is the coefficient of determination
 * in the same weighting. Needs no MPI. D5_ERR_INVALID for n < 2, sizes that
 * are all equal, or a time that is not positive and finite. */
typedef struct d5_alpha_beta {
    double alpha_s;         /* latency, seconds */
    double beta_s_per_byte; /* inverse bandwidth, seconds per byte */
    double r2;
    size_t n;
} d5_alpha_beta;
D5_API D5_NODISCARD d5_status d5_alpha_beta_fit(const double *bytes, const double *seconds,
                                                size_t n, d5_alpha_beta *out);

#ifdef __cplusplus
}
#endif
#endif
