/* The reference operators that exporters emit around the math: Constant,
 * ConstantOfShape, Shape, Gather, Cast, Expand, Range, Where, Equal, Less,
 * Greater, Not. Expected values marked "numpy" were computed with numpy 1.24
 * (Debian's /usr/bin/python3, x86-64) and pasted; the others are worked by hand
 * in the comment beside them. */
#include "more_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------- */

static d5_attr attr_tensor(const char *name, const d5_tensor *t)
{
    return (d5_attr){.name = name, .type = D5_ATTR_TENSOR, .tensor = t};
}

/* check() to an absolute 1e-6, whatever the data type. */
static void check_abs(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                      d5_dtype dt, int32_t ndim, const int64_t *shape, const double *want)
{
    check_within(op, in, nin, attrs, dt, ndim, shape, want, 1e-6, 0);
}

/* ---- Constant --------------------------------------------------------------------- */

Test(constant, each_attribute)
{
    d5_tensor v = tmake(D5_I32, 2, SHAPE(2, 2), DV(1, -2, 3, 4));
    d5_attr a1 = attr_tensor("value", &v);
    d5_attrs s1 = {&a1, 1};
    check_abs("Constant", NULL, 0, &s1, D5_I32, 2, SHAPE(2, 2), DV(1, -2, 3, 4));
    d5_tensor_free(&v);

    d5_attr a2 = attr_float("value_float", 2.5);
    d5_attrs s2 = {&a2, 1};
    check_abs("Constant", NULL, 0, &s2, D5_F32, 0, NULL, DV(2.5));

    d5_attr a3 = {
        .name = "value_floats", .type = D5_ATTR_FLOATS, .floats = DV(0.5, -1), .count = 2};
    d5_attrs s3 = {&a3, 1};
    check_abs("Constant", NULL, 0, &s3, D5_F32, 1, SHAPE(2), DV(0.5, -1));

    d5_attr a4[2] = {attr_int("value_int", -7), attr_int(D5_ATTR_OPSET, 17)};
    d5_attrs s4 = {a4, 2};
    check_abs("Constant", NULL, 0, &s4, D5_I64, 0, NULL, DV(-7));

    d5_attr a5 = attr_ints("value_ints", IVALS(4, 0, -1), 3);
    d5_attrs s5 = {&a5, 1};
    check_abs("Constant", NULL, 0, &s5, D5_I64, 1, SHAPE(3), DV(4, 0, -1));
}

Test(constant, errors)
{
    check_fails("Constant", NULL, 0, NULL, D5_ERR_INVALID, "none of the attributes");
    d5_attr two[2] = {attr_int("value_int", 1), attr_float("value_float", 1)};
    d5_attrs s2 = {two, 2};
    check_fails("Constant", NULL, 0, &s2, D5_ERR_INVALID,
                "attributes 'value_float' and 'value_int' are both set");
    d5_attr str = attr_string("value_string", "hello");
    d5_attrs s3 = {&str, 1};
    check_fails("Constant", NULL, 0, &s3, D5_ERR_UNSUPPORTED, "'value_string' is not supported");
    d5_tensor v = tmake(D5_F32, 1, SHAPE(2), NULL);
    d5_attr sparse = attr_tensor("sparse_value", &v);
    d5_attrs s4 = {&sparse, 1};
    check_fails("Constant", NULL, 0, &s4, D5_ERR_UNSUPPORTED, "'sparse_value' is not supported");
    d5_tensor_free(&v);
    d5_attr wrong = attr_int("value_ints", 3);
    d5_attrs s5 = {&wrong, 1};
    check_fails("Constant", NULL, 0, &s5, D5_ERR_INVALID, "'value_ints' must be a list of ints");
}

/* ---- ConstantOfShape -------------------------------------------------------------- */

Test(constantofshape, default_and_typed_values)
{
    d5_tensor in = ti64(1, SHAPE(2), IVALS(2, 3));
    check_abs("ConstantOfShape", &in, 1, NULL, D5_F32, 2, SHAPE(2, 3), DV(0, 0, 0, 0, 0, 0));

    d5_tensor v = tmake(D5_I64, 1, SHAPE(1), DV(7));
    d5_attr a = attr_tensor("value", &v);
    d5_attrs s = {&a, 1};
    d5_tensor in2 = ti64(1, SHAPE(3), IVALS(1, 2, 1));
    check_abs("ConstantOfShape", &in2, 1, &s, D5_I64, 3, SHAPE(1, 2, 1), DV(7, 7));
    d5_tensor_free(&v);

    /* An empty shape gives a scalar. */
    d5_tensor b = tmake(D5_BOOL, 1, SHAPE(1), DV(1));
    d5_attr ab = attr_tensor("value", &b);
    d5_attrs sb = {&ab, 1};
    d5_tensor in3 = ti64(1, SHAPE(0), NULL);
    check_abs("ConstantOfShape", &in3, 1, &sb, D5_BOOL, 0, NULL, DV(1));
    d5_tensor_free(&b);
}

Test(constantofshape, errors)
{
    d5_tensor in = ti64(1, SHAPE(2), IVALS(2, 3));
    cr_assert_eq(create_unknown("ConstantOfShape", &in, 1, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "ConstantOfShape: input 0 (input) must be a constant"), "%s",
              d5_last_error());
    d5_tensor_free(&in);
    d5_tensor neg = ti64(1, SHAPE(2), IVALS(2, -1));
    check_fails("ConstantOfShape", &neg, 1, NULL, D5_ERR_INVALID, "input[1] is -1");
    d5_tensor v = tmake(D5_F32, 1, SHAPE(2), DV(1, 2));
    d5_attr a = attr_tensor("value", &v);
    d5_attrs s = {&a, 1};
    d5_tensor in2 = ti64(1, SHAPE(1), IVALS(4));
    check_fails("ConstantOfShape", &in2, 1, &s, D5_ERR_INVALID, "has 2 elements, expected 1");
    d5_tensor_free(&v);
    d5_tensor fl = tf32(1, SHAPE(1), VALS(4));
    check_fails("ConstantOfShape", &fl, 1, NULL, D5_ERR_INVALID,
                "input 0 (input) has data type float32, expected int64");
}

/* ---- Shape ------------------------------------------------------------------------ */

Test(shape, whole_and_sliced)
{
    d5_tensor x = tf32(4, SHAPE(2, 3, 4, 5), NULL);
    d5_tensor in[1] = {x};
    d5_tensor y;
    run_op("Shape", "ref", in, 1, NULL, &y, 1);
    expect_tensor(&y, D5_I64, 1, SHAPE(4), DV(2, 3, 4, 5), 0, "Shape");
    d5_tensor_free(&y);

    /* dims[1:-1] */
    d5_attr a[2] = {attr_int("start", 1), attr_int("end", -1)};
    d5_attrs s = {a, 2};
    run_op("Shape", "ref", in, 1, &s, &y, 1);
    expect_tensor(&y, D5_I64, 1, SHAPE(2), DV(3, 4), 0, "Shape");
    d5_tensor_free(&y);

    /* Out-of-range start and end clamp: dims[-10:10] is the whole shape. */
    d5_attr c[2] = {attr_int("start", -10), attr_int("end", 10)};
    d5_attrs sc = {c, 2};
    run_op("Shape", "ref", in, 1, &sc, &y, 1);
    expect_tensor(&y, D5_I64, 1, SHAPE(4), DV(2, 3, 4, 5), 0, "Shape");
    d5_tensor_free(&y);

    /* start after end: empty. */
    d5_attr e[2] = {attr_int("start", 3), attr_int("end", 1)};
    d5_attrs se = {e, 2};
    run_op("Shape", "ref", in, 1, &se, &y, 1);
    expect_tensor(&y, D5_I64, 1, SHAPE(0), NULL, 0, "Shape");
    d5_tensor_free(&y);
    d5_tensor_free(&x);
}

Test(shape, any_data_type_and_scalar)
{
    /* float16 input: only its descriptor is read. */
    d5_tensor_desc hd;
    cr_assert_eq(d5_tensor_desc_make(D5_F16, 2, SHAPE(7, 1), &hd), D5_OK);
    d5_tensor h;
    cr_assert_eq(d5_tensor_alloc(&hd, &h), D5_OK);
    d5_tensor y;
    run_op("Shape", "ref", &h, 1, NULL, &y, 1);
    expect_tensor(&y, D5_I64, 1, SHAPE(2), DV(7, 1), 0, "Shape");
    d5_tensor_free(&y);
    d5_tensor_free(&h);
    d5_tensor s = tmake(D5_I32, 0, NULL, DV(5));
    run_op("Shape", "ref", &s, 1, NULL, &y, 1);
    expect_tensor(&y, D5_I64, 1, SHAPE(0), NULL, 0, "Shape");
    d5_tensor_free(&y);
    d5_tensor_free(&s);
}

/* ---- Gather ----------------------------------------------------------------------- */

/* data [3,4] = arange(12) / 2 - 1 */
static d5_tensor gather_data(void)
{
    d5_tensor t = tf32(2, SHAPE(3, 4), NULL);
    for (int i = 0; i < 12; i++) ((float *)t.data)[i] = (float)i / 2 - 1;
    return t;
}

Test(gather, axes_and_negative_indices)
{
    /* numpy: np.take(data, [[0, 2], [-1, 1]], axis=0), shape [2,2,4] */
    d5_tensor in[2] = {gather_data(), ti64(2, SHAPE(2, 2), IVALS(0, 2, -1, 1))};
    check_abs("Gather", in, 2, NULL, D5_F32, 3, SHAPE(2, 2, 4),
              DV(-1, -0.5, 0, 0.5, 3, 3.5, 4, 4.5, 3, 3.5, 4, 4.5, 1, 1.5, 2, 2.5));
    /* numpy: np.take(data, [3, -4, 1], axis=-1), int32 indices, shape [3,3] */
    d5_attr a = attr_int("axis", -1);
    d5_attrs s = {&a, 1};
    d5_tensor in2[2] = {gather_data(), tmake(D5_I32, 1, SHAPE(3), DV(3, -4, 1))};
    check_abs("Gather", in2, 2, &s, D5_F32, 2, SHAPE(3, 3),
              DV(0.5, -1, -0.5, 2.5, 1, 1.5, 4.5, 3, 3.5));
    /* numpy: np.take(data, 1, axis=1): a scalar index drops the axis, shape [3] */
    d5_attr b = attr_int("axis", 1);
    d5_attrs sb = {&b, 1};
    d5_tensor in3[2] = {gather_data(), ti64(0, NULL, IVALS(1))};
    check_abs("Gather", in3, 2, &sb, D5_F32, 1, SHAPE(3), DV(-0.5, 1.5, 3.5));
    /* Shape -> Gather as exporters write it: int64 data, dims[[2, 0]]. */
    d5_tensor in4[2] = {ti64(1, SHAPE(4), IVALS(8, 3, 224, 224)), ti64(1, SHAPE(2), IVALS(2, 0))};
    check_abs("Gather", in4, 2, NULL, D5_I64, 1, SHAPE(2), DV(224, 8));
}

Test(gather, errors)
{
    d5_tensor in[2] = {gather_data(), ti64(1, SHAPE(3), IVALS(0, 3, 1))};
    check_fails("Gather", in, 2, NULL, D5_ERR_RANGE,
                "Gather: indices[1] is 3, outside [-3, 2] for axis 0 of size 3");
    d5_tensor in2[2] = {gather_data(), ti64(1, SHAPE(1), IVALS(-5))};
    d5_attr a = attr_int("axis", 1);
    d5_attrs s = {&a, 1};
    check_fails("Gather", in2, 2, &s, D5_ERR_RANGE, "indices[0] is -5, outside [-4, 3]");
    d5_tensor in3[2] = {gather_data(), tf32(1, SHAPE(1), VALS(0))};
    check_fails("Gather", in3, 2, NULL, D5_ERR_INVALID,
                "input 1 (indices) has data type float32, expected int32 or int64");
    d5_attr bad = attr_int("axis", 2);
    d5_attrs sbad = {&bad, 1};
    d5_tensor in4[2] = {gather_data(), ti64(1, SHAPE(1), IVALS(0))};
    check_fails("Gather", in4, 2, &sbad, D5_ERR_INVALID, "Gather: axis 2 is outside [-2, 1]");
}

Test(gather, gradient_scatters_and_adds)
{
    /* Index 1 is taken twice: its gradient is the sum of both. */
    d5_tensor idx = ti64(2, SHAPE(2, 2), IVALS(1, -1, 0, 1));
    expect_gradient_given("Gather", 2, SHAPE(3, 4), &idx, NULL, 1);
    d5_attr a = attr_int("axis", 1);
    d5_attrs s = {&a, 1};
    d5_tensor idx2 = ti64(1, SHAPE(3), IVALS(3, 3, 0));
    expect_gradient_given("Gather", 3, SHAPE(2, 4, 2), &idx2, &s, 1);
    d5_tensor_free(&idx);
    d5_tensor_free(&idx2);

    /* By hand: data [3], indices [1, 1, 2], dY = [1, 2, 3] -> dX = [0, 3, 3]. */
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("Gather", "ref", &desc), D5_OK);
    d5_tensor x = tf32(1, SHAPE(3), VALS(5, 6, 7)), i = ti64(1, SHAPE(3), IVALS(1, 1, 2));
    d5_tensor in[2] = {x, i}, known[2] = {x, i};
    known[0].data = NULL;
    d5_op *op;
    cr_assert_eq(d5_op_create(desc, known, 2, NULL, 1, &op), D5_OK, "%s", d5_last_error());
    d5_tensor y = tf32(1, SHAPE(3), NULL), gy = tf32(1, SHAPE(3), VALS(1, 2, 3));
    d5_tensor gx[2] = {tf32(1, SHAPE(3), NULL), {.data = NULL}};
    gx[1].desc = i.desc;
    cr_assert_eq(d5_op_forward(op, in, &y), D5_OK);
    expect_values(&y, VALS(6, 6, 7), 3, 0);
    cr_assert_eq(d5_op_backward(op, &gy, in, &y, gx), D5_OK, "%s", d5_last_error());
    expect_values(&gx[0], VALS(0, 3, 3), 3, 0);
    d5_op_free(op);
    d5_tensor *all[] = {&x, &i, &y, &gy, &gx[0]};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) d5_tensor_free(all[k]);
}

/* ---- Cast ------------------------------------------------------------------------- */

/* Casts `x` (freed) to the ONNX type number `to`, expecting dtype dt and `want`. */
static void check_cast(d5_tensor x, int64_t to, d5_dtype dt, const double *want)
{
    d5_attr a = attr_int("to", to);
    d5_attrs s = {&a, 1};
    int32_t nd = x.desc.ndim;
    int64_t shape[D5_MAX_DIMS];
    memcpy(shape, x.desc.shape, sizeof shape);
    check_abs("Cast", &x, 1, &s, dt, nd, shape, want);
}

#define CAST_IN DV(-2.7, -0.5, 0.5, 2.7, 300.0, -1.0, 255.9, -129.0)

Test(cast, float_to_integers_truncates_and_wraps)
{
    /* numpy: x.astype(np.int32), uint8, int8, int16, int64, bool on float32 x */
    check_cast(tmake(D5_F32, 1, SHAPE(8), CAST_IN), 6, D5_I32, DV(-2, 0, 0, 2, 300, -1, 255, -129));
    check_cast(tmake(D5_F32, 1, SHAPE(8), CAST_IN), 2, D5_U8, DV(254, 0, 0, 2, 44, 255, 255, 127));
    check_cast(tmake(D5_F32, 1, SHAPE(8), CAST_IN), 3, D5_I8, DV(-2, 0, 0, 2, 44, -1, -1, 127));
    check_cast(tmake(D5_F32, 1, SHAPE(8), CAST_IN), 5, D5_I16, DV(-2, 0, 0, 2, 300, -1, 255, -129));
    check_cast(tmake(D5_F32, 1, SHAPE(8), CAST_IN), 7, D5_I64, DV(-2, 0, 0, 2, 300, -1, 255, -129));
    check_cast(tmake(D5_F64, 2, SHAPE(2, 2), DV(0, -0.0, 1e-300, NAN)), 9, D5_BOOL, DV(0, 0, 1, 1));
    /* numpy: [nan, inf, -inf, 1e10] as float32 to int32, int64, int8 */
    const double odd[4] = {NAN, INFINITY, -INFINITY, 1e10};
    check_cast(tmake(D5_F32, 1, SHAPE(4), odd), 6, D5_I32,
               DV(-2147483648.0, -2147483648.0, -2147483648.0, -2147483648.0));
    check_cast(tmake(D5_F32, 1, SHAPE(4), odd), 7, D5_I64, DV(-0x1p63, -0x1p63, -0x1p63, 1e10));
    check_cast(tmake(D5_F32, 1, SHAPE(4), odd), 3, D5_I8, DV(0, 0, 0, 0));
}

Test(cast, integers_and_bool)
{
    /* numpy: int64 [3e9, -3e9, 200, -200, 0, 1] to int32, uint8, int8, int16, float32, bool */
    const double big[6] = {3e9, -3e9, 200, -200, 0, 1};
    check_cast(tmake(D5_I64, 1, SHAPE(6), big), 6, D5_I32,
               DV(-1294967296, 1294967296, 200, -200, 0, 1));
    check_cast(tmake(D5_I64, 1, SHAPE(6), big), 2, D5_U8, DV(0, 0, 200, 56, 0, 1));
    check_cast(tmake(D5_I64, 1, SHAPE(6), big), 3, D5_I8, DV(0, 0, -56, 56, 0, 1));
    check_cast(tmake(D5_I64, 1, SHAPE(6), big), 5, D5_I16, DV(24064, -24064, 200, -200, 0, 1));
    check_cast(tmake(D5_I64, 1, SHAPE(6), big), 1, D5_F32, DV(3e9, -3e9, 200, -200, 0, 1));
    check_cast(tmake(D5_I64, 1, SHAPE(6), big), 9, D5_BOOL, DV(1, 1, 1, 1, 0, 1));
    check_cast(tmake(D5_BOOL, 1, SHAPE(3), DV(1, 0, 1)), 11, D5_F64, DV(1, 0, 1));
    check_cast(tmake(D5_U8, 0, NULL, DV(250)), 3, D5_I8, DV(-6));
    check_cast(tmake(D5_F64, 1, SHAPE(2), DV(0.1, -1e40)), 1, D5_F32, DV((double)0.1f, -INFINITY));
}

Test(cast, errors)
{
    /* Every d5 type is a target (tests/level0/test_ref_cast.c, STRING in
     * test_ref_strings.c); complex is not. */
    d5_attr to64 = attr_int("to", 14);
    d5_attrs s64 = {&to64, 1};
    d5_tensor x = tf32(1, SHAPE(2), NULL);
    check_fails("Cast", &x, 1, &s64, D5_ERR_UNSUPPORTED, "casting to COMPLEX64 (to = 14)");
    x = tf32(1, SHAPE(2), NULL);
    check_fails("Cast", &x, 1, NULL, D5_ERR_INVALID, "Cast: attribute 'to' is required");
}

Test(cast, gradient_between_floats)
{
    d5_attr a = attr_int("to", 11);
    d5_attrs s = {&a, 1};
    d5_tensor_desc d = op_fdesc(2, SHAPE(2, 3));
    expect_gradient("Cast", &d, 1, NULL, &s, 1);
}

/* ---- Expand ----------------------------------------------------------------------- */

Test(expand, broadcasts_both_ways)
{
    /* numpy: [[1],[2],[3]] * np.ones((2,1,4)), shape [2,3,4] */
    d5_tensor in[2] = {tf32(2, SHAPE(3, 1), VALS(1, 2, 3)), ti64(1, SHAPE(3), IVALS(2, 1, 4))};
    check_abs("Expand", in, 2, NULL, D5_F32, 3, SHAPE(2, 3, 4),
              DV(1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
    /* A shape of lower rank: [[5],[6]] against (3,) is [2,3]. */
    d5_tensor in2[2] = {tf32(2, SHAPE(2, 1), VALS(5, 6)), ti64(1, SHAPE(1), IVALS(3))};
    check_abs("Expand", in2, 2, NULL, D5_F32, 2, SHAPE(2, 3), DV(5, 5, 5, 6, 6, 6));
    /* int64 data; a 1 in shape keeps the input's dimension. */
    d5_tensor in3[2] = {ti64(1, SHAPE(2), IVALS(7, -8)), ti64(1, SHAPE(2), IVALS(2, 1))};
    check_abs("Expand", in3, 2, NULL, D5_I64, 2, SHAPE(2, 2), DV(7, -8, 7, -8));
}

Test(expand, errors)
{
    d5_tensor in[2] = {tf32(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(2, 3))};
    cr_assert_eq(create_unknown("Expand", in, 2, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "Expand: input 1 (shape) must be a constant"), "%s",
              d5_last_error());
    op_free_all(in, 2);
    d5_tensor in2[2] = {tf32(1, SHAPE(3), NULL), ti64(1, SHAPE(1), IVALS(4))};
    check_fails("Expand", in2, 2, NULL, D5_ERR_SHAPE,
                "Expand: shapes [3] and [4] do not broadcast");
    d5_tensor in3[2] = {tf32(1, SHAPE(3), NULL), tf32(1, SHAPE(1), VALS(3))};
    check_fails("Expand", in3, 2, NULL, D5_ERR_INVALID, "has data type float32, expected int64");
}

Test(expand, gradient_sums_over_broadcast)
{
    d5_tensor shape = ti64(1, SHAPE(3), IVALS(2, 3, 4));
    expect_gradient_given("Expand", 2, SHAPE(3, 1), &shape, NULL, 1);
    d5_tensor_free(&shape);
}

/* ---- Range ------------------------------------------------------------------------ */

/* Runs Range with all three inputs known at create (freed). */
static void check_range(d5_tensor *in, d5_dtype dt, int64_t n, const double *want, double tol)
{
    d5_tensor y;
    d5_status s = run_known("Range", in, 3, NULL, &y, NULL, NULL);
    cr_assert_eq(s, D5_OK, "%s", d5_last_error());
    expect_tensor_within(&y, dt, 1, SHAPE(n), want, tol, 0, "Range");
    d5_tensor_free(&y);
    op_free_all(in, 3);
}

Test(range, integer_and_float)
{
    /* numpy: np.arange(10, 0, -3) */
    d5_tensor a[3] = {ti64(0, NULL, IVALS(10)), ti64(0, NULL, IVALS(0)), ti64(0, NULL, IVALS(-3))};
    check_range(a, D5_I64, 4, DV(10, 7, 4, 1), 0);
    /* int32, 0 to 10 by 3: [0, 3, 6, 9] */
    d5_tensor b[3] = {tmake(D5_I32, 0, NULL, DV(0)), tmake(D5_I32, 0, NULL, DV(10)),
                      tmake(D5_I32, 0, NULL, DV(3))};
    check_range(b, D5_I32, 4, DV(0, 3, 6, 9), 0);
    /* Empty: 5 to 1 by 1 has max(ceil(-4), 0) = 0 elements. */
    d5_tensor c[3] = {ti64(0, NULL, IVALS(5)), ti64(0, NULL, IVALS(1)), ti64(0, NULL, IVALS(1))};
    check_range(c, D5_I64, 0, NULL, 0);
    /* numpy: np.arange(1.0, 2.0, 0.3, dtype=np.float32) = [1, 1.3, 1.6, 1.9] within float32 */
    d5_tensor f[3] = {tf32(0, NULL, VALS(1)), tf32(0, NULL, VALS(2)), tf32(0, NULL, VALS(0.3f))};
    check_range(f, D5_F32, 4, DV(1.0, 1.2999999523162842, 1.5999999046325684, 1.8999998569488525),
                1e-6);
    /* numpy: np.arange(-1.5, 1.0, 0.75) */
    d5_tensor g[3] = {tmake(D5_F64, 0, NULL, DV(-1.5)), tmake(D5_F64, 0, NULL, DV(1)),
                      tmake(D5_F64, 0, NULL, DV(0.75))};
    check_range(g, D5_F64, 4, DV(-1.5, -0.75, 0, 0.75), 1e-12);
}

Test(range, errors)
{
    /* try_op leaves float inputs unknown at create, as for values computed at run time. */
    d5_tensor f[3] = {tf32(0, NULL, VALS(0)), tf32(0, NULL, VALS(4)), tf32(0, NULL, VALS(1))};
    check_fails("Range", f, 3, NULL, D5_ERR_UNSUPPORTED,
                "Range: input 0 (start) must be a constant");
    d5_tensor z[3] = {ti64(0, NULL, IVALS(0)), ti64(0, NULL, IVALS(4)), ti64(0, NULL, IVALS(0))};
    check_fails("Range", z, 3, NULL, D5_ERR_INVALID, "Range: delta is 0");
    d5_tensor m[3] = {ti64(0, NULL, IVALS(0)), tmake(D5_I32, 0, NULL, DV(4)),
                      ti64(0, NULL, IVALS(1))};
    check_fails("Range", m, 3, NULL, D5_ERR_INVALID,
                "Range: input 1 (limit) is int32 but start is int64");
    d5_tensor v[3] = {ti64(1, SHAPE(2), IVALS(0, 1)), ti64(0, NULL, IVALS(4)),
                      ti64(0, NULL, IVALS(1))};
    check_fails("Range", v, 3, NULL, D5_ERR_INVALID, "Range: input 0 (start) must be a scalar");
}

/* ---- Where ------------------------------------------------------------------------ */

Test(where, broadcasts_three_inputs)
{
    /* numpy: np.where([[True],[False]], [[1,2,3]], np.float32(-1)) */
    d5_tensor in[3] = {tmake(D5_BOOL, 2, SHAPE(2, 1), DV(1, 0)),
                       tf32(2, SHAPE(1, 3), VALS(1, 2, 3)), tf32(0, NULL, VALS(-1))};
    check_abs("Where", in, 3, NULL, D5_F32, 2, SHAPE(2, 3), DV(1, 2, 3, -1, -1, -1));
    /* numpy: np.where([T,F,T,F], [10,20,30,40], [[-1],[-2]]) on int64 */
    d5_tensor in2[3] = {tmake(D5_BOOL, 1, SHAPE(4), DV(1, 0, 1, 0)),
                        ti64(1, SHAPE(4), IVALS(10, 20, 30, 40)),
                        ti64(2, SHAPE(2, 1), IVALS(-1, -2))};
    check_abs("Where", in2, 3, NULL, D5_I64, 2, SHAPE(2, 4), DV(10, -1, 30, -1, 10, -2, 30, -2));
}

Test(where, errors)
{
    d5_tensor in[3] = {tf32(1, SHAPE(2), NULL), tf32(1, SHAPE(2), NULL), tf32(1, SHAPE(2), NULL)};
    check_fails("Where", in, 3, NULL, D5_ERR_INVALID,
                "Where: input 0 (condition) has data type float32, expected bool");
    d5_tensor in2[3] = {tmake(D5_BOOL, 1, SHAPE(2), NULL), tf32(1, SHAPE(2), NULL),
                        ti64(1, SHAPE(2), NULL)};
    check_fails("Where", in2, 3, NULL, D5_ERR_INVALID, "X has data type float32 but Y has int64");
    d5_tensor in3[3] = {tmake(D5_BOOL, 1, SHAPE(3), NULL), tf32(1, SHAPE(2), NULL),
                        tf32(1, SHAPE(2), NULL)};
    check_fails("Where", in3, 3, NULL, D5_ERR_SHAPE, "do not broadcast");
}

Test(where, gradient_to_x_and_y)
{
    d5_tensor cond = tmake(D5_BOOL, 2, SHAPE(2, 3), DV(1, 0, 0, 1, 1, 0));
    d5_tensor_desc d[3] = {cond.desc, op_fdesc(2, SHAPE(1, 3)), op_fdesc(2, SHAPE(2, 1))};
    d5_tensor given[3] = {cond, {.data = NULL}, {.data = NULL}};
    expect_gradient("Where", d, 3, given, NULL, 1);

    /* By hand: cond [T, F, T], X [3], Y scalar, dOut [1, 2, 4] -> dX [1, 0, 4], dY [2]. */
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("Where", "ref", &desc), D5_OK);
    d5_tensor c = tmake(D5_BOOL, 1, SHAPE(3), DV(1, 0, 1));
    d5_tensor in[3] = {c, tf32(1, SHAPE(3), VALS(5, 6, 7)), tf32(0, NULL, VALS(9))};
    d5_op *op;
    cr_assert_eq(d5_op_create(desc, in, 3, NULL, 1, &op), D5_OK, "%s", d5_last_error());
    d5_tensor y = tf32(1, SHAPE(3), NULL), gy = tf32(1, SHAPE(3), VALS(1, 2, 4));
    d5_tensor gx[3] = {{.data = NULL}, tf32(1, SHAPE(3), NULL), tf32(0, NULL, NULL)};
    gx[0].desc = c.desc;
    cr_assert_eq(d5_op_forward(op, in, &y), D5_OK);
    expect_values(&y, VALS(5, 9, 7), 3, 0);
    cr_assert_eq(d5_op_backward(op, &gy, in, &y, gx), D5_OK, "%s", d5_last_error());
    expect_values(&gx[1], VALS(1, 0, 4), 3, 0);
    expect_values(&gx[2], VALS(2), 1, 0);
    d5_op_free(op);
    op_free_all(in, 3);
    op_free_all(gx, 3);
    d5_tensor_free(&y);
    d5_tensor_free(&gy);
    d5_tensor_free(&cond);
}

/* ---- Equal, Less, Greater, Not ------------------------------------------------------ */

Test(compare, broadcasting_float)
{
    /* numpy: a = [[1,2,3],[4,5,6]], b = [3,2,6]: a == b, a < b, a > b */
    const char *ops[3] = {"Equal", "Less", "Greater"};
    const double want[3][6] = {{0, 1, 0, 0, 0, 1}, {1, 0, 1, 0, 0, 0}, {0, 0, 0, 1, 1, 0}};
    for (int k = 0; k < 3; k++) {
        d5_tensor in[2] = {tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)),
                           tf32(1, SHAPE(3), VALS(3, 2, 6))};
        check_abs(ops[k], in, 2, NULL, D5_BOOL, 2, SHAPE(2, 3), want[k]);
    }
}

Test(compare, integers_bool_and_nan)
{
    /* int64 against a scalar: [-2, 0, 7] vs 0 */
    d5_tensor in[2] = {ti64(1, SHAPE(3), IVALS(-2, 0, 7)), ti64(0, NULL, IVALS(0))};
    check_abs("Less", in, 2, NULL, D5_BOOL, 1, SHAPE(3), DV(1, 0, 0));
    d5_tensor in2[2] = {tmake(D5_I32, 1, SHAPE(3), DV(-2, 0, 7)), tmake(D5_I32, 0, NULL, DV(0))};
    check_abs("Greater", in2, 2, NULL, D5_BOOL, 1, SHAPE(3), DV(0, 0, 1));
    d5_tensor in3[2] = {tmake(D5_BOOL, 1, SHAPE(4), DV(1, 0, 1, 0)),
                        tmake(D5_BOOL, 1, SHAPE(4), DV(1, 1, 0, 0))};
    check_abs("Equal", in3, 2, NULL, D5_BOOL, 1, SHAPE(4), DV(1, 0, 0, 1));
    /* A NaN is neither equal to, less nor greater than anything, itself included. */
    const char *ops[3] = {"Equal", "Less", "Greater"};
    for (int k = 0; k < 3; k++) {
        d5_tensor in4[2] = {tmake(D5_F64, 1, SHAPE(2), DV(NAN, 1)),
                            tmake(D5_F64, 1, SHAPE(2), DV(NAN, NAN))};
        check_abs(ops[k], in4, 2, NULL, D5_BOOL, 1, SHAPE(2), DV(0, 0));
    }
}

Test(compare, errors)
{
    d5_tensor in[2] = {tmake(D5_BOOL, 1, SHAPE(2), NULL), tmake(D5_BOOL, 1, SHAPE(2), NULL)};
    check_fails("Less", in, 2, NULL, D5_ERR_INVALID, "Less: input 0 is bool, expected a numeric");
    d5_tensor in2[2] = {tf32(1, SHAPE(2), NULL), ti64(1, SHAPE(2), NULL)};
    check_fails("Equal", in2, 2, NULL, D5_ERR_INVALID,
                "Equal: inputs have data types float32 and int64");
    d5_tensor in3[2] = {tf32(1, SHAPE(2), NULL), tf32(1, SHAPE(3), NULL)};
    check_fails("Greater", in3, 2, NULL, D5_ERR_SHAPE,
                "Greater: shapes [2] and [3] do not broadcast");
    /* Comparisons have no gradient. */
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("Equal", "ref", &desc), D5_OK);
    cr_assert_null(desc->backward);
}

Test(not, negates_bool)
{
    d5_tensor in = tmake(D5_BOOL, 2, SHAPE(2, 2), DV(1, 0, 0, 1));
    check_abs("Not", &in, 1, NULL, D5_BOOL, 2, SHAPE(2, 2), DV(0, 1, 1, 0));
    d5_tensor bad = ti64(1, SHAPE(2), NULL);
    check_fails("Not", &bad, 1, NULL, D5_ERR_INVALID,
                "Not: input 0 has data type int64, expected bool");
}
