/* Reference Conv and ConvTranspose.
 *
 * Where the expected values come from: cases marked "ONNX" are ONNX's own
 * backend test cases (onnx/backend/test/case/node/conv.py and convtranspose.py,
 * onnx 1.12), inputs and outputs copied from there. The other cases use the
 * inputs of pattern() below and outputs computed with PyTorch 1.13 (Debian's
 * python3-torch) in float64: Conv with torch.nn.functional.conv1d/2d/3d on X
 * zero-padded by F.pad (which allows asymmetric pads), auto_pad turned into
 * pads by the formulas of the ONNX specification; ConvTranspose with
 * F.conv_transpose1d/2d/3d without padding (the full result), then element o
 * of Y taken from element o + pad_begin of the full result (zero outside it),
 * with the pads from the specification's formulas (Python's floor division),
 * plus the bias. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <string.h>

/* A float32 tensor holding v[i] = ((37 i + seed) mod 17 - 8) / 8, multiples of
 * 1/8 in [-1, 1]: the same pattern fed to PyTorch. */
static d5_tensor pattern(int32_t ndim, const int64_t *shape, int64_t seed)
{
    d5_tensor t = tf32(ndim, shape, NULL);
    float *v = t.data;
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t.desc); i++)
        v[i] = (float)((double)((37 * i + seed) % 17 - 8) / 8.0);
    return t;
}

/* 0, 1, 2, ... and all ones, as in the ONNX cases. */
static d5_tensor ramp(int32_t ndim, const int64_t *shape)
{
    d5_tensor t = tf32(ndim, shape, NULL);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t.desc); i++) ((float *)t.data)[i] = (float)i;
    return t;
}
static d5_tensor ones(int32_t ndim, const int64_t *shape)
{
    d5_tensor t = tf32(ndim, shape, NULL);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t.desc); i++) ((float *)t.data)[i] = 1;
    return t;
}

#define ATTRS(...)                                                                                 \
    (&(d5_attrs){(d5_attr[]){__VA_ARGS__},                                                         \
                 (int32_t)(sizeof((d5_attr[]){__VA_ARGS__}) / sizeof(d5_attr))})
#define INTS(name, ...)                                                                            \
    attr_ints(name, IVALS(__VA_ARGS__), (int64_t)(sizeof(IVALS(__VA_ARGS__)) / sizeof(int64_t)))
#define NO_ATTRS NULL

/* Runs `op` on X, W and B (b NULL: no bias), frees them, and checks Y's shape
 * and values. */
static void check(const char *op, d5_tensor x, d5_tensor w, d5_tensor *b, const d5_attrs *attrs,
                  int32_t ndim, const int64_t *shape, const float *want)
{
    d5_tensor in[3] = {x, w, b ? *b : x}, y;
    run_op(op, "ref", in, b ? 3 : 2, attrs, &y, 1);
    cr_assert_eq(y.desc.ndim, ndim, "%s: Y has %d dimensions, want %d", op, y.desc.ndim, ndim);
    int64_t n = 1;
    for (int32_t i = 0; i < ndim; i++) {
        cr_assert_eq(y.desc.shape[i], shape[i], "%s: Y dimension %d is %lld, want %lld", op, i,
                     (long long)y.desc.shape[i], (long long)shape[i]);
        n *= shape[i];
    }
    expect_values(&y, want, n, 1e-5);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    d5_tensor_free(&w);
    if (b) d5_tensor_free(b);
}

/* Runs `op` on X, W (and B), frees them, and expects `status` with `msg` in
 * the error message. */
static void check_error(const char *op, d5_tensor x, d5_tensor w, d5_tensor *b,
                        const d5_attrs *attrs, d5_status status, const char *msg)
{
    d5_tensor in[3] = {x, w, b ? *b : x}, y;
    d5_status s = try_op(op, "ref", in, b ? 3 : 2, attrs, &y, 1);
    if (s == D5_OK) d5_tensor_free(&y);
    cr_assert_eq(s, status, "%s: got %s (%s), want %s", op, d5_status_name(s), d5_last_error(),
                 d5_status_name(status));
    cr_assert(strstr(d5_last_error(), msg), "%s: message '%s' lacks '%s'", op, d5_last_error(),
              msg);
    d5_tensor_free(&x);
    d5_tensor_free(&w);
    if (b) d5_tensor_free(b);
}

/* FLOPs of one forward call and the output shape, from descriptors alone. */
static double flops_of(const char *name, const d5_tensor_desc *in, int32_t nin,
                       const d5_attrs *attrs, d5_tensor_desc *y)
{
    const d5_op_desc *op;
    cr_assert_eq(d5_op_find(name, "ref", &op), D5_OK);
    d5_op *inst;
    cr_assert_eq(d5_op_create_desc(op, in, nin, attrs, 1, &inst), D5_OK, "%s", d5_last_error());
    double flops, bytes;
    d5_op_cost(inst, &flops, &bytes);
    *y = *d5_op_output_desc(inst, 0);
    d5_op_free(inst);
    return flops;
}

/* Two output channels with equal values, as in the ONNX ConvTranspose cases. */
static const float *twice(const float *channel, int64_t n, float *out)
{
    memcpy(out, channel, (size_t)n * sizeof *out);
    memcpy(out + n, channel, (size_t)n * sizeof *out);
    return out;
}

/* ---- Conv -------------------------------------------------------------------------------- */

Test(conv, onnx_cases_padding_strides_and_auto_pad)
{
    /* ONNX: test_basic_conv_with_padding, X = 0..24 (1,1,5,5), W ones (1,1,3,3). */
    check("Conv", ramp(4, SHAPE(1, 1, 5, 5)), ones(4, SHAPE(1, 1, 3, 3)), NULL,
          ATTRS(INTS("kernel_shape", 3, 3), INTS("pads", 1, 1, 1, 1)), 4, SHAPE(1, 1, 5, 5),
          VALS(12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81, 93, 144, 153, 162, 111,
               72, 111, 117, 123, 84));
    /* ONNX: test_basic_conv_without_padding. */
    check("Conv", ramp(4, SHAPE(1, 1, 5, 5)), ones(4, SHAPE(1, 1, 3, 3)), NULL,
          ATTRS(INTS("kernel_shape", 3, 3), INTS("pads", 0, 0, 0, 0)), 4, SHAPE(1, 1, 3, 3),
          VALS(54, 63, 72, 99, 108, 117, 144, 153, 162));
    /* ONNX: test_conv_with_strides_padding, X = 0..34 (1,1,7,5). */
    check("Conv", ramp(4, SHAPE(1, 1, 7, 5)), ones(4, SHAPE(1, 1, 3, 3)), NULL,
          ATTRS(INTS("kernel_shape", 3, 3), INTS("pads", 1, 1, 1, 1), INTS("strides", 2, 2)), 4,
          SHAPE(1, 1, 4, 3), VALS(12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124));
    /* ONNX: test_conv_with_strides_no_padding. */
    check("Conv", ramp(4, SHAPE(1, 1, 7, 5)), ones(4, SHAPE(1, 1, 3, 3)), NULL,
          ATTRS(INTS("kernel_shape", 3, 3), INTS("pads", 0, 0, 0, 0), INTS("strides", 2, 2)), 4,
          SHAPE(1, 1, 3, 2), VALS(54, 72, 144, 162, 234, 252));
    /* ONNX: test_conv_with_strides_and_asymmetric_padding. */
    check("Conv", ramp(4, SHAPE(1, 1, 7, 5)), ones(4, SHAPE(1, 1, 3, 3)), NULL,
          ATTRS(INTS("kernel_shape", 3, 3), INTS("pads", 1, 0, 1, 0), INTS("strides", 2, 2)), 4,
          SHAPE(1, 1, 4, 2), VALS(21, 33, 99, 117, 189, 207, 171, 183));
    /* ONNX: test_conv_with_autopad_same (SAME_LOWER, strides 2). */
    check("Conv", ramp(4, SHAPE(1, 1, 5, 5)), ones(4, SHAPE(1, 1, 3, 3)), NULL,
          ATTRS(attr_string("auto_pad", "SAME_LOWER"), INTS("kernel_shape", 3, 3),
                INTS("strides", 2, 2)),
          4, SHAPE(1, 1, 3, 3), VALS(12, 27, 24, 63, 108, 81, 72, 117, 84));
}

Test(conv, conv1d_with_batch_bias_strides_dilations_and_asymmetric_pads)
{
    /* PyTorch: X pattern (2,3,7) seed 1, W (4,3,3) seed 2, B (4) seed 3. */
    d5_tensor b = pattern(1, SHAPE(4), 3);
    check("Conv", pattern(3, SHAPE(2, 3, 7), 1), pattern(3, SHAPE(4, 3, 3), 2), &b,
          ATTRS(INTS("strides", 2), INTS("dilations", 2), INTS("pads", 2, 1)), 3, SHAPE(2, 4, 3),
          VALS(-0.875, 0.859375, -1.515625, -1.296875, -0.125, 0.625, 0.671875, 0.484375, 1.171875,
               1.046875, -1.296875, 0.921875, -1.203125, -1.5, 0.640625, 0.328125, -0.75, 0, 1.0625,
               -0.265625, 0.421875, 0.203125, 1.015625, -1.28125));
}

Test(conv, grouped_2d)
{
    /* PyTorch: X (1,4,3,4) seed 4, W (6,2,2,3) seed 5, B (6) seed 6, group 2. */
    d5_tensor b = pattern(1, SHAPE(6), 6);
    check("Conv", pattern(4, SHAPE(1, 4, 3, 4), 4), pattern(4, SHAPE(6, 2, 2, 3), 5), &b,
          ATTRS(attr_int("group", 2), INTS("strides", 1, 2), INTS("pads", 1, 0, 0, 1)), 4,
          SHAPE(1, 6, 3, 2),
          VALS(-1.234375, -1.015625, 1.828125, -0.96875, -0.46875, -0.5, -0.328125, -1.140625,
               3.65625, 0.171875, -1.578125, 0.71875, 1.109375, -0.734375, 1.5, 1.84375, -2.15625,
               2.46875, 0.921875, 0.25, 0.953125, -0.234375, -0.0625, 2.59375, -0.078125, -1.5,
               -1.5625, 0.046875, -2.59375, -0.5, 1.046875, -1.125, -1.421875, 2.984375, -2.46875,
               -0.9375));
}

Test(conv, depthwise_2d_with_channel_multiplier)
{
    /* PyTorch: X (1,3,3,3) seed 7, W (6,1,2,2) seed 8, group 3 = C: two filters per channel. */
    check("Conv", pattern(4, SHAPE(1, 3, 3, 3), 7), pattern(4, SHAPE(6, 1, 2, 2), 8), NULL,
          ATTRS(attr_int("group", 3)), 4, SHAPE(1, 6, 2, 2),
          VALS(1.59375, 0.046875, -0.65625, -0.609375, -0.234375, -0.59375, -0.25, 0.984375,
               -0.453125, -0.6875, 0.171875, -0.0625, -0.890625, -0.46875, -0.15625, 0.265625,
               -0.65625, -0.375, 0.984375, -0.328125, -0.5, -1.15625, 0.984375, 0.0625));
}

Test(conv, conv3d)
{
    /* PyTorch: X (1,2,3,3,3) seed 9, W (2,2,2,2,2) seed 10, B (2) seed 11. */
    d5_tensor b = pattern(1, SHAPE(2), 11);
    check("Conv", pattern(5, SHAPE(1, 2, 3, 3, 3), 9), pattern(5, SHAPE(2, 2, 2, 2, 2), 10), &b,
          ATTRS(INTS("strides", 2, 1, 1), INTS("pads", 1, 0, 0, 0, 1, 0)), 5, SHAPE(1, 2, 2, 3, 2),
          VALS(-0.71875, 1.421875, 0.921875, 0.140625, 0.265625, 0.640625, 0.546875, 4.3125,
               -0.109375, -2.453125, -0.203125, 2.015625, 1.765625, -0.140625, 1.09375, 0.78125,
               0.359375, 0.171875, 2.390625, -0.34375, -0.5, -0.3125, 1.6875, 0.65625));
}

Test(conv, auto_pad_same_upper_same_lower_and_valid)
{
    /* PyTorch: X (1,1,6) seed 12, W (1,1,3) seed 13, stride 2: out = ceil(6/2) = 3 and the
     * total padding 2*2 + 3 - 6 = 1 goes to the end (SAME_UPPER) or the start (SAME_LOWER). */
    check("Conv", pattern(3, SHAPE(1, 1, 6), 12), pattern(3, SHAPE(1, 1, 3), 13), NULL,
          ATTRS(attr_string("auto_pad", "SAME_UPPER"), INTS("strides", 2)), 3, SHAPE(1, 1, 3),
          VALS(1.84375, -0.953125, 0.171875));
    check("Conv", pattern(3, SHAPE(1, 1, 6), 12), pattern(3, SHAPE(1, 1, 3), 13), NULL,
          ATTRS(attr_string("auto_pad", "SAME_LOWER"), INTS("strides", 2)), 3, SHAPE(1, 1, 3),
          VALS(-0.15625, 0.046875, -0.625));
    /* VALID: no padding, floor((6 - 3) / 2) + 1 = 2; all-zero pads may come along. */
    check("Conv", pattern(3, SHAPE(1, 1, 6), 12), pattern(3, SHAPE(1, 1, 3), 13), NULL,
          ATTRS(attr_string("auto_pad", "VALID"), INTS("strides", 2), INTS("pads", 0, 0)), 3,
          SHAPE(1, 1, 2), VALS(1.84375, -0.953125));
    /* SAME with dilation 2: the dilated kernel (5) decides the padding, 2 on each side. */
    check("Conv", pattern(3, SHAPE(1, 1, 6), 12), pattern(3, SHAPE(1, 1, 3), 13), NULL,
          ATTRS(attr_string("auto_pad", "SAME_UPPER"), INTS("dilations", 2)), 3, SHAPE(1, 1, 6),
          VALS(1.15625, 1.25, -0.46875, -0.140625, -0.671875, -0.0625));
    /* SAME with a stride larger than the kernel: no padding (never negative), ceil(5/3) = 2
     * outputs. X (1,1,5) seed 14, W (1,1,1) seed 15. */
    check("Conv", pattern(3, SHAPE(1, 1, 5), 14), pattern(3, SHAPE(1, 1, 1), 15), NULL,
          ATTRS(attr_string("auto_pad", "SAME_UPPER"), INTS("strides", 3)), 3, SHAPE(1, 1, 2),
          VALS(0.65625, -0.21875));
}

Test(conv, output_shape_and_flops)
{
    /* (2,6,9,9) * (4,3,3,3), group 2, stride 2, pads 1: 5x5 outputs; flops
     * 2 * N * M * 25 * (C/group) * 9 = 2 * 2 * 4 * 25 * 3 * 9. */
    d5_tensor_desc in[3] = {op_fdesc(4, SHAPE(2, 6, 9, 9)), op_fdesc(4, SHAPE(4, 3, 3, 3)),
                            op_fdesc(1, SHAPE(4))};
    d5_tensor_desc y;
    double flops = flops_of("Conv", in, 3,
                            ATTRS(attr_int("group", 2), INTS("strides", 2, 2),
                                  INTS("pads", 1, 1, 1, 1), INTS("kernel_shape", 3, 3)),
                            &y);
    cr_assert_eq(flops, 10800.0);
    cr_assert_eq(y.ndim, 4);
    cr_assert(y.shape[0] == 2 && y.shape[1] == 4 && y.shape[2] == 5 && y.shape[3] == 5);
    cr_assert_eq(y.dtype, D5_F32);
}

Test(conv, bad_inputs)
{
    check_error("Conv", tf32(2, SHAPE(3, 5), NULL), tf32(2, SHAPE(3, 5), NULL), NULL, NO_ATTRS,
                D5_ERR_SHAPE, "Conv: X has 2 dimensions, expected at least 3");
    check_error("Conv", tf32(4, SHAPE(1, 3, 5, 5), NULL), tf32(3, SHAPE(2, 3, 3), NULL), NULL,
                NO_ATTRS, D5_ERR_SHAPE, "Conv: W has 3 dimensions but X has 4");
    check_error("Conv", tf32(4, SHAPE(1, 3, 5, 5), NULL), tf32(4, SHAPE(2, 2, 3, 3), NULL), NULL,
                NO_ATTRS, D5_ERR_SHAPE,
                "Conv: X has 3 channels but W.shape[1] * group = 2 * 1 = 2");
    check_error("Conv", tf32(4, SHAPE(1, 4, 5, 5), NULL), tf32(4, SHAPE(3, 2, 3, 3), NULL), NULL,
                ATTRS(attr_int("group", 2)), D5_ERR_SHAPE,
                "Conv: W has 3 output channels (W.shape[0]), not a multiple of group 2");
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                ATTRS(INTS("pads", 1, 1)), D5_ERR_INVALID,
                "Conv: pads has 2 values for a 2-d convolution, expected 4");
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                ATTRS(INTS("pads", 0, -1, 0, 0)), D5_ERR_INVALID,
                "Conv: pads[1] is -1, must be >= 0");
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                ATTRS(INTS("strides", 0, 1)), D5_ERR_INVALID,
                "Conv: strides[0] is 0, must be positive");
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                ATTRS(INTS("dilations", 1)), D5_ERR_INVALID,
                "Conv: dilations has 1 value for a 2-d convolution, expected 2");
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                ATTRS(attr_int("strides", 2)), D5_ERR_INVALID,
                "Conv: attribute 'strides' is of type int, expected ints");
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                ATTRS(attr_string("auto_pad", "SAME")), D5_ERR_INVALID,
                "Conv: auto_pad is 'SAME', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                ATTRS(attr_string("auto_pad", "SAME_UPPER"), INTS("pads", 1, 1, 1, 1)),
                D5_ERR_INVALID,
                "Conv: pads cannot be used together with auto_pad SAME_UPPER or SAME_LOWER");
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                ATTRS(INTS("kernel_shape", 3, 2)), D5_ERR_SHAPE,
                "Conv: kernel_shape[1] is 2 but W has shape [1,1,3,3]");
    check_error("Conv", tf32(4, SHAPE(1, 1, 2, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), NULL,
                NO_ATTRS, D5_ERR_SHAPE,
                "Conv: along spatial axis 0 the padded input (0 + 2 + 0) is smaller than the "
                "dilated kernel (3)");
    check_error("Conv", tf32(3, SHAPE(1, 1, 5), NULL), tf32(3, SHAPE(1, 1, 2), NULL), NULL,
                ATTRS(INTS("dilations", 5)), D5_ERR_SHAPE, "dilated kernel (6)");
    d5_tensor b = tf32(1, SHAPE(2), NULL);
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), tf32(4, SHAPE(1, 1, 3, 3), NULL), &b,
                NO_ATTRS, D5_ERR_SHAPE, "Conv: B has shape [2], expected [1]");
    d5_tensor idx = ti64(4, SHAPE(1, 1, 3, 3), NULL);
    check_error("Conv", tf32(4, SHAPE(1, 1, 5, 5), NULL), idx, NULL, NO_ATTRS, D5_ERR_UNSUPPORTED,
                "Conv: input 1 has data type int64");
}

Test(conv, gradient_2d_grouped_strided_dilated_padded)
{
    d5_tensor_desc in[3] = {op_fdesc(4, SHAPE(2, 4, 5, 5)), op_fdesc(4, SHAPE(4, 2, 2, 2)),
                            op_fdesc(1, SHAPE(4))};
    expect_gradient("Conv", in, 3, NULL,
                    ATTRS(attr_int("group", 2), INTS("strides", 2, 1), INTS("dilations", 1, 2),
                          INTS("pads", 1, 0, 0, 1)),
                    1);
}

Test(conv, gradient_1d_same_lower_and_3d_depthwise)
{
    d5_tensor_desc in1[3] = {op_fdesc(3, SHAPE(1, 2, 6)), op_fdesc(3, SHAPE(3, 2, 3)),
                             op_fdesc(1, SHAPE(3))};
    expect_gradient("Conv", in1, 3, NULL,
                    ATTRS(attr_string("auto_pad", "SAME_LOWER"), INTS("strides", 2)), 1);
    d5_tensor_desc in3[2] = {op_fdesc(5, SHAPE(1, 2, 3, 3, 3)), op_fdesc(5, SHAPE(2, 1, 2, 2, 2))};
    expect_gradient(
        "Conv", in3, 2, NULL,
        ATTRS(attr_int("group", 2), INTS("strides", 2, 2, 2), INTS("pads", 1, 1, 1, 1, 1, 1)), 1);
}

/* ---- ConvTranspose ------------------------------------------------------------------------ */

/* The ONNX cases' X: 0..8 as (1,1,3,3), and W: ones (1,2,3,3). */
#define ONNX_X ramp(4, SHAPE(1, 1, 3, 3))
#define ONNX_W ones(4, SHAPE(1, 2, 3, 3))

Test(convtranspose, onnx_cases)
{
    float buf[160];
    /* ONNX: test_convtranspose. */
    check("ConvTranspose", ONNX_X, ONNX_W, NULL, NO_ATTRS, 4, SHAPE(1, 2, 5, 5),
          twice(VALS(0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13,
                     21, 15, 8),
                25, buf));
    /* ONNX: test_convtranspose_1d. */
    check("ConvTranspose", ramp(3, SHAPE(1, 1, 3)), ones(3, SHAPE(1, 2, 3)), NULL, NO_ATTRS, 3,
          SHAPE(1, 2, 5), VALS(0, 1, 3, 3, 2, 0, 1, 3, 3, 2));
    /* ONNX: test_convtranspose_output_shape, test_convtranspose_pad and
     * test_convtranspose_kernel_shape: three ways to the same (1,2,10,8). */
    const float *y10x8 = twice(VALS(0, 0, 1, 1, 3, 2, 2, 0, 0, 0, 1, 1, 3, 2, 2, 0, 0, 0, 1, 1, 3,
                                    2, 2, 0, 3, 3, 7, 4, 9, 5, 5, 0, 3, 3, 7, 4, 9, 5, 5, 0, 3, 3,
                                    7, 4, 9, 5, 5, 0, 6, 6, 13, 7, 15, 8, 8, 0, 6, 6, 13, 7, 15, 8,
                                    8, 0, 6, 6, 13, 7, 15, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                               80, buf);
    check("ConvTranspose", ONNX_X, ONNX_W, NULL,
          ATTRS(INTS("strides", 3, 2), INTS("output_shape", 10, 8)), 4, SHAPE(1, 2, 10, 8), y10x8);
    check("ConvTranspose", ONNX_X, ONNX_W, NULL,
          ATTRS(INTS("strides", 3, 2), INTS("output_padding", 1, 1)), 4, SHAPE(1, 2, 10, 8), y10x8);
    check("ConvTranspose", ONNX_X, ONNX_W, NULL,
          ATTRS(INTS("strides", 3, 2), INTS("output_shape", 10, 8), INTS("kernel_shape", 3, 3),
                INTS("output_padding", 1, 1)),
          4, SHAPE(1, 2, 10, 8), y10x8);
    /* ONNX: test_convtranspose_pads. */
    check("ConvTranspose", ONNX_X, ONNX_W, NULL,
          ATTRS(INTS("strides", 3, 2), INTS("pads", 1, 2, 1, 2)), 4, SHAPE(1, 2, 7, 3),
          twice(VALS(1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15), 21, buf));
    /* ONNX: test_convtranspose_dilations. */
    check("ConvTranspose", tf32(4, SHAPE(1, 1, 3, 3), VALS(3, 8, 1, 9, 5, 7, 3, 2, 6)),
          tf32(4, SHAPE(1, 1, 2, 2), VALS(7, 2, 1, 9)), NULL, ATTRS(INTS("dilations", 2, 2)), 4,
          SHAPE(1, 1, 5, 5),
          VALS(21, 56, 13, 16, 2, 63, 35, 67, 10, 14, 24, 22, 76, 76, 21, 9, 5, 88, 45, 63, 3, 2,
               33, 18, 54));
    /* ONNX: test_convtranspose_autopad_same (SAME_UPPER, strides 2: total padding 1, at the end).
     */
    check("ConvTranspose", ONNX_X, ONNX_W, NULL,
          ATTRS(attr_string("auto_pad", "SAME_UPPER"), INTS("strides", 2, 2)), 4, SHAPE(1, 2, 6, 6),
          twice(VALS(0, 0, 1, 1, 3, 2, 0, 0, 1, 1, 3, 2, 3, 3, 8, 5, 12, 7, 3, 3, 7, 4, 9, 5, 9, 9,
                     20, 11, 24, 13, 6, 6, 13, 7, 15, 8),
                36, buf));
}

Test(convtranspose, grouped_2d_with_pads_output_padding_and_bias)
{
    /* PyTorch: X (1,4,2,3) seed 20, W (4,1,3,2) seed 21, B (2) seed 22, group 2 (M = 2). The
     * last row comes from output_padding alone: only the bias. */
    d5_tensor b = pattern(1, SHAPE(2), 22);
    check("ConvTranspose", pattern(4, SHAPE(1, 4, 2, 3), 20), pattern(4, SHAPE(4, 1, 3, 2), 21), &b,
          ATTRS(attr_int("group", 2), INTS("strides", 2, 1), INTS("pads", 1, 0, 0, 1),
                INTS("output_padding", 1, 0)),
          4, SHAPE(1, 2, 5, 3),
          VALS(-0.71875, -1.25, -0.5, -0.984375, -0.59375, 0.375, -0.015625, 1, 0.421875, -0.5,
               -1.265625, -1.78125, -0.375, -0.375, -0.375, -0.34375, -0.5, 0.625, 0.21875,
               0.859375, -0.875, 0.921875, 0.484375, -2.375, -1.3125, 0.828125, 1.75, 0, 0, 0));
}

Test(convtranspose, output_shape_decides_the_pads)
{
    /* PyTorch: X (1,1,4) seed 23, W (1,1,3) seed 24, stride 2: the full result has 9 elements.
     * output_shape 6: total padding 3; NOTSET puts the larger half (2) at the start,
     * SAME_UPPER at the end. */
    check("ConvTranspose", pattern(3, SHAPE(1, 1, 4), 23), pattern(3, SHAPE(1, 1, 3), 24), NULL,
          ATTRS(INTS("strides", 2), INTS("output_shape", 6)), 3, SHAPE(1, 1, 6),
          VALS(-0.171875, 0.03125, 0.015625, 0.125, 0.203125, 0.21875));
    check("ConvTranspose", pattern(3, SHAPE(1, 1, 4), 23), pattern(3, SHAPE(1, 1, 3), 24), NULL,
          ATTRS(attr_string("auto_pad", "SAME_UPPER"), INTS("strides", 2), INTS("output_shape", 6)),
          3, SHAPE(1, 1, 6), VALS(-0.0625, -0.171875, 0.03125, 0.015625, 0.125, 0.203125));
    /* output_padding joins the total (9 + 1 - 8 = 2, one each side); explicit pads are ignored. */
    check("ConvTranspose", pattern(3, SHAPE(1, 1, 4), 23), pattern(3, SHAPE(1, 1, 3), 24), NULL,
          ATTRS(INTS("strides", 2), INTS("output_shape", 8), INTS("output_padding", 1),
                INTS("pads", 3, 3)),
          3, SHAPE(1, 1, 8),
          VALS(-0.0625, -0.171875, 0.03125, 0.015625, 0.125, 0.203125, 0.21875, 0.546875));
    /* output_shape 12 > 9: total -3, pads floor(-3/2) = -2 and -1 (the spec's formulas with
     * floor division), so the full result is surrounded by zeros. */
    check("ConvTranspose", pattern(3, SHAPE(1, 1, 4), 23), pattern(3, SHAPE(1, 1, 3), 24), NULL,
          ATTRS(INTS("strides", 2), INTS("output_shape", 12)), 3, SHAPE(1, 1, 12),
          VALS(0, 0.03125, -0.0625, -0.171875, 0.03125, 0.015625, 0.125, 0.203125, 0.21875,
               0.546875, 0, 0));
    check(
        "ConvTranspose", pattern(3, SHAPE(1, 1, 4), 23), pattern(3, SHAPE(1, 1, 3), 24), NULL,
        ATTRS(attr_string("auto_pad", "SAME_UPPER"), INTS("strides", 2), INTS("output_shape", 12)),
        3, SHAPE(1, 1, 12),
        VALS(0, 0, 0.03125, -0.0625, -0.171875, 0.03125, 0.015625, 0.125, 0.203125, 0.21875,
             0.546875, 0));
}

Test(convtranspose, auto_pad_and_valid)
{
    /* PyTorch: X (1,1,3) seed 25, W (1,1,3) seed 24, stride 2: out = 3 * 2 = 6 from a full
     * result of 7; the extra element is cut at the end (SAME_UPPER) or the start (SAME_LOWER). */
    check("ConvTranspose", pattern(3, SHAPE(1, 1, 3), 25), pattern(3, SHAPE(1, 1, 3), 24), NULL,
          ATTRS(attr_string("auto_pad", "SAME_UPPER"), INTS("strides", 2)), 3, SHAPE(1, 1, 6),
          VALS(0, 0, -0.046875, 0.09375, 0.140625, 0.1875));
    check("ConvTranspose", pattern(3, SHAPE(1, 1, 3), 25), pattern(3, SHAPE(1, 1, 3), 24), NULL,
          ATTRS(attr_string("auto_pad", "SAME_LOWER"), INTS("strides", 2)), 3, SHAPE(1, 1, 6),
          VALS(0, -0.046875, 0.09375, 0.140625, 0.1875, 0.46875));
    /* VALID: the full result plus output_padding (a zero). */
    check("ConvTranspose", pattern(3, SHAPE(1, 1, 3), 25), pattern(3, SHAPE(1, 1, 3), 24), NULL,
          ATTRS(attr_string("auto_pad", "VALID"), INTS("strides", 2), INTS("output_padding", 1)), 3,
          SHAPE(1, 1, 8), VALS(0, 0, -0.046875, 0.09375, 0.140625, 0.1875, 0.46875, 0));
}

Test(convtranspose, conv_transpose_3d)
{
    /* PyTorch: X (1,2,2,2,2) seed 26, W (2,1,2,2,2) seed 27, B (1) seed 28. */
    d5_tensor b = pattern(1, SHAPE(1), 28);
    check(
        "ConvTranspose", pattern(5, SHAPE(1, 2, 2, 2, 2), 26), pattern(5, SHAPE(2, 1, 2, 2, 2), 27),
        &b,
        ATTRS(INTS("strides", 2, 1, 1), INTS("pads", 0, 1, 0, 0, 0, 1), INTS("dilations", 1, 1, 2)),
        5, SHAPE(1, 1, 4, 2, 3),
        VALS(0.84375, 0.84375, 1.1875, 1.34375, -0.5, -0.328125, -0.96875, 1.546875, -0.359375,
             1.03125, 0.046875, 1.21875, 0.84375, 0.84375, 1.578125, 0.875, 1.15625, 0.0625,
             -0.734375, -0.875, -1.0625, 1.34375, 1.15625, 1.0625));
}

Test(convtranspose, output_shape_and_flops)
{
    /* (2,4,3,3) through (4,3,2,2), group 2: M = 3 * 2 = 6, out 2 * (3 - 1) + 2 = 6; flops
     * 2 * N * C * 9 * (M/group) * 4 = 2 * 2 * 4 * 9 * 3 * 4. */
    d5_tensor_desc in[2] = {op_fdesc(4, SHAPE(2, 4, 3, 3)), op_fdesc(4, SHAPE(4, 3, 2, 2))};
    d5_tensor_desc y;
    double flops =
        flops_of("ConvTranspose", in, 2, ATTRS(attr_int("group", 2), INTS("strides", 2, 2)), &y);
    cr_assert_eq(flops, 1728.0);
    cr_assert_eq(y.ndim, 4);
    cr_assert(y.shape[0] == 2 && y.shape[1] == 6 && y.shape[2] == 6 && y.shape[3] == 6);
}

Test(convtranspose, bad_inputs)
{
    check_error("ConvTranspose", tf32(4, SHAPE(1, 2, 3, 3), NULL), tf32(4, SHAPE(3, 1, 2, 2), NULL),
                NULL, NO_ATTRS, D5_ERR_SHAPE,
                "ConvTranspose: X has 2 channels but W.shape[0] is 3");
    check_error("ConvTranspose", tf32(4, SHAPE(1, 3, 3, 3), NULL), tf32(4, SHAPE(3, 1, 2, 2), NULL),
                NULL, ATTRS(attr_int("group", 2)), D5_ERR_SHAPE,
                "ConvTranspose: X has 3 channels, not a multiple of group 2");
    check_error("ConvTranspose", tf32(4, SHAPE(1, 1, 3, 3), NULL), tf32(4, SHAPE(1, 1, 2, 2), NULL),
                NULL, ATTRS(INTS("strides", 2, 2), INTS("output_padding", 0, 2)), D5_ERR_INVALID,
                "ConvTranspose: output_padding[1] is 2, must be less than the stride (2) or the "
                "dilation (1)");
    check_error("ConvTranspose", tf32(4, SHAPE(1, 1, 3, 3), NULL), tf32(4, SHAPE(1, 1, 2, 2), NULL),
                NULL, ATTRS(INTS("output_shape", 1, 6, 6)), D5_ERR_INVALID,
                "ConvTranspose: output_shape has 3 values for a 2-d convolution, expected 2");
    check_error("ConvTranspose", tf32(4, SHAPE(1, 1, 3, 3), NULL), tf32(4, SHAPE(1, 1, 2, 2), NULL),
                NULL, ATTRS(INTS("pads", 2, 0, 2, 0)), D5_ERR_SHAPE,
                "ConvTranspose: along spatial axis 0 the output size would be 0 (full size 4 less "
                "pads 2 and 2)");
    check_error("ConvTranspose", tf32(4, SHAPE(1, 1, 3, 3), NULL), tf32(4, SHAPE(1, 1, 2, 2), NULL),
                NULL, ATTRS(attr_string("auto_pad", "VALID"), INTS("pads", 1, 0, 0, 0)),
                D5_ERR_INVALID, "ConvTranspose: pads cannot be used together with auto_pad VALID");
    d5_tensor b = tf32(1, SHAPE(3), NULL);
    check_error("ConvTranspose", tf32(4, SHAPE(1, 2, 3, 3), NULL), tf32(4, SHAPE(2, 2, 2, 2), NULL),
                &b, ATTRS(attr_int("group", 2)), D5_ERR_SHAPE,
                "ConvTranspose: B has shape [3], expected [4]");
}

Test(convtranspose, gradient_2d_grouped_with_pads_and_output_padding)
{
    d5_tensor_desc in[3] = {op_fdesc(4, SHAPE(1, 4, 3, 3)), op_fdesc(4, SHAPE(4, 2, 3, 2)),
                            op_fdesc(1, SHAPE(4))};
    expect_gradient("ConvTranspose", in, 3, NULL,
                    ATTRS(attr_int("group", 2), INTS("strides", 2, 1), INTS("pads", 1, 0, 0, 1),
                          INTS("output_padding", 1, 0), INTS("dilations", 1, 2)),
                    1);
}

Test(convtranspose, gradient_1d_output_shape_and_3d)
{
    d5_tensor_desc in1[3] = {op_fdesc(3, SHAPE(2, 2, 4)), op_fdesc(3, SHAPE(2, 3, 3)),
                             op_fdesc(1, SHAPE(3))};
    expect_gradient("ConvTranspose", in1, 3, NULL,
                    ATTRS(INTS("strides", 2), INTS("output_shape", 8)), 1);
    d5_tensor_desc in3[2] = {op_fdesc(5, SHAPE(1, 2, 2, 2, 2)), op_fdesc(5, SHAPE(2, 1, 2, 2, 2))};
    expect_gradient("ConvTranspose", in3, 2, NULL,
                    ATTRS(INTS("strides", 2, 1, 2), INTS("pads", 1, 0, 0, 0, 1, 1)), 1);
}
