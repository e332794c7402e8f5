/* Reference operators of the nn group that normalize or drop: BatchNormalization,
 * LRN, Dropout, and their older opsets. How the expected numbers were computed:
 * see test_ref_nn.c. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static d5_tensor tbool(int value)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_BOOL, 0, SHAPE(1), &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    *(uint8_t *)t.data = (uint8_t)value;
    return t;
}

/* ---- BatchNormalization ------------------------------------------------------------ */

#define BN_X     VALS(0.5, -1.0, 2.0, 0.0, 1.5, -0.5, -2.0, 1.0, 0.25, 3.0, -1.5, 0.75)
#define BN_SCALE VALS(1.0, 1.5, -0.5)
#define BN_B     VALS(0.0, 0.1, 0.2)
#define BN_MEAN  VALS(0.5, -0.2, 0.1)
#define BN_VAR   VALS(1.0, 0.25, 2.0)

static void bn_inputs(d5_tensor *in)
{
    in[0] = tf32(3, SHAPE(2, 3, 2), BN_X);
    in[1] = tf32(1, SHAPE(3), BN_SCALE);
    in[2] = tf32(1, SHAPE(3), BN_B);
    in[3] = tf32(1, SHAPE(3), BN_MEAN);
    in[4] = tf32(1, SHAPE(3), BN_VAR);
}

Test(batchnormalization, inference)
{
    d5_tensor in[5], y;
    bn_inputs(in);
    run_op("BatchNormalization", "ref", in, 5, NULL, &y, 1);
    op_expect_shape(&y, 3, SHAPE(2, 3, 2));
    expect_values(&y,
                  VALS(0, -1.499993, 6.699868, 0.699988, -0.2949735, 0.4121315, -2.499988,
                       0.4999975, 1.449973, 9.699808, 0.765684, -0.02980913),
                  12, 1e-5);
    d5_tensor_free(&y);
    op_free_all(in, 5);
}

Test(batchnormalization, training_outputs_batch_statistics_and_running_averages)
{
    /* running_var uses the population variance: 1.084375, 0.5085937, 1.864844
     * (with the sample variance it would be 1.179167, 0.6114583, 1.953125). */
    d5_tensor in[5], y[3];
    bn_inputs(in);
    d5_attr items[] = {attr_int("training_mode", 1), attr_float("momentum", 0.8),
                       attr_float("epsilon", 1e-3)};
    d5_attrs attrs = {items, 3};
    run_op("BatchNormalization", "ref", in, 5, &attrs, y, 3);
    const float *want = VALS(0.7335415, -0.5239582, 0.9299362, -1.484424, -0.4243586, 0.4443142,
                             -1.362291, 1.152708, -1.182629, 2.137116, 0.8786506, -0.09860627);
    expect_values(&y[0], want, 12, 1e-5);
    op_expect_shape(&y[1], 1, SHAPE(3));
    expect_values(&y[1], VALS(0.325, 0.1025, 0.0925), 3, 1e-6);
    expect_values(&y[2], VALS(1.084375, 0.5085937, 1.864844), 3, 1e-6);
    op_free_all(y, 3);
    run_op("BatchNormalization", "ref", in, 5, &attrs, y, 1);
    expect_values(&y[0], want, 12, 1e-5);
    d5_tensor_free(&y[0]);
    op_free_all(in, 5);
}

Test(batchnormalization, bad_inputs)
{
    d5_tensor in[5], y[3];
    bn_inputs(in);
    d5_tensor_free(&in[2]);
    in[2] = tf32(1, SHAPE(2), NULL);
    cr_assert_eq(try_op("BatchNormalization", "ref", in, 5, NULL, y, 1), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(),
                     "BatchNormalization: B has shape [2], expected [3] (one value per channel)"),
              "%s", d5_last_error());
    d5_tensor_free(&in[2]);
    in[2] = tf32(1, SHAPE(3), BN_B);
    cr_assert_eq(try_op("BatchNormalization", "ref", in, 5, NULL, y, 3), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "BatchNormalization: running_mean and running_var are "
                                      "outputs only in training mode"),
              "%s", d5_last_error());
    op_free_all(in, 5);
}

Test(batchnormalization, gradient_inference_and_training)
{
    d5_tensor_desc d[5] = {op_fdesc(4, SHAPE(2, 3, 2, 2)), op_fdesc(1, SHAPE(3)),
                           op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(3))};
    /* Inference divides by sqrt(input_var + epsilon): give a positive variance. */
    d5_tensor given[5];
    memset(given, 0, sizeof given);
    given[4] = tf32(1, SHAPE(3), VALS(0.5, 1.2, 0.8));
    expect_gradient("BatchNormalization", d, 5, given, NULL, 1);
    d5_tensor_free(&given[4]);
    d5_attr items[] = {attr_int("training_mode", 1), attr_float("momentum", 0.7)};
    d5_attrs attrs = {items, 2};
    expect_gradient("BatchNormalization", d, 5, NULL, &attrs, 3);
    expect_gradient("BatchNormalization", d, 5, NULL, &attrs, 1);
    d[0] = op_fdesc(2, SHAPE(4, 3));
    expect_gradient("BatchNormalization", d, 5, NULL, &attrs, 3);
}

/* ---- LRN --------------------------------------------------------------------------- */

Test(lrn, odd_and_even_sizes_and_defaults)
{
    d5_tensor x =
        tf32(3, SHAPE(1, 5, 2), VALS(0.5, -1.0, 2.0, 0.0, 1.5, -0.5, -2.0, 1.0, 0.25, 3.0));
    d5_attr items[] = {attr_int("size", 3), attr_float("alpha", 0.5), attr_float("beta", 0.75),
                       attr_float("bias", 2)};
    d5_attrs attrs = {items, 4};
    expect_op_values("LRN", &x, 1, &attrs,
                     VALS(0.2368337, -0.5599586, 0.8595371, 0, 0.5613157, -0.2760079, -0.8661292,
                          0.3742105, 0.119452, 1.132186),
                     10, 1e-6);
    /* size 4: channels c - 1 .. c + 2 (the spec's window, not PyTorch's c - 2 .. c + 1). */
    items[0] = attr_int("size", 4);
    expect_op_values("LRN", &x, 1, &attrs,
                     VALS(0.230224, -0.5619862, 0.8145412, 0, 0.614168, -0.2050881, -0.9266939,
                          0.4101762, 0.1254494, 1.239392),
                     10, 1e-6);
    items[0] = attr_int("size", 2);
    attrs.count = 1;
    expect_op_values("LRN", &x, 1, &attrs,
                     VALS(0.4999203, -0.9999625, 1.999531, 0, 1.499649, -0.4999766, -1.999695,
                          0.9996252, 0.2499994, 2.998988),
                     10, 1e-6);
    attrs.count = 0;
    op_expect_fails("LRN", &x, 1, &attrs, 1, D5_ERR_INVALID, "LRN: attribute size is required");
    items[0] = attr_int("size", 0);
    attrs.count = 1;
    op_expect_fails("LRN", &x, 1, &attrs, 1, D5_ERR_INVALID, "LRN: size is 0, must be positive");
    d5_tensor_free(&x);
}

Test(lrn, gradient)
{
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 5, 3));
    d5_attr items[] = {attr_int("size", 3), attr_float("alpha", 0.5), attr_float("beta", 0.75),
                       attr_float("bias", 2)};
    d5_attrs attrs = {items, 4};
    expect_gradient("LRN", &d, 1, NULL, &attrs, 1);
    d = op_fdesc(4, SHAPE(1, 6, 2, 2));
    items[0] = attr_int("size", 4);
    expect_gradient("LRN", &d, 1, NULL, &attrs, 1);
    attrs.count = 1;
    expect_gradient("LRN", &d, 1, NULL, &attrs, 1);
}

/* ---- Dropout ----------------------------------------------------------------------- */

#define DROP_X VALS(1, -2, 3, -4, 5, -6, 7, -8, 0.5, -1.5, 2.5, -3.5, 4.5, -5.5, 6.5, -7.5)

/* First two masks of a Dropout with seed 3 and ratio 0.25 on 16 elements. */
static const int drop_mask1[16] = {1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0};
static const int drop_mask2[16] = {0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 0, 1};

static void expect_dropped(const d5_tensor *y, const d5_tensor *mask, const int *want, double scale)
{
    const float *x = DROP_X;
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(((const uint8_t *)mask->data)[i], want[i], "mask element %d", i);
        cr_assert_float_eq(((const float *)y->data)[i], want[i] ? x[i] * scale : 0, 1e-6,
                           "element %d", i);
    }
}

Test(dropout, inference_is_the_identity_with_an_all_true_mask)
{
    d5_tensor in[3] = {tf32(1, SHAPE(16), DROP_X), tf32(0, SHAPE(1), VALS(0.25)), tbool(0)}, y[2];
    static const int all[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int32_t nin = 1; nin <= 3; nin++) {
        run_op("Dropout", "ref", in, nin, NULL, y, 2);
        cr_assert_eq(y[1].desc.dtype, D5_BOOL);
        expect_dropped(&y[0], &y[1], all, 1);
        op_free_all(y, 2);
    }
    /* Ratio 0 in training mode copies too. */
    d5_tensor_free(&in[1]);
    d5_tensor_free(&in[2]);
    in[1] = tf32(0, SHAPE(1), VALS(0));
    in[2] = tbool(1);
    run_op("Dropout", "ref", in, 3, NULL, y, 2);
    expect_dropped(&y[0], &y[1], all, 1);
    op_free_all(y, 2);
    op_free_all(in, 3);
}

Test(dropout, training_masks_are_reproducible_from_the_seed)
{
    d5_tensor in[3] = {tf32(1, SHAPE(16), DROP_X), tf32(0, SHAPE(1), VALS(0.25)), tbool(1)}, y[2];
    d5_attr items[] = {attr_int("seed", 3)};
    d5_attrs attrs = {items, 1};
    /* Every new instance starts the same stream. */
    for (int k = 0; k < 2; k++) {
        run_op("Dropout", "ref", in, 3, &attrs, y, 2);
        expect_dropped(&y[0], &y[1], drop_mask1, 1 / 0.75);
        op_free_all(y, 2);
    }
    /* One instance advances: its second call draws the next mask. */
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("Dropout", "ref", &desc), D5_OK);
    d5_op *op;
    cr_assert_eq(d5_op_create(desc, in, 3, &attrs, 2, &op), D5_OK, "%s", d5_last_error());
    for (int32_t k = 0; k < 2; k++)
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, k), &y[k]), D5_OK);
    cr_assert_eq(d5_op_forward(op, in, y), D5_OK);
    expect_dropped(&y[0], &y[1], drop_mask1, 1 / 0.75);
    cr_assert_eq(d5_op_forward(op, in, y), D5_OK);
    expect_dropped(&y[0], &y[1], drop_mask2, 1 / 0.75);
    /* The backward pass uses the latest mask and the scale 1 / (1 - ratio). */
    d5_tensor gy[2], gx[3];
    memset(gy, 0, sizeof gy);
    memset(gx, 0, sizeof gx);
    gy[0] = tf32(1, SHAPE(16), NULL);
    gx[0] = tf32(1, SHAPE(16), NULL);
    for (int i = 0; i < 16; i++) ((float *)gy[0].data)[i] = (float)(i + 1);
    cr_assert_eq(d5_op_backward(op, gy, in, y, gx), D5_OK, "%s", d5_last_error());
    for (int i = 0; i < 16; i++)
        cr_assert_float_eq(((float *)gx[0].data)[i], drop_mask2[i] ? (i + 1) / 0.75 : 0, 1e-5,
                           "gradient element %d", i);
    d5_op_free(op);
    d5_tensor_free(&gy[0]);
    d5_tensor_free(&gx[0]);
    op_free_all(y, 2);
    op_free_all(in, 3);
}

Test(dropout, bad_inputs)
{
    d5_tensor in[3] = {tf32(1, SHAPE(16), DROP_X), tf32(0, SHAPE(1), VALS(1)), tbool(1)}, y[2];
    cr_assert_eq(try_op("Dropout", "ref", in, 3, NULL, y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "Dropout: ratio is 1, must be in [0, 1)"), "%s",
              d5_last_error());
    d5_tensor_free(&in[1]);
    in[1] = tf32(1, SHAPE(2), VALS(0.5, 0.5));
    cr_assert_eq(try_op("Dropout", "ref", in, 3, NULL, y, 1), D5_ERR_SHAPE);
    cr_assert(
        strstr(d5_last_error(), "Dropout: ratio must be a scalar (one element), got shape [2]"),
        "%s", d5_last_error());
    d5_tensor_free(&in[1]);
    in[1] = tf32(0, SHAPE(1), VALS(0.5));
    d5_tensor_free(&in[2]);
    in[2] = tf32(0, SHAPE(1), VALS(1));
    cr_assert_eq(try_op("Dropout", "ref", in, 3, NULL, y, 1), D5_ERR_INVALID);
    cr_assert(
        strstr(d5_last_error(), "Dropout: training_mode has data type float32, expected bool"),
        "%s", d5_last_error());
    op_free_all(in, 3);
}

Test(dropout, gradient_in_inference_mode)
{
    d5_tensor_desc d[3] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(0, SHAPE(1)), {0}};
    cr_assert_eq(d5_tensor_desc_make(D5_BOOL, 0, SHAPE(1), &d[2]), D5_OK);
    expect_gradient("Dropout", d, 1, NULL, NULL, 1);
    expect_gradient("Dropout", d, 1, NULL, NULL, 2);
    d5_tensor given[3] = {{0}, tf32(0, SHAPE(1), VALS(0.3)), tbool(0)};
    expect_gradient("Dropout", d, 3, given, NULL, 2);
    op_free_all(given, 3);
}

/* ---- Older opsets ------------------------------------------------------------------ */

Test(dropout, ratio_attribute_and_is_test_before_opset_12)
{
    static const int all[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    opset_attrs o;
    d5_tensor x = tf32(1, SHAPE(16), DROP_X), y[2];
    /* Opsets 7 to 11: inference; the mask is bool from opset 10. */
    d5_attr ratio = attr_float("ratio", 0.25);
    run_op("Dropout", "ref", &x, 1, with_opset(&o, 10, &ratio, 1), y, 2);
    cr_assert_eq(y[1].desc.dtype, D5_BOOL);
    expect_dropped(&y[0], &y[1], all, 1);
    op_free_all(y, 2);
    /* Before opset 10 the mask has the data's type. */
    run_op("Dropout", "ref", &x, 1, with_opset(&o, 7, &ratio, 1), y, 2);
    cr_assert_eq(y[1].desc.dtype, D5_F32);
    expect_values(&y[0], DROP_X, 16, 0);
    for (int i = 0; i < 16; i++) cr_assert_eq(((const float *)y[1].data)[i], 1.0f);
    op_free_all(y, 2);
    /* Opsets 1 and 6: is_test = 1 is inference, is_test = 0 (the default)
     * training, with the masks of the opset 13 test above (seed 3). */
    d5_attr test[2] = {ratio, attr_int("is_test", 1)};
    run_op("Dropout", "ref", &x, 1, with_opset(&o, 6, test, 2), y, 1);
    expect_values(&y[0], DROP_X, 16, 0);
    d5_tensor_free(&y[0]);
    d5_attr train[2] = {ratio, attr_int("seed", 3)};
    run_op("Dropout", "ref", &x, 1, with_opset(&o, 6, train, 2), y, 2);
    cr_assert_eq(y[1].desc.dtype, D5_F32);
    for (int i = 0; i < 16; i++) {
        cr_assert_float_eq(((const float *)y[0].data)[i],
                           drop_mask1[i] ? ((const float *)x.data)[i] / 0.75 : 0, 1e-6,
                           "element %d", i);
        cr_assert_eq(((const float *)y[1].data)[i], (float)drop_mask1[i], "mask element %d", i);
    }
    op_free_all(y, 2);
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 4));
    expect_gradient("Dropout", &d, 1, NULL, with_opset(&o, 10, &ratio, 1), 1);
    d5_tensor_free(&x);
}

Test(dropout, arity_and_attributes_follow_the_opset)
{
    opset_attrs o;
    d5_tensor in[2] = {tf32(1, SHAPE(4), NULL), tf32(0, SHAPE(1), VALS(0.5))}, y[2];
    cr_assert_eq(try_op("Dropout", "ref", in, 2, with_opset(&o, 11, NULL, 0), y, 1),
                 D5_ERR_INVALID);
    cr_assert(
        strstr(d5_last_error(), "Dropout: opset 11 takes 1 input (ratio is an attribute), got 2"),
        "%s", d5_last_error());
    d5_attr ratio = attr_float("ratio", 0.5);
    cr_assert_eq(try_op("Dropout", "ref", in, 1, with_opset(&o, 12, &ratio, 1), y, 1),
                 D5_ERR_INVALID);
    cr_assert(
        strstr(d5_last_error(), "Dropout: opset 12 takes ratio as input 1, not as an attribute"),
        "%s", d5_last_error());
    d5_attr one = attr_float("ratio", 1);
    cr_assert_eq(try_op("Dropout", "ref", in, 1, with_opset(&o, 6, &one, 1), y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "Dropout: attribute ratio is 1, must be in [0, 1)"), "%s",
              d5_last_error());
    op_free_all(in, 2);
}

Test(batchnormalization, older_opsets_is_test_and_outputs_decide_the_mode)
{
    opset_attrs o;
    d5_tensor in[5], y[3];
    bn_inputs(in);
    /* Opset 6 with is_test = 1 (as exported by PyTorch) and opsets 7 to 13
     * with one output: inference, as in the opset 15 test above. */
    const float *inference = VALS(0, -1.499993, 6.699868, 0.699988, -0.2949735, 0.4121315,
                                  -2.499988, 0.4999975, 1.449973, 9.699808, 0.765684, -0.02980913);
    d5_attr old[3] = {attr_int("is_test", 1), attr_int("spatial", 1), attr_float("momentum", 0.9)};
    run_op("BatchNormalization", "ref", in, 5, with_opset(&o, 6, old, 3), y, 1);
    expect_values(&y[0], inference, 12, 1e-5);
    d5_tensor_free(&y[0]);
    run_op("BatchNormalization", "ref", in, 5, with_opset(&o, 9, NULL, 0), y, 1);
    expect_values(&y[0], inference, 12, 1e-5);
    d5_tensor_free(&y[0]);
    /* Opset 9 with the outputs mean, var, saved_mean and saved_var (the checker
     * of onnx 1.12 allows 1 or 5 outputs): training mode, as in the training
     * test above (momentum 0.8, epsilon 1e-3); saved_mean and saved_var are
     * the batch's, numpy: x.mean((0, 2)), x.var((0, 2)). */
    d5_attr train[2] = {attr_float("momentum", 0.8), attr_float("epsilon", 1e-3)};
    d5_tensor y5[5];
    run_op("BatchNormalization", "ref", in, 5, with_opset(&o, 9, train, 2), y5, 5);
    expect_values(&y5[0],
                  VALS(0.7335415, -0.5239582, 0.9299362, -1.484424, -0.4243586, 0.4443142,
                       -1.362291, 1.152708, -1.182629, 2.137116, 0.8786506, -0.09860627),
                  12, 1e-5);
    expect_values(&y5[1], VALS(0.325, 0.1025, 0.0925), 3, 1e-6);
    expect_values(&y5[2], VALS(1.084375, 0.5085937, 1.864844), 3, 1e-6);
    expect_values(&y5[3], VALS(-0.375, 1.3125, 0.0625), 3, 1e-6);
    expect_values(&y5[4], VALS(1.421875, 1.54296875, 1.32421875), 3, 1e-6);
    op_free_all(y5, 5);
    cr_assert_eq(try_op("BatchNormalization", "ref", in, 5, with_opset(&o, 14, NULL, 0), y5, 5),
                 D5_ERR_INVALID);
    cr_assert(
        strstr(d5_last_error(), "BatchNormalization: opset 14 has at most 3 outputs, 5 asked for"),
        "%s", d5_last_error());
    cr_assert_eq(try_op("BatchNormalization", "ref", in, 5, with_opset(&o, 9, old + 1, 1), y, 1),
                 D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "BatchNormalization: spatial is an attribute of opsets 1 "
                                      "to 8, not of opset 9"),
              "%s", d5_last_error());
    d5_attr mode = attr_int("training_mode", 1);
    cr_assert_eq(try_op("BatchNormalization", "ref", in, 5, with_opset(&o, 13, &mode, 1), y, 1),
                 D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "BatchNormalization: training_mode is an attribute of "
                                      "opset 14 and later, not of opset 13"),
              "%s", d5_last_error());
    op_free_all(in, 5);
}

Test(batchnormalization, spatial_0_normalises_each_element)
{
    /* numpy: X = arange(12).reshape(2, 2, 3) / 2 - 2; scale, B, mean, var of
     * shape (2, 3); inference (X - mean) / sqrt(var + 1e-5) * scale + B;
     * training with X.mean(0) and X.var(0), running = 0.9 old + 0.1 batch. */
    opset_attrs o;
    d5_tensor in[5], y[3];
    in[0] = tf32(3, SHAPE(2, 2, 3), NULL);
    for (int i = 0; i < 12; i++) ((float *)in[0].data)[i] = (float)i / 2 - 2;
    in[1] = tf32(2, SHAPE(2, 3), VALS(1, 2, 0.5, -1, 1.5, 1));
    in[2] = tf32(2, SHAPE(2, 3), VALS(0, 0.1, 0.2, 0.3, 0.4, 0.5));
    in[3] = tf32(2, SHAPE(2, 3), VALS(0.5, -0.5, 1, 0, 2, -1));
    in[4] = tf32(2, SHAPE(2, 3), VALS(1, 0.25, 4, 2, 0.5, 1));
    d5_attr inference[2] = {attr_int("spatial", 0), attr_int("is_test", 1)};
    run_op("BatchNormalization", "ref", in, 5, with_opset(&o, 6, inference, 2), y, 1);
    expect_values(&y[0],
                  VALS(-2.4999875, -3.89992, -0.29999938, 0.65355251, -3.8425983, 1.9999925,
                       0.4999975, 8.09984, 0.44999969, -1.4677625, 2.5212991, 4.9999775),
                  12, 1e-5);
    d5_tensor_free(&y[0]);
    d5_attr spatial0 = attr_int("spatial", 0);
    run_op("BatchNormalization", "ref", in, 5, with_opset(&o, 6, &spatial0, 1), y, 3);
    expect_values(&y[0],
                  VALS(-0.99999778, -1.8999956, -0.29999889, 1.2999978, -1.0999967, -0.49999778,
                       0.99999778, 2.0999956, 0.69999889, -0.69999778, 1.8999967, 1.4999978),
                  12, 1e-5);
    op_expect_shape(&y[1], 2, SHAPE(2, 3));
    expect_values(&y[1], VALS(0.4, -0.45, 0.95, 0.1, 1.95, -0.7), 6, 1e-6);
    expect_values(&y[2], VALS(1.125, 0.45, 3.825, 2.025, 0.675, 1.125), 6, 1e-6);
    op_free_all(y, 3);
    /* With spatial 0 the statistics have X's shape without N. */
    d5_tensor_free(&in[2]);
    in[2] = tf32(1, SHAPE(2), VALS(0, 0));
    cr_assert_eq(try_op("BatchNormalization", "ref", in, 5, with_opset(&o, 7, &spatial0, 1), y, 1),
                 D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "BatchNormalization: B has shape [2], expected [2,3]"), "%s",
              d5_last_error());
    op_free_all(in, 5);
    d5_tensor_desc d[5] = {op_fdesc(3, SHAPE(3, 2, 3)), op_fdesc(2, SHAPE(2, 3)),
                           op_fdesc(2, SHAPE(2, 3)), op_fdesc(2, SHAPE(2, 3)),
                           op_fdesc(2, SHAPE(2, 3))};
    expect_gradient("BatchNormalization", d, 5, NULL, with_opset(&o, 7, &spatial0, 1), 5);
    d[0] = op_fdesc(3, SHAPE(3, 2, 2));
    d[1] = d[2] = d[3] = d[4] = op_fdesc(1, SHAPE(2));
    expect_gradient("BatchNormalization", d, 5, NULL, with_opset(&o, 9, NULL, 0), 5);
}
