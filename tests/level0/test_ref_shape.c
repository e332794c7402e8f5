/* The reference shape operators: MatMul, Reshape, Flatten, Transpose, Concat,
 * Split, Slice, Squeeze, Unsqueeze, Pad, Identity. Expected values marked
 * "numpy" were computed with numpy 1.24 (Debian's python3-numpy) and pasted. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <string.h>

/* ---- MatMul ----------------------------------------------------------------------- */

Test(matmul, two_d)
{
    d5_tensor in[2] = {tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)),
                       tf32(2, SHAPE(3, 2), VALS(1, 0, 0, 1, 1, 1))};
    /* [[1+3, 2+3], [4+6, 5+6]] */
    op_check("MatMul", in, 2, NULL, 2, SHAPE(2, 2), VALS(4, 5, 10, 11));
}

/* A [2,1,2,3] = (1..12)/4, B [3,3,2] = (0..17 - 8)/2. */
static void matmul_inputs(d5_tensor *a, d5_tensor *b)
{
    *a = op_iota(4, SHAPE(2, 1, 2, 3));
    *b = op_iota(3, SHAPE(3, 3, 2));
    for (int i = 0; i < 12; i++) ((float *)a->data)[i] = (float)(i + 1) / 4;
    for (int i = 0; i < 18; i++) ((float *)b->data)[i] = (float)(i - 8) / 2;
}

Test(matmul, broadcast_batch_dims)
{
    d5_tensor in[2];
    matmul_inputs(&in[0], &in[1]);
    /* numpy: A @ B */
    op_check("MatMul", in, 2, NULL, 4, SHAPE(2, 3, 2, 2),
             VALS(-4, -3.25, -10.75, -8.875, 0.5, 1.25, 0.5, 2.375, 5, 5.75, 11.75, 13.625, -17.5,
                  -14.5, -24.25, -20.125, 0.5, 3.5, 0.5, 4.625, 18.5, 21.5, 25.25, 29.375));
}

Test(matmul, one_d_operands)
{
    d5_tensor a, b;
    /* numpy: [1, -2, 3] @ B, a 1-d A against a stack: [3,2] */
    matmul_inputs(&a, &b);
    d5_tensor in1[2] = {tf32(1, SHAPE(3), VALS(1, -2, 3)), b};
    op_check("MatMul", in1, 2, NULL, 2, SHAPE(3, 2), VALS(-4, -3, 2, 3, 8, 9));
    /* numpy: A @ [1, -2, 3], a 1-d B: [2,1,2] */
    d5_tensor in2[2] = {a, tf32(1, SHAPE(3), VALS(1, -2, 3))};
    op_check("MatMul", in2, 2, NULL, 3, SHAPE(2, 1, 2), VALS(1.5, 3, 4.5, 6));
    /* Both 1-d: a scalar, 4 - 10 + 18. */
    d5_tensor in3[2] = {tf32(1, SHAPE(3), VALS(1, -2, 3)), tf32(1, SHAPE(3), VALS(4, 5, 6))};
    op_check("MatMul", in3, 2, NULL, 0, NULL, VALS(12));
}

Test(matmul, bad_shapes)
{
    d5_tensor in[2] = {tf32(2, SHAPE(2, 3), NULL), tf32(2, SHAPE(4, 2), NULL)};
    op_check_fails("MatMul", in, 2, NULL, 1, D5_ERR_SHAPE,
                   "MatMul: A is [2,3] and B is [4,2]: inner dimensions 3 and 4 differ");
    d5_tensor in2[2] = {tf32(3, SHAPE(2, 2, 3), NULL), tf32(3, SHAPE(3, 3, 2), NULL)};
    op_check_fails("MatMul", in2, 2, NULL, 1, D5_ERR_SHAPE,
                   "MatMul: the batch dimensions of A [2,2,3] and B [3,3,2] do not broadcast");
    d5_tensor in3[2] = {tf32(0, NULL, NULL), tf32(1, SHAPE(1), NULL)};
    op_check_fails("MatMul", in3, 2, NULL, 1, D5_ERR_SHAPE, "scalars are not allowed");
}

Test(matmul, flops)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("MatMul", "ref", &desc), D5_OK);
    d5_tensor_desc in[2] = {op_fdesc(4, SHAPE(2, 1, 3, 4)), op_fdesc(3, SHAPE(5, 4, 6))};
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(desc, in, 2, NULL, 1, &op), D5_OK, "%s", d5_last_error());
    double flops, bytes;
    d5_op_cost(op, &flops, &bytes);
    cr_assert_eq(flops, 2.0 * 3 * 6 * 4 * 10); /* 2 M N K, 10 matrices */
    d5_op_free(op);
}

Test(matmul, gradient)
{
    d5_tensor_desc bc[2] = {op_fdesc(4, SHAPE(2, 1, 3, 4)), op_fdesc(3, SHAPE(3, 4, 2))};
    expect_gradient("MatMul", bc, 2, NULL, NULL, 1);
    d5_tensor_desc a1[2] = {op_fdesc(1, SHAPE(4)), op_fdesc(3, SHAPE(2, 4, 3))};
    expect_gradient("MatMul", a1, 2, NULL, NULL, 1);
    d5_tensor_desc b1[2] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(1, SHAPE(4))};
    expect_gradient("MatMul", b1, 2, NULL, NULL, 1);
    d5_tensor_desc v[2] = {op_fdesc(1, SHAPE(5)), op_fdesc(1, SHAPE(5))};
    expect_gradient("MatMul", v, 2, NULL, NULL, 1);
}

/* ---- Reshape ----------------------------------------------------------------------- */

Test(reshape, zero_copies_and_minus_one_infers)
{
    d5_tensor in[2] = {op_iota(3, SHAPE(2, 3, 4)), ti64(1, SHAPE(2), IVALS(0, -1))};
    d5_tensor y;
    run_op("Reshape", "ref", in, 2, NULL, &y, 1);
    op_expect_shape(&y, 2, SHAPE(2, 12));
    float want[24];
    for (int i = 0; i < 24; i++) want[i] = (float)i;
    expect_values(&y, want, 24, 0);
    d5_tensor_free(&y);
    op_free_all(in, 2);
    d5_tensor in2[2] = {op_iota(3, SHAPE(2, 3, 4)), ti64(1, SHAPE(4), IVALS(0, 0, -1, 2))};
    op_check("Reshape", in2, 2, NULL, 4, SHAPE(2, 3, 2, 2), want);
    d5_tensor in3[2] = {op_iota(3, SHAPE(2, 3, 4)), ti64(1, SHAPE(1), IVALS(-1))};
    op_check("Reshape", in3, 2, NULL, 1, SHAPE(24), want);
    d5_tensor in4[2] = {tf32(2, SHAPE(1, 1), VALS(7)), ti64(1, SHAPE(0), NULL)};
    op_check("Reshape", in4, 2, NULL, 0, NULL, VALS(7));
}

Test(reshape, allowzero)
{
    d5_attr a = attr_int("allowzero", 1);
    d5_attrs attrs = {&a, 1};
    /* ONNX's reshape_allowzero_reordered: (0,3,4) to (3,4,0). */
    d5_tensor in[2] = {tf32(3, SHAPE(0, 3, 4), NULL), ti64(1, SHAPE(3), IVALS(3, 4, 0))};
    op_check("Reshape", in, 2, &attrs, 3, SHAPE(3, 4, 0), NULL);
    /* Without allowzero the 0 copies the input's dimension 2 (4): 3*4*4 != 0. */
    d5_tensor in2[2] = {tf32(3, SHAPE(0, 3, 4), NULL), ti64(1, SHAPE(3), IVALS(3, 4, 0))};
    op_check_fails("Reshape", in2, 2, NULL, 1, D5_ERR_SHAPE,
                   "Reshape: input [0,3,4] has 0 elements, shape [3,4,4] has 48");
    d5_tensor in3[2] = {tf32(1, SHAPE(4), NULL), ti64(1, SHAPE(2), IVALS(0, -1))};
    op_check_fails("Reshape", in3, 2, &attrs, 1, D5_ERR_INVALID,
                   "Reshape: with allowzero = 1 the shape cannot hold both 0 and -1");
}

Test(reshape, bad_shapes)
{
    d5_tensor in[2] = {tf32(1, SHAPE(6), NULL), ti64(1, SHAPE(2), IVALS(-1, -1))};
    op_check_fails("Reshape", in, 2, NULL, 1, D5_ERR_INVALID,
                   "Reshape: shape has -1 at indices 0 and 1");
    d5_tensor in2[2] = {tf32(1, SHAPE(6), NULL), ti64(1, SHAPE(2), IVALS(4, -1))};
    op_check_fails("Reshape", in2, 2, NULL, 1, D5_ERR_SHAPE,
                   "Reshape: cannot infer the -1 at index 1: 6 elements of [6] over 4");
    d5_tensor in3[2] = {tf32(1, SHAPE(6), NULL), ti64(1, SHAPE(2), IVALS(6, 0))};
    op_check_fails("Reshape", in3, 2, NULL, 1, D5_ERR_SHAPE,
                   "Reshape: shape[1] is 0 (copy the input dimension) but the input has 1 dims");
    d5_tensor in4[2] = {tf32(1, SHAPE(6), NULL), ti64(1, SHAPE(2), IVALS(2, -3))};
    op_check_fails("Reshape", in4, 2, NULL, 1, D5_ERR_INVALID, "Reshape: shape[1] is -3");
}

Test(reshape, shape_must_be_known_at_create)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("Reshape", "ref", &desc), D5_OK);
    d5_tensor in[2] = {tf32(1, SHAPE(6), NULL), ti64(1, SHAPE(2), IVALS(2, 3))};
    d5_tensor known[2] = {in[0], in[1]};
    known[0].data = known[1].data = NULL;
    d5_op *op;
    cr_assert_eq(d5_op_create(desc, known, 2, NULL, 1, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "Reshape: input 1 (shape) must be a constant"), "%s",
              d5_last_error());
    op_free_all(in, 2);
}

Test(reshape, gradient)
{
    d5_tensor shape = ti64(1, SHAPE(3), IVALS(0, -1, 2));
    expect_gradient_given("Reshape", 3, SHAPE(2, 3, 4), &shape, NULL, 1);
    d5_tensor_free(&shape);
}

/* ---- Flatten -------------------------------------------------------------------------- */

Test(flatten, axes)
{
    float want[24];
    for (int i = 0; i < 24; i++) want[i] = (float)i;
    const int64_t axes[5] = {0, 1, 3, -1, -3};
    const int64_t rows[5] = {1, 2, 24, 6, 1};
    for (int k = 0; k < 5; k++) {
        d5_attr a = attr_int("axis", axes[k]);
        d5_attrs attrs = {&a, 1};
        d5_tensor x = op_iota(3, SHAPE(2, 3, 4));
        op_check("Flatten", &x, 1, &attrs, 2, SHAPE(rows[k], 24 / rows[k]), want);
    }
    d5_tensor x = op_iota(3, SHAPE(2, 3, 4)); /* default axis 1 */
    op_check("Flatten", &x, 1, NULL, 2, SHAPE(2, 12), want);
    d5_tensor s = tf32(0, NULL, VALS(5)); /* a scalar with axis 0 */
    d5_attr a0 = attr_int("axis", 0);
    d5_attrs attrs0 = {&a0, 1};
    op_check("Flatten", &s, 1, &attrs0, 2, SHAPE(1, 1), VALS(5));
}

Test(flatten, bad_axis_and_gradient)
{
    d5_attr a = attr_int("axis", 4);
    d5_attrs attrs = {&a, 1};
    d5_tensor x = tf32(3, SHAPE(2, 3, 4), NULL);
    op_check_fails("Flatten", &x, 1, &attrs, 1, D5_ERR_INVALID,
                   "Flatten: axis 4 is outside [-3, 3] for a 3-d input");
    d5_attr b = attr_int("axis", -2);
    d5_attrs battrs = {&b, 1};
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 4));
    expect_gradient("Flatten", &d, 1, NULL, &battrs, 1);
}

/* ---- Transpose ------------------------------------------------------------------------ */

Test(transpose, default_reverses)
{
    d5_tensor x = op_iota(2, SHAPE(2, 3));
    op_check("Transpose", &x, 1, NULL, 2, SHAPE(3, 2), VALS(0, 3, 1, 4, 2, 5));
}

Test(transpose, perm)
{
    d5_attr a = attr_ints("perm", IVALS(1, 2, 0), 3);
    d5_attrs attrs = {&a, 1};
    d5_tensor x = op_iota(3, SHAPE(2, 3, 4));
    /* numpy: arange(24).reshape(2,3,4).transpose(1,2,0) */
    op_check(
        "Transpose", &x, 1, &attrs, 3, SHAPE(3, 4, 2),
        VALS(0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23));
}

Test(transpose, bad_perm_and_gradient)
{
    d5_attr a = attr_ints("perm", IVALS(1, 1, 0), 3);
    d5_attrs attrs = {&a, 1};
    d5_tensor x = tf32(3, SHAPE(2, 3, 4), NULL);
    op_check_fails("Transpose", &x, 1, &attrs, 1, D5_ERR_INVALID, "Transpose: perm repeats axis 1");
    d5_attr b = attr_ints("perm", IVALS(1, 0), 2);
    d5_attrs battrs = {&b, 1};
    d5_tensor x2 = tf32(3, SHAPE(2, 3, 4), NULL);
    op_check_fails("Transpose", &x2, 1, &battrs, 1, D5_ERR_INVALID,
                   "Transpose: perm has 2 values for a 3-d input");
    d5_attr c = attr_ints("perm", IVALS(2, 0, 3, 1), 4);
    d5_attrs cattrs = {&c, 1};
    d5_tensor_desc d = op_fdesc(4, SHAPE(2, 3, 4, 2));
    expect_gradient("Transpose", &d, 1, NULL, &cattrs, 1);
}

/* ---- Concat ----------------------------------------------------------------------------- */

Test(concat, last_axis_and_first_axis)
{
    d5_attr a = attr_int("axis", -1);
    d5_attrs attrs = {&a, 1};
    d5_tensor in[3] = {tf32(2, SHAPE(2, 1), VALS(1, 2)), tf32(2, SHAPE(2, 2), VALS(3, 4, 5, 6)),
                       tf32(2, SHAPE(2, 0), NULL)};
    op_check("Concat", in, 3, &attrs, 2, SHAPE(2, 3), VALS(1, 3, 4, 2, 5, 6));
    d5_attr b = attr_int("axis", 0);
    d5_attrs battrs = {&b, 1};
    d5_tensor in2[2] = {tf32(2, SHAPE(1, 2), VALS(1, 2)), tf32(2, SHAPE(2, 2), VALS(3, 4, 5, 6))};
    op_check("Concat", in2, 2, &battrs, 2, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6));
    d5_tensor one = tf32(1, SHAPE(3), VALS(1, 2, 3));
    op_check("Concat", &one, 1, &battrs, 1, SHAPE(3), VALS(1, 2, 3));
}

Test(concat, bad_inputs)
{
    d5_attr a = attr_int("axis", 1);
    d5_attrs attrs = {&a, 1};
    d5_tensor in[2] = {tf32(2, SHAPE(2, 1), NULL), tf32(2, SHAPE(3, 2), NULL)};
    op_check_fails(
        "Concat", in, 2, &attrs, 1, D5_ERR_SHAPE,
        "Concat: input 0 is [2,1] but input 1 is [3,2]: they may differ only along axis 1");
    d5_tensor in2[2] = {tf32(2, SHAPE(2, 1), NULL), tf32(2, SHAPE(2, 2), NULL)};
    op_check_fails("Concat", in2, 2, NULL, 1, D5_ERR_INVALID, "Concat: attribute axis is required");
    d5_attr c = attr_int("axis", 2);
    d5_attrs cattrs = {&c, 1};
    d5_tensor in3[2] = {tf32(2, SHAPE(2, 1), NULL), tf32(2, SHAPE(2, 2), NULL)};
    op_check_fails("Concat", in3, 2, &cattrs, 1, D5_ERR_INVALID,
                   "Concat: axis 2 is outside [-2, 1] for a 2-d input");
}

Test(concat, gradient)
{
    d5_attr a = attr_int("axis", -2);
    d5_attrs attrs = {&a, 1};
    d5_tensor_desc in[3] = {op_fdesc(3, SHAPE(2, 1, 3)), op_fdesc(3, SHAPE(2, 3, 3)),
                            op_fdesc(3, SHAPE(2, 2, 3))};
    expect_gradient("Concat", in, 3, NULL, &attrs, 1);
}

/* ---- Split ------------------------------------------------------------------------------ */

Test(split, equal_parts)
{
    d5_attr a = attr_int("axis", 1);
    d5_attrs attrs = {&a, 1};
    d5_tensor x = op_iota(2, SHAPE(2, 6)), y[3];
    run_op("Split", "ref", &x, 1, &attrs, y, 3);
    for (int k = 0; k < 3; k++) {
        op_expect_shape(&y[k], 2, SHAPE(2, 2));
        float want[4] = {(float)(2 * k), (float)(2 * k + 1), (float)(6 + 2 * k),
                         (float)(7 + 2 * k)};
        expect_values(&y[k], want, 4, 0);
    }
    op_free_all(y, 3);
    d5_tensor_free(&x);
}

Test(split, given_lengths_and_num_outputs)
{
    d5_attr a = attr_int("axis", -1);
    d5_attrs attrs = {&a, 1};
    d5_tensor in[2] = {op_iota(2, SHAPE(2, 3)), ti64(1, SHAPE(2), IVALS(1, 2))}, y[3];
    run_op("Split", "ref", in, 2, &attrs, y, 2);
    op_expect_shape(&y[0], 2, SHAPE(2, 1));
    expect_values(&y[0], VALS(0, 3), 2, 0);
    op_expect_shape(&y[1], 2, SHAPE(2, 2));
    expect_values(&y[1], VALS(1, 2, 4, 5), 4, 0);
    op_free_all(y, 2);
    op_free_all(in, 2);
    /* Opset 18's num_outputs: 7 into parts of ceil(7/3) = 3: 3, 3, 1. */
    d5_attr n = attr_int("num_outputs", 3);
    d5_attrs nattrs = {&n, 1};
    d5_tensor x = op_iota(1, SHAPE(7));
    run_op("Split", "ref", &x, 1, &nattrs, y, 3);
    expect_values(&y[0], VALS(0, 1, 2), 3, 0);
    expect_values(&y[1], VALS(3, 4, 5), 3, 0);
    expect_values(&y[2], VALS(6), 1, 0);
    op_free_all(y, 3);
    d5_tensor_free(&x);
}

Test(split, bad_lengths)
{
    d5_tensor x = tf32(1, SHAPE(7), NULL);
    op_check_fails("Split", &x, 1, NULL, 2, D5_ERR_SHAPE,
                   "Split: the axis has 7 elements, not divisible into 2 equal outputs");
    d5_tensor in[2] = {tf32(1, SHAPE(7), NULL), ti64(1, SHAPE(2), IVALS(3, 3))};
    op_check_fails("Split", in, 2, NULL, 2, D5_ERR_SHAPE,
                   "Split: split sums to 6 but axis 0 has 7 elements");
    d5_tensor in2[2] = {tf32(1, SHAPE(7), NULL), ti64(1, SHAPE(2), IVALS(3, 4))};
    op_check_fails("Split", in2, 2, NULL, 3, D5_ERR_INVALID,
                   "Split: input 1 (split) has 2 values for 3 outputs");
}

Test(split, gradient)
{
    d5_tensor split = ti64(1, SHAPE(3), IVALS(2, 0, 3));
    d5_attr a = attr_int("axis", 1);
    d5_attrs attrs = {&a, 1};
    expect_gradient_given("Split", 3, SHAPE(2, 5, 2), &split, &attrs, 3);
    d5_tensor_free(&split);
    d5_tensor_desc x = op_fdesc(2, SHAPE(4, 3));
    expect_gradient("Split", &x, 1, NULL, NULL, 2);
}

/* ---- Slice ------------------------------------------------------------------------------ */

Test(slice, steps_and_axes)
{
    /* numpy: arange(12).reshape(3,4)[1:2, 0:3:2] */
    d5_tensor in[5] = {op_iota(2, SHAPE(3, 4)), ti64(1, SHAPE(2), IVALS(1, 0)),
                       ti64(1, SHAPE(2), IVALS(2, 3)), ti64(1, SHAPE(2), IVALS(0, 1)),
                       ti64(1, SHAPE(2), IVALS(1, 2))};
    op_check("Slice", in, 5, NULL, 2, SHAPE(1, 2), VALS(4, 6));
    /* Default axes and steps: [0:2, 1:3]. */
    d5_tensor in2[3] = {op_iota(2, SHAPE(3, 4)), ti64(1, SHAPE(2), IVALS(0, 1)),
                        ti64(1, SHAPE(2), IVALS(2, 3))};
    op_check("Slice", in2, 3, NULL, 2, SHAPE(2, 2), VALS(1, 2, 5, 6));
    /* numpy: arange(24).reshape(2,3,4)[:, 2:0:-1, 1:-1], axes given as -1, -2. */
    d5_tensor in3[5] = {op_iota(3, SHAPE(2, 3, 4)), ti64(1, SHAPE(2), IVALS(1, 2)),
                        ti64(1, SHAPE(2), IVALS(-1, 0)), ti64(1, SHAPE(2), IVALS(-1, -2)),
                        ti64(1, SHAPE(2), IVALS(1, -1))};
    op_check("Slice", in3, 5, NULL, 3, SHAPE(2, 2, 2), VALS(9, 10, 5, 6, 21, 22, 17, 18));
}

Test(slice, negative_steps_and_clamping)
{
    /* numpy: arange(12).reshape(3,4)[-1:-4:-2, ::-1] (end INT64_MIN on axis 1). */
    d5_tensor in[5] = {op_iota(2, SHAPE(3, 4)), ti64(1, SHAPE(2), IVALS(-1, -1)),
                       ti64(1, SHAPE(2), IVALS(-4, INT64_MIN)), ti64(1, SHAPE(2), IVALS(0, 1)),
                       ti64(1, SHAPE(2), IVALS(-2, -1))};
    op_check("Slice", in, 5, NULL, 2, SHAPE(2, 4), VALS(11, 10, 9, 8, 3, 2, 1, 0));
    /* start 10 clamps to 5; end -10 becomes -4 and clamps to -1: 5, 3, 1. */
    d5_tensor in2[5] = {op_iota(1, SHAPE(6)), ti64(1, SHAPE(1), IVALS(10)),
                        ti64(1, SHAPE(1), IVALS(-10)), ti64(1, SHAPE(1), IVALS(0)),
                        ti64(1, SHAPE(1), IVALS(-2))};
    op_check("Slice", in2, 5, NULL, 1, SHAPE(3), VALS(5, 3, 1));
    /* Out-of-range forward bounds clamp to the whole axis. */
    d5_tensor in3[3] = {op_iota(1, SHAPE(6)), ti64(1, SHAPE(1), IVALS(-100)),
                        ti64(1, SHAPE(1), IVALS(INT64_MAX))};
    op_check("Slice", in3, 3, NULL, 1, SHAPE(6), VALS(0, 1, 2, 3, 4, 5));
    /* An empty slice, and a step larger than the axis. */
    d5_tensor in4[3] = {op_iota(1, SHAPE(6)), ti64(1, SHAPE(1), IVALS(INT64_MAX)),
                        ti64(1, SHAPE(1), IVALS(INT64_MAX))};
    op_check("Slice", in4, 3, NULL, 1, SHAPE(0), NULL);
    d5_tensor in5[5] = {op_iota(1, SHAPE(6)), ti64(1, SHAPE(1), IVALS(1)),
                        ti64(1, SHAPE(1), IVALS(6)), ti64(1, SHAPE(1), IVALS(0)),
                        ti64(1, SHAPE(1), IVALS(INT64_MAX))};
    op_check("Slice", in5, 5, NULL, 1, SHAPE(1), VALS(1));
    d5_tensor in6[5] = {op_iota(1, SHAPE(6)), ti64(1, SHAPE(1), IVALS(-1)),
                        ti64(1, SHAPE(1), IVALS(INT64_MIN)), ti64(1, SHAPE(1), IVALS(0)),
                        ti64(1, SHAPE(1), IVALS(INT64_MIN))};
    op_check("Slice", in6, 5, NULL, 1, SHAPE(1), VALS(5));
    /* Backwards, start -100 clamps to 0 (the spec's [0, dim - 1]; Python's slicing would
     * give nothing) and end -100 to -1: element 0 alone. */
    d5_tensor in7[5] = {op_iota(1, SHAPE(6)), ti64(1, SHAPE(1), IVALS(-100)),
                        ti64(1, SHAPE(1), IVALS(-100)), ti64(1, SHAPE(1), IVALS(0)),
                        ti64(1, SHAPE(1), IVALS(-1))};
    op_check("Slice", in7, 5, NULL, 1, SHAPE(1), VALS(0));
    /* An empty axis stays empty, backwards too. */
    d5_tensor in8[5] = {tf32(2, SHAPE(0, 2), NULL), ti64(1, SHAPE(1), IVALS(-3)),
                        ti64(1, SHAPE(1), IVALS(1)), ti64(1, SHAPE(1), IVALS(0)),
                        ti64(1, SHAPE(1), IVALS(-2))};
    op_check("Slice", in8, 5, NULL, 2, SHAPE(0, 2), NULL);
}

Test(slice, bad_inputs)
{
    d5_tensor in[5] = {tf32(1, SHAPE(6), NULL), ti64(1, SHAPE(1), IVALS(0)),
                       ti64(1, SHAPE(1), IVALS(3)), ti64(1, SHAPE(1), IVALS(0)),
                       ti64(1, SHAPE(1), IVALS(0))};
    op_check_fails("Slice", in, 5, NULL, 1, D5_ERR_INVALID, "Slice: steps[0] is 0");
    d5_tensor in2[3] = {tf32(1, SHAPE(6), NULL), ti64(1, SHAPE(1), IVALS(0)),
                        ti64(1, SHAPE(2), IVALS(3, 3))};
    op_check_fails("Slice", in2, 3, NULL, 1, D5_ERR_INVALID,
                   "Slice: starts has 1 values but ends has 2");
    d5_tensor in3[4] = {tf32(2, SHAPE(6, 2), NULL), ti64(1, SHAPE(2), IVALS(0, 0)),
                        ti64(1, SHAPE(2), IVALS(1, 1)), ti64(1, SHAPE(2), IVALS(1, -1))};
    op_check_fails("Slice", in3, 4, NULL, 1, D5_ERR_INVALID, "Slice: axis 1 is given twice");
}

Test(slice, gradient)
{
    d5_tensor idx[4] = {ti64(1, SHAPE(2), IVALS(-1, 1)), ti64(1, SHAPE(2), IVALS(INT64_MIN, 9)),
                        ti64(1, SHAPE(2), IVALS(2, 0)), ti64(1, SHAPE(2), IVALS(-2, 2))};
    d5_tensor_desc in[5] = {op_fdesc(3, SHAPE(3, 2, 5)), idx[0].desc, idx[1].desc, idx[2].desc,
                            idx[3].desc};
    d5_tensor given[5] = {{.data = NULL}, idx[0], idx[1], idx[2], idx[3]};
    expect_gradient("Slice", in, 5, given, NULL, 1);
    op_free_all(idx, 4);
}

/* ---- Squeeze and Unsqueeze -------------------------------------------------------------- */

Test(squeeze, all_or_given_axes)
{
    d5_tensor x = op_iota(4, SHAPE(1, 3, 1, 2));
    op_check("Squeeze", &x, 1, NULL, 2, SHAPE(3, 2), VALS(0, 1, 2, 3, 4, 5));
    d5_tensor in[2] = {op_iota(4, SHAPE(1, 3, 1, 2)), ti64(1, SHAPE(1), IVALS(-2))};
    op_check("Squeeze", in, 2, NULL, 3, SHAPE(1, 3, 2), VALS(0, 1, 2, 3, 4, 5));
    d5_tensor in2[2] = {op_iota(4, SHAPE(1, 3, 1, 2)), ti64(1, SHAPE(2), IVALS(2, 0))};
    op_check("Squeeze", in2, 2, NULL, 2, SHAPE(3, 2), VALS(0, 1, 2, 3, 4, 5));
}

Test(squeeze, bad_axes_and_gradient)
{
    d5_tensor in[2] = {tf32(3, SHAPE(1, 3, 1), NULL), ti64(1, SHAPE(1), IVALS(1))};
    op_check_fails("Squeeze", in, 2, NULL, 1, D5_ERR_SHAPE, "Squeeze: axis 1 has size 3, not 1");
    d5_tensor in2[2] = {tf32(3, SHAPE(1, 3, 1), NULL), ti64(1, SHAPE(1), IVALS(3))};
    op_check_fails("Squeeze", in2, 2, NULL, 1, D5_ERR_INVALID,
                   "Squeeze: axis 3 is outside [-3, 2] for a 3-d input");
    d5_tensor axes = ti64(1, SHAPE(1), IVALS(-1));
    expect_gradient_given("Squeeze", 3, SHAPE(2, 3, 1), &axes, NULL, 1);
    d5_tensor_free(&axes);
}

Test(unsqueeze, axes)
{
    d5_tensor in[2] = {op_iota(2, SHAPE(2, 3)), ti64(1, SHAPE(2), IVALS(0, -1))};
    op_check("Unsqueeze", in, 2, NULL, 4, SHAPE(1, 2, 3, 1), VALS(0, 1, 2, 3, 4, 5));
    d5_tensor in2[2] = {op_iota(2, SHAPE(2, 3)), ti64(1, SHAPE(2), IVALS(2, 0))};
    op_check("Unsqueeze", in2, 2, NULL, 4, SHAPE(1, 2, 1, 3), VALS(0, 1, 2, 3, 4, 5));
    d5_tensor in3[2] = {tf32(0, NULL, VALS(4)), ti64(1, SHAPE(1), IVALS(0))};
    op_check("Unsqueeze", in3, 2, NULL, 1, SHAPE(1), VALS(4));
}

Test(unsqueeze, bad_axes_and_gradient)
{
    d5_tensor in[2] = {tf32(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(1, -3))};
    op_check_fails("Unsqueeze", in, 2, NULL, 1, D5_ERR_INVALID,
                   "Unsqueeze: axis 1 is given twice (as 1 and -3)");
    d5_tensor in2[2] = {tf32(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(1), IVALS(3))};
    op_check_fails("Unsqueeze", in2, 2, NULL, 1, D5_ERR_INVALID,
                   "Unsqueeze: axis 3 is outside [-3, 2] for a 3-d output");
    d5_tensor axes = ti64(1, SHAPE(2), IVALS(1, 3));
    expect_gradient_given("Unsqueeze", 2, SHAPE(2, 3), &axes, NULL, 1);
    d5_tensor_free(&axes);
}

/* ---- Pad -------------------------------------------------------------------------------- */

static d5_attrs mode(d5_attr *a, const char *m)
{
    *a = attr_string("mode", m);
    return (d5_attrs){a, 1};
}

Test(pad, constant)
{
    /* [[1,2],[3,4]] with one row before and two columns after, value 2.5. */
    d5_tensor in[3] = {tf32(2, SHAPE(2, 2), VALS(1, 2, 3, 4)), ti64(1, SHAPE(4), IVALS(1, 0, 0, 2)),
                       tf32(0, NULL, VALS(2.5))};
    op_check("Pad", in, 3, NULL, 2, SHAPE(3, 4),
             VALS(2.5, 2.5, 2.5, 2.5, 1, 2, 2.5, 2.5, 3, 4, 2.5, 2.5));
    /* Default value 0, negative pads cropping. */
    d5_tensor in2[2] = {op_iota(2, SHAPE(3, 3)), ti64(1, SHAPE(4), IVALS(-1, 1, 0, -1))};
    op_check("Pad", in2, 2, NULL, 2, SHAPE(2, 3), VALS(0, 3, 4, 0, 6, 7));
    /* Opset 18's axes input: pad only axis -1. */
    d5_tensor in3[4] = {op_iota(2, SHAPE(2, 2)), ti64(1, SHAPE(2), IVALS(1, 1)),
                        tf32(0, NULL, VALS(9)), ti64(1, SHAPE(1), IVALS(-1))};
    op_check("Pad", in3, 4, NULL, 2, SHAPE(2, 4), VALS(9, 0, 1, 9, 9, 2, 3, 9));
}

Test(pad, reflect_edge_wrap)
{
    d5_attr a, b, c;
    /* ONNX's reflect example. */
    d5_attrs reflect = mode(&a, "reflect");
    d5_tensor in[2] = {tf32(2, SHAPE(3, 2), VALS(1.0, 1.2, 2.3, 3.4, 4.5, 5.7)),
                       ti64(1, SHAPE(4), IVALS(0, 2, 0, 0))};
    op_check("Pad", in, 2, &reflect, 2, SHAPE(3, 4),
             VALS(1.0, 1.2, 1.0, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7, 4.5, 5.7));
    /* numpy: np.pad(arange(1, 7).reshape(2, 3), ((1, 1), (2, 0)), 'reflect') */
    d5_tensor in2[2] = {tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)),
                        ti64(1, SHAPE(4), IVALS(1, 2, 1, 0))};
    op_check("Pad", in2, 2, &reflect, 2, SHAPE(4, 5),
             VALS(6, 5, 4, 5, 6, 3, 2, 1, 2, 3, 6, 5, 4, 5, 6, 3, 2, 1, 2, 3));
    /* numpy: np.pad([1, 2, 3], (5, 4), 'reflect'): pads longer than the axis. */
    d5_tensor in3[2] = {tf32(1, SHAPE(3), VALS(1, 2, 3)), ti64(1, SHAPE(2), IVALS(5, 4))};
    op_check("Pad", in3, 2, &reflect, 1, SHAPE(12), VALS(2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3));
    /* numpy: np.pad([7], (2, 3), 'reflect') */
    d5_tensor in4[2] = {tf32(1, SHAPE(1), VALS(7)), ti64(1, SHAPE(2), IVALS(2, 3))};
    op_check("Pad", in4, 2, &reflect, 1, SHAPE(6), VALS(7, 7, 7, 7, 7, 7));
    /* numpy: np.pad([[1, 2], [3, 4]], ((1, 0), (2, 1)), 'edge') */
    d5_attrs edge = mode(&b, "edge");
    d5_tensor in5[2] = {tf32(2, SHAPE(2, 2), VALS(1, 2, 3, 4)),
                        ti64(1, SHAPE(4), IVALS(1, 2, 0, 1))};
    op_check("Pad", in5, 2, &edge, 2, SHAPE(3, 5),
             VALS(1, 1, 1, 2, 2, 1, 1, 1, 2, 2, 3, 3, 3, 4, 4));
    /* numpy: np.pad([1, 2, 3], (7, 7), 'wrap') */
    d5_attrs wrap = mode(&c, "wrap");
    d5_tensor in6[2] = {tf32(1, SHAPE(3), VALS(1, 2, 3)), ti64(1, SHAPE(2), IVALS(7, 7))};
    op_check("Pad", in6, 2, &wrap, 1, SHAPE(17),
             VALS(3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1));
    /* Cropping happens first: [0..5][1:] is [1..5], reflected by 2 at the front. */
    d5_tensor in7[2] = {op_iota(1, SHAPE(6)), ti64(1, SHAPE(2), IVALS(2, -1))};
    op_check("Pad", in7, 2, &reflect, 1, SHAPE(7), VALS(2, 1, 0, 1, 2, 3, 4));
}

Test(pad, bad_inputs)
{
    d5_attr a, b;
    d5_attrs bad = mode(&a, "mirror");
    d5_tensor in[2] = {tf32(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(1, 1))};
    op_check_fails("Pad", in, 2, &bad, 1, D5_ERR_INVALID,
                   "Pad: mode 'mirror' is not constant, reflect, edge or wrap");
    d5_tensor in2[2] = {tf32(2, SHAPE(3, 2), NULL), ti64(1, SHAPE(2), IVALS(1, 1))};
    op_check_fails("Pad", in2, 2, NULL, 1, D5_ERR_INVALID,
                   "Pad: input 1 (pads) has 2 values, expected 4");
    d5_tensor in3[2] = {tf32(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(-2, -2))};
    op_check_fails("Pad", in3, 2, NULL, 1, D5_ERR_SHAPE,
                   "Pad: pads remove 4 elements from axis 0 of size 3");
    d5_attrs edge = mode(&b, "edge");
    d5_tensor in4[2] = {tf32(2, SHAPE(2, 0), NULL), ti64(1, SHAPE(4), IVALS(0, 1, 0, 1))};
    op_check_fails("Pad", in4, 2, &edge, 1, D5_ERR_SHAPE,
                   "Pad: cannot pad axis 1 in mode edge: it has no elements");
}

Test(pad, gradient)
{
    d5_tensor pads = ti64(1, SHAPE(6), IVALS(1, 0, 2, 2, -1, 3));
    d5_tensor_desc in[3] = {op_fdesc(3, SHAPE(3, 2, 4)), pads.desc, op_fdesc(0, NULL)};
    d5_tensor given[3] = {{.data = NULL}, pads, {.data = NULL}};
    expect_gradient("Pad", in, 3, given, NULL, 1); /* constant_value gets a gradient too */
    const char *modes[3] = {"reflect", "edge", "wrap"};
    for (int k = 0; k < 3; k++) {
        d5_attr a;
        d5_attrs attrs = mode(&a, modes[k]);
        expect_gradient("Pad", in, 2, given, &attrs, 1);
    }
    d5_tensor_free(&pads);
}

/* ---- Identity --------------------------------------------------------------------------- */

Test(identity, any_dtype_and_gradient)
{
    d5_tensor x = tf32(2, SHAPE(2, 2), VALS(1, -2, 3.5, 0));
    op_check("Identity", &x, 1, NULL, 2, SHAPE(2, 2), VALS(1, -2, 3.5, 0));
    d5_tensor i = ti64(1, SHAPE(3), IVALS(-7, 0, 1 << 20)), y;
    run_op("Identity", "ref", &i, 1, NULL, &y, 1);
    cr_assert_eq(y.desc.dtype, D5_I64);
    cr_assert_eq(memcmp(y.data, i.data, 3 * sizeof(int64_t)), 0);
    d5_tensor_free(&y);
    d5_tensor_free(&i);
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 2));
    expect_gradient("Identity", &d, 1, NULL, NULL, 1);
}
