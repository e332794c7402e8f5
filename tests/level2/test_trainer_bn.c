/* BatchNormalization under the trainer: batch statistics during training,
 * running statistics carried into the caller's network, evaluation in
 * inference mode, and networks of opset < 14 left in inference form. */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

enum { N = 8, C = 2, H = 3, W = 3, CLASSES = 3 };

static void add_init(d5_network *net, const char *name, int32_t nd, const int64_t *shape,
                     const float *v)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, nd, shape, &d), D5_OK);
    d5_tensor t = {d, (void *)v, D5_DEVICE_CPU, 0};
    cr_assert_eq(d5_network_add_initializer(net, name, &t), D5_OK, "%s", d5_last_error());
}

/* x [N, C, H, W] -> BatchNormalization (momentum 0.75) -> Flatten -> Gemm -> logits. */
static d5_network *bn_net(int64_t opset)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("bn", &net), D5_OK);
    cr_assert_eq(d5_network_set_opset(net, "", opset), D5_OK);
    d5_tensor_desc x;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 4, (int64_t[]){N, C, H, W}, &x), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "x", &x, NULL), D5_OK);
    const float scale[C] = {1.5f, 0.5f}, bias[C] = {0.1f, -0.2f}, mean[C] = {0.25f, -1},
                var[C] = {2, 0.5f};
    add_init(net, "bn.scale", 1, (int64_t[]){C}, scale);
    add_init(net, "bn.bias", 1, (int64_t[]){C}, bias);
    add_init(net, "bn.mean", 1, (int64_t[]){C}, mean);
    add_init(net, "bn.var", 1, (int64_t[]){C}, var);
    float w[CLASSES * C * H * W], b[CLASSES] = {0, 0, 0};
    for (int i = 0; i < CLASSES * C * H * W; i++) w[i] = (float)((i * 7) % 11 - 5) / 10.0f;
    add_init(net, "fc.weight", 2, (int64_t[]){CLASSES, C * H * W}, w);
    add_init(net, "fc.bias", 1, (int64_t[]){CLASSES}, b);
    d5_attr ba[] = {{.name = "momentum", .type = D5_ATTR_FLOAT, .f = 0.75},
                    {.name = "epsilon", .type = D5_ATTR_FLOAT, .f = 1e-5}};
    d5_attrs battrs = {ba, 2};
    const char *bin[] = {"x", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, *bout[] = {"y"};
    cr_assert_eq(
        d5_network_add_node(net, "bn", "BatchNormalization", NULL, bin, 5, bout, 1, &battrs, NULL),
        D5_OK, "%s", d5_last_error());
    const char *fin[] = {"y"}, *fout[] = {"flat"};
    cr_assert_eq(d5_network_add_node(net, "flatten", "Flatten", NULL, fin, 1, fout, 1, NULL, NULL),
                 D5_OK);
    d5_attr ga[] = {{.name = "transB", .type = D5_ATTR_INT, .i = 1}};
    d5_attrs gattrs = {ga, 1};
    const char *gin[] = {"flat", "fc.weight", "fc.bias"}, *gout[] = {"logits"};
    cr_assert_eq(d5_network_add_node(net, "fc", "Gemm", NULL, gin, 3, gout, 1, &gattrs, NULL),
                 D5_OK);
    cr_assert_eq(d5_network_add_output(net, "logits", NULL), D5_OK);
    return net;
}

static d5_dataset *data(void)
{
    d5_tensor_desc sample;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 3, (int64_t[]){C, H, W}, &sample), D5_OK);
    d5_dataset *ds = NULL;
    cr_assert_eq(d5_dataset_synthetic(&sample, N, CLASSES, 5, &ds), D5_OK, "%s", d5_last_error());
    return ds;
}

/* Trains net one epoch on ds (evaluating on ds too) with SGD at learning rate
 * lr on the ref backend, asserting success. */
static d5_train_result train_one_epoch(d5_network *net, d5_dataset *ds, double lr)
{
    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = lr;
    d5_optimizer *opt = NULL;
    cr_assert_eq(d5_optimizer_create("sgd", &op, &opt), D5_OK);
    d5_trainer_params p = d5_trainer_default_params();
    p.backend = "ref";
    d5_train_result r;
    cr_assert_eq(d5_train(net, ds, ds, opt, &p, 1, NULL, &r), D5_OK, "%s", d5_last_error());
    d5_optimizer_free(opt);
    return r;
}

/* lr 0: the weights stay, and one step over the whole dataset (one batch)
 * moves the running statistics by (1 - momentum) towards the batch's mean
 * and (biased) variance, as the ONNX specification computes them. */
Test(trainer_bn, running_statistics_follow_the_batch)
{
    d5_network *net = bn_net(15);
    d5_dataset *ds = data();
    float x[N * C * H * W];
    int64_t idx[N];
    for (int i = 0; i < N; i++) idx[i] = i;
    cr_assert_eq(d5_dataset_get(ds, idx, N, x, NULL), D5_OK);
    double want_mean[C], want_var[C];
    const double mean0[C] = {0.25, -1}, var0[C] = {2, 0.5};
    for (int c = 0; c < C; c++) {
        double s = 0, q = 0;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < H * W; k++) s += x[(n * C + c) * H * W + k];
        double m = s / (N * H * W);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < H * W; k++) {
                double d = x[(n * C + c) * H * W + k] - m;
                q += d * d;
            }
        want_mean[c] = 0.75 * mean0[c] + 0.25 * m;
        want_var[c] = 0.75 * var0[c] + 0.25 * q / (N * H * W);
    }
    d5_train_result r = train_one_epoch(net, ds, 0);
    cr_assert_eq(r.batchnorm_training, 1);
    cr_assert_eq(r.batchnorm_frozen, 0);
    cr_assert_eq(r.nlosses, 1);
    const float *mean = d5_network_initializer_data(net, "bn.mean");
    const float *var = d5_network_initializer_data(net, "bn.var");
    for (int c = 0; c < C; c++) {
        cr_assert_float_eq(mean[c], want_mean[c], 1e-5, "mean[%d] %g, want %g", c, mean[c],
                           want_mean[c]);
        cr_assert_float_eq(var[c], want_var[c], 1e-5, "var[%d] %g, want %g", c, var[c],
                           want_var[c]);
    }
    /* The training loss used batch statistics and evaluation the running
     * ones: on the same single batch they differ. */
    cr_assert(fabs(r.losses[0] - r.epochs[0].test_loss) > 1e-4, "train %g test %g", r.losses[0],
              r.epochs[0].test_loss);
    d5_train_result_free(&r);
    d5_dataset_free(ds);
    d5_network_free(net);
}

/* Before opset 14 BatchNormalization has no training_mode: the node stays in
 * inference form, the statistics stay, and the result says so. */
Test(trainer_bn, old_opsets_stay_in_inference_form)
{
    d5_network *net = bn_net(13);
    d5_dataset *ds = data();
    d5_train_result r = train_one_epoch(net, ds, 0.01);
    cr_assert_eq(r.batchnorm_training, 0);
    cr_assert_eq(r.batchnorm_frozen, 1);
    const float *mean = d5_network_initializer_data(net, "bn.mean");
    cr_assert_eq(mean[0], 0.25f);
    cr_assert_eq(mean[1], -1.0f);
    d5_train_result_free(&r);
    d5_dataset_free(ds);
    d5_network_free(net);
}
