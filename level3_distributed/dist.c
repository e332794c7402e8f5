/* Distributed training: a scheme plugged into a level 2 trainer. This file
 * is the frame every scheme shares: roles, the initial broadcast, timing of
 * the scheme's share of each step, the per-step loss and hash check of
 * synchronous schemes, and the figures gathered at the end. The schemes
 * themselves are in schemes/, one file each, listed in d5/dist_schemes.def. */
#define _POSIX_C_SOURCE 200809L
#include "dist_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BCAST_NAME "initial parameters"

/* ---- The clock, buffers and copies ---- */

/* The step figures' clock: the monotonic clock; in d5-sim-train SimGrid's
 * simulated one. */
#if D5_SIM
#include <simgrid/engine.h>
#include <smpi/smpi.h>
double d5__sim_copy_s_per_byte = 0;
static uint64_t step_clock_ns(void)
{
    return (uint64_t)(simgrid_get_clock() * 1e9);
}
/* The copies a scheme's hook made are its time: paid before it returns. */
static void settle(void)
{
    d5__sim_pay();
}
#else
static void settle(void) {}
static uint64_t step_clock_ns(void)
{
    return d5_monotonic_ns();
}
#endif

float *d5__dist_model_alloc(int64_t floats, const char *what)
{
    size_t bytes = (size_t)(floats + 1) * sizeof(float);
#if D5_SIM
    (void)what;
    return SMPI_SHARED_MALLOC(bytes);
#else
    return d5_alloc(bytes, what);
#endif
}

void d5__dist_model_free(float *p)
{
#if D5_SIM
    if (p) SMPI_SHARED_FREE(p);
#else
    d5_free(p);
#endif
}

void d5__dist_copy(float *dst, const float *src, int64_t n, float scale)
{
#if D5_SIM
    if (d5__sim_copy_s_per_byte > 0) {
        /* Owed, paid with the next compute or communication: one
         * simulated activity instead of one a copy. */
        d5__sim_owed_s += (double)n * sizeof(float) * d5__sim_copy_s_per_byte;
        return;
    }
#endif
    if (scale == 1.0f)
        memcpy(dst, src, (size_t)n * sizeof *dst);
    else
        for (int64_t k = 0; k < n; k++) dst[k] = src[k] * scale;
}

/* ---- Schemes ---- */

const char *d5_dist_scheme_name(int32_t scheme)
{
    const d5__scheme *s = d5__scheme_at(scheme);
    return s ? s->name : NULL;
}

const char *d5_dist_scheme_description(int32_t scheme)
{
    const d5__scheme *s = d5__scheme_at(scheme);
    return s ? s->description : NULL;
}

d5_status d5_dist_scheme_parse(const char *name, int32_t *out)
{
    if (!name || !out) return d5_error(D5_ERR_INVALID, "d5_dist_scheme_parse: NULL argument");
    char list[160] = "";
    for (int32_t k = 0; k < D5_DIST_SCHEME_COUNT; k++) {
        if (strcmp(name, d5__scheme_at(k)->name) == 0) {
            *out = k;
            return D5_OK;
        }
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", d5__scheme_at(k)->name);
    }
    return d5_error(D5_ERR_UNSUPPORTED, "unknown distributed scheme '%s'; the schemes are %s", name,
                    list);
}

d5_dist_params d5_dist_default_params(void)
{
    d5_dist_params p;
    memset(&p, 0, sizeof p);
    p.scheme = D5_DIST_DSGD;
    p.servers = -1;
    p.staleness = 2;
    p.average_every = 4;
    p.bucket_mb = 25;
    return p;
}

/* The server ranks the parameters ask for (-1 resolved). */
static int32_t servers_of(const d5_dist_params *p, const d5__scheme *s)
{
    if (s->servers == 0) return 0;
    if (p->servers >= 0) return p->servers;
    return s->servers == 2 ? 1 : 0;
}

d5_status d5_dist_check(const d5_dist_params *p, int32_t ranks)
{
    if (!p) return d5_error(D5_ERR_INVALID, "d5_dist_check: NULL parameters");
    const d5__scheme *s = d5__scheme_at(p->scheme);
    if (!s)
        return d5_error(D5_ERR_INVALID, "distributed scheme %d is not one of d5's", (int)p->scheme);
    if (ranks < 1) return d5_error(D5_ERR_INVALID, "%s: %d ranks", s->name, (int)ranks);
    int32_t servers = servers_of(p, s);
    if (s->servers == 0 && p->servers > 0)
        return d5_error(D5_ERR_INVALID,
                        "%s has no server ranks; --servers %d is for pssgd, asgd "
                        "and ssp",
                        s->name, (int)p->servers);
    if (s->servers == 2 && servers < 1)
        return d5_error(D5_ERR_INVALID,
                        "%s needs at least one dedicated server rank (--servers N >= 1)", s->name);
    if (servers >= ranks)
        return d5_error(D5_ERR_INVALID,
                        "%s: %d server rank%s of %d leave%s no worker; run more ranks (mpirun -n) "
                        "or fewer servers",
                        s->name, (int)servers, servers == 1 ? "" : "s", (int)ranks,
                        servers == 1 ? "s" : "");
    if (p->staleness < 0)
        return d5_error(D5_ERR_INVALID, "ssp: staleness %d, expected >= 0", (int)p->staleness);
    if (p->average_every < 1)
        return d5_error(D5_ERR_INVALID, "mavg: average every %d steps, expected >= 1",
                        (int)p->average_every);
    if (!(p->bucket_mb >= 0) || p->bucket_mb > 1e6)
        return d5_error(D5_ERR_INVALID, "dsgd: bucket of %g MiB, expected 0 .. 1e6", p->bucket_mb);
    if (p->hash_every < 0 || p->epoch_steps < 0)
        return d5_error(D5_ERR_INVALID, "%s: hash_every %lld and epoch_steps %lld must be >= 0",
                        s->name, (long long)p->hash_every, (long long)p->epoch_steps);
    return D5_OK;
}

d5_status d5_dist_create(d5_comm *c, const d5_dist_params *p, d5_dist **out)
{
    if (!c || !out) return d5_error(D5_ERR_INVALID, "d5_dist_create: NULL argument");
    d5_dist_params q = p ? *p : d5_dist_default_params();
    d5_status s = d5_dist_check(&q, d5_comm_size(c));
    if (s != D5_OK) return s;
    d5_dist *d = d5_calloc(1, sizeof *d, "distributed scheme");
    if (!d) return D5_ERR_NOMEM;
    d->c = c;
    d->p = q;
    d->scheme = d5__scheme_at(q.scheme);
    d->rank = d5_comm_rank(c);
    d->size = d5_comm_size(c);
    d->servers = servers_of(&q, d->scheme);
    d->p.servers = d->servers;
    d->workers = d->size - d->servers;
    d->worker = d->rank < d->workers ? d->rank : -1;
    d->server = d->rank < d->workers ? -1 : d->rank - d->workers;
    *out = d;
    return D5_OK;
}

void d5_dist_free(d5_dist *d)
{
    if (!d) return;
    if (d->scheme->fini) d->scheme->fini(d);
    d5__ps_fini(d);
    d5_free(d->state);
    d5_optimizer_free(d->wrap);
    d5_free(d->sizes);
    d5__dist_model_free(d->flat);
    d5_free(d->step_s);
    d5_free(d->exposed_s);
    d5_free(d->losses);
    d5_free(d);
}

int32_t d5_dist_is_server(const d5_dist *d)
{
    return d && d->server >= 0;
}

int32_t d5_dist_worker(const d5_dist *d)
{
    return d ? d->worker : -1;
}

int32_t d5_dist_workers(const d5_dist *d)
{
    return d ? d->workers : 0;
}

void *d5__dist_new_state(d5_dist *d, size_t size, const char *what)
{
    d->state = d5_calloc(1, size, what);
    return d->state;
}

/* ---- Parameters ---- */

void d5__dist_pack(d5_dist *d, float *dst, int grads)
{
    for (int32_t i = 0; i < d->n; i++) {
        const float *src = grads ? d5_trainer_gradient(d->t, i) : d5_trainer_param(d->t, i);
        d5__dist_copy(dst, src, d->sizes[i], 1.0f);
        dst += d->sizes[i];
    }
}

void d5__dist_unpack(d5_dist *d, const float *src, int grads, float scale)
{
    for (int32_t i = 0; i < d->n; i++) {
        float *dst = grads ? d5_trainer_gradient(d->t, i) : d5_trainer_param(d->t, i);
        d5__dist_copy(dst, src, d->sizes[i], scale);
        src += d->sizes[i];
    }
}

d5_status d5__dist_average_models(d5_dist *d, const char *name)
{
    if (d->worker >= 0)
        d5__dist_pack(d, d->flat, 0);
    else
        memset(d->flat, 0, (size_t)d->total * sizeof *d->flat);
    d5_status s = d5_comm_allreduce(d->c, d->flat, (size_t)d->total, D5_F32, name);
    if (s == D5_OK && d->worker >= 0) d5__dist_unpack(d, d->flat, 0, 1.0f / (float)d->workers);
    return s;
}

/* The trainer's parameter table and the scratch buffer. */
static d5_status take_table(d5_dist *d, d5_trainer *t)
{
    d->t = t;
    d->n = d5_trainer_param_count(t);
    d->sizes = d5_alloc((size_t)(d->n + 1) * sizeof *d->sizes, "distributed parameter sizes");
    if (!d->sizes) return D5_ERR_NOMEM;
    d->total = 0;
    for (int32_t i = 0; i < d->n; i++) d->total += d->sizes[i] = d5_trainer_param_size(t, i);
    d->flat = d5__dist_model_alloc(d->total, "distributed scratch");
    return d->flat ? D5_OK : D5_ERR_NOMEM;
}

/* Rank 0's parameters everywhere, before the first step. */
static d5_status broadcast_initial(d5_dist *d)
{
    if (d->rank == 0) d5__dist_pack(d, d->flat, 0);
    d5_status s = d5_comm_broadcast(d->c, d->flat, (size_t)d->total, D5_F32, 0, BCAST_NAME);
    if (s == D5_OK && d->rank != 0) d5__dist_unpack(d, d->flat, 0, 1.0f);
    return s;
}

/* ---- The hash check ---- */

static uint64_t param_hash(d5_dist *d)
{
    uint64_t h = D5_FNV1A_OFFSET;
#if D5_SIM
    /* Every simulated rank's parameters are one folded block: nothing to
     * compare, and hashing a thousand models would take the simulator's time. */
    (void)d;
    return h;
#endif
    for (int32_t i = 0; i < d->n; i++)
        h = d5_fnv1a(h, d5_trainer_param(d->t, i), (size_t)d->sizes[i] * sizeof(float));
    return h;
}

/* Every worker's hash in two 32-bit halves, summed into place over every
 * rank; a worker whose hash differs from worker 0's is named. Collective. */
static d5_status hash_check(d5_dist *d, int64_t step)
{
    size_t n = 2 * (size_t)d->size;
    double *h = d5_calloc(n, sizeof *h, "hash check");
    if (!h) return D5_ERR_NOMEM;
    if (d->worker >= 0) {
        uint64_t mine = param_hash(d);
        h[2 * d->rank] = (double)(mine >> 32);
        h[2 * d->rank + 1] = (double)(mine & 0xffffffffu);
        d->hash = mine;
    }
    d5_status s = d5_comm_agree(d->c, h, n, D5_COMM_SUM);
    char bad[160] = "";
    int nbad = 0;
    for (int32_t r = 1; s == D5_OK && r < d->workers; r++)
        if (h[2 * r] != h[0] || h[2 * r + 1] != h[1]) {
            size_t used = strlen(bad);
            if (used < sizeof bad - 16) snprintf(bad + used, sizeof bad - used, " %d", (int)r);
            nbad++;
        }
    if (s == D5_OK) {
        d->hash = ((uint64_t)h[0] << 32) | (uint64_t)h[1];
        d->hash_checks++;
    }
    d5_free(h);
    if (s == D5_OK && nbad)
        return d5_error(D5_ERR_NUMERIC,
                        "%s: the parameters of rank%s%s differ from rank 0's %s (hash "
                        "%016llx): the scheme is consistent, so every worker must hold the same "
                        "bits",
                        d->scheme->name, nbad == 1 ? "" : "s", bad,
                        step > 0 ? "after step" : "at the end", (unsigned long long)d->hash);
    (void)step;
    return s;
}

d5_status d5__dist_step_sync(d5_dist *d, int64_t step, double loss)
{
    d5_status s = D5_OK;
    if (d->scheme->synchronous) {
        double sum = d->worker >= 0 ? loss : 0;
        s = d5_comm_agree(d->c, &sum, 1, D5_COMM_SUM);
        if (s == D5_OK && d->worker >= 0) d->losses[d->steps] = sum / d->workers;
    }
    if (s == D5_OK && d->scheme->consistent && d->p.hash_every > 0 && step % d->p.hash_every == 0)
        s = hash_check(d, step);
    return s;
}

d5_status d5__dist_wait_message(d5_dist *d, int32_t source, int32_t tag, int32_t *src)
{
    uint64_t t0 = d5_monotonic_ns();
    double timeout = d5_comm_timeout(d->c);
    for (uint32_t spins = 0;; spins++) {
        d5_comm_probe pr;
        d5_status s = d5_comm_iprobe(d->c, source, tag, &pr);
        if (s != D5_OK) return s;
        if (pr.found) {
            *src = pr.source;
            return D5_OK;
        }
        double waited = (double)(d5_monotonic_ns() - t0) * 1e-9;
        if (timeout > 0 && waited > timeout)
            return d5_error(D5_ERR_TIMEOUT,
                            "rank %d (%s): no message from %s within %g s: a rank has crashed, "
                            "hangs or is far behind",
                            (int)d->rank, d->scheme->name, source < 0 ? "any worker" : "rank",
                            timeout);
        if (spins > 1000) {
            struct timespec ts = {0, spins > 100000 ? 100000 : 10000};
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- The trainer's hooks ---- */

static d5_status grow(d5_dist *d)
{
    if (d->steps < d->cap) return D5_OK;
    int64_t cap = d->cap ? 2 * d->cap : 256;
    double *a[3] = {d->step_s, d->exposed_s, d->losses};
    for (int k = 0; k < 3; k++) {
        double *p = d5_realloc(a[k], (size_t)d->cap * sizeof *p, (size_t)cap * sizeof *p,
                               "distributed step figures");
        if (!p) return D5_ERR_NOMEM;
        a[k] = p;
        if (k == 0) d->step_s = p;
        if (k == 1) d->exposed_s = p;
        if (k == 2) d->losses = p;
    }
    d->cap = cap;
    return D5_OK;
}

static d5_status on_first(d5_trainer *t, void *user)
{
    (void)t;
    d5_dist *d = user;
    d5_status s = broadcast_initial(d);
    if (s == D5_OK) s = d5_comm_counters(d->c, D5_COMM_OP_ALL, NULL, &d->at_start);
    if (s == D5_OK && d->scheme->setup) s = d->scheme->setup(d);
    d->start_ns = d->last_ns = step_clock_ns();
    d->in_scheme_ns = 0;
    return s;
}

/* Runs a scheme function, adding its time to the step's exposed share. */
#define TIMED(call)                                                                                \
    do {                                                                                           \
        uint64_t t0_ = step_clock_ns();                                                            \
        d5_status s_ = (call);                                                                     \
        settle();                                                                                  \
        d->in_scheme_ns += step_clock_ns() - t0_;                                                  \
        return s_;                                                                                 \
    } while (0)

static d5_status on_ready(d5_trainer *t, void *user, int64_t step, int32_t param)
{
    (void)t;
    d5_dist *d = user;
    TIMED(d->scheme->gradient_ready(d, step, param));
}

static d5_status on_backward(d5_trainer *t, void *user, const d5_step_grads *g)
{
    (void)t;
    d5_dist *d = user;
    TIMED(d->scheme->after_backward(d, g->step));
}

static d5_status on_update(d5_trainer *t, void *user, int64_t step)
{
    (void)t;
    d5_dist *d = user;
    TIMED(d->scheme->after_update(d, step));
}

static d5_status on_step(d5_trainer *t, void *user, int64_t step, double loss)
{
    d5_dist *d = user;
    d5_status s = grow(d);
    if (s != D5_OK) return s;
    d->losses[d->steps] = loss;
    uint64_t t0 = step_clock_ns();
    s = d5__dist_step_sync(d, step, loss);
    settle();
    uint64_t now = step_clock_ns();
    d->in_scheme_ns += now - t0;
    d->step_s[d->steps] = (double)(now - d->last_ns) * 1e-9;
    d->exposed_s[d->steps] = (double)d->in_scheme_ns * 1e-9;
    d->steps++;
    d->samples += d5_trainer_batch(t);
    d->last_ns = d->end_ns = now;
    d->in_scheme_ns = 0;
    return s;
}

#undef TIMED

/* Workers of a parameter server: the server applies the update. */
static d5_status keep_params(d5_optimizer *o, int64_t step, float *param, const float *grad,
                             float *state, int64_t n)
{
    (void)o;
    (void)step;
    (void)param;
    (void)grad;
    (void)state;
    (void)n;
    return D5_OK;
}

static const d5_optimizer_desc server_applies = {"updated by the parameter server", 0, NULL, NULL,
                                                 keep_params};

d5_status d5_dist_attach(d5_dist *d, d5_trainer *t, d5_optimizer *opt)
{
    if (!d || !t || !opt) return d5_error(D5_ERR_INVALID, "d5_dist_attach: NULL argument");
    if (d->worker < 0)
        return d5_error(D5_ERR_STATE,
                        "d5_dist_attach: rank %d is a server of %s; it calls "
                        "d5_dist_serve",
                        (int)d->rank, d->scheme->name);
    if (d->t) return d5_error(D5_ERR_STATE, "d5_dist_attach: already attached to a trainer");
    d5_status s = take_table(d, t);
    if (s != D5_OK) return s;
    d->opt = opt;
    /* Where a server applies updates (every worker of a dedicated server,
     * the workers other than rank 0 of pssgd), the trainer's optimizer keeps
     * the parameters: the server's weights arrive after the step. */
    int remote = d->scheme->servers && (d->servers > 0 || d->rank != 0);
    d5_optimizer *use = opt;
    if (remote) {
        d5_optimizer_params op = *d5_optimizer_get_params(opt);
        s = d5_optimizer_create_custom(&server_applies, &op, &d->wrap);
        use = d->wrap;
    }
    if (s == D5_OK) s = d5_trainer_set_optimizer(t, use);
    if (s == D5_OK && d->scheme->servers) s = d5__ps_setup(d);
    d5_trainer_hooks h;
    memset(&h, 0, sizeof h);
    h.user = d;
    h.before_first_step = on_first;
    h.after_step = on_step;
    if (d->scheme->gradient_ready) h.gradient_ready = on_ready;
    if (d->scheme->after_backward) h.after_backward = on_backward;
    if (d->scheme->after_update) h.after_update = on_update;
    char name[48];
    snprintf(name, sizeof name, "d5 %s", d->scheme->name);
    if (s == D5_OK) s = d5_trainer_add_hooks(t, name, &h);
    return s;
}

d5_status d5_dist_serve(d5_dist *d, d5_trainer *t, d5_optimizer *opt)
{
    if (!d || !t || !opt) return d5_error(D5_ERR_INVALID, "d5_dist_serve: NULL argument");
    if (d->server < 0)
        return d5_error(D5_ERR_STATE, "d5_dist_serve: rank %d is a worker of %s; it trains",
                        (int)d->rank, d->scheme->name);
    if (d->t) return d5_error(D5_ERR_STATE, "d5_dist_serve: already serving");
    d5_status s = take_table(d, t);
    if (s != D5_OK) return s;
    d->opt = opt;
    s = d5__ps_setup(d);
    if (s == D5_OK) s = broadcast_initial(d);
    if (s == D5_OK) s = d5_comm_counters(d->c, D5_COMM_OP_ALL, NULL, &d->at_start);
    d->start_ns = step_clock_ns();
    if (s == D5_OK) s = d->scheme->serve(d);
    d->end_ns = step_clock_ns();
    return s;
}

/* ---- The end ---- */

/* Mean over workers of ||w_i - mean w||, and ||mean w||, summed in float64
 * (identical models give exactly 0). Collective. */
static d5_status consensus(d5_dist *d, double *dist, double *norm)
{
#if D5_SIM
    /* Folded parameters (param_hash): no distance to measure. */
    (void)d;
    *dist = *norm = 0;
    return D5_OK;
#endif
    double *sum = d5_calloc((size_t)d->total + 1, sizeof *sum, "consensus distance");
    if (!sum) return D5_ERR_NOMEM;
    if (d->worker >= 0) {
        double *m = sum;
        for (int32_t i = 0; i < d->n; i++) {
            const float *w = d5_trainer_param(d->t, i);
            for (int64_t k = 0; k < d->sizes[i]; k++) m[k] = w[k];
            m += d->sizes[i];
        }
    }
    d5_status s = d5_comm_allreduce(d->c, sum, (size_t)d->total, D5_F64, "consensus");
    double v[2] = {0, 0}; /* sum of ||w_i - mean||, ||mean||^2 (worker 0) */
    if (s == D5_OK && d->worker >= 0) {
        const double *m = sum;
        double sq = 0, msq = 0;
        for (int32_t i = 0; i < d->n; i++) {
            const float *w = d5_trainer_param(d->t, i);
            for (int64_t k = 0; k < d->sizes[i]; k++) {
                double mean = m[k] / d->workers, diff = (double)w[k] - mean;
                sq += diff * diff;
                msq += mean * mean;
            }
            m += d->sizes[i];
        }
        v[0] = sqrt(sq);
        if (d->worker == 0) v[1] = msq;
    }
    d5_free(sum);
    if (s == D5_OK) s = d5_comm_agree(d->c, v, 2, D5_COMM_SUM);
    *dist = v[0] / d->workers;
    *norm = sqrt(v[1]);
    return s;
}

d5_status d5_dist_finish(d5_dist *d, d5_trainer *t, d5_dist_result *out)
{
    if (!d || !out) return d5_error(D5_ERR_INVALID, "d5_dist_finish: NULL argument");
    memset(out, 0, sizeof *out);
    if (!d->t || (t && t != d->t))
        return d5_error(D5_ERR_STATE,
                        "d5_dist_finish: rank %d: call d5_dist_attach or "
                        "d5_dist_serve with this trainer first",
                        (int)d->rank);
    d5_status s = D5_OK;
    if (d->worker >= 0 && d->scheme->done) s = d->scheme->done(d);
    double dist = 0, norm = 0;
    if (s == D5_OK) s = consensus(d, &dist, &norm);
    if (s == D5_OK && d->worker >= 0 && d->scheme->finish) s = d->scheme->finish(d);
    if (s == D5_OK && d->scheme->consistent) s = hash_check(d, 0);
    /* Totals over every rank. */
    d5_comm_counter now;
    if (s == D5_OK) s = d5_comm_counters(d->c, D5_COMM_OP_ALL, NULL, &now);
    double v[6 + D5_DIST_MAX_STALENESS];
    memset(v, 0, sizeof v);
    if (s == D5_OK) {
        v[0] = (double)(now.bytes_sent - d->at_start.bytes_sent);
        v[1] = (double)(now.bytes_recv - d->at_start.bytes_recv);
        v[2] = d->worker >= 0 ? (double)d->samples : 0;
        for (int k = 0; k < D5_DIST_MAX_STALENESS; k++) v[6 + k] = (double)d->staleness[k];
        s = d5_comm_agree(d->c, v, 6 + D5_DIST_MAX_STALENESS, D5_COMM_SUM);
    }
    double m[3] = {d->worker >= 0 ? (double)(d->end_ns - d->start_ns) * 1e-9 : 0,
                   (double)d->staleness_max, (double)d->lead_max};
    if (s == D5_OK) s = d5_comm_agree(d->c, m, 3, D5_COMM_MAX);
    if (s != D5_OK) return s;
    out->scheme = d->p.scheme;
    out->ranks = d->size;
    out->workers = d->workers;
    out->servers = d->servers;
    out->steps = d->steps;
    out->samples = (int64_t)v[2];
    out->seconds = m[0];
    out->samples_per_second = m[0] > 0 ? v[2] / m[0] : 0;
    out->gradient_bytes = (uint64_t)d->total * sizeof(float);
    out->bytes_sent_all = (uint64_t)v[0];
    out->bytes_recv_all = (uint64_t)v[1];
    if (d->steps > 0) {
        out->bytes_sent_per_step = (double)(now.bytes_sent - d->at_start.bytes_sent) / d->steps;
        out->bytes_recv_per_step = (double)(now.bytes_recv - d->at_start.bytes_recv) / d->steps;
    }
    out->consensus = dist;
    out->consensus_rel = norm > 0 ? dist / norm : 0;
    for (int k = 0; k < D5_DIST_MAX_STALENESS; k++) out->staleness[k] = (int64_t)v[6 + k];
    out->staleness_max = (int32_t)m[1];
    out->ssp_lead_max = (int32_t)m[2];
    out->param_hash = d->hash;
    out->hash_checks = d->hash_checks;
    if (d->steps > 0) {
        size_t bytes = (size_t)d->steps * sizeof(double);
        out->step_s = d5_alloc(bytes, "distributed result");
        out->exposed_s = d5_alloc(bytes, "distributed result");
        out->compute_s = d5_alloc(bytes, "distributed result");
        if (d->scheme->synchronous) out->losses = d5_alloc(bytes, "distributed result");
        if (!out->step_s || !out->exposed_s || !out->compute_s ||
            (d->scheme->synchronous && !out->losses)) {
            d5_dist_result_free(out);
            return D5_ERR_NOMEM;
        }
        memcpy(out->step_s, d->step_s, bytes);
        memcpy(out->exposed_s, d->exposed_s, bytes);
        for (int64_t k = 0; k < d->steps; k++) out->compute_s[k] = d->step_s[k] - d->exposed_s[k];
        if (out->losses) memcpy(out->losses, d->losses, bytes);
    }
    return D5_OK;
}

void d5_dist_result_free(d5_dist_result *r)
{
    if (!r) return;
    d5_free(r->step_s);
    d5_free(r->exposed_s);
    d5_free(r->compute_s);
    d5_free(r->losses);
    memset(r, 0, sizeof *r);
}
