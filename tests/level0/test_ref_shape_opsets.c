/* The shape operators' older opsets, where operands were attributes:
 * Unsqueeze, Squeeze, Split, Slice, Pad and Reshape (test_ref_shape.c has the
 * current semantics). */
#include "op_support.h"

#include <criterion/criterion.h>
#include <string.h>

/* ---- Older opsets: operands that were attributes --------------------------------------- */

Test(unsqueeze, axes_attribute_before_opset_13)
{
    opset_attrs o;
    d5_attr axes = attr_ints("axes", IVALS(3), 1);
    d5_tensor x = op_iota(3, SHAPE(3, 4, 5)), y;
    run_op("Unsqueeze", "ref", &x, 1, with_opset(&o, 11, &axes, 1), &y, 1);
    op_expect_shape(&y, 4, SHAPE(3, 4, 5, 1));
    cr_assert_eq(memcmp(x.data, y.data, 60 * sizeof(float)), 0);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    d5_attr axes2 = attr_ints("axes", IVALS(0, -1), 2);
    d5_tensor x2 = op_iota(2, SHAPE(2, 3));
    op_check("Unsqueeze", &x2, 1, with_opset(&o, 12, &axes2, 1), 4, SHAPE(1, 2, 3, 1),
             VALS(0, 1, 2, 3, 4, 5));
    /* Opset 13 reads input 1 as before. */
    d5_tensor in[2] = {op_iota(2, SHAPE(2, 3)), ti64(1, SHAPE(1), IVALS(1))};
    op_check("Unsqueeze", in, 2, with_opset(&o, 13, NULL, 0), 3, SHAPE(2, 1, 3),
             VALS(0, 1, 2, 3, 4, 5));
    d5_tensor_desc d = op_fdesc(2, SHAPE(2, 3));
    expect_gradient("Unsqueeze", &d, 1, NULL, with_opset(&o, 11, &axes2, 1), 1);
}

Test(unsqueeze, arity_follows_the_opset)
{
    opset_attrs o;
    d5_attr axes = attr_ints("axes", IVALS(0), 1);
    d5_tensor x = tf32(1, SHAPE(2), NULL);
    op_check_fails("Unsqueeze", &x, 1, with_opset(&o, 11, NULL, 0), 1, D5_ERR_INVALID,
                   "Unsqueeze: opset 11 requires the attribute axes");
    x = tf32(1, SHAPE(2), NULL);
    op_check_fails("Unsqueeze", &x, 1, with_opset(&o, 13, NULL, 0), 1, D5_ERR_INVALID,
                   "Unsqueeze: opset 13 takes 2 inputs (data, axes), got 1");
    x = tf32(1, SHAPE(2), NULL);
    op_check_fails("Unsqueeze", &x, 1, NULL, 1, D5_ERR_INVALID,
                   "Unsqueeze: opset 19 takes 2 inputs (data, axes), got 1");
    d5_tensor in[2] = {tf32(1, SHAPE(2), NULL), ti64(1, SHAPE(1), IVALS(0))};
    op_check_fails("Unsqueeze", in, 2, with_opset(&o, 11, &axes, 1), 1, D5_ERR_INVALID,
                   "Unsqueeze: opset 11 takes 1 input (axes is an attribute), got 2");
    d5_tensor in2[2] = {tf32(1, SHAPE(2), NULL), ti64(1, SHAPE(1), IVALS(0))};
    op_check_fails("Unsqueeze", in2, 2, with_opset(&o, 13, &axes, 1), 1, D5_ERR_INVALID,
                   "Unsqueeze: opset 13 takes axes as input 1, not as an attribute");
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("Unsqueeze", "ref", &desc), D5_OK);
    cr_assert_eq(desc->min_inputs, 1);
    cr_assert_eq(desc->max_inputs, 2);
}

Test(squeeze, axes_attribute_before_opset_13)
{
    opset_attrs o;
    d5_attr axes = attr_ints("axes", IVALS(2), 1);
    d5_tensor x = op_iota(4, SHAPE(1, 3, 1, 2));
    op_check("Squeeze", &x, 1, with_opset(&o, 11, &axes, 1), 3, SHAPE(1, 3, 2),
             VALS(0, 1, 2, 3, 4, 5));
    /* Without axes every dimension of size 1 goes. */
    x = op_iota(4, SHAPE(1, 3, 1, 2));
    op_check("Squeeze", &x, 1, with_opset(&o, 1, NULL, 0), 2, SHAPE(3, 2), VALS(0, 1, 2, 3, 4, 5));
    d5_attr bad = attr_ints("axes", IVALS(1), 1);
    x = op_iota(4, SHAPE(1, 3, 1, 2));
    op_check_fails("Squeeze", &x, 1, with_opset(&o, 11, &bad, 1), 1, D5_ERR_SHAPE,
                   "Squeeze: axis 1 has size 3, not 1");
    d5_tensor in[2] = {op_iota(2, SHAPE(1, 2)), ti64(1, SHAPE(1), IVALS(0))};
    op_check_fails("Squeeze", in, 2, with_opset(&o, 12, NULL, 0), 1, D5_ERR_INVALID,
                   "Squeeze: opset 12 takes 1 input (axes is an attribute), got 2");
    x = op_iota(2, SHAPE(1, 2));
    op_check_fails("Squeeze", &x, 1, with_opset(&o, 13, &axes, 1), 1, D5_ERR_INVALID,
                   "Squeeze: opset 13 takes axes as input 1, not as an attribute");
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 1, 3));
    d5_attr ax1 = attr_ints("axes", IVALS(-2), 1);
    expect_gradient("Squeeze", &d, 1, NULL, with_opset(&o, 11, &ax1, 1), 1);
}

Test(split, split_attribute_before_opset_13)
{
    /* ONNX's pytorch-operator test_operator_chunk: [0, 1, 2] into 2 and 1 at opset 6. */
    opset_attrs o;
    d5_attr items[2] = {attr_int("axis", 0), attr_ints("split", IVALS(2, 1), 2)};
    d5_tensor x = op_iota(1, SHAPE(3)), y[2];
    run_op("Split", "ref", &x, 1, with_opset(&o, 6, items, 2), y, 2);
    op_expect_shape(&y[0], 1, SHAPE(2));
    expect_values(&y[0], VALS(0, 1), 2, 0);
    op_expect_shape(&y[1], 1, SHAPE(1));
    expect_values(&y[1], VALS(2), 1, 0);
    op_free_all(y, 2);
    /* Without split: equal parts, which must divide the axis before opset 18. */
    d5_attr axis = attr_int("axis", -1);
    d5_tensor x2 = op_iota(2, SHAPE(2, 4));
    run_op("Split", "ref", &x2, 1, with_opset(&o, 11, &axis, 1), y, 2);
    expect_values(&y[0], VALS(0, 1, 4, 5), 4, 0);
    expect_values(&y[1], VALS(2, 3, 6, 7), 4, 0);
    op_free_all(y, 2);
    d5_tensor_free(&x2);
    op_check_fails("Split", &x, 1, with_opset(&o, 11, NULL, 0), 2, D5_ERR_SHAPE,
                   "Split: the axis has 3 elements, not divisible into 2 equal outputs");
    /* Opset 1 takes split as an attribute or as input 1. */
    d5_tensor in[2] = {op_iota(1, SHAPE(3)), ti64(1, SHAPE(2), IVALS(1, 2))};
    run_op("Split", "ref", in, 2, with_opset(&o, 1, NULL, 0), y, 2);
    expect_values(&y[0], VALS(0), 1, 0);
    expect_values(&y[1], VALS(1, 2), 2, 0);
    op_free_all(y, 2);
    op_free_all(in, 2);
    d5_tensor_desc d = op_fdesc(2, SHAPE(3, 4));
    d5_attr lens[2] = {attr_int("axis", 1), attr_ints("split", IVALS(1, 3), 2)};
    expect_gradient("Split", &d, 1, NULL, with_opset(&o, 11, lens, 2), 2);
}

Test(split, arity_and_attributes_follow_the_opset)
{
    opset_attrs o;
    d5_attr split = attr_ints("split", IVALS(2, 1), 2);
    d5_tensor in[2] = {tf32(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(2, 1))};
    op_check_fails("Split", in, 2, with_opset(&o, 11, NULL, 0), 2, D5_ERR_INVALID,
                   "Split: opset 11 takes 1 input (split is an attribute), got 2");
    d5_tensor x = tf32(1, SHAPE(3), NULL);
    op_check_fails("Split", &x, 1, with_opset(&o, 13, &split, 1), 2, D5_ERR_INVALID,
                   "Split: opset 13 takes split as input 1, not as an attribute");
    d5_tensor in2[2] = {tf32(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(2, 1))};
    op_check_fails("Split", in2, 2, with_opset(&o, 1, &split, 1), 2, D5_ERR_INVALID,
                   "Split: give split either as input 1 or as an attribute, not both");
    d5_attr num = attr_int("num_outputs", 2);
    x = tf32(1, SHAPE(3), NULL);
    op_check_fails("Split", &x, 1, with_opset(&o, 17, &num, 1), 2, D5_ERR_INVALID,
                   "Split: num_outputs is an attribute of opset 18 and later, not of opset 17");
    d5_attr three = attr_ints("split", IVALS(1, 1, 1), 3);
    x = tf32(1, SHAPE(3), NULL);
    op_check_fails("Split", &x, 1, with_opset(&o, 11, &three, 1), 2, D5_ERR_INVALID,
                   "Split: attribute split has 3 values for 2 outputs");
}

Test(slice, attributes_before_opset_10)
{
    /* numpy: arange(24).reshape(2, 3, 4)[:, 1:3, -3:] */
    opset_attrs o;
    d5_attr items[3] = {attr_ints("starts", IVALS(1, -3), 2),
                        attr_ints("ends", IVALS(3, INT64_MAX), 2),
                        attr_ints("axes", IVALS(1, 2), 2)};
    d5_tensor x = op_iota(3, SHAPE(2, 3, 4));
    op_check("Slice", &x, 1, with_opset(&o, 9, items, 3), 3, SHAPE(2, 2, 3),
             VALS(5, 6, 7, 9, 10, 11, 17, 18, 19, 21, 22, 23));
    /* numpy: arange(24).reshape(2, 3, 4)[0:1, 1:2] (axes default to 0, 1). */
    d5_attr items2[2] = {attr_ints("starts", IVALS(0, 1), 2), attr_ints("ends", IVALS(1, 2), 2)};
    x = op_iota(3, SHAPE(2, 3, 4));
    op_check("Slice", &x, 1, with_opset(&o, 1, items2, 2), 3, SHAPE(1, 1, 4), VALS(4, 5, 6, 7));
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 4));
    expect_gradient("Slice", &d, 1, NULL, with_opset(&o, 9, items, 3), 1);
}

Test(slice, arity_and_attributes_follow_the_opset)
{
    opset_attrs o;
    d5_attr starts = attr_ints("starts", IVALS(0), 1);
    d5_tensor x = tf32(1, SHAPE(4), NULL);
    op_check_fails("Slice", &x, 1, with_opset(&o, 9, &starts, 1), 1, D5_ERR_INVALID,
                   "Slice: opset 9 requires the attribute ends");
    d5_attr both[2] = {starts, attr_ints("ends", IVALS(1, 2), 2)};
    x = tf32(1, SHAPE(4), NULL);
    op_check_fails("Slice", &x, 1, with_opset(&o, 9, both, 2), 1, D5_ERR_INVALID,
                   "Slice: starts has 1 values but ends has 2");
    d5_tensor in[3] = {tf32(1, SHAPE(4), NULL), ti64(1, SHAPE(1), IVALS(0)),
                       ti64(1, SHAPE(1), IVALS(2))};
    op_check_fails("Slice", in, 3, with_opset(&o, 9, both, 2), 1, D5_ERR_INVALID,
                   "Slice: opset 9 takes 1 input (starts, ends and axes are attributes), got 3");
    x = tf32(1, SHAPE(4), NULL);
    op_check_fails("Slice", &x, 1, with_opset(&o, 10, NULL, 0), 1, D5_ERR_INVALID,
                   "Slice: opset 10 takes 3 to 5 inputs (data, starts, ends, axes, steps), got 1");
    d5_tensor in2[3] = {tf32(1, SHAPE(4), NULL), ti64(1, SHAPE(1), IVALS(0)),
                        ti64(1, SHAPE(1), IVALS(2))};
    op_check_fails("Slice", in2, 3, with_opset(&o, 13, &starts, 1), 1, D5_ERR_INVALID,
                   "Slice: opset 13 takes starts as input 1, not as an attribute");
}

Test(pad, attributes_before_opset_11)
{
    opset_attrs o;
    /* numpy: np.pad(arange(1, 7).reshape(2, 3), ((1, 0), (0, 2)), constant_values=1.5) */
    d5_attr c[2] = {attr_ints("pads", IVALS(1, 0, 0, 2), 4), attr_float("value", 1.5)};
    d5_tensor x = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    op_check("Pad", &x, 1, with_opset(&o, 2, c, 2), 2, SHAPE(3, 5),
             VALS(1.5, 1.5, 1.5, 1.5, 1.5, 1, 2, 3, 1.5, 1.5, 4, 5, 6, 1.5, 1.5));
    /* numpy: np.pad(..., ((0, 0), (2, 1)), 'reflect') */
    d5_attr r[2] = {attr_ints("pads", IVALS(0, 2, 0, 1), 4), attr_string("mode", "reflect")};
    x = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    op_check("Pad", &x, 1, with_opset(&o, 10, r, 2), 2, SHAPE(2, 6),
             VALS(3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5));
    /* numpy: np.pad(..., ((1, 1), (1, 0)), 'edge'), with opset 1's name paddings. */
    d5_attr e[2] = {attr_ints("paddings", IVALS(1, 1, 1, 0), 4), attr_string("mode", "edge")};
    x = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    op_check("Pad", &x, 1, with_opset(&o, 1, e, 2), 2, SHAPE(4, 4),
             VALS(1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6));
    /* No value: zeros. */
    x = tf32(1, SHAPE(2), VALS(7, 8));
    d5_attr z = attr_ints("pads", IVALS(1, 1), 2);
    op_check("Pad", &x, 1, with_opset(&o, 2, &z, 1), 1, SHAPE(4), VALS(0, 7, 8, 0));
    d5_tensor_desc d = op_fdesc(2, SHAPE(3, 4));
    expect_gradient("Pad", &d, 1, NULL, with_opset(&o, 10, r, 2), 1);
    expect_gradient("Pad", &d, 1, NULL, with_opset(&o, 2, c, 2), 1);
}

Test(pad, arity_attributes_and_modes_follow_the_opset)
{
    opset_attrs o;
    d5_tensor x = tf32(1, SHAPE(2), NULL);
    op_check_fails("Pad", &x, 1, with_opset(&o, 2, NULL, 0), 1, D5_ERR_INVALID,
                   "Pad: opset 2 requires the attribute pads");
    d5_attr short_pads = attr_ints("pads", IVALS(1), 1);
    x = tf32(1, SHAPE(2), NULL);
    op_check_fails("Pad", &x, 1, with_opset(&o, 2, &short_pads, 1), 1, D5_ERR_INVALID,
                   "Pad: attribute pads has 1 values, expected 2");
    d5_attr pads = attr_ints("pads", IVALS(1, 1), 2);
    d5_tensor in[2] = {tf32(1, SHAPE(2), NULL), ti64(1, SHAPE(2), IVALS(1, 1))};
    op_check_fails("Pad", in, 2, with_opset(&o, 10, &pads, 1), 1, D5_ERR_INVALID,
                   "Pad: opset 10 takes 1 input (pads and value are attributes), got 2");
    x = tf32(1, SHAPE(2), NULL);
    op_check_fails("Pad", &x, 1, with_opset(&o, 11, &pads, 1), 1, D5_ERR_INVALID,
                   "Pad: opset 11 takes pads and constant_value as inputs 1 and 2, not as "
                   "attributes");
    x = tf32(1, SHAPE(2), NULL);
    op_check_fails("Pad", &x, 1, with_opset(&o, 13, NULL, 0), 1, D5_ERR_INVALID,
                   "Pad: opset 13 takes 2 to 3 inputs, got 1");
    d5_tensor in2[4] = {tf32(1, SHAPE(2), NULL), ti64(1, SHAPE(2), IVALS(1, 1)),
                        tf32(0, NULL, VALS(0)), ti64(1, SHAPE(1), IVALS(0))};
    op_check_fails("Pad", in2, 4, with_opset(&o, 17, NULL, 0), 1, D5_ERR_INVALID,
                   "Pad: input 3 (axes) belongs to opset 18 and later, not to opset 17");
    d5_attr wrap = attr_string("mode", "wrap");
    d5_tensor in3[2] = {tf32(1, SHAPE(2), NULL), ti64(1, SHAPE(2), IVALS(1, 1))};
    op_check_fails("Pad", in3, 2, with_opset(&o, 18, &wrap, 1), 1, D5_ERR_INVALID,
                   "Pad: mode 'wrap' belongs to opset 19 and later, not to opset 18");
}

Test(reshape, shape_attribute_before_opset_5)
{
    opset_attrs o;
    d5_attr shape = attr_ints("shape", IVALS(4, 0, -1), 3);
    d5_tensor x = op_iota(3, SHAPE(2, 3, 4));
    d5_tensor y;
    run_op("Reshape", "ref", &x, 1, with_opset(&o, 4, &shape, 1), &y, 1);
    op_expect_shape(&y, 3, SHAPE(4, 3, 2));
    cr_assert_eq(memcmp(x.data, y.data, 24 * sizeof(float)), 0);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    x = op_iota(1, SHAPE(4));
    op_check_fails("Reshape", &x, 1, with_opset(&o, 4, NULL, 0), 1, D5_ERR_INVALID,
                   "Reshape: opset 4 requires the attribute shape");
    d5_tensor in[2] = {op_iota(1, SHAPE(4)), ti64(1, SHAPE(2), IVALS(2, 2))};
    op_check_fails("Reshape", in, 2, with_opset(&o, 1, &shape, 1), 1, D5_ERR_INVALID,
                   "Reshape: opset 1 takes 1 input (shape is an attribute), got 2");
    d5_tensor in2[2] = {op_iota(1, SHAPE(4)), ti64(1, SHAPE(2), IVALS(2, 2))};
    op_check_fails("Reshape", in2, 2, with_opset(&o, 5, &shape, 1), 1, D5_ERR_INVALID,
                   "Reshape: opset 5 takes shape as input 1, not as an attribute");
    x = op_iota(1, SHAPE(4));
    op_check_fails("Reshape", &x, 1, with_opset(&o, 14, NULL, 0), 1, D5_ERR_INVALID,
                   "Reshape: opset 14 takes 2 inputs (data, shape), got 1");
}
