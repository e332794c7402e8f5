/* MNIST and Fashion-MNIST: the four IDX files of the original distribution,
 * plain or gzip, and any other pair of IDX files. */
#include "dataset_internal.h"

#include <stdio.h>
#include <string.h>

/* The file `base` in dir, or base + ".gz"; NULL with D5_ERR_IO (or NOMEM) set
 * when neither exists. */
static char *find_file(const char *dir, const char *base, d5_status *s)
{
    char gz[64];
    snprintf(gz, sizeof gz, "%s.gz", base);
    char *path = d5__dataset_path(dir, base);
    if (path && !d5__dataset_exists(path)) {
        d5_free(path);
        path = d5__dataset_path(dir, gz);
        if (path && !d5__dataset_exists(path)) {
            d5_free(path);
            *s = d5_error(D5_ERR_IO,
                          "MNIST-format folder '%s' has neither %s nor %s (see "
                          "scripts/setup_data.sh and docs/level2.md)",
                          dir, base, gz);
            return NULL;
        }
    }
    if (!path) *s = D5_ERR_NOMEM;
    return path;
}

/* The last component of a path, without trailing slashes, into buf. */
static void base_name(const char *path, char *buf, size_t size)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t start = n;
    while (start > 0 && path[start - 1] != '/') start--;
    size_t len = n - start;
    if (len == 0 || (len == 1 && path[start] == '.') || (len == 1 && path[start] == '/')) {
        snprintf(buf, size, "mnist");
        return;
    }
    snprintf(buf, size, "%.*s", (int)len, path + start);
}

d5_status d5_dataset_open_mnist(const char *dir, int train, d5_dataset **out)
{
    if (!dir || !out) return d5_error(D5_ERR_INVALID, "d5_dataset_open_mnist: NULL argument");
    const char *images = train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte";
    const char *labels = train ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte";
    d5_status s = D5_OK;
    char *ipath = find_file(dir, images, &s);
    char *lpath = ipath ? find_file(dir, labels, &s) : NULL;
    if (ipath && lpath) {
        char name[256], base[200];
        base_name(dir, base, sizeof base);
        snprintf(name, sizeof name, "%s-%s", base, train ? "train" : "test");
        s = d5__idx_open_pair(ipath, lpath, 10, name, out);
    }
    d5_free(ipath);
    d5_free(lpath);
    return s;
}

d5_status d5_dataset_open_idx(const char *images, const char *labels, d5_dataset **out)
{
    if (!images || !labels || !out)
        return d5_error(D5_ERR_INVALID, "d5_dataset_open_idx: NULL argument");
    char name[256], base[200];
    base_name(images, base, sizeof base);
    snprintf(name, sizeof name, "idx:%s", base);
    return d5__idx_open_pair(images, labels, 0, name, out);
}
