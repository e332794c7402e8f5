#include "trainer_support.h"

#include <criterion/criterion.h>

d5_network *mlp(int64_t batch)
{
    d5_model_params mp = d5_model_default_params();
    mp.batch = batch;
    mp.seed = 7;
    d5_network *net = NULL;
    cr_assert_eq(d5_model_build("mlp", &mp, &net), D5_OK, "%s", d5_last_error());
    return net;
}

d5_dataset *synthetic(int64_t n, uint64_t seed)
{
    d5_tensor_desc sample;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 3, (int64_t[]){1, 28, 28}, &sample), D5_OK);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_synthetic(&sample, n, 10, seed, &ds), D5_OK, "%s", d5_last_error());
    return ds;
}
