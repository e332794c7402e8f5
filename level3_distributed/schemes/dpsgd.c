/* dpsgd: decentralized; after each update every worker averages its model
 * (not its gradient) with its two ring neighbours: w = (w_left + w + w_right)
 * / 3, or (w + w_other) / 2 on two workers. */
#include "dist_internal.h"

#define TAG_TO_RIGHT 201
#define TAG_TO_LEFT  202

typedef struct dpsgd_state {
    float *left, *right;
} dpsgd_state;

static d5_status setup(d5_dist *d)
{
    dpsgd_state *q = d5__dist_new_state(d, sizeof *q, "dpsgd");
    if (!q) return D5_ERR_NOMEM;
    q->left = d5__dist_model_alloc(d->total, "dpsgd neighbour");
    q->right = d5__dist_model_alloc(d->total, "dpsgd neighbour");
    return q->left && q->right ? D5_OK : D5_ERR_NOMEM;
}

static d5_status after_update(d5_dist *d, int64_t step)
{
    (void)step;
    int32_t p = d->workers, r = d->worker;
    if (p == 1) return D5_OK;
    dpsgd_state *q = d->state;
    int32_t left = (r + p - 1) % p, right = (r + 1) % p;
    size_t n = (size_t)d->total;
    d5__dist_pack(d, d->flat, 0);
    d5_comm_request *req[4] = {NULL, NULL, NULL, NULL};
    d5_status s = d5_comm_irecv(d->c, q->left, n, D5_F32, left, TAG_TO_RIGHT, "dpsgd", &req[0]);
    if (s == D5_OK && p > 2)
        s = d5_comm_irecv(d->c, q->right, n, D5_F32, right, TAG_TO_LEFT, "dpsgd", &req[1]);
    if (s == D5_OK)
        s = d5_comm_isend(d->c, d->flat, n, D5_F32, right, TAG_TO_RIGHT, "dpsgd", &req[2]);
    if (s == D5_OK && p > 2)
        s = d5_comm_isend(d->c, d->flat, n, D5_F32, left, TAG_TO_LEFT, "dpsgd", &req[3]);
    for (int k = 0; k < 4; k++) {
        d5_status w = d5_comm_wait(&req[k]);
        if (s == D5_OK) s = w;
    }
    if (s != D5_OK) return s;
    const float *a = q->left, *b = q->right;
    for (int32_t i = 0; i < d->n; i++) {
        float *w = d5_trainer_param(d->t, i);
        for (int64_t k = 0; k < d->sizes[i]; k++)
            w[k] = p > 2 ? (a[k] + w[k] + b[k]) / 3.0f : (a[k] + w[k]) * 0.5f;
        a += d->sizes[i];
        b += d->sizes[i];
    }
    return D5_OK;
}

static void fini(d5_dist *d)
{
    dpsgd_state *q = d->state;
    if (!q) return;
    d5__dist_model_free(q->left);
    d5__dist_model_free(q->right);
}

/* clang-format off */
const d5__scheme d5__scheme_dpsgd = {
    .name = "dpsgd",
    .description = "decentralized: each model averaged with its two ring neighbours every step",
    .synchronous = 1, .setup = setup, .after_update = after_update, .fini = fini};
/* clang-format on */
