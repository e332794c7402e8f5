/* Dataset readers: IDX (plain and gzip) on files written here and on the
 * real MNIST and Fashion-MNIST when present, every malformed-file error, and
 * the default folders. The reference values of the real files were computed
 * with numpy from the same files. CIFAR, synthetic and TensorProto pairs are
 * in test_datasets_more.c. */
#define _GNU_SOURCE
#include "data_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char path_buf[8][4096];

/* dir/name in one of a few rotating buffers. */
static const char *at(const char *dir, const char *name)
{
    static int k = 0;
    char *p = path_buf[k++ % 8];
    snprintf(p, sizeof path_buf[0], "%s/%s", dir, name);
    return p;
}

/* Checks samples and labels of a dataset written by write_idx_pair. */
static void expect_pattern(const d5_dataset *ds, uint32_t n, uint32_t h, uint32_t w,
                           uint32_t classes)
{
    cr_assert_eq(d5_dataset_size(ds), n);
    cr_expect_eq(d5_dataset_classes(ds), classes);
    const d5_tensor_desc *d = d5_dataset_sample_desc(ds);
    cr_assert_eq(d->ndim, 3);
    cr_expect_eq(d->dtype, D5_F32);
    cr_expect(d->shape[0] == 1 && d->shape[1] == h && d->shape[2] == w);
    float *x = malloc(sizeof(float) * n * h * w);
    int64_t *idx = malloc(sizeof(int64_t) * n), *lab = malloc(sizeof(int64_t) * n);
    for (uint32_t i = 0; i < n; i++) idx[i] = n - 1 - i; /* reversed: order is kept */
    cr_assert_eq(d5_dataset_get(ds, idx, n, x, lab), D5_OK, "%s", d5_last_error());
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = (uint32_t)idx[k];
        cr_expect_eq(lab[k], i % classes);
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t c = 0; c < w; c++)
                cr_expect_eq(x[(k * h + y) * w + c], pattern_pixel(i, y, c) / 255.0f,
                             "sample %u (%u, %u)", i, y, c);
    }
    free(x);
    free(idx);
    free(lab);
}

Test(datasets_idx, plain_and_gzip_files)
{
    char *dir = tmpdir_make();
    for (int gz = 0; gz < 2; gz++) {
        cr_assert_eq(write_idx_pair(dir, "img", "lab", gz, 37, 5, 6, 4), 0);
        d5_dataset *ds = NULL;
        cr_assert_eq(d5_dataset_open_idx(at(dir, "img"), at(dir, "lab"), &ds), D5_OK, "%s",
                     d5_last_error());
        expect_pattern(ds, 37, 5, 6, 4);
        cr_expect_str_eq(d5_dataset_name(ds), "idx:img");
        d5_dataset_free(ds);
    }
    rmtree(dir);
    free(dir);
}

Test(datasets_idx, four_dimensional_images)
{
    char *dir = tmpdir_make();
    uint8_t data[3 * 2 * 3 * 4], lab[3] = {2, 0, 1};
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 5);
    const uint32_t dims[4] = {3, 2, 3, 4}, n = 3;
    cr_assert_eq(write_idx(at(dir, "i"), 1, 0x804, 4, dims, data, sizeof data), 0);
    cr_assert_eq(write_idx(at(dir, "l"), 0, 0x801, 1, &n, lab, 3), 0);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_open_idx(at(dir, "i"), at(dir, "l"), &ds), D5_OK, "%s",
                 d5_last_error());
    const d5_tensor_desc *d = d5_dataset_sample_desc(ds);
    cr_assert(d->ndim == 3 && d->shape[0] == 2 && d->shape[1] == 3 && d->shape[2] == 4);
    cr_expect_eq(d5_dataset_classes(ds), 3);
    float x[24];
    int64_t one = 2, label = -1;
    cr_assert_eq(d5_dataset_get(ds, &one, 1, x, &label), D5_OK);
    cr_expect_eq(label, 1);
    for (int j = 0; j < 24; j++) cr_expect_eq(x[j], (uint8_t)((48 + j) * 5) / 255.0f);
    int64_t bad = 3;
    cr_expect_eq(d5_dataset_get(ds, &bad, 1, x, NULL), D5_ERR_RANGE);
    cr_expect(strstr(d5_last_error(), "index 3"), "%s", d5_last_error());
    dataset_done(ds, dir);
}

Test(datasets_idx, mnist_folder_plain_or_gz)
{
    char *root = tmpdir_make();
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/digits", root);
    cr_assert_eq(mkdir(dir, 0777), 0);
    cr_assert_eq(write_idx_pair(dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 1,
                                20, 28, 28, 10),
                 0);
    cr_assert_eq(
        write_idx_pair(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 0, 7, 28, 28, 10),
        0);
    d5_dataset *train = NULL, *test = NULL;
    cr_assert_eq(d5_dataset_open_mnist(dir, 1, &train), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_dataset_open_mnist(dir, 0, &test), D5_OK, "%s", d5_last_error());
    expect_pattern(train, 20, 28, 28, 10);
    expect_pattern(test, 7, 28, 28, 10);
    cr_expect_str_eq(d5_dataset_name(train), "digits-train");
    cr_expect_str_eq(d5_dataset_name(test), "digits-test");
    int64_t hist[10];
    d5_dataset_histogram(train, hist);
    for (int c = 0; c < 10; c++) cr_expect_eq(hist[c], 2);
    d5_dataset_free(train);
    d5_dataset_free(test);
    /* A folder without the files names what it looked for. */
    d5_dataset *none = NULL;
    cr_expect_eq(d5_dataset_open_mnist(root, 1, &none), D5_ERR_IO);
    cr_expect(strstr(d5_last_error(), root) && strstr(d5_last_error(), "train-images-idx3-ubyte"),
              "%s", d5_last_error());
    cr_expect_null(none);
    rmtree(root);
    free(root);
}

/* Opens a bad pair and expects `status` with a message naming `file` and
 * containing `words`. */
static void expect_error(const char *images, const char *labels, d5_status status, const char *file,
                         const char *words)
{
    d5_dataset *ds = NULL;
    d5_status s = d5_dataset_open_idx(images, labels, &ds);
    cr_expect_eq(s, status, "%s: got %s: %s", words, d5_status_name(s), d5_last_error());
    cr_expect_null(ds);
    cr_expect(strstr(d5_last_error(), file), "message does not name %s: %s", file, d5_last_error());
    cr_expect(strstr(d5_last_error(), words), "message lacks '%s': %s", words, d5_last_error());
    d5_dataset_free(ds);
}

Test(datasets_idx, malformed_files_are_named)
{
    char *dir = tmpdir_make();
    uint8_t data[4 * 3 * 3] = {0}, lab[5] = {0, 1, 2, 3, 4};
    const uint32_t dims[3] = {4, 3, 3}, four = 4, five = 5;
    for (int gz = 0; gz < 2; gz++) {
        /* A label file given as images: bad magic. */
        cr_assert_eq(write_idx(at(dir, "labels"), gz, 0x801, 1, &four, lab, 4), 0);
        cr_assert_eq(write_idx(at(dir, "images"), gz, 0x803, 3, dims, data, sizeof data), 0);
        expect_error(at(dir, "labels"), at(dir, "labels"), D5_ERR_FORMAT, "labels",
                     "bad magic number 0x00000801");
        expect_error(at(dir, "images"), at(dir, "images"), D5_ERR_FORMAT, at(dir, "images"),
                     "bad magic number 0x00000803 for an IDX labels file");
        /* Fewer data bytes than the header promises. */
        cr_assert_eq(write_idx(at(dir, "short"), gz, 0x803, 3, dims, data, sizeof data - 5), 0);
        expect_error(at(dir, "short"), at(dir, "labels"), D5_ERR_FORMAT, at(dir, "short"),
                     "truncated");
        /* More. */
        uint8_t more[sizeof data + 3] = {0};
        cr_assert_eq(write_idx(at(dir, "long"), gz, 0x803, 3, dims, more, sizeof more), 0);
        expect_error(at(dir, "long"), at(dir, "labels"), D5_ERR_FORMAT, at(dir, "long"),
                     "trailing data");
        /* 4 images, 5 labels. */
        cr_assert_eq(write_idx(at(dir, "five"), gz, 0x801, 1, &five, lab, 5), 0);
        expect_error(at(dir, "images"), at(dir, "five"), D5_ERR_FORMAT, at(dir, "five"),
                     "has 4 images but");
        /* A header cut inside its sizes. */
        cr_assert_eq(write_idx(at(dir, "head"), gz, 0x803, 1, dims, NULL, 0), 0);
        expect_error(at(dir, "head"), at(dir, "labels"), D5_ERR_FORMAT, at(dir, "head"),
                     "truncated");
    }
    /* A gzip stream cut in the middle. */
    static uint8_t big[40 * 30 * 30];
    const uint32_t big_dims[3] = {40, 30, 30};
    uint32_t state = 12345; /* incompressible bytes, so that half the file is half the data */
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)((state = state * 1103515245u + 12345u) >> 24);
    cr_assert_eq(write_idx(at(dir, "cut.gz"), 1, 0x803, 3, big_dims, big, sizeof big), 0);
    size_t len = 0;
    char *whole = slurp(at(dir, "cut.gz"), &len);
    FILE *f = fopen(at(dir, "cut.gz"), "wb");
    fwrite(whole, 1, len / 2, f);
    fclose(f);
    free(whole);
    expect_error(at(dir, "cut.gz"), at(dir, "labels"), D5_ERR_FORMAT, at(dir, "cut.gz"),
                 "truncated");
    /* A missing file. */
    expect_error(at(dir, "nothing"), at(dir, "labels"), D5_ERR_IO, at(dir, "nothing"),
                 "No such file");
    /* A label beyond MNIST's 10 classes. */
    uint8_t eleven[4] = {1, 2, 11, 3};
    char mdir[1100];
    snprintf(mdir, sizeof mdir, "%s/m", dir);
    cr_assert_eq(mkdir(mdir, 0777), 0);
    cr_assert_eq(
        write_idx(at(mdir, "train-images-idx3-ubyte"), 0, 0x803, 3, dims, data, sizeof data), 0);
    cr_assert_eq(write_idx(at(mdir, "train-labels-idx1-ubyte"), 0, 0x801, 1, &four, eleven, 4), 0);
    d5_dataset *ds = NULL;
    cr_expect_eq(d5_dataset_open_mnist(mdir, 1, &ds), D5_ERR_FORMAT);
    cr_expect(strstr(d5_last_error(), "train-labels-idx1-ubyte") &&
                  strstr(d5_last_error(), "label 11 of sample 2"),
              "%s", d5_last_error());
    rmtree(dir);
    free(dir);
}

/* The real files, when the set-up script (MNIST) or Debian's package
 * (Fashion-MNIST) put them there. */
typedef struct real_ref {
    int64_t n;
    int64_t first_labels[5];
    int64_t hist[10];
    int64_t row14[28]; /* row 14 of sample 0, as bytes */
    long sum0;         /* sum of the bytes of sample 0 */
} real_ref;

static void expect_real(const char *dir, int train, const real_ref *ref)
{
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_open_mnist(dir, train, &ds), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_dataset_size(ds), ref->n);
    cr_expect_eq(d5_dataset_classes(ds), 10);
    int64_t idx[5] = {0, 1, 2, 3, 4}, lab[5];
    float x[5 * 784];
    cr_assert_eq(d5_dataset_get(ds, idx, 5, x, lab), D5_OK);
    for (int i = 0; i < 5; i++) cr_expect_eq(lab[i], ref->first_labels[i], "label %d", i);
    double sum = 0;
    for (int j = 0; j < 784; j++) {
        cr_expect(x[j] >= 0.0f && x[j] <= 1.0f);
        sum += x[j] * 255.0;
    }
    cr_expect(sum > ref->sum0 - 0.01 && sum < ref->sum0 + 0.01, "sum %f, expected %ld", sum,
              ref->sum0);
    for (int c = 0; c < 28; c++) cr_expect_eq(x[14 * 28 + c], ref->row14[c] / 255.0f, "col %d", c);
    int64_t hist[10];
    d5_dataset_histogram(ds, hist);
    for (int c = 0; c < 10; c++) cr_expect_eq(hist[c], ref->hist[c], "class %d", c);
    d5_dataset_free(ds);
}

static void need(const char *dir)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", dir);
    need_data_file(p, "run scripts/setup_data.sh or install dataset-fashion-mnist");
}

/* Checks both splits of the data set `name` in its default directory; skips
 * the test when it is not there (fails it under CI: need_data_file). */
static void expect_real_set(const char *name, const real_ref *train, const real_ref *test)
{
    char dir[1024];
    d5_dataset_default_dir(name, dir, sizeof dir);
    need(dir);
    expect_real(dir, 1, train);
    expect_real(dir, 0, test);
}

Test(datasets_real, mnist, .timeout = D5_TIMEOUT(120))
{
    const real_ref train = {60000,
                            {5, 0, 4, 1, 9},
                            {5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949},
                            {0,   0,   0,   0,   0,  0, 0, 0, 0, 0, 0, 0, 0, 81,
                             240, 253, 253, 119, 25, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                            27525};
    const real_ref test = {
        10000,
        {7, 2, 1, 0, 4},
        {980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009},
        {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 59, 249, 254, 62, 0, 0, 0, 0, 0, 0, 0, 0},
        18454};
    expect_real_set("mnist", &train, &test);
}

Test(datasets_real, fashion_mnist, .timeout = D5_TIMEOUT(120))
{
    const real_ref train = {60000,
                            {9, 0, 0, 3, 0},
                            {6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000},
                            {0,   0,   1,   4,   6,   7,   2,   0,   0,   0,   0,   0,   237, 226,
                             217, 223, 222, 219, 222, 221, 216, 223, 229, 215, 218, 255, 77,  0},
                            76247};
    const real_ref test = {10000,
                           {9, 2, 1, 1, 6},
                           {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000},
                           {0,   0,   0,   0,   0,   0,   2,   4,   1,   0,   0,   0,   98,  136,
                            110, 109, 110, 162, 135, 144, 149, 159, 167, 144, 158, 169, 119, 0},
                           33456};
    expect_real_set("fashion-mnist", &train, &test);
}

Test(datasets_dirs, default_dir_order)
{
    char *tmp = tmpdir_make();
    char buf[1024], want[1100];
    /* Nothing exists: the first candidate, under D5_DATA_DIR. */
    setenv("D5_DATA_DIR", tmp, 1);
    d5_dataset_default_dir("no-such-set", buf, sizeof buf);
    snprintf(want, sizeof want, "%s/no-such-set", tmp);
    cr_expect_str_eq(buf, want);
    /* Once it exists, D5_DATA_DIR wins over the source tree. */
    snprintf(want, sizeof want, "%s/mnist", tmp);
    cr_assert_eq(mkdir(want, 0777), 0);
    d5_dataset_default_dir("mnist", buf, sizeof buf);
    cr_expect_str_eq(buf, want);
    /* Without D5_DATA_DIR: the source tree's data/ folder comes first. */
    unsetenv("D5_DATA_DIR");
    d5_dataset_default_dir("no-such-set", buf, sizeof buf);
    cr_expect_str_eq(buf, D5_SOURCE_DIR "/data/no-such-set");
    /* Debian's Fashion-MNIST, when nothing comes before it. */
    setenv("D5_DATA_DIR", tmp, 1);
    d5_dataset_default_dir("fashion-mnist", buf, sizeof buf);
    if (access(D5_SOURCE_DIR "/data/fashion-mnist", F_OK) != 0 &&
        access("/usr/share/datasets/fashion-mnist", F_OK) == 0)
        cr_expect_str_eq(buf, "/usr/share/datasets/fashion-mnist");
    /* A short buffer is truncated and terminated. */
    char small[8];
    d5_dataset_default_dir("mnist", small, sizeof small);
    cr_expect_eq(strlen(small), 7);
    rmtree(tmp);
    free(tmp);
}

/* An allocator that refuses blocks above 64 MiB and records the largest asked
 * for. */
static size_t largest_request;

static void *capped_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    if (size > largest_request) largest_request = size;
    if (size > ((size_t)64 << 20)) return NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    void *p = NULL;
    return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
}

static void capped_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

/* A gzip file of a few bytes whose header promises 2^40 bytes of images (the
 * largest header the reader accepts) is truncated, not out of memory: the
 * buffer of a gzip file grows with the data inflated (a fuzzer found the
 * reader allocating what the header said first). */
Test(datasets_idx, gzip_header_promising_a_terabyte)
{
    char *dir = tmpdir_make();
    const uint32_t dims[3] = {1u << 15, 1u << 15, 1u << 10}, one = 1;
    uint8_t data[10] = {0}, lab[1] = {0};
    cr_assert_eq(write_idx(at(dir, "huge.gz"), 1, 0x803, 3, dims, data, sizeof data), 0);
    cr_assert_eq(write_idx(at(dir, "labels"), 0, 0x801, 1, &one, lab, 1), 0);
    largest_request = 0;
    d5_allocator a = {capped_alloc, capped_free, NULL};
    d5_allocator_set(&a);
    d5_dataset *ds = NULL;
    d5_status s = d5_dataset_open_idx(at(dir, "huge.gz"), at(dir, "labels"), &ds);
    d5_allocator_set(NULL);
    cr_expect_eq(s, D5_ERR_FORMAT, "got %s: %s", d5_status_name(s), d5_last_error());
    cr_expect_null(ds);
    cr_expect(strstr(d5_last_error(), "truncated: 10 of the 1099511627776 data bytes"), "%s",
              d5_last_error());
    cr_expect_leq(largest_request, (size_t)64 << 20, "asked for %zu bytes", largest_request);
    rmtree(dir);
    free(dir);
}
