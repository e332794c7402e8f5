/* The reference Cast and CastLike: every pair of d5's types, and the values
 * numpy's astype gives on x86-64 (ONNX's reference implementation), written
 * here from a run of Debian's numpy 1.24: truncation and wrapping of floating
 * point into integers, integer wrapping, float16 rounding, and bfloat16's
 * truncation as in ONNX's test data. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* A 1-d tensor of n elements of type dt holding the bytes at `values`. */
static d5_tensor raw(d5_dtype dt, int64_t n, const void *values)
{
    return traw(dt, 1, &n, values);
}

/* The opset the casts below declare (0: none, the newest's rules). */
static int64_t cast_opset;

/* Runs Cast to ONNX type `to` on x (freed) and returns the output. */
static d5_tensor cast(d5_tensor x, int64_t to)
{
    d5_attr a[2] = {attr_int("to", to), attr_int("__opset", cast_opset)};
    d5_attrs attrs = {a, cast_opset ? 2 : 1};
    d5_tensor y;
    run_op("Cast", "ref", &x, 1, &attrs, &y, 1);
    d5_tensor_free(&x);
    return y;
}

/* Asserts that y has type dt and the n values at `want`, bit for bit. */
static void expect_bytes(d5_tensor *y, d5_dtype dt, int64_t n, const void *want, const char *what)
{
    cr_assert_eq(y->desc.dtype, (int32_t)dt, "%s: %s, want %s", what,
                 d5_dtype_name((d5_dtype)y->desc.dtype), d5_dtype_name(dt));
    cr_assert_eq(d5_tensor_desc_numel(&y->desc), n, "%s", what);
    size_t esize = d5_dtype_size(dt);
    for (int64_t i = 0; i < n; i++)
        cr_expect(
            memcmp((const char *)y->data + i * esize, (const char *)want + i * esize, esize) == 0,
            "%s: element %lld differs", what, (long long)i);
    d5_tensor_free(y);
}

/* ONNX's number of each d5 type, in d5's order. */
static const int64_t onnx_of[D5_DTYPE_COUNT] = {0,  1,  11, 10, 16, 3,  2,  5,  6,  7,  9,  4,
                                                12, 13, 17, 18, 19, 20, 24, 23, 22, 21, 26, 25};
/* The types before the narrow ones: each holds 0..100 exactly. */
#define WIDE D5_F8E4M3FN

/* Casts the n values of type `from` at src to `to` and asserts the bytes
 * of `want`, the message naming both types. */
static void expect_cast(d5_dtype from, int64_t n, const void *src, d5_dtype to, const void *want)
{
    d5_tensor y = cast(raw(from, n, src), onnx_of[to]);
    char what[64];
    snprintf(what, sizeof what, "%s -> %s", d5_dtype_name(from), d5_dtype_name(to));
    expect_bytes(&y, to, n, want, what);
}

/* A type to cast to and the values expected there. */
typedef struct cast_to {
    d5_dtype type;
    const void *want;
} cast_to;

/* expect_cast from the same values to each of `count` types. */
static void expect_casts(d5_dtype from, int64_t n, const void *src, const cast_to *to, size_t count)
{
    for (size_t i = 0; i < count; i++) expect_cast(from, n, src, to[i].type, to[i].want);
}

/* Writes the small integer v (0..100) as element i of a buffer of type dt. */
static void put(void *buf, d5_dtype dt, int i, int v)
{
    switch (dt) {
    case D5_F32: ((float *)buf)[i] = (float)v; break;
    case D5_F64: ((double *)buf)[i] = v; break;
    case D5_F16: ((uint16_t *)buf)[i] = d5_f16_from_f32((float)v); break;
    case D5_BF16: ((uint16_t *)buf)[i] = d5_bf16_from_f32((float)v); break;
    case D5_I8:
    case D5_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case D5_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    case D5_I16:
    case D5_U16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case D5_I32:
    case D5_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    default: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    }
}

/* Values every type holds exactly cross every pair unchanged (bool: 0 or 1). */
Test(ref_cast, every_pair_keeps_small_values)
{
    const int v[] = {0, 1, 2, 5, 100, 64};
    for (int from = 1; from < WIDE; from++)
        for (int to = 1; to < WIDE; to++) {
            unsigned char in[6 * 8], want[6 * 8];
            for (int i = 0; i < 6; i++) {
                put(in, (d5_dtype)from, i, from == D5_BOOL ? v[i] != 0 : v[i]);
                put(want, (d5_dtype)to, i, from == D5_BOOL ? v[i] != 0 : v[i]);
            }
            expect_cast((d5_dtype)from, 6, in, (d5_dtype)to, want);
        }
}

static const double special[] = {-1.5,  -3e9, 3e9,      5e9,       1e19,    2e19,
                                 -1e19, NAN,  INFINITY, -INFINITY, 70000.7, -70000.7};

/* numpy: np.array(special).astype(T). */
Test(ref_cast, float64_to_integers_as_numpy)
{
    const uint8_t u8[] = {255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 112, 144};
    const int8_t i8[] = {-1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 112, -112};
    const uint16_t u16[] = {65535, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4464, 61072};
    const int16_t i16[] = {-1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4464, -4464};
    const uint32_t u32[] = {4294967295u, 2147483648u, 3000000000u, 0,           0,     0,
                            2147483648u, 2147483648u, 0,           2147483648u, 70000, 4294897296u};
    const int32_t i32[] = {-1,        INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN,
                           INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, 70000,     -70000};
    const uint64_t u64[] = {
        UINT64_MAX, 18446744070709551616u, 3000000000u,          5000000000u, 10000000000000000000u,
        0,          9223372036854775808u,  9223372036854775808u, 0,           9223372036854775808u,
        70000,      18446744073709481616u};
    const int64_t i64[] = {-1,        -3000000000, 3000000000, 5000000000, INT64_MIN, INT64_MIN,
                           INT64_MIN, INT64_MIN,   INT64_MIN,  INT64_MIN,  70000,     -70000};
    const uint8_t b[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const cast_to f64_to[] = {{D5_U8, u8},   {D5_I8, i8},   {D5_U16, u16},
                              {D5_I16, i16}, {D5_U32, u32}, {D5_I32, i32},
                              {D5_U64, u64}, {D5_I64, i64}, {D5_BOOL, b}};
    expect_casts(D5_F64, 12, special, f64_to, sizeof f64_to / sizeof f64_to[0]);
    /* From float32 the same, but 1e19 is 9999999980506447872 in float32. */
    float f[12];
    for (int i = 0; i < 12; i++) f[i] = (float)special[i];
    uint64_t u64f[12];
    memcpy(u64f, u64, sizeof u64f);
    u64f[4] = 9999999980506447872u;
    expect_cast(D5_F32, 12, f, D5_U64, u64f);
    expect_cast(D5_F32, 12, f, D5_U32, u32);
}

/* numpy: np.array([65504, -65504, 1000.5, -3.5, nan, inf], np.float16).astype(T). */
Test(ref_cast, float16_and_bfloat16_to_integers_through_float)
{
    const uint16_t h[] = {0x7BFF, 0xFBFF, 0x63D1, 0xC300, 0x7E00, 0x7C00};
    const uint8_t u8[] = {224, 32, 232, 253, 0, 0};
    const int8_t i8[] = {-32, 32, -24, -3, 0, 0};
    const uint16_t u16[] = {65504, 32, 1000, 65533, 0, 0};
    /* numpy's own float16 loop gives 0 for NaN to uint32; d5 goes through
     * float32 as for bfloat16 (ONNX's reference widens bfloat16 so): 2^31. */
    const uint32_t u32[] = {65504, 4294901792u, 1000, 4294967293u, 2147483648u, 0};
    const uint64_t u64[] = {
        65504, 18446744073709486112u, 1000, 18446744073709551613u, 9223372036854775808u, 0};
    const int64_t i64[] = {65504, -65504, 1000, -3, INT64_MIN, INT64_MIN};
    const cast_to f16_to[] = {{D5_U8, u8},   {D5_I8, i8},   {D5_U16, u16},
                              {D5_U32, u32}, {D5_U64, u64}, {D5_I64, i64}};
    expect_casts(D5_F16, 6, h, f16_to, sizeof f16_to / sizeof f16_to[0]);
    /* bfloat16 -3.5 (0xC060) and 300 (0x4396) to int8: -3 and 300 mod 256 = 44. */
    const uint16_t bf[] = {0xC060, 0x4396};
    const int8_t bi8[] = {-3, 44};
    expect_cast(D5_BF16, 2, bf, D5_I8, bi8);
}

/* numpy: integers wrap (two's complement); to float16 they round, 2^40 to inf. */
Test(ref_cast, integers_wrap)
{
    const int64_t v[] = {-1, -3, (INT64_C(1) << 40) + 5, 300};
    const uint8_t u8[] = {255, 253, 5, 44};
    const uint16_t u16[] = {65535, 65533, 5, 300};
    const uint32_t u32[] = {4294967295u, 4294967293u, 5, 300};
    const uint64_t u64[] = {UINT64_MAX, UINT64_MAX - 2, (UINT64_C(1) << 40) + 5, 300};
    const uint16_t h[] = {0xBC00, 0xC200, 0x7C00, 0x5CB0};
    const cast_to i64_to[] = {
        {D5_U8, u8}, {D5_U16, u16}, {D5_U32, u32}, {D5_U64, u64}, {D5_F16, h}};
    expect_casts(D5_I64, 4, v, i64_to, sizeof i64_to / sizeof i64_to[0]);
    const uint64_t u[] = {UINT64_MAX, (UINT64_C(1) << 63) + 7};
    const int64_t i64[] = {-1, INT64_MIN + 7};
    const int32_t i32[] = {-1, 7};
    const float f[] = {0x1p64f, 0x1p63f};
    const cast_to u64_to[] = {{D5_I64, i64}, {D5_I32, i32}, {D5_F32, f}};
    expect_casts(D5_U64, 2, u, u64_to, sizeof u64_to / sizeof u64_to[0]);
    /* int64 to double is exact below 2^53 and to uint64 bit for bit above it. */
    const int64_t big[] = {INT64_MIN + 1, INT64_MAX};
    const uint64_t bigu[] = {(UINT64_C(1) << 63) + 1, INT64_MAX};
    expect_cast(D5_I64, 2, big, D5_U64, bigu);
}

/* float16: nearest even, once, from float32 and float64; 65520 is infinity. */
Test(ref_cast, to_float16_rounds_to_nearest_even)
{
    const float f[] = {65504, 65520, 1 + 0x1p-11f, 0x3p-25f, -0.0f, 1e-9f};
    const uint16_t h[] = {0x7BFF, 0x7C00, 0x3C00, 0x0002, 0x8000, 0x0000};
    expect_cast(D5_F32, 6, f, D5_F16, h);
    const double d[] = {1 + 0x1p-11 + 0x1p-40, 65519.99, -1e6};
    const uint16_t hd[] = {0x3C01, 0x7BFF, 0xFC00};
    expect_cast(D5_F64, 3, d, D5_F16, hd);
    const float nan = NAN;
    d5_tensor y = cast(raw(D5_F32, 1, &nan), 10);
    cr_expect((((uint16_t *)y.data)[0] & 0x7E00) == 0x7E00, "NaN stays a quiet NaN");
    d5_tensor_free(&y);
}

/* bfloat16 before opset 19: ONNX's reference truncates float32 to its top
 * half, and its test data of opset 13 (test_cast_FLOAT_to_BFLOAT16 of ONNX
 * 1.12) expects so: 0.48033666610717773 is 0x3EF5EEB0 in float32 and 0x3EF5
 * in bfloat16, where rounding would give 0x3EF6; 3.4e38 (0x7F7FC99E) stays
 * finite where rounding gives infinity. */
Test(ref_cast, to_bfloat16_truncates_before_opset_19)
{
    cast_opset = 13;
    const float f[] = {0.48033666610717773f, 1 + 0x1p-8f + 0x1p-9f, -1 - 0x1p-8f - 0x1p-9f,
                       INFINITY, 3.4e38f};
    const uint16_t b[] = {0x3EF5, 0x3F80, 0xBF80, 0x7F80, 0x7F7F};
    expect_cast(D5_F32, 5, f, D5_BF16, b);
    /* Other types go to float32 first (rounded), then are truncated. */
    const double d[] = {1e39, 1 + 0x1p-8 + 0x1p-9};
    const uint16_t bd[] = {0x7F80, 0x3F80};
    expect_cast(D5_F64, 2, d, D5_BF16, bd);
    const int64_t v[] = {(INT64_C(1) << 60) + (INT64_C(1) << 52) + 1, -3};
    const uint16_t bv[] = {0x5D80, 0xC040};
    expect_cast(D5_I64, 2, v, D5_BF16, bv);
    /* A NaN whose payload lies in the low half stays NaN, quiet. */
    const uint32_t snan = 0x7F800001u;
    d5_tensor y = cast(raw(D5_F32, 1, &snan), 16);
    cr_expect_eq(((uint16_t *)y.data)[0], 0x7FC0);
    d5_tensor_free(&y);
    /* bfloat16 widens exactly: 0x3EF5 is 0.478515625. */
    const uint16_t back[] = {0x3EF5, 0xFF80};
    const double wide[] = {0.478515625, -INFINITY};
    expect_cast(D5_BF16, 2, back, D5_F64, wide);
    cast_opset = 0;
}

/* From opset 19 on (and without an opset: the newest rules), to bfloat16 is
 * the nearest value, ties to even, as ONNX's later test data expects
 * (0.48033667 -> 0x3EF6): 1 + 0.75 ulp rounds up, 1 + 0.5 ulp to the even
 * 1, 1 + 1.5 ulp to the even 1 + 2 ulp; 3.4e38 overflows to infinity. */
Test(ref_cast, to_bfloat16_rounds_to_nearest_even_from_opset_19)
{
    const float f[] = {0.48033666610717773f,
                       1 + 0x1p-8f + 0x1p-9f,
                       -1 - 0x1p-8f - 0x1p-9f,
                       1 + 0x1p-8f,
                       1 + 0x1p-7f + 0x1p-8f,
                       INFINITY,
                       3.4e38f};
    const uint16_t b[] = {0x3EF6, 0x3F81, 0xBF81, 0x3F80, 0x3F82, 0x7F80, 0x7F80};
    const int64_t opsets[3] = {19, 21, 0};
    for (int k = 0; k < 3; k++) {
        cast_opset = opsets[k];
        expect_cast(D5_F32, 7, f, D5_BF16, b);
        const uint32_t snan = 0x7F800001u;
        d5_tensor y = cast(raw(D5_F32, 1, &snan), 16);
        uint16_t h = ((uint16_t *)y.data)[0];
        cr_expect((h & 0x7F80) == 0x7F80 && (h & 0x7F), "NaN -> 0x%04X, not a NaN", h);
        d5_tensor_free(&y);
    }
    cast_opset = 0;
    /* CastLike follows its own opset alike. */
    const float x = 0.48033666610717773f;
    const uint16_t like_bits = 0;
    for (int k = 0; k < 2; k++) {
        d5_tensor in[2] = {raw(D5_F32, 1, &x), raw(D5_BF16, 1, &like_bits)}, y;
        d5_attr a = attr_int("__opset", k ? 19 : 15);
        d5_attrs attrs = {&a, 1};
        run_op("CastLike", "ref", in, 2, &attrs, &y, 1);
        cr_expect_eq(((uint16_t *)y.data)[0], k ? 0x3EF6 : 0x3EF5, "CastLike at opset %d",
                     k ? 19 : 15);
        d5_tensor_free(&y);
        d5_tensor_free(&in[0]);
        d5_tensor_free(&in[1]);
    }
}

Test(ref_cast, types_d5_does_not_have)
{
    d5_tensor x = raw(D5_F32, 1, (const float[]){1});
    d5_tensor y;
    const struct {
        int64_t to;
        d5_status status;
        const char *text;
    } cases[] = {
        {14, D5_ERR_UNSUPPORTED, "casting to COMPLEX64 (to = 14)"},
        {15, D5_ERR_UNSUPPORTED, "casting to COMPLEX128 (to = 15)"},
        {0, D5_ERR_INVALID, "Cast: attribute 'to' is 0, not an ONNX data type"},
        {99, D5_ERR_INVALID, "attribute 'to' is 99, not an ONNX data type (1..26)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d5_attr a = attr_int("to", cases[i].to);
        d5_attrs attrs = {&a, 1};
        d5_status s = try_op("Cast", "ref", &x, 1, &attrs, &y, 1);
        cr_expect_eq(s, cases[i].status, "to = %lld: %s", (long long)cases[i].to,
                     d5_status_name(s));
        cr_expect(strstr(d5_last_error(), cases[i].text), "%s", d5_last_error());
    }
    /* Opset 1 names the type. */
    d5_attr a = attr_string("to", "FLOAT16");
    d5_attrs attrs = {&a, 1};
    run_op("Cast", "ref", &x, 1, &attrs, &y, 1);
    cr_expect_eq(y.desc.dtype, D5_F16);
    cr_expect_eq(((uint16_t *)y.data)[0], 0x3C00);
    d5_tensor_free(&y);
    a = attr_string("to", "float");
    cr_expect_eq(try_op("Cast", "ref", &x, 1, &attrs, &y, 1), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "'float', not an ONNX data type name"), "%s",
              d5_last_error());
    d5_tensor_free(&x);
}

/* Backward: the gradient converted back between floating-point types, none
 * into an integer input or through an integer output. */
static void backward(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                     const d5_tensor *gout, d5_tensor *gin)
{
    const d5_op_desc *desc;
    d5_op *o;
    d5_tensor y;
    cr_assert_eq(d5_op_find(op, "ref", &desc), D5_OK);
    cr_assert_eq(d5_op_create(desc, in, nin, attrs, 1, &o), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(o, 0), &y), D5_OK);
    cr_assert_eq(d5_op_forward(o, in, &y), D5_OK);
    for (int32_t i = 0; i < nin; i++) {
        cr_assert_eq(d5_tensor_alloc(&in[i].desc, &gin[i]), D5_OK);
        memset(gin[i].data, 0x55,
               (size_t)d5_tensor_desc_numel(&in[i].desc) *
                   d5_dtype_size((d5_dtype)in[i].desc.dtype));
    }
    cr_assert_eq(d5_op_backward(o, gout, in, &y, gin), D5_OK, "%s", d5_last_error());
    d5_tensor_free(&y);
    d5_op_free(o);
}

Test(ref_cast, gradients)
{
    d5_tensor x = raw(D5_F32, 2, (const float[]){1.25f, -3});
    d5_attr a = attr_int("to", 10);
    d5_attrs attrs = {&a, 1};
    d5_tensor g = raw(D5_F16, 2, (const uint16_t[]){0x3800, 0xC400}), gin;
    backward("Cast", &x, 1, &attrs, &g, &gin);
    expect_bytes(&gin, D5_F32, 2, (const float[]){0.5f, -4}, "float16 gradient to float32");
    d5_tensor_free(&g);
    a = attr_int("to", 6);
    g = raw(D5_I32, 2, (const int32_t[]){7, 9});
    backward("Cast", &x, 1, &attrs, &g, &gin);
    expect_bytes(&gin, D5_F32, 2, (const float[]){0, 0}, "none through int32");
    d5_tensor_free(&g);
    /* CastLike: target_type gets zeros. */
    d5_tensor in[2] = {x, raw(D5_BF16, 1, (const uint16_t[]){0x4000})}, gins[2];
    g = raw(D5_BF16, 2, (const uint16_t[]){0x3F80, 0xC000});
    backward("CastLike", in, 2, NULL, &g, gins);
    expect_bytes(&gins[0], D5_F32, 2, (const float[]){1, -2}, "CastLike's input");
    expect_bytes(&gins[1], D5_BF16, 1, (const uint16_t[]){0}, "CastLike's target_type");
    d5_tensor_free(&g);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
}

/* CastLike takes `to` from its second input's type, for every type (the
 * narrow ones: test_narrow_types.c). */
Test(ref_cast, castlike_every_target)
{
    for (int to = 1; to < WIDE; to++) {
        unsigned char like[8] = {0}, want[3 * 8];
        d5_tensor in[2] = {raw(D5_I32, 3, (const int32_t[]){0, 1, 100}),
                           raw((d5_dtype)to, 1, like)};
        for (int i = 0; i < 3; i++) put(want, (d5_dtype)to, i, (int[]){0, 1, 100}[i]);
        d5_tensor y;
        run_op("CastLike", "ref", in, 2, NULL, &y, 1);
        expect_bytes(&y, (d5_dtype)to, 3, want, d5_dtype_name((d5_dtype)to));
        d5_tensor_free(&in[0]);
        d5_tensor_free(&in[1]);
    }
}

/* d5_tensor_fill_uniform fills tensors of every type through d5_convert. */
Test(ref_cast, fill_uniform_every_type)
{
    for (int dt = 1; dt < WIDE; dt++) {
        int64_t n = 300;
        d5_tensor t;
        d5_tensor_desc d;
        cr_assert_eq(d5_tensor_desc_make((d5_dtype)dt, 1, &n, &d), D5_OK);
        cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
        d5_rng rng;
        d5_rng_seed(&rng, 7);
        d5_tensor_fill_uniform(&t, &rng, -3, 3);
        double v[300];
        cr_assert_eq(d5_convert(t.data, (d5_dtype)dt, v, D5_F64, 300), D5_OK);
        int distinct = 0;
        for (int i = 0; i < 300; i++) {
            cr_assert(v[i] >= -3 && v[i] <= 3, "%s: %g", d5_dtype_name((d5_dtype)dt), v[i]);
            distinct += i > 0 && v[i] != v[i - 1];
        }
        if (dt != D5_BOOL) /* bool: every draw is nonzero */
            cr_expect_gt(distinct, 50, "%s", d5_dtype_name((d5_dtype)dt));
        d5_tensor_free(&t);
    }
}

/* ---- The narrow types through the operator ---- */

#include "../core/narrow_reference.h"

/* Cast of float32 inputs (bit patterns) to ONNX type `to` with the extra
 * attributes; the output bytes. */
static d5_tensor cast_bits(const uint32_t *bits, int64_t n, int64_t to, const d5_attr *extra,
                           int32_t nextra)
{
    d5_attr a[4] = {attr_int("to", to)};
    for (int32_t i = 0; i < nextra; i++) a[1 + i] = extra[i];
    d5_attrs attrs = {a, 1 + nextra};
    d5_tensor x = raw(D5_F32, n, bits), y;
    run_op("Cast", "ref", &x, 1, &attrs, &y, 1);
    d5_tensor_free(&x);
    return y;
}

/* Cast to float8 follows ONNX's conversions (test_narrow.c checks the
 * functions themselves), its `saturate` attribute defaulting to 1. Without
 * saturation only the inputs where ONNX 1.18's helper departs from the
 * Cast page are skipped here. */
Test(ref_cast, to_float8_saturated_or_not)
{
    const struct {
        int64_t to;
        const uint32_t *in;
        const uint8_t *sat1, *sat0;
        int64_t n;
    } cases[] = {
        {17, e4m3fn_in, e4m3fn_sat1, e4m3fn_sat0, sizeof e4m3fn_in / 4},
        {18, e4m3fnuz_in, e4m3fnuz_sat1, e4m3fnuz_sat0, sizeof e4m3fnuz_in / 4},
        {19, e5m2_in, e5m2_sat1, e5m2_sat0, sizeof e5m2_in / 4},
        {20, e5m2fnuz_in, e5m2fnuz_sat1, e5m2fnuz_sat0, sizeof e5m2fnuz_in / 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        d5_attr sat0 = attr_int("saturate", 0);
        d5_tensor y1 = cast_bits(cases[k].in, cases[k].n, cases[k].to, NULL, 0);
        d5_tensor y0 = cast_bits(cases[k].in, cases[k].n, cases[k].to, &sat0, 1);
        for (int64_t i = 0; i < cases[k].n; i++) {
            cr_expect_eq(((uint8_t *)y1.data)[i], cases[k].sat1[i], "to = %lld, input %lld",
                         (long long)cases[k].to, (long long)i);
            float x;
            memcpy(&x, &cases[k].in[i], sizeof x);
            float a = fabsf(x);
            int departs = (cases[k].to == 17 && a > 480 && a < 496) ||
                          (cases[k].to == 19 && a > 61440 && a < 65536);
            if (!departs)
                cr_expect_eq(((uint8_t *)y0.data)[i], cases[k].sat0[i],
                             "to = %lld, saturate 0, input %g", (long long)cases[k].to, (double)x);
        }
        d5_tensor_free(&y1);
        d5_tensor_free(&y0);
    }
    /* float4 (23) always saturates; E8M0 (24) by round_mode. */
    d5_tensor y = cast_bits(e2m1_in, sizeof e2m1_in / 4, 23, NULL, 0);
    cr_expect(memcmp(y.data, e2m1_code, sizeof e2m1_code) == 0, "float4");
    d5_tensor_free(&y);
    d5_attr modes[2] = {attr_string("round_mode", "nearest"), attr_int("saturate", 0)};
    y = cast_bits(e8m0_in, sizeof e8m0_in / 4, 24, modes, 2);
    cr_expect(memcmp(y.data, e8m0_nearest_sat0, sizeof e8m0_nearest_sat0) == 0, "e8m0 nearest");
    d5_tensor_free(&y);
    y = cast_bits(e8m0_in, sizeof e8m0_in / 4, 24, NULL, 0);
    cr_expect(memcmp(y.data, e8m0_up_sat1, sizeof e8m0_up_sat1) == 0, "e8m0 up, saturated");
    d5_tensor_free(&y);
    d5_attr bad = attr_string("round_mode", "odd");
    d5_tensor x = raw(D5_F32, 1, (const float[]){1}), z;
    d5_attr a[2] = {attr_int("to", 24), bad};
    d5_attrs attrs = {a, 2};
    cr_expect_eq(try_op("Cast", "ref", &x, 1, &attrs, &z, 1), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "round_mode is 'odd'"), "%s", d5_last_error());
    d5_tensor_free(&x);
}

/* Floating point to int4 and uint4: rounded half to even and clipped in
 * opsets 21 to 23 (ONNX 1.18's reference), the low bits from opset 24 on
 * (ONNX 1.19 and after: -9 -> int4 7); integers always keep the low bits. */
Test(ref_cast, to_int4_by_opset)
{
    int64_t n = sizeof int4_in / 4;
    for (int k = 0; k < 2; k++) {
        d5_attr op = attr_int("__opset", 23);
        d5_tensor y = cast_bits(int4_in, n, k ? 21 : 22, &op, 1);
        const int *want = k ? uint4_clipped : int4_clipped;
        for (int64_t i = 0; i < n; i++) {
            int got = k ? ((uint8_t *)y.data)[i] : ((int8_t *)y.data)[i];
            cr_expect_eq(got, want[i], "%s, opset 23, input %lld", k ? "uint4" : "int4",
                         (long long)i);
        }
        d5_tensor_free(&y);
    }
    const float f[] = {-9, 16, 7.5, -8.5, 2.5, -3};
    const uint32_t *bits = (const uint32_t *)(const void *)f;
    d5_attr op = attr_int("__opset", 24);
    d5_tensor y = cast_bits(bits, 6, 22, &op, 1);
    const int8_t i4[] = {7, 0, -8, -8, 2, -3};
    cr_expect(memcmp(y.data, i4, 6) == 0, "int4 at opset 24: %d %d %d %d %d %d",
              ((int8_t *)y.data)[0], ((int8_t *)y.data)[1], ((int8_t *)y.data)[2],
              ((int8_t *)y.data)[3], ((int8_t *)y.data)[4], ((int8_t *)y.data)[5]);
    d5_tensor_free(&y);
    y = cast_bits(
        bits, 6, 26, &op,
        1); /* int2: -9 -> -1, 16 -> 0, 7.5 -> 8 -> 0, -8.5 -> -8 -> 0, 2.5 -> 2 -> -2, -3 -> 1 */
    const int8_t i2[] = {-1, 0, 0, 0, -2, 1};
    cr_expect(memcmp(y.data, i2, 6) == 0, "int2 at opset 24");
    d5_tensor_free(&y);
    const int16_t w[] = {-9, 16, 300, -1};
    const uint8_t u4[] = {7, 0, 12, 15};
    y = cast(raw(D5_I16, 4, w), 21);
    cr_expect(memcmp(y.data, u4, 4) == 0, "int16 to uint4: the low bits");
    d5_tensor_free(&y);
}

/* Narrow types widen exactly, cross to each other and to bool; CastLike
 * takes a narrow target. */
Test(ref_cast, from_narrow_types)
{
    const uint8_t e4[] = {0x38, 0x7E, 0xFF, 0x80, 0x01}; /* 1, 448, -NaN, -0, 2^-9 */
    d5_tensor y = cast(raw(D5_F8E4M3FN, 5, e4), 1);
    const float *f = y.data;
    cr_expect(f[0] == 1 && f[1] == 448 && isnan(f[2]) && f[3] == 0 && signbit(f[3]) &&
                  f[4] == 0x1p-9f,
              "e4m3fn to float: %g %g %g %g %g", f[0], f[1], f[2], f[3], f[4]);
    d5_tensor_free(&y);
    y = cast(raw(D5_F8E4M3FN, 5, e4), 19); /* to e5m2: 1, 448, NaN, -0, 2^-9 (exponent 6) */
    const uint8_t e5[] = {0x3C, 0x5F, 0xFF, 0x80, 0x18};
    cr_expect(memcmp(y.data, e5, 5) == 0, "e4m3fn to e5m2: %02X %02X %02X %02X %02X",
              ((uint8_t *)y.data)[0], ((uint8_t *)y.data)[1], ((uint8_t *)y.data)[2],
              ((uint8_t *)y.data)[3], ((uint8_t *)y.data)[4]);
    d5_tensor_free(&y);
    const int8_t i4[] = {-8, 7, 0, -1};
    y = cast(raw(D5_I4, 4, i4), 9); /* bool */
    const uint8_t b[] = {1, 1, 0, 1};
    cr_expect(memcmp(y.data, b, 4) == 0, "int4 to bool");
    d5_tensor_free(&y);
    y = cast(raw(D5_I4, 4, i4), 11);
    const double d[] = {-8, 7, 0, -1};
    cr_expect(memcmp(y.data, d, sizeof d) == 0, "int4 to double");
    d5_tensor_free(&y);
    const uint8_t f4[] = {0x7, 0xF, 0x1}; /* 6, -6, 0.5 */
    y = cast(raw(D5_F4E2M1, 3, f4), 3);   /* to int8 */
    const int8_t i8[] = {6, -6, 0};
    cr_expect(memcmp(y.data, i8, 3) == 0, "float4 to int8");
    d5_tensor_free(&y);
    const uint8_t like = 0;
    d5_tensor in[2] = {raw(D5_F32, 2, (const float[]){0.3f, 1000}), raw(D5_F8E4M3FNUZ, 1, &like)};
    run_op("CastLike", "ref", in, 2, NULL, &y, 1);
    const uint8_t fnuz[] = {0x32, 0x7F}; /* 0.3 -> 1.25 2^-2 (bias 8); 1000 saturates to 240 */
    cr_expect(memcmp(y.data, fnuz, 2) == 0, "CastLike to e4m3fnuz: %02X %02X",
              ((uint8_t *)y.data)[0], ((uint8_t *)y.data)[1]);
    d5_tensor_free(&y);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
}
