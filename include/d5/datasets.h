/* d5 level 2: datasets and samplers.
 *
 * A dataset is n labelled samples of one shape: MNIST and Fashion-MNIST (IDX
 * files, plain or gzip), CIFAR-10 and CIFAR-100 (their binary format), a
 * synthetic dataset of any shape, or pairs of ONNX TensorProto files. Samples
 * come out as float32 (images scaled to [0, 1]) with int64 labels. Readers
 * check magic numbers, counts, label ranges and file sizes, and name the file
 * and the problem. A dataset is read-only once opened and may be shared by
 * samplers, also from several threads.
 *
 * Storage: image datasets keep their pixels as the bytes of the files (MNIST
 * train: 47 MB) and convert them to float in d5_dataset_get; TensorProto pairs
 * keep float32; synthetic samples are generated when read, from the seed and
 * the sample index, so that any size costs no memory.
 *
 * A sampler draws batches from a dataset: in order, shuffled (seeded,
 * reproducible: the same seed gives the same batches on every machine), or
 * partitioned across `world` workers (level 3), with optional augmentations.
 * It records the label histogram of what it sampled (the DatasetBias metric)
 * and times its reads under the timer key IO (DatasetLatency).
 */
#ifndef D5_DATASETS_H
#define D5_DATASETS_H

#include "d5/core.h"
#include "d5/timer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct d5_dataset d5_dataset;

/* MNIST-format IDX files in `dir`: train-images-idx3-ubyte, train-labels-
 * idx1-ubyte (train != 0) or t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte,
 * each plain or with ".gz" (the plain file is preferred when both exist).
 * Samples [1, 28, 28]; 10 classes. Fashion-MNIST has the same files. The
 * dataset's name is the folder's name and "-train" or "-test". D5_ERR_IO
 * names a missing or unreadable file; D5_ERR_FORMAT a bad magic number, a
 * count mismatch, a label of 10 or more, or a file whose size differs from
 * what its header promises (truncated or with trailing data). */
D5_API D5_NODISCARD d5_status d5_dataset_open_mnist(const char *dir, int train, d5_dataset **out);
/* Any pair of IDX files, plain or gzip (found by content, not by name):
 * images of unsigned bytes with 2 or 3 dimensions per sample (magic 0x00000803
 * or 0x00000804; samples [1, H, W] or [A, B, C]) and labels (0x00000801). The
 * classes are the largest label plus one. Errors as d5_dataset_open_mnist. */
D5_API D5_NODISCARD d5_status d5_dataset_open_idx(const char *images, const char *labels,
                                                  d5_dataset **out);
/* CIFAR binary files ("binary version") in `dir`, or in its subfolder
 * cifar-10-batches-bin / cifar-100-binary as the archives unpack: CIFAR-10
 * (classes 10: data_batch_1..5.bin or test_batch.bin; records of 1 label byte
 * and 3072 pixel bytes) or CIFAR-100 (classes 100: train.bin or test.bin;
 * records of a coarse and a fine label byte and 3072 pixel bytes; the fine
 * label is used). Pixels are channel-major (R, G, B planes of 32 x 32, row
 * major), which is the sample layout [3, 32, 32]. Any number of records per
 * file is accepted; a size that is not a multiple of the record, or a label out
 * of range, is D5_ERR_FORMAT naming the file; a missing file D5_ERR_IO; classes
 * other than 10 and 100 D5_ERR_INVALID. */
D5_API D5_NODISCARD d5_status d5_dataset_open_cifar(const char *dir, int train, int classes,
                                                    d5_dataset **out);
/* n samples of shape `sample` (no batch dimension; its dtype is ignored:
 * samples are float32) drawn from a seeded normal distribution whose mean
 * depends on the label, so that a model can learn it: element j of a sample of
 * label c is N(0.5 * s(c, j), 1) with s(c, j) = +-1 a fixed pseudo-random sign
 * pattern per class, the same for every seed (two seeds give a training and a
 * test set of one task). Labels are uniform in [0, classes). A sample depends only
 * on the seed and its index, and is generated when read (no memory is held).
 * D5_ERR_INVALID for n < 1, classes < 1 or a dimension below 1. */
D5_API D5_NODISCARD d5_status d5_dataset_synthetic(const d5_tensor_desc *sample, int64_t n,
                                                   int64_t classes, uint64_t seed,
                                                   d5_dataset **out);
/* The same task for models that read token ids (a transformer's int64 input):
 * element j of a sample of label c is, with probability 1/2, a token fixed
 * for the class and the position, else uniform in [0, vocab); the ids come
 * out as floats holding integers (the trainer converts them to the input's
 * integer type). D5_ERR_INVALID also for a vocabulary outside 1..2^24. */
D5_API D5_NODISCARD d5_status d5_dataset_synthetic_tokens(const d5_tensor_desc *sample, int64_t n,
                                                          int64_t classes, int64_t vocab,
                                                          uint64_t seed, d5_dataset **out);
/* Pairs of TensorProto files in `dir`: input_K.pb and output_K.pb for K = 0,
 * 1, 2, ... up to the first K without input_K.pb. Each output says how many
 * samples its input holds: an int32/int64 scalar label, or a float32 vector of
 * scores (one-hot or logits; the argmax is the label) is one sample and the
 * input is that sample; an integer vector [m] or a float matrix [m, C] is m
 * samples and the input's first dimension must be m. Inputs are float32 or
 * float64; all samples have one shape. The classes are C for scores, else the
 * largest label plus one. D5_ERR_IO when input_0.pb or an output is missing;
 * D5_ERR_FORMAT or D5_ERR_SHAPE naming the file otherwise. */
D5_API D5_NODISCARD d5_status d5_dataset_open_tensorpairs(const char *dir, d5_dataset **out);
/* Frees a dataset; NULL is a no-op. */
D5_API void d5_dataset_free(d5_dataset *ds);

D5_API int64_t d5_dataset_size(const d5_dataset *ds);
D5_API int64_t d5_dataset_classes(const d5_dataset *ds);
/* The descriptor of one sample (float32, no batch dimension). */
D5_API const d5_tensor_desc *d5_dataset_sample_desc(const d5_dataset *ds);
/* "mnist-train", "cifar10-test", "synthetic", ... (borrowed from the dataset). */
D5_API const char *d5_dataset_name(const d5_dataset *ds);
/* Copies samples indices[0..n-1] into x (n * sample floats) and their labels
 * into labels (may be NULL). D5_ERR_RANGE for an index out of range, naming
 * it; x is then partly written. Thread safe. */
D5_API D5_NODISCARD d5_status d5_dataset_get(const d5_dataset *ds, const int64_t *indices,
                                             int64_t n, float *x, int64_t *labels);
/* How many samples of each label the dataset holds (counts[0..classes-1]),
 * to compare with what a sampler drew (DatasetBias). */
D5_API void d5_dataset_histogram(const d5_dataset *ds, int64_t *counts);

/* Where d5 looks for a named dataset ("mnist", "fashion-mnist", "cifar10",
 * "cifar100"), in this order: $D5_DATA_DIR/<name> when D5_DATA_DIR is set;
 * <source tree>/data/<name>, where scripts/setup_data.sh puts MNIST;
 * <datadir>/d5/datasets/<name> of the installation; for "fashion-mnist" also
 * /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist). Writes
 * the first folder that exists, else the first candidate, into buf (always
 * NUL-terminated; truncated to size). */
D5_API void d5_dataset_default_dir(const char *name, char *buf, size_t size);

/* ---- Samplers ------------------------------------------------------------------------ */

/* Epoch e of a shuffled or partitioned sampler uses the permutation that a
 * Fisher-Yates shuffle draws from d5_rng seeded with seed + e, starting from
 * the identity: every worker with the same seed computes the same one.
 * Partitioned: each of the `world` workers takes floor(n / world) samples, a
 * contiguous slice of that permutation (rank r: [r * share, (r + 1) * share)),
 * so all workers run the same number of batches; the n % world samples at the
 * end of the permutation, different ones each epoch, are left out.
 * Sharded-batch: the permutation is cut into global batches of world * batch
 * samples and worker r takes samples [r * batch, (r + 1) * batch) of each, so
 * that the workers' batches of one step together are the batch one worker of
 * a sampler with batch world * batch would draw (augmentation draws aside):
 * synchronous data-parallel training on `world` workers then computes the
 * step of one worker. A last partial global batch is left out. */
typedef enum d5_sampler_kind {
    D5_SAMPLER_ORDERED = 0,
    D5_SAMPLER_SHUFFLED = 1,
    D5_SAMPLER_PARTITIONED = 2,  /* a shuffled permutation split into `world` parts */
    D5_SAMPLER_SHARDED_BATCH = 3 /* each global batch of world * batch split into `world` parts */
} d5_sampler_kind;

/* Augmentations, applied to each sample in this order: crop, flip,
 * normalize, cutout. Samples are [C, H, W] or [H, W] (C = 1); crop, flip and
 * cutout need at least 2 dimensions, normalize at most 4 channels. The random
 * draws come from a stream seeded with the sampler's seed and the epoch. */
typedef struct d5_augment {
    int32_t normalize; /* subtract mean[c], divide by std[c] (non-zero) per channel */
    float mean[4], std[4];
    int32_t crop_pad; /* > 0: random crop of the original size after padding by this
                         many zeros on every side (offsets uniform in [0, 2 * pad]) */
    int32_t flip;     /* random horizontal flip (mirror along W) with probability 1/2 */
    int32_t cutout;   /* > 0: zero a square of this side around a uniform random
                         centre, clipped at the borders (DeVries & Taylor 2017) */
} d5_augment;

typedef struct d5_sampler_params {
    int32_t kind;        /* a d5_sampler_kind */
    int64_t batch;       /* samples per batch (default 64) */
    uint64_t seed;       /* shuffling and augmentation */
    int32_t drop_last;   /* 1: skip a last partial batch */
    int32_t rank, world; /* partitioned: this worker and the number of workers */
    d5_augment augment;
} d5_sampler_params;

/* Ordered, batch 64, seed 0, keep the last partial batch, rank 0 of 1, no
 * augmentation. */
D5_API d5_sampler_params d5_sampler_default_params(void);

typedef struct d5_sampler d5_sampler;
/* Creates a sampler at epoch 0 (p NULL: the defaults). The dataset is
 * borrowed and must outlive the sampler. D5_ERR_INVALID names a bad parameter
 * (batch < 1, unknown kind, rank outside [0, world), std 0, an augmentation
 * the sample shape does not allow). A sampler is not thread safe. */
D5_API D5_NODISCARD d5_status d5_sampler_create(const d5_dataset *ds, const d5_sampler_params *p,
                                                d5_sampler **out);
D5_API void d5_sampler_free(d5_sampler *s);
/* Fills the next batch: x (float32 [n, sample...]) and labels (int64 [n];
 * may be NULL), both of at least `batch` samples; *n receives the count, 0 at
 * the end of the epoch (call d5_sampler_reset for the next). Each call that
 * reads samples is one region of the key IO of the attached timer (reading
 * and augmenting); an error of the timer (IO already started) is returned. */
D5_API D5_NODISCARD d5_status d5_sampler_next(d5_sampler *s, float *x, int64_t *labels, int64_t *n);
/* Starts the next epoch (a new permutation for the shuffled kinds). */
D5_API void d5_sampler_reset(d5_sampler *s);
/* Starts epoch `epoch` (>= 0), e.g. to resume a run. */
D5_API void d5_sampler_set_epoch(d5_sampler *s, int64_t epoch);
/* The current epoch: 0 after creation, +1 per reset. */
D5_API int64_t d5_sampler_epoch(const d5_sampler *s);
/* Batches per epoch. */
D5_API int64_t d5_sampler_batches(const d5_sampler *s);
/* Samples per epoch (this worker's share when partitioned; without the last
 * partial batch with drop_last). */
D5_API int64_t d5_sampler_epoch_size(const d5_sampler *s);
/* DatasetBias: how often each label was sampled since creation
 * (counts[0..classes-1], where classes is d5_dataset_classes). */
D5_API void d5_sampler_histogram(const d5_sampler *s, int64_t *counts);
/* Times reads under the key IO (borrowed; NULL detaches). */
D5_API void d5_sampler_attach_timer(d5_sampler *s, d5_timer *t);
/* The parameters the sampler was created with (borrowed until it is freed;
 * NULL for a NULL sampler). */
D5_API const d5_sampler_params *d5_sampler_get_params(const d5_sampler *s);
/* The dataset it draws from (borrowed from the caller of d5_sampler_create). */
D5_API const d5_dataset *d5_sampler_dataset(const d5_sampler *s);

#ifdef __cplusplus
}
#endif
#endif
