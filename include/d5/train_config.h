/* d5 level 2: a training run's configuration as typed fields, and the parsers
 * of the option strings that name its parts (a learning-rate schedule, a
 * sampler, a list of augmentations, a compute precision).
 *
 * d5 train parses its command line into a d5_train_config, and d5 recipe
 * fills one per phase of a recipe; both run it the same way. A program that
 * trains without the command-line tool takes the parts it needs:
 * d5_train_config_optimizer for d5_optimizer_create, d5_train_config_trainer
 * for d5_trainer_create, d5_train_config_sampler for d5_sampler_create
 * (docs/level2.md, "Running training from C").
 *
 * The parsers return D5_ERR_INVALID with a message that names the option of
 * d5 train ("--schedule 'x': expected constant, step, exponential or
 * cosine"), so that a command line tool prints it as it is.
 */
#ifndef D5_TRAIN_CONFIG_H
#define D5_TRAIN_CONFIG_H

#include "d5/core.h"
#include "d5/datasets.h"
#include "d5/training.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct d5_train_config {
    const char *model;      /* a built-in model's name or an ONNX file (default "lenet") */
    const char *dataset;    /* "NAME[:DIR]" (default "mnist") */
    const char *optimizer;  /* d5_optimizer_create's name (default "momentum") */
    double lr;              /* default 0.05 */
    double momentum;        /* default 0.9 */
    double weight_decay;    /* default 0 */
    int32_t schedule;       /* a d5_schedule_kind (default constant) */
    int64_t warmup;         /* linear warm-up steps (default 0) */
    int32_t batch;          /* samples per step of one worker, or of all (sharded-batch) */
    int32_t epochs;         /* default 1 */
    int64_t max_batches;    /* 0: no limit */
    double target_accuracy; /* 0: train every epoch */
    double time_budget_s;   /* 0: no limit */
    int64_t eval_every;     /* 0: at each epoch's end */
    /* A d5_sampler_kind, or -1 (default): shuffled, partitioned when the run
     * is distributed. */
    int32_t sampler;
    d5_augment augment;          /* normalize's mean and std are measured on the data */
    int32_t seed;                /* weights, shuffling and augmentation (default 1) */
    const char *backend;         /* executor backends (NULL: the default list) */
    const char *checkpoint;      /* write the trained model here (NULL: no) */
    const char *compare_backend; /* train again on these backends and compare (NULL: no) */
    int64_t snapshot_every;      /* 0: 50 with compare_backend, else none */
    const char *precision;       /* "f32" (default), "bf16" or "f16" */
    int32_t baseline;            /* 1 (default): bf16 and f16 also train a float32 baseline */
    double loss_scale;           /* f16: -1 (default) the trainer's, 0 none, else >= 1 */
} d5_train_config;

/* d5 train's defaults: lenet on mnist, momentum at lr 0.05, batch 64, one
 * epoch, constant schedule, the default sampler, no augmentation, seed 1,
 * float32. */
D5_API d5_train_config d5_train_config_default(void);

/* D5_ERR_INVALID naming the first field out of its range (batch, epochs,
 * counts, rates, the schedule's or the sampler's kind) or a combination that
 * does not hold: an unknown precision, loss_scale without f16, loss_scale in
 * (0, 1). The message names d5 train's option. */
D5_API D5_NODISCARD d5_status d5_train_config_check(const d5_train_config *c);

/* The optimizer's parameters: lr, momentum, weight decay. */
D5_API d5_optimizer_params d5_train_config_optimizer(const d5_train_config *c);

/* The trainer's parameters, the schedule resolved for `steps_per_epoch`
 * steps per epoch (step: x0.1 every epoch; exponential: x0.1 over an epoch;
 * cosine: down over all epochs). Progress stays off and no checkpoint is
 * set here but config's. */
D5_API d5_trainer_params d5_train_config_trainer(const d5_train_config *c, int64_t steps_per_epoch);

/* The sampler's parameters for one worker: batch, seed, kind (`distributed`
 * picks the default one), augmentations; drop_last set. */
D5_API d5_sampler_params d5_train_config_sampler(const d5_train_config *c, int distributed);

/* ---- Option strings ---- */

/* "constant", "step", "exponential", "cosine" into a d5_schedule_kind. */
D5_API D5_NODISCARD d5_status d5_train_parse_schedule(const char *name, int32_t *kind);
/* The name of a d5_schedule_kind ("?" out of range). */
D5_API const char *d5_train_schedule_name(int32_t kind);

/* "ordered", "shuffled", "partitioned", "sharded-batch" into a
 * d5_sampler_kind. */
D5_API D5_NODISCARD d5_status d5_train_parse_sampler(const char *name, int32_t *kind);
/* The name of a d5_sampler_kind ("?" out of range). */
D5_API const char *d5_train_sampler_name(int32_t kind);

/* "none" or a comma-separated list of crop[:PAD] (default 4, 1..1024),
 * flip, normalize, cutout[:SIDE] (default 16, 1..4096), each at most once,
 * into *a (cleared first). normalize is only marked: its mean and std are
 * the data's (d5_train_channel_stats). */
D5_API D5_NODISCARD d5_status d5_train_parse_augment(const char *list, d5_augment *a);
/* The list as d5_train_parse_augment takes it back ("crop:4,flip" or
 * "none"). */
D5_API void d5_train_augment_spec(const d5_augment *a, char *buf, size_t size);
/* The mean and standard deviation of each channel over a data set, for
 * normalize (samples [C, H, W] or [H, W], C <= 4; other shapes are left
 * unchanged for the sampler to refuse). */
D5_API D5_NODISCARD d5_status d5_train_channel_stats(const d5_dataset *ds, d5_augment *a);

#ifdef __cplusplus
}
#endif
#endif
