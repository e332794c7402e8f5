/* A synthetic dataset of any shape, for benchmarks that should not depend on
 * files: element j of a sample of label c is drawn from N(0.5 * s(c, j), 1),
 * where s(c, j) = +-1 is a pseudo-random sign pattern fixed per class, the
 * same for every seed: two seeds give a training and a test set of one task.
 * The classes are separable by a linear model, so that training converges.
 * Samples are generated when read, each from a generator seeded by the
 * dataset's seed and the sample's index, so the same seed gives the same
 * samples in any order of reads and on every machine. */
#include "dataset_internal.h"

#define SYNTHETIC_MEAN 0.5f

/* A 64-bit mix (the finalizer of splitmix64) to derive independent seeds. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static void generate(const d5_dataset *ds, int64_t index, float *x)
{
    const uint64_t label = (uint64_t)ds->labels[index];
    d5_rng noise;
    d5_rng_seed(&noise, mix(ds->seed ^ mix((uint64_t)index)));
    /* The sign pattern of the class: 64 signs per draw of its own stream. */
    d5_rng pattern;
    d5_rng_seed(&pattern, mix(0x5851f42d4c957f2du) ^ mix(~label));
    uint64_t signs = 0;
    for (int64_t j = 0; j < ds->numel; j++) {
        if (j % 64 == 0) signs = d5_rng_next(&pattern);
        float mean = (signs >> (j % 64)) & 1u ? SYNTHETIC_MEAN : -SYNTHETIC_MEAN;
        x[j] = mean + (float)d5_rng_normal(&noise);
    }
}

d5_status d5_dataset_synthetic(const d5_tensor_desc *sample, int64_t n, int64_t classes,
                               uint64_t seed, d5_dataset **out)
{
    if (!sample || !out) return d5_error(D5_ERR_INVALID, "d5_dataset_synthetic: NULL argument");
    if (n < 1 || classes < 1)
        return d5_error(D5_ERR_INVALID,
                        "synthetic dataset: %lld samples of %lld classes; both must be >= 1",
                        (long long)n, (long long)classes);
    if (sample->ndim < 0 || sample->ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_INVALID, "synthetic dataset: sample has %d dimensions",
                        (int)sample->ndim);
    int64_t numel = 1;
    for (int32_t i = 0; i < sample->ndim; i++) {
        if (sample->shape[i] < 1)
            return d5_error(D5_ERR_INVALID, "synthetic dataset: sample dimension %d is %lld",
                            (int)i, (long long)sample->shape[i]);
        if (numel > INT64_MAX / sample->shape[i])
            return d5_error(D5_ERR_RANGE, "synthetic dataset: sample size overflows");
        numel *= sample->shape[i];
    }
    d5_dataset *ds = NULL;
    d5_status s = d5__dataset_new("synthetic", sample->ndim, sample->shape, n, classes, &ds);
    if (s != D5_OK) return s;
    ds->gen = generate;
    ds->seed = seed;
    d5_rng r;
    d5_rng_seed(&r, mix(seed ^ 0x6c6162656c73u)); /* "labels" */
    for (int64_t i = 0; i < n; i++) ds->labels[i] = (int64_t)d5_rng_below(&r, (uint64_t)classes);
    *out = ds;
    return D5_OK;
}
