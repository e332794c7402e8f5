/* The reference operators of ONNX opsets 18 to 28 of group A: the bitwise
 * operators, Swish, SwiGLU, CumProd, BitCast, RMSNormalization,
 * LpNormalization and GroupNormalization, with ReduceMax and ReduceMin on
 * bool and Range on float16 and bfloat16. Expected values were computed
 * independently with Debian's numpy 1.24 (np.bitwise_and, np.cumprod,
 * x * 1 / (1 + exp(-alpha * x)), the normalisations written out in numpy,
 * np.arange in float32 then astype(float16)), and are written here with the
 * script's digits. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <string.h>

/* Asserts that y (freed) has type dt and the bytes of n elements at want. */
static void expect_bytes(d5_tensor *y, d5_dtype dt, int64_t n, const void *want, const char *what)
{
    cr_assert_eq(y->desc.dtype, (int32_t)dt, "%s: type %s", what,
                 d5_dtype_name((d5_dtype)y->desc.dtype));
    cr_assert_eq(d5_tensor_desc_numel(&y->desc), n, "%s: element count", what);
    size_t size = d5_dtype_size(dt);
    for (int64_t i = 0; i < n; i++)
        cr_expect(memcmp((const char *)y->data + i * size, (const char *)want + i * size, size) ==
                      0,
                  "%s: element %lld differs", what, (long long)i);
    d5_tensor_free(y);
}

/* Runs the one-output ref operator `op` and returns its output. */
static d5_tensor run1(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs)
{
    d5_tensor y;
    run_op(op, "ref", in, nin, attrs, &y, 1);
    return y;
}

#define ATTRS(...)                                                                                 \
    (&(d5_attrs){(const d5_attr[]){__VA_ARGS__},                                                   \
                 (int32_t)(sizeof((const d5_attr[]){__VA_ARGS__}) / sizeof(d5_attr))})

/* ---- BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot ---- */

/* int64 values beyond 2^53, which doubles would round, broadcast [2,2] with
 * [2]. */
static const int64_t big_a[4] = {0x7FF0123456789ABC, -0x123456789ABCDEF1, (INT64_C(1) << 62) | 5,
                                 -1};
static const int64_t big_b[2] = {0x0FFFFFFFFFFFFFF3, 0x5555555555555555};

Test(bitwise, int64_exact_with_broadcasting)
{
    d5_tensor in[2] = {traw(D5_I64, 2, SHAPE(2, 2), big_a), traw(D5_I64, 1, SHAPE(2), big_b)};
    const int64_t and_[4] = {1148437920977820336, 4990270984251572485, 1, 6148914691236517205};
    const int64_t or_[4] = {INT64_C(9223372036854775807), -153124760478845601, 5764607523034234871,
                            -1};
    const int64_t xor_[4] = {8074934115876955471, -5143395744730418086, 5764607523034234870,
                             -6148914691236517206};
    const int64_t not_[4] = {-9218888453225749181, 1311768467463790320, -4611686018427387910, 0};
    d5_tensor y = run1("BitwiseAnd", in, 2, NULL);
    cr_assert_eq(y.desc.ndim, 2);
    expect_bytes(&y, D5_I64, 4, and_, "BitwiseAnd");
    y = run1("BitwiseOr", in, 2, NULL);
    expect_bytes(&y, D5_I64, 4, or_, "BitwiseOr");
    y = run1("BitwiseXor", in, 2, NULL);
    expect_bytes(&y, D5_I64, 4, xor_, "BitwiseXor");
    y = run1("BitwiseNot", in, 1, NULL);
    expect_bytes(&y, D5_I64, 4, not_, "BitwiseNot");
    op_free_all(in, 2);
}

Test(bitwise, uint8_and_uint64)
{
    /* [2,1] with [3] broadcasts to [2,3] */
    const uint8_t a[2] = {0xCA, 0x0F}, b[3] = {0xAA, 0x55, 0xFF};
    d5_tensor in[2] = {traw(D5_U8, 2, SHAPE(2, 1), a), traw(D5_U8, 1, SHAPE(3), b)};
    const uint8_t and_[6] = {138, 64, 202, 10, 5, 15}, or_[6] = {234, 223, 255, 175, 95, 255},
                  xor_[6] = {96, 159, 53, 165, 90, 240};
    d5_tensor y = run1("BitwiseAnd", in, 2, NULL);
    op_expect_shape(&y, 2, SHAPE(2, 3));
    expect_bytes(&y, D5_U8, 6, and_, "BitwiseAnd uint8");
    y = run1("BitwiseOr", in, 2, NULL);
    expect_bytes(&y, D5_U8, 6, or_, "BitwiseOr uint8");
    y = run1("BitwiseXor", in, 2, NULL);
    expect_bytes(&y, D5_U8, 6, xor_, "BitwiseXor uint8");
    op_free_all(in, 2);
    const uint64_t u[2] = {UINT64_MAX, UINT64_C(0x8000000000000001)},
                   not_u[2] = {0, UINT64_C(9223372036854775806)};
    d5_tensor x = traw(D5_U64, 1, SHAPE(2), u);
    y = run1("BitwiseNot", &x, 1, NULL);
    expect_bytes(&y, D5_U64, 2, not_u, "BitwiseNot uint64");
    d5_tensor_free(&x);
}

Test(bitwise, errors)
{
    const int32_t i4[4] = {1, 2, 3, 4};
    const int16_t i2[3] = {1, 2, 3};
    d5_tensor f[2] = {tf32(1, SHAPE(4), NULL), traw(D5_I32, 1, SHAPE(4), i4)};
    op_expect_fails("BitwiseAnd", f, 2, NULL, 1, D5_ERR_UNSUPPORTED,
                    "BitwiseAnd: input 0 has data type float32");
    op_expect_fails("BitwiseNot", f, 1, NULL, 1, D5_ERR_UNSUPPORTED, "BitwiseNot: input 0");
    d5_tensor m[2] = {traw(D5_I32, 1, SHAPE(4), i4), traw(D5_I16, 1, SHAPE(3), i2)};
    op_expect_fails("BitwiseOr", m, 2, NULL, 1, D5_ERR_INVALID, "BitwiseOr");
    d5_tensor s[2] = {traw(D5_I32, 1, SHAPE(4), i4), traw(D5_I32, 1, SHAPE(3), i4)};
    op_expect_fails("BitwiseXor", s, 2, NULL, 1, D5_ERR_SHAPE, "BitwiseXor");
    op_free_all(f, 2);
    op_free_all(m, 2);
    op_free_all(s, 2);
}

/* ---- Swish, SwiGLU ---- */

Test(swish, values_and_gradient)
{
    d5_tensor x = tf32(1, SHAPE(5), VALS(-3, -1, 0, 0.5f, 2));
    expect_op_values("Swish", &x, 1, NULL,
                     VALS(-0.14227761953270035f, -0.2689414213699951f, 0, 0.3112296656009273f,
                          1.761594155955765f),
                     5, 1e-6);
    expect_op_values("Swish", &x, 1, ATTRS(attr_float("alpha", 1.5)),
                     VALS(-0.03296082789177954f, -0.18242552380635632f, 0, 0.3395893495876965f,
                          1.9051482536448667f),
                     5, 1e-6);
    d5_tensor_free(&x);
    d5_tensor_desc d = op_fdesc(2, SHAPE(3, 4));
    expect_gradient("Swish", &d, 1, NULL, ATTRS(attr_float("alpha", 1.7)), 1);
}

Test(swiglu, values_errors_and_gradient)
{
    d5_tensor in[2] = {tf32(2, SHAPE(2, 3), VALS(-2, -0.5f, 0, 0.5f, 1, 3)),
                       tf32(2, SHAPE(2, 3), VALS(1, 2, -1, 0.25f, -3, 2))};
    expect_op_values("SwiGLU", in, 2, NULL,
                     VALS(-0.2384058440442351f, -0.3775406687981454f, 0, 0.07780741640023182f,
                          -2.193175735890015f, 5.7154447609346f),
                     6, 1e-6);
    expect_op_values("SwiGLU", in, 2, ATTRS(attr_float("alpha", 2)),
                     VALS(-0.03597241992418312f, -0.2689414213699951f, 0, 0.09138232232875061f,
                          -2.6423912339336475f, 5.985164261060192f),
                     6, 1e-6);
    d5_tensor b = tf32(2, SHAPE(1, 3), NULL);
    d5_tensor bad[2] = {in[0], b};
    op_expect_fails("SwiGLU", bad, 2, NULL, 1, D5_ERR_SHAPE,
                    "SwiGLU: A has shape [2,3] and B [1,3]");
    op_free_all(in, 2);
    d5_tensor_free(&b);
    d5_tensor_desc d[2] = {op_fdesc(2, SHAPE(3, 4)), op_fdesc(2, SHAPE(3, 4))};
    expect_gradient("SwiGLU", d, 2, NULL, ATTRS(attr_float("alpha", 0.8)), 1);
}

/* ---- CumProd ---- */

Test(cumprod, values)
{
    int64_t one = 1, zero = 0, minus1 = -1;
    d5_tensor in[2] = {tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)), ti64(0, NULL, &one)};
    expect_op_values("CumProd", in, 2, NULL, VALS(1, 2, 6, 4, 20, 120), 6, 0);
    d5_tensor_free(&in[1]);
    in[1] = ti64(0, NULL, &zero);
    expect_op_values("CumProd", in, 2, NULL, VALS(1, 2, 3, 4, 10, 18), 6, 0);
    op_free_all(in, 2);
    d5_tensor v[2] = {tf32(1, SHAPE(4), VALS(2, 3, 0, 5)), ti64(0, NULL, &minus1)};
    expect_op_values("CumProd", v, 2, ATTRS(attr_int("exclusive", 1)), VALS(1, 2, 6, 0), 4, 0);
    expect_op_values("CumProd", v, 2, ATTRS(attr_int("reverse", 1)), VALS(0, 0, 0, 5), 4, 0);
    expect_op_values("CumProd", v, 2, ATTRS(attr_int("exclusive", 1), attr_int("reverse", 1)),
                     VALS(0, 0, 5, 1), 4, 0);
    int64_t three = 3;
    d5_tensor_free(&v[1]);
    v[1] = ti64(0, NULL, &three);
    op_expect_fails("CumProd", v, 2, NULL, 1, D5_ERR_INVALID, "CumProd");
    op_free_all(v, 2);
}

Test(cumprod, gradient_with_zeros)
{
    int64_t one = 1;
    for (int e = 0; e < 2; e++)
        for (int r = 0; r < 2; r++) {
            /* random inputs, then one run with zeros (one and two per row) */
            d5_tensor given[2] = {{.data = NULL}, ti64(0, NULL, &one)};
            d5_tensor_desc d[2] = {op_fdesc(2, SHAPE(3, 5)), given[1].desc};
            const d5_attrs *a = ATTRS(attr_int("exclusive", e), attr_int("reverse", r));
            expect_gradient("CumProd", d, 2, given, a, 1);
            given[0] = tf32(2, SHAPE(3, 5),
                            VALS(0.5f, 0, -0.7f, 0.3f, 0.9f, 0, 0.4f, 0, -0.6f, 0.8f, 0.2f, -0.3f,
                                 0.6f, 0.7f, 0));
            expect_gradient("CumProd", d, 2, given, a, 1);
            op_free_all(given, 2);
        }
}

/* ---- BitCast ---- */

Test(bitcast, values)
{
    const float f[3] = {1.0f, -2.5f, 0.0f};
    const int32_t bits[3] = {0x3F800000, (int32_t)0xC0200000, 0};
    d5_tensor x = traw(D5_F32, 1, SHAPE(3), f);
    d5_tensor y = run1("BitCast", &x, 1, ATTRS(attr_int("to", 6)));
    expect_bytes(&y, D5_I32, 3, bits, "float32 -> int32");
    d5_tensor_free(&x);
    const uint64_t u[2] = {UINT64_C(0x3FF0000000000001), UINT64_C(0xFFFFFFFFFFFFFFFF)};
    x = traw(D5_U64, 1, SHAPE(2), u);
    y = run1("BitCast", &x, 1, ATTRS(attr_int("to", 7)));
    expect_bytes(&y, D5_I64, 2, u, "uint64 -> int64");
    d5_tensor_free(&x);
    /* int4 -1, 7, -8 are 0xF, 0x7, 0x8: uint4 15, 7, 8; and back */
    const int8_t i4[3] = {-1, 7, -8};
    const uint8_t u4[3] = {15, 7, 8};
    x = traw(D5_I4, 1, SHAPE(3), i4);
    y = run1("BitCast", &x, 1, ATTRS(attr_int("to", 21)));
    expect_bytes(&y, D5_U4, 3, u4, "int4 -> uint4");
    d5_tensor_free(&x);
    x = traw(D5_U4, 1, SHAPE(3), u4);
    y = run1("BitCast", &x, 1, ATTRS(attr_int("to", 22)));
    expect_bytes(&y, D5_I4, 3, i4, "uint4 -> int4");
    d5_tensor_free(&x);
}

Test(bitcast, errors)
{
    d5_tensor x = tf32(1, SHAPE(2), VALS(1, 2));
    op_expect_fails("BitCast", &x, 1, ATTRS(attr_int("to", 7)), 1, D5_ERR_INVALID,
                    "BitCast: input 0 is float32 (32 bits) but to = 7 is int64 (64 bits)");
    op_expect_fails("BitCast", &x, 1, NULL, 1, D5_ERR_INVALID,
                    "BitCast: attribute 'to' is required");
    op_expect_fails("BitCast", &x, 1, ATTRS(attr_int("to", 8)), 1, D5_ERR_INVALID,
                    "BitCast: attribute 'to' is 8");
    op_expect_fails("BitCast", &x, 1, ATTRS(attr_int("to", 14)), 1, D5_ERR_UNSUPPORTED,
                    "BitCast: to = 14 is a complex type");
    d5_tensor_free(&x);
}

/* ---- RMSNormalization ---- */

Test(rmsnormalization, values_and_errors)
{
    d5_tensor in[2] = {tf32(2, SHAPE(3, 3), VALS(1, -2, 2, 0, 0, 0, 3, 4, -12)),
                       tf32(1, SHAPE(3), VALS(1, 2, 0.5f))};
    expect_op_values("RMSNormalization", in, 2, NULL,
                     VALS(0.5773493069415827f, -2.309397227766331f, 0.5773493069415827f, 0, 0, 0,
                          0.3997039970392102f, 1.065877325437894f, -0.7994079940784204f),
                     9, 1e-6);
    op_free_all(in, 2);
    /* axis 0: one statistic over all; scale [2,1] broadcast */
    d5_tensor b[2] = {tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)),
                      tf32(2, SHAPE(2, 1), VALS(2, -1))};
    expect_op_values("RMSNormalization", b, 2,
                     ATTRS(attr_int("axis", 0), attr_float("epsilon", 0.01)),
                     VALS(0.5133833716364284f, 1.0267667432728569f, 1.5401501149092853f,
                          -1.0267667432728569f, -1.283458429091071f, -1.5401501149092853f),
                     6, 1e-6);
    op_expect_fails("RMSNormalization", b, 2, ATTRS(attr_int("stash_type", 7)), 1, D5_ERR_INVALID,
                    "RMSNormalization: stash_type is 7");
    op_expect_fails("RMSNormalization", b, 2, ATTRS(attr_int("axis", 2)), 1, D5_ERR_INVALID,
                    "RMSNormalization");
    op_free_all(b, 2);
    d5_tensor c[2] = {tf32(2, SHAPE(2, 3), NULL), tf32(1, SHAPE(2), NULL)};
    op_expect_fails("RMSNormalization", c, 2, NULL, 1, D5_ERR_SHAPE,
                    "RMSNormalization: scale has shape [2], which does not broadcast to X's [2,3]");
    op_free_all(c, 2);
}

Test(rmsnormalization, gradient)
{
    d5_tensor_desc d[2] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(1, SHAPE(4))};
    expect_gradient("RMSNormalization", d, 2, NULL, NULL, 1);
    d5_tensor_desc e[2] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(2, SHAPE(1, 4))};
    expect_gradient("RMSNormalization", e, 2, NULL, ATTRS(attr_int("axis", 1)), 1);
}

/* ---- LpNormalization ---- */

Test(lpnormalization, values_and_errors)
{
    d5_tensor x = tf32(2, SHAPE(3, 3), VALS(1, -2, 2, 0, 0, 0, 3, 4, -12));
    /* p = 2 over the last axis; the zero row stays 0 */
    expect_op_values("LpNormalization", &x, 1, NULL,
                     VALS(0.3333333333333333f, -0.6666666666666666f, 0.6666666666666666f, 0, 0, 0,
                          0.23076923076923078f, 0.3076923076923077f, -0.9230769230769231f),
                     9, 1e-6);
    expect_op_values("LpNormalization", &x, 1, ATTRS(attr_int("axis", 0), attr_int("p", 1)),
                     VALS(0.25f, -0.3333333333333333f, 0.14285714285714285f, 0, 0, 0, 0.75f,
                          0.6666666666666666f, -0.8571428571428571f),
                     9, 1e-6);
    op_expect_fails("LpNormalization", &x, 1, ATTRS(attr_int("p", 3)), 1, D5_ERR_INVALID,
                    "LpNormalization: p is 3, expected 1 or 2");
    op_expect_fails("LpNormalization", &x, 1, ATTRS(attr_int("axis", -3)), 1, D5_ERR_INVALID,
                    "LpNormalization");
    d5_tensor_free(&x);
}

Test(lpnormalization, gradient)
{
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 4));
    expect_gradient("LpNormalization", &d, 1, NULL, NULL, 1);
    expect_gradient("LpNormalization", &d, 1, NULL, ATTRS(attr_int("axis", 1), attr_int("p", 1)),
                    1);
}

/* ---- GroupNormalization ---- */

static const float gn_x[16] = {1, 2, 3, 4, 2, 4, 6, 9, -1, 0, 1, 5, 3, 3, 3, 4};

Test(groupnormalization, values_per_channel_and_per_group)
{
    /* opset 21 (the default): scale and bias per channel */
    d5_tensor in[3] = {tf32(4, SHAPE(1, 4, 2, 2), gn_x), tf32(1, SHAPE(4), VALS(1, 2, -1, 0.5f)),
                       tf32(1, SHAPE(4), VALS(0, 1, 0, -1))};
    expect_op_values(
        "GroupNormalization", in, 3, ATTRS(attr_int("num_groups", 2)),
        VALS(-1.18771387932153f, -0.7745960082531717f, -0.3614781371848135f, 0.05163973388354478f,
             -0.5491920165063433f, 1.1032794677670896f, 2.755750952040523f, 5.234458178450672f,
             1.6924535478999978f, 1.1716986100846138f, 0.6509436722692299f, -1.4320760789923057f,
             -0.804716898319231f, -0.804716898319231f, -0.804716898319231f, -0.5443394294115391f),
        16, 1e-5);
    /* opset 18: one scale and bias per group */
    d5_tensor g[3] = {in[0], tf32(1, SHAPE(2), VALS(2, -1)), tf32(1, SHAPE(2), VALS(0.5f, 1))};
    opset_attrs o;
    d5_attr groups = attr_int("num_groups", 2);
    expect_op_values(
        "GroupNormalization", g, 3, with_opset(&o, 18, &groups, 1),
        VALS(-1.87542775864306f, -1.0491920165063433f, -0.22295627436962695f, 0.6032794677670895f,
             -1.0491920165063433f, 0.6032794677670895f, 2.255750952040523f, 4.734458178450672f,
             2.692453547899998f, 2.171698610084614f, 1.65094367226923f, -0.4320760789923057f,
             0.609433796638462f, 0.609433796638462f, 0.609433796638462f, 0.08867885882307813f),
        16, 1e-5);
    /* per-group parameters at opset 21, per-channel ones at opset 18 */
    op_expect_fails("GroupNormalization", g, 3, ATTRS(attr_int("num_groups", 2)), 1, D5_ERR_SHAPE,
                    "GroupNormalization: scale has shape [2], expected [4] (one value per channel");
    op_expect_fails("GroupNormalization", in, 3, with_opset(&o, 18, &groups, 1), 1, D5_ERR_SHAPE,
                    "expected [2] (one value per group in opset 18)");
    op_expect_fails("GroupNormalization", in, 3, ATTRS(attr_int("num_groups", 3)), 1,
                    D5_ERR_INVALID, "GroupNormalization: num_groups is 3");
    op_expect_fails("GroupNormalization", in, 3, NULL, 1, D5_ERR_INVALID,
                    "GroupNormalization: attribute num_groups is required");
    op_free_all(in, 3);
    op_free_all(g + 1, 2);
}

Test(groupnormalization, gradient)
{
    d5_tensor_desc d[3] = {op_fdesc(3, SHAPE(2, 6, 3)), op_fdesc(1, SHAPE(6)),
                           op_fdesc(1, SHAPE(6))};
    expect_gradient("GroupNormalization", d, 3, NULL, ATTRS(attr_int("num_groups", 3)), 1);
    d5_tensor_desc e[3] = {op_fdesc(3, SHAPE(2, 6, 3)), op_fdesc(1, SHAPE(2)),
                           op_fdesc(1, SHAPE(2))};
    opset_attrs o;
    d5_attr groups = attr_int("num_groups", 2);
    expect_gradient("GroupNormalization", e, 3, NULL, with_opset(&o, 18, &groups, 1), 1);
}

/* ---- ReduceMax and ReduceMin on bool (opset 20) ---- */

Test(reduce_bool, any_all_and_empty)
{
    const uint8_t x[8] = {1, 1, 1, 0, 0, 1, 0, 0};
    int64_t axis = 1;
    d5_tensor in[2] = {traw(D5_BOOL, 2, SHAPE(4, 2), x), ti64(1, SHAPE(1), &axis)};
    const uint8_t mx[4] = {1, 1, 1, 0}, mn[4] = {1, 0, 0, 0};
    d5_tensor y = run1("ReduceMax", in, 2, NULL);
    op_expect_shape(&y, 2, SHAPE(4, 1));
    expect_bytes(&y, D5_BOOL, 4, mx, "ReduceMax bool");
    y = run1("ReduceMin", in, 2, NULL);
    expect_bytes(&y, D5_BOOL, 4, mn, "ReduceMin bool");
    d5_tensor_free(&in[0]);
    /* the empty set: false for the maximum, true for the minimum */
    in[0] = traw(D5_BOOL, 3, SHAPE(2, 0, 4), NULL);
    const uint8_t f[8] = {0}, t[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    y = run1("ReduceMax", in, 2, NULL);
    op_expect_shape(&y, 3, SHAPE(2, 1, 4));
    expect_bytes(&y, D5_BOOL, 8, f, "ReduceMax empty bool");
    y = run1("ReduceMin", in, 2, NULL);
    expect_bytes(&y, D5_BOOL, 8, t, "ReduceMin empty bool");
    op_free_all(in, 2);
}

/* ---- Range on float16 and bfloat16 (opset 27) ---- */

Test(range, float16_and_bfloat16)
{
    /* float16 1, 2, 0.1 (0x3C00, 0x4000, 0x2E66 = 0.0999755859375): 11 elements,
     * the last rounding to 2 */
    const uint16_t s = 0x3C00, l = 0x4000, d = 0x2E66;
    const uint16_t want[11] = {0x3c00, 0x3c66, 0x3ccd, 0x3d33, 0x3d9a, 0x3e00,
                               0x3e66, 0x3ecd, 0x3f33, 0x3f99, 0x4000};
    d5_tensor in[3] = {traw(D5_F16, 0, NULL, &s), traw(D5_F16, 0, NULL, &l),
                       traw(D5_F16, 0, NULL, &d)};
    for (int64_t stash = 1; stash <= 11; stash += 10) {
        d5_tensor y = run1("Range", in, 3, ATTRS(attr_int("stash_type", stash)));
        expect_bytes(&y, D5_F16, 11, want, "Range float16");
    }
    op_expect_fails("Range", in, 3, ATTRS(attr_int("stash_type", 10)), 1, D5_ERR_INVALID,
                    "Range: stash_type is 10, expected 1 (float32) or 11 (float64)");
    opset_attrs o;
    op_expect_fails("Range", in, 3, with_opset(&o, 11, NULL, 0), 1, D5_ERR_INVALID,
                    "Range: input 0 (start) has data type float16");
    op_free_all(in, 3);
    /* bfloat16 0, 1, 0.25 (0x0000, 0x3F80, 0x3E80) */
    const uint16_t bs = 0, bl = 0x3F80, bd = 0x3E80, bw[4] = {0, 0x3E80, 0x3F00, 0x3F40};
    d5_tensor b[3] = {traw(D5_BF16, 0, NULL, &bs), traw(D5_BF16, 0, NULL, &bl),
                      traw(D5_BF16, 0, NULL, &bd)};
    d5_tensor y = run1("Range", b, 3, NULL);
    expect_bytes(&y, D5_BF16, 4, bw, "Range bfloat16");
    op_free_all(b, 3);
}
