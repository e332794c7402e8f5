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
 * d5_comm_op_name and the alpha-beta model (d5_alpha_beta_*), which work.
 *
 * Collective calls (create, free, barrier, broadcast, allreduce, agree and
 * their non-blocking forms) must be made by every rank, in the same order,
 * with matching counts. A communicator is not thread safe: use it from one
 * thread at a time (by default MPI is initialised at MPI_THREAD_FUNNELED: the
 * thread that created it). Errors never abort the job: MPI runs with
 * MPI_ERRORS_RETURN and its failures come back as D5_ERR_BACKEND with the
 * rank, the operation, the count and MPI's message.
 *
 * Time-outs: by default a blocking operation waits as long as MPI does, for
 * ever if a rank has crashed or hangs. With d5_comm_params.timeout_s > 0,
 * every blocking operation (barrier, broadcast, allreduce, send, recv, agree)
 * and d5_comm_wait gives up after that many seconds without completing and
 * returns D5_ERR_TIMEOUT ("rank 1: allreduce 'grad' (1024 float32) did not
 * complete within 5 s: a rank has crashed, hangs or is far behind"). MPI
 * cannot take an operation back: the one that timed out stays with the
 * communicator, its buffers stay borrowed, and the communicator is unusable
 * from then on (every later operation, wait and test returns D5_ERR_TIMEOUT
 * at once, naming the first). The usual answer is d5_comm_abort, which ends
 * the job; d5_comm_free gives what is outstanding the time-out once more.
 */
#ifndef D5_DISTRIBUTED_H
#define D5_DISTRIBUTED_H

#include "d5/core.h"
#include "d5/timer.h"
#include "d5/training.h"

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
    /* Seconds a blocking operation or d5_comm_wait may wait before it returns
     * D5_ERR_TIMEOUT; 0 (default): for ever. Finite and not negative; every
     * rank has one or none (the values may differ). The nccl backend ignores
     * it (its waits are on the device). */
    double timeout_s;
} d5_comm_params;

D5_API d5_comm_params d5_comm_default_params(void);

/* Creates a communicator over every rank of the job (params NULL for the
 * defaults). Collective. An unknown backend is D5_ERR_UNSUPPORTED naming the
 * backends there are; nccl is D5_ERR_UNSUPPORTED when this build lacks it and
 * D5_ERR_NODEVICE ("not run: no CUDA device") when a rank has no usable CUDA
 * device, on every rank alike. D5_ERR_STATE once MPI has been finalised;
 * D5_ERR_INVALID for a thread level outside the enum, a time-out that is
 * negative or not finite, or one on some ranks only (on every rank alike). */
D5_API D5_NODISCARD d5_status d5_comm_create(const d5_comm_params *params, d5_comm **out);
/* Frees the communicator (collective): requests still pending are waited for
 * and their handles become invalid. Finalises MPI when d5 initialised it and
 * this was the last communicator. NULL is a no-op. Under a time-out, what is
 * pending (an operation that timed out included) gets the time-out once more;
 * what is still incomplete then is given up (messages cancelled), and MPI is
 * not finalised, since MPI_Finalize would wait for the missing rank: the
 * launcher then reports the job as failed. */
D5_API void d5_comm_free(d5_comm *c);
/* Ends every process of the job at once with exit status `code` (MPI_Abort
 * on the communicator; c may be NULL: MPI_COMM_WORLD). It flushes stdout and
 * stderr first and does not return; nothing is freed. d5 never calls it
 * itself: it is the caller's answer to D5_ERR_TIMEOUT, when waiting longer
 * would only hang the job. Without MPI it ends this process (_Exit). */
D5_API void d5_comm_abort(d5_comm *c, int code);
/* The time-out of the blocking operations in seconds; 0 when there is none
 * (or the backend ignores it, as nccl does, or c is NULL). */
D5_API double d5_comm_timeout(const d5_comm *c);

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
 * over MPI's int count of elements is D5_ERR_RANGE (under a time-out the mpi
 * backend's allreduce and broadcast too, as their non-blocking forms).
 * D5_ERR_TIMEOUT: the time-out passed (the buffers then stay borrowed until
 * d5_comm_free), or an earlier operation timed out. */

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
 * NULL *req is a no-op. Under a time-out, D5_ERR_TIMEOUT when the request
 * did not complete in time: *req becomes NULL, and the request stays with the
 * communicator until d5_comm_free. */
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

/* Writes one Chrome/Perfetto trace of every rank's timer `t` (borrowed) to
 * `path` (read on rank 0 only; others may pass NULL): the format of
 * d5_report_trace, with a process per rank, pid = rank, named "rank N (host)".
 * Collective. Each rank renders its own events (d5_report_trace_events) and
 * sends them to rank 0 with d5_comm_send of bytes (tag D5_COMM_TAG_MAX, counted
 * under the name "trace": leave no receive of that tag pending across the
 * call); rank 0 writes the file atomically. One time line: the ranks agree on
 * the earliest timer origin and shift their regions onto it. On one node the
 * origins are read on CLOCK_MONOTONIC, the clock the timers run on, and the
 * ranks line up to within a microsecond or so; across nodes they are read on
 * the wall clock, so the ranks line up only as well as the nodes' clocks
 * agree (NTP: often a millisecond). Every rank returns the same status: a
 * failure on one rank (a NULL timer: D5_ERR_INVALID; the file: D5_ERR_IO)
 * fails the call everywhere, naming the rank. */
D5_API D5_NODISCARD d5_status d5_comm_trace_merge(d5_comm *c, d5_timer *t, const char *path);

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
/* The time in seconds of a ring allreduce (reduce-scatter, then allgather:
 * 2 (P - 1) messages of S / P bytes, one after another) of `bytes` bytes on
 * `ranks` ranks in the alpha-beta model:
 *     2 (P - 1) alpha + 2 (P - 1) / P * S * beta.
 * What the model leaves out: the reduction's arithmetic, contention between
 * the messages of one step, and the padding of the last chunk when P does not
 * divide the element count. 0 for one rank (nothing moves); NaN for ranks < 1,
 * a negative or non-finite size, or a non-finite alpha or beta. Needs no MPI;
 * thread safe. `d5 scaling --model-ranks` models its rows with it. */
D5_API double d5_alpha_beta_ring_allreduce_s(double alpha_s, double beta_s_per_byte, double bytes,
                                             int64_t ranks);

/* ---- The piecewise model: exchanges and the reduction ------------------------------------- */

/* One alpha-beta line is a poor model of a message's time across sizes: the
 * transport switches protocol (eager to rendezvous, around a few KiB), and
 * large messages leave the caches. A piecewise model fits a line per range
 * of sizes: segment k holds from from_bytes[k] (from_bytes[0] = 0) to the
 * next segment's start, with its own alpha and beta. d5_piecewise_fit
 * chooses the number of segments (1 to max_segments, each of at least 3
 * points) and the breakpoints by dynamic programming over the sorted sizes,
 * minimising the weighted squared relative residuals as d5_alpha_beta_fit,
 * and keeps the number of segments with the smallest Bayesian information
 * criterion, n ln(SSE / n) + (3K - 1) ln n: a segment more must pay for
 * itself. Breakpoints fall at the geometric mean of the neighbouring sizes.
 * D5_ERR_INVALID as d5_alpha_beta_fit, or for sizes out of order. */
#define D5_PIECEWISE_MAX 4
typedef struct d5_piecewise {
    int32_t nseg;
    double from_bytes[D5_PIECEWISE_MAX];
    double alpha_s[D5_PIECEWISE_MAX];
    double beta_s_per_byte[D5_PIECEWISE_MAX];
    double r2; /* of the whole fit, weighted as d5_alpha_beta_fit's */
    size_t n;
} d5_piecewise;
D5_API D5_NODISCARD d5_status d5_piecewise_fit(const double *bytes, const double *seconds, size_t n,
                                               int32_t max_segments, d5_piecewise *out);
/* The model's time for a message of `bytes`: the line of its segment, never
 * below 0. NaN for a NULL model or a negative size. */
D5_API double d5_piecewise_time_s(const d5_piecewise *m, double bytes);
/* The ring allreduce of `bytes` on `ranks` ranks from what a step costs: each
 * of its 2 (P - 1) steps sends and receives a chunk of S / P bytes at once
 * (`exchange`, fitted to d5 pingpong --exchange), and the P - 1 steps of the
 * reduce-scatter then add the chunk received (`reduce`, fitted to the same
 * tool's timing of the sum both ranks do at once):
 *     2 (P - 1) exchange(S / P) + (P - 1) reduce(S / P).
 * 0 for one rank; NaN for a NULL model, ranks < 1 or a bad size. */
D5_API double d5_piecewise_ring_allreduce_s(const d5_piecewise *exchange,
                                            const d5_alpha_beta *reduce, double bytes,
                                            int64_t ranks);
/* The element-wise sum d5's collectives (ring, recdbl) combine with:
 * dst[i] += src[i] for n float32 or float64 elements (other types: nothing);
 * public so that calibration can time it (d5 pingpong --exchange). */
D5_API void d5_comm_reduce_sum(void *dst, const void *src, size_t n, d5_dtype dtype);

/* ---- Probing ------------------------------------------------------------------------------ */

/* Wildcards of d5_comm_iprobe. */
#define D5_COMM_ANY_SOURCE (-1)
#define D5_COMM_ANY_TAG    (-1)

typedef struct d5_comm_probe {
    int32_t found;  /* 1: a message is waiting */
    int32_t source; /* its sender and tag */
    int32_t tag;
    size_t bytes; /* its size */
} d5_comm_probe;

/* Whether a point-to-point message from `source` (or D5_COMM_ANY_SOURCE) with
 * `tag` (or D5_COMM_ANY_TAG) has arrived, without receiving it: receive it
 * with d5_comm_recv from out->source with out->tag. Never blocks. The mpi,
 * ring and recdbl backends; nccl: D5_ERR_UNSUPPORTED. */
D5_API D5_NODISCARD d5_status d5_comm_iprobe(d5_comm *c, int32_t source, int32_t tag,
                                             d5_comm_probe *out);

/* ---- Distributed training ------------------------------------------------------------------- */

/* A scheme of data-parallel training (Deep500's taxonomy: consistent or not,
 * centralized or not), plugged into a level 2 d5_trainer as hooks and an
 * optimizer wrapper: the trainer's loop runs on every worker unchanged.
 *
 * d5/dist_schemes.def lists them, one row each, with a line on each.
 *
 * Server ranks (pssgd with servers > 0, asgd, ssp) are the last `servers`
 * ranks; they hold the parameters, spread over them in whole tensors, and run
 * the optimizer; the others are workers 0 .. W-1 in rank order. Rank 0 is
 * always a worker. Before the first step every rank takes rank 0's
 * parameters (broadcast). Consistent schemes compare a hash of the
 * parameters across workers at the end (and every hash_every steps) and fail
 * with D5_ERR_NUMERIC naming the ranks that differ. */
typedef enum d5_dist_scheme {
#define D5_DIST_SCHEME(ENUM, NAME) D5_DIST_##ENUM,
#include "d5/dist_schemes.def"
#undef D5_DIST_SCHEME
    D5_DIST_SCHEME_COUNT
} d5_dist_scheme;

/* "dsgd"; NULL out of range. */
D5_API const char *d5_dist_scheme_name(int32_t scheme);
/* One line describing it; NULL out of range. */
D5_API const char *d5_dist_scheme_description(int32_t scheme);
/* D5_ERR_UNSUPPORTED for an unknown name, listing the schemes. */
D5_API D5_NODISCARD d5_status d5_dist_scheme_parse(const char *name, int32_t *out);

typedef struct d5_dist_params {
    int32_t scheme;        /* a d5_dist_scheme (default dsgd) */
    int32_t servers;       /* dedicated server ranks: pssgd 0 (default: rank 0 serves and
                              trains) or more; asgd and ssp at least 1 (-1, the default: 1) */
    int32_t staleness;     /* ssp: steps a worker may run ahead of the slowest (default 2) */
    int32_t average_every; /* mavg: steps between model averages (default 4) */
    double bucket_mb;      /* dsgd: gradient bucket in MiB (default 25); 0: one allreduce of
                              every gradient after backpropagation, nothing overlapped */
    int64_t hash_every;    /* consistent schemes: also compare parameters every N steps */
    int64_t epoch_steps;   /* steps per epoch (mavg also averages at each epoch's end) */
} d5_dist_params;

D5_API d5_dist_params d5_dist_default_params(void);

/* Checks a scheme's parameters for a job of `ranks` ranks before anything
 * starts (no communication): D5_ERR_INVALID naming what is wrong, e.g. asgd
 * or ssp without a server rank, servers leaving no worker, a negative
 * staleness, average_every < 1, a negative bucket size. */
D5_API D5_NODISCARD d5_status d5_dist_check(const d5_dist_params *p, int32_t ranks);

typedef struct d5_dist d5_dist;

/* Creates the scheme on communicator c (borrowed; it must outlive the
 * scheme), after d5_dist_check. Not collective. */
D5_API D5_NODISCARD d5_status d5_dist_create(d5_comm *c, const d5_dist_params *p, d5_dist **out);
D5_API void d5_dist_free(d5_dist *d);

/* This rank's role: 1 on a server rank (it calls d5_dist_serve, not
 * d5_trainer_run). Workers are numbered 0 .. workers-1; a server's worker
 * number is -1. A distributed sampler takes worker and workers as its rank
 * and world. */
D5_API int32_t d5_dist_is_server(const d5_dist *d);
D5_API int32_t d5_dist_worker(const d5_dist *d);
D5_API int32_t d5_dist_workers(const d5_dist *d);

/* Worker: plugs the scheme into trainer t (hooks named "d5 <scheme>") and
 * sets its optimizer: `opt` itself, or, where a server applies the updates,
 * a wrapper that leaves the parameters to the server. Call before
 * d5_trainer_run; opt must outlive the run. */
D5_API D5_NODISCARD d5_status d5_dist_attach(d5_dist *d, d5_trainer *t, d5_optimizer *opt);
/* Server: serves the workers until each has finished (d5_dist_finish), then
 * returns. t is a trainer of the same network (its parameters are the
 * server's copy: only their shapes and initial values are used; it is never
 * run); opt is the optimizer the server applies, configured as the workers'
 * (a built-in one; the learning rate of each step comes with the gradient). */
D5_API D5_NODISCARD d5_status d5_dist_serve(d5_dist *d, d5_trainer *t, d5_optimizer *opt);

#define D5_DIST_MAX_STALENESS 32

/* What a distributed run measured, the same on every rank unless said. */
typedef struct d5_dist_result {
    int32_t scheme, ranks, workers, servers;
    int64_t steps; /* steps of worker 0 */
    /* Per step of worker 0 (steps entries, owned): the whole step, the time
     * inside the scheme (communication and waiting the step could not hide:
     * exposed communication), and the rest (compute, data loading). */
    double *step_s, *exposed_s, *compute_s;
    /* Samples per second of all workers together: samples trained by every
     * worker over the longest worker's training time (measured). */
    double samples_per_second;
    int64_t samples; /* trained by all workers */
    double seconds;  /* the longest worker's training time */
    /* Mean of the workers' losses per step (steps entries, owned) for the
     * synchronous schemes (dsgd, pssgd, mavg, dpsgd, and local); NULL for asgd and
     * ssp, whose workers step at their own pace. */
    double *losses;
    /* Bytes of all parameters as float32 (the size of one gradient). */
    uint64_t gradient_bytes;
    /* Rank 0's traffic per step (all operations, over the run) and the sum of
     * every rank's over the run. */
    double bytes_sent_per_step, bytes_recv_per_step;
    uint64_t bytes_sent_all, bytes_recv_all;
    /* Consensus distance at the end, before any final averaging: the mean
     * over workers of ||w_i - mean w|| (l2), and relative to ||mean w||. */
    double consensus, consensus_rel;
    /* asgd, ssp: how many updates were applied between a worker's pull and
     * its push (staleness[k]: gradients k updates old, k < D5_DIST_MAX_STALENESS,
     * the last slot counting the rest), and for ssp the largest lead of a
     * worker over the slowest unfinished one, in pushes, measured as each
     * gradient arrives (<= staleness). */
    int64_t staleness[D5_DIST_MAX_STALENESS];
    int32_t staleness_max;
    int32_t ssp_lead_max;
    /* Consistent schemes: the hash of the parameters (FNV-1a of their bytes,
     * the same on every worker when checked) and how often it was compared. */
    uint64_t param_hash;
    int32_t hash_checks;
} d5_dist_result;

/* Collective, on every rank after training (or serving): tells the servers
 * this worker is done, averages the models a last time (mavg), compares the
 * parameter hash (consistent schemes) and gathers the figures into *out
 * (free with d5_dist_result_free). t is the rank's trainer (workers and
 * servers). */
D5_API D5_NODISCARD d5_status d5_dist_finish(d5_dist *d, d5_trainer *t, d5_dist_result *out);
D5_API void d5_dist_result_free(d5_dist_result *r);

#ifdef __cplusplus
}
#endif
#endif
