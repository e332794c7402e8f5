/* The spatial operators of ref/ops_onnx_b.def (LpPool, Col2Im, CenterCropPad,
 * AffineGrid, DeformConv) and the opset 18 to 20 additions to GridSample
 * (volumes) and Resize (antialias, keep_aspect_ratio_policy,
 * half_pixel_symmetric). Expected values were computed independently with
 * Debian's numpy 1.24 (/usr/bin/python3), by direct loops written from the
 * ONNX specification (windows over a zero-padded input, fold over the
 * blocks, explicit crop and pad indices, torch's affine_grid formula,
 * bilinear and trilinear sampling with zeros outside), and, for Resize's
 * antialias, with Pillow 9.4's resize of a float ("F") image, whose
 * antialiased bilinear and bicubic (a = -0.5) filters are ONNX's with
 * exclude_outside=1; gradients are checked against central differences in
 * float64. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define ATTRS(...)                                                                                 \
    (&(const d5_attrs){(const d5_attr[]){__VA_ARGS__},                                             \
                       (int32_t)(sizeof((const d5_attr[]){__VA_ARGS__}) / sizeof(d5_attr))})

static d5_tensor omitted(void)
{
    d5_tensor t;
    memset(&t, 0, sizeof t);
    return t;
}

/* Runs the one-output ref operator `op` with every input known at create
 * (float ones too: Resize's scales) and checks the output's shape and values
 * within tol; frees the inputs and the output. */
static void check_known(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                        int32_t ndim, const int64_t *shape, const float *want, double tol)
{
    const d5_op_desc *desc;
    d5_op *o;
    d5_tensor y;
    cr_assert_eq(d5_op_find(op, "ref", &desc), D5_OK);
    cr_assert_eq(d5_op_create(desc, in, nin, attrs, 1, &o), D5_OK, "%s: %s", op, d5_last_error());
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(o, 0), &y), D5_OK);
    cr_assert_eq(d5_op_forward(o, in, &y), D5_OK, "%s: %s", op, d5_last_error());
    d5_op_free(o);
    op_expect_shape(&y, ndim, shape);
    expect_values(&y, want, d5_tensor_desc_numel(&y.desc), tol);
    d5_tensor_free(&y);
    op_free_all(in, nin);
}

/* A float32 tensor whose element i is a * i + b. */
static d5_tensor ramp(int32_t ndim, const int64_t *shape, double a, double b)
{
    d5_tensor t = tf32(ndim, shape, NULL);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t.desc); i++)
        ((float *)t.data)[i] = (float)(a * (double)i + b);
    return t;
}

/* ---- LpPool ---- */

static d5_tensor lp_x(void)
{
    return tf32(4, SHAPE(1, 1, 3, 3), VALS(1, -2, 3, -4, 5, -6, 7, -8, 9));
}

Test(lppool, norms_of_windows_with_pads_strides_and_p)
{
    d5_tensor x = lp_x();
    const int64_t k2[] = {2, 2}, k3[] = {3, 3}, s2[] = {2, 2}, p1[] = {1, 1, 1, 1},
                  p10[] = {1, 0, 1, 0};
    /* p = 2 (default): sqrt(1 + 4 + 16 + 25), ... */
    d5_tensor y;
    run_op("LpPool", "ref", &x, 1, ATTRS(attr_ints("kernel_shape", k2, 2)), &y, 1);
    op_expect_shape(&y, 4, SHAPE(1, 1, 2, 2));
    expect_values(&y, VALS(6.78232998f, 8.60232527f, 12.4096736f, 14.3527001f), 4, 1e-5);
    d5_tensor_free(&y);
    /* p = 3 over windows that overlap the zero padding. */
    expect_op_values("LpPool", &x, 1,
                     ATTRS(attr_ints("kernel_shape", k2, 2), attr_ints("strides", s2, 2),
                           attr_ints("pads", p1, 4), attr_int("p", 3)),
                     VALS(1, 3.27106631f, 7.41079506f, 11.6520452f), 4, 1e-5);
    /* Opset 1's float p. */
    expect_op_values("LpPool", &x, 1,
                     ATTRS(attr_ints("kernel_shape", k3, 2), attr_ints("pads", p10, 4),
                           attr_float("p", 1.5), attr_int("__opset", 1)),
                     VALS(12.2551153f, 23.1035027f, 21.8342162f), 3, 1e-5);
    d5_tensor_free(&x);
}

Test(lppool, errors_name_the_operator)
{
    d5_tensor x = lp_x();
    const int64_t k2[] = {2, 2};
    op_expect_fails("LpPool", &x, 1, ATTRS(attr_ints("kernel_shape", k2, 2), attr_int("p", 0)), 1,
                    D5_ERR_INVALID, "LpPool: p is 0, must be positive");
    op_expect_fails("LpPool", &x, 1, ATTRS(attr_int("p", 2)), 1, D5_ERR_INVALID,
                    "LpPool: attribute kernel_shape is required");
    op_expect_fails("LpPool", &x, 1,
                    ATTRS(attr_ints("kernel_shape", k2, 2), attr_string("p", "two")), 1,
                    D5_ERR_INVALID, "LpPool: attribute p must be an integer");
    d5_tensor_free(&x);
}

Test(lppool, gradient)
{
    const int64_t k2[] = {2, 2}, k3[] = {3, 2, 2}, p1[] = {1, 0, 1, 0}, d2[] = {1, 2, 1};
    d5_tensor_desc d = op_fdesc(4, SHAPE(2, 2, 4, 5));
    expect_gradient(
        "LpPool", &d, 1, NULL,
        ATTRS(attr_ints("kernel_shape", k2, 2), attr_ints("pads", p1, 4), attr_int("p", 3)), 1);
    expect_gradient("LpPool", &d, 1, NULL,
                    ATTRS(attr_ints("kernel_shape", k2, 2), attr_string("auto_pad", "SAME_UPPER")),
                    1);
    d5_tensor_desc v = op_fdesc(5, SHAPE(1, 2, 4, 5, 3));
    expect_gradient("LpPool", &v, 1, NULL,
                    ATTRS(attr_ints("kernel_shape", k3, 3), attr_ints("dilations", d2, 3),
                          attr_int("ceil_mode", 1), attr_int("p", 1)),
                    1);
}

/* ---- Col2Im ---- */

Test(col2im, folds_blocks_back_into_the_image)
{
    /* Image 3 x 3 from 2 x 2 blocks of 0..15: overlapping positions add. */
    d5_tensor in[3] = {ramp(3, SHAPE(1, 4, 4), 1, 0), ti64(1, SHAPE(2), IVALS(3, 3)),
                       ti64(1, SHAPE(2), IVALS(2, 2))};
    check_known("Col2Im", in, 3, NULL, 4, SHAPE(1, 1, 3, 3), VALS(0, 5, 5, 10, 30, 20, 10, 25, 15),
                1e-5);
    /* Image 4 x 5, block 2 x 2, dilations (1, 2), pads (1, 0, 1, 1), strides
     * (2, 1): 3 x 4 blocks; two images, two channels of 0.5 i - 3. */
    const int64_t dil[] = {1, 2}, pads[] = {1, 0, 1, 1}, strides[] = {2, 1};
    d5_tensor in2[3] = {ramp(3, SHAPE(2, 8, 12), 0.5, -3), ti64(1, SHAPE(2), IVALS(4, 5)),
                        ti64(1, SHAPE(2), IVALS(2, 2))};
    check_known("Col2Im", in2, 3,
                ATTRS(attr_ints("dilations", dil, 2), attr_ints("pads", pads, 4),
                      attr_ints("strides", strides, 2)),
                4, SHAPE(2, 2, 4, 5),
                VALS(9, 9.5, 25, 26, 16, -1, -0.5, 5, 6, 6, 11, 11.5, 29, 30, 18, 1, 1.5, 9, 10, 8,
                     33, 33.5, 73, 74, 40, 23, 23.5, 53, 54, 30, 35, 35.5, 77, 78, 42, 25, 25.5, 57,
                     58, 32, 57, 57.5, 121, 122, 64, 47, 47.5, 101, 102, 54, 59, 59.5, 125, 126, 66,
                     49, 49.5, 105, 106, 56, 81, 81.5, 169, 170, 88, 71, 71.5, 149, 150, 78, 83,
                     83.5, 173, 174, 90, 73, 73.5, 153, 154, 80),
                1e-5);
}

Test(col2im, errors_name_the_operator)
{
    d5_tensor in[3] = {tf32(3, SHAPE(1, 4, 5), NULL), ti64(1, SHAPE(2), IVALS(3, 3)),
                       ti64(1, SHAPE(2), IVALS(2, 2))};
    op_expect_fails("Col2Im", in, 3, NULL, 1, D5_ERR_SHAPE,
                    "Col2Im: input 0 has shape [1,4,5], expected [N, C * 4, 4]");
    d5_tensor_free(&in[2]);
    in[2] = ti64(1, SHAPE(3), IVALS(2, 2, 1));
    op_expect_fails("Col2Im", in, 3, NULL, 1, D5_ERR_SHAPE,
                    "Col2Im: image_shape (input 1) has 2 values and block_shape (input 2) 3");
    d5_tensor_free(&in[2]);
    in[2] = ti64(1, SHAPE(2), IVALS(2, 2));
    const int64_t s3[] = {1, 1, 1};
    op_expect_fails("Col2Im", in, 3, ATTRS(attr_ints("strides", s3, 3)), 1, D5_ERR_INVALID,
                    "Col2Im: strides has 3 values for 2 spatial axes, expected 2");
    op_free_all(in, 3);
}

Test(col2im, gradient)
{
    const int64_t pads[] = {1, 0, 0, 1}, dil[] = {2, 1};
    d5_tensor image = ti64(1, SHAPE(2), IVALS(5, 4)), block = ti64(1, SHAPE(2), IVALS(2, 3));
    /* Blocks: (5 + 1 - 2 - 1) + 1 = 4 by (4 + 1 - 3) + 1 = 3. */
    d5_tensor_desc d[3] = {op_fdesc(3, SHAPE(2, 12, 12)), image.desc, block.desc};
    d5_tensor given[3] = {omitted(), image, block};
    expect_gradient("Col2Im", d, 3, given,
                    ATTRS(attr_ints("pads", pads, 4), attr_ints("dilations", dil, 2)), 1);
    d5_tensor_free(&image);
    d5_tensor_free(&block);
}

/* ---- CenterCropPad ---- */

Test(centercroppad, crops_and_pads_about_the_centre)
{
    /* [3, 4] to [5, 2]: a row of zeros on each side, columns 1 and 2. */
    d5_tensor in[2] = {ramp(2, SHAPE(3, 4), 1, 0), ti64(1, SHAPE(2), IVALS(5, 2))};
    check_known("CenterCropPad", in, 2, NULL, 2, SHAPE(5, 2), VALS(0, 0, 1, 2, 5, 6, 9, 10, 0, 0),
                0);
    /* [2, 5] to [5, 2]: odd differences: one zero row before and two after;
     * the crop starts at floor(3 / 2) = 1. */
    d5_tensor in2[2] = {ramp(2, SHAPE(2, 5), 1, 0), ti64(1, SHAPE(2), IVALS(5, 2))};
    check_known("CenterCropPad", in2, 2, NULL, 2, SHAPE(5, 2), VALS(0, 0, 1, 2, 6, 7, 0, 0, 0, 0),
                0);
    /* Only the last axis (axes = [-1]), 4 to 1. */
    const int64_t last[] = {-1};
    d5_tensor in3[2] = {ramp(3, SHAPE(2, 3, 4), 1, 0), ti64(1, SHAPE(1), IVALS(1))};
    check_known("CenterCropPad", in3, 2, ATTRS(attr_ints("axes", last, 1)), 3, SHAPE(2, 3, 1),
                VALS(1, 5, 9, 13, 17, 21), 0);
}

Test(centercroppad, errors_name_the_operator)
{
    d5_tensor in[2] = {tf32(2, SHAPE(3, 4), NULL), ti64(1, SHAPE(1), IVALS(2))};
    op_expect_fails("CenterCropPad", in, 2, NULL, 1, D5_ERR_INVALID,
                    "CenterCropPad: shape (input 1) has 1 values, expected 2");
    const int64_t twice[] = {1, -1};
    d5_tensor_free(&in[1]);
    in[1] = ti64(1, SHAPE(2), IVALS(2, 2));
    op_expect_fails("CenterCropPad", in, 2, ATTRS(attr_ints("axes", twice, 2)), 1, D5_ERR_INVALID,
                    "CenterCropPad: axes names axis 1 twice");
    d5_tensor_free(&in[1]);
    in[1] = ti64(1, SHAPE(2), IVALS(2, -1));
    op_expect_fails("CenterCropPad", in, 2, NULL, 1, D5_ERR_INVALID,
                    "CenterCropPad: shape[1] is -1, must be >= 0");
    op_free_all(in, 2);
}

Test(centercroppad, gradient)
{
    const int64_t axes[] = {0, 2};
    d5_tensor shape = ti64(1, SHAPE(2), IVALS(6, 3));
    d5_tensor_desc d[2] = {op_fdesc(3, SHAPE(3, 2, 6)), shape.desc};
    d5_tensor given[2] = {omitted(), shape};
    expect_gradient("CenterCropPad", d, 2, given, ATTRS(attr_ints("axes", axes, 2)), 1);
    d5_tensor_free(&shape);
}

/* ---- AffineGrid ---- */

static d5_tensor theta2(void)
{
    return tf32(3, SHAPE(1, 2, 3), VALS(1, 0.5f, 0.1f, -0.25f, 2, -0.3f));
}

Test(affinegrid, grids_of_2d_and_3d_positions)
{
    d5_tensor in[2] = {theta2(), ti64(1, SHAPE(4), IVALS(1, 1, 2, 3))};
    check_known("AffineGrid", in, 2, NULL, 4, SHAPE(1, 2, 3, 2),
                VALS(-0.816666667f, -1.13333333f, -0.15f, -1.3f, 0.516666667f, -1.46666667f,
                     -0.316666667f, 0.866666667f, 0.35f, 0.7f, 1.01666667f, 0.533333333f),
                1e-6);
    d5_tensor in2[2] = {theta2(), ti64(1, SHAPE(4), IVALS(1, 1, 2, 3))};
    check_known(
        "AffineGrid", in2, 2, ATTRS(attr_int("align_corners", 1)), 4, SHAPE(1, 2, 3, 2),
        VALS(-1.4f, -2.05f, -0.4f, -2.3f, 0.6f, -2.55f, -0.4f, 1.95f, 0.6f, 1.7f, 1.6f, 1.45f),
        1e-6);
    /* 3-d, D = 2, H = 1 (at 0), W = 2. */
    d5_tensor in3[2] = {
        tf32(3, SHAPE(1, 3, 4), VALS(1, 0.5f, 0.1f, 0.2f, -0.25f, 2, -0.3f, 0, 0.4f, 0, 1.5f, -1)),
        ti64(1, SHAPE(5), IVALS(1, 3, 2, 1, 2))};
    check_known(
        "AffineGrid", in3, 2, ATTRS(attr_int("align_corners", 1)), 5, SHAPE(1, 2, 1, 2, 3),
        VALS(-0.9f, 0.55f, -2.9f, 1.1f, 0.05f, -2.1f, -0.7f, -0.05f, 0.1f, 1.3f, -0.55f, 0.9f),
        1e-6);
}

Test(affinegrid, errors_name_the_operator)
{
    d5_tensor in[2] = {theta2(), ti64(1, SHAPE(5), IVALS(1, 1, 2, 3, 4))};
    op_expect_fails("AffineGrid", in, 2, NULL, 1, D5_ERR_SHAPE,
                    "AffineGrid: theta (input 0) has shape [1,2,3], expected [1, 3, 4]");
    d5_tensor_free(&in[1]);
    in[1] = ti64(1, SHAPE(3), IVALS(1, 2, 3));
    op_expect_fails("AffineGrid", in, 2, NULL, 1, D5_ERR_INVALID,
                    "AffineGrid: size (input 1) has 3 values, expected 4");
    d5_tensor_free(&in[1]);
    in[1] = ti64(1, SHAPE(4), IVALS(1, 1, 2, 3));
    op_expect_fails("AffineGrid", in, 2, ATTRS(attr_int("align_corners", 2)), 1, D5_ERR_INVALID,
                    "AffineGrid: align_corners is 2, expected 0 or 1");
    op_free_all(in, 2);
}

Test(affinegrid, gradient_with_respect_to_theta)
{
    d5_tensor size = ti64(1, SHAPE(4), IVALS(2, 3, 4, 5));
    d5_tensor_desc d[2] = {op_fdesc(3, SHAPE(2, 2, 3)), size.desc};
    d5_tensor given[2] = {omitted(), size};
    expect_gradient("AffineGrid", d, 2, given, NULL, 1);
    d5_tensor_free(&size);
    d5_tensor size3 = ti64(1, SHAPE(5), IVALS(2, 1, 3, 2, 4));
    d5_tensor_desc d3[2] = {op_fdesc(3, SHAPE(2, 3, 4)), size3.desc};
    d5_tensor given3[2] = {omitted(), size3};
    expect_gradient("AffineGrid", d3, 2, given3, ATTRS(attr_int("align_corners", 1)), 1);
    d5_tensor_free(&size3);
}

/* ---- DeformConv ---- */

/* X [1, 2, 3, 3]: (i - 8) / 4. */
static d5_tensor deform_x(void)
{
    return ramp(4, SHAPE(1, 2, 3, 3), 0.25, -2);
}

Test(deformconv, zero_offsets_give_the_convolution)
{
    d5_tensor in[3] = {deform_x(),
                       tf32(4, SHAPE(1, 2, 2, 2), VALS(1, -0.5f, 0.25f, 2, 0.5f, -1, 1.5f, 0.75f)),
                       tf32(4, SHAPE(1, 8, 2, 2), NULL)};
    check_known("DeformConv", in, 3, NULL, 4, SHAPE(1, 1, 2, 2), VALS(-1.375f, -0.25f, 2, 3.125f),
                1e-6);
}

Test(deformconv, offsets_mask_bias_groups_and_pads)
{
    /* group 2, offset_group 2, pads (1, 0, 0, 1): a 3 x 3 output; offsets
     * ((i mod 7) - 3) * 0.35 (some fall outside X), mask 0.1 to 1. */
    d5_tensor off = tf32(4, SHAPE(1, 16, 3, 3), NULL), mask = tf32(4, SHAPE(1, 8, 3, 3), NULL);
    for (int i = 0; i < 144; i++) ((float *)off.data)[i] = (float)((i % 7 - 3) * 0.35);
    for (int i = 0; i < 72; i++) ((float *)mask.data)[i] = (float)(0.1 + 0.9 * i / 71.0);
    d5_tensor in[5] = {deform_x(),
                       tf32(4, SHAPE(2, 1, 2, 2), VALS(1, -0.5f, 0.25f, 2, 0.5f, -1, 1.5f, 0.75f)),
                       off, tf32(1, SHAPE(2), VALS(0.5f, -1)), mask};
    const int64_t pads[] = {1, 0, 0, 1};
    check_known(
        "DeformConv", in, 5,
        ATTRS(attr_int("group", 2), attr_int("offset_group", 2), attr_ints("pads", pads, 4)), 4,
        SHAPE(1, 2, 3, 3),
        VALS(-0.735253521f, -0.259698504f, 0.582790493f, -1.2831338f, -0.33168706f, 0.281543134f,
             0.510023548f, 0.00613908451f, 0.26234485f, -0.74290493f, 0.303962148f, 0.229973592f,
             0.345831866f, -0.333638644f, 1.69201144f, 0.10181338f, 1.71736268f, -1.04448239f),
        1e-5);
}

Test(deformconv, errors_name_the_operator)
{
    d5_tensor in[3] = {tf32(4, SHAPE(1, 2, 3, 3), NULL), tf32(4, SHAPE(1, 2, 2, 2), NULL),
                       tf32(4, SHAPE(1, 8, 3, 2), NULL)};
    op_expect_fails("DeformConv", in, 3, NULL, 1, D5_ERR_SHAPE,
                    "DeformConv: offset (input 2) has shape [1,8,3,2], expected [1, 8, 2, 2]");
    op_expect_fails("DeformConv", in, 3, ATTRS(attr_int("offset_group", 3)), 1, D5_ERR_SHAPE,
                    "DeformConv: X has 2 channels, not a multiple of offset_group 3");
    op_expect_fails("DeformConv", in, 3, ATTRS(attr_int("group", 2)), 1, D5_ERR_SHAPE,
                    "DeformConv: X has 2 channels and W shape [1,2,2,2]");
    op_free_all(in, 3);
}

Test(deformconv, gradient_of_every_input)
{
    /* 2-d with bias and mask, groups and strides; 1-d and 3-d without. */
    const int64_t strides[] = {2, 1}, pads[] = {1, 1, 0, 1};
    d5_tensor_desc d[5] = {op_fdesc(4, SHAPE(1, 4, 5, 4)), op_fdesc(4, SHAPE(4, 2, 2, 3)),
                           op_fdesc(4, SHAPE(1, 24, 3, 4)), op_fdesc(1, SHAPE(4)),
                           op_fdesc(4, SHAPE(1, 12, 3, 4))};
    expect_gradient("DeformConv", d, 5, NULL,
                    ATTRS(attr_int("group", 2), attr_int("offset_group", 2),
                          attr_ints("strides", strides, 2), attr_ints("pads", pads, 4)),
                    1);
    d5_tensor_desc d1[3] = {op_fdesc(3, SHAPE(2, 2, 6)), op_fdesc(3, SHAPE(3, 2, 3)),
                            op_fdesc(3, SHAPE(2, 3, 4))};
    expect_gradient("DeformConv", d1, 3, NULL, NULL, 1);
    d5_tensor_desc d3[3] = {op_fdesc(5, SHAPE(1, 1, 3, 3, 3)), op_fdesc(5, SHAPE(2, 1, 2, 2, 2)),
                            op_fdesc(5, SHAPE(1, 24, 2, 2, 2))};
    expect_gradient("DeformConv", d3, 3, NULL, NULL, 1);
}

/* ---- GridSample on volumes ---- */

/* X [1, 1, 2, 3, 4] of 0..23 and six points (x, y, z), two outside. */
static void volume(d5_tensor *in)
{
    in[0] = ramp(5, SHAPE(1, 1, 2, 3, 4), 1, 0);
    in[1] = tf32(5, SHAPE(1, 1, 2, 3, 3),
                 VALS(-1, -1, -1, 0.2f, -0.4f, 0.5f, 0.9f, 0.7f, -0.3f, 1.3f, 0, 0.1f, -0.55f,
                      0.35f, 1, 0.25f, 0.5f, -0.75f));
}

Test(gridsample_volume, trilinear_and_nearest)
{
    static const struct {
        const char *mode;
        int align;
        float y[6];
    } cases[] = {
        {"linear", 0, {0, 15.5f, 8.911f, 0, 9.25f, 6.75f}},
        {"linear", 1, {0, 13.2f, 13.85f, 7.48f, 18.075f, 9.375f}},
        {"nearest", 0, {0, 14, 11, 0, 0, 10}},
        {"nearest", 1, {0, 18, 11, 19, 17, 10}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        d5_tensor in[2];
        volume(in);
        check_known(
            "GridSample", in, 2,
            ATTRS(attr_string("mode", cases[k].mode), attr_int("align_corners", cases[k].align)), 5,
            SHAPE(1, 1, 1, 2, 3), cases[k].y, 1e-4);
    }
}

Test(gridsample_volume, errors_name_the_operator)
{
    d5_tensor in[2];
    volume(in);
    d5_tensor_free(&in[1]);
    in[1] = tf32(5, SHAPE(1, 1, 2, 3, 2), NULL);
    op_expect_fails(
        "GridSample", in, 2, NULL, 1, D5_ERR_SHAPE,
        "GridSample: input 1 (grid) has shape [1,1,2,3,2], expected [1, Do, Ho, Wo, 3]");
    op_free_all(in, 2);
    d5_tensor six[2] = {tf32(6, SHAPE(1, 1, 2, 2, 2, 2), NULL),
                        tf32(6, SHAPE(1, 1, 1, 1, 1, 4), NULL)};
    op_expect_fails("GridSample", six, 2, NULL, 1, D5_ERR_UNSUPPORTED,
                    "GridSample: input 0 (X) has 6 dims, expected 4 or 5");
    op_free_all(six, 2);
}

/* ---- Resize: antialias, keep_aspect_ratio_policy, half_pixel_symmetric ---- */

/* The 6 x 8 image (i^1.5 mod 17) of the Pillow comparison. */
static d5_tensor resize_image(void)
{
    d5_tensor t = tf32(4, SHAPE(1, 1, 6, 8), NULL);
    float *v = t.data;
    for (int i = 0; i < 48; i++) {
        double p = (double)i, r = p * sqrt(p);
        v[i] = (float)(r - 17 * floor(r / 17));
    }
    return t;
}

Test(resize_opset18, antialias_against_pillow)
{
    /* Pillow's BILINEAR 6 x 8 -> 3 x 5, and BICUBIC (a = -0.5) -> 4 x 3. */
    d5_tensor in[4] = {resize_image(), omitted(), omitted(), ti64(1, SHAPE(4), IVALS(1, 1, 3, 5))};
    check_known("Resize", in, 4,
                ATTRS(attr_string("mode", "linear"), attr_int("antialias", 1),
                      attr_int("exclude_outside", 1)),
                4, SHAPE(1, 1, 3, 5),
                VALS(4.57340527f, 7.12035704f, 6.68562269f, 9.80229092f, 5.77146101f, 9.44598389f,
                     9.01813793f, 8.36911392f, 7.47290707f, 6.01745462f, 10.0208187f, 6.29426479f,
                     7.16347647f, 8.34055233f, 9.76661873f),
                1e-4);
    d5_tensor in2[4] = {resize_image(), omitted(), omitted(), ti64(1, SHAPE(4), IVALS(1, 1, 4, 3))};
    check_known("Resize", in2, 4,
                ATTRS(attr_string("mode", "cubic"), attr_int("antialias", 1),
                      attr_int("exclude_outside", 1), attr_float("cubic_coeff_a", -0.5)),
                4, SHAPE(1, 1, 4, 3),
                VALS(3.92589331f, 7.35320377f, 8.47954655f, 8.91691589f, 8.9551096f, 5.8046093f,
                     9.45587158f, 8.18241596f, 7.08552647f, 7.73804855f, 6.46833372f, 10.2252016f),
                1e-4);
}

Test(resize_opset18, antialias_with_edges_clamped)
{
    /* Squares 0..49 to 3 elements, exclude_outside 0: the taps past the edges
     * read the edge elements; numpy over every j with |(j - x) 3 / 8| < 1. */
    d5_tensor in[4] = {tf32(4, SHAPE(1, 1, 1, 8), VALS(0, 1, 4, 9, 16, 25, 36, 49)), omitted(),
                       omitted(), ti64(1, SHAPE(4), IVALS(1, 1, 1, 3))};
    check_known("Resize", in, 4, ATTRS(attr_string("mode", "linear"), attr_int("antialias", 1)), 4,
                SHAPE(1, 1, 1, 3), VALS(1.81395349f, 13.452381f, 37.1395349f), 1e-5);
}

Test(resize_opset18, antialias_changes_nothing_when_upsampling)
{
    /* [0, 4] to 4 elements, half_pixel: x_original = -0.25, 0.25, 0.75,
     * 1.25, edges clamped: 0, 1, 3, 4 by hand, with antialias or without. */
    for (int aa = 0; aa < 2; aa++) {
        d5_tensor in[4] = {tf32(4, SHAPE(1, 1, 1, 2), VALS(0, 4)), omitted(), omitted(),
                           ti64(1, SHAPE(4), IVALS(1, 1, 1, 4))};
        check_known("Resize", in, 4,
                    ATTRS(attr_string("mode", "linear"), attr_int("antialias", aa)), 4,
                    SHAPE(1, 1, 1, 4), VALS(0, 1, 3, 4), 1e-6);
    }
}

Test(resize_opset18, keep_aspect_ratio_policy)
{
    /* X [1, 1, 2, 4] of 0..7, sizes (3, 3) on axes 2 and 3: not_larger
     * scales by 0.75 to 2 x 3, not_smaller by 1.5 to 3 x 6 (nearest). */
    const int64_t axes[] = {2, 3};
    d5_tensor in[4] = {ramp(4, SHAPE(1, 1, 2, 4), 1, 0), omitted(), omitted(),
                       ti64(1, SHAPE(2), IVALS(3, 3))};
    check_known(
        "Resize", in, 4,
        ATTRS(attr_ints("axes", axes, 2), attr_string("keep_aspect_ratio_policy", "not_larger")), 4,
        SHAPE(1, 1, 2, 3), VALS(0, 1, 3, 4, 5, 7), 0);
    d5_tensor in2[4] = {ramp(4, SHAPE(1, 1, 2, 4), 1, 0), omitted(), omitted(),
                        ti64(1, SHAPE(2), IVALS(3, 3))};
    check_known(
        "Resize", in2, 4,
        ATTRS(attr_ints("axes", axes, 2), attr_string("keep_aspect_ratio_policy", "not_smaller")),
        4, SHAPE(1, 1, 3, 6), VALS(0, 0, 1, 2, 2, 3, 0, 0, 1, 2, 2, 3, 4, 4, 5, 6, 6, 7), 0);
}

Test(resize_opset18, half_pixel_symmetric)
{
    /* [1, 2, 4, 8] scaled by 1.7 to 6 elements: the grid is shifted by
     * in / 2 * (1 - 6 / 6.8) against half_pixel. */
    d5_tensor in[3] = {tf32(4, SHAPE(1, 1, 1, 4), VALS(1, 2, 4, 8)), omitted(),
                       tf32(1, SHAPE(4), VALS(1, 1, 1, 1.7f))};
    check_known("Resize", in, 3,
                ATTRS(attr_string("mode", "linear"),
                      attr_string("coordinate_transformation_mode", "half_pixel_symmetric")),
                4, SHAPE(1, 1, 1, 6),
                VALS(1.02941181f, 1.61764708f, 2.41176472f, 3.58823528f, 5.52941167f, 7.88235278f),
                1e-5);
}

Test(resize_opset18, errors_name_the_operator)
{
    d5_tensor in[4] = {tf32(4, SHAPE(1, 1, 2, 4), NULL), omitted(), omitted(),
                       ti64(1, SHAPE(4), IVALS(1, 1, 1, 2))};
    op_expect_fails("Resize", in, 4, ATTRS(attr_int("antialias", 1)), 1, D5_ERR_UNSUPPORTED,
                    "Resize: antialias=1 is not supported with mode 'nearest'");
    op_expect_fails("Resize", in, 4, ATTRS(attr_string("mode", "linear"), attr_int("antialias", 2)),
                    1, D5_ERR_INVALID, "Resize: antialias is 2, expected 0 or 1");
    op_expect_fails("Resize", in, 4, ATTRS(attr_string("keep_aspect_ratio_policy", "fit")), 1,
                    D5_ERR_INVALID, "Resize: keep_aspect_ratio_policy is 'fit'");
    op_expect_fails(
        "Resize", in, 4,
        ATTRS(attr_string("mode", "linear"), attr_int("antialias", 1), attr_int("__opset", 13)), 1,
        D5_ERR_INVALID, "Resize: antialias belongs to opset 18 and later");
    op_expect_fails(
        "Resize", in, 4,
        ATTRS(attr_string("coordinate_transformation_mode", "half_pixel_symmetric"),
              attr_int("__opset", 18)),
        1, D5_ERR_INVALID,
        "Resize: coordinate_transformation_mode 'half_pixel_symmetric' belongs to opset 19");
    op_free_all(in, 4);
}

Test(resize_opset18, gradient)
{
    const int64_t axes[] = {2, 3};
    d5_tensor sizes = ti64(1, SHAPE(4), IVALS(1, 2, 3, 2)), two = ti64(1, SHAPE(2), IVALS(4, 9));
    d5_tensor_desc d[4] = {op_fdesc(4, SHAPE(1, 2, 7, 5)),
                           {.dtype = D5_DTYPE_INVALID},
                           {.dtype = D5_DTYPE_INVALID},
                           sizes.desc};
    d5_tensor given[4] = {omitted(), omitted(), omitted(), sizes};
    expect_gradient("Resize", d, 4, given,
                    ATTRS(attr_string("mode", "linear"), attr_int("antialias", 1)), 1);
    expect_gradient("Resize", d, 4, given,
                    ATTRS(attr_string("mode", "cubic"), attr_int("antialias", 1),
                          attr_int("exclude_outside", 1)),
                    1);
    d[3] = two.desc;
    given[3] = two;
    expect_gradient("Resize", d, 4, given,
                    ATTRS(attr_string("mode", "linear"), attr_ints("axes", axes, 2),
                          attr_string("keep_aspect_ratio_policy", "not_smaller"),
                          attr_string("coordinate_transformation_mode", "half_pixel_symmetric")),
                    1);
    d5_tensor_free(&sizes);
    d5_tensor_free(&two);
}
