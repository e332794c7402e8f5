/* Helpers shared by the dataset and sampler tests: IDX files written in the
 * exact format (big-endian header, optional gzip) and small datasets whose
 * samples say which index they are. */
#ifndef D5_TEST_DATA_SUPPORT_H
#define D5_TEST_DATA_SUPPORT_H

#include "d5/datasets.h"

#include <stddef.h>
#include <stdint.h>

/* Writes an IDX file: the magic number, ndim big-endian sizes, then `bytes`
 * bytes of data (which may differ from what the sizes say, to make bad files).
 * gz: through gzip. Returns 0 on success. */
int write_idx(const char *path, int gz, uint32_t magic, int ndim, const uint32_t *dims,
              const uint8_t *data, size_t bytes);

/* Writes images (n x h x w bytes, pixel(i, y, x) = (i * 7 + y * 3 + x) % 256)
 * and labels (i % classes) as dir/<images> and dir/<labels>. Returns 0. */
int write_idx_pair(const char *dir, const char *images, const char *labels, int gz, uint32_t n,
                   uint32_t h, uint32_t w, uint32_t classes);
/* The pixel value write_idx_pair uses. */
uint8_t pattern_pixel(uint32_t i, uint32_t y, uint32_t x);

/* Opens a dataset of n (< 65536) samples [1, 1, 2] in dir: sample i holds
 * (i % 256) / 255 and (i / 256) / 255, its label is i % classes. */
d5_dataset *counting_dataset(const char *dir, uint32_t n, uint32_t classes);
/* The index a sample of counting_dataset came from. */
int64_t counting_index(const float *x);

/* The end of a test that opened ds in a folder of its own: frees ds, removes
 * the folder and frees its name. */
void dataset_done(d5_dataset *ds, char *dir);

#endif
