/* Reference operators of the loss group: ReduceSum, ReduceMean,
 * SoftmaxCrossEntropyLoss and MeanSquaredError.
 *
 * Expected values were computed with Debian's Python (/usr/bin/python3):
 * numpy 1.24 (ndarray.sum / ndarray.mean with axis and keepdims) for the
 * reductions, and torch 1.13 in float64 (torch.nn.functional.cross_entropy
 * with weight / ignore_index / reduction, log_softmax along dim 1, and
 * mse_loss) for the losses. torch's weighted mean divides by the sum of the
 * weights of the positions not ignored, as the ONNX specification does; the
 * SoftmaxCrossEntropyLoss numbers also agree (to float32 rounding) with ONNX's
 * own reference function, softmaxcrossentropy() in
 * onnx/backend/test/case/node/softmaxcrossentropy.py of onnx 1.12. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <string.h>

static const float data12[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

static void expect_shape(const d5_tensor *t, int32_t ndim, const int64_t *shape)
{
    cr_assert_eq(t->desc.ndim, ndim, "ndim %d, want %d", (int)t->desc.ndim, (int)ndim);
    for (int32_t i = 0; i < ndim; i++)
        cr_assert_eq(t->desc.shape[i], shape[i], "dim %d: %lld, want %lld", (int)i,
                     (long long)t->desc.shape[i], (long long)shape[i]);
}

/* Runs a reduction of data12 as (3, 2, 2); axes: NULL for none, else an int64
 * input of `naxes` values. Frees everything but the output. */
static d5_tensor reduce(const char *op, const int64_t *axes, int64_t naxes, const d5_attr *items,
                        int32_t nitems)
{
    d5_tensor in[2] = {tf32(3, SHAPE(3, 2, 2), data12)}, y;
    if (axes) in[1] = ti64(1, SHAPE(naxes), naxes ? axes : NULL);
    d5_attrs attrs = {items, nitems};
    run_op(op, "ref", in, axes ? 2 : 1, &attrs, &y, 1);
    d5_tensor_free(&in[0]);
    if (axes) d5_tensor_free(&in[1]);
    return y;
}

/* reduce, then its shape (unless ndim < 0) and its n values within tol. */
static void expect_reduce(const char *op, const int64_t *axes, int64_t naxes, const d5_attr *items,
                          int32_t nitems, int32_t ndim, const int64_t *shape, const float *want,
                          int64_t n, double tol)
{
    d5_tensor y = reduce(op, axes, naxes, items, nitems);
    if (ndim >= 0) expect_shape(&y, ndim, shape);
    expect_values(&y, want, n, tol);
    d5_tensor_free(&y);
}

Test(reducesum, negative_axis_keepdims)
{
    expect_reduce("ReduceSum", IVALS(-2), 1, NULL, 0, 3, SHAPE(3, 1, 2), VALS(4, 6, 12, 14, 20, 22),
                  6, 0);
}

Test(reducesum, two_axes_without_keepdims)
{
    d5_attr k0 = attr_int("keepdims", 0);
    expect_reduce("ReduceSum", IVALS(0, 2), 2, &k0, 1, 1, SHAPE(2), VALS(33, 45), 2, 0);
}

Test(reducesum, empty_axes_reduce_all_or_nothing)
{
    /* Omitted axes input, and an empty one: every axis is reduced. */
    expect_reduce("ReduceSum", NULL, 0, NULL, 0, 3, SHAPE(1, 1, 1), VALS(78), 1, 0);
    d5_attr k0 = attr_int("keepdims", 0);
    expect_reduce("ReduceSum", IVALS(0), 0, &k0, 1, 0, NULL, VALS(78), 1, 0);
    /* noop_with_empty_axes = 1: the identity. */
    d5_attr noop = attr_int("noop_with_empty_axes", 1);
    expect_reduce("ReduceSum", IVALS(0), 0, &noop, 1, 3, SHAPE(3, 2, 2), data12, 12, 0);
    expect_reduce("ReduceSum", NULL, 0, &noop, 1, -1, NULL, data12, 12, 0);
}

Test(reducesum, empty_set)
{
    /* Summing over an axis of size 0 gives zeros (numpy: np.zeros((2, 0, 4)).sum(1, keepdims=1)).
     */
    d5_tensor in[2] = {tf32(3, SHAPE(2, 0, 4), NULL), ti64(1, SHAPE(1), IVALS(1))}, y;
    run_op("ReduceSum", "ref", in, 2, NULL, &y, 1);
    expect_shape(&y, 3, SHAPE(2, 1, 4));
    expect_values(&y, VALS(0, 0, 0, 0, 0, 0, 0, 0), 8, 0);
    d5_tensor_free(&y);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
}

Test(reducesum, int64_data)
{
    d5_tensor x = ti64(2, SHAPE(2, 3), IVALS(1, 2, 3, 4, 5, 6)), a = ti64(1, SHAPE(1), IVALS(1)), y;
    d5_tensor in[2] = {x, a};
    run_op("ReduceSum", "ref", in, 2, NULL, &y, 1);
    cr_assert_eq(y.desc.dtype, D5_I64);
    expect_shape(&y, 2, SHAPE(2, 1));
    cr_assert_eq(((const int64_t *)y.data)[0], 6);
    cr_assert_eq(((const int64_t *)y.data)[1], 15);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    d5_tensor_free(&a);
}

Test(reducesum, bad_axes)
{
    d5_tensor in[2] = {tf32(3, SHAPE(3, 2, 2), data12), ti64(1, SHAPE(1), IVALS(3))}, y;
    cr_assert_eq(try_op("ReduceSum", "ref", in, 2, NULL, &y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "ReduceSum: axis 3 is outside [-3, 2]"), "%s",
              d5_last_error());
    d5_tensor_free(&in[1]);
    in[1] = ti64(1, SHAPE(2), IVALS(0, -3));
    cr_assert_eq(try_op("ReduceSum", "ref", in, 2, NULL, &y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "ReduceSum: axis -3 appears twice"), "%s", d5_last_error());
    d5_tensor_free(&in[1]);
    /* Axes whose values are not known at create. */
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("ReduceSum", "ref", &desc), D5_OK);
    d5_tensor_desc d[2];
    d[0] = op_fdesc(3, SHAPE(3, 2, 2));
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 1, SHAPE(1), &d[1]), D5_OK);
    d5_op *op = NULL;
    cr_assert_eq(d5_op_create_desc(desc, d, 2, NULL, 1, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "ReduceSum: input 1 (axes) must be a constant"), "%s",
              d5_last_error());
    d5_tensor_free(&in[0]);
}

Test(reducesum, gradient)
{
    d5_tensor_desc d[2];
    d[0] = op_fdesc(3, SHAPE(2, 3, 4));
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 1, SHAPE(2), &d[1]), D5_OK);
    d5_tensor given[2] = {{.data = NULL}, ti64(1, SHAPE(2), IVALS(1, -1))};
    d5_attr k0 = attr_int("keepdims", 0);
    d5_attrs attrs = {&k0, 1};
    expect_gradient("ReduceSum", d, 2, given, &attrs, 1);
    expect_gradient("ReduceSum", d, 1, NULL, NULL, 1); /* every axis */
    d5_tensor_free(&given[1]);
}

Test(reducemean, axes_attribute)
{
    d5_attr ax = attr_ints("axes", IVALS(1), 1);
    expect_reduce("ReduceMean", NULL, 0, &ax, 1, 3, SHAPE(3, 1, 2), VALS(2, 3, 6, 7, 10, 11), 6,
                  1e-6);
    d5_attr items[] = {attr_ints("axes", IVALS(-1, 0), 2), attr_int("keepdims", 0)};
    expect_reduce("ReduceMean", NULL, 0, items, 2, 1, SHAPE(2), VALS(5.5, 7.5), 2, 1e-6);
}

Test(reducemean, no_axes_reduce_all)
{
    d5_attr k0 = attr_int("keepdims", 0);
    expect_reduce("ReduceMean", NULL, 0, &k0, 1, 0, NULL, VALS(6.5), 1, 1e-6);
    expect_reduce("ReduceMean", NULL, 0, NULL, 0, 3, SHAPE(1, 1, 1), VALS(6.5), 1, 1e-6);
}

Test(reducemean, axes_input_as_in_opset_18)
{
    d5_attr k0 = attr_int("keepdims", 0);
    expect_reduce("ReduceMean", IVALS(-1), 1, &k0, 1, 2, SHAPE(3, 2),
                  VALS(1.5, 3.5, 5.5, 7.5, 9.5, 11.5), 6, 1e-6);
    /* Empty axes: every axis, or none with noop_with_empty_axes. */
    expect_reduce("ReduceMean", IVALS(0), 0, NULL, 0, 3, SHAPE(1, 1, 1), VALS(6.5), 1, 1e-6);
    d5_attr noop = attr_int("noop_with_empty_axes", 1);
    expect_reduce("ReduceMean", IVALS(0), 0, &noop, 1, 3, SHAPE(3, 2, 2), data12, 12, 0);
}

Test(reducemean, axes_twice_is_an_error)
{
    d5_tensor in[2] = {tf32(3, SHAPE(3, 2, 2), data12), ti64(1, SHAPE(1), IVALS(0))}, y;
    d5_attr ax = attr_ints("axes", IVALS(1), 1);
    d5_attrs attrs = {&ax, 1};
    cr_assert_eq(try_op("ReduceMean", "ref", in, 2, &attrs, &y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "ReduceMean: axes given both as an attribute and as input 1"),
              "%s", d5_last_error());
    d5_attr bad = attr_ints("axes", IVALS(-4), 1);
    attrs.items = &bad;
    cr_assert_eq(try_op("ReduceMean", "ref", in, 1, &attrs, &y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "ReduceMean: axis -4 is outside [-3, 2]"), "%s",
              d5_last_error());
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
}

Test(reducemean, gradient)
{
    d5_tensor_desc d[2];
    d[0] = op_fdesc(3, SHAPE(3, 2, 4));
    d5_attr ax = attr_ints("axes", IVALS(0, -1), 2);
    d5_attrs attrs = {&ax, 1};
    expect_gradient("ReduceMean", d, 1, NULL, &attrs, 1);
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 1, SHAPE(1), &d[1]), D5_OK);
    d5_tensor given[2] = {{.data = NULL}, ti64(1, SHAPE(1), IVALS(-2))};
    d5_attr k0 = attr_int("keepdims", 0);
    attrs.items = &k0;
    expect_gradient("ReduceMean", d, 2, given, &attrs, 1);
    d5_tensor_free(&given[1]);
}

/* ---- Older opsets: the axes attribute ---------------------------------------------- */

/* Asserts that a reduction of data12 as (3, 2, 2) with an axes input of
 * `naxes` values (none when axes is NULL) fails with `text`. */
static void expect_reduce_error(const char *op, const int64_t *axes, int64_t naxes,
                                const d5_attr *items, int32_t nitems, const char *text)
{
    d5_tensor in[2] = {tf32(3, SHAPE(3, 2, 2), data12)}, y;
    if (axes) in[1] = ti64(1, SHAPE(naxes), axes);
    d5_attrs attrs = {items, nitems};
    d5_status s = try_op(op, "ref", in, axes ? 2 : 1, &attrs, &y, 1);
    cr_assert_eq(s, D5_ERR_INVALID, "%s: %s: %s", op, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "'%s' lacks '%s'", d5_last_error(), text);
    d5_tensor_free(&in[0]);
    if (axes) d5_tensor_free(&in[1]);
}

Test(reducesum, axes_attribute_before_opset_13)
{
    opset_attrs o;
    d5_attr extra[2] = {attr_ints("axes", IVALS(1), 1), attr_int("keepdims", 0)};
    expect_reduce("ReduceSum", NULL, 0, with_opset(&o, 11, extra, 2)->items, 3, 2, SHAPE(3, 2),
                  VALS(4, 6, 12, 14, 20, 22), 6, 0);
    /* No axes: every axis. */
    expect_reduce("ReduceSum", NULL, 0, with_opset(&o, 1, NULL, 0)->items, 1, 3, SHAPE(1, 1, 1),
                  VALS(78), 1, 0);
    /* Opset 13 takes the axes as an input. */
    expect_reduce("ReduceSum", IVALS(-1), 1, with_opset(&o, 13, NULL, 0)->items, 1, 3,
                  SHAPE(3, 2, 1), VALS(3, 7, 11, 15, 19, 23), 6, 0);
    expect_reduce_error("ReduceSum", IVALS(1), 1, with_opset(&o, 12, NULL, 0)->items, 1,
                        "ReduceSum: opset 12 takes 1 input (axes is an attribute), got 2");
    expect_reduce_error("ReduceSum", NULL, 0, with_opset(&o, 13, extra, 1)->items, 2,
                        "ReduceSum: opset 13 takes axes as input 1, not as an attribute");
    d5_attr noop = attr_int("noop_with_empty_axes", 1);
    expect_reduce_error("ReduceSum", NULL, 0, with_opset(&o, 11, &noop, 1)->items, 2,
                        "ReduceSum: noop_with_empty_axes is an attribute of opset 13 and later, "
                        "not of opset 11");
    d5_tensor_desc d = op_fdesc(3, SHAPE(3, 2, 4));
    d5_attrs attrs = {with_opset(&o, 11, extra, 2)->items, 3};
    expect_gradient("ReduceSum", &d, 1, NULL, &attrs, 1);
}

Test(reducemean, axes_attribute_until_opset_17_and_input_from_18)
{
    opset_attrs o;
    d5_attr ax = attr_ints("axes", IVALS(-1, 0), 2);
    expect_reduce("ReduceMean", NULL, 0, with_opset(&o, 17, &ax, 1)->items, 2, 3, SHAPE(1, 2, 1),
                  VALS(5.5, 7.5), 2, 1e-6);
    expect_reduce("ReduceMean", IVALS(-1, 0), 2, with_opset(&o, 18, NULL, 0)->items, 1, 3,
                  SHAPE(1, 2, 1), VALS(5.5, 7.5), 2, 1e-6);
    expect_reduce_error("ReduceMean", IVALS(0), 1, with_opset(&o, 13, NULL, 0)->items, 1,
                        "ReduceMean: opset 13 takes 1 input (axes is an attribute), got 2");
    expect_reduce_error("ReduceMean", NULL, 0, with_opset(&o, 18, &ax, 1)->items, 2,
                        "ReduceMean: opset 18 takes axes as input 1, not as an attribute");
}

/* ---- SoftmaxCrossEntropyLoss ------------------------------------------------------- */

static const float scores2[] = {0.5, -1.2, 2.0,  0.3, -0.7, 1.5,  0.2, -0.4,
                                0.9, 0.0,  -0.3, 0.8, 0.1,  -1.1, 2.2};
static const float weights5[] = {0.5, 2.0, 1.0, 1.5, 0.25};

/* SoftmaxCrossEntropyLoss of scores2 as (3, 5) with `labels`, optional
 * weights, attributes; returns the loss and, with nout 2, log_prob. */
static void sce2(const int64_t *labels, int with_weights, const d5_attr *items, int32_t nitems,
                 d5_tensor *out, int32_t nout)
{
    d5_tensor in[3] = {tf32(2, SHAPE(3, 5), scores2), ti64(1, SHAPE(3), labels),
                       tf32(1, SHAPE(5), weights5)};
    d5_attrs attrs = {items, nitems};
    run_op("SoftmaxCrossEntropyLoss", "ref", in, with_weights ? 3 : 2, &attrs, out, nout);
    for (int i = 0; i < 3; i++) d5_tensor_free(&in[i]);
}

/* Runs sce2 for its loss alone and expects the n values `want` (each case's
 * values differ, so a failure's "want" tells the case). */
static void expect_sce2(const int64_t *labels, int with_weights, const d5_attr *items,
                        int32_t nitems, const float *want, int64_t n)
{
    d5_tensor y;
    sce2(labels, with_weights, items, nitems, &y, 1);
    expect_values(&y, want, n, 1e-5);
    d5_tensor_free(&y);
}

Test(softmaxcrossentropyloss, reductions)
{
    d5_attr none = attr_string("reduction", "none"), sum = attr_string("reduction", "sum");
    d5_tensor y[2];
    sce2(IVALS(1, 0, 4), 0, &none, 1, y, 2);
    expect_shape(&y[0], 1, SHAPE(3));
    expect_values(&y[0], VALS(3.6146108, 0.78574559, 0.39744741), 3, 1e-5);
    expect_shape(&y[1], 2, SHAPE(3, 5));
    expect_values(&y[1],
                  VALS(-1.9146108, -3.6146108, -0.41461076, -2.1146107, -3.1146107, -0.78574559,
                       -2.0857456, -2.6857456, -1.3857456, -2.2857456, -2.8974475, -1.7974474,
                       -2.4974475, -3.6974475, -0.39744741),
                  15, 1e-5);
    d5_tensor_free(&y[0]);
    d5_tensor_free(&y[1]);
    sce2(IVALS(1, 0, 4), 0, &sum, 1, y, 1);
    expect_shape(&y[0], 0, NULL);
    expect_values(&y[0], VALS(4.7978038), 1, 1e-5);
    d5_tensor_free(&y[0]);
    sce2(IVALS(1, 0, 4), 0, NULL, 0, y, 1); /* mean by default */
    expect_values(&y[0], VALS(1.5992679), 1, 1e-5);
    d5_tensor_free(&y[0]);
}

Test(softmaxcrossentropyloss, weights)
{
    d5_attr none = attr_string("reduction", "none"), sum = attr_string("reduction", "sum");
    expect_sce2(IVALS(1, 0, 4), 1, &none, 1, VALS(7.2292216, 0.3928728, 0.099361852), 3);
    expect_sce2(IVALS(1, 0, 4), 1, &sum, 1, VALS(7.7214563), 1);
    /* Mean: divided by the sum of the labels' weights, 2 + 0.5 + 0.25. */
    expect_sce2(IVALS(1, 0, 4), 1, NULL, 0, VALS(2.8078023), 1);
}

Test(softmaxcrossentropyloss, ignore_index)
{
    d5_attr items[2] = {attr_int("ignore_index", 2), attr_string("reduction", "none")};
    expect_sce2(IVALS(1, 2, 4), 0, items, 2, VALS(3.6146108, 0, 0.39744741), 3);
    expect_sce2(IVALS(1, 2, 4), 1, items, 2, VALS(7.2292216, 0, 0.099361852), 3);
    items[1] = attr_string("reduction", "sum");
    expect_sce2(IVALS(1, 2, 4), 0, items, 2, VALS(4.0120582), 1);
    expect_sce2(IVALS(1, 2, 4), 1, items, 2, VALS(7.3285835), 1);
    /* Mean: over the 2 positions not ignored, or their weights 2 + 0.25. */
    expect_sce2(IVALS(1, 2, 4), 0, items, 1, VALS(2.0060291), 1);
    expect_sce2(IVALS(1, 2, 4), 1, items, 1, VALS(3.2571482), 1);
}

static const float scores_k[] = {-0.8,  -0.43, -0.06, 0.31,  0.68,  1.05,  -0.48, -0.11,
                                 0.26,  0.63,  1.0,   -0.53, -0.16, 0.21,  0.58,  0.95,
                                 -0.58, -0.21, 0.16,  0.53,  0.9,   -0.63, -0.26, 0.11};

Test(softmaxcrossentropyloss, k_dimensional)
{
    /* scores (2, 3, 2, 2), labels (2, 2, 2) with -1 ignored, weights (3). */
    d5_tensor in[3] = {tf32(4, SHAPE(2, 3, 2, 2), scores_k),
                       ti64(3, SHAPE(2, 2, 2), IVALS(0, 2, 1, -1, 2, 2, -1, 0)),
                       tf32(1, SHAPE(3), VALS(0.7, 1.3, 2.0))},
              y[2];
    d5_attr items[2] = {attr_int("ignore_index", -1), attr_string("reduction", "none")};
    d5_attrs attrs = {items, 2};
    run_op("SoftmaxCrossEntropyLoss", "ref", in, 3, &attrs, y, 2);
    expect_shape(&y[0], 3, SHAPE(2, 2, 2));
    expect_values(&y[0],
                  VALS(1.4796323, 2.1075208, 2.5137833, 0, 0.90735912, 3.1531386, 0, 0.51559851), 8,
                  1e-5);
    expect_shape(&y[1], 4, SHAPE(2, 3, 2, 2));
    expect_values(&y[1],
                  VALS(-2.1137604, -2.1137604, -1.5136796, -0.73656932, -0.63376043, -0.63376046,
                       -1.9336795, -1.1565693, -1.0537604, -1.0537604, -0.45367955, -1.5765693,
                       -1.5136795, -0.73656932, -0.73656933, -0.73656931, -1.9336795, -1.1565693,
                       -1.1565693, -1.1565693, -0.45367956, -1.5765693, -1.5765693, -1.5765693),
                  24, 1e-5);
    d5_tensor_free(&y[0]);
    d5_tensor_free(&y[1]);
    items[1] = attr_string("reduction", "sum");
    run_op("SoftmaxCrossEntropyLoss", "ref", in, 3, &attrs, y, 1);
    expect_values(&y[0], VALS(10.677033), 1, 1e-5);
    d5_tensor_free(&y[0]);
    attrs.count = 1;
    run_op("SoftmaxCrossEntropyLoss", "ref", in, 3, &attrs, y, 1);
    expect_shape(&y[0], 0, NULL);
    expect_values(&y[0], VALS(1.2272451), 1, 1e-5);
    d5_tensor_free(&y[0]);
    run_op("SoftmaxCrossEntropyLoss", "ref", in, 2, &attrs, y, 1);
    expect_values(&y[0], VALS(1.3113364), 1, 1e-5);
    d5_tensor_free(&y[0]);
    for (int i = 0; i < 3; i++) d5_tensor_free(&in[i]);
}

Test(softmaxcrossentropyloss, bad_inputs)
{
    d5_tensor in[3] = {tf32(2, SHAPE(3, 5), scores2), ti64(1, SHAPE(3), IVALS(1, 5, 0)),
                       tf32(1, SHAPE(4), NULL)},
              y;
    cr_assert_eq(try_op("SoftmaxCrossEntropyLoss", "ref", in, 2, NULL, &y, 1), D5_ERR_RANGE);
    cr_assert(
        strstr(d5_last_error(), "SoftmaxCrossEntropyLoss: label 5 at position 1 is outside [0, 5)"),
        "%s", d5_last_error());
    cr_assert_eq(try_op("SoftmaxCrossEntropyLoss", "ref", in, 3, NULL, &y, 1), D5_ERR_SHAPE);
    cr_assert(
        strstr(d5_last_error(), "SoftmaxCrossEntropyLoss: weights have shape [4], expected [5]"),
        "%s", d5_last_error());
    d5_attr r = attr_string("reduction", "avg");
    d5_attrs attrs = {&r, 1};
    cr_assert_eq(try_op("SoftmaxCrossEntropyLoss", "ref", in, 2, &attrs, &y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(),
                     "SoftmaxCrossEntropyLoss: reduction 'avg' is not none, sum or mean"),
              "%s", d5_last_error());
    d5_tensor_free(&in[1]);
    in[1] = ti64(2, SHAPE(3, 5), NULL);
    cr_assert_eq(try_op("SoftmaxCrossEntropyLoss", "ref", in, 2, NULL, &y, 1), D5_ERR_SHAPE);
    cr_assert(
        strstr(d5_last_error(), "SoftmaxCrossEntropyLoss: labels [3,5] do not match scores [3,5]"),
        "%s", d5_last_error());
    d5_tensor_free(&in[1]);
    in[1] = tf32(1, SHAPE(3), NULL);
    cr_assert_eq(try_op("SoftmaxCrossEntropyLoss", "ref", in, 2, NULL, &y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "SoftmaxCrossEntropyLoss: labels have data type float32"),
              "%s", d5_last_error());
    for (int i = 0; i < 3; i++) d5_tensor_free(&in[i]);
}

Test(softmaxcrossentropyloss, gradient_2d)
{
    /* With respect to scores and weights (labels are given), both outputs. */
    d5_tensor_desc d[3];
    d[0] = op_fdesc(2, SHAPE(4, 3));
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 1, SHAPE(4), &d[1]), D5_OK);
    d[2] = op_fdesc(1, SHAPE(3));
    d5_tensor given[3] = {{.data = NULL},
                          ti64(1, SHAPE(4), IVALS(2, 0, 1, 0)),
                          tf32(1, SHAPE(3), VALS(0.6, 1.7, 1.1))};
    const char *reductions[] = {"none", "sum", "mean"};
    for (int r = 0; r < 3; r++) {
        d5_attr items[2] = {attr_string("reduction", reductions[r]), attr_int("ignore_index", 1)};
        d5_attrs attrs = {items, 2};
        expect_gradient("SoftmaxCrossEntropyLoss", d, 3, given, &attrs, 2);
        expect_gradient("SoftmaxCrossEntropyLoss", d, 2, given, &attrs, 1);
        attrs.count = 1;
        expect_gradient("SoftmaxCrossEntropyLoss", d, 3, given, &attrs, 1);
    }
    d5_tensor_free(&given[1]);
    d5_tensor_free(&given[2]);
}

Test(softmaxcrossentropyloss, gradient_k_dimensional)
{
    d5_tensor_desc d[3];
    d[0] = op_fdesc(4, SHAPE(2, 3, 2, 2));
    cr_assert_eq(d5_tensor_desc_make(D5_I64, 3, SHAPE(2, 2, 2), &d[1]), D5_OK);
    d[2] = op_fdesc(1, SHAPE(3));
    d5_tensor given[3] = {{.data = NULL},
                          ti64(3, SHAPE(2, 2, 2), IVALS(0, 2, 1, -1, 2, 2, -1, 0)),
                          tf32(1, SHAPE(3), VALS(0.7, 1.3, 2.0))};
    const char *reductions[] = {"none", "sum", "mean"};
    for (int r = 0; r < 3; r++) {
        d5_attr items[2] = {attr_string("reduction", reductions[r]), attr_int("ignore_index", -1)};
        d5_attrs attrs = {items, 2};
        expect_gradient("SoftmaxCrossEntropyLoss", d, 3, given, &attrs, 2);
    }
    d5_tensor_free(&given[1]);
    d5_tensor_free(&given[2]);
}

/* ---- MeanSquaredError ------------------------------------------------------------------ */

Test(meansquarederror, reductions)
{
    d5_tensor in[2] = {tf32(2, SHAPE(2, 3), VALS(0.5, -1.0, 2.0, 3.0, 0.25, -0.5)),
                       tf32(2, SHAPE(2, 3), VALS(1.0, -1.5, 0.0, 2.0, 0.25, 1.0))},
              y;
    d5_attr r = attr_string("reduction", "none");
    d5_attrs attrs = {&r, 1};
    run_op("MeanSquaredError", "ref", in, 2, &attrs, &y, 1);
    expect_shape(&y, 2, SHAPE(2, 3));
    expect_values(&y, VALS(0.25, 0.25, 4, 1, 0, 2.25), 6, 1e-6);
    d5_tensor_free(&y);
    r = attr_string("reduction", "sum");
    run_op("MeanSquaredError", "ref", in, 2, &attrs, &y, 1);
    expect_shape(&y, 0, NULL);
    expect_values(&y, VALS(7.75), 1, 1e-6);
    d5_tensor_free(&y);
    run_op("MeanSquaredError", "ref", in, 2, NULL, &y, 1); /* mean by default */
    expect_shape(&y, 0, NULL);
    expect_values(&y, VALS(1.2916667), 1, 1e-6);
    d5_tensor_free(&y);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
}

Test(meansquarederror, bad_inputs)
{
    d5_tensor in[2] = {tf32(2, SHAPE(2, 3), NULL), tf32(1, SHAPE(3), NULL)}, y;
    cr_assert_eq(try_op("MeanSquaredError", "ref", in, 2, NULL, &y, 1), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(),
                     "MeanSquaredError: prediction [2,3] and target [3] differ in shape"),
              "%s", d5_last_error());
    d5_attr r = attr_string("reduction", "max");
    d5_attrs attrs = {&r, 1};
    cr_assert_eq(try_op("MeanSquaredError", "ref", in, 2, &attrs, &y, 1), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "MeanSquaredError: reduction 'max' is not none, sum or mean"),
              "%s", d5_last_error());
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
}

Test(meansquarederror, gradient)
{
    d5_tensor_desc d[2];
    d[0] = op_fdesc(3, SHAPE(2, 3, 2));
    d[1] = d[0];
    const char *reductions[] = {"none", "sum", "mean"};
    for (int r = 0; r < 3; r++) {
        d5_attr a = attr_string("reduction", reductions[r]);
        d5_attrs attrs = {&a, 1};
        expect_gradient("MeanSquaredError", d, 2, NULL, &attrs, 1);
    }
}
