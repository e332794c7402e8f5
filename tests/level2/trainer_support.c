#include "trainer_support.h"

#include <criterion/criterion.h>

d5_network *model_of(const char *name, int64_t batch, uint64_t seed)
{
    d5_model_params mp = d5_model_default_params();
    mp.batch = batch;
    mp.seed = seed;
    d5_network *net = NULL;
    cr_assert_eq(d5_model_build(name, &mp, &net), D5_OK, "%s: %s", name, d5_last_error());
    return net;
}

d5_network *mlp(int64_t batch)
{
    return model_of("mlp", batch, 7);
}

d5_optimizer *optimizer_of(const char *name, double lr)
{
    d5_optimizer_params p = d5_optimizer_default_params();
    p.lr = lr;
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create(name, &p, &o), D5_OK, "%s: %s", name, d5_last_error());
    return o;
}

d5_dataset *synthetic(int64_t n, uint64_t seed)
{
    d5_tensor_desc sample;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 3, (int64_t[]){1, 28, 28}, &sample), D5_OK);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_synthetic(&sample, n, 10, seed, &ds), D5_OK, "%s", d5_last_error());
    return ds;
}
