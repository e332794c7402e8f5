/* Samplers: ordered, shuffled, partitioned and sharded-batch orders, drop_last, the label
 * histogram, the IO timer, augmentations, and out-of-memory paths of opening
 * datasets and creating samplers. Datasets here encode each sample's index in
 * its pixels (counting_dataset), so that the tests see which index came. */
#define _GNU_SOURCE
#include "data_support.h"
#include "support.h"

#include "d5/onnx.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Draws one epoch: the indices in order into seen[] (room for cap), checking
 * each label against index % classes. Returns the number of batches. */
static int64_t draw_epoch(d5_sampler *s, int64_t batch, int64_t classes, int64_t *seen, int64_t cap,
                          int64_t *count)
{
    float *x = malloc(sizeof(float) * 2 * (size_t)batch);
    int64_t *lab = malloc(sizeof(int64_t) * (size_t)batch), n = 0, batches = 0;
    *count = 0;
    for (;;) {
        cr_assert_eq(d5_sampler_next(s, x, lab, &n), D5_OK, "%s", d5_last_error());
        if (n == 0) break;
        cr_assert(n <= batch);
        batches++;
        for (int64_t k = 0; k < n; k++) {
            int64_t i = counting_index(x + 2 * k);
            cr_expect_eq(lab[k], i % classes, "index %lld", (long long)i);
            cr_assert(*count < cap);
            seen[(*count)++] = i;
        }
    }
    free(x);
    free(lab);
    return batches;
}

/* The default parameters with these changed. */
static d5_sampler_params params(int32_t kind, int64_t batch, uint64_t seed, int32_t rank,
                                int32_t world)
{
    d5_sampler_params p = d5_sampler_default_params();
    p.kind = kind;
    p.batch = batch;
    p.seed = seed;
    p.rank = rank;
    p.world = world;
    return p;
}

static d5_sampler *sampler_of(const d5_dataset *ds, const d5_sampler_params *p)
{
    d5_sampler *s = NULL;
    cr_assert_eq(d5_sampler_create(ds, p, &s), D5_OK, "%s", d5_last_error());
    return s;
}

/* A sampler of one worker (rank 0 of 1). */
static d5_sampler *sampler(const d5_dataset *ds, int32_t kind, int64_t batch, uint64_t seed)
{
    d5_sampler_params p = params(kind, batch, seed, 0, 1);
    return sampler_of(ds, &p);
}

/* Asserts that creating a sampler with these parameters (the rest default)
 * fails with D5_ERR_INVALID and a message containing `text`. */
static void expect_refused(const d5_dataset *ds, int32_t kind, int64_t batch, int32_t rank,
                           int32_t world, const char *text)
{
    d5_sampler_params p = params(kind, batch, 0, rank, world);
    d5_sampler *s = NULL;
    cr_expect_eq(d5_sampler_create(ds, &p, &s), D5_ERR_INVALID, "%s", text);
    cr_expect(strstr(d5_last_error(), text), "%s", d5_last_error());
}

/* A counting dataset in a temporary folder of its own. */
typedef struct {
    char *dir;
    d5_dataset *ds;
} counting;

static counting counting_open(uint32_t n, uint32_t classes)
{
    counting c = {tmpdir_make(), NULL};
    c.ds = counting_dataset(c.dir, n, classes);
    cr_assert_not_null(c.ds, "%s", d5_last_error());
    return c;
}

/* Frees the dataset and removes its folder. */
static void counting_close(counting *c)
{
    dataset_done(c->ds, c->dir);
}

/* 1 when a[0..n-1] holds every value of 0..n-1 exactly once. */
static int is_permutation(const int64_t *a, int64_t n)
{
    char *hit = calloc((size_t)n, 1);
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++) {
        ok = a[i] >= 0 && a[i] < n && !hit[a[i]];
        if (ok) hit[a[i]] = 1;
    }
    free(hit);
    return ok;
}

Test(samplers, ordered_and_drop_last)
{
    counting set = counting_open(103, 7);
    d5_dataset *ds = set.ds;
    d5_sampler *s = sampler(ds, D5_SAMPLER_ORDERED, 10, 0);
    cr_expect_eq(d5_sampler_batches(s), 11);
    cr_expect_eq(d5_sampler_epoch_size(s), 103);
    int64_t seen[103], count = 0;
    cr_expect_eq(draw_epoch(s, 10, 7, seen, 103, &count), 11);
    cr_assert_eq(count, 103);
    for (int64_t i = 0; i < 103; i++) cr_expect_eq(seen[i], i);
    /* Labels may be left out; the end stays the end until a reset. */
    float x[20];
    int64_t n = -1;
    cr_expect_eq(d5_sampler_next(s, x, NULL, &n), D5_OK);
    cr_expect_eq(n, 0);
    d5_sampler_reset(s);
    cr_expect_eq(d5_sampler_epoch(s), 1);
    cr_expect_eq(d5_sampler_next(s, x, NULL, &n), D5_OK);
    cr_expect(n == 10 && counting_index(x) == 0);
    d5_sampler_free(s);

    d5_sampler_params p = d5_sampler_default_params();
    p.batch = 10;
    p.drop_last = 1;
    cr_assert_eq(d5_sampler_create(ds, &p, &s), D5_OK);
    cr_expect_eq(d5_sampler_batches(s), 10);
    cr_expect_eq(d5_sampler_epoch_size(s), 100);
    cr_expect_eq(draw_epoch(s, 10, 7, seen, 103, &count), 10);
    cr_assert_eq(count, 100);
    for (int64_t i = 0; i < 100; i++) cr_expect_eq(seen[i], i);
    d5_sampler_free(s);
    counting_close(&set);
}

Test(samplers, shuffled_is_a_seeded_permutation)
{
    counting set = counting_open(500, 3);
    d5_dataset *ds = set.ds;
    int64_t a[500], b[500], c[500], e1[500], count;
    d5_sampler *sa = sampler(ds, D5_SAMPLER_SHUFFLED, 32, 42);
    d5_sampler *sb = sampler(ds, D5_SAMPLER_SHUFFLED, 7, 42); /* another batch size */
    d5_sampler *sc = sampler(ds, D5_SAMPLER_SHUFFLED, 32, 43);
    draw_epoch(sa, 32, 3, a, 500, &count);
    cr_assert_eq(count, 500);
    cr_expect(is_permutation(a, 500));
    int64_t fixed = 0;
    for (int64_t i = 0; i < 500; i++) fixed += a[i] == i;
    cr_expect_lt(fixed, 20, "%lld fixed points", (long long)fixed);
    draw_epoch(sb, 7, 3, b, 500, &count);
    cr_expect(memcmp(a, b, sizeof a) == 0, "the same seed gave another order");
    draw_epoch(sc, 32, 3, c, 500, &count);
    cr_expect(is_permutation(c, 500));
    cr_expect(memcmp(a, c, sizeof a) != 0, "another seed gave the same order");
    /* A new epoch, a new permutation; set_epoch goes back. */
    d5_sampler_reset(sa);
    draw_epoch(sa, 32, 3, e1, 500, &count);
    cr_expect(is_permutation(e1, 500));
    cr_expect(memcmp(a, e1, sizeof a) != 0, "epoch 1 repeats epoch 0");
    d5_sampler_set_epoch(sa, 0);
    draw_epoch(sa, 32, 3, b, 500, &count);
    cr_expect(memcmp(a, b, sizeof a) == 0, "set_epoch(0) did not reproduce epoch 0");
    d5_sampler_set_epoch(sc, 1);
    cr_expect_eq(d5_sampler_epoch(sc), 1);
    d5_sampler_free(sa);
    d5_sampler_free(sb);
    d5_sampler_free(sc);
    counting_close(&set);
}

/* Runs `world` partitioned samplers over n samples; returns how many indices
 * they drew together, checking that no index comes twice. */
static int64_t partition(const d5_dataset *ds, int64_t n, int32_t world, int64_t epoch,
                         const int64_t *shuffled)
{
    char *hit = calloc((size_t)n, 1);
    int64_t total = 0, *seen = malloc(sizeof(int64_t) * (size_t)n);
    for (int32_t r = 0; r < world; r++) {
        d5_sampler_params p = params(D5_SAMPLER_PARTITIONED, 4, 9, r, world);
        d5_sampler *s = sampler_of(ds, &p);
        d5_sampler_set_epoch(s, epoch);
        cr_expect_eq(d5_sampler_epoch_size(s), n / world);
        int64_t count = 0;
        draw_epoch(s, 4, 5, seen, n, &count);
        cr_expect_eq(count, n / world, "rank %d", r);
        for (int64_t k = 0; k < count; k++) {
            cr_expect_not(hit[seen[k]], "index %lld drawn twice", (long long)seen[k]);
            hit[seen[k]] = 1;
            /* Rank r's slice of the permutation a shuffled sampler draws. */
            if (shuffled)
                cr_expect_eq(seen[k], shuffled[r * (n / world) + k], "rank %d position %lld", r,
                             (long long)k);
        }
        total += count;
        d5_sampler_free(s);
    }
    free(hit);
    free(seen);
    return total;
}

Test(samplers, partitioned_ranks_are_disjoint_and_cover)
{
    counting set = counting_open(40, 5);
    d5_dataset *ds = set.ds;
    int64_t shuffled[40], count;
    d5_sampler *s = sampler(ds, D5_SAMPLER_SHUFFLED, 40, 9);
    draw_epoch(s, 40, 5, shuffled, 40, &count);
    d5_sampler_free(s);
    cr_expect_eq(partition(ds, 40, 4, 0, shuffled), 40);
    cr_expect_eq(partition(ds, 40, 3, 2, NULL), 39); /* 40 % 3 left out */
    cr_expect_eq(partition(ds, 40, 1, 0, shuffled), 40);
    d5_dataset_free(set.ds);
    ds = set.ds = counting_dataset(set.dir, 42, 5);
    cr_assert_not_null(ds, "%s", d5_last_error());
    cr_expect_eq(partition(ds, 42, 4, 0, NULL), 40);
    /* Bad parameters are named (64 is the default batch). */
    expect_refused(ds, D5_SAMPLER_PARTITIONED, 64, 4, 4, "rank 4 of world 4");
    expect_refused(ds, D5_SAMPLER_PARTITIONED, 64, 0, 50, "50 workers");
    expect_refused(ds, D5_SAMPLER_ORDERED, 0, 0, 1, "batch 0");
    expect_refused(ds, 7, 1, 0, 1, "kind 7");
    counting_close(&set);
}

/* Sharded-batch: the workers' batches of step k, side by side, are batch k
 * of one shuffled sampler with the global batch; no sample comes twice. */
Test(samplers, sharded_batch_splits_each_global_batch)
{
    counting set = counting_open(50, 5);
    d5_dataset *ds = set.ds;
    int64_t whole[50], count;
    d5_sampler *s = sampler(ds, D5_SAMPLER_SHUFFLED, 12, 9);
    d5_sampler_set_epoch(s, 1);
    int64_t global_batches = draw_epoch(s, 12, 5, whole, 50, &count);
    cr_assert_eq(global_batches, 5); /* 4 full batches of 12 and one of 2 */
    d5_sampler_free(s);
    for (int32_t world = 1; world <= 4; world *= 2) {
        int64_t b = 12 / world;
        for (int32_t r = 0; r < world; r++) {
            d5_sampler_params p = params(D5_SAMPLER_SHARDED_BATCH, b, 9, r, world);
            int64_t seen[50];
            s = sampler_of(ds, &p);
            d5_sampler_set_epoch(s, 1);
            cr_expect_eq(d5_sampler_epoch_size(s), 4 * b, "world %d", world);
            cr_expect_eq(d5_sampler_batches(s), 4, "world %d", world);
            cr_expect_eq(draw_epoch(s, b, 5, seen, 50, &count), 4, "world %d rank %d", world, r);
            for (int64_t k = 0; k < count; k++)
                cr_expect_eq(seen[k], whole[k / b * 12 + r * b + k % b],
                             "world %d rank %d position %lld", world, r, (long long)k);
            d5_sampler_free(s);
        }
    }
    /* A global batch larger than the dataset is refused by name. */
    expect_refused(ds, D5_SAMPLER_SHARDED_BATCH, 13, 0, 4, "global batch of 4 x 13");
    counting_close(&set);
}

Test(samplers, histogram_counts_what_was_drawn)
{
    counting set = counting_open(103, 7);
    d5_dataset *ds = set.ds;
    int64_t want[7] = {0}, got[7], whole[7];
    for (int i = 0; i < 103; i++) want[i % 7]++;
    d5_dataset_histogram(ds, whole);
    for (int c = 0; c < 7; c++) cr_expect_eq(whole[c], want[c]);
    d5_sampler *s = sampler(ds, D5_SAMPLER_SHUFFLED, 10, 3);
    int64_t seen[103], count;
    draw_epoch(s, 10, 7, seen, 103, &count);
    d5_sampler_histogram(s, got);
    for (int c = 0; c < 7; c++) cr_expect_eq(got[c], want[c], "class %d after one epoch", c);
    /* Three batches more. */
    d5_sampler_reset(s);
    float x[20];
    int64_t lab[10], n;
    for (int b = 0; b < 3; b++) {
        cr_assert_eq(d5_sampler_next(s, x, lab, &n), D5_OK);
        for (int64_t k = 0; k < n; k++) want[lab[k]]++;
    }
    d5_sampler_histogram(s, got);
    for (int c = 0; c < 7; c++) cr_expect_eq(got[c], want[c], "class %d", c);
    d5_sampler_free(s);
    counting_close(&set);
}

/* What a sampler was made from: its parameters and its dataset. */
Test(samplers, parameters_and_dataset_read_back)
{
    counting set = counting_open(20, 3);
    d5_dataset *ds = set.ds;
    d5_sampler *s = sampler(ds, D5_SAMPLER_SHUFFLED, 6, 42);
    const d5_sampler_params *p = d5_sampler_get_params(s);
    cr_assert_not_null(p);
    cr_assert_eq(p->kind, D5_SAMPLER_SHUFFLED);
    cr_assert_eq(p->batch, 6);
    cr_assert_eq(p->seed, 42);
    cr_assert_eq(d5_sampler_dataset(s), ds);
    cr_assert_null(d5_sampler_get_params(NULL));
    cr_assert_null(d5_sampler_dataset(NULL));
    d5_sampler_free(s);
    counting_close(&set);
}

Test(samplers, io_timer_counts_reads)
{
    counting set = counting_open(103, 7);
    d5_dataset *ds = set.ds;
    d5_sampler *s = sampler(ds, D5_SAMPLER_SHUFFLED, 10, 3);
    d5_timer *t = NULL;
    cr_assert_eq(d5_timer_create(NULL, &t), D5_OK);
    d5_sampler_attach_timer(s, t);
    int64_t seen[103], count;
    cr_expect_eq(draw_epoch(s, 10, 7, seen, 103, &count), 11);
    cr_expect_eq(d5_timer_count(t, D5_KEY_ID_IO, D5_TIMER_CPU), 11);
    /* A region of IO already open is an error of the timer, passed on. */
    cr_assert_eq(d5_timer_start(t, D5_KEY_IO), D5_OK);
    d5_sampler_reset(s);
    float x[20];
    int64_t n;
    cr_expect_eq(d5_sampler_next(s, x, NULL, &n), D5_ERR_STATE);
    cr_assert_eq(d5_timer_end(t, D5_KEY_IO), D5_OK);
    cr_expect_eq(d5_timer_count(t, D5_KEY_ID_IO, D5_TIMER_CPU), 12);
    /* Detached: nothing more is recorded. */
    d5_sampler_attach_timer(s, NULL);
    draw_epoch(s, 10, 7, seen, 103, &count);
    cr_expect_eq(count, 103);
    cr_expect_eq(d5_timer_count(t, D5_KEY_ID_IO, D5_TIMER_CPU), 12);
    d5_timer_free(t);
    d5_sampler_free(s);
    counting_close(&set);
}
