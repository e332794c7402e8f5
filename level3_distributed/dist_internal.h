/* Internal declarations of distributed training: the scheme table's row
 * type, the state of a d5_dist, and the helpers schemes share (dist.c,
 * ps.c). Schemes use only the public communicator and trainer interfaces. */
#ifndef D5_DIST_INTERNAL_H
#define D5_DIST_INTERNAL_H

#include "d5/distributed.h"
#include "d5/training.h"

typedef struct d5__scheme {
    const char *name, *description;
    int32_t consistent;  /* parameters equal on every worker after each step */
    int32_t synchronous; /* workers step together: a global loss per step */
    int32_t servers;     /* 0: no server ranks; 1: optional (pssgd); 2: at least one */
    /* Every function may be NULL. Workers: */
    d5_status (*setup)(d5_dist *d); /* after attach */
    d5_status (*gradient_ready)(d5_dist *d, int64_t step, int32_t param);
    d5_status (*after_backward)(d5_dist *d, int64_t step);
    d5_status (*after_update)(d5_dist *d, int64_t step);
    d5_status (*done)(d5_dist *d);   /* training over, before the last collectives */
    d5_status (*finish)(d5_dist *d); /* after the consensus distance is measured */
    /* Servers: the loop of d5_dist_serve. */
    d5_status (*serve)(d5_dist *d);
    void (*fini)(d5_dist *d); /* frees what d->state holds; d5_dist_free frees d->state */
} d5__scheme;

/* The table (d5/dist_schemes.def), indexed by d5_dist_scheme. */
const d5__scheme *d5__scheme_at(int32_t scheme);

struct d5_dist {
    d5_comm *c;
    d5_dist_params p;
    const d5__scheme *scheme;
    int32_t rank, size, workers, servers;
    int32_t worker; /* 0 .. workers-1, -1 on a server */
    int32_t server; /* 0 .. servers-1, -1 on a worker */
    d5_trainer *t;
    d5_optimizer *opt;  /* the caller's (borrowed) */
    d5_optimizer *wrap; /* workers of a parameter server: updates left to the server */
    /* The trainer's parameter table. */
    int32_t n;
    int64_t *sizes;
    int64_t total; /* elements of all parameters */
    float *flat;   /* total floats of scratch */
    void *state;   /* the scheme's */
    /* Parameter servers: the server of each parameter (ps.c). */
    int32_t *owner;
    /* Timing of the worker's steps. */
    uint64_t start_ns, last_ns, end_ns, in_scheme_ns;
    double *step_s, *exposed_s, *losses;
    int64_t steps, cap, samples;
    d5_comm_counter at_start; /* counters when training started */
    /* Servers: staleness histogram and the largest lead seen (ssp). */
    int64_t staleness[D5_DIST_MAX_STALENESS];
    int32_t staleness_max, lead_max;
    uint64_t hash;
    int32_t hash_checks;
};

/* Buffers of a model's size, and copies of gradients and parameters
 * (dst = src * scale; n floats). In d5-sim-train (built with D5_SIM) the
 * buffers are SMPI's shared allocations, every simulated rank's folded onto
 * one block, and a copy costs d5__sim_copy_s_per_byte of simulated time a
 * byte instead of being made, when that model is set (> 0). */
float *d5__dist_model_alloc(int64_t floats, const char *what);
void d5__dist_model_free(float *p);
void d5__dist_copy(float *dst, const float *src, int64_t n, float scale);
#if D5_SIM
extern double d5__sim_copy_s_per_byte;
extern double d5__sim_owed_s; /* timeout.c: time owed by modelled copies */
void d5__sim_pay(void);       /* executes it on the simulated clock */
#endif

/* A zeroed block of `size` bytes made the scheme's state (d->state), which
 * d5_dist_free frees after the scheme's fini; NULL when out of memory. */
void *d5__dist_new_state(d5_dist *d, size_t size, const char *what);
/* The parameters, packed in parameter order into dst (total floats) or
 * unpacked from src: the trainer's weights (grads 0) or gradients (1). */
void d5__dist_pack(d5_dist *d, float *dst, int grads);
void d5__dist_unpack(d5_dist *d, const float *src, int grads, float scale);
/* Averages the workers' models in place (allreduce over every rank; servers
 * take part with zeros). Collective. */
d5_status d5__dist_average_models(d5_dist *d, const char *name);
/* The per-step collectives of synchronous schemes (loss, hash check), run
 * by workers after each step and by synchronous servers after serving it.
 * loss: this worker's (servers: ignored). */
d5_status d5__dist_step_sync(d5_dist *d, int64_t step, double loss);
/* Waits for a message on (source, tag) or any source, by probing, with the
 * communicator's time-out (none: forever); *src receives the sender. */
d5_status d5__dist_wait_message(d5_dist *d, int32_t source, int32_t tag, int32_t *src);

/* Parameter servers (ps.c). Message tags on the point-to-point channel. */
#define D5__TAG_PUSH 101 /* worker -> server: header, then the gradients of its parameters */
#define D5__TAG_PULL 102 /* server -> worker: header, then the weights */

d5_status d5__ps_setup(d5_dist *d);
/* Worker: pushes this step's gradients to every server (to rank 0 for
 * pssgd without servers) and, with pull, waits for the weights. */
d5_status d5__ps_push(d5_dist *d, int64_t step);
d5_status d5__ps_pull(d5_dist *d);
/* Both: a worker's after_backward. */
d5_status d5__ps_exchange(d5_dist *d, int64_t step);
/* Worker: tells every server it is done. */
d5_status d5__ps_done(d5_dist *d);
/* Server loops: synchronous (pssgd) and asynchronous with a staleness bound
 * (asgd: none, ssp: p.staleness). */
d5_status d5__ps_serve_sync(d5_dist *d);
d5_status d5__ps_serve_async(d5_dist *d, int32_t bound);
/* pssgd without servers, on rank 0: receives every worker's gradient, adds
 * its own and leaves the mean in its gradients; then sends the weights. */
d5_status d5__ps_root_gather(d5_dist *d, int64_t step);
d5_status d5__ps_root_scatter(d5_dist *d);
void d5__ps_fini(d5_dist *d);

#endif
