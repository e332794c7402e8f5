/* Reference operators of the nn2 group: Erf, Gelu, HardSigmoid,
 * LayerNormalization, Resize.
 *
 * Expected numbers were computed offline with Debian's python3 (numpy 1.24,
 * torch 1.13, onnx 1.12) and pasted here: Erf with math.erf; Gelu with
 * torch.nn.functional.gelu (approximate 'none' and 'tanh'); HardSigmoid with
 * numpy.clip(alpha * x + beta, 0, 1); LayerNormalization with
 * torch.nn.functional.layer_norm in float64 (Scale expanded to the normalized
 * shape for torch), Mean and InvStdDev with numpy, and the gradients with torch
 * autograd of sum(W * Y); Resize with torch.nn.functional.interpolate where
 * torch has the mode (nearest = asymmetric + floor, nearest-exact = half_pixel +
 * round_prefer_ceil, bilinear/trilinear with align_corners True = align_corners
 * and False = half_pixel / pytorch_half_pixel, gradients by autograd) and
 * otherwise with the numpy implementation interpolate_nd that ships with onnx's
 * backend test cases (onnx/backend/test/case/node/resize.py). Two Resize cases
 * are the ONNX conformance tests' own data (libonnx-testdata). */
#include "op_support.h"

#include <criterion/criterion.h>
#include <string.h>

/* An omitted optional input. */
static d5_tensor omitted(void)
{
    d5_tensor t;
    memset(&t, 0, sizeof t);
    return t;
}

/* Creates the ref operator with every input's values known at create (as an
 * executor does for initializers and constants, float ones included: Resize's
 * scales), runs forward into freshly allocated outputs, and, when gout is not
 * NULL, backward into gin (allocated for inputs 0..ngin-1). */
static d5_status run_known(const char *name, const d5_tensor *in, int32_t nin,
                           const d5_attrs *attrs, d5_tensor *out, int32_t nout,
                           const d5_tensor *gout, d5_tensor *gin, int32_t ngin)
{
    const d5_op_desc *desc;
    d5_status s = d5_op_find(name, "ref", &desc);
    if (s != D5_OK) return s;
    d5_op *op;
    s = d5_op_create(desc, in, nin, attrs, nout, &op);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < nout; i++)
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, i), &out[i]), D5_OK);
    s = d5_op_forward(op, in, out);
    if (s == D5_OK && gout) {
        d5_tensor g[4];
        for (int32_t i = 0; i < nin; i++) {
            g[i] = omitted();
            if (i < ngin) cr_assert_eq(d5_tensor_alloc(&in[i].desc, &gin[i]), D5_OK);
            if (i < ngin) g[i] = gin[i];
        }
        s = d5_op_backward(op, gout, in, out, g);
    }
    d5_op_free(op);
    if (s != D5_OK) op_free_all(out, nout);
    return s;
}

static void expect_failure(const char *name, const d5_tensor *in, int32_t nin,
                           const d5_attrs *attrs, int known, d5_status want, const char *msg)
{
    d5_tensor y[3];
    d5_status s = known ? run_known(name, in, nin, attrs, y, 1, NULL, NULL, 0)
                        : try_op(name, "ref", in, nin, attrs, y, 1);
    if (s == D5_OK) op_free_all(y, 1);
    cr_assert_eq(s, want, "%s: got %s: %s", name, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), msg), "message '%s' lacks '%s'", d5_last_error(), msg);
}

/* ---- Erf, Gelu, HardSigmoid ------------------------------------------------------- */

#define ACTIVATION_INPUTS VALS(-2.5, -1.2, -0.7, -0.1, 0, 0.3, 1.2, 2.5)

Test(erf, values_and_gradient)
{
    d5_tensor x = tf32(1, SHAPE(8), ACTIVATION_INPUTS);
    expect_op_values("Erf", &x, 1, NULL,
                     VALS(-0.99959305f, -0.91031398f, -0.67780119f, -0.11246292f, 0.0f, 0.32862676f,
                          0.91031398f, 0.99959305f),
                     8, 1e-6);
    d5_tensor_free(&x);
    d5_tensor_desc d = op_fdesc(2, SHAPE(3, 5));
    expect_gradient("Erf", &d, 1, NULL, NULL, 1);
}

Test(gelu, exact_and_tanh_values_and_gradients)
{
    d5_tensor x = tf32(1, SHAPE(8), ACTIVATION_INPUTS);
    expect_op_values("Gelu", &x, 1, NULL,
                     VALS(-0.015524163f, -0.1380836f, -0.16937456f, -0.046017216f, 0.0f,
                          0.18537343f, 1.0619164f, 2.4844758f),
                     8, 1e-6);
    d5_attr tanh_item = attr_string("approximate", "tanh");
    d5_attrs tanh_attrs = {&tanh_item, 1};
    expect_op_values("Gelu", &x, 1, &tanh_attrs,
                     VALS(-0.015084266f, -0.13829723f, -0.16942987f, -0.046017249f, 0.0f,
                          0.18537092f, 1.0617028f, 2.4849157f),
                     8, 1e-6);
    d5_tensor_free(&x);
    /* Inputs in [-3, 3] reach the tails of both forms. */
    d5_tensor wide = tf32(1, SHAPE(8), VALS(-3, -2, -1.5, -0.5, 0.25, 1, 2, 3));
    d5_tensor_desc d = op_fdesc(1, SHAPE(8));
    expect_gradient("Gelu", &d, 1, &wide, NULL, 1);
    expect_gradient("Gelu", &d, 1, &wide, &tanh_attrs, 1);
    d = op_fdesc(2, SHAPE(4, 3));
    expect_gradient("Gelu", &d, 1, NULL, &tanh_attrs, 1);
    d5_tensor_free(&wide);
}

Test(gelu, unknown_approximation_is_invalid)
{
    d5_tensor x = tf32(1, SHAPE(2), VALS(1, 2));
    d5_attr item = attr_string("approximate", "erf");
    d5_attrs attrs = {&item, 1};
    expect_failure("Gelu", &x, 1, &attrs, 0, D5_ERR_INVALID, "approximate is 'erf'");
    d5_tensor_free(&x);
}

Test(hardsigmoid, defaults_custom_attributes_and_gradient)
{
    d5_tensor x = tf32(1, SHAPE(8), VALS(-4, -2.5, -1, -0.1, 0, 0.7, 2.4, 3));
    expect_op_values("HardSigmoid", &x, 1, NULL,
                     VALS(0.0f, 0.0f, 0.3f, 0.48f, 0.5f, 0.64f, 0.98f, 1.0f), 8, 1e-6);
    d5_attr items[] = {attr_float("alpha", 0.9), attr_float("beta", 0.4)};
    d5_attrs attrs = {items, 2};
    expect_op_values("HardSigmoid", &x, 1, &attrs,
                     VALS(0.0f, 0.0f, 0.0f, 0.31f, 0.4f, 1.0f, 1.0f, 1.0f), 8, 1e-6);
    d5_tensor_free(&x);
    /* alpha 0.9, beta 0.4 on [-1, 1]: both flat parts and the slope are hit. */
    d5_tensor_desc d = op_fdesc(2, SHAPE(4, 5));
    expect_gradient("HardSigmoid", &d, 1, NULL, &attrs, 1);
    expect_gradient("HardSigmoid", &d, 1, NULL, NULL, 1);
}

/* ---- LayerNormalization ------------------------------------------------------------ */

/* X[2, 3, 4] = ((7 i) mod 11) / 4 - 1.2 in float32. */
static d5_tensor ln_input(void)
{
    d5_tensor x = tf32(3, SHAPE(2, 3, 4), NULL);
    for (int64_t i = 0; i < 24; i++)
        ((float *)x.data)[i] = (float)((double)((i * 7) % 11) / 4.0 - 1.2);
    return x;
}

Test(layernormalization, last_axis_with_bias_mean_and_invstddev)
{
    d5_tensor in[3] = {ln_input(), tf32(1, SHAPE(4), VALS(0.5, -1, 1.5, 2)),
                       tf32(1, SHAPE(4), VALS(0.1, 0.2, -0.3, 0))};
    d5_tensor y[3];
    run_op("LayerNormalization", "ref", in, 3, NULL, y, 3);
    op_expect_shape(&y[0], 3, SHAPE(2, 3, 4));
    op_expect_shape(&y[1], 3, SHAPE(2, 3, 1));
    op_expect_shape(&y[2], 3, SHAPE(2, 3, 1));
    expect_values(&y[0],
                  VALS(-0.55652856f, -0.32522286f, -1.0878342f, 2.6261141f, 0.19999874f, 1.5999821f,
                       1.7999731f, -0.39999487f, -0.26144569f, -1.3261041f, 0.061445702f,
                       -2.0883531f, 0.19999874f, 1.5999821f, 1.7999731f, -0.39999485f, -0.26144571f,
                       -1.3261041f, 0.061445725f, -2.088353f, 0.62208825f, 0.4409638f, -2.5891562f,
                       1.4457829f),
                  24, 2e-5);
    expect_values(
        &y[1], VALS(0.049999982f, 0.17499999f, -0.38750001f, 0.425f, -0.13750001f, -0.012500007f),
        6, 1e-6);
    expect_values(&y[2],
                  VALS(1.0504457f, 1.5999796f, 1.2851403f, 1.5999796f, 1.2851404f, 1.2851403f), 6,
                  1e-5);
    op_free_all(y, 3);
    op_free_all(in, 3);
}

Test(layernormalization, axis_one_broadcast_scale_no_bias_epsilon)
{
    /* Normalised over [3, 4]; Scale [4] broadcasts across the 3 rows. */
    d5_tensor in[2] = {ln_input(), tf32(1, SHAPE(4), VALS(1, 2, -0.5, 0.25))};
    d5_tensor y[3];
    d5_attr items[] = {attr_int("axis", 1), attr_float("epsilon", 1e-3)};
    d5_attrs attrs = {items, 2};
    run_op("LayerNormalization", "ref", in, 2, &attrs, y, 3);
    op_expect_shape(&y[1], 3, SHAPE(2, 1, 1));
    expect_values(&y[0],
                  VALS(-1.37616f, 1.4512232f, 0.23770033f, 0.40659269f, 0.42535854f, -1.5513075f,
                       -0.66305884f, 0.031276365f, -1.0759068f, 2.0517294f, 0.087573808f,
                       -0.34403999f, 0.59518096f, -1.4067913f, -0.78455666f, 0.067634203f,
                       -1.0280398f, 2.4889384f, 0.027053675f, -0.33817098f, 0.91982511f,
                       -0.75750301f, 0.83866408f, 0.14879524f),
                  24, 2e-5);
    expect_values(&y[1], VALS(-0.054166677f, 0.091666662f), 2, 1e-6);
    expect_values(&y[2], VALS(1.2010123f, 1.2985766f), 2, 1e-5);
    op_free_all(y, 3);
    op_free_all(in, 2);
}

Test(layernormalization, backward_matches_torch_autograd)
{
    d5_tensor in[3] = {ln_input(), tf32(1, SHAPE(4), VALS(0.5, -1, 1.5, 2)),
                       tf32(1, SHAPE(4), VALS(0.1, 0.2, -0.3, 0))};
    d5_tensor w = tf32(3, SHAPE(2, 3, 4), NULL), y, g[3];
    for (int64_t i = 0; i < 24; i++)
        ((float *)w.data)[i] = (float)((double)((i * 5) % 7) / 3.0 - 1.0);
    cr_assert_eq(run_known("LayerNormalization", in, 3, NULL, &y, 1, &w, g, 3), D5_OK, "%s",
                 d5_last_error());
    expect_values(&g[0],
                  VALS(-0.36674493f, 0.15545169f, 0.4573083f, -0.24601507f, 1.7119787f, 0.54932251f,
                       -0.015995985f, -2.2453052f, -0.59695851f, 0.83186572f, -1.5145342f,
                       1.279627f, 0.35732307f, -1.1679449f, -0.96536121f, 1.7759831f, -0.75174063f,
                       -0.38830032f, 0.96454707f, 0.17549388f, -0.1520166f, 0.54584164f,
                       -0.25563046f, -0.13819457f),
                  24, 5e-5);
    expect_values(&g[1], VALS(0.74973399f, -0.42629037f, -2.8037242f, -2.2009409f), 4, 2e-5);
    expect_values(&g[2], VALS(0.66666667f, -1.0f, -0.33333333f, 0.33333333f), 4, 1e-5);
    op_free_all(g, 3);
    d5_tensor_free(&y);
    d5_tensor_free(&w);
    op_free_all(in, 3);
}

Test(layernormalization, gradients_of_all_inputs_and_outputs)
{
    d5_tensor_desc d[3] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(1, SHAPE(4)),
                           op_fdesc(1, SHAPE(4))};
    expect_gradient("LayerNormalization", d, 3, NULL, NULL, 3);
    expect_gradient("LayerNormalization", d, 3, NULL, NULL, 1);
    d5_attr item = attr_int("axis", -2);
    d5_attrs attrs = {&item, 1};
    d5_tensor_desc b[3] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(2, SHAPE(1, 4)),
                           op_fdesc(2, SHAPE(3, 1))};
    expect_gradient("LayerNormalization", b, 3, NULL, &attrs, 3);
    expect_gradient("LayerNormalization", b, 2, NULL, &attrs, 2);
}

Test(layernormalization, errors_name_the_input_and_axis)
{
    d5_tensor in[2] = {ln_input(), tf32(1, SHAPE(3), VALS(1, 2, 3))};
    expect_failure("LayerNormalization", in, 2, NULL, 0, D5_ERR_SHAPE,
                   "Scale has shape [3], which does not broadcast to [4]");
    d5_attr item = attr_int("axis", 3);
    d5_attrs attrs = {&item, 1};
    expect_failure("LayerNormalization", in, 2, &attrs, 0, D5_ERR_INVALID, "axis 3");
    op_free_all(in, 2);
}

/* ---- Resize ---------------------------------------------------------------------- */

/* X[1, 1, 3, 4] = ((5 i) mod 12) / 2 - 1:
 *   -1  1.5  4    0.5
 *    3 -0.5  2    4.5
 *    1  3.5  0    2.5 */
static d5_tensor rs_input(void)
{
    return tf32(4, SHAPE(1, 1, 3, 4), VALS(-1, 1.5, 4, 0.5, 3, -0.5, 2, 4.5, 1, 3.5, 0, 2.5));
}

/* Runs Resize on X with the given 4 sizes (roi and scales omitted) and checks
 * the output shape [1, 1, h, w] and values. */
static void resize_sizes(const d5_attrs *attrs, int64_t h, int64_t w, const float *want, double tol)
{
    d5_tensor in[4] = {rs_input(), omitted(), omitted(), ti64(1, SHAPE(4), IVALS(1, 1, h, w))};
    d5_tensor y;
    run_op("Resize", "ref", in, 4, attrs, &y, 1);
    op_expect_shape(&y, 4, SHAPE(1, 1, h, w));
    expect_values(&y, want, h * w, tol);
    d5_tensor_free(&y);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[3]);
}

/* The same with constant float scales (roi omitted). */
static void resize_scales(const d5_tensor *x, const d5_attrs *attrs, const float *scales,
                          const int64_t *shape, const float *want, double tol)
{
    d5_tensor in[3] = {*x, omitted(), tf32(1, SHAPE(4), scales)}, y;
    cr_assert_eq(run_known("Resize", in, 3, attrs, &y, 1, NULL, NULL, 0), D5_OK, "%s",
                 d5_last_error());
    op_expect_shape(&y, 4, shape);
    expect_values(&y, want, d5_tensor_desc_numel(&y.desc), tol);
    d5_tensor_free(&y);
    d5_tensor_free(&in[2]);
}

Test(resize, nearest_modes_against_torch_and_onnx)
{
    /* Defaults: half_pixel, round_prefer_floor (onnx's interpolate_nd). */
    resize_sizes(NULL, 5, 7,
                 VALS(-1, -1, 1.5, 1.5, 4, 0.5, 0.5, -1, -1, 1.5, 1.5, 4, 0.5, 0.5, 3, 3, -0.5,
                      -0.5, 2, 4.5, 4.5, 1, 1, 3.5, 3.5, 0, 2.5, 2.5, 1, 1, 3.5, 3.5, 0, 2.5, 2.5),
                 0);
    /* torch 'nearest': asymmetric + floor. */
    d5_attr items[] = {attr_string("coordinate_transformation_mode", "asymmetric"),
                       attr_string("nearest_mode", "floor")};
    d5_attrs attrs = {items, 2};
    resize_sizes(&attrs, 5, 7,
                 VALS(-1, -1, 1.5, 1.5, 4, 4, 0.5, -1, -1, 1.5, 1.5, 4, 4, 0.5, 3, 3, -0.5, -0.5, 2,
                      2, 4.5, 3, 3, -0.5, -0.5, 2, 2, 4.5, 1, 1, 3.5, 3.5, 0, 0, 2.5),
                 0);
    /* torch 'nearest-exact': half_pixel + round_prefer_ceil. */
    items[0] = attr_string("coordinate_transformation_mode", "half_pixel");
    items[1] = attr_string("nearest_mode", "round_prefer_ceil");
    resize_sizes(&attrs, 5, 7,
                 VALS(-1, -1, 1.5, 4, 4, 0.5, 0.5, -1, -1, 1.5, 4, 4, 0.5, 0.5, 3, 3, -0.5, 2, 2,
                      4.5, 4.5, 1, 1, 3.5, 0, 0, 2.5, 2.5, 1, 1, 3.5, 0, 0, 2.5, 2.5),
                 0);
    /* ceil + asymmetric from scales [1, 1, 1.7, 0.8] (onnx's interpolate_nd):
     * 3 x 4 -> floor(5.1) x floor(3.2). */
    d5_tensor x = rs_input();
    items[0] = attr_string("coordinate_transformation_mode", "asymmetric");
    items[1] = attr_string("nearest_mode", "ceil");
    resize_scales(&x, &attrs, VALS(1, 1, 1.7f, 0.8f), SHAPE(1, 1, 5, 3),
                  VALS(-1, 4, 0.5, 3, 2, 4.5, 1, 0, 2.5, 1, 0, 2.5, 1, 0, 2.5), 0);
    /* Upsampling by 2 with round_prefer_ceil (onnx's interpolate_nd). */
    items[0] = attr_string("coordinate_transformation_mode", "half_pixel");
    items[1] = attr_string("nearest_mode", "round_prefer_ceil");
    resize_scales(&x, &attrs, VALS(1, 1, 2, 2), SHAPE(1, 1, 6, 8),
                  VALS(-1, -1, 1.5, 1.5, 4, 4, 0.5, 0.5, -1, -1, 1.5, 1.5, 4, 4, 0.5, 0.5, 3, 3,
                       -0.5, -0.5, 2, 2, 4.5, 4.5, 3, 3, -0.5, -0.5, 2, 2, 4.5, 4.5, 1, 1, 3.5, 3.5,
                       0, 0, 2.5, 2.5, 1, 1, 3.5, 3.5, 0, 0, 2.5, 2.5),
                  0);
    d5_tensor_free(&x);
}

Test(resize, onnx_conformance_cases)
{
    /* test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn (opset 11, where
     * scales is an empty tensor) and test_resize_downsample_sizes_linear_pytorch_half_pixel
     * (an output of width 1), inputs and outputs from libonnx-testdata. */
    d5_tensor x =
        tf32(4, SHAPE(1, 1, 4, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
    d5_tensor empty = tf32(1, SHAPE(0), NULL), y;
    d5_tensor in[4] = {x, empty, empty, ti64(1, SHAPE(4), IVALS(1, 1, 3, 2))};
    d5_attr items[] = {attr_string("coordinate_transformation_mode", "tf_half_pixel_for_nn"),
                       attr_int("__opset", 11)};
    d5_attrs attrs = {items, 2};
    cr_assert_eq(run_known("Resize", in, 4, &attrs, &y, 1, NULL, NULL, 0), D5_OK, "%s",
                 d5_last_error());
    expect_values(&y, VALS(6, 8, 10, 12, 14, 16), 6, 0);
    d5_tensor_free(&y);
    d5_tensor_free(&in[3]);
    in[1] = in[2] = omitted();
    in[3] = ti64(1, SHAPE(4), IVALS(1, 1, 3, 1));
    items[0] = attr_string("coordinate_transformation_mode", "pytorch_half_pixel");
    items[1] = attr_string("mode", "linear");
    expect_op_values("Resize", in, 4, &attrs, VALS(1.6666666f, 7, 12.333333f), 3, 1e-6);
    d5_tensor_free(&in[3]);
    d5_tensor_free(&empty);
    d5_tensor_free(&x);
}

Test(resize, linear_modes_against_torch_and_onnx)
{
    d5_attr items[] = {attr_string("mode", "linear"),
                       attr_string("coordinate_transformation_mode", "align_corners")};
    d5_attrs attrs = {items, 2};
    /* torch bilinear, align_corners=True. */
    resize_sizes(&attrs, 5, 7,
                 VALS(-1, 0.25, 1.5, 2.75, 4, 2.25, 0.5, 1, 0.75, 0.5, 1.75, 3, 2.75, 2.5, 3, 1.25,
                      -0.5, 0.75, 2, 3.25, 4.5, 2, 1.75, 1.5, 1.25, 1, 2.25, 3.5, 1, 2.25, 3.5,
                      1.75, 0, 1.25, 2.5),
                 1e-6);
    /* torch bilinear, align_corners=False: half_pixel, and pytorch_half_pixel
     * when downsampling. */
    attrs.count = 1;
    resize_sizes(&attrs, 5, 7,
                 VALS(-1, -0.10714286f, 1.3214286f, 2.75, 3.75, 1.75, 0.5, 0.6f, 0.63571429f,
                      0.69285714f, 1.95f, 3.1214286f, 2.4928571f, 2.1f, 3, 1.75, -0.25, 0.75,
                      2.1785714f, 3.6071429f, 4.5, 1.8f, 1.8357143f, 1.8928571f, 1.35f, 0.97857143f,
                      2.4071429f, 3.3f, 1, 1.8928571f, 3.3214286f, 1.75, 0.17857143f, 1.6071429f,
                      2.5),
                 1e-6);
    attrs.count = 2;
    items[1] = attr_string("coordinate_transformation_mode", "pytorch_half_pixel");
    resize_sizes(&attrs, 2, 3, VALS(0.16666667f, 2.25, 1.8333333f, 1.6666667f, 1.5, 2.5833333f),
                 1e-6);
    /* asymmetric from scales [1, 1, 2, 1.5] (onnx's interpolate_nd). */
    d5_tensor x = rs_input();
    items[1] = attr_string("coordinate_transformation_mode", "asymmetric");
    resize_scales(&x, &attrs, VALS(1, 1, 2, 1.5), SHAPE(1, 1, 6, 6),
                  VALS(-1, 0.66666667f, 2.3333333f, 4, 1.6666667f, 0.5, 1, 0.66666667f, 1.3333333f,
                       3, 2.6666667f, 2.5, 3, 0.66666667f, 0.33333333f, 2, 3.6666667f, 4.5, 2,
                       1.6666667f, 1.3333333f, 1, 2.6666667f, 3.5, 1, 2.6666667f, 2.3333333f, 0,
                       1.6666667f, 2.5, 1, 2.6666667f, 2.3333333f, 0, 1.6666667f, 2.5),
                  1e-6);
    /* align_corners with scales 0.6: lengths 1.8 and 2.4, not the output sizes. */
    items[1] = attr_string("coordinate_transformation_mode", "align_corners");
    resize_scales(&x, &attrs, VALS(1, 1, 0.6f, 0.6f), SHAPE(1, 1, 1, 2), VALS(-1, 3.5000005f),
                  1e-6);
    d5_tensor_free(&x);
}

Test(resize, trilinear_and_axes)
{
    /* torch trilinear (align_corners=False) = onnx's interpolate_nd, half_pixel. */
    d5_tensor x = tf32(5, SHAPE(1, 1, 2, 3, 2), NULL), y;
    for (int64_t i = 0; i < 12; i++)
        ((float *)x.data)[i] = (float)((double)((i * 7) % 12) / 3.0 - 2);
    d5_tensor in[4] = {x, omitted(), omitted(), ti64(1, SHAPE(3), IVALS(3, 2, 4))};
    const int64_t axes[] = {-3, 3, 4};
    d5_attr items[] = {attr_string("mode", "linear"), attr_ints("axes", axes, 3)};
    d5_attrs attrs = {items, 2};
    run_op("Resize", "ref", in, 4, &attrs, &y, 1);
    op_expect_shape(&y, 5, SHAPE(1, 1, 3, 2, 4));
    expect_values(&y,
                  VALS(-1.8333333f, -1.25, -0.08333333f, 0.5, -0.83333336f, -0.25, 0.91666664f, 1.5,
                       -0.83333334f, -0.75, -0.58333332f, -0.5, 0.16666667f, 0.25, 0.41666665f, 0.5,
                       0.16666667f, -0.25, -1.0833333f, -1.5, 1.1666667f, 0.75, -0.08333333f, -0.5),
                  24, 1e-6);
    d5_tensor_free(&y);
    d5_tensor_free(&in[3]);
    d5_tensor_free(&x);
}

Test(resize, backward_matches_torch_autograd)
{
    /* dX of sum(W * Y), W[k] = ((3 k) mod 5) / 2 - 1 over the output. */
    struct {
        const char *mode, *coord;
        int64_t h, w;
        const float *want;
    } cases[] = {
        {"linear", "half_pixel", 5, 7,
         VALS(-0.62857143f, 0.12857143f, 0.014285714f, 0.28571429f, -0.45f, 0.1f, 0.29285714f,
              -0.74285714f, 1.0785714f, -0.22857143f, -0.30714286f, 0.45714286f)},
        {"linear", "pytorch_half_pixel", 2, 3,
         VALS(-0.625f, 0.0625f, 0.125f, -0.3125f, 0, 0.0625f, 0, -0.3125f, 0.625f, 0.125f, -0.125f,
              -0.625f)},
        {"nearest", "asymmetric", 5, 7, VALS(0, -0.5, -1, 1.5, -1, 1, 0.5, -1.5, 1, -0.5, 0.5, 0)},
    };
    for (int c = 0; c < 3; c++) {
        d5_attr items[] = {attr_string("mode", cases[c].mode),
                           attr_string("coordinate_transformation_mode", cases[c].coord),
                           attr_string("nearest_mode", "floor")};
        d5_attrs attrs = {items, 3};
        int64_t h = cases[c].h, w = cases[c].w;
        d5_tensor in[4] = {rs_input(), omitted(), omitted(), ti64(1, SHAPE(4), IVALS(1, 1, h, w))};
        d5_tensor gy = tf32(4, SHAPE(1, 1, h, w), NULL), y, g[1];
        for (int64_t k = 0; k < h * w; k++)
            ((float *)gy.data)[k] = (float)((double)((3 * k) % 5) / 2.0 - 1.0);
        cr_assert_eq(run_known("Resize", in, 4, &attrs, &y, 1, &gy, g, 1), D5_OK, "%s",
                     d5_last_error());
        expect_values(&g[0], cases[c].want, 12, 1e-6);
        d5_tensor_free(&g[0]);
        d5_tensor_free(&y);
        d5_tensor_free(&gy);
        d5_tensor_free(&in[3]);
        d5_tensor_free(&in[0]);
    }
}

/* Central differences through Resize with constant sizes, for X only. */
static void resize_gradient(const d5_attrs *attrs, int32_t ndim, const int64_t *in_shape,
                            const int64_t *sizes)
{
    d5_tensor_desc d[4] = {op_fdesc(ndim, in_shape), {0}, {0}, {0}};
    d5_tensor given[4] = {omitted(), omitted(), omitted(), ti64(1, SHAPE(ndim), sizes)};
    d[3] = given[3].desc;
    expect_gradient("Resize", d, 4, given, attrs, 1);
    d5_tensor_free(&given[3]);
}

Test(resize, gradients_of_x)
{
    d5_attr items[] = {attr_string("mode", "linear"),
                       attr_string("coordinate_transformation_mode", "half_pixel")};
    d5_attrs attrs = {items, 2};
    resize_gradient(&attrs, 4, SHAPE(1, 2, 3, 4), IVALS(1, 2, 5, 7));
    resize_gradient(&attrs, 4, SHAPE(1, 2, 5, 6), IVALS(1, 2, 3, 2));
    resize_gradient(&attrs, 3, SHAPE(2, 3, 2), IVALS(3, 5, 4));
    items[1] = attr_string("coordinate_transformation_mode", "align_corners");
    resize_gradient(&attrs, 4, SHAPE(1, 1, 3, 4), IVALS(1, 1, 5, 7));
    items[0] = attr_string("mode", "nearest");
    items[1] = attr_string("coordinate_transformation_mode", "half_pixel");
    resize_gradient(&attrs, 4, SHAPE(1, 2, 3, 4), IVALS(1, 2, 5, 7));
    resize_gradient(&attrs, 4, SHAPE(1, 2, 5, 6), IVALS(1, 2, 3, 2));
}

Test(resize, unsupported_and_invalid_configurations)
{
    d5_tensor in[3] = {rs_input(), omitted(), tf32(1, SHAPE(4), VALS(1, 1, 2, 2))};
    struct {
        d5_attr attr;
        const char *msg;
    } unsupported[] = {
        {attr_int("antialias", 1), "antialias=1"}, /* with mode nearest, as ONNX's reference */
        {attr_int("__opset", 10), "opset 10"},
    };
    for (size_t k = 0; k < sizeof unsupported / sizeof unsupported[0]; k++) {
        d5_attrs attrs = {&unsupported[k].attr, 1};
        expect_failure("Resize", in, 3, &attrs, 1, D5_ERR_UNSUPPORTED, unsupported[k].msg);
    }
    d5_attr bad = attr_string("mode", "bilinear");
    d5_attrs attrs = {&bad, 1};
    expect_failure("Resize", in, 3, &attrs, 1, D5_ERR_INVALID, "mode is 'bilinear'");
    /* Scales not known at create (try_op passes float inputs without data). */
    expect_failure("Resize", in, 3, NULL, 0, D5_ERR_UNSUPPORTED,
                   "input 2 (scales) must be a constant");
    /* Neither, both, a wrong count, a non-positive scale. */
    expect_failure("Resize", in, 1, NULL, 1, D5_ERR_INVALID, "neither is");
    d5_tensor four[4] = {in[0], omitted(), in[2], ti64(1, SHAPE(4), IVALS(1, 1, 6, 8))};
    expect_failure("Resize", four, 4, NULL, 1, D5_ERR_INVALID, "both are");
    d5_tensor_free(&four[3]);
    four[2] = omitted();
    four[3] = ti64(1, SHAPE(2), IVALS(6, 8));
    expect_failure("Resize", four, 4, NULL, 1, D5_ERR_INVALID, "sizes has 2 values, expected 4");
    d5_tensor_free(&four[3]);
    d5_tensor_free(&in[2]);
    in[2] = tf32(1, SHAPE(4), VALS(1, 1, 0, 2));
    expect_failure("Resize", in, 3, NULL, 1, D5_ERR_INVALID, "scales[2] is 0");
    op_free_all(in, 3);
}
