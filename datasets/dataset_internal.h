/* The common dataset struct shared by the readers, and the helpers they use.
 * Not installed. */
#ifndef D5_DATASET_INTERNAL_H
#define D5_DATASET_INTERNAL_H

#include "d5/datasets.h"

#include <stdint.h>

/* Fills sample `index` (numel floats) of a dataset whose samples are computed
 * rather than stored (the synthetic dataset). */
typedef void (*d5__sample_gen)(const d5_dataset *ds, int64_t index, float *x);

/* Exactly one of bytes, values and gen holds the samples. */
struct d5_dataset {
    char *name;
    d5_tensor_desc sample; /* float32, no batch dimension */
    int64_t n;             /* samples */
    int64_t numel;         /* floats per sample */
    int64_t classes;
    int64_t *labels; /* [n], each in [0, classes) */
    uint8_t *bytes;  /* [n * numel] pixels, scaled by 1/255 when read */
    float *values;   /* [n * numel] */
    d5__sample_gen gen;
    uint64_t seed; /* for gen */
    int64_t vocab; /* token ids in [0, vocab) for the synthetic token dataset; 0 otherwise */
};

/* Allocates a dataset named `name` with samples of shape [ndim]shape, n
 * samples and their labels array (zeroed); the caller fills labels and one of
 * the sample stores. */
d5_status d5__dataset_new(const char *name, int32_t ndim, const int64_t *shape, int64_t n,
                          int64_t classes, d5_dataset **out);

/* Checks that every label is in [0, classes); D5_ERR_FORMAT naming `what`
 * and the first bad one otherwise. */
d5_status d5__dataset_check_labels(const d5_dataset *ds, const char *what);

/* Sets classes to the largest label plus one (1 for an empty dataset). */
void d5__dataset_infer_classes(d5_dataset *ds);

/* An IDX file read whole: its element type (0x08: unsigned byte), its
 * dimensions and its data (from d5_alloc). */
typedef struct d5__idx {
    int32_t ndim;
    int64_t dims[4];
    uint8_t *data;
    size_t bytes;
} d5__idx;

/* Reads an IDX file of unsigned bytes with min_ndim..max_ndim dimensions,
 * plain or gzip. `role` ("images", "labels") appears in the messages.
 * D5_ERR_IO when the file cannot be opened or read; D5_ERR_FORMAT for a bad
 * magic number, a gzip error, a truncated file or trailing data. */
d5_status d5__idx_read(const char *path, const char *role, int32_t min_ndim, int32_t max_ndim,
                       d5__idx *out);
void d5__idx_free(d5__idx *idx);

/* Opens an image IDX file and a label IDX file as one dataset named `name`;
 * classes 0 infers them from the labels. */
d5_status d5__idx_open_pair(const char *images, const char *labels, int64_t classes,
                            const char *name, d5_dataset **out);

/* A path from d5_alloc: dir + "/" + file. NULL when memory runs out. */
char *d5__dataset_path(const char *dir, const char *file);
/* 1 when the path exists (file or folder). */
int d5__dataset_exists(const char *path);

/* Checks augmentations against a sample shape; D5_ERR_INVALID names the
 * problem. */
d5_status d5__augment_check(const d5_augment *a, const d5_tensor_desc *sample);
/* 1 when any augmentation is on. */
int d5__augment_any(const d5_augment *a);
/* Augments one sample x in place (crop, flip, normalize, cutout), drawing from
 * r; scratch holds one sample (used by crop). */
void d5__augment_apply(const d5_augment *a, const d5_tensor_desc *sample, d5_rng *r, float *x,
                       float *scratch);

#endif
