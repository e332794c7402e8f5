/* BatchNormalization during training: batch statistics in the forward pass
 * and running statistics carried from step to step (see bn_train.c). */
#ifndef D5_TRAINING_BN_TRAIN_H
#define D5_TRAINING_BN_TRAIN_H

#include "d5/executor.h"
#include "d5/network.h"

typedef struct d5__bn_train {
    int32_t count;  /* nodes switched to training mode */
    int32_t frozen; /* nodes left in inference form (opset < 14) */
    int32_t cap;    /* slots allocated below */
    /* Per node k: 2k is the running mean, 2k + 1 the running variance. */
    char **stat;   /* the initializer the node reads */
    char **update; /* the training graph's output the node writes */
    float **data;  /* the caller's initializer data */
    int64_t *size; /* channels */
} d5__bn_train;

/* Switches every BatchNormalization node of the training graph `tnet` (a
 * clone of `net`) to training_mode=1 with its running-statistics outputs as
 * graph outputs. Nodes of networks declaring ai.onnx opset < 14, where
 * BatchNormalization has no training_mode, stay as they are and are
 * counted in `frozen`. */
D5_NODISCARD d5_status d5__bn_train_prepare(d5_network *tnet, d5_network *net, d5__bn_train *bn);
/* Makes the training executor read the running statistics from the caller's
 * network, where evaluation and checkpoints find them. */
D5_NODISCARD d5_status d5__bn_train_bind(const d5__bn_train *bn, d5_executor *ex);
/* After a training step: the running statistics the step wrote become the
 * ones the next step (and evaluation) reads. */
D5_NODISCARD d5_status d5__bn_train_update(const d5__bn_train *bn, const d5_executor *ex);
void d5__bn_train_free(d5__bn_train *bn);

#endif
