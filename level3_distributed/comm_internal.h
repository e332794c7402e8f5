/* Internal declarations of the communicator: its state, the backend table's
 * row type, requests, counters and the schedule engine of d5's own
 * algorithms. Only level3_distributed/ includes this file (and mpi.h). */
#ifndef D5_COMM_INTERNAL_H
#define D5_COMM_INTERNAL_H

#include "backends.h"
#include "d5/distributed.h"

#include <mpi.h>

/* ---- Backends (backends.def, backends.c) ---- */

typedef struct d5__op_args {
    void *buf; /* const for sends */
    size_t count;
    d5_dtype dtype;
    int32_t peer; /* root of a broadcast, destination or source */
    int32_t tag;
    int32_t slot; /* counter slot of the name, -1 none */
    d5_comm_op op;
    uint32_t gen; /* counter generation of slot */
} d5__op_args;

typedef struct d5__comm_ops {
    /* NULL when built; else why the backend cannot be used (a stand-in). */
    const char *unavailable;
    /* Backend state once the communicator's MPI part exists; may be NULL. A
     * failure must be the same on every rank (agree on it first). It may put
     * another table in c->ops, whose init it then calls (a plugin's). */
    d5_status (*init)(d5_comm *c, const d5_comm_params *p);
    void (*fini)(d5_comm *c);
    d5_status (*allreduce)(d5_comm *c, const d5__op_args *a);
    d5_status (*iallreduce)(d5_comm *c, const d5__op_args *a, d5_comm_request *r);
    d5_status (*broadcast)(d5_comm *c, const d5__op_args *a);
    /* The non-blocking broadcast that blocking ones use under a time-out. */
    d5_status (*ibroadcast)(d5_comm *c, const d5__op_args *a, d5_comm_request *r);
    /* Point to point and memory; NULL: MPI on host memory (p2p.c). */
    d5_status (*send)(d5_comm *c, const d5__op_args *a);
    d5_status (*recv)(d5_comm *c, const d5__op_args *a);
    d5_status (*isend)(d5_comm *c, const d5__op_args *a, d5_comm_request *r);
    d5_status (*irecv)(d5_comm *c, const d5__op_args *a, d5_comm_request *r);
    d5_status (*mem_alloc)(d5_comm *c, size_t bytes, void **out);
    void (*mem_free)(d5_comm *c, void *p);
    /* to_device 1: host -> backend memory. */
    d5_status (*mem_copy)(d5_comm *c, void *dst, const void *src, size_t bytes, int to_device);
    /* 1: waits happen on a device, where a time-out cannot end them (nccl);
     * d5_comm_params.timeout_s is then ignored. */
    int32_t no_timeout;
} d5__comm_ops;

/* ---- Counters (counters.c) ---- */

typedef struct d5__name_slot {
    char *name;
    d5_comm_counter by_op[D5_COMM_OP_COUNT];
} d5__name_slot;

typedef struct d5__counters {
    d5_comm_counter by_op[D5_COMM_OP_COUNT];
    d5__name_slot *slots;
    size_t nslots, cap;
    int32_t *index; /* open addressing: slot + 1, 0 empty */
    size_t index_cap;
    uint32_t generation; /* bumped by each reset: older slots are void */
} d5__counters;

void d5__counters_free(d5__counters *k);
/* The slot of a name, created when new; *slot -1 for NULL. D5_ERR_NOMEM. */
d5_status d5__counters_slot(d5__counters *k, const char *name, int32_t *slot);
/* `gen` is the generation in which `slot` was found: counts of an operation
 * that outlived a reset go to the kind only. d5__count, d5__count_payload
 * and d5__mpi_fail are exported for the nccl plugin (backends/nccl_plugin.c). */
D5_API void d5__count(d5_comm *c, d5_comm_op op, int32_t slot, uint32_t gen, uint64_t sent,
                      uint64_t recv, uint64_t msgs_sent, uint64_t msgs_recv);
void d5__count_call(d5_comm *c, d5_comm_op op, int32_t slot);
/* A delegated collective's payload: one message each way when nonzero. */
D5_API void d5__count_payload(d5_comm *c, d5_comm_op op, int32_t slot, uint32_t gen, uint64_t sent,
                              uint64_t recv);

/* ---- The communicator ---- */

struct d5_comm {
    const d5__backend *backend;
    /* The backend's operations: backend->ops, or the table its init put in
     * their place (nccl: the plugin's). */
    const d5__comm_ops *ops;
    MPI_Comm coll; /* collectives and d5's own algorithms */
    MPI_Comm p2p;  /* the caller's point-to-point messages */
    int32_t rank, size, local_rank, local_size, thread_level, device;
    uint32_t coll_seq; /* tags of d5's own collectives, the same on every rank */
    void *state;       /* the backend's */
    d5_timer *timer;
    d5_timer_id key_comm, key_allreduce, key_broadcast, key_wait;
    d5__counters counters;
    d5_comm_request *pending; /* requests not yet completed */
    double timeout_s;         /* d5_comm_params.timeout_s; 0 when ignored or none */
    uint64_t timeout_ns;      /* the same in ns; 0: wait forever */
    char broken[384];         /* after a time-out: its message; else "" */
    char library[160], host[64];
};

/* ---- Requests (request.c) ---- */

struct d5_comm_request {
    d5_comm *comm;
    d5__op_args a;     /* the operation's, for its counters and messages */
    int32_t abandoned; /* still incomplete when d5_comm_free gave it up */
    /* Advances; *done 1 when complete. blocking: until complete. */
    d5_status (*progress)(d5_comm_request *r, int blocking, int *done);
    void (*release)(d5_comm_request *r); /* may be NULL */
    MPI_Request mpi;
    MPI_Datatype type; /* of an irecv, for its count */
    size_t elem;       /* its element size */
    void *state;       /* a schedule, or the backend's */
    d5_comm_request *prev, *next;
#if D5_SIM
    double tested_at; /* SMPI's clock at its last d5_comm_test (-1: none) */
#endif
};

/* A request linked into c->pending, with no progress function yet. */
d5_status d5__request_new(d5_comm *c, const d5__op_args *a, d5_comm_request **out);
/* Unlinks and frees (calls release). */
void d5__request_free(d5_comm_request *r);
/* progress for a request on one MPI_Request (send, recv, MPI's collectives). */
d5_status d5__request_mpi_progress(d5_comm_request *r, int blocking, int *done);

/* ---- Time-outs (timeout.c) ---- */

/* When a blocking operation starting now must end (d5_monotonic_ns); 0: never. */
uint64_t d5__deadline(const d5_comm *c);
/* Completes a request by `deadline` (0: blocking progress, as without a
 * time-out), spinning on it first and then sleeping in growing naps. On a
 * time-out the result is D5_ERR_TIMEOUT naming the rank, the operation
 * (`wait`: "wait on" it), its name, count and the time-out; the communicator
 * is broken from then on, and the request stays with it (its caller gave it
 * up; d5_comm_free completes it or gives it up too). */
d5_status d5__request_wait(d5_comm_request *r, uint64_t deadline, int wait);
/* 1 when the request completed (or failed: *s) by `deadline`, 0 otherwise;
 * sets no error message. */
int d5__request_wait_quiet(d5_comm_request *r, uint64_t deadline, d5_status *s);
/* D5_OK, or D5_ERR_TIMEOUT when an earlier operation of c timed out. */
d5_status d5__check_usable(const d5_comm *c, const char *what);

/* ---- Helpers (comm.c, p2p.c) ---- */

/* D5_ERR_BACKEND: "rank R: WHAT: <MPI's message>". */
D5_API d5_status d5__mpi_fail(const d5_comm *c, int rc, const char *fmt, ...) D5_PRINTF(3, 4);
MPI_Datatype d5__mpi_type(d5_dtype t);
/* D5_ERR_RANGE when count elements do not fit MPI's int. */
d5_status d5__check_int_count(const d5_comm *c, const char *what, size_t count);
/* The next tag of a d5 collective on c->coll (the same sequence on every rank). */
int d5__coll_tag(d5_comm *c);

d5_status d5__p2p_send(d5_comm *c, const d5__op_args *a);
d5_status d5__p2p_recv(d5_comm *c, const d5__op_args *a);
d5_status d5__p2p_isend(d5_comm *c, const d5__op_args *a, d5_comm_request *r);
d5_status d5__p2p_irecv(d5_comm *c, const d5__op_args *a, d5_comm_request *r);

/* Elementwise sum dst[i] += src[i] of float32 or float64. */
void d5__reduce_sum(void *dst, const void *src, size_t n, d5_dtype t);

/* ---- Schedules of d5's own algorithms (sched.c) ----
 * An algorithm is a list of steps run in order. A step does `pre`, posts its
 * receive and its send, and once both completed does `post`. The engine runs a
 * schedule to completion (blocking) or advances it as far as messages have
 * arrived (non-blocking), counting every message it posts. */

typedef enum d5__act_kind {
    D5__ACT_NONE = 0,
    D5__ACT_COPY,  /* dst[0..n) = src[0..n) */
    D5__ACT_PAD,   /* dst[0..n) = src[0..n), dst[n..pad) = 0 */
    D5__ACT_REDUCE /* dst[0..n) += src[0..n) */
} d5__act_kind;

typedef struct d5__act {
    d5__act_kind kind;
    void *dst;
    const void *src;
    size_t n, pad; /* elements */
} d5__act;

typedef struct d5__step {
    d5__act pre;
    int32_t send_to; /* -1: no send */
    const void *send_buf;
    size_t send_count; /* elements */
    int32_t recv_from; /* -1: no receive */
    void *recv_buf;
    size_t recv_count;
    d5__act post;
} d5__step;

typedef struct d5__sched {
    d5_comm *comm;
    d5__op_args a; /* the operation's, for its counters and messages */
    int tag;       /* of its messages (not a.tag) */
    d5__step *steps;
    size_t nsteps, cap, cur;
    int posted;
    MPI_Request req[2];
    void *scratch; /* freed with the schedule */
} d5__sched;

d5_status d5__sched_create(d5_comm *c, const d5__op_args *a, size_t scratch_bytes, d5__sched **out);
/* Appends a step (zeroed: no send, no receive, no actions) and returns it. */
d5_status d5__sched_step(d5__sched *s, d5__step **out);
d5_status d5__sched_progress(d5__sched *s, int blocking, int *done);
void d5__sched_free(d5__sched *s);
/* Runs a schedule to its end and frees it. */
d5_status d5__sched_run(d5__sched *s);
/* Hands a schedule to a request (which then owns it) and starts it. */
d5_status d5__sched_start(d5__sched *s, d5_comm_request *r);
/* An operation built as a schedule by `build` (which leaves what it made in
 * *out, also when it fails: it is freed here), run to its end (r NULL) or
 * started on request r. */
typedef d5_status (*d5__sched_build_fn)(d5_comm *c, const d5__op_args *a, d5__sched **out);
d5_status d5__sched_go(d5_comm *c, const d5__op_args *a, d5__sched_build_fn build,
                       d5_comm_request *r);

/* Binomial-tree broadcast on point-to-point messages (bcast_tree.c), used by
 * the ring and recdbl backends. */
d5_status d5__bcast_binomial(d5_comm *c, const d5__op_args *a);
d5_status d5__ibcast_binomial(d5_comm *c, const d5__op_args *a, d5_comm_request *r);

/* The operations of a backend whose allreduce is the schedule `build` makes,
 * blocking and nonblocking, with the binomial broadcast: one line in ring.c
 * and recdbl.c. */
#define D5__SCHED_COMM_OPS(ops, build)                                                             \
    static d5_status ops##_allreduce(d5_comm *c, const d5__op_args *a)                             \
    {                                                                                              \
        return d5__sched_go(c, a, build, NULL);                                                    \
    }                                                                                              \
    static d5_status ops##_iallreduce(d5_comm *c, const d5__op_args *a, d5_comm_request *r)        \
    {                                                                                              \
        return d5__sched_go(c, a, build, r);                                                       \
    }                                                                                              \
    const d5__comm_ops ops = {                                                                     \
        .allreduce = ops##_allreduce,                                                              \
        .iallreduce = ops##_iallreduce,                                                            \
        .broadcast = d5__bcast_binomial,                                                           \
        .ibroadcast = d5__ibcast_binomial,                                                         \
    }

#if D5_SIM
/* Simulated time owed by modelled copies, and its payment (timeout.c):
 * before an operation that communicates, not before a test. */
extern double d5__sim_owed_s;
void d5__sim_pay(void);
#endif

#endif
