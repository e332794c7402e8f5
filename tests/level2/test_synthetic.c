/* The synthetic dataset's values: bit for bit the documented construction
 * (d5_rng_normal on the sample's stream plus the class mean), and the same
 * samples as the first implementation, which called the C library for every
 * element (FNV-1a hashes recorded from it). Its statistics and seeding are
 * checked in test_datasets_more.c. */
#include "support.h"

#include "d5/datasets.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* The splitmix64 finalizer the dataset derives its seeds with. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* Sample `index` of label `label` as d5_dataset_synthetic documents it,
 * element by element with d5_rng_normal. */
static void reference_sample(uint64_t seed, int64_t index, int64_t label, int64_t numel, float *x)
{
    d5_rng noise, pattern;
    d5_rng_seed(&noise, mix(seed ^ mix((uint64_t)index)));
    d5_rng_seed(&pattern, mix(0x5851f42d4c957f2du) ^ mix(~(uint64_t)label));
    uint64_t signs = 0;
    for (int64_t j = 0; j < numel; j++) {
        if (j % 64 == 0) signs = d5_rng_next(&pattern);
        float mean = (signs >> (j % 64)) & 1u ? 0.5f : -0.5f;
        x[j] = mean + (float)d5_rng_normal(&noise);
    }
}

static d5_dataset *synthetic(int32_t ndim, const int64_t *shape, int64_t n, int64_t classes,
                             uint64_t seed)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, ndim, shape, &d), D5_OK);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_synthetic(&d, n, classes, seed, &ds), D5_OK, "%s", d5_last_error());
    return ds;
}

/* Shapes around the 512-element runs the generator computes together (one
 * element, fewer than 16, a run plus a remainder, CIFAR and MNIST images):
 * 2.2 million elements, of which about 45 leave the vectorized path for the C
 * library (about 2 in 10^5), so both paths are compared. */
Test(datasets_synthetic_values, bit_identical_to_rng_normal)
{
    const struct {
        int32_t ndim;
        int64_t shape[3], n;
    } cases[] = {
        {1, {1}, 300},    {1, {5}, 300},         {1, {16}, 100},        {2, {17, 31}, 200},
        {1, {1025}, 100}, {3, {3, 32, 32}, 400}, {3, {1, 28, 28}, 400},
    };
    const uint64_t seeds[2] = {1, 0xfeedfacecafeu};
    int64_t compared = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int k = 0; k < 2; k++) {
            d5_dataset *ds = synthetic(cases[c].ndim, cases[c].shape, cases[c].n, 10, seeds[k]);
            int64_t numel = d5_tensor_desc_numel(d5_dataset_sample_desc(ds));
            float *got = malloc(sizeof(float) * (size_t)numel);
            float *want = malloc(sizeof(float) * (size_t)numel);
            cr_assert(got && want);
            for (int64_t i = 0; i < cases[c].n; i++) {
                int64_t label = -1;
                cr_assert_eq(d5_dataset_get(ds, &i, 1, got, &label), D5_OK);
                reference_sample(seeds[k], i, label, numel, want);
                for (int64_t j = 0; j < numel; j++)
                    cr_assert(memcmp(&got[j], &want[j], sizeof got[j]) == 0,
                              "numel %lld, seed %llu, sample %lld, element %lld: %.9g, want %.9g",
                              (long long)numel, (unsigned long long)seeds[k], (long long)i,
                              (long long)j, got[j], want[j]);
                compared += numel;
            }
            free(got);
            free(want);
            d5_dataset_free(ds);
        }
    cr_expect_gt(compared, 2000000);
}

/* FNV-1a over each sample's floats and label, in index order. */
static uint64_t dataset_hash(int32_t ndim, const int64_t *shape, int64_t n, int64_t classes,
                             uint64_t seed)
{
    d5_dataset *ds = synthetic(ndim, shape, n, classes, seed);
    int64_t numel = d5_tensor_desc_numel(d5_dataset_sample_desc(ds));
    float *x = malloc(sizeof(float) * (size_t)numel);
    cr_assert_not_null(x);
    uint64_t h = D5_FNV1A_OFFSET;
    for (int64_t i = 0; i < n; i++) {
        int64_t label;
        cr_assert_eq(d5_dataset_get(ds, &i, 1, x, &label), D5_OK);
        h = d5_fnv1a(h, x, sizeof(float) * (size_t)numel);
        h = d5_fnv1a(h, &label, sizeof label);
    }
    free(x);
    d5_dataset_free(ds);
    return h;
}

Test(datasets_synthetic_values, same_samples_as_recorded)
{
    cr_expect_eq(dataset_hash(3, (int64_t[]){3, 32, 32}, 256, 10, 1), 0x086c5e7dea3281f6u);
    cr_expect_eq(dataset_hash(3, (int64_t[]){3, 32, 32}, 256, 10, 12345), 0xe0da94b946955b99u);
    cr_expect_eq(dataset_hash(3, (int64_t[]){1, 28, 28}, 256, 10, 7), 0x5eaaa809357fda4bu);
    cr_expect_eq(dataset_hash(1, (int64_t[]){5}, 1000, 3, 3), 0xed0cddb30b0fc9e5u);
    cr_expect_eq(dataset_hash(2, (int64_t[]){17, 31}, 300, 4, 2), 0xcacfc1170ba7e271u);
}

/* A batch read at once is the samples read one by one (the runs restart at
 * every sample). */
Test(datasets_synthetic_values, batch_equals_single_reads)
{
    d5_dataset *ds = synthetic(3, (int64_t[]){3, 32, 32}, 100, 10, 5);
    const size_t numel = 3072;
    int64_t idx[8] = {99, 0, 42, 42, 7, 63, 1, 98};
    float *batch = malloc(sizeof(float) * numel * 8), *one = malloc(sizeof(float) * numel);
    cr_assert(batch && one);
    cr_assert_eq(d5_dataset_get(ds, idx, 8, batch, NULL), D5_OK);
    for (int k = 0; k < 8; k++) {
        cr_assert_eq(d5_dataset_get(ds, &idx[k], 1, one, NULL), D5_OK);
        cr_expect(memcmp(one, batch + k * numel, sizeof(float) * numel) == 0, "sample %lld",
                  (long long)idx[k]);
    }
    free(batch);
    free(one);
    d5_dataset_free(ds);
}

/* The token dataset: integer ids in [0, vocab), the same for a seed and an
 * index, and a pattern per class: two samples of one label agree on about a
 * quarter of their positions (each holds its class's token with probability
 * 1/2), two of different labels almost never. */
Test(synthetic, tokens_are_ids_with_a_pattern_per_class)
{
    const int64_t seq = 64, vocab = 1000, n = 200;
    d5_tensor_desc sample;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 1, &seq, &sample), D5_OK);
    d5_dataset *a = NULL, *b = NULL;
    cr_assert_eq(d5_dataset_synthetic_tokens(&sample, n, 2, vocab, 5, &a), D5_OK, "%s",
                 d5_last_error());
    cr_assert_eq(d5_dataset_synthetic_tokens(&sample, n, 2, vocab, 5, &b), D5_OK);
    float *x = malloc((size_t)(n * seq) * sizeof *x), *y = malloc((size_t)(n * seq) * sizeof *y);
    int64_t idx[200], la[200], lb[200];
    for (int64_t i = 0; i < n; i++) idx[i] = n - 1 - i;
    cr_assert_eq(d5_dataset_get(a, idx, n, x, la), D5_OK);
    cr_assert_eq(d5_dataset_get(b, idx, n, y, lb), D5_OK);
    cr_assert(memcmp(x, y, (size_t)(n * seq) * sizeof *x) == 0, "one seed, two datasets");
    for (int64_t i = 0; i < n * seq; i++)
        cr_assert(x[i] >= 0 && x[i] < vocab && x[i] == (float)(int64_t)x[i], "id %g", x[i]);
    int64_t same = 0, same_n = 0, other = 0, other_n = 0;
    for (int64_t i = 0; i + 1 < n; i++)
        for (int64_t j = 0; j < seq; j++) {
            int agree = x[i * seq + j] == x[(i + 1) * seq + j];
            if (la[i] == la[i + 1])
                same += agree, same_n++;
            else
                other += agree, other_n++;
        }
    cr_assert(same_n > 0 && other_n > 0);
    double fs = (double)same / (double)same_n, fo = (double)other / (double)other_n;
    cr_expect(fs > 0.18 && fs < 0.34, "same label: %.3f of the positions agree", fs);
    cr_expect(fo < 0.02, "other labels: %.3f of the positions agree", fo);
    cr_assert_eq(d5_dataset_synthetic_tokens(&sample, n, 2, 0, 5, &b), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "vocabulary 0"), "%s", d5_last_error());
    free(x);
    free(y);
    d5_dataset_free(a);
    d5_dataset_free(b);
}
