/* The IDX file format of MNIST and Fashion-MNIST
 * (http://yann.lecun.com/exdb/mnist/): a big-endian header of a magic number
 * 0x0000TTNN (TT the element type, 0x08 for unsigned bytes; NN the number of
 * dimensions), NN 32-bit big-endian sizes, then the elements in row-major
 * order. Files are read through zlib's gzopen/gzread, which reads gzip files
 * and plain files alike; the header must account for the data exactly. */
#include "dataset_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_UBYTE    0x08
#define IDX_GZ_CHUNK ((size_t)1 << 20) /* the first buffer for a gzip file's data */

/* zlib's message without the "path: " it starts with. */
static const char *gz_message(gzFile f, const char *path, int *err)
{
    const char *msg = gzerror(f, err);
    size_t n = strlen(path);
    if (strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
    return msg;
}

/* Reads up to n bytes; *got receives how many were read. A gzip stream that
 * is corrupt is D5_ERR_FORMAT; one that ends early just reads short. */
static d5_status gz_read(gzFile f, const char *path, void *buf, size_t n, size_t *got)
{
    *got = 0;
    while (*got < n) {
        size_t want = n - *got;
        if (want > (1u << 30)) want = 1u << 30;
        int r = gzread(f, (uint8_t *)buf + *got, (unsigned)want);
        if (r < 0) {
            int err = 0;
            const char *msg = gz_message(f, path, &err);
            if (err == Z_ERRNO)
                return d5_error(D5_ERR_IO, "'%s': read error: %s", path, strerror(errno));
            return d5_error(D5_ERR_FORMAT, "'%s': corrupt gzip data: %s", path, msg);
        }
        if (r == 0) break;
        *got += (size_t)r;
    }
    return D5_OK;
}

/* "[60000 x 28 x 28]" */
static void format_dims(const d5__idx *idx, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < idx->ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? " x " : "",
                                 (long long)idx->dims[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

/* Says why a short read stopped: the end of a plain file, or of a gzip stream
 * that was cut off. */
static const char *short_reason(gzFile f, const char *path)
{
    int err = 0;
    const char *msg = gz_message(f, path, &err);
    return err == Z_OK ? "end of file" : msg;
}

static d5_status check_magic(const char *path, const char *role, const uint8_t *m, int32_t min_ndim,
                             int32_t max_ndim)
{
    if (m[0] == 0 && m[1] == 0 && m[2] == IDX_UBYTE && m[3] >= min_ndim && m[3] <= max_ndim)
        return D5_OK;
    char expected[96];
    if (min_ndim == max_ndim)
        snprintf(expected, sizeof expected, "0x000008%02x (unsigned bytes, %d dimensions)",
                 (unsigned)min_ndim, (int)min_ndim);
    else
        snprintf(expected, sizeof expected,
                 "0x000008%02x to 0x000008%02x (unsigned bytes, %d to %d dimensions)",
                 (unsigned)min_ndim, (unsigned)max_ndim, (int)min_ndim, (int)max_ndim);
    return d5_error(D5_ERR_FORMAT,
                    "'%s': bad magic number 0x%02x%02x%02x%02x for an IDX %s file: expected %s",
                    path, m[0], m[1], m[2], m[3], role, expected);
}

static d5_status read_header(gzFile f, const char *path, const char *role, int32_t min_ndim,
                             int32_t max_ndim, d5__idx *idx, size_t *header_bytes)
{
    uint8_t m[4 + 4 * 4];
    size_t got;
    d5_status s = gz_read(f, path, m, 4, &got);
    if (s != D5_OK) return s;
    if (got < 4)
        return d5_error(D5_ERR_FORMAT, "'%s': %zu bytes, too short for an IDX magic number (%s)",
                        path, got, short_reason(f, path));
    if ((s = check_magic(path, role, m, min_ndim, max_ndim)) != D5_OK) return s;
    idx->ndim = m[3];
    size_t dim_bytes = 4 * (size_t)idx->ndim;
    if ((s = gz_read(f, path, m + 4, dim_bytes, &got)) != D5_OK) return s;
    if (got < dim_bytes)
        return d5_error(D5_ERR_FORMAT,
                        "'%s' is truncated: the header ends inside its %d sizes (%s)", path,
                        (int)idx->ndim, short_reason(f, path));
    uint64_t total = 1;
    for (int32_t i = 0; i < idx->ndim; i++) {
        const uint8_t *b = m + 4 + 4 * i;
        idx->dims[i] = (int64_t)((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
                                 (uint32_t)b[3]);
        if (i > 0 && idx->dims[i] == 0)
            return d5_error(D5_ERR_FORMAT, "'%s': size %d of the header is 0", path, (int)i);
        total *= (uint64_t)idx->dims[i];
        if (total > ((uint64_t)1 << 40))
            return d5_error(D5_ERR_FORMAT, "'%s': the header describes more than 2^40 bytes", path);
    }
    idx->bytes = (size_t)total;
    *header_bytes = 4 + dim_bytes;
    return D5_OK;
}

/* For a plain file the size is known before reading: compare it with the
 * header, so that a wrong file fails before a large allocation. */
static d5_status check_plain_size(const char *path, const d5__idx *idx, size_t header_bytes)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return d5_error(D5_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    long long want = (long long)(header_bytes + idx->bytes), have = (long long)st.st_size;
    if (have == want) return D5_OK;
    char dims[128];
    format_dims(idx, dims, sizeof dims);
    if (have < want)
        return d5_error(D5_ERR_FORMAT,
                        "'%s' is truncated: %lld bytes, but its header %s needs %lld (%zu of "
                        "header and %zu of data)",
                        path, have, dims, want, header_bytes, idx->bytes);
    return d5_error(D5_ERR_FORMAT,
                    "'%s' has %lld bytes of trailing data after the %lld that its header %s "
                    "describes",
                    path, have - want, want, dims);
}

/* Reads the data that the header describes. A plain file's size has been
 * checked, so its buffer is allocated whole; a gzip stream's size is known
 * only once inflated, so its buffer starts at IDX_GZ_CHUNK and doubles as data
 * arrives: a small file whose header promises up to 2^40 bytes then fails as
 * truncated instead of allocating them. */
static d5_status read_body(gzFile f, const char *path, int plain, d5__idx *idx)
{
    size_t cap = plain || idx->bytes < IDX_GZ_CHUNK ? idx->bytes : IDX_GZ_CHUNK;
    idx->data = d5_alloc(cap ? cap : 1, "IDX data");
    if (!idx->data) return D5_ERR_NOMEM;
    size_t got = 0;
    d5_status s;
    for (;;) {
        size_t n;
        if ((s = gz_read(f, path, idx->data + got, cap - got, &n)) != D5_OK) return s;
        got += n;
        if (got < cap || cap == idx->bytes) break;
        size_t grown = cap > idx->bytes / 2 ? idx->bytes : 2 * cap;
        uint8_t *bigger = d5_realloc(idx->data, cap, grown, "IDX data");
        if (!bigger) return D5_ERR_NOMEM;
        idx->data = bigger;
        cap = grown;
    }
    char dims[128];
    format_dims(idx, dims, sizeof dims);
    if (got < idx->bytes)
        return d5_error(D5_ERR_FORMAT,
                        "'%s' is truncated: %zu of the %zu data bytes that its header %s "
                        "promises (%s)",
                        path, got, idx->bytes, dims, short_reason(f, path));
    uint8_t extra;
    if ((s = gz_read(f, path, &extra, 1, &got)) != D5_OK) return s;
    if (got > 0)
        return d5_error(D5_ERR_FORMAT,
                        "'%s' has trailing data after the %zu data bytes that its header %s "
                        "describes",
                        path, idx->bytes, dims);
    return D5_OK;
}

d5_status d5__idx_read(const char *path, const char *role, int32_t min_ndim, int32_t max_ndim,
                       d5__idx *out)
{
    d5__idx idx;
    memset(&idx, 0, sizeof idx);
    char what[64];
    snprintf(what, sizeof what, "IDX %s file", role);
    d5_status rs = d5_file_check_regular(path, what);
    if (rs != D5_OK) return rs;
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f)
        return d5_error(D5_ERR_IO, "cannot open IDX %s file '%s': %s", role, path,
                        errno ? strerror(errno) : "out of memory");
    gzbuffer(f, 1u << 17);
    size_t header_bytes = 0;
    d5_status s = read_header(f, path, role, min_ndim, max_ndim, &idx, &header_bytes);
    const int plain = gzdirect(f);
    if (s == D5_OK && plain) s = check_plain_size(path, &idx, header_bytes);
    if (s == D5_OK) s = read_body(f, path, plain, &idx);
    gzclose(f);
    if (s != D5_OK) {
        d5__idx_free(&idx);
        return s;
    }
    *out = idx;
    return D5_OK;
}

void d5__idx_free(d5__idx *idx)
{
    d5_free(idx->data);
    idx->data = NULL;
}

d5_status d5__idx_open_pair(const char *images, const char *labels, int64_t classes,
                            const char *name, d5_dataset **out)
{
    d5__idx img, lab;
    d5_status s = d5__idx_read(images, "images", 3, 4, &img);
    if (s != D5_OK) return s;
    if ((s = d5__idx_read(labels, "labels", 1, 1, &lab)) != D5_OK) {
        d5__idx_free(&img);
        return s;
    }
    d5_dataset *ds = NULL;
    if (img.dims[0] != lab.dims[0]) {
        s = d5_error(D5_ERR_FORMAT, "'%s' has %lld images but '%s' has %lld labels", images,
                     (long long)img.dims[0], labels, (long long)lab.dims[0]);
    } else {
        int64_t shape[3] = {1, img.dims[1], img.dims[2]};
        if (img.ndim == 4) memcpy(shape, img.dims + 1, sizeof shape);
        s = d5__dataset_new(name, 3, shape, img.dims[0], classes, &ds);
    }
    if (s == D5_OK) {
        for (int64_t i = 0; i < ds->n; i++) ds->labels[i] = lab.data[i];
        if (classes == 0) d5__dataset_infer_classes(ds);
        s = d5__dataset_check_labels(ds, labels);
    }
    if (s == D5_OK) {
        ds->bytes = img.data;
        img.data = NULL;
        *out = ds;
    } else {
        d5_dataset_free(ds);
    }
    d5__idx_free(&img);
    d5__idx_free(&lab);
    return s;
}
