/* Reference operators of the nn group that pool: MaxPool, AveragePool and
 * GlobalAveragePool (test_ref_norm.c has BatchNormalization, LRN, Dropout).
 *
 * Expected numbers were worked out by hand where the case is small, and
 * otherwise computed with numpy (Debian's python3-numpy 1.24) by a brute-force
 * implementation of the ONNX formulas that slices a NaN-padded copy of the
 * input; that implementation was itself checked against torch 1.13
 * (max_pool2d/3d with return_indices, avg_pool2d/3d, batch_norm,
 * local_response_norm) wherever torch supports the configuration (symmetric
 * pads, odd LRN sizes). The Dropout masks come from a Python transcription of
 * xoshiro256** seeded through splitmix64. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* x[i] = ((37 i) mod 97) / 10 - 4: distinct values in any window below. */
static d5_tensor pattern(int32_t ndim, const int64_t *shape)
{
    d5_tensor t = tf32(ndim, shape, NULL);
    float *v = t.data;
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t.desc); i++)
        v[i] = (float)((double)((i * 37) % 97) / 10.0 - 4.0);
    return t;
}

static void expect_i64(const d5_tensor *t, const int64_t *want, int64_t n)
{
    cr_assert_eq(t->desc.dtype, D5_I64);
    cr_assert_eq(d5_tensor_desc_numel(&t->desc), n, "element count");
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(((const int64_t *)t->data)[i], want[i], "element %lld: got %lld, want %lld",
                     (long long)i, (long long)((const int64_t *)t->data)[i], (long long)want[i]);
}

/* Runs the ref MaxPool on x with both outputs and checks them: the shape
 * (not when NULL), n values within tol and their n indices. */
static void expect_maxpool(const d5_tensor *x, const d5_attrs *attrs, int32_t ndim,
                           const int64_t *shape, const float *values, const int64_t *indices,
                           int64_t n, double tol)
{
    d5_tensor y[2];
    run_op("MaxPool", "ref", x, 1, attrs, y, 2);
    if (shape) op_expect_shape(&y[0], ndim, shape);
    expect_values(&y[0], values, n, tol);
    expect_i64(&y[1], indices, n);
    op_free_all(y, 2);
}

/* ---- MaxPool ----------------------------------------------------------------------- */

Test(maxpool, one_d_by_hand_ceil_and_floor)
{
    /* Windows start at -1, 1, 3, 5 (pads [1, 0], stride 2): {1}, {3, 2}, {5, 4},
     * and under ceil_mode {0} (its second position lies past the end). */
    d5_tensor x = tf32(3, SHAPE(1, 1, 6), VALS(1, 3, 2, 5, 4, 0)), y[2];
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(2), 1), attr_ints("strides", IVALS(2), 1),
                       attr_ints("pads", IVALS(1, 0), 2), attr_int("ceil_mode", 1)};
    d5_attrs attrs = {items, 4};
    expect_maxpool(&x, &attrs, 3, SHAPE(1, 1, 4), VALS(1, 3, 5, 0), IVALS(0, 1, 3, 5), 4, 0);
    items[3] = attr_int("ceil_mode", 0);
    run_op("MaxPool", "ref", &x, 1, &attrs, y, 1);
    expect_values(&y[0], VALS(1, 3, 5), 3, 0);
    d5_tensor_free(&y[0]);
    d5_tensor_free(&x);
}

Test(maxpool, ceil_mode_drops_a_window_starting_in_the_right_padding)
{
    /* in 2, kernel 3, stride 3, pads [1, 1]: ceil((2 + 2 - 3) / 3) + 1 = 2 windows,
     * but the second would start at 2 >= 2 + 1 - 1, in the right padding. */
    d5_tensor x = tf32(3, SHAPE(1, 1, 2), VALS(4, 7));
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(3), 1), attr_ints("strides", IVALS(3), 1),
                       attr_ints("pads", IVALS(1, 1), 2), attr_int("ceil_mode", 1)};
    d5_attrs attrs = {items, 4};
    expect_maxpool(&x, &attrs, 3, SHAPE(1, 1, 1), VALS(7), IVALS(1), 1, 0);
    d5_tensor_free(&x);
}

Test(maxpool, two_d_asymmetric_pads_strides_dilations_ceil)
{
    /* numpy (see the header). Along H ceil_mode adds a window (3 -> 4); along W
     * ceil would give 3 windows but the last would start in the right padding. */
    d5_tensor x = pattern(4, SHAPE(2, 2, 6, 6)), y[2];
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(3, 2), 2),
                       attr_ints("strides", IVALS(2, 3), 2), attr_ints("dilations", IVALS(1, 2), 2),
                       attr_ints("pads", IVALS(1, 0, 1, 1), 4), attr_int("ceil_mode", 1)};
    d5_attrs attrs = {items, 5};
    expect_maxpool(&x, &attrs, 4, SHAPE(2, 2, 4, 2),
                   VALS(3.4, 4.8, 4.4, 3.5, 4.9, 3.5, 0.3, 1.7, 3.6, 5, 3.6, 5, 5.1, 3.7, 5.1, -0.9,
                        3.3, 4.7, 3.8, 5.2, 4.8, 3.9, 4.8, 3.9, 5.3, 2.1, 4, 5.4, 4, 5.4, 2.2, 3.6),
                   IVALS(2, 5, 18, 23, 26, 23, 30, 33, 44, 47, 44, 47, 68, 65, 68, 69, 78, 81, 86,
                         89, 102, 107, 102, 107, 110, 117, 128, 131, 128, 131, 138, 141),
                   32, 1e-6);
    items[4] = attr_int("ceil_mode", 0);
    run_op("MaxPool", "ref", &x, 1, &attrs, y, 1);
    op_expect_shape(&y[0], 4, SHAPE(2, 2, 3, 2));
    d5_tensor_free(&y[0]);
    d5_tensor_free(&x);
}

Test(maxpool, three_d_asymmetric_pads_strides_dilations_ceil)
{
    d5_tensor x = pattern(5, SHAPE(1, 2, 4, 5, 3)), y[2];
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(2, 3, 2), 3),
                       attr_ints("strides", IVALS(2, 2, 2), 3),
                       attr_ints("dilations", IVALS(2, 1, 1), 3),
                       attr_ints("pads", IVALS(1, 0, 1, 1, 1, 0), 6), attr_int("ceil_mode", 1)};
    d5_attrs attrs = {items, 5};
    expect_maxpool(&x, &attrs, 5, SHAPE(1, 2, 3, 3, 2),
                   VALS(4.4, 3.5, -1.1, 4.9, -1.1, 2.6, 4.4, 5, 3.2, 5.5, 3.2, 2.6, 0.4, 5, 3.2,
                        5.5, 3.2, 0.9, 4.7, 5.6, 4.7, 5.2, -2.2, 5.2, 4.7, 5.6, 4.7, 5.2, 2.1, 5.2,
                        -0.7, 5.3, 2.1, 4.4, 2.1, -0.2),
                   IVALS(18, 23, 27, 26, 27, 28, 18, 47, 57, 55, 57, 28, 51, 47, 57, 55, 57, 59, 81,
                         76, 81, 89, 87, 89, 81, 76, 81, 89, 117, 89, 111, 110, 117, 115, 117, 119),
                   36, 1e-6);
    items[4] = attr_int("ceil_mode", 0);
    run_op("MaxPool", "ref", &x, 1, &attrs, y, 1);
    op_expect_shape(&y[0], 5, SHAPE(1, 2, 2, 2, 2));
    d5_tensor_free(&y[0]);
    d5_tensor_free(&x);
}

Test(maxpool, auto_pad_same_upper_same_lower_valid)
{
    /* 5x5, kernel 2, stride 2: SAME gives 3x3 with one pixel of padding, at
     * the end (UPPER) or the beginning (LOWER); VALID gives 2x2. */
    d5_tensor x = pattern(4, SHAPE(1, 1, 5, 5));
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(2, 2), 2),
                       attr_ints("strides", IVALS(2, 2), 2), attr_string("auto_pad", "SAME_UPPER"),
                       attr_int("ceil_mode", 1)};
    d5_attrs attrs = {items, 4};
    expect_maxpool(&x, &attrs, 4, SHAPE(1, 1, 3, 3),
                   VALS(4.8, 3.4, 1.1, 3.9, 5.3, -0.7, 2.1, 3.5, -2.5),
                   IVALS(5, 2, 4, 10, 13, 14, 20, 23, 24), 9, 1e-6);
    items[2] = attr_string("auto_pad", "SAME_LOWER");
    expect_maxpool(&x, &attrs, 4, SHAPE(1, 1, 3, 3), VALS(-4, 3.4, 1.1, 4.8, 2.5, 5.3, 3, 0.7, 4.4),
                   IVALS(0, 2, 4, 5, 7, 13, 15, 17, 18), 9, 1e-6);
    items[2] = attr_string("auto_pad", "VALID");
    expect_maxpool(&x, &attrs, 4, SHAPE(1, 1, 2, 2), VALS(4.8, 3.4, 3.9, 5.3), IVALS(5, 2, 10, 13),
                   4, 1e-6);
    d5_tensor_free(&x);
}

Test(maxpool, storage_order_numbers_indices_column_major)
{
    /* Plane c of H x W = 3 x 4: index c * 12 + h + 3 w instead of c * 12 + 4 h + w. */
    d5_tensor x = pattern(4, SHAPE(1, 2, 3, 4));
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(2, 2), 2),
                       attr_ints("strides", IVALS(1, 2), 2), attr_int("storage_order", 1)};
    d5_attrs attrs = {items, 3};
    expect_maxpool(&x, &attrs, 0, NULL, VALS(4.8, 3.4, 4.8, 3.9, 5.3, 4.4, 2.1, 4.4),
                   IVALS(4, 6, 4, 8, 15, 19, 14, 19), 8, 1e-6);
    d5_tensor_free(&x);
}

Test(maxpool, first_maximum_wins_ties)
{
    d5_tensor x = tf32(3, SHAPE(1, 1, 4), VALS(2, 2, 1, 1)), y[2];
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(2), 1), attr_ints("strides", IVALS(2), 1)};
    d5_attrs attrs = {items, 2};
    run_op("MaxPool", "ref", &x, 1, &attrs, y, 2);
    expect_i64(&y[1], IVALS(0, 2), 2);
    d5_tensor_free(&y[0]);
    d5_tensor_free(&y[1]);
    d5_tensor_free(&x);
}

Test(maxpool, uint8_input)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_U8, 3, SHAPE(1, 1, 5), &d), D5_OK);
    d5_tensor x, y[2];
    cr_assert_eq(d5_tensor_alloc(&d, &x), D5_OK);
    memcpy(x.data, (const uint8_t[]){3, 200, 7, 255, 1}, 5);
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(2), 1), attr_ints("strides", IVALS(2), 1),
                       attr_int("ceil_mode", 1)};
    d5_attrs attrs = {items, 3};
    run_op("MaxPool", "ref", &x, 1, &attrs, y, 2);
    cr_assert_eq(y[0].desc.dtype, D5_U8);
    const uint8_t *v = y[0].data;
    cr_assert(v[0] == 200 && v[1] == 255 && v[2] == 1, "%d %d %d", v[0], v[1], v[2]);
    expect_i64(&y[1], IVALS(1, 3, 4), 3);
    op_free_all(y, 2);
    d5_tensor_free(&x);
}

Test(maxpool, bad_inputs_and_attributes)
{
    d5_tensor x = tf32(4, SHAPE(1, 1, 4, 4), NULL);
    d5_attr items[2] = {attr_ints("kernel_shape", IVALS(2, 2, 2), 3)};
    d5_attrs attrs = {items, 1};
    op_expect_fails(
        "MaxPool", &x, 1, &attrs, 1, D5_ERR_INVALID,
        "MaxPool: kernel_shape has 3 values, expected 2 for an input with 2 spatial axes");
    attrs.count = 0;
    op_expect_fails("MaxPool", &x, 1, &attrs, 1, D5_ERR_INVALID,
                    "MaxPool: attribute kernel_shape is required");
    items[0] = attr_ints("kernel_shape", IVALS(2, 2), 2);
    items[1] = attr_ints("pads", IVALS(0, -1, 0, 0), 4);
    attrs.count = 2;
    op_expect_fails("MaxPool", &x, 1, &attrs, 1, D5_ERR_INVALID,
                    "MaxPool: pads[1] is -1, must be at least 0");
    items[1] = attr_ints("strides", IVALS(1, 0), 2);
    op_expect_fails("MaxPool", &x, 1, &attrs, 1, D5_ERR_INVALID,
                    "MaxPool: strides[1] is 0, must be at least 1");
    items[1] = attr_string("auto_pad", "SAME");
    op_expect_fails("MaxPool", &x, 1, &attrs, 1, D5_ERR_INVALID, "MaxPool: auto_pad is \"SAME\"");
    items[1] = attr_ints("pads", IVALS(2, 0, 0, 0), 4);
    op_expect_fails("MaxPool", &x, 1, &attrs, 1, D5_ERR_INVALID,
                    "MaxPool: the window of output position 0 along spatial axis 0 covers only "
                    "padding");
    items[0] = attr_ints("kernel_shape", IVALS(5, 2), 2);
    attrs.count = 1;
    op_expect_fails(
        "MaxPool", &x, 1, &attrs, 1, D5_ERR_SHAPE,
        "MaxPool: the window (extent 5: kernel 5, dilation 1) is larger than the padded "
        "input (4) along spatial axis 0");
    d5_tensor_free(&x);
    d5_tensor v = tf32(2, SHAPE(1, 4), NULL);
    items[0] = attr_ints("kernel_shape", IVALS(2), 1);
    op_expect_fails("MaxPool", &v, 1, &attrs, 1, D5_ERR_SHAPE,
                    "MaxPool: input has 2 dims, expected at least 3");
    d5_tensor_free(&v);
}

/* A case of the pooling gradient checks: the input shape (rank 3 to 5) and
 * the window along its ndim - 2 spatial axes, with ceil_mode 1;
 * count_include_pad given when 0 or 1 (-1: left out); nout outputs. */
typedef struct pool_case {
    int32_t ndim;
    int64_t shape[5], kernel[3], strides[3], dilations[3], pads[6];
    int64_t count_include_pad;
    int32_t nout;
} pool_case;

static void expect_pool_gradients(const char *op, const pool_case *cases, int n)
{
    for (int i = 0; i < n; i++) {
        const pool_case *c = &cases[i];
        int32_t r = c->ndim - 2;
        d5_tensor_desc d = op_fdesc(c->ndim, c->shape);
        d5_attr items[] = {attr_ints("kernel_shape", c->kernel, r),
                           attr_ints("strides", c->strides, r),
                           attr_ints("dilations", c->dilations, r),
                           attr_ints("pads", c->pads, 2 * r),
                           attr_int("ceil_mode", 1),
                           attr_int("count_include_pad", c->count_include_pad)};
        d5_attrs attrs = {items, c->count_include_pad >= 0 ? 6 : 5};
        char label[64];
        snprintf(label, sizeof label, "%s case %d (%d-d, %d outputs)", op, i, (int)r, (int)c->nout);
        expect_gradient_of(label, op, &d, 1, NULL, &attrs, c->nout);
    }
}

Test(maxpool, gradient_1d_2d_3d)
{
    static const pool_case cases[] = {
        {3, {2, 3, 7}, {3}, {2}, {2}, {2, 1}, -1, 1},
        {3, {2, 3, 7}, {3}, {2}, {2}, {2, 1}, -1, 2},
        {4, {1, 2, 6, 6}, {3, 2}, {2, 3}, {1, 2}, {1, 0, 1, 1}, -1, 1},
        {5, {1, 2, 4, 5, 3}, {2, 3, 2}, {2, 2, 2}, {2, 1, 1}, {1, 0, 1, 1, 1, 0}, -1, 1},
    };
    expect_pool_gradients("MaxPool", cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- AveragePool ------------------------------------------------------------------- */

Test(averagepool, one_d_by_hand_count_include_pad_and_ceil)
{
    /* x = 1..6, kernel 3, stride 2, pads [1, 1], ceil: windows start at -1, 1,
     * 3, 5. The last covers 5 (x = 6), 6 (padding) and 7 (past the padding):
     * 6 / 1 without padding, 6 / 2 with it. The first: (1 + 2) / 2 or / 3. */
    d5_tensor x = tf32(3, SHAPE(1, 1, 6), VALS(1, 2, 3, 4, 5, 6));
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(3), 1), attr_ints("strides", IVALS(2), 1),
                       attr_ints("pads", IVALS(1, 1), 2), attr_int("ceil_mode", 1),
                       attr_int("count_include_pad", 0)};
    d5_attrs attrs = {items, 5};
    expect_op_values("AveragePool", &x, 1, &attrs, VALS(1.5, 3, 5, 6), 4, 1e-6);
    items[4] = attr_int("count_include_pad", 1);
    expect_op_values("AveragePool", &x, 1, &attrs, VALS(1, 3, 5, 3), 4, 1e-6);
    items[3] = attr_int("ceil_mode", 0);
    expect_op_values("AveragePool", &x, 1, &attrs, VALS(1, 3, 5), 3, 1e-6);
    d5_tensor_free(&x);
}

Test(averagepool, onnx_conformance_cases)
{
    /* test_averagepool_2d_dilations and test_averagepool_2d_ceil_last_window_starts_on_pad
     * of ONNX's backend tests (onnx/backend/test/case/node/averagepool.py). */
    d5_tensor x = tf32(4, SHAPE(1, 1, 4, 4),
                       VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)),
              y;
    d5_attr a1[] = {attr_ints("kernel_shape", IVALS(2, 2), 2), attr_ints("strides", IVALS(1, 1), 2),
                    attr_ints("dilations", IVALS(2, 2), 2), attr_int("ceil_mode", 1)};
    d5_attrs attrs = {a1, 4};
    expect_op_values("AveragePool", &x, 1, &attrs, VALS(6, 7, 10, 11), 4, 1e-6);
    d5_tensor_free(&x);
    x = tf32(4, SHAPE(1, 3, 2, 2),
             VALS(0.8580, 0.0786, 0.2692, 0.1537, 0.8816, 0.4353, 0.5772, 0.6623, 0.9067, 0.9483,
                  0.5970, 0.7630));
    d5_attr a2[] = {attr_ints("kernel_shape", IVALS(3, 3), 2), attr_ints("strides", IVALS(3, 3), 2),
                    attr_ints("pads", IVALS(1, 1, 1, 1), 4), attr_int("ceil_mode", 1),
                    attr_int("count_include_pad", 1)};
    attrs = (d5_attrs){a2, 5};
    run_op("AveragePool", "ref", &x, 1, &attrs, &y, 1);
    op_expect_shape(&y, 4, SHAPE(1, 3, 1, 1));
    expect_values(&y, VALS(0.1511, 0.2841, 0.3572), 3, 1e-4);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
}

Test(averagepool, two_d_asymmetric_pads_strides_dilations_ceil)
{
    d5_tensor x = pattern(4, SHAPE(2, 1, 5, 6)), y;
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(3, 3), 2),
                       attr_ints("strides", IVALS(2, 2), 2),
                       attr_ints("dilations", IVALS(2, 1), 2),
                       attr_ints("pads", IVALS(2, 1, 1, 1), 4),
                       attr_int("ceil_mode", 1),
                       attr_int("count_include_pad", 0)};
    d5_attrs attrs = {items, 6};
    run_op("AveragePool", "ref", &x, 1, &attrs, &y, 1);
    op_expect_shape(&y, 4, SHAPE(2, 1, 3, 4));
    expect_values(&y,
                  VALS(0.65, 1.35, 0.6666667, 2.75, 0.2166667, 1.455556, 0.2333333, 0.7, 1.4, 2.1,
                       -0.2, -1.35, 0.1, 0.8, 1.733333, 2.2, 1.283333, 1.444444, 1.3, 1.766667,
                       0.85, 1.55, 0.8666667, 2.95),
                  24, 1e-5);
    d5_tensor_free(&y);
    items[5] = attr_int("count_include_pad", 1);
    expect_op_values("AveragePool", &x, 1, &attrs,
                     VALS(0.2888889, 0.9, 0.4444444, 0.9166667, 0.1444444, 1.455556, 0.2333333,
                          0.35, 0.9333333, 2.1, -0.2, -0.675, 0.04444444, 0.5333333, 1.155556,
                          0.7333333, 0.8555556, 1.444444, 1.3, 0.8833333, 0.5666667, 1.55,
                          0.8666667, 1.475),
                     24, 1e-5);
    items[4] = attr_int("ceil_mode", 0);
    run_op("AveragePool", "ref", &x, 1, &attrs, &y, 1);
    op_expect_shape(&y, 4, SHAPE(2, 1, 2, 3));
    d5_tensor_free(&y);
    d5_tensor_free(&x);
}

Test(averagepool, three_d_asymmetric_pads_strides_dilations_ceil)
{
    d5_tensor x = pattern(5, SHAPE(1, 1, 5, 4, 6)), y;
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(2, 2, 3), 3),
                       attr_ints("strides", IVALS(2, 3, 2), 3),
                       attr_ints("dilations", IVALS(1, 1, 2), 3),
                       attr_ints("pads", IVALS(0, 1, 2, 0, 1, 0), 6),
                       attr_int("ceil_mode", 1),
                       attr_int("count_include_pad", 0)};
    d5_attrs attrs = {items, 6};
    run_op("AveragePool", "ref", &x, 1, &attrs, &y, 1);
    op_expect_shape(&y, 5, SHAPE(1, 1, 3, 2, 3));
    expect_values(&y,
                  VALS(0.45, 0.9166667, 3, 1.3875, 0.6416667, 0.3, -1.4, 0.6833333, 1.15, 0.75,
                       1.216667, 2.0875, 0.85, -0.3, -1.45, 0.575, 0.2333333, 0.7),
                  18, 1e-5);
    d5_tensor_free(&y);
    items[5] = attr_int("count_include_pad", 1);
    expect_op_values("AveragePool", &x, 1, &attrs,
                     VALS(0.15, 0.4583333, 1.5, 0.925, 0.6416667, 0.3, -0.4666667, 0.3416667, 0.575,
                          0.5, 1.216667, 2.0875, 0.2833333, -0.15, -0.725, 0.3833333, 0.2333333,
                          0.7),
                     18, 1e-5);
    items[4] = attr_int("ceil_mode", 0);
    run_op("AveragePool", "ref", &x, 1, &attrs, &y, 1);
    op_expect_shape(&y, 5, SHAPE(1, 1, 2, 2, 2));
    d5_tensor_free(&y);
    d5_tensor_free(&x);
}

Test(averagepool, auto_pad_same_lower_counts_its_padding)
{
    /* 4x4, kernel 3, stride 2: 2x2 outputs and one pixel of padding at the
     * beginning of each axis. */
    d5_tensor x = pattern(4, SHAPE(1, 1, 4, 4));
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(3, 3), 2),
                       attr_ints("strides", IVALS(2, 2), 2), attr_string("auto_pad", "SAME_LOWER"),
                       attr_int("count_include_pad", 0)};
    d5_attrs attrs = {items, 4};
    expect_op_values("AveragePool", &x, 1, &attrs, VALS(0.4, 1.1, 1.583333, 1.744444), 4, 1e-5);
    items[3] = attr_int("count_include_pad", 1);
    expect_op_values("AveragePool", &x, 1, &attrs, VALS(0.1777778, 0.7333333, 1.055556, 1.744444),
                     4, 1e-5);
    d5_tensor_free(&x);
}

Test(averagepool, bad_attributes)
{
    d5_tensor x = tf32(5, SHAPE(1, 1, 4, 4, 4), NULL);
    d5_attr items[] = {attr_ints("kernel_shape", IVALS(2, 2, 2), 3),
                       attr_ints("strides", IVALS(1, 1), 2)};
    d5_attrs attrs = {items, 2};
    op_expect_fails(
        "AveragePool", &x, 1, &attrs, 1, D5_ERR_INVALID,
        "AveragePool: strides has 2 values, expected 3 for an input with 3 spatial axes");
    items[1] = attr_ints("pads", IVALS(0, 0, 0, 0, 0, 2), 6);
    items[0] = attr_ints("kernel_shape", IVALS(2, 2, 1), 3);
    op_expect_fails("AveragePool", &x, 1, &attrs, 1, D5_ERR_INVALID,
                    "AveragePool: the window of output position 4 along spatial axis 2 covers only "
                    "padding");
    items[1] = attr_float("count_include_pad", 1);
    op_expect_fails("AveragePool", &x, 1, &attrs, 1, D5_ERR_INVALID, "count_include_pad");
    d5_tensor_free(&x);
}

Test(averagepool, gradient_1d_2d_3d)
{
    static const pool_case cases[] = {
        {3, {2, 3, 7}, {3}, {2}, {2}, {2, 1}, 0, 1},
        {3, {2, 3, 7}, {3}, {2}, {2}, {2, 1}, 1, 1},
        {4, {2, 1, 5, 6}, {3, 3}, {2, 2}, {2, 1}, {2, 1, 1, 1}, 1, 1},
        {5, {1, 1, 5, 4, 6}, {2, 2, 3}, {2, 3, 2}, {1, 1, 2}, {0, 1, 2, 0, 1, 0}, -1, 1},
    };
    expect_pool_gradients("AveragePool", cases, (int)(sizeof cases / sizeof cases[0]));
}

/* ---- GlobalAveragePool ------------------------------------------------------------- */

Test(globalaveragepool, forward_gradient_and_errors)
{
    d5_tensor x = tf32(4, SHAPE(1, 2, 2, 2), VALS(1, 2, 3, 6, -1, 0, 4, 1)), y;
    run_op("GlobalAveragePool", "ref", &x, 1, NULL, &y, 1);
    op_expect_shape(&y, 4, SHAPE(1, 2, 1, 1));
    expect_values(&y, VALS(3, 1), 2, 1e-6);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    x = tf32(3, SHAPE(2, 1, 3), VALS(1, 2, 6, -3, 0, 0));
    run_op("GlobalAveragePool", "ref", &x, 1, NULL, &y, 1);
    op_expect_shape(&y, 3, SHAPE(2, 1, 1));
    expect_values(&y, VALS(3, -1), 2, 1e-6);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    d5_tensor_desc d = op_fdesc(4, SHAPE(2, 3, 4, 2));
    expect_gradient("GlobalAveragePool", &d, 1, NULL, NULL, 1);
    d = op_fdesc(5, SHAPE(1, 2, 2, 3, 2));
    expect_gradient("GlobalAveragePool", &d, 1, NULL, NULL, 1);
    x = tf32(1, SHAPE(4), NULL);
    op_expect_fails("GlobalAveragePool", &x, 1, NULL, 1, D5_ERR_SHAPE,
                    "GlobalAveragePool: input has 1 dims, expected at least 2");
    d5_tensor_free(&x);
}
