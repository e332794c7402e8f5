/* libFuzzer target for the CIFAR reader (datasets/cifar.c): any byte string,
 * as the test file of CIFAR-10 (test_batch.bin), of CIFAR-100 (test.bin) and
 * as each of CIFAR-10's five training files, must either open or fail with a
 * status, never crash, leak, hang or read out of bounds. A dataset that opens
 * must hold one sample [3, 32, 32] per record, and its first and last
 * samples, read through d5_dataset_get and an ordered sampler, must be the
 * record's pixels over 255 with the record's (fine) label; an index past the
 * end must be D5_ERR_RANGE. */
#define _POSIX_C_SOURCE 200809L
#include "d5/datasets.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIXELS 3072

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const files[] = {"test_batch.bin",   "test.bin",         "data_batch_1.bin",
                                    "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                                    "data_batch_5.bin"};
#define NFILES (sizeof files / sizeof files[0])

/* A folder of this process under /tmp, removed at exit. */
static char dir[64];
static float x[2 * PIXELS];

static void file_path(size_t i, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", dir, files[i]);
}

static void remove_files(void)
{
    char path[128];
    for (size_t i = 0; i < NFILES; i++) {
        file_path(i, path, sizeof path);
        unlink(path);
    }
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/d5-fuzz-cifar-%ld-XXXXXX", (long)getpid());
    if (!mkdtemp(dir)) {
        perror("fuzz_cifar: mkdtemp");
        abort();
    }
    atexit(remove_files);
    return 0;
}

static void write_input(const uint8_t *data, size_t size)
{
    char path[128];
    for (size_t i = 0; i < NFILES; i++) {
        file_path(i, path, sizeof path);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
            perror("fuzz_cifar: writing the input");
            abort();
        }
    }
}

static void fail(const char *what, int classes)
{
    fprintf(stderr, "fuzz_cifar: CIFAR-%d: %s\n", classes, what);
    abort();
}

/* Sample i (of a file of `per_file` records) must be record i % per_file. */
static void check_sample(const float *sample, int64_t label, const uint8_t *data, int64_t per_file,
                         int64_t i, int label_bytes, int classes)
{
    const uint8_t *rec = data + (size_t)(i % per_file) * (size_t)(label_bytes + PIXELS);
    if (label != rec[label_bytes - 1]) fail("a label differs from its record", classes);
    for (size_t j = 0; j < PIXELS; j++)
        if (sample[j] != (float)rec[label_bytes + j] / 255.0f)
            fail("a pixel differs from its record", classes);
}

static void open_and_read(const uint8_t *data, size_t size, int train, int classes)
{
    const int label_bytes = classes == 10 ? 1 : 2;
    const size_t rec = (size_t)label_bytes + PIXELS;
    d5_dataset *ds = NULL;
    if (d5_dataset_open_cifar(dir, train, classes, &ds) != D5_OK) return;
    if (size == 0 || size % rec != 0) fail("a file of a partial record opened", classes);
    const int64_t per_file = (int64_t)(size / rec), n = d5_dataset_size(ds);
    const d5_tensor_desc *d = d5_dataset_sample_desc(ds);
    if (n != per_file * (train ? 5 : 1) || d5_dataset_classes(ds) != classes || d->ndim != 3 ||
        d->shape[0] != 3 || d->shape[1] != 32 || d->shape[2] != 32)
        fail("the size, the classes or the sample shape is wrong", classes);

    int64_t idx[2] = {0, n - 1}, labels[2];
    if (d5_dataset_get(ds, idx, 2, x, labels) != D5_OK) fail(d5_last_error(), classes);
    for (int k = 0; k < 2; k++)
        check_sample(x + (size_t)k * PIXELS, labels[k], data, per_file, idx[k], label_bytes,
                     classes);
    int64_t past = n;
    if (d5_dataset_get(ds, &past, 1, x, labels) != D5_ERR_RANGE)
        fail("an index past the end was read", classes);

    d5_sampler_params p = d5_sampler_default_params();
    p.batch = 2;
    d5_sampler *s = NULL;
    int64_t got = 0;
    if (d5_sampler_create(ds, &p, &s) != D5_OK || d5_sampler_next(s, x, labels, &got) != D5_OK)
        fail(d5_last_error(), classes);
    if (got != (n < 2 ? n : 2)) fail("the sampler's first batch has the wrong size", classes);
    for (int64_t k = 0; k < got; k++)
        check_sample(x + (size_t)k * PIXELS, labels[k], data, per_file, k, label_bytes, classes);
    d5_sampler_free(s);
    d5_dataset_free(ds);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_input(data, size);
    open_and_read(data, size, 0, 10);
    open_and_read(data, size, 0, 100);
    open_and_read(data, size, 1, 10);
    return 0;
}
