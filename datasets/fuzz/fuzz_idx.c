/* libFuzzer target for the IDX reader (datasets/idx.c): any byte string, read
 * as an IDX file of images (3 or 4 dimensions) and of labels (1 dimension),
 * must either load or fail with a status, never crash, leak, hang or read out
 * of bounds. A file that loads must be consistent: its data is the product of
 * its sizes, and the header and the data are the whole file. The input is
 * also gzip-compressed and read again (a gzip input as it is): the plain and
 * the compressed file must give the same status and, when they load, the same
 * sizes and bytes. */
#define _POSIX_C_SOURCE 200809L
#include "dataset_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A folder of this process under /tmp, removed at exit. */
static char dir[64], plain_path[96], gz_path[96];

static void remove_files(void)
{
    unlink(plain_path);
    unlink(gz_path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/d5-fuzz-idx-%ld-XXXXXX", (long)getpid());
    if (!mkdtemp(dir)) {
        perror("fuzz_idx: mkdtemp");
        abort();
    }
    snprintf(plain_path, sizeof plain_path, "%s/input", dir);
    snprintf(gz_path, sizeof gz_path, "%s/input.gz", dir);
    atexit(remove_files);
    return 0;
}

static void write_plain(const uint8_t *data, size_t size)
{
    FILE *f = fopen(plain_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror("fuzz_idx: writing the input");
        abort();
    }
}

static void write_gz(const uint8_t *data, size_t size)
{
    gzFile f = gzopen(gz_path, "wb1");
    if (!f || (size && gzwrite(f, data, (unsigned)size) != (int)size) || gzclose(f) != Z_OK) {
        fprintf(stderr, "fuzz_idx: cannot write %s\n", gz_path);
        abort();
    }
}

/* Checks what a file of `size` bytes (0: unknown, gzip) that loaded holds. */
static void check_loaded(const d5__idx *idx, int32_t min_ndim, int32_t max_ndim, size_t size)
{
    if (idx->ndim < min_ndim || idx->ndim > max_ndim || !idx->data) abort();
    size_t total = 1;
    for (int32_t i = 0; i < idx->ndim; i++) {
        if (idx->dims[i] < 0 || (i > 0 && idx->dims[i] == 0)) abort();
        total *= (size_t)idx->dims[i];
    }
    if (total != idx->bytes) abort();
    if (size && 4 + 4 * (size_t)idx->ndim + idx->bytes != size) abort();
    /* Every byte is read, so that AddressSanitizer sees a short buffer. */
    volatile unsigned sum = 0;
    for (size_t i = 0; i < idx->bytes; i++) sum += idx->data[i];
    (void)sum;
}

static void read_both(const char *role, int32_t min_ndim, int32_t max_ndim, size_t size, int gz_too)
{
    d5__idx a, b;
    d5_status sa = d5__idx_read(plain_path, role, min_ndim, max_ndim, &a);
    if (sa == D5_OK) check_loaded(&a, min_ndim, max_ndim, gz_too ? size : 0);
    if (gz_too) {
        d5_status sb = d5__idx_read(gz_path, role, min_ndim, max_ndim, &b);
        if (sb != sa) {
            fprintf(stderr, "fuzz_idx: plain %s, gzip %s (%s)\n", d5_status_str(sa),
                    d5_status_str(sb), d5_last_error());
            abort();
        }
        if (sb == D5_OK) {
            check_loaded(&b, min_ndim, max_ndim, 0);
            if (a.ndim != b.ndim || memcmp(a.dims, b.dims, sizeof a.dims) != 0 ||
                a.bytes != b.bytes || memcmp(a.data, b.data, a.bytes) != 0) {
                fprintf(stderr, "fuzz_idx: the plain and the gzip file differ\n");
                abort();
            }
            d5__idx_free(&b);
        }
    }
    if (sa == D5_OK) d5__idx_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_plain(data, size);
    /* An input that is itself gzip is inflated by the reader. */
    int gz_too = !(size >= 2 && data[0] == 0x1f && data[1] == 0x8b);
    if (gz_too) write_gz(data, size);
    read_both("images", 3, 4, size, gz_too);
    read_both("labels", 1, 1, size, gz_too);
    return 0;
}
