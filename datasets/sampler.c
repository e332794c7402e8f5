/* Samplers: batches of a dataset in order, shuffled, partitioned across
 * workers or with each global batch sharded across them, with augmentations, the label histogram of
 * what was drawn (DatasetBias) and the time of each read under the timer key IO (DatasetLatency).
 *
 * Epoch e of the shuffled kinds is a Fisher-Yates shuffle of the identity by
 * d5_rng seeded with seed + e, so it depends on nothing but the seed and the
 * epoch: every worker of a partitioned sampler computes the same permutation
 * and takes its own contiguous slice of it. */
#include "dataset_internal.h"

#include <string.h>

/* Salt of the augmentation stream, so that it differs from the shuffle's. */
#define AUGMENT_SALT 0x6175676d656e7473u /* "augments" */

struct d5_sampler {
    const d5_dataset *ds;
    d5_sampler_params p;
    int64_t epoch;
    int64_t size;         /* samples per epoch for this worker */
    int64_t pos;          /* next position in order[] */
    int64_t *perm;        /* [n]: this epoch's permutation */
    const int64_t *order; /* this worker's part of perm */
    int64_t *hist;        /* [classes] */
    float *scratch;       /* one sample, for crop */
    int augment;
    d5_rng rng; /* augmentation draws of this epoch */
    d5_timer *timer;
};

d5_sampler_params d5_sampler_default_params(void)
{
    d5_sampler_params p;
    memset(&p, 0, sizeof p);
    p.kind = D5_SAMPLER_ORDERED;
    p.batch = 64;
    p.world = 1;
    for (int c = 0; c < 4; c++) p.augment.std[c] = 1.0f;
    return p;
}

static d5_status check_params(const d5_dataset *ds, const d5_sampler_params *p)
{
    if (p->kind < D5_SAMPLER_ORDERED || p->kind > D5_SAMPLER_SHARDED_BATCH)
        return d5_error(D5_ERR_INVALID,
                        "sampler: unknown kind %d (0 ordered, 1 shuffled, 2 partitioned, 3 "
                        "sharded-batch)",
                        (int)p->kind);
    if (p->batch < 1)
        return d5_error(D5_ERR_INVALID, "sampler: batch %lld, expected >= 1", (long long)p->batch);
    if (p->world < 1 || p->rank < 0 || p->rank >= p->world)
        return d5_error(D5_ERR_INVALID, "sampler: rank %d of world %d, expected 0 <= rank < world",
                        (int)p->rank, (int)p->world);
    if (p->kind == D5_SAMPLER_PARTITIONED && p->world > ds->n)
        return d5_error(D5_ERR_INVALID,
                        "sampler: %d workers for dataset '%s' of %lld samples leaves some "
                        "workers nothing",
                        (int)p->world, ds->name, (long long)ds->n);
    if (p->kind == D5_SAMPLER_SHARDED_BATCH && p->batch > ds->n / p->world)
        return d5_error(D5_ERR_INVALID,
                        "sampler: a global batch of %d x %lld samples is larger than dataset "
                        "'%s' (%lld samples)",
                        (int)p->world, (long long)p->batch, ds->name, (long long)ds->n);
    return d5__augment_check(&p->augment, &ds->sample);
}

/* Builds the order of the current epoch and rewinds. */
static void prepare_epoch(d5_sampler *s)
{
    const int64_t n = s->ds->n;
    for (int64_t i = 0; i < n; i++) s->perm[i] = i;
    if (s->p.kind != D5_SAMPLER_ORDERED) {
        d5_rng r;
        d5_rng_seed(&r, s->p.seed + (uint64_t)s->epoch);
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)d5_rng_below(&r, (uint64_t)i + 1);
            int64_t t = s->perm[i];
            s->perm[i] = s->perm[j];
            s->perm[j] = t;
        }
    }
    s->order = s->perm;
    s->size = n;
    if (s->p.kind == D5_SAMPLER_PARTITIONED) {
        s->size = n / s->p.world;
        s->order = s->perm + s->p.rank * s->size;
    } else if (s->p.kind == D5_SAMPLER_SHARDED_BATCH) {
        /* Whole global batches only: this worker's share of each. */
        s->size = n / (s->p.batch * s->p.world) * s->p.batch;
    }
    s->pos = 0;
    d5_rng_seed(&s->rng, (s->p.seed + (uint64_t)s->epoch) ^ AUGMENT_SALT);
}

d5_status d5_sampler_create(const d5_dataset *ds, const d5_sampler_params *params, d5_sampler **out)
{
    if (!ds || !out) return d5_error(D5_ERR_INVALID, "d5_sampler_create: NULL argument");
    d5_sampler_params p = params ? *params : d5_sampler_default_params();
    d5_status st = check_params(ds, &p);
    if (st != D5_OK) return st;
    d5_sampler *s = d5_calloc(1, sizeof *s, "sampler");
    if (!s) return D5_ERR_NOMEM;
    s->ds = ds;
    s->p = p;
    s->augment = d5__augment_any(&p.augment);
    s->perm = d5_alloc((size_t)(ds->n > 0 ? ds->n : 1) * sizeof *s->perm, "sampler permutation");
    s->hist = d5_calloc((size_t)ds->classes, sizeof *s->hist, "sampler histogram");
    if (s->perm && s->hist && p.augment.crop_pad > 0)
        s->scratch = d5_alloc((size_t)ds->numel * sizeof *s->scratch, "sampler crop buffer");
    if (!s->perm || !s->hist || (p.augment.crop_pad > 0 && !s->scratch)) {
        d5_sampler_free(s);
        return D5_ERR_NOMEM;
    }
    prepare_epoch(s);
    *out = s;
    return D5_OK;
}

void d5_sampler_free(d5_sampler *s)
{
    if (!s) return;
    d5_free(s->perm);
    d5_free(s->hist);
    d5_free(s->scratch);
    d5_free(s);
}

d5_status d5_sampler_next(d5_sampler *s, float *x, int64_t *labels, int64_t *n)
{
    if (!s || !x || !n) return d5_error(D5_ERR_INVALID, "d5_sampler_next: NULL argument");
    int64_t m = s->size - s->pos;
    if (m > s->p.batch) m = s->p.batch;
    if (m <= 0 || (s->p.drop_last && m < s->p.batch)) {
        s->pos = s->size;
        *n = 0;
        return D5_OK;
    }
    d5_status st = s->timer ? d5_timer_start(s->timer, D5_KEY_IO) : D5_OK;
    if (st != D5_OK) return st;
    const int64_t *idx = s->order + s->pos;
    if (s->p.kind == D5_SAMPLER_SHARDED_BATCH) /* global batch pos / batch, this worker's part */
        idx = s->order + s->pos / s->p.batch * s->p.batch * s->p.world + s->p.rank * s->p.batch +
              s->pos % s->p.batch;
    st = d5_dataset_get(s->ds, idx, m, x, labels);
    if (st == D5_OK && s->augment)
        for (int64_t k = 0; k < m; k++)
            d5__augment_apply(&s->p.augment, &s->ds->sample, &s->rng,
                              x + (size_t)k * (size_t)s->ds->numel, s->scratch);
    if (s->timer) {
        d5_status te = d5_timer_end(s->timer, D5_KEY_IO);
        if (st == D5_OK) st = te;
    }
    if (st != D5_OK) return st;
    for (int64_t k = 0; k < m; k++) s->hist[s->ds->labels[idx[k]]]++;
    s->pos += m;
    *n = m;
    return D5_OK;
}

void d5_sampler_reset(d5_sampler *s)
{
    if (!s) return;
    s->epoch++;
    prepare_epoch(s);
}

void d5_sampler_set_epoch(d5_sampler *s, int64_t epoch)
{
    if (!s || epoch < 0) return;
    s->epoch = epoch;
    prepare_epoch(s);
}

int64_t d5_sampler_epoch(const d5_sampler *s)
{
    return s ? s->epoch : 0;
}

int64_t d5_sampler_batches(const d5_sampler *s)
{
    if (!s) return 0;
    return s->p.drop_last ? s->size / s->p.batch : (s->size + s->p.batch - 1) / s->p.batch;
}

int64_t d5_sampler_epoch_size(const d5_sampler *s)
{
    if (!s) return 0;
    return s->p.drop_last ? s->size / s->p.batch * s->p.batch : s->size;
}

void d5_sampler_histogram(const d5_sampler *s, int64_t *counts)
{
    if (!s || !counts) return;
    memcpy(counts, s->hist, (size_t)s->ds->classes * sizeof *counts);
}

void d5_sampler_attach_timer(d5_sampler *s, d5_timer *t)
{
    if (s) s->timer = t;
}

const d5_sampler_params *d5_sampler_get_params(const d5_sampler *s)
{
    return s ? &s->p : NULL;
}

const d5_dataset *d5_sampler_dataset(const d5_sampler *s)
{
    return s ? s->ds : NULL;
}
