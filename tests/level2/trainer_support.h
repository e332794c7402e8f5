/* Helpers shared by the trainer tests: the MLP model and synthetic MNIST-shaped
 * data, asserting success. */
#ifndef D5_TEST_TRAINER_SUPPORT_H
#define D5_TEST_TRAINER_SUPPORT_H

#include "d5/d5.h"

/* The built-in model `name` at batch `batch`, weights from `seed`. */
d5_network *model_of(const char *name, int64_t batch, uint64_t seed);
/* The built-in mlp at batch `batch`, weights from seed 7. */
d5_network *mlp(int64_t batch);
/* The built-in optimizer `name` with learning rate lr, other parameters default. */
d5_optimizer *optimizer_of(const char *name, double lr);
/* n synthetic samples [1, 28, 28] of 10 classes from `seed`. */
d5_dataset *synthetic(int64_t n, uint64_t seed);

#endif
