/* Parameter servers, shared by pssgd, asgd and ssp. The parameters are
 * spread over the server ranks in whole tensors (largest first, each to the
 * least loaded server), the same assignment on every rank. A worker pushes,
 * to each server, a header (step, the version of that server's weights it
 * computed on, the learning rate, done) and the gradients of the server's
 * tensors; the server answers with a header (its version) and the weights.
 * pssgd without server ranks uses rank 0 as the server of every tensor. */
#include "dist_internal.h"

#include <string.h>

#define HEADER 4 /* step, version, lr, done */

typedef struct ps_state {
    int32_t targets;   /* servers a worker talks to */
    int64_t *count;    /* elements per server */
    double *version;   /* worker: version of each server's weights held */
    float *buf;        /* the largest server's share: packing, receiving */
    float *acc;        /* server: the gradient applied */
    const float **ptr; /* server: acc per owned tensor, for the optimizer */
    int64_t *clock;    /* server: pushes per worker */
    int32_t *waiting, *finished;
    double version_now; /* server: updates applied */
} ps_state;

static ps_state *ps(d5_dist *d)
{
    return d->state;
}

/* The rank that serves share s. */
static int32_t server_rank(const d5_dist *d, int32_t s)
{
    return d->servers > 0 ? d->workers + s : 0;
}

d5_status d5__ps_setup(d5_dist *d)
{
    ps_state *q = d5__dist_new_state(d, sizeof *q, "parameter server");
    if (!q) return D5_ERR_NOMEM;
    q->targets = d->servers > 0 ? d->servers : 1;
    q->count = d5_calloc((size_t)q->targets, sizeof *q->count, "parameter server");
    q->version = d5_calloc((size_t)q->targets, sizeof *q->version, "parameter server");
    d->owner = d5_alloc((size_t)(d->n + 1) * sizeof *d->owner, "parameter server");
    if (!q->count || !q->version || !d->owner) return D5_ERR_NOMEM;
    /* Largest first to the least loaded; ties to the lower index. */
    for (int32_t i = 0; i < d->n; i++) d->owner[i] = -1;
    for (int32_t done = 0; done < d->n; done++) {
        int32_t big = -1;
        for (int32_t i = 0; i < d->n; i++)
            if (d->owner[i] < 0 && (big < 0 || d->sizes[i] > d->sizes[big])) big = i;
        int32_t least = 0;
        for (int32_t s = 1; s < q->targets; s++)
            if (q->count[s] < q->count[least]) least = s;
        d->owner[big] = least;
        q->count[least] += d->sizes[big];
    }
    int64_t most = 0;
    for (int32_t s = 0; s < q->targets; s++)
        if (q->count[s] > most) most = q->count[s];
    q->buf = d5__dist_model_alloc(most, "parameter server");
    if (!q->buf) return D5_ERR_NOMEM;
    if (d->server < 0) return D5_OK;
    /* A server: its tensors go to its optimizer; clocks per worker. */
    int32_t me = d->server;
    q->acc = d5__dist_model_alloc(q->count[me], "parameter server");
    q->ptr = d5_alloc((size_t)(d->n + 1) * sizeof *q->ptr, "parameter server");
    q->clock = d5_calloc((size_t)d->workers, sizeof *q->clock, "parameter server");
    q->waiting = d5_calloc((size_t)d->workers, sizeof *q->waiting, "parameter server");
    q->finished = d5_calloc((size_t)d->workers, sizeof *q->finished, "parameter server");
    if (!q->acc || !q->ptr || !q->clock || !q->waiting || !q->finished) return D5_ERR_NOMEM;
    d5_status s = D5_OK;
    int64_t off = 0, k = 0;
    for (int32_t i = 0; i < d->n && s == D5_OK; i++) {
        if (d->owner[i] != me) continue;
        s = d5_optimizer_add_param(d->opt, d5_trainer_param_name(d->t, i),
                                   d5_trainer_param(d->t, i), d->sizes[i], NULL);
        q->ptr[k++] = q->acc + off;
        off += d->sizes[i];
    }
    return s;
}

void d5__ps_fini(d5_dist *d)
{
    ps_state *q = d->scheme->servers ? ps(d) : NULL;
    if (q) {
        d5_free(q->count);
        d5_free(q->version);
        d5__dist_model_free(q->buf);
        d5__dist_model_free(q->acc);
        d5_free(q->ptr);
        d5_free(q->clock);
        d5_free(q->waiting);
        d5_free(q->finished);
    }
    d5_free(d->owner);
    d->owner = NULL;
}

/* Share s of the weights (grads 0) or gradients (1), packed into dst. */
static void pack_share(d5_dist *d, int32_t s, float *dst, int grads)
{
    for (int32_t i = 0; i < d->n; i++) {
        if (d->owner[i] != s) continue;
        const float *src = grads ? d5_trainer_gradient(d->t, i) : d5_trainer_param(d->t, i);
        memcpy(dst, src, (size_t)d->sizes[i] * sizeof *dst);
        dst += d->sizes[i];
    }
}

static void unpack_share(d5_dist *d, int32_t s, const float *src)
{
    for (int32_t i = 0; i < d->n; i++) {
        if (d->owner[i] != s) continue;
        memcpy(d5_trainer_param(d->t, i), src, (size_t)d->sizes[i] * sizeof *src);
        src += d->sizes[i];
    }
}

/* ---- Workers ---- */

d5_status d5__ps_push(d5_dist *d, int64_t step)
{
    ps_state *q = ps(d);
    double lr = d5_optimizer_get_params(d5_trainer_optimizer(d->t))->lr;
    d5_status s = D5_OK;
    for (int32_t k = 0; k < q->targets && s == D5_OK; k++) {
        double h[HEADER] = {(double)step, q->version[k], lr, 0};
        int32_t to = server_rank(d, k);
        pack_share(d, k, q->buf, 1);
        s = d5_comm_send(d->c, h, HEADER, D5_F64, to, D5__TAG_PUSH, "push header");
        if (s == D5_OK)
            s = d5_comm_send(d->c, q->buf, (size_t)q->count[k], D5_F32, to, D5__TAG_PUSH,
                             "push gradients");
    }
    return s;
}

d5_status d5__ps_pull(d5_dist *d)
{
    ps_state *q = ps(d);
    d5_status s = D5_OK;
    for (int32_t k = 0; k < q->targets && s == D5_OK; k++) {
        double h[HEADER];
        int32_t from = server_rank(d, k);
        s = d5_comm_recv(d->c, h, HEADER, D5_F64, from, D5__TAG_PULL, "pull header");
        if (s == D5_OK)
            s = d5_comm_recv(d->c, q->buf, (size_t)q->count[k], D5_F32, from, D5__TAG_PULL,
                             "pull weights");
        if (s == D5_OK) {
            unpack_share(d, k, q->buf);
            q->version[k] = h[1];
        }
    }
    return s;
}

d5_status d5__ps_exchange(d5_dist *d, int64_t step)
{
    d5_status s = d5__ps_push(d, step);
    return s == D5_OK ? d5__ps_pull(d) : s;
}

d5_status d5__ps_done(d5_dist *d)
{
    ps_state *q = ps(d);
    if (d->servers == 0) return D5_OK; /* rank 0 serves pssgd step by step */
    d5_status s = D5_OK;
    for (int32_t k = 0; k < q->targets && s == D5_OK; k++) {
        double h[HEADER] = {-1, 0, 0, 1};
        s = d5_comm_send(d->c, h, HEADER, D5_F64, server_rank(d, k), D5__TAG_PUSH, "push header");
    }
    return s;
}

/* ---- pssgd with rank 0 as the server ---- */

d5_status d5__ps_root_gather(d5_dist *d, int64_t step)
{
    float *sum = d->flat;
    d5__dist_pack(d, sum, 1);
    ps_state *q = ps(d);
    d5_status s = D5_OK;
    for (int32_t w = 1; w < d->workers && s == D5_OK; w++) {
        double h[HEADER];
        s = d5_comm_recv(d->c, h, HEADER, D5_F64, w, D5__TAG_PUSH, "push header");
        if (s == D5_OK && (int64_t)h[0] != step)
            s = d5_error(D5_ERR_STATE, "pssgd: rank %d pushed step %lld while rank 0 is at %lld",
                         (int)w, (long long)h[0], (long long)step);
        if (s == D5_OK)
            s = d5_comm_recv(d->c, q->buf, (size_t)q->count[0], D5_F32, w, D5__TAG_PUSH,
                             "push gradients");
        /* Rank 0 owns every tensor: its share is the parameters in order. */
        for (int64_t k = 0; s == D5_OK && k < d->total; k++) sum[k] += q->buf[k];
    }
    if (s == D5_OK) d5__dist_unpack(d, sum, 1, 1.0f / (float)d->workers);
    return s;
}

d5_status d5__ps_root_scatter(d5_dist *d)
{
    ps_state *q = ps(d);
    d5__dist_pack(d, q->buf, 0);
    q->version_now += 1;
    d5_status s = D5_OK;
    for (int32_t w = 1; w < d->workers && s == D5_OK; w++) {
        double h[HEADER] = {0, q->version_now, 0, 0};
        s = d5_comm_send(d->c, h, HEADER, D5_F64, w, D5__TAG_PULL, "pull header");
        if (s == D5_OK)
            s = d5_comm_send(d->c, q->buf, (size_t)d->total, D5_F32, w, D5__TAG_PULL,
                             "pull weights");
    }
    return s;
}

/* ---- Servers ---- */

/* Applies the gradient in q->acc to this server's tensors. */
static d5_status apply(d5_dist *d, double lr)
{
    ps_state *q = ps(d);
    d5_optimizer_set_lr(d->opt, lr);
    d5_status s = d5_optimizer_prepare(d->opt);
    if (s == D5_OK) s = d5_optimizer_update_all(d->opt, q->ptr);
    q->version_now += 1;
    return s;
}

static d5_status reply(d5_dist *d, int32_t w)
{
    ps_state *q = ps(d);
    double h[HEADER] = {0, q->version_now, 0, 0};
    pack_share(d, d->server, q->buf, 0);
    d5_status s = d5_comm_send(d->c, h, HEADER, D5_F64, w, D5__TAG_PULL, "pull header");
    if (s == D5_OK)
        s = d5_comm_send(d->c, q->buf, (size_t)q->count[d->server], D5_F32, w, D5__TAG_PULL,
                         "pull weights");
    return s;
}

d5_status d5__ps_serve_sync(d5_dist *d)
{
    ps_state *q = ps(d);
    int64_t n = q->count[d->server];
    for (int64_t step = 1;; step++) {
        int32_t finished = 0;
        double lr = 0;
        d5_status s = D5_OK;
        for (int32_t w = 0; w < d->workers && s == D5_OK; w++) {
            double h[HEADER];
            s = d5_comm_recv(d->c, h, HEADER, D5_F64, w, D5__TAG_PUSH, "push header");
            if (s != D5_OK) break;
            if (h[3] != 0) {
                finished++;
                continue;
            }
            if ((int64_t)h[0] != step)
                return d5_error(D5_ERR_STATE,
                                "pssgd server rank %d: worker %d pushed step %lld at step %lld",
                                (int)d->rank, (int)w, (long long)h[0], (long long)step);
            lr = h[2];
            float *dst = w == 0 ? q->acc : q->buf;
            s = d5_comm_recv(d->c, dst, (size_t)n, D5_F32, w, D5__TAG_PUSH, "push gradients");
            for (int64_t k = 0; s == D5_OK && w > 0 && k < n; k++) q->acc[k] += q->buf[k];
        }
        if (s != D5_OK) return s;
        if (finished == d->workers) return D5_OK;
        if (finished > 0)
            return d5_error(D5_ERR_STATE,
                            "pssgd server rank %d: %d of %d workers finished before step %lld: "
                            "workers must run the same number of steps",
                            (int)d->rank, (int)finished, (int)d->workers, (long long)step);
        for (int64_t k = 0; k < n; k++) q->acc[k] /= (float)d->workers;
        s = apply(d, lr);
        for (int32_t w = 0; w < d->workers && s == D5_OK; w++) s = reply(d, w);
        if (s == D5_OK) s = d5__dist_step_sync(d, step, 0);
        if (s != D5_OK) return s;
    }
}

/* The pushes worker w had made beyond the slowest unfinished worker when the
 * gradient now arriving was computed, at least: the slowest can only have
 * caught up since. Measured here, apart from release's decision, so that a
 * bound that is not kept shows in ssp_lead_max. */
static int64_t lead_at_push(const ps_state *q, int32_t workers, int32_t w)
{
    int64_t slowest = q->clock[w];
    for (int32_t v = 0; v < workers; v++)
        if (!q->finished[v] && q->clock[v] < slowest) slowest = q->clock[v];
    return q->clock[w] - slowest;
}

/* ssp: lets go every waiting worker no more than `bound` pushes ahead of the
 * slowest unfinished one (asgd: bound < 0, everyone at once). */
static d5_status release(d5_dist *d, int32_t bound)
{
    ps_state *q = ps(d);
    int64_t slowest = -1;
    for (int32_t w = 0; w < d->workers; w++)
        if (!q->finished[w] && (slowest < 0 || q->clock[w] < slowest)) slowest = q->clock[w];
    d5_status s = D5_OK;
    for (int32_t w = 0; w < d->workers && s == D5_OK; w++) {
        if (!q->waiting[w]) continue;
        int64_t lead = slowest < 0 ? 0 : q->clock[w] - slowest;
        if (bound >= 0 && lead > bound) continue;
        q->waiting[w] = 0;
        s = reply(d, w);
    }
    return s;
}

d5_status d5__ps_serve_async(d5_dist *d, int32_t bound)
{
    ps_state *q = ps(d);
    int64_t n = q->count[d->server];
    int32_t finished = 0;
    while (finished < d->workers) {
        int32_t w = -1;
        double h[HEADER];
        d5_status s = d5__dist_wait_message(d, D5_COMM_ANY_SOURCE, D5__TAG_PUSH, &w);
        if (s == D5_OK && (w < 0 || w >= d->workers))
            s = d5_error(D5_ERR_STATE, "server rank %d: a push from rank %d, not a worker",
                         (int)d->rank, (int)w);
        if (s == D5_OK) s = d5_comm_recv(d->c, h, HEADER, D5_F64, w, D5__TAG_PUSH, "push header");
        if (s == D5_OK && h[3] != 0) {
            q->finished[w] = 1;
            finished++;
            s = release(d, bound);
        } else if (s == D5_OK) {
            s = d5_comm_recv(d->c, q->acc, (size_t)n, D5_F32, w, D5__TAG_PUSH, "push gradients");
            int64_t stale = (int64_t)(q->version_now - h[1]);
            if (stale < 0) stale = 0;
            if (stale > d->staleness_max) d->staleness_max = (int32_t)stale;
            d->staleness[stale < D5_DIST_MAX_STALENESS ? stale : D5_DIST_MAX_STALENESS - 1]++;
            int64_t lead = lead_at_push(q, d->workers, w);
            if (lead > d->lead_max) d->lead_max = (int32_t)lead;
            if (s == D5_OK) s = apply(d, h[2]);
            q->clock[w]++;
            q->waiting[w] = 1;
            if (s == D5_OK) s = release(d, bound);
        }
        if (s != D5_OK) return s;
    }
    return D5_OK;
}
