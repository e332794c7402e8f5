#include "data_support.h"
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int write_idx(const char *path, int gz, uint32_t magic, int ndim, const uint32_t *dims,
              const uint8_t *data, size_t bytes)
{
    uint8_t head[4 + 4 * 8];
    size_t hn = 0;
    uint32_t words[9];
    words[0] = magic;
    for (int i = 0; i < ndim; i++) words[i + 1] = dims[i];
    for (int i = 0; i <= ndim; i++) {
        head[hn++] = (uint8_t)(words[i] >> 24);
        head[hn++] = (uint8_t)(words[i] >> 16);
        head[hn++] = (uint8_t)(words[i] >> 8);
        head[hn++] = (uint8_t)words[i];
    }
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f) return -1;
        int ok = gzwrite(f, head, (unsigned)hn) == (int)hn &&
                 (bytes == 0 || gzwrite(f, data, (unsigned)bytes) == (int)bytes);
        return gzclose(f) == Z_OK && ok ? 0 : -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(head, 1, hn, f) == hn && (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
    return fclose(f) == 0 && ok ? 0 : -1;
}

uint8_t pattern_pixel(uint32_t i, uint32_t y, uint32_t x)
{
    return (uint8_t)((i * 7 + y * 3 + x) % 256);
}

int write_idx_pair(const char *dir, const char *images, const char *labels, int gz, uint32_t n,
                   uint32_t h, uint32_t w, uint32_t classes)
{
    uint8_t *img = malloc((size_t)n * h * w + 1), *lab = malloc((size_t)n + 1);
    if (!img || !lab) return -1;
    for (uint32_t i = 0; i < n; i++) {
        lab[i] = (uint8_t)(i % classes);
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++)
                img[((size_t)i * h + y) * w + x] = pattern_pixel(i, y, x);
    }
    char ip[1024], lp[1024];
    snprintf(ip, sizeof ip, "%s/%s", dir, images);
    snprintf(lp, sizeof lp, "%s/%s", dir, labels);
    const uint32_t idims[3] = {n, h, w};
    int rc = write_idx(ip, gz, 0x803, 3, idims, img, (size_t)n * h * w);
    if (rc == 0) rc = write_idx(lp, gz, 0x801, 1, &n, lab, n);
    free(img);
    free(lab);
    return rc;
}

d5_dataset *counting_dataset(const char *dir, uint32_t n, uint32_t classes)
{
    uint8_t *img = malloc(2 * (size_t)n + 1), *lab = malloc((size_t)n + 1);
    if (!img || !lab) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        img[2 * i] = (uint8_t)(i % 256);
        img[2 * i + 1] = (uint8_t)(i / 256);
        lab[i] = (uint8_t)(i % classes);
    }
    char ip[1024], lp[1024];
    snprintf(ip, sizeof ip, "%s/count-images", dir);
    snprintf(lp, sizeof lp, "%s/count-labels", dir);
    const uint32_t idims[3] = {n, 1, 2};
    d5_dataset *ds = NULL;
    if (write_idx(ip, 0, 0x803, 3, idims, img, 2 * (size_t)n) == 0 &&
        write_idx(lp, 0, 0x801, 1, &n, lab, n) == 0 && d5_dataset_open_idx(ip, lp, &ds) != D5_OK)
        ds = NULL;
    free(img);
    free(lab);
    return ds;
}

int64_t counting_index(const float *x)
{
    long lo = lrintf(x[0] * 255.0f), hi = lrintf(x[1] * 255.0f);
    return (int64_t)(hi * 256 + lo);
}

void dataset_done(d5_dataset *ds, char *dir)
{
    d5_dataset_free(ds);
    rmtree(dir);
    free(dir);
}
