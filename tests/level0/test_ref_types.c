/* The data types of the reference operators beyond float32: integer
 * arithmetic (wrapping on overflow, Div truncating toward zero), Pow with an
 * exponent of another type, reductions, products and scans over integers,
 * the data-movement operators over any type, float16 and bfloat16 through the
 * floating-point operators, and the types each operator refuses.
 *
 * Expected integer values are computed here with C's own integer arithmetic
 * (unsigned, so that overflow wraps modulo 2^bits, then converted to the
 * signed type: GCC and Clang define that conversion as modular), never through
 * doubles as the kernels compute them. Expected float16 and bfloat16 values
 * are the exact double result of the formula rounded once to the type
 * (d5_f16_from_f64, d5_bf16_from_f64). */
#include "more_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------------------------------
 */

/* A tensor of type dt and the given shape holding a copy of `bytes`. */
static d5_tensor typed(d5_dtype dt, int32_t ndim, const int64_t *shape, const void *bytes)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    size_t size;
    cr_assert_eq(d5_tensor_desc_bytes(&d, &size), D5_OK);
    if (size) memcpy(t.data, bytes, size);
    return t;
}

/* Element i of t as a double, for messages. */
static double value_at(const d5_tensor *t, int64_t i)
{
    double v = 0;
    size_t size = d5_dtype_size((d5_dtype)t->desc.dtype);
    cr_assert_eq(d5_convert((const char *)t->data + (size_t)i * size, (d5_dtype)t->desc.dtype, &v,
                            D5_F64, 1),
                 D5_OK);
    return v;
}

/* Runs output 0 of ref operator `op` and asserts its type, shape and bytes:
 * integer results must be exact, and so must floating-point ones, which the
 * tests round the way the wrapper does. Frees the inputs. */
static void expect_op(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                      d5_dtype dt, int32_t ndim, const int64_t *shape, const void *want)
{
    d5_tensor y[3];
    run_op(op, "ref", in, nin, attrs, y, 1);
    cr_assert_eq(y[0].desc.dtype, dt, "%s: output has data type %s, expected %s", op,
                 d5_dtype_name((d5_dtype)y[0].desc.dtype), d5_dtype_name(dt));
    op_expect_shape(&y[0], ndim, shape);
    int64_t n = d5_tensor_desc_numel(&y[0].desc);
    size_t size = d5_dtype_size(dt);
    for (int64_t i = 0; i < n; i++) {
        const char *got = (const char *)y[0].data + (size_t)i * size;
        cr_assert(memcmp(got, (const char *)want + (size_t)i * size, size) == 0,
                  "%s (%s): element %lld is %.17g", op, d5_dtype_name(dt), (long long)i,
                  value_at(&y[0], i));
    }
    d5_tensor_free(&y[0]);
    op_free_all(in, nin);
}

/* ---- Add, Sub, Mul, Div ------------------------------------------------------------------------
 */

Test(types, uint8_arithmetic_wraps)
{
    static const uint8_t a[6] = {250, 3, 200, 17, 0, 255}, b[6] = {10, 5, 100, 3, 1, 255};
    uint8_t sum[6], diff[6], prod[6];
    for (int i = 0; i < 6; i++) {
        sum[i] = (uint8_t)(a[i] + b[i]);
        diff[i] = (uint8_t)(a[i] - b[i]);
        prod[i] = (uint8_t)(a[i] * b[i]);
    }
    const char *ops[3] = {"Add", "Sub", "Mul"};
    const uint8_t *want[3] = {sum, diff, prod};
    for (int k = 0; k < 3; k++) {
        d5_tensor in[2] = {typed(D5_U8, 1, SHAPE(6), a), typed(D5_U8, 1, SHAPE(6), b)};
        expect_op(ops[k], in, 2, NULL, D5_U8, 1, SHAPE(6), want[k]);
    }
    cr_assert_eq(sum[0], 4); /* the point of the test: 250 + 10 wraps */
    cr_assert_eq(diff[1], 254);
}

Test(types, signed_arithmetic_wraps_with_broadcast)
{
    /* int8 [2, 3] + [3]: 120 + 10 wraps to -126. */
    static const int8_t a8[6] = {120, -128, 5, -100, 0, 127}, b8[3] = {10, -1, -6};
    int8_t sum8[6], prod8[6];
    for (int i = 0; i < 6; i++) {
        sum8[i] = (int8_t)(uint8_t)((uint8_t)a8[i] + (uint8_t)b8[i % 3]);
        prod8[i] = (int8_t)(uint8_t)((uint8_t)a8[i] * (uint8_t)b8[i % 3]);
    }
    d5_tensor in[2] = {typed(D5_I8, 2, SHAPE(2, 3), a8), typed(D5_I8, 1, SHAPE(3), b8)};
    expect_op("Add", in, 2, NULL, D5_I8, 2, SHAPE(2, 3), sum8);
    d5_tensor in2[2] = {typed(D5_I8, 2, SHAPE(2, 3), a8), typed(D5_I8, 1, SHAPE(3), b8)};
    expect_op("Mul", in2, 2, NULL, D5_I8, 2, SHAPE(2, 3), prod8);
    /* int16 and int32 around their ends. */
    static const int16_t a16[3] = {-32768, 32767, -5}, b16[3] = {1, -1, 32767};
    int16_t diff16[3];
    for (int i = 0; i < 3; i++)
        diff16[i] = (int16_t)(uint16_t)((uint16_t)a16[i] - (uint16_t)b16[i]);
    d5_tensor in3[2] = {typed(D5_I16, 1, SHAPE(3), a16), typed(D5_I16, 1, SHAPE(3), b16)};
    expect_op("Sub", in3, 2, NULL, D5_I16, 1, SHAPE(3), diff16);
    static const int32_t a32[3] = {65536, -2147483647, 46341}, b32[3] = {65536, 3, 46341};
    int32_t prod32[3];
    for (int i = 0; i < 3; i++) prod32[i] = (int32_t)((uint32_t)a32[i] * (uint32_t)b32[i]);
    d5_tensor in4[2] = {typed(D5_I32, 1, SHAPE(3), a32), typed(D5_I32, 1, SHAPE(3), b32)};
    expect_op("Mul", in4, 2, NULL, D5_I32, 1, SHAPE(3), prod32);
    cr_assert_eq(prod32[0], 0); /* 2^32 */
}

Test(types, integer_div_truncates_toward_zero)
{
    static const int32_t a[8] = {7, -7, 7, -7, 0, 2147483647, -2147483647, 5};
    static const int32_t b[8] = {2, 2, -2, -2, 3, 2, 10, 7};
    int32_t q[8];
    for (int i = 0; i < 8; i++) q[i] = a[i] / b[i];
    d5_tensor in[2] = {typed(D5_I32, 1, SHAPE(8), a), typed(D5_I32, 1, SHAPE(8), b)};
    expect_op("Div", in, 2, NULL, D5_I32, 1, SHAPE(8), q);
    cr_assert_eq(q[1], -3); /* not numpy's floor (-4) */
    static const int64_t a64[4] = {4503599627370495LL, -9, 1000000007, -1};
    static const int64_t b64[4] = {3, 4, 10, 2};
    int64_t q64[4];
    for (int i = 0; i < 4; i++) q64[i] = a64[i] / b64[i];
    d5_tensor in2[2] = {typed(D5_I64, 1, SHAPE(4), a64), typed(D5_I64, 1, SHAPE(4), b64)};
    expect_op("Div", in2, 2, NULL, D5_I64, 1, SHAPE(4), q64);
    static const uint8_t a8[4] = {255, 16, 3, 0}, b8[4] = {2, 11, 4, 9};
    uint8_t q8[4];
    for (int i = 0; i < 4; i++) q8[i] = (uint8_t)(a8[i] / b8[i]);
    d5_tensor in3[2] = {typed(D5_U8, 1, SHAPE(4), a8), typed(D5_U8, 1, SHAPE(4), b8)};
    expect_op("Div", in3, 2, NULL, D5_U8, 1, SHAPE(4), q8);
    /* By zero: an error naming the element, where floating point gives inf. */
    static const int16_t x[3] = {1, 2, 3}, zero[3] = {1, 0, 1};
    d5_tensor in4[2] = {typed(D5_I16, 1, SHAPE(3), x), typed(D5_I16, 1, SHAPE(3), zero)};
    check_fails("Div", in4, 2, NULL, D5_ERR_NUMERIC,
                "Div: integer division by zero (element 1 of B is 0)");
}

Test(types, unsigned_wide_types)
{
    static const uint16_t a16[3] = {65535, 1000, 7}, b16[3] = {1, 65000, 9};
    uint16_t s16[3];
    for (int i = 0; i < 3; i++) s16[i] = (uint16_t)(a16[i] + b16[i]);
    d5_tensor in[2] = {typed(D5_U16, 1, SHAPE(3), a16), typed(D5_U16, 1, SHAPE(3), b16)};
    expect_op("Add", in, 2, NULL, D5_U16, 1, SHAPE(3), s16);
    static const uint32_t a32[3] = {4000000000u, 65536u, 12u}, b32[3] = {2u, 65536u, 5u};
    uint32_t p32[3], d32[3];
    for (int i = 0; i < 3; i++) {
        p32[i] = a32[i] * b32[i];
        d32[i] = b32[i] - a32[i];
    }
    d5_tensor in2[2] = {typed(D5_U32, 1, SHAPE(3), a32), typed(D5_U32, 1, SHAPE(3), b32)};
    expect_op("Mul", in2, 2, NULL, D5_U32, 1, SHAPE(3), p32);
    d5_tensor in3[2] = {typed(D5_U32, 1, SHAPE(3), b32), typed(D5_U32, 1, SHAPE(3), a32)};
    expect_op("Sub", in3, 2, NULL, D5_U32, 1, SHAPE(3), d32);
    /* uint64 up to 2^53, where doubles are exact. */
    static const uint64_t a64[3] = {9007199254740991ull, 1, 4294967296ull};
    static const uint64_t b64[3] = {9007199254740990ull, 2, 4294967295ull};
    uint64_t mx[3];
    for (int i = 0; i < 3; i++) mx[i] = a64[i] > b64[i] ? a64[i] : b64[i];
    d5_tensor in4[2] = {typed(D5_U64, 1, SHAPE(3), a64), typed(D5_U64, 1, SHAPE(3), b64)};
    expect_op("Max", in4, 2, NULL, D5_U64, 1, SHAPE(3), mx);
}

/* ---- unary and Pow -----------------------------------------------------------------------------
 */

Test(types, neg_abs_relu_of_signed_integers)
{
    static const int8_t x[6] = {-128, -5, 0, 7, 127, -1};
    int8_t neg[6], abs_[6], relu[6];
    for (int i = 0; i < 6; i++) {
        neg[i] = (int8_t)(uint8_t)(0u - (uint8_t)x[i]);
        abs_[i] = x[i] < 0 ? neg[i] : x[i];
        relu[i] = x[i] > 0 ? x[i] : 0;
    }
    cr_assert_eq(neg[0], -128);
    const char *ops[3] = {"Neg", "Abs", "Relu"};
    const int8_t *want[3] = {neg, abs_, relu};
    for (int k = 0; k < 3; k++) {
        d5_tensor t = typed(D5_I8, 1, SHAPE(6), x);
        expect_op(ops[k], &t, 1, NULL, D5_I8, 1, SHAPE(6), want[k]);
    }
    static const int64_t x64[3] = {-4503599627370496LL, 3, 0};
    int64_t neg64[3];
    for (int i = 0; i < 3; i++) neg64[i] = -x64[i];
    d5_tensor t = typed(D5_I64, 1, SHAPE(3), x64);
    expect_op("Neg", &t, 1, NULL, D5_I64, 1, SHAPE(3), neg64);
    /* Abs takes unsigned integers; Neg and Relu do not (their schemas). */
    static const uint8_t u[3] = {0, 200, 255};
    d5_tensor tu = typed(D5_U8, 1, SHAPE(3), u);
    expect_op("Abs", &tu, 1, NULL, D5_U8, 1, SHAPE(3), u);
    d5_tensor tn = typed(D5_U8, 1, SHAPE(3), u);
    check_fails("Neg", &tn, 1, NULL, D5_ERR_UNSUPPORTED,
                "Neg: input 0 has data type uint8, expected float32, float64, float16, bfloat16, "
                "int8, int16, int32 or int64");
    d5_tensor tr = typed(D5_U16, 1, SHAPE(3), (const uint16_t[]){1, 2, 3});
    check_fails("Relu", &tr, 1, NULL, D5_ERR_UNSUPPORTED, "Relu: input 0 has data type uint16");
}

Test(types, erf_and_sign_of_integers)
{
    static const int32_t x[5] = {-7, -1, 0, 1, 9};
    int32_t erf_[5], sign[5];
    for (int i = 0; i < 5; i++) {
        erf_[i] = (int32_t)erf((double)x[i]); /* truncated, as numpy's astype */
        sign[i] = (x[i] > 0) - (x[i] < 0);
    }
    d5_tensor t = typed(D5_I32, 1, SHAPE(5), x);
    expect_op("Erf", &t, 1, NULL, D5_I32, 1, SHAPE(5), erf_);
    d5_tensor t2 = typed(D5_I32, 1, SHAPE(5), x);
    expect_op("Sign", &t2, 1, NULL, D5_I32, 1, SHAPE(5), sign);
}

/* x^y by repeated multiplication in uint32 (wrapping); 0 for a negative
 * exponent of |x| > 1, as the truncated 1 / x^-y. */
static int32_t ipow32(int32_t x, int32_t y)
{
    if (y < 0) return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
    uint32_t r = 1;
    for (int32_t k = 0; k < y; k++) r *= (uint32_t)x;
    return (int32_t)r;
}

Test(types, pow_with_exponent_of_another_type)
{
    /* int32 ^ int32, including a negative exponent and an overflow (3^21 >
     * 2^31, still exact in a double). */
    static const int32_t b[6] = {1, 2, 3, -2, 2, 3}, e[6] = {4, 5, 6, 3, -1, 21};
    int32_t want[6];
    for (int i = 0; i < 6; i++) want[i] = ipow32(b[i], e[i]);
    d5_tensor in[2] = {typed(D5_I32, 1, SHAPE(6), b), typed(D5_I32, 1, SHAPE(6), e)};
    expect_op("Pow", in, 2, NULL, D5_I32, 1, SHAPE(6), want);
    /* int64 ^ float32 (test_pow_types_int64_float32), broadcast. */
    static const int64_t b64[3] = {1, 2, 3};
    static const float e32[1] = {3.0f};
    int64_t want64[3];
    for (int i = 0; i < 3; i++) want64[i] = b64[i] * b64[i] * b64[i];
    d5_tensor in2[2] = {typed(D5_I64, 1, SHAPE(3), b64), typed(D5_F32, 1, SHAPE(1), e32)};
    expect_op("Pow", in2, 2, NULL, D5_I64, 1, SHAPE(3), want64);
    /* float32 ^ uint8 and float64 ^ int16. */
    static const float bf[3] = {1.5f, -2.0f, 0.5f};
    static const uint8_t eu[3] = {2, 3, 10};
    float wantf[3];
    for (int i = 0; i < 3; i++) wantf[i] = (float)pow((double)bf[i], (double)eu[i]);
    d5_tensor in3[2] = {typed(D5_F32, 1, SHAPE(3), bf), typed(D5_U8, 1, SHAPE(3), eu)};
    expect_op("Pow", in3, 2, NULL, D5_F32, 1, SHAPE(3), wantf);
    static const double bd[2] = {2.0, 10.0};
    static const int16_t ei[2] = {-2, 3};
    const double wantd[2] = {0.25, 1000.0};
    d5_tensor in4[2] = {typed(D5_F64, 1, SHAPE(2), bd), typed(D5_I16, 1, SHAPE(2), ei)};
    expect_op("Pow", in4, 2, NULL, D5_F64, 1, SHAPE(2), wantd);
    /* The base's types are those of the schema: not int8. */
    d5_tensor in5[2] = {typed(D5_I8, 1, SHAPE(2), (const int8_t[]){2, 3}),
                        typed(D5_I8, 1, SHAPE(2), (const int8_t[]){2, 3})};
    check_fails("Pow", in5, 2, NULL, D5_ERR_UNSUPPORTED, "Pow: input 0 has data type int8");
}

Test(types, mod_of_integers_and_comparisons)
{
    static const int16_t a[6] = {-7, 7, -7, 7, 0, -32768}, b[6] = {3, -3, -3, 3, 5, 7};
    int16_t pymod[6], cmod[6];
    for (int i = 0; i < 6; i++) {
        int r = a[i] % b[i];
        cmod[i] = (int16_t)r;
        pymod[i] = (int16_t)(r != 0 && (r < 0) != (b[i] < 0) ? r + b[i] : r);
    }
    d5_tensor in[2] = {typed(D5_I16, 1, SHAPE(6), a), typed(D5_I16, 1, SHAPE(6), b)};
    expect_op("Mod", in, 2, NULL, D5_I16, 1, SHAPE(6), pymod);
    d5_tensor in2[2] = {typed(D5_I16, 1, SHAPE(6), a), typed(D5_I16, 1, SHAPE(6), b)};
    expect_op("Mod", in2, 2, ATTRS(attr_int("fmod", 1)), D5_I16, 1, SHAPE(6), cmod);
    static const uint32_t x[4] = {0, 7, 4000000000u, 5}, y[4] = {1, 7, 3999999999u, 6};
    uint8_t less[4], eq[4];
    for (int i = 0; i < 4; i++) {
        less[i] = x[i] < y[i];
        eq[i] = x[i] == y[i];
    }
    d5_tensor in3[2] = {typed(D5_U32, 1, SHAPE(4), x), typed(D5_U32, 1, SHAPE(4), y)};
    expect_op("Less", in3, 2, NULL, D5_BOOL, 1, SHAPE(4), less);
    d5_tensor in4[2] = {typed(D5_U32, 1, SHAPE(4), x), typed(D5_U32, 1, SHAPE(4), y)};
    expect_op("Equal", in4, 2, NULL, D5_BOOL, 1, SHAPE(4), eq);
}

/* ---- reductions, scans and products ------------------------------------------------------------
 */

Test(types, integer_reductions)
{
    /* [2, 3] int32 over axis 1. */
    static const int32_t x[6] = {2147483647, 1, 0, -7, 0, 0};
    int32_t sum[2], mean[2], prod[2];
    for (int r = 0; r < 2; r++) {
        uint32_t s = 0, p = 1;
        for (int c = 0; c < 3; c++) {
            s += (uint32_t)x[r * 3 + c];
            p *= (uint32_t)x[r * 3 + c];
        }
        sum[r] = (int32_t)s;
        prod[r] = (int32_t)p;
    }
    mean[0] = (int32_t)(((int64_t)x[0] + x[1] + x[2]) / 3);
    mean[1] = (x[3] + x[4] + x[5]) / 3; /* -7 / 3 = -2 toward zero */
    cr_assert_eq(sum[0], INT32_MIN);
    const char *ops[3] = {"ReduceSum", "ReduceMean", "ReduceProd"};
    const int32_t *want[3] = {sum, mean, prod};
    for (int k = 0; k < 3; k++) {
        d5_tensor in[2] = {typed(D5_I32, 2, SHAPE(2, 3), x), ti64(1, SHAPE(1), IVALS(1))};
        expect_op(ops[k], in, 2, ATTRS(attr_int("keepdims", 0)), D5_I32, 1, SHAPE(2), want[k]);
    }
    /* ReduceMax and ReduceMin take 8-bit integers; the others do not. */
    static const uint8_t u[4] = {3, 250, 7, 0};
    const uint8_t mx[1] = {250}, mn[1] = {0};
    d5_tensor t = typed(D5_U8, 1, SHAPE(4), u);
    expect_op("ReduceMax", &t, 1, ATTRS(attr_int("keepdims", 0)), D5_U8, 0, NULL, mx);
    d5_tensor t2 = typed(D5_U8, 1, SHAPE(4), u);
    expect_op("ReduceMin", &t2, 1, ATTRS(attr_int("keepdims", 0)), D5_U8, 0, NULL, mn);
    d5_tensor t3 = typed(D5_U8, 1, SHAPE(4), u);
    check_fails("ReduceSum", &t3, 1, NULL, D5_ERR_UNSUPPORTED,
                "ReduceSum: input 0 has data type uint8, expected float32, float64, float16, "
                "bfloat16, int32, int64, uint32 or uint64");
    static const uint64_t w[3] = {5, 9007199254700000ull, 4};
    const uint64_t l1[1] = {5 + 9007199254700000ull + 4};
    d5_tensor t4 = typed(D5_U64, 1, SHAPE(3), w);
    expect_op("ReduceL1", &t4, 1, ATTRS(attr_int("keepdims", 0)), D5_U64, 0, NULL, l1);
}

Test(types, cumsum_matmul_gemm_prelu_of_integers)
{
    static const int32_t x[4] = {2147483600, 40, 10, -5};
    int32_t scan[4];
    uint32_t acc = 0;
    for (int i = 0; i < 4; i++) scan[i] = (int32_t)(acc += (uint32_t)x[i]);
    d5_tensor in[2] = {typed(D5_I32, 1, SHAPE(4), x), ti64(0, NULL, IVALS(0))};
    expect_op("CumSum", in, 2, NULL, D5_I32, 1, SHAPE(4), scan);
    d5_tensor in1[2] = {typed(D5_I8, 1, SHAPE(2), (const int8_t[]){1, 2}), ti64(0, NULL, IVALS(0))};
    check_fails("CumSum", in1, 2, NULL, D5_ERR_UNSUPPORTED, "CumSum: input 0 has data type int8");
    /* MatMul int64 [2, 3] x [3, 2]. */
    static const int64_t a[6] = {1, -2, 3, 40000000, 5, -6}, b[6] = {7, 8, -9, 10, 11, 12};
    int64_t y[4] = {0};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int p = 0; p < 3; p++) y[i * 2 + j] += a[i * 3 + p] * b[p * 2 + j];
    d5_tensor in2[2] = {typed(D5_I64, 2, SHAPE(2, 3), a), typed(D5_I64, 2, SHAPE(3, 2), b)};
    expect_op("MatMul", in2, 2, NULL, D5_I64, 2, SHAPE(2, 2), y);
    /* Gemm uint32 with alpha 2, beta 3 and a broadcast C. */
    static const uint32_t ga[4] = {1, 2, 3, 4}, gb[4] = {5, 6, 7, 8}, gc[2] = {100, 1000};
    uint32_t gy[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            gy[i * 2 + j] = 2 * (ga[i * 2] * gb[j] + ga[i * 2 + 1] * gb[2 + j]) + 3 * gc[j];
    d5_tensor in3[3] = {typed(D5_U32, 2, SHAPE(2, 2), ga), typed(D5_U32, 2, SHAPE(2, 2), gb),
                        typed(D5_U32, 1, SHAPE(2), gc)};
    expect_op("Gemm", in3, 3, ATTRS(attr_float("alpha", 2), attr_float("beta", 3)), D5_U32, 2,
              SHAPE(2, 2), gy);
    d5_tensor in4[2] = {typed(D5_I32, 2, SHAPE(2, 2), (const int32_t[]){1, 2, 3, 4}),
                        typed(D5_I64, 2, SHAPE(2, 2), (const int64_t[]){1, 2, 3, 4})};
    check_fails("Gemm", in4, 2, NULL, D5_ERR_INVALID,
                "Gemm: input 1 has data type int64, input 0 int32");
    d5_tensor in5[2] = {typed(D5_I8, 2, SHAPE(1, 1), (const int8_t[]){1}),
                        typed(D5_I8, 2, SHAPE(1, 1), (const int8_t[]){1})};
    check_fails("MatMul", in5, 2, NULL, D5_ERR_UNSUPPORTED, "MatMul: input 0 has data type int8");
    /* PRelu int32: slope * x where x < 0. */
    static const int32_t px[4] = {-3, 4, -5, 0}, ps[1] = {7};
    int32_t py[4];
    for (int i = 0; i < 4; i++) py[i] = px[i] < 0 ? px[i] * ps[0] : px[i];
    d5_tensor in6[2] = {typed(D5_I32, 1, SHAPE(4), px), typed(D5_I32, 1, SHAPE(1), ps)};
    expect_op("PRelu", in6, 2, NULL, D5_I32, 1, SHAPE(4), py);
}

/* ---- data movement: any type -------------------------------------------------------------------
 */

Test(types, data_movement_of_any_type)
{
    /* Transpose uint16 [2, 3]. */
    static const uint16_t t16[6] = {1, 2, 3, 60000, 5, 6};
    uint16_t tt[6];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) tt[j * 2 + i] = t16[i * 3 + j];
    d5_tensor a = typed(D5_U16, 2, SHAPE(2, 3), t16);
    expect_op("Transpose", &a, 1, NULL, D5_U16, 2, SHAPE(3, 2), tt);
    /* Concat int8 along axis 0; Gather bool; Reshape int64 (exact up to 2^53). */
    static const int8_t c1[2] = {-128, 1}, c2[3] = {127, 0, -1};
    int8_t cc[5];
    memcpy(cc, c1, 2);
    memcpy(cc + 2, c2, 3);
    d5_tensor in[2] = {typed(D5_I8, 1, SHAPE(2), c1), typed(D5_I8, 1, SHAPE(3), c2)};
    expect_op("Concat", in, 2, ATTRS(attr_int("axis", 0)), D5_I8, 1, SHAPE(5), cc);
    static const uint8_t flags[4] = {1, 0, 0, 1};
    const uint8_t gathered[3] = {flags[3], flags[0], flags[1]};
    d5_tensor in2[2] = {typed(D5_BOOL, 1, SHAPE(4), flags), ti64(1, SHAPE(3), IVALS(3, 0, 1))};
    expect_op("Gather", in2, 2, NULL, D5_BOOL, 1, SHAPE(3), gathered);
    static const int64_t big[4] = {9007199254740992LL, -9007199254740992LL, 1, -1};
    d5_tensor in3[2] = {typed(D5_I64, 1, SHAPE(4), big), ti64(1, SHAPE(2), IVALS(2, 2))};
    expect_op("Reshape", in3, 2, NULL, D5_I64, 2, SHAPE(2, 2), big);
    /* Where over uint32 with a broadcast condition; Slice and Tile of uint64. */
    static const uint32_t wx[4] = {1, 2, 3, 4000000000u}, wy[4] = {9, 8, 7, 6};
    static const uint8_t cond[2] = {1, 0};
    uint32_t wz[4];
    for (int i = 0; i < 4; i++) wz[i] = cond[i % 2] ? wx[i] : wy[i];
    d5_tensor in4[3] = {typed(D5_BOOL, 1, SHAPE(2), cond), typed(D5_U32, 2, SHAPE(2, 2), wx),
                        typed(D5_U32, 2, SHAPE(2, 2), wy)};
    expect_op("Where", in4, 3, NULL, D5_U32, 2, SHAPE(2, 2), wz);
    static const uint64_t s64[5] = {10, 11, 12, 13, 14};
    const uint64_t sliced[2] = {s64[1], s64[3]};
    d5_tensor in5[5] = {typed(D5_U64, 1, SHAPE(5), s64), ti64(1, SHAPE(1), IVALS(1)),
                        ti64(1, SHAPE(1), IVALS(5)), ti64(1, SHAPE(1), IVALS(0)),
                        ti64(1, SHAPE(1), IVALS(2))};
    expect_op("Slice", in5, 5, NULL, D5_U64, 1, SHAPE(2), sliced);
    const uint64_t tiled[4] = {s64[0], s64[1], s64[0], s64[1]};
    d5_tensor in6[2] = {typed(D5_U64, 1, SHAPE(2), s64), ti64(1, SHAPE(1), IVALS(2))};
    expect_op("Tile", in6, 2, NULL, D5_U64, 1, SHAPE(4), tiled);
    /* Resize nearest of uint8 doubles each element. */
    static const uint8_t r[2] = {7, 200};
    const uint8_t rr[4] = {7, 7, 200, 200};
    d5_tensor in7[3] = {typed(D5_U8, 1, SHAPE(2), r), (d5_tensor){0},
                        typed(D5_F32, 1, SHAPE(1), (const float[]){2.0f})};
    d5_tensor y;
    cr_assert_eq(run_known("Resize", in7, 3, NULL, &y, NULL, NULL), D5_OK, "%s", d5_last_error());
    cr_assert_eq(y.desc.dtype, D5_U8);
    cr_assert(memcmp(y.data, rr, 4) == 0, "Resize (uint8): %u %u %u %u", ((uint8_t *)y.data)[0],
              ((uint8_t *)y.data)[1], ((uint8_t *)y.data)[2], ((uint8_t *)y.data)[3]);
    d5_tensor_free(&y);
    d5_tensor_free(&in7[0]);
    d5_tensor_free(&in7[2]);
}

/* ---- float16 and bfloat16 ----------------------------------------------------------------------
 */

static const float half_inputs[6] = {-2.5f, -0.75f, 0.0f, 0.333251953125f, 1.5f, 100.25f};

Test(types, float16_and_bfloat16_elementwise)
{
    uint16_t h[6], bh[6], relu[6], sig[6], sum[6];
    for (int i = 0; i < 6; i++) {
        h[i] = d5_f16_from_f32(half_inputs[i]);
        bh[i] = d5_bf16_from_f32(half_inputs[i]);
    }
    for (int i = 0; i < 6; i++) {
        double x = d5_f32_from_f16(h[i]);
        relu[i] = d5_f16_from_f64(x > 0 ? x : 0);
        sig[i] = d5_f16_from_f64(x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)));
    }
    d5_tensor t = typed(D5_F16, 1, SHAPE(6), h);
    expect_op("Relu", &t, 1, NULL, D5_F16, 1, SHAPE(6), relu);
    d5_tensor t2 = typed(D5_F16, 1, SHAPE(6), h);
    expect_op("Sigmoid", &t2, 1, NULL, D5_F16, 1, SHAPE(6), sig);
    /* bfloat16: Mul then Add, each rounded to bfloat16 as a graph would. */
    uint16_t sq[6];
    for (int i = 0; i < 6; i++) {
        double xb = d5_f32_from_bf16(bh[i]);
        sq[i] = d5_bf16_from_f64(xb * xb);
        sum[i] = d5_bf16_from_f64(xb + d5_f32_from_bf16(sq[i]));
    }
    d5_tensor in[2] = {typed(D5_BF16, 1, SHAPE(6), bh), typed(D5_BF16, 1, SHAPE(6), bh)};
    expect_op("Mul", in, 2, NULL, D5_BF16, 1, SHAPE(6), sq);
    d5_tensor in2[2] = {typed(D5_BF16, 1, SHAPE(6), bh), typed(D5_BF16, 1, SHAPE(6), sq)};
    expect_op("Add", in2, 2, NULL, D5_BF16, 1, SHAPE(6), sum);
}

Test(types, float16_softmax_conv_layernorm)
{
    uint16_t h[6], soft[6];
    double x[6], m = -INFINITY, z = 0;
    for (int i = 0; i < 6; i++) {
        h[i] = d5_f16_from_f32(half_inputs[i] / 50.0f);
        x[i] = d5_f32_from_f16(h[i]);
        m = fmax(m, x[i]);
    }
    for (int i = 0; i < 6; i++) z += exp(x[i] - m);
    for (int i = 0; i < 6; i++) soft[i] = d5_f16_from_f64(exp(x[i] - m) / z);
    d5_tensor t = typed(D5_F16, 2, SHAPE(1, 6), h);
    expect_op("Softmax", &t, 1, NULL, D5_F16, 2, SHAPE(1, 6), soft);
    /* Conv 1-d: X [1, 1, 6], W [1, 1, 2] = {1, -1}: y[i] = x[i] - x[i + 1]. */
    uint16_t w[2] = {d5_f16_from_f32(1.0f), d5_f16_from_f32(-1.0f)}, conv[5];
    for (int i = 0; i < 5; i++) conv[i] = d5_f16_from_f64(x[i] - x[i + 1]);
    d5_tensor in[2] = {typed(D5_F16, 3, SHAPE(1, 1, 6), h), typed(D5_F16, 3, SHAPE(1, 1, 2), w)};
    expect_op("Conv", in, 2, NULL, D5_F16, 3, SHAPE(1, 1, 5), conv);
    /* LayerNormalization: Y float16, Mean and InvStdDev float32 (stash_type 1). */
    uint16_t one[6], zero[6];
    for (int i = 0; i < 6; i++) {
        one[i] = d5_f16_from_f32(1.0f);
        zero[i] = d5_f16_from_f32(0.0f);
    }
    double mean = 0, var = 0;
    for (int i = 0; i < 6; i++) mean += x[i];
    mean /= 6;
    for (int i = 0; i < 6; i++) var += (x[i] - mean) * (x[i] - mean);
    double inv = 1 / sqrt(var / 6 + 1e-5);
    d5_tensor ln_in[3] = {typed(D5_F16, 2, SHAPE(1, 6), h), typed(D5_F16, 1, SHAPE(6), one),
                          typed(D5_F16, 1, SHAPE(6), zero)};
    d5_tensor y[3];
    run_op("LayerNormalization", "ref", ln_in, 3, NULL, y, 3);
    cr_assert_eq(y[0].desc.dtype, D5_F16);
    cr_assert_eq(y[1].desc.dtype, D5_F32, "Mean is %s", d5_dtype_name((d5_dtype)y[1].desc.dtype));
    cr_assert_eq(y[2].desc.dtype, D5_F32);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((const uint16_t *)y[0].data)[i], d5_f16_from_f64((x[i] - mean) * inv * 1.0),
                     "Y[%d] is %g", i, value_at(&y[0], i));
    cr_assert_eq(*(const float *)y[1].data, (float)mean);
    cr_assert_eq(*(const float *)y[2].data, (float)inv);
    for (int k = 0; k < 3; k++) d5_tensor_free(&y[k]);
    op_free_all(ln_in, 3);
}

Test(types, half_constants_and_depths)
{
    /* Constant and ConstantOfShape with float16 values; OneHot with a uint8 depth. */
    uint16_t hv[2] = {d5_f16_from_f32(0.5f), d5_f16_from_f32(-65504.0f)};
    d5_tensor hvt = typed(D5_F16, 1, SHAPE(2), hv);
    d5_attr ha = {.name = "value", .type = D5_ATTR_TENSOR, .tensor = &hvt};
    expect_op("Constant", NULL, 0, &(const d5_attrs){&ha, 1}, D5_F16, 1, SHAPE(2), hv);
    d5_tensor_free(&hvt);
    uint16_t v = d5_f16_from_f32(-1.5f);
    d5_tensor value = typed(D5_F16, 1, SHAPE(1), &v);
    d5_attr a = {.name = "value", .type = D5_ATTR_TENSOR, .tensor = &value};
    d5_attrs attrs = {&a, 1};
    const uint16_t filled[3] = {v, v, v};
    d5_tensor shape = ti64(1, SHAPE(1), IVALS(3));
    expect_op("ConstantOfShape", &shape, 1, &attrs, D5_F16, 1, SHAPE(3), filled);
    d5_tensor_free(&value);
    static const int32_t ind[2] = {2, 0};
    const int32_t hot[6] = {5, 5, 9, 9, 5, 5};
    d5_tensor in[3] = {typed(D5_I32, 1, SHAPE(2), ind),
                       typed(D5_U8, 1, SHAPE(1), (const uint8_t[]){3}),
                       typed(D5_I32, 1, SHAPE(2), (const int32_t[]){5, 9})};
    expect_op("OneHot", in, 3, NULL, D5_I32, 2, SHAPE(2, 3), hot);
}

/* ---- what stays floating point ------------------------------------------------------------------
 */

Test(types, floating_point_operators_refuse_integers)
{
    struct {
        const char *op;
        d5_dtype dt;
        const char *text;
    } cases[] = {
        {"Sigmoid", D5_I32,
         "Sigmoid: input 0 has data type int32, expected float32, float64, "
         "float16 or bfloat16"},
        {"Softmax", D5_U8, "Softmax: input 0 has data type uint8"},
        {"Sqrt", D5_U64, "Sqrt: input 0 has data type uint64"},
        {"Sum", D5_I64, "Sum: input 0 has data type int64"},
        {"Mean", D5_BOOL, "Mean: input 0 has data type bool"},
        {"Conv", D5_I8,
         "Conv: input 0 has data type int8, expected float32, float64, float16 or bfloat16"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int conv = strcmp(cases[k].op, "Conv") == 0;
        const int64_t *shape = conv ? SHAPE(1, 1, 2) : SHAPE(1, 2);
        d5_tensor in[2] = {tmake(cases[k].dt, conv ? 3 : 2, shape, NULL),
                           tmake(cases[k].dt, conv ? 3 : 2, shape, NULL)};
        check_fails(cases[k].op, in, conv ? 2 : 1, NULL, D5_ERR_UNSUPPORTED, cases[k].text);
        if (!conv) d5_tensor_free(&in[1]);
    }

    /* FusedConv, which the graph passes write for float32 convolutions only,
     * computes its addition in float32 or float64 and refuses the rest. */
    uint16_t one = d5_f16_from_f32(1.0f);
    d5_tensor in[2] = {typed(D5_F16, 3, SHAPE(1, 1, 1), &one),
                       typed(D5_F16, 3, SHAPE(1, 1, 1), &one)};
    check_fails("FusedConv", in, 2, NULL, D5_ERR_UNSUPPORTED,
                "FusedConv: X has data type float16, expected float32 or float64");
}
