/* Sampler augmentations (flip, crop, normalize, cutout: what each does to a
 * known image, and that a seed reproduces them) and the out-of-memory paths of
 * opening every kind of dataset and drawing from a sampler. */
#define _GNU_SOURCE
#include "data_support.h"
#include "support.h"

#include "d5/onnx.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N 64

/* A dataset of N images [c, h, w] in dir, all the same: pixel (ch, y, x) =
 * 1 + ch * h * w + y * w + x (distinct, non-zero). */
static d5_dataset *image_dataset(const char *dir, uint32_t c, uint32_t h, uint32_t w)
{
    size_t numel = (size_t)c * h * w;
    uint8_t *img = malloc(N * numel), lab[N];
    for (size_t i = 0; i < N; i++) {
        lab[i] = (uint8_t)(i % 2);
        for (size_t j = 0; j < numel; j++) img[i * numel + j] = (uint8_t)(1 + j);
    }
    char ip[1100], lp[1100];
    snprintf(ip, sizeof ip, "%s/aug-images", dir);
    snprintf(lp, sizeof lp, "%s/aug-labels", dir);
    const uint32_t dims4[4] = {N, c, h, w}, dims3[3] = {N, h, w}, n = N;
    int rc = c == 1 ? write_idx(ip, 0, 0x803, 3, dims3, img, N * numel)
                    : write_idx(ip, 0, 0x804, 4, dims4, img, N * numel);
    cr_assert_eq(rc, 0);
    cr_assert_eq(write_idx(lp, 0, 0x801, 1, &n, lab, N), 0);
    free(img);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_open_idx(ip, lp, &ds), D5_OK, "%s", d5_last_error());
    return ds;
}

/* One ordered epoch of N samples in one batch, augmented by `a`. */
static float *augmented(const d5_dataset *ds, const d5_augment *a, uint64_t seed)
{
    d5_sampler_params p = d5_sampler_default_params();
    p.batch = N;
    p.seed = seed;
    p.augment = *a;
    d5_sampler *s = NULL;
    cr_assert_eq(d5_sampler_create(ds, &p, &s), D5_OK, "%s", d5_last_error());
    float *x = malloc(sizeof(float) * N * (size_t)d5_tensor_desc_numel(d5_dataset_sample_desc(ds)));
    int64_t n = 0;
    cr_assert_eq(d5_sampler_next(s, x, NULL, &n), D5_OK, "%s", d5_last_error());
    cr_assert_eq(n, N);
    d5_sampler_free(s);
    return x;
}

static float orig(int ch, int y, int x, int h, int w)
{
    return (float)(1 + ch * h * w + y * w + x) / 255.0f;
}

Test(augment, flip_is_a_mirror)
{
    char *dir = tmpdir_make();
    const int c = 2, h = 3, w = 5;
    d5_dataset *ds = image_dataset(dir, c, h, w);
    d5_augment a = d5_sampler_default_params().augment;
    a.flip = 1;
    float *x = augmented(ds, &a, 1), *again = augmented(ds, &a, 1);
    cr_expect(memcmp(x, again, sizeof(float) * N * c * h * w) == 0, "not reproducible");
    int mirrored = 0;
    for (int i = 0; i < N; i++) {
        const float *s = x + i * c * h * w;
        int same = 1, mirror = 1;
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < h; y++)
                for (int z = 0; z < w; z++) {
                    same &= s[(ch * h + y) * w + z] == orig(ch, y, z, h, w);
                    mirror &= s[(ch * h + y) * w + z] == orig(ch, y, w - 1 - z, h, w);
                }
        cr_expect(same || mirror, "sample %d is neither the image nor its mirror", i);
        mirrored += mirror;
    }
    cr_expect(mirrored > 8 && mirrored < N - 8, "%d of %d mirrored", mirrored, N);
    free(x);
    free(again);
    dataset_done(ds, dir);
}

Test(augment, crop_stays_in_the_padded_window)
{
    char *dir = tmpdir_make();
    const int h = 6, w = 7, pad = 2;
    d5_dataset *ds = image_dataset(dir, 1, h, w);
    d5_augment a = d5_sampler_default_params().augment;
    a.crop_pad = pad;
    float *x = augmented(ds, &a, 5);
    int shifts[5][5] = {{0}};
    for (int i = 0; i < N; i++) {
        const float *s = x + i * h * w;
        int found = 0;
        /* Output (y, x) must be input (y + dy, x + dx), zero outside, for one
         * (dy, dx) in [-pad, pad]^2. */
        for (int dy = -pad; dy <= pad && !found; dy++)
            for (int dx = -pad; dx <= pad && !found; dx++) {
                int ok = 1;
                for (int y = 0; y < h; y++)
                    for (int z = 0; z < w; z++) {
                        int sy = y + dy, sz = z + dx;
                        float want =
                            sy >= 0 && sy < h && sz >= 0 && sz < w ? orig(0, sy, sz, h, w) : 0.0f;
                        ok &= s[y * w + z] == want;
                    }
                if (ok) {
                    found = 1;
                    shifts[dy + pad][dx + pad]++;
                }
            }
        cr_expect(found, "sample %d is no crop of the padded image", i);
    }
    int distinct = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) distinct += shifts[i][j] > 0;
    cr_expect_gt(distinct, 5, "only %d distinct offsets in %d crops", distinct, N);
    free(x);
    dataset_done(ds, dir);
}

Test(augment, normalize_then_cutout_zeroes_a_square)
{
    char *dir = tmpdir_make();
    const int c = 3, h = 8, w = 9, side = 4;
    d5_dataset *ds = image_dataset(dir, c, h, w);
    d5_augment a = d5_sampler_default_params().augment;
    a.normalize = 1;
    const float mean[3] = {0.1f, 0.2f, 0.3f}, std[3] = {0.5f, 2.0f, 4.0f};
    memcpy(a.mean, mean, sizeof mean);
    memcpy(a.std, std, sizeof std);
    /* Normalization alone. */
    float *x = augmented(ds, &a, 2);
    for (int i = 0; i < N; i++)
        for (int ch = 0; ch < c; ch++)
            for (int j = 0; j < h * w; j++) {
                float want = (orig(ch, 0, j, h, w) - mean[ch]) / std[ch];
                cr_expect(fabsf(x[(i * c + ch) * h * w + j] - want) < 1e-6f, "%d %d %d", i, ch, j);
            }
    free(x);
    /* Then cutout: a square of zeros (clipped at the borders) on every channel,
     * the rest normalized. */
    a.cutout = side;
    x = augmented(ds, &a, 2);
    int clipped = 0;
    for (int i = 0; i < N; i++) {
        const float *s = x + i * c * h * w;
        int y0 = h, y1 = -1, x0 = w, x1 = -1;
        for (int y = 0; y < h; y++)
            for (int z = 0; z < w; z++)
                if (s[y * w + z] == 0.0f) {
                    y0 = y < y0 ? y : y0;
                    y1 = y > y1 ? y : y1;
                    x0 = z < x0 ? z : x0;
                    x1 = z > x1 ? z : x1;
                }
        cr_assert(y1 >= 0, "sample %d: no zeros", i);
        int hh = y1 - y0 + 1, ww = x1 - x0 + 1;
        cr_expect(hh <= side && ww <= side, "sample %d: %d x %d zeros", i, hh, ww);
        cr_expect(hh == side || y0 == 0 || y1 == h - 1, "sample %d: height %d", i, hh);
        cr_expect(ww == side || x0 == 0 || x1 == w - 1, "sample %d: width %d", i, ww);
        clipped += hh < side || ww < side;
        for (int ch = 0; ch < c; ch++)
            for (int y = 0; y < h; y++)
                for (int z = 0; z < w; z++) {
                    int in = y >= y0 && y <= y1 && z >= x0 && z <= x1;
                    float want = in ? 0.0f : (orig(ch, y, z, h, w) - mean[ch]) / std[ch];
                    cr_expect(fabsf(s[(ch * h + y) * w + z] - want) < 1e-6f, "%d (%d,%d,%d)", i, ch,
                              y, z);
                }
    }
    cr_expect(clipped > 0 && clipped < N, "%d of %d squares clipped", clipped, N);
    free(x);
    dataset_done(ds, dir);
}

Test(augment, seeded_and_checked)
{
    char *dir = tmpdir_make();
    d5_dataset *ds = image_dataset(dir, 3, 8, 8);
    d5_augment a = d5_sampler_default_params().augment;
    a.flip = 1;
    a.crop_pad = 2;
    a.cutout = 3;
    size_t bytes = sizeof(float) * N * 3 * 8 * 8;
    float *x = augmented(ds, &a, 11), *y = augmented(ds, &a, 11), *z = augmented(ds, &a, 12);
    cr_expect(memcmp(x, y, bytes) == 0, "the same seed gave other augmentations");
    cr_expect(memcmp(x, z, bytes) != 0, "another seed gave the same augmentations");
    free(x);
    free(y);
    free(z);
    /* Parameters the samples do not allow. */
    d5_sampler_params p = d5_sampler_default_params();
    d5_sampler *s = NULL;
    p.augment.normalize = 1;
    p.augment.std[1] = 0.0f;
    cr_expect_eq(d5_sampler_create(ds, &p, &s), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "channel 1"), "%s", d5_last_error());
    p = d5_sampler_default_params();
    p.augment.cutout = -1;
    cr_expect_eq(d5_sampler_create(ds, &p, &s), D5_ERR_INVALID);
    d5_dataset_free(ds);
    const int64_t flat[1] = {10}, five[3] = {5, 2, 2};
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 1, flat, &d), D5_OK);
    cr_assert_eq(d5_dataset_synthetic(&d, 4, 2, 1, &ds), D5_OK);
    p = d5_sampler_default_params();
    p.augment.flip = 1;
    cr_expect_eq(d5_sampler_create(ds, &p, &s), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "float32[10]"), "%s", d5_last_error());
    d5_dataset_free(ds);
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 3, five, &d), D5_OK);
    cr_assert_eq(d5_dataset_synthetic(&d, 4, 2, 1, &ds), D5_OK);
    p = d5_sampler_default_params();
    p.augment.normalize = 1;
    cr_expect_eq(d5_sampler_create(ds, &p, &s), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "4 channels"), "%s", d5_last_error());
    cr_expect_null(s);
    dataset_done(ds, dir);
}

/* Opens a dataset of kind k (0 idx, 1 mnist, 2 cifar, 3 synthetic,
 * 4 tensorpairs) from the files in dir, makes a shuffled, cropping sampler and
 * draws a batch. */
static d5_status open_and_draw(int k, const char *dir)
{
    char a[1100], b[1100];
    snprintf(a, sizeof a, "%s/train-images-idx3-ubyte", dir);
    snprintf(b, sizeof b, "%s/train-labels-idx1-ubyte", dir);
    d5_dataset *ds = NULL;
    d5_tensor_desc d;
    const int64_t shape[3] = {1, 4, 4};
    d5_status s = d5_tensor_desc_make(D5_F32, 3, shape, &d);
    if (s != D5_OK) return s;
    switch (k) {
    case 0: s = d5_dataset_open_idx(a, b, &ds); break;
    case 1: s = d5_dataset_open_mnist(dir, 1, &ds); break;
    case 2: s = d5_dataset_open_cifar(dir, 0, 10, &ds); break;
    case 3: s = d5_dataset_synthetic(&d, 10, 3, 1, &ds); break;
    default: s = d5_dataset_open_tensorpairs(dir, &ds); break;
    }
    if (s != D5_OK) return s;
    d5_sampler_params p = d5_sampler_default_params();
    p.kind = D5_SAMPLER_SHUFFLED;
    p.batch = 2;
    p.augment.crop_pad = 1;
    d5_sampler *sm = NULL;
    s = d5_sampler_create(ds, &p, &sm);
    float x[2 * 3072];
    int64_t n;
    if (s == D5_OK) s = d5_sampler_next(sm, x, NULL, &n);
    d5_sampler_free(sm);
    d5_dataset_free(ds);
    return s;
}

Test(augment, out_of_memory_sweep)
{
    char *dir = tmpdir_make();
    cr_assert_eq(
        write_idx_pair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", 0, 10, 4, 4, 3),
        0);
    char p[1100];
    snprintf(p, sizeof p, "%s/test_batch.bin", dir);
    FILE *f = fopen(p, "wb");
    static uint8_t rec[3 * 3073];
    fwrite(rec, 1, sizeof rec, f);
    fclose(f);
    d5_tensor_desc d;
    d5_tensor in, out;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 3, (int64_t[]){3, 2, 2}, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &in), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 1, (int64_t[]){3}, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &out), D5_OK);
    snprintf(p, sizeof p, "%s/input_0.pb", dir);
    cr_assert_eq(d5_onnx_tensor_write(p, &in, NULL), D5_OK);
    snprintf(p, sizeof p, "%s/output_0.pb", dir);
    cr_assert_eq(d5_onnx_tensor_write(p, &out, NULL), D5_OK);
    d5_tensor_free(&in);
    d5_tensor_free(&out);
    for (int k = 0; k < 5; k++) {
        long budget = 0;
        for (;; budget++) {
            cr_assert_lt(budget, 1000, "kind %d never succeeds", k);
            failing_alloc_install(budget);
            d5_status s = open_and_draw(k, dir);
            long live = failing_alloc_live();
            failing_alloc_remove();
            cr_expect_eq(live, 0, "kind %d, budget %ld: %ld blocks leaked", k, budget, live);
            if (s == D5_OK) break;
            cr_expect_eq(s, D5_ERR_NOMEM, "kind %d, budget %ld: %s: %s", k, budget,
                         d5_status_name(s), d5_last_error());
            cr_expect(d5_last_error()[0], "kind %d, budget %ld: no message", k, budget);
        }
        cr_expect_gt(budget, 2, "kind %d: the sweep did not reach the sampler", k);
    }
    rmtree(dir);
    free(dir);
}
