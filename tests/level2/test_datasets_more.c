/* CIFAR-10 and CIFAR-100 on files written here in the exact binary format,
 * the synthetic dataset, and TensorProto pairs. */
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
#include <unistd.h>

/* Pixel (c, y, x) of CIFAR record r, as written. */
static uint8_t cifar_pixel(int r, int c, int y, int x)
{
    return (uint8_t)((c * 85 + y * 7 + x * 3 + r * 11) % 256);
}

/* Writes records first .. first + count - 1 with the given label bytes. */
static void write_cifar(const char *path, int first, int count, int nlabels,
                        void (*labels)(int r, uint8_t *out))
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    for (int r = first; r < first + count; r++) {
        uint8_t rec[2 + 3072];
        labels(r, rec);
        /* Channel-major: the R plane, then G, then B; each row-major 32 x 32. */
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++)
                    rec[nlabels + c * 1024 + y * 32 + x] = cifar_pixel(r, c, y, x);
        cr_assert_eq(fwrite(rec, 1, (size_t)nlabels + 3072, f), (size_t)nlabels + 3072);
    }
    fclose(f);
}

static void label10(int r, uint8_t *out)
{
    out[0] = (uint8_t)(r * 3 % 10);
}

static void label100(int r, uint8_t *out)
{
    out[0] = (uint8_t)(r % 20);
    out[1] = (uint8_t)(r * 37 % 100);
}

static void expect_cifar(const d5_dataset *ds, int n, int64_t (*label)(int r))
{
    cr_assert_eq(d5_dataset_size(ds), n);
    const d5_tensor_desc *d = d5_dataset_sample_desc(ds);
    cr_assert(d->ndim == 3 && d->shape[0] == 3 && d->shape[1] == 32 && d->shape[2] == 32);
    float *x = malloc(sizeof(float) * 3072);
    for (int r = 0; r < n; r++) {
        int64_t i = r, lab = -1;
        cr_assert_eq(d5_dataset_get(ds, &i, 1, x, &lab), D5_OK, "%s", d5_last_error());
        cr_expect_eq(lab, label(r), "record %d", r);
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int z = 0; z < 32; z++)
                    if (x[(c * 32 + y) * 32 + z] != cifar_pixel(r, c, y, z) / 255.0f)
                        cr_expect(0, "record %d pixel (%d, %d, %d): %g", r, c, y, z,
                                  (double)x[(c * 32 + y) * 32 + z]);
    }
    free(x);
}

static int64_t want10(int r)
{
    return r * 3 % 10;
}

static int64_t want100(int r)
{
    return r * 37 % 100;
}

Test(datasets_cifar, cifar10_batches_and_subfolder)
{
    char *dir = tmpdir_make();
    char p[1200];
    for (int f = 0, first = 0; f < 5; f++) {
        snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, f + 1);
        write_cifar(p, first, f + 1, 1, label10);
        first += f + 1;
    }
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_open_cifar(dir, 1, 10, &ds), D5_OK, "%s", d5_last_error());
    expect_cifar(ds, 15, want10);
    cr_expect_eq(d5_dataset_classes(ds), 10);
    cr_expect_str_eq(d5_dataset_name(ds), "cifar10-train");
    d5_dataset_free(ds);
    /* The test batch in the folder the archive unpacks to. */
    snprintf(p, sizeof p, "%s/cifar-10-batches-bin", dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    snprintf(p, sizeof p, "%s/cifar-10-batches-bin/test_batch.bin", dir);
    write_cifar(p, 0, 4, 1, label10);
    cr_assert_eq(d5_dataset_open_cifar(dir, 0, 10, &ds), D5_OK, "%s", d5_last_error());
    expect_cifar(ds, 4, want10);
    dataset_done(ds, dir);
}

Test(datasets_cifar, cifar100_fine_labels)
{
    char *dir = tmpdir_make();
    char p[1200];
    snprintf(p, sizeof p, "%s/train.bin", dir);
    write_cifar(p, 0, 6, 2, label100);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_open_cifar(dir, 1, 100, &ds), D5_OK, "%s", d5_last_error());
    expect_cifar(ds, 6, want100);
    cr_expect_eq(d5_dataset_classes(ds), 100);
    dataset_done(ds, dir);
}

static void coarse_25(int r, uint8_t *out)
{
    out[0] = r == 1 ? 25 : 0;
    out[1] = 5;
}

static void fine_100(int r, uint8_t *out)
{
    out[0] = 3;
    out[1] = r == 2 ? 100 : 9;
}

static void label_10(int r, uint8_t *out)
{
    out[0] = r == 0 ? 10 : 1;
}

static void expect_open_error(const char *dir, int train, int classes, d5_status want,
                              const char *file, const char *words)
{
    d5_dataset *ds = NULL;
    d5_status s = d5_dataset_open_cifar(dir, train, classes, &ds);
    cr_expect_eq(s, want, "%s: %s", d5_status_name(s), d5_last_error());
    cr_expect_null(ds);
    cr_expect(strstr(d5_last_error(), file) && strstr(d5_last_error(), words),
              "expected '%s' and '%s' in: %s", file, words, d5_last_error());
}

Test(datasets_cifar, bad_files_are_named)
{
    char *dir = tmpdir_make();
    char p[1200];
    expect_open_error(dir, 0, 10, D5_ERR_IO, "test_batch.bin", "cs.toronto.edu");
    expect_open_error(dir, 0, 20, D5_ERR_INVALID, "20", "10 or 100");
    /* One byte short of two records. */
    snprintf(p, sizeof p, "%s/test_batch.bin", dir);
    write_cifar(p, 0, 2, 1, label10);
    cr_assert_eq(truncate(p, 2 * 3073 - 1), 0);
    expect_open_error(dir, 0, 10, D5_ERR_FORMAT, p, "multiple of the 3073-byte record");
    write_cifar(p, 0, 2, 1, label_10);
    expect_open_error(dir, 0, 10, D5_ERR_FORMAT, p, "record 0 has label 10");
    /* data_batch_1.bin present, data_batch_2.bin missing. */
    snprintf(p, sizeof p, "%s/data_batch_1.bin", dir);
    write_cifar(p, 0, 1, 1, label10);
    expect_open_error(dir, 1, 10, D5_ERR_IO, "data_batch_2.bin", "cannot open");
    snprintf(p, sizeof p, "%s/test.bin", dir);
    write_cifar(p, 0, 3, 2, coarse_25);
    expect_open_error(dir, 0, 100, D5_ERR_FORMAT, p, "record 1 has coarse label 25");
    write_cifar(p, 0, 3, 2, fine_100);
    expect_open_error(dir, 0, 100, D5_ERR_FORMAT, p, "record 2 has fine label 100");
    rmtree(dir);
    free(dir);
}

Test(datasets_synthetic, seeded_and_learnable)
{
    const int64_t shape[3] = {2, 8, 16};
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 3, shape, &d), D5_OK);
    d5_dataset *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(d5_dataset_synthetic(&d, 400, 2, 7, &a), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_dataset_synthetic(&d, 400, 2, 7, &b), D5_OK);
    cr_assert_eq(d5_dataset_synthetic(&d, 400, 2, 8, &c), D5_OK);
    cr_expect_eq(d5_dataset_size(a), 400);
    cr_expect_eq(d5_dataset_classes(a), 2);
    const size_t numel = 256;
    float *xa = malloc(sizeof(float) * numel * 400), *xb = malloc(sizeof(float) * numel * 400);
    float *xc = malloc(sizeof(float) * numel * 400), one[256];
    int64_t idx[400], la[400], lb[400], lc[400];
    for (int i = 0; i < 400; i++) idx[i] = i;
    cr_assert_eq(d5_dataset_get(a, idx, 400, xa, la), D5_OK);
    cr_assert_eq(d5_dataset_get(b, idx, 400, xb, lb), D5_OK);
    cr_assert_eq(d5_dataset_get(c, idx, 400, xc, lc), D5_OK);
    cr_expect(memcmp(xa, xb, sizeof(float) * numel * 400) == 0, "same seed, other samples");
    cr_expect(memcmp(la, lb, sizeof la) == 0, "same seed, other labels");
    cr_expect(memcmp(xa, xc, sizeof(float) * numel * 400) != 0, "another seed, same samples");
    /* A sample read alone is the same sample. */
    int64_t i37 = 37;
    cr_assert_eq(d5_dataset_get(a, &i37, 1, one, NULL), D5_OK);
    cr_expect(memcmp(one, xa + 37 * numel, sizeof one) == 0);
    /* Per class, every element's mean is +-0.5 and the noise has variance 1. */
    double mean[2][256] = {{0}}, var = 0;
    int count[2] = {0, 0};
    for (int i = 0; i < 400; i++) {
        cr_assert(la[i] == 0 || la[i] == 1);
        count[la[i]]++;
        for (size_t j = 0; j < numel; j++) mean[la[i]][j] += xa[i * numel + j];
    }
    cr_assert(count[0] > 150 && count[1] > 150, "labels %d / %d", count[0], count[1]);
    double abs_mean = 0, differ = 0;
    for (int k = 0; k < 2; k++)
        for (size_t j = 0; j < numel; j++) {
            mean[k][j] /= count[k];
            abs_mean += fabs(mean[k][j]) / (2 * numel);
        }
    for (size_t j = 0; j < numel; j++) differ += mean[0][j] * mean[1][j] < 0;
    for (int i = 0; i < 400; i++)
        for (size_t j = 0; j < numel; j++) {
            double e = xa[i * numel + j] - mean[la[i]][j];
            var += e * e / (400.0 * numel);
        }
    cr_expect(abs_mean > 0.45 && abs_mean < 0.55, "mean |class mean| %f", abs_mean);
    cr_expect(differ > numel / 4 && differ < 3 * numel / 4, "%f elements differ in sign", differ);
    cr_expect(var > 0.9 && var < 1.1, "noise variance %f", var);
    d5_dataset_free(a);
    d5_dataset_free(b);
    d5_dataset_free(c);
    free(xa);
    free(xb);
    free(xc);
    d5_dataset *bad = NULL;
    cr_expect_eq(d5_dataset_synthetic(&d, 0, 2, 1, &bad), D5_ERR_INVALID);
    cr_expect_eq(d5_dataset_synthetic(&d, 10, 0, 1, &bad), D5_ERR_INVALID);
    cr_expect_null(bad);
}

/* Writes a tensor of dtype dt and shape [ndim]shape with values from v. */
static void write_tensor(const char *dir, const char *name, d5_dtype dt, int32_t ndim,
                         const int64_t *shape, const double *v)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&d); i++) {
        switch (dt) {
        case D5_F32: ((float *)t.data)[i] = (float)v[i]; break;
        case D5_F64: ((double *)t.data)[i] = v[i]; break;
        case D5_I32: ((int32_t *)t.data)[i] = (int32_t)v[i]; break;
        default: ((int64_t *)t.data)[i] = (int64_t)v[i]; break;
        }
    }
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cr_assert_eq(d5_onnx_tensor_write(p, &t, name), D5_OK, "%s", d5_last_error());
    d5_tensor_free(&t);
}

Test(datasets_tensorpairs, labels_batches_and_single_samples)
{
    char *dir = tmpdir_make();
    const double in0[6] = {1, 2, 3, 4, 5, 6}, in1[3] = {7, 8, 9}, in2[3] = {10.5, 11, 12};
    const double out0[2] = {3, 0}, out1[1] = {5}, out2[1] = {1};
    write_tensor(dir, "input_0.pb", D5_F32, 2, (int64_t[]){2, 3}, in0);
    write_tensor(dir, "output_0.pb", D5_I64, 1, (int64_t[]){2}, out0);
    write_tensor(dir, "input_1.pb", D5_F32, 1, (int64_t[]){3}, in1);
    write_tensor(dir, "output_1.pb", D5_I64, 0, NULL, out1);
    write_tensor(dir, "input_2.pb", D5_F64, 2, (int64_t[]){1, 3}, in2);
    write_tensor(dir, "output_2.pb", D5_I32, 1, (int64_t[]){1}, out2);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_open_tensorpairs(dir, &ds), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_dataset_size(ds), 4);
    cr_expect_eq(d5_dataset_classes(ds), 6);
    const d5_tensor_desc *d = d5_dataset_sample_desc(ds);
    cr_expect(d->ndim == 1 && d->shape[0] == 3);
    float x[12];
    int64_t idx[4] = {0, 1, 2, 3}, lab[4];
    cr_assert_eq(d5_dataset_get(ds, idx, 4, x, lab), D5_OK);
    const float want[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10.5f, 11, 12};
    const int64_t want_lab[4] = {3, 0, 5, 1};
    for (int i = 0; i < 12; i++) cr_expect_eq(x[i], want[i], "element %d", i);
    for (int i = 0; i < 4; i++) cr_expect_eq(lab[i], want_lab[i], "label %d", i);
    dataset_done(ds, dir);
}

Test(datasets_tensorpairs, scores_and_errors)
{
    char *dir = tmpdir_make();
    const double in0[8] = {1, 2, 3, 4, 5, 6, 7, 8}, in1[4] = {9, 9, 9, 9};
    const double sc0[10] = {0, 0, 0, 1, 0, 0.2, 0.1, 0.9, 0.3, 0}, sc1[5] = {-1, -2, -0.5, -3, -4};
    write_tensor(dir, "input_0.pb", D5_F32, 3, (int64_t[]){2, 2, 2}, in0);
    write_tensor(dir, "output_0.pb", D5_F32, 2, (int64_t[]){2, 5}, sc0);
    write_tensor(dir, "input_1.pb", D5_F32, 2, (int64_t[]){2, 2}, in1);
    write_tensor(dir, "output_1.pb", D5_F32, 1, (int64_t[]){5}, sc1);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_open_tensorpairs(dir, &ds), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_dataset_size(ds), 3);
    cr_expect_eq(d5_dataset_classes(ds), 5);
    int64_t lab[3], idx[3] = {0, 1, 2};
    float x[12];
    cr_assert_eq(d5_dataset_get(ds, idx, 3, x, lab), D5_OK);
    cr_expect(lab[0] == 3 && lab[1] == 2 && lab[2] == 2, "%lld %lld %lld", (long long)lab[0],
              (long long)lab[1], (long long)lab[2]);
    d5_dataset_free(ds);
    ds = NULL;
    /* A third input of another sample shape. */
    write_tensor(dir, "input_2.pb", D5_F32, 1, (int64_t[]){4}, in1);
    write_tensor(dir, "output_2.pb", D5_F32, 1, (int64_t[]){5}, sc1);
    cr_expect_eq(d5_dataset_open_tensorpairs(dir, &ds), D5_ERR_SHAPE);
    cr_expect(strstr(d5_last_error(), "input_2.pb") && strstr(d5_last_error(), "float32[4]"), "%s",
              d5_last_error());
    /* A batch whose labels do not match its first dimension. */
    const double in12[12] = {0};
    write_tensor(dir, "input_2.pb", D5_F32, 3, (int64_t[]){3, 2, 2}, in12);
    write_tensor(dir, "output_2.pb", D5_F32, 2, (int64_t[]){2, 5}, sc0);
    cr_expect_eq(d5_dataset_open_tensorpairs(dir, &ds), D5_ERR_SHAPE);
    cr_expect(strstr(d5_last_error(), "input_2.pb"), "%s", d5_last_error());
    /* An input without its output. */
    char p[1200];
    snprintf(p, sizeof p, "%s/output_2.pb", dir);
    cr_assert_eq(unlink(p), 0);
    cr_expect_eq(d5_dataset_open_tensorpairs(dir, &ds), D5_ERR_IO);
    cr_expect(strstr(d5_last_error(), "output_2.pb"), "%s", d5_last_error());
    cr_expect_null(ds);
    /* No pairs at all. */
    char *empty = tmpdir_make();
    cr_expect_eq(d5_dataset_open_tensorpairs(empty, &ds), D5_ERR_IO);
    cr_expect(strstr(d5_last_error(), "input_0.pb"), "%s", d5_last_error());
    rmtree(empty);
    free(empty);
    rmtree(dir);
    free(dir);
}
