/* The indexing operators of ref/ops_extra.def: EyeLike, NonZero, TopK,
 * GatherND, ScatterND, Scatter, Compress, Unique, ReverseSequence and
 * MaxUnpool. Expected values come from numpy 1.24 (Debian's python3: the
 * expression is given beside each), from the ONNX operator documentation's
 * examples, or by hand where stated; gradients are checked against central
 * differences in float64. */
#include "extra_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* Asserts that output k of a multi-output run has data type dt, shape and
 * values (exactly: these are indices, counts and copies). */
static void expect_exact(const d5_tensor *y, d5_dtype dt, int32_t ndim, const int64_t *shape,
                         const double *want, const char *what)
{
    expect_tensor_within(y, dt, ndim, shape, want, 0, 0, what);
}

/* Runs `op` and expects it to fail at run time (forward) with `status` and a
 * message containing `text`; frees the inputs. */
static void check_run_fails(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_status status, const char *text)
{
    d5_tensor y;
    d5_status s = try_op(op, "ref", in, nin, attrs, &y, 1);
    cr_assert_eq(s, status, "%s: %s (%s)", op, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "%s: '%s' lacks '%s'", op, d5_last_error(), text);
    op_free_all(in, nin);
}

/* ---- EyeLike -------------------------------------------------------------------------------- */

Test(eyelike, k_and_dtype)
{
    d5_tensor t = f64(2, SHAPE(3, 4), NULL);
    check("EyeLike", &t, 1, ATTRS(attr_int("k", 1), attr_int("dtype", 7)), D5_I64, 2, SHAPE(3, 4),
          DV(0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1));
    d5_tensor t2 = tmake(D5_I32, 2, SHAPE(3, 2), DV(5, 5, 5, 5, 5, 5));
    check("EyeLike", &t2, 1, ATTRS(attr_int("k", -1)), D5_I32, 2, SHAPE(3, 2),
          DV(0, 0, 1, 0, 0, 1));
    d5_tensor t3 = tmake(D5_BOOL, 2, SHAPE(2, 2), NULL);
    check("EyeLike", &t3, 1, ATTRS(attr_int("dtype", 11)), D5_F64, 2, SHAPE(2, 2), DV(1, 0, 0, 1));
    d5_tensor t4 = f64(2, SHAPE(2, 2), NULL);
    check("EyeLike", &t4, 1, ATTRS(attr_int("k", 5)), D5_F64, 2, SHAPE(2, 2), DV(0, 0, 0, 0));
    d5_tensor e = f64(3, SHAPE(2, 2, 2), NULL);
    check_fails("EyeLike", &e, 1, NULL, D5_ERR_SHAPE, "EyeLike: input has 3 dims, expected 2");
    d5_tensor s = f64(2, SHAPE(2, 2), NULL);
    check_fails("EyeLike", &s, 1, ATTRS(attr_int("dtype", 8)), D5_ERR_UNSUPPORTED,
                "EyeLike: attribute 'dtype' is 8, an ONNX data type d5 does not have");
}

/* ---- NonZero -------------------------------------------------------------------------------- */

Test(nonzero, values_scalar_unknown)
{
    /* np.array(np.nonzero([[1, 0], [0, 3], [2, 2]])) */
    d5_tensor t = tmake(D5_I32, 2, SHAPE(3, 2), DV(1, 0, 0, 3, 2, 2));
    check("NonZero", &t, 1, NULL, D5_I64, 2, SHAPE(2, 4), DV(0, 1, 2, 2, 0, 1, 0, 1));
    /* np.nonzero([[0, 0.5, nan], [0, 0, -1]]): NaN is nonzero. */
    d5_tensor t2 = f64(2, SHAPE(2, 3), DV(0, 0.5, NAN, 0, 0, -1));
    check_given("NonZero", &t2, 1, NULL, D5_I64, 2, SHAPE(2, 3), DV(0, 0, 1, 1, 2, 2));
    d5_tensor t3 = tmake(D5_BOOL, 0, NULL, DV(1));
    check("NonZero", &t3, 1, NULL, D5_I64, 2, SHAPE(0, 1), NULL);
    d5_tensor t4 = tmake(D5_BOOL, 1, SHAPE(3), DV(0, 0, 0));
    check("NonZero", &t4, 1, NULL, D5_I64, 2, SHAPE(1, 0), NULL);
    d5_tensor f = f64(1, SHAPE(3), NULL);
    cr_assert_eq(create_unknown("NonZero", &f, 1, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "NonZero: input 0 (X) must be a constant"), "%s",
              d5_last_error());
    d5_tensor_free(&f);
}

/* ---- TopK ----------------------------------------------------------------------------------- */

/* [3, 4] with ties: lower indices come first. */
static const double topk_x[12] = {3, 1, 3, 2, 0, 5, 5, -1, 7, 7, 7, 7};

/* Runs TopK with K and attributes and checks both outputs. */
static void check_topk(d5_dtype dt, int64_t k, const d5_attrs *attrs, int32_t ndim,
                       const int64_t *shape, const double *values, const double *indices)
{
    d5_tensor in[2] = {tmake(dt, 2, SHAPE(3, 4), topk_x), ti64(1, SHAPE(1), IVALS(k))}, y[2];
    run_op("TopK", "ref", in, 2, attrs, y, 2);
    expect_exact(&y[0], dt, ndim, shape, values, "TopK values");
    expect_exact(&y[1], D5_I64, ndim, shape, indices, "TopK indices");
    op_free_all(y, 2);
    op_free_all(in, 2);
}

Test(topk, largest_smallest_axes)
{
    /* np.argsort(-x or x, axis, kind='stable')[:k] and the values there. */
    check_topk(D5_F32, 2, ATTRS(attr_int("axis", 1)), 2, SHAPE(3, 2), DV(3, 3, 5, 5, 7, 7),
               DV(0, 2, 1, 2, 0, 1));
    check_topk(D5_I64, 3, ATTRS(attr_int("largest", 0)), 2, SHAPE(3, 3),
               DV(1, 2, 3, -1, 0, 5, 7, 7, 7), DV(1, 3, 0, 3, 0, 1, 0, 1, 2));
    check_topk(D5_F64, 2, ATTRS(attr_int("axis", -2)), 2, SHAPE(2, 4), DV(7, 7, 7, 7, 3, 5, 5, 2),
               DV(2, 2, 2, 2, 0, 1, 1, 0));
    check_topk(D5_F64, 0, NULL, 2, SHAPE(3, 0), NULL, NULL);
    /* Opset 1: k is an attribute, the only input is X. */
    d5_tensor x = f64(2, SHAPE(3, 4), topk_x), y[2];
    run_op("TopK", "ref", &x, 1, ATTRS(OPSET(1), attr_int("k", 1)), y, 2);
    expect_exact(&y[0], D5_F64, 2, SHAPE(3, 1), DV(3, 5, 7), "TopK opset 1");
    expect_exact(&y[1], D5_I64, 2, SHAPE(3, 1), DV(0, 1, 0), "TopK opset 1 indices");
    op_free_all(y, 2);
    /* NaN counts as the largest. */
    d5_tensor n[2] = {f64(1, SHAPE(3), DV(1, NAN, 2)), ti64(1, SHAPE(1), IVALS(2))};
    run_op("TopK", "ref", n, 2, NULL, y, 2);
    expect_exact(&y[0], D5_F64, 1, SHAPE(2), DV(NAN, 2), "TopK NaN");
    expect_exact(&y[1], D5_I64, 1, SHAPE(2), DV(1, 2), "TopK NaN indices");
    op_free_all(y, 2);
    op_free_all(n, 2);
    d5_tensor_free(&x);
}

Test(topk, gradient_and_errors)
{
    d5_tensor k = ti64(1, SHAPE(1), IVALS(2));
    expect_gradient_given("TopK", 3, SHAPE(2, 5, 3), &k, ATTRS(attr_int("axis", 1)), 2);
    expect_gradient_given("TopK", 3, SHAPE(2, 5, 3), &k, ATTRS(attr_int("largest", 0)), 2);
    d5_tensor_free(&k);
    d5_tensor in[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(1), IVALS(4))};
    op_expect_fails("TopK", in, 2, NULL, 2, D5_ERR_INVALID,
                    "TopK: K is 4, expected 0 to 3 (axis 1's size)");
    const d5_op_desc *desc;
    d5_op *op = NULL;
    d5_tensor_desc dd[2] = {in[0].desc, in[1].desc};
    cr_assert_eq(d5_op_find("TopK", "ref", &desc), D5_OK);
    cr_assert_eq(d5_op_create_desc(desc, dd, 2, NULL, 2, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "TopK: input 1 (K) must be a constant"), "%s",
              d5_last_error());
    op_free_all(in, 2);
    d5_tensor b[2] = {tmake(D5_BOOL, 1, SHAPE(2), NULL), ti64(1, SHAPE(1), IVALS(1))};
    op_expect_fails("TopK", b, 2, NULL, 2, D5_ERR_UNSUPPORTED, "TopK: input 0 has data type bool");
    op_free_all(b, 2);
}

/* ---- GatherND ------------------------------------------------------------------------------- */

Test(gathernd, examples_batch_dims_negative)
{
    /* The spec's examples 1 to 5. */
    d5_tensor e1[2] = {tmake(D5_I32, 2, SHAPE(2, 2), DV(0, 1, 2, 3)),
                       ti64(2, SHAPE(2, 2), IVALS(0, 0, 1, 1))};
    check("GatherND", e1, 2, NULL, D5_I32, 1, SHAPE(2), DV(0, 3));
    d5_tensor e2[2] = {f64(2, SHAPE(2, 2), DV(0, 1, 2, 3)), ti64(2, SHAPE(2, 1), IVALS(1, 0))};
    check("GatherND", e2, 2, NULL, D5_F64, 2, SHAPE(2, 2), DV(2, 3, 0, 1));
    const double d8[] = {0, 1, 2, 3, 4, 5, 6, 7};
    d5_tensor e3[2] = {f64(3, SHAPE(2, 2, 2), d8), ti64(2, SHAPE(2, 2), IVALS(0, 1, 1, 0))};
    check("GatherND", e3, 2, NULL, D5_F64, 2, SHAPE(2, 2), DV(2, 3, 4, 5));
    d5_tensor e4[2] = {f64(3, SHAPE(2, 2, 2), d8), ti64(3, SHAPE(2, 1, 2), IVALS(0, 1, 1, 0))};
    check("GatherND", e4, 2, NULL, D5_F64, 3, SHAPE(2, 1, 2), DV(2, 3, 4, 5));
    d5_tensor e5[2] = {f64(3, SHAPE(2, 2, 2), d8), ti64(2, SHAPE(2, 1), IVALS(1, 0))};
    check("GatherND", e5, 2, ATTRS(attr_int("batch_dims", 1)), D5_F64, 2, SHAPE(2, 2),
          DV(2, 3, 4, 5));
    /* np.arange(12).reshape(3, 4)[-1, -2] and [0, 3] */
    d5_tensor n[2] = {op_iota(2, SHAPE(3, 4)), ti64(2, SHAPE(2, 2), IVALS(-1, -2, 0, 3))};
    check("GatherND", n, 2, NULL, D5_F32, 1, SHAPE(2), DV(10, 3));
}

Test(gathernd, gradient_and_errors)
{
    /* Tuple (1, 0) twice: its slice's gradient adds up. */
    d5_tensor ind = ti64(2, SHAPE(3, 2), IVALS(1, 0, 0, 2, 1, 0));
    expect_gradient_given("GatherND", 3, SHAPE(2, 3, 2), &ind, NULL, 1);
    d5_tensor_free(&ind);
    d5_tensor b = ti64(2, SHAPE(2, 1), IVALS(2, 0));
    expect_gradient_given("GatherND", 3, SHAPE(2, 3, 2), &b, ATTRS(attr_int("batch_dims", 1)), 1);
    d5_tensor_free(&b);
    d5_tensor r[2] = {f64(2, SHAPE(2, 2), NULL), ti64(2, SHAPE(1, 2), IVALS(0, 2))};
    check_run_fails("GatherND", r, 2, NULL, D5_ERR_RANGE,
                    "GatherND: index tuple 0 has 2 at position 1, outside [-2, 1]");
    d5_tensor m[2] = {f64(2, SHAPE(2, 2), NULL), ti64(2, SHAPE(1, 3), IVALS(0, 0, 0))};
    check_fails("GatherND", m, 2, NULL, D5_ERR_SHAPE,
                "GatherND: the last dimension of indices [1,3] is 3, expected 1 to 2");
    d5_tensor bd[2] = {f64(2, SHAPE(2, 2), NULL), ti64(2, SHAPE(3, 1), IVALS(0, 0, 0))};
    check_fails("GatherND", bd, 2, ATTRS(attr_int("batch_dims", 1)), D5_ERR_SHAPE,
                "GatherND: data [2,2] and indices [3,1] differ in batch dimension 0");
    d5_tensor f[2] = {f64(2, SHAPE(2, 2), NULL), f64(2, SHAPE(1, 1), NULL)};
    check_fails("GatherND", f, 2, NULL, D5_ERR_INVALID,
                "GatherND: input 1 (indices) has data type float64, expected int64");
}

/* ---- ScatterND ------------------------------------------------------------------------------ */

Test(scatternd, reductions)
{
    /* Rows 2, 0 and 2 of np.arange(12).reshape(3, 4) meet the update rows
     * [1, -1, 2, -2], [10, 20, 30, 40] and [5, 5, 5, 5], one after another. */
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    static const double want[5][12] = {
        {10, 20, 30, 40, 4, 5, 6, 7, 5, 5, 5, 5},
        {10, 21, 32, 43, 4, 5, 6, 7, 14, 13, 17, 14},
        {0, 20, 60, 120, 4, 5, 6, 7, 40, -45, 100, -110},
        {10, 20, 30, 40, 4, 5, 6, 7, 8, 9, 10, 11},
        {0, 1, 2, 3, 4, 5, 6, 7, 1, -1, 2, -2},
    };
    for (int r = 0; r < 5; r++) {
        d5_tensor in[3] = {
            tmake(D5_F32, 2, SHAPE(3, 4), DV(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)),
            ti64(2, SHAPE(3, 1), IVALS(2, 0, 2)),
            tmake(D5_F32, 2, SHAPE(3, 4), DV(1, -1, 2, -2, 10, 20, 30, 40, 5, 5, 5, 5))};
        check("ScatterND", in, 3, ATTRS(attr_string("reduction", names[r])), D5_F32, 2, SHAPE(3, 4),
              want[r]);
    }
    /* Element tuples, one of them negative. */
    d5_tensor in[3] = {op_iota(2, SHAPE(3, 4)), ti64(2, SHAPE(2, 2), IVALS(1, 2, -1, 0)),
                       tmake(D5_F32, 1, SHAPE(2), DV(100, 200))};
    check("ScatterND", in, 3, NULL, D5_F32, 2, SHAPE(3, 4),
          DV(0, 1, 2, 3, 4, 5, 100, 7, 200, 9, 10, 11));
}

Test(scatternd, gradients_and_errors)
{
    /* Tuple 1 is written twice: under "none" the second write wins. */
    d5_tensor ind = ti64(2, SHAPE(3, 1), IVALS(1, 3, 1));
    d5_tensor_desc d[3] = {op_fdesc(2, SHAPE(4, 2)), ind.desc, op_fdesc(2, SHAPE(3, 2))};
    d5_tensor given[3] = {{.data = NULL}, ind, {.data = NULL}};
    expect_gradient("ScatterND", d, 3, given, NULL, 1);
    expect_gradient("ScatterND", d, 3, given, ATTRS(attr_string("reduction", "add")), 1);
    d5_tensor in[3] = {f64(2, SHAPE(4, 2), NULL), ind, f64(2, SHAPE(3, 2), NULL)};
    d5_tensor y, g = f64(2, SHAPE(4, 2), DV(1, 2, 3, 4, 5, 6, 7, 8)), gin[3];
    cr_assert_eq(run_known("ScatterND", in, 3, NULL, &y, &g, gin), D5_OK, "%s", d5_last_error());
    expect_tensor(&gin[0], D5_F64, 2, SHAPE(4, 2), DV(1, 2, 0, 0, 5, 6, 0, 0), 0, "data gradient");
    expect_tensor(&gin[2], D5_F64, 2, SHAPE(3, 2), DV(0, 0, 7, 8, 3, 4), 0, "updates gradient");
    op_free_all(gin, 3);
    d5_tensor_free(&y);
    cr_assert_eq(run_known("ScatterND", in, 3, ATTRS(attr_string("reduction", "max")), &y, &g, gin),
                 D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "no gradient for reduction 'max'"), "%s", d5_last_error());
    op_free_all(gin, 3);
    d5_tensor_free(&y);
    d5_tensor_free(&g);
    op_free_all(in, 3);
    d5_tensor u[3] = {f64(2, SHAPE(4, 2), NULL), ti64(2, SHAPE(3, 1), IVALS(0, 0, 0)),
                      f64(2, SHAPE(3, 3), NULL)};
    check_fails("ScatterND", u, 3, NULL, D5_ERR_SHAPE,
                "ScatterND: updates [3,3], expected indices.shape[:-1] + data.shape[1:]");
    d5_tensor r[3] = {f64(1, SHAPE(4), NULL), ti64(2, SHAPE(1, 1), IVALS(4)),
                      f64(1, SHAPE(1), NULL)};
    check_run_fails("ScatterND", r, 3, NULL, D5_ERR_RANGE,
                    "ScatterND: index tuple 0 has 4 at position 0, outside [-4, 3]");
    d5_tensor x[3] = {f64(1, SHAPE(4), NULL), ti64(2, SHAPE(1, 1), IVALS(0)),
                      f64(1, SHAPE(1), NULL)};
    check_fails("ScatterND", x, 3, ATTRS(attr_string("reduction", "sum")), D5_ERR_INVALID,
                "ScatterND: reduction 'sum' is not none, add, mul, max or min");
}

/* ---- Scatter -------------------------------------------------------------------------------- */

Test(scatter, values_gradient_errors)
{
    /* The spec's example: data [[1, 2, 3, 4, 5]], indices [[1, 3]], axis 1. */
    d5_tensor in[3] = {f64(2, SHAPE(1, 5), DV(1, 2, 3, 4, 5)), ti64(2, SHAPE(1, 2), IVALS(1, 3)),
                       f64(2, SHAPE(1, 2), DV(1.1, 2.1))};
    check("Scatter", in, 3, ATTRS(attr_int("axis", 1)), D5_F64, 2, SHAPE(1, 5),
          DV(1, 1.1, 3, 2.1, 5));
    /* Axis 0 (the default), a negative index and a repeated one (the last wins). */
    d5_tensor in2[3] = {f64(2, SHAPE(3, 2), DV(0, 0, 0, 0, 0, 0)),
                        ti64(2, SHAPE(2, 2), IVALS(-1, 0, 2, 1)),
                        f64(2, SHAPE(2, 2), DV(1, 2, 3, 4))};
    check("Scatter", in2, 3, NULL, D5_F64, 2, SHAPE(3, 2), DV(0, 2, 0, 4, 3, 0));
    d5_tensor ind = ti64(2, SHAPE(2, 2), IVALS(0, 2, 0, 1));
    d5_tensor_desc d[3] = {op_fdesc(2, SHAPE(2, 3)), ind.desc, op_fdesc(2, SHAPE(2, 2))};
    d5_tensor given[3] = {{.data = NULL}, ind, {.data = NULL}};
    expect_gradient("Scatter", d, 3, given, ATTRS(attr_int("axis", 1)), 1);
    d5_tensor_free(&ind);
    d5_tensor e[3] = {f64(2, SHAPE(2, 3), NULL), ti64(2, SHAPE(1, 2), IVALS(0, 0)),
                      f64(2, SHAPE(2, 2), NULL)};
    check_fails("Scatter", e, 3, NULL, D5_ERR_SHAPE,
                "Scatter: updates [2,2] and indices [1,2] differ in shape");
}

/* ---- Compress ------------------------------------------------------------------------------- */

Test(compress, axes_and_flattened)
{
    /* np.compress(c, np.arange(12).reshape(3, 4), axis) */
    d5_tensor a[2] = {op_iota(2, SHAPE(3, 4)), tmake(D5_BOOL, 1, SHAPE(3), DV(0, 1, 1))};
    check("Compress", a, 2, ATTRS(attr_int("axis", 0)), D5_F32, 2, SHAPE(2, 4),
          DV(4, 5, 6, 7, 8, 9, 10, 11));
    d5_tensor b[2] = {op_iota(2, SHAPE(3, 4)), tmake(D5_BOOL, 1, SHAPE(3), DV(1, 0, 1))};
    check("Compress", b, 2, ATTRS(attr_int("axis", 1)), D5_F32, 2, SHAPE(3, 2),
          DV(0, 2, 4, 6, 8, 10));
    d5_tensor c[2] = {op_iota(2, SHAPE(3, 4)), tmake(D5_BOOL, 1, SHAPE(6), DV(0, 1, 0, 0, 1, 1))};
    check("Compress", c, 2, NULL, D5_F32, 1, SHAPE(3), DV(1, 4, 5));
    d5_tensor n[2] = {tmake(D5_I64, 2, SHAPE(3, 4), DV(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)),
                      tmake(D5_BOOL, 1, SHAPE(4), DV(0, 0, 0, 1))};
    check("Compress", n, 2, ATTRS(attr_int("axis", -1)), D5_I64, 2, SHAPE(3, 1), DV(3, 7, 11));
    d5_tensor z[2] = {op_iota(2, SHAPE(3, 4)), tmake(D5_BOOL, 1, SHAPE(2), DV(0, 0))};
    check("Compress", z, 2, ATTRS(attr_int("axis", 0)), D5_F32, 2, SHAPE(0, 4), NULL);
}

Test(compress, gradient_and_errors)
{
    d5_tensor cond = tmake(D5_BOOL, 1, SHAPE(3), DV(1, 0, 1));
    expect_gradient_given("Compress", 3, SHAPE(2, 4, 3), &cond, ATTRS(attr_int("axis", 2)), 1);
    expect_gradient_given("Compress", 3, SHAPE(2, 4, 3), &cond, NULL, 1);
    d5_tensor known[2] = {f64(3, SHAPE(2, 4, 3), NULL), cond};
    cr_assert_eq(create_unknown("Compress", known, 2, NULL), D5_ERR_UNSUPPORTED);
    d5_tensor_free(&known[0]);
    cr_assert(strstr(d5_last_error(), "Compress: input 1 (condition) must be a constant"), "%s",
              d5_last_error());
    d5_tensor_free(&cond);
    d5_tensor l[2] = {op_iota(2, SHAPE(2, 2)), tmake(D5_BOOL, 1, SHAPE(3), DV(1, 1, 1))};
    check_fails("Compress", l, 2, ATTRS(attr_int("axis", 1)), D5_ERR_SHAPE,
                "Compress: input 1 (condition) has 3 values, more than the 2 slices along the "
                "axis");
    d5_tensor i[2] = {op_iota(1, SHAPE(2)), ti64(1, SHAPE(2), IVALS(1, 0))};
    check_fails("Compress", i, 2, NULL, D5_ERR_INVALID,
                "Compress: input 1 (condition) has data type int64, expected bool");
}

/* ---- Unique --------------------------------------------------------------------------------- */

/* Runs Unique with its four outputs and checks them. */
static void check_unique(d5_tensor *x, const d5_attrs *attrs, int32_t ndim, const int64_t *shape,
                         const double *y, int64_t count, const double *indices,
                         const double *inverse, const double *counts)
{
    d5_tensor out[4];
    run_given("Unique", x, 1, attrs, out, 4);
    expect_exact(&out[0], (d5_dtype)x->desc.dtype, ndim, shape, y, "Unique Y");
    expect_exact(&out[1], D5_I64, 1, SHAPE(count), indices, "Unique indices");
    int64_t n = d5_tensor_desc_numel(&out[2].desc);
    expect_exact(&out[2], D5_I64, 1, SHAPE(n), inverse, "Unique inverse_indices");
    expect_exact(&out[3], D5_I64, 1, SHAPE(count), counts, "Unique counts");
    op_free_all(out, 4);
    d5_tensor_free(x);
}

Test(unique, sorted_unsorted_axes)
{
    /* np.unique(x, True, True, True) with x = [2, 1, 1, 3, 4, 3, nan, nan, -0.5]: NaNs collapse. */
    const double x[] = {2, 1, 1, 3, 4, 3, NAN, NAN, -0.5};
    d5_tensor t = f64(1, SHAPE(9), x);
    check_unique(&t, NULL, 1, SHAPE(6), DV(-0.5, 1, 2, 3, 4, NAN), 6, DV(8, 1, 0, 3, 4, 6),
                 DV(2, 1, 1, 3, 4, 3, 5, 5, 0), DV(1, 2, 1, 2, 1, 2));
    /* The spec's unsorted example: [2, 1, 1, 3, 4, 3] in order of first occurrence. */
    d5_tensor t2 = tmake(D5_F32, 1, SHAPE(6), x);
    check_unique(&t2, ATTRS(attr_int("sorted", 0)), 1, SHAPE(4), DV(2, 1, 3, 4), 4, DV(0, 1, 3, 4),
                 DV(0, 1, 1, 2, 3, 2), DV(1, 2, 2, 1));
    /* np.unique(x, True, True, True, axis=0), rows [1,0,0], [1,0,0], [2,3,4], [0,9,9] */
    const double rows[] = {1, 0, 0, 1, 0, 0, 2, 3, 4, 0, 9, 9};
    d5_tensor t3 = tmake(D5_I32, 2, SHAPE(4, 3), rows);
    check_unique(&t3, ATTRS(attr_int("axis", 0)), 2, SHAPE(3, 3), DV(0, 9, 9, 1, 0, 0, 2, 3, 4), 3,
                 DV(3, 0, 2), DV(1, 1, 2, 0), DV(1, 2, 1));
    d5_tensor t4 = tmake(D5_I32, 2, SHAPE(4, 3), rows);
    check_unique(&t4, ATTRS(attr_int("axis", -2), attr_int("sorted", 0)), 2, SHAPE(3, 3),
                 DV(1, 0, 0, 2, 3, 4, 0, 9, 9), 3, DV(0, 2, 3), DV(0, 0, 1, 2), DV(2, 1, 1));
    /* The spec's 3-d example, axis 1: np.unique(..., axis=1) */
    d5_tensor t5 = f64(3, SHAPE(2, 4, 2), DV(1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1));
    check_unique(&t5, ATTRS(attr_int("axis", 1)), 3, SHAPE(2, 3, 2),
                 DV(0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1), 3, DV(1, 0, 2), DV(1, 0, 2, 0),
                 DV(2, 1, 1));
}

Test(unique, fewer_outputs_and_errors)
{
    d5_tensor x = tmake(D5_I64, 1, SHAPE(5), DV(3, 3, 1, 3, 1)), y;
    run_op("Unique", "ref", &x, 1, NULL, &y, 1);
    expect_exact(&y, D5_I64, 1, SHAPE(2), DV(1, 3), "Unique Y alone");
    d5_tensor_free(&y);
    d5_tensor f = f64(1, SHAPE(3), NULL);
    cr_assert_eq(create_unknown("Unique", &f, 1, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "Unique: input 0 (X) must be a constant"), "%s",
              d5_last_error());
    d5_tensor_free(&f);
    check_fails("Unique", &x, 1, ATTRS(attr_int("axis", 1)), D5_ERR_INVALID,
                "Unique: axis 1 is outside [-1, 0]");
}

/* ---- ReverseSequence ------------------------------------------------------------------------ */

Test(reversesequence, time_batch_gradient_errors)
{
    /* The spec's examples on np.arange(16).reshape(4, 4). */
    d5_tensor t[2] = {op_iota(2, SHAPE(4, 4)), ti64(1, SHAPE(4), IVALS(4, 3, 2, 1))};
    check("ReverseSequence", t, 2, ATTRS(attr_int("time_axis", 0), attr_int("batch_axis", 1)),
          D5_F32, 2, SHAPE(4, 4), DV(12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15));
    /* Batch first with an inner dimension: np.arange(12).reshape(2, 3, 2), lens [2, 3]. */
    d5_tensor b[2] = {tmake(D5_I64, 3, SHAPE(2, 3, 2), DV(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)),
                      ti64(1, SHAPE(2), IVALS(2, 3))};
    check("ReverseSequence", b, 2, ATTRS(attr_int("time_axis", 1), attr_int("batch_axis", 0)),
          D5_I64, 3, SHAPE(2, 3, 2), DV(2, 3, 0, 1, 4, 5, 10, 11, 8, 9, 6, 7));
    d5_tensor lens = ti64(1, SHAPE(3), IVALS(2, 0, 4));
    expect_gradient_given("ReverseSequence", 3, SHAPE(4, 3, 2), &lens, NULL, 1);
    d5_tensor_free(&lens);
    d5_tensor r[2] = {op_iota(2, SHAPE(2, 2)), ti64(1, SHAPE(2), IVALS(3, 1))};
    check_run_fails("ReverseSequence", r, 2, NULL, D5_ERR_RANGE,
                    "ReverseSequence: sequence_lens[0] is 3, outside [0, 2]");
    d5_tensor a[2] = {op_iota(2, SHAPE(2, 2)), ti64(1, SHAPE(2), IVALS(1, 1))};
    check_fails("ReverseSequence", a, 2, ATTRS(attr_int("time_axis", 1)), D5_ERR_INVALID,
                "ReverseSequence: time_axis 1 and batch_axis 1, expected 0 and 1 in either order");
    d5_tensor s[2] = {op_iota(2, SHAPE(2, 3)), ti64(1, SHAPE(2), IVALS(1, 1))};
    check_fails("ReverseSequence", s, 2, NULL, D5_ERR_SHAPE,
                "ReverseSequence: input 1 (sequence_lens) has 2 values in 1 dims, expected a 1-d "
                "tensor of the batch size 3");
}

/* ---- MaxUnpool ------------------------------------------------------------------------------ */

Test(maxunpool, examples_gradient_errors)
{
    /* The spec's examples: indices into the unpooled 4 x 4; with output_shape
     * [1, 1, 5, 5] that 4 x 4 sits at the origin of the 5 x 5. */
    d5_tensor a[2] = {f64(4, SHAPE(1, 1, 2, 2), DV(1, 2, 3, 4)),
                      ti64(4, SHAPE(1, 1, 2, 2), IVALS(5, 7, 13, 15))};
    const d5_attrs *k2 =
        ATTRS(attr_ints("kernel_shape", IVALS(2, 2), 2), attr_ints("strides", IVALS(2, 2), 2));
    check("MaxUnpool", a, 2, k2, D5_F64, 4, SHAPE(1, 1, 4, 4),
          DV(0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4));
    d5_tensor b[3] = {f64(4, SHAPE(1, 1, 2, 2), DV(5, 6, 7, 8)),
                      ti64(4, SHAPE(1, 1, 2, 2), IVALS(5, 7, 13, 15)),
                      ti64(1, SHAPE(4), IVALS(1, 1, 5, 5))};
    check("MaxUnpool", b, 3, k2, D5_F64, 4, SHAPE(1, 1, 5, 5),
          DV(0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0));
    /* 1-d with pads: unpooled size (3 - 1) * 2 - 1 - 0 + 3 = 6; indices cover
     * both planes (N = 1, C = 2), 5 repeats and the later element wins. */
    d5_tensor c[2] = {f64(3, SHAPE(1, 2, 3), DV(1, 2, 3, 4, 5, 6)),
                      ti64(3, SHAPE(1, 2, 3), IVALS(0, 5, 5, 6, 8, 11))};
    const d5_attrs *k3 =
        ATTRS(attr_ints("kernel_shape", IVALS(3), 1), attr_ints("strides", IVALS(2), 1),
              attr_ints("pads", IVALS(1, 0), 2));
    check("MaxUnpool", c, 2, k3, D5_F64, 3, SHAPE(1, 2, 6), DV(1, 0, 0, 0, 0, 3, 4, 0, 5, 0, 0, 6));
    d5_tensor ind = ti64(3, SHAPE(1, 2, 3), IVALS(0, 5, 5, 6, 8, 11));
    expect_gradient_given("MaxUnpool", 3, SHAPE(1, 2, 3), &ind, k3, 1);
    /* By hand: element 1 lost position 5 to element 2 and gets no gradient. */
    d5_tensor in[2] = {f64(3, SHAPE(1, 2, 3), DV(1, 2, 3, 4, 5, 6)), ind}, y, gin[2];
    double gv[12];
    for (int i = 0; i < 12; i++) gv[i] = i + 1;
    d5_tensor gy = f64(3, SHAPE(1, 2, 6), gv);
    cr_assert_eq(run_known("MaxUnpool", in, 2, k3, &y, &gy, gin), D5_OK, "%s", d5_last_error());
    expect_tensor(&gin[0], D5_F64, 3, SHAPE(1, 2, 3), DV(1, 0, 6, 7, 9, 12), 0,
                  "MaxUnpool gradient");
    op_free_all(gin, 2);
    d5_tensor_free(&y);
    d5_tensor_free(&gy);
    op_free_all(in, 2);
    d5_tensor r[2] = {f64(3, SHAPE(1, 1, 2), NULL), ti64(3, SHAPE(1, 1, 2), IVALS(0, 4))};
    check_run_fails("MaxUnpool", r, 2, ATTRS(attr_ints("kernel_shape", IVALS(2), 1)), D5_ERR_RANGE,
                    "MaxUnpool: I[1] is 4, outside [0, 3)");
    d5_tensor s[3] = {f64(3, SHAPE(1, 1, 2), NULL), ti64(3, SHAPE(1, 1, 2), IVALS(0, 1)),
                      ti64(1, SHAPE(3), IVALS(1, 1, 2))};
    check_fails("MaxUnpool", s, 3, ATTRS(attr_ints("kernel_shape", IVALS(2), 1)), D5_ERR_SHAPE,
                "MaxUnpool: output_shape[2] is 2, expected at least 3 (the unpooled size)");
    d5_tensor k[2] = {f64(3, SHAPE(1, 1, 2), NULL), ti64(3, SHAPE(1, 1, 2), IVALS(0, 1))};
    check_fails("MaxUnpool", k, 2, NULL, D5_ERR_INVALID,
                "MaxUnpool: attribute kernel_shape is required");
}
