/* dsgd: synchronous data parallelism; the gradients are summed by allreduce
 * every step and divided by the workers. As backpropagation finishes each
 * gradient (the layers backwards) it is copied into a flat buffer; once a
 * bucket of bucket_mb has filled, its non-blocking allreduce starts and is
 * advanced at every later gradient, so that communication overlaps the rest
 * of backpropagation (as PyTorch's DistributedDataParallel does). After
 * backpropagation the step waits for the buckets still in flight: that wait
 * is the exposed communication. bucket_mb 0: one blocking allreduce of every
 * gradient after backpropagation, nothing overlapped. */
#include "dist_internal.h"

#include <string.h>

typedef struct dsgd_state {
    int64_t *offset;          /* of each parameter in d->flat, in announcement order */
    int64_t cursor, start;    /* end of the packed gradients; start of the open bucket */
    int32_t announced;        /* parameters announced this step */
    d5_comm_request **flight; /* one per bucket; NULL once complete */
    int32_t buckets;
    int64_t bucket_elems;
} dsgd_state;

static d5_status setup(d5_dist *d)
{
    dsgd_state *q = d5__dist_new_state(d, sizeof *q, "dsgd");
    if (!q) return D5_ERR_NOMEM;
    q->offset = d5_alloc((size_t)(d->n + 1) * sizeof *q->offset, "dsgd");
    q->flight = d5_calloc((size_t)d->n + 1, sizeof *q->flight, "dsgd");
    q->bucket_elems = (int64_t)(d->p.bucket_mb * 1048576.0 / sizeof(float));
    if (q->bucket_elems < 1) q->bucket_elems = 1;
    return q->offset && q->flight ? D5_OK : D5_ERR_NOMEM;
}

/* Advances the buckets in flight (MPI moves non-blocking collectives only
 * inside MPI calls when there is no progress thread). */
static d5_status progress(dsgd_state *q)
{
    for (int32_t b = 0; b < q->buckets; b++) {
        if (!q->flight[b]) continue;
        int32_t done = 0;
        d5_status s = d5_comm_test(&q->flight[b], &done);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

static d5_status gradient_ready(d5_dist *d, int64_t step, int32_t param)
{
    (void)step;
    dsgd_state *q = d->state;
    if (d->p.bucket_mb <= 0) return D5_OK;
    if (q->announced == 0) q->cursor = q->start = q->buckets = 0;
    q->announced++;
    q->offset[param] = q->cursor;
    d5__dist_copy(d->flat + q->cursor, d5_trainer_gradient(d->t, param), d->sizes[param], 1.0f);
    q->cursor += d->sizes[param];
    d5_status s = D5_OK;
    if (q->cursor - q->start >= q->bucket_elems || q->announced == d->n) {
        s = d5_comm_iallreduce(d->c, d->flat + q->start, (size_t)(q->cursor - q->start), D5_F32,
                               "gradients", &q->flight[q->buckets]);
        if (s == D5_OK) q->buckets++;
        q->start = q->cursor;
    }
    return s == D5_OK ? progress(q) : s;
}

static d5_status after_backward(d5_dist *d, int64_t step)
{
    (void)step;
    dsgd_state *q = d->state;
    float scale = 1.0f / (float)d->workers;
    if (d->p.bucket_mb <= 0) {
        d5__dist_pack(d, d->flat, 1);
        d5_status s = d5_comm_allreduce(d->c, d->flat, (size_t)d->total, D5_F32, "gradients");
        if (s == D5_OK) d5__dist_unpack(d, d->flat, 1, scale);
        return s;
    }
    d5_status s = q->announced == d->n
                      ? D5_OK
                      : d5_error(D5_ERR_STATE, "dsgd: %d of %d gradients were announced",
                                 (int)q->announced, (int)d->n);
    for (int32_t b = 0; b < q->buckets; b++) {
        d5_status w = d5_comm_wait(&q->flight[b]);
        if (s == D5_OK) s = w;
    }
    q->announced = 0;
    for (int32_t i = 0; s == D5_OK && i < d->n; i++) {
        d5__dist_copy(d5_trainer_gradient(d->t, i), d->flat + q->offset[i], d->sizes[i], scale);
    }
    return s;
}

static void fini(d5_dist *d)
{
    dsgd_state *q = d->state;
    if (!q) return;
    for (int32_t b = 0; b < q->buckets; b++)
        if (d5_comm_wait(&q->flight[b]) != D5_OK) {
            /* Freeing: the request is gone either way. */
        }
    d5_free(q->offset);
    d5_free(q->flight);
}

/* clang-format off */
const d5__scheme d5__scheme_dsgd = {
    .name = "dsgd",
    .description = "gradients allreduced every step in buckets overlapping backpropagation",
    .consistent = 1, .synchronous = 1, .setup = setup, .gradient_ready = gradient_ready,
    .after_backward = after_backward, .fini = fini};
/* clang-format on */
