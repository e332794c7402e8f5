/* CIFAR-10 and CIFAR-100, "binary version"
 * (https://www.cs.toronto.edu/~kriz/cifar.html). A file is a sequence of
 * records: CIFAR-10 has 1 label byte then 3072 pixel bytes; CIFAR-100 has a
 * coarse label byte, a fine label byte, then 3072 pixel bytes. The pixels are
 * the red, green and blue planes of a 32 x 32 image, each row-major: the
 * sample layout [3, 32, 32] as it is. */
#include "dataset_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define CIFAR_PIXELS    3072
#define CIFAR_MAX_FILES 5

typedef struct cifar_layout {
    const char *subdir; /* as the archive unpacks */
    const char *files[CIFAR_MAX_FILES];
    int nfiles;
    int label_bytes;    /* 1, or 2 (coarse, fine) */
    int coarse_classes; /* CIFAR-100: 20 */
} cifar_layout;

static const cifar_layout cifar10_train = {"cifar-10-batches-bin",
                                           {"data_batch_1.bin", "data_batch_2.bin",
                                            "data_batch_3.bin", "data_batch_4.bin",
                                            "data_batch_5.bin"},
                                           5,
                                           1,
                                           0};
static const cifar_layout cifar10_test = {"cifar-10-batches-bin", {"test_batch.bin"}, 1, 1, 0};
static const cifar_layout cifar100_train = {"cifar-100-binary", {"train.bin"}, 1, 2, 20};
static const cifar_layout cifar100_test = {"cifar-100-binary", {"test.bin"}, 1, 2, 20};

/* The folder holding the files: dir itself, or its subfolder named like the
 * unpacked archive. */
static d5_status find_folder(const char *dir, const cifar_layout *l, char **out)
{
    char *first = d5__dataset_path(dir, l->files[0]);
    if (!first) return D5_ERR_NOMEM;
    int here = d5__dataset_exists(first);
    d5_free(first);
    if (here) {
        *out = d5_strdup(dir, "CIFAR folder");
        return *out ? D5_OK : D5_ERR_NOMEM;
    }
    char *sub = d5__dataset_path(dir, l->subdir);
    if (!sub) return D5_ERR_NOMEM;
    char *nested = d5__dataset_path(sub, l->files[0]);
    int there = nested && d5__dataset_exists(nested);
    d5_free(nested);
    if (there) {
        *out = sub;
        return D5_OK;
    }
    d5_free(sub);
    return d5_error(D5_ERR_IO,
                    "CIFAR folder '%s' has no %s (nor %s/%s): get the binary version from "
                    "https://www.cs.toronto.edu/~kriz/cifar.html (see docs/level2.md)",
                    dir, l->files[0], l->subdir, l->files[0]);
}

/* Counts the records of every file into counts[] and their sum into *n,
 * checking each size. */
static d5_status count_records(const char *folder, const cifar_layout *l, int64_t *counts,
                               int64_t *n)
{
    const long long rec = l->label_bytes + CIFAR_PIXELS;
    *n = 0;
    for (int i = 0; i < l->nfiles; i++) {
        char *path = d5__dataset_path(folder, l->files[i]);
        if (!path) return D5_ERR_NOMEM;
        struct stat st;
        d5_status s = D5_OK;
        if (stat(path, &st) != 0)
            s = d5_error(D5_ERR_IO, "cannot open CIFAR file '%s': %s", path, strerror(errno));
        else if (st.st_size == 0 || st.st_size % rec != 0)
            s = d5_error(D5_ERR_FORMAT,
                         "'%s': %lld bytes is not a positive multiple of the %lld-byte record "
                         "(%d label byte%s + %d pixels)",
                         path, (long long)st.st_size, rec, l->label_bytes,
                         l->label_bytes > 1 ? "s" : "", CIFAR_PIXELS);
        else
            *n += counts[i] = (int64_t)(st.st_size / rec);
        d5_free(path);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

/* Reads `count` records of one file into samples first .. first + count - 1. */
static d5_status read_file(const char *path, const cifar_layout *l, d5_dataset *ds, int64_t first,
                           int64_t count)
{
    d5_status rs = d5_file_check_regular(path, "CIFAR file");
    if (rs != D5_OK) return rs;
    FILE *f = fopen(path, "rb");
    if (!f) return d5_error(D5_ERR_IO, "cannot open CIFAR file '%s': %s", path, strerror(errno));
    const size_t nlabel = (size_t)l->label_bytes;
    d5_status s = D5_OK;
    for (int64_t r = 0; r < count && s == D5_OK; r++) {
        uint8_t label[2];
        uint8_t *pixels = ds->bytes + (size_t)(first + r) * CIFAR_PIXELS;
        if (fread(label, 1, nlabel, f) != nlabel ||
            fread(pixels, 1, CIFAR_PIXELS, f) != CIFAR_PIXELS) {
            s = d5_error(ferror(f) ? D5_ERR_IO : D5_ERR_FORMAT,
                         "'%s': record %lld is incomplete (the file changed while read?)", path,
                         (long long)r);
            break;
        }
        int fine = label[nlabel - 1];
        if (l->coarse_classes && label[0] >= l->coarse_classes)
            s = d5_error(D5_ERR_FORMAT, "'%s': record %lld has coarse label %d, expected < %d",
                         path, (long long)r, label[0], l->coarse_classes);
        else if (fine >= ds->classes)
            s = d5_error(D5_ERR_FORMAT, "'%s': record %lld has %slabel %d, expected < %lld", path,
                         (long long)r, l->coarse_classes ? "fine " : "", fine,
                         (long long)ds->classes);
        ds->labels[first + r] = fine;
    }
    fclose(f);
    return s;
}

d5_status d5_dataset_open_cifar(const char *dir, int train, int classes, d5_dataset **out)
{
    if (!dir || !out) return d5_error(D5_ERR_INVALID, "d5_dataset_open_cifar: NULL argument");
    if (classes != 10 && classes != 100)
        return d5_error(D5_ERR_INVALID, "CIFAR has 10 or 100 classes, not %d", classes);
    const cifar_layout *l = classes == 10 ? (train ? &cifar10_train : &cifar10_test)
                                          : (train ? &cifar100_train : &cifar100_test);
    char *folder = NULL;
    d5_status s = find_folder(dir, l, &folder);
    if (s != D5_OK) return s;
    int64_t n = 0, counts[CIFAR_MAX_FILES] = {0};
    d5_dataset *ds = NULL;
    if ((s = count_records(folder, l, counts, &n)) == D5_OK) {
        char name[32];
        snprintf(name, sizeof name, "cifar%d-%s", classes, train ? "train" : "test");
        const int64_t shape[3] = {3, 32, 32};
        s = d5__dataset_new(name, 3, shape, n, classes, &ds);
    }
    if (s == D5_OK && !(ds->bytes = d5_alloc((size_t)n * CIFAR_PIXELS, "CIFAR pixels")))
        s = D5_ERR_NOMEM;
    int64_t first = 0;
    for (int i = 0; s == D5_OK && i < l->nfiles; i++) {
        char *path = d5__dataset_path(folder, l->files[i]);
        s = path ? read_file(path, l, ds, first, counts[i]) : D5_ERR_NOMEM;
        first += counts[i];
        d5_free(path);
    }
    d5_free(folder);
    if (s != D5_OK) {
        d5_dataset_free(ds);
        return s;
    }
    *out = ds;
    return D5_OK;
}
