/* Helpers shared by the trainer tests: the MLP model and synthetic MNIST-shaped
 * data, asserting success. */
#ifndef D5_TEST_TRAINER_SUPPORT_H
#define D5_TEST_TRAINER_SUPPORT_H

#include "d5/d5.h"

/* The built-in mlp at batch `batch`, weights from seed 7. */
d5_network *mlp(int64_t batch);
/* n synthetic samples [1, 28, 28] of 10 classes from `seed`. */
d5_dataset *synthetic(int64_t n, uint64_t seed);

#endif
