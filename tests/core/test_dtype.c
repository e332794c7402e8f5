/* Data types and conversions: the unsigned types, float16 and bfloat16
 * rounding (bit patterns worked out by hand from the formats, and a table from
 * numpy and PyTorch), and d5_convert's rules between every pair of types. */
#include "support.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static double double_of(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

Test(dtype, unsigned_types_are_appended)
{
    cr_expect_eq(D5_BOOL, 10, "existing enum values keep their numbers");
    cr_expect_eq(D5_U16, 11);
    cr_expect_eq(D5_U32, 12);
    cr_expect_eq(D5_U64, 13);
    cr_expect_eq(D5_F8E4M3FN, 14, "the narrow types come after");
    cr_expect_eq(D5_U2, 23);
    cr_expect_eq(D5_STRING, 24, "strings after them");
    cr_expect_eq(D5_DTYPE_COUNT, 25);
    cr_expect_eq(d5_dtype_size(D5_STRING), sizeof(const char *));
    cr_expect_str_eq(d5_dtype_name(D5_U16), "uint16");
    cr_expect_str_eq(d5_dtype_name(D5_U32), "uint32");
    cr_expect_str_eq(d5_dtype_name(D5_U64), "uint64");
    cr_expect_eq(d5_dtype_size(D5_U16), 2);
    cr_expect_eq(d5_dtype_size(D5_U32), 4);
    cr_expect_eq(d5_dtype_size(D5_U64), 8);
    cr_expect_str_eq(d5_dtype_name((d5_dtype)D5_DTYPE_COUNT), "invalid");
    d5_dtype t;
    cr_expect_eq(d5_dtype_parse("uint32", &t), D5_OK);
    cr_expect_eq(t, D5_U32);
    cr_expect_eq(d5_dtype_parse("float8", &t), D5_ERR_NOTFOUND);
    cr_expect(strstr(d5_last_error(), "'float8' (expected one of float32, float64,"), "%s",
              d5_last_error());
    cr_expect(strstr(d5_last_error(), "bool, uint16, uint32, uint64, float8e4m3fn,"), "%s",
              d5_last_error());
    cr_expect(strstr(d5_last_error(), "int4, uint4, int2, uint2, string)"), "%s", d5_last_error());
    cr_expect_eq(d5_dtype_parse("float4e2m1", &t), D5_OK);
    cr_expect_eq(t, D5_F4E2M1);
    cr_expect_eq(d5_dtype_bits(D5_F4E2M1), 4);
    cr_expect_eq(d5_dtype_bits(D5_U2), 2);
    cr_expect_eq(d5_dtype_bits(D5_F8E8M0), 8);
    cr_expect_eq(d5_dtype_bits(D5_F64), 64);
    cr_expect_eq(d5_dtype_size(D5_I4), 1, "one element a byte in memory");
    cr_expect(d5_dtype_is_minifloat(D5_F8E5M2) && d5_dtype_is_minifloat(D5_F8E8M0) &&
              d5_dtype_is_minifloat(D5_F4E2M1) && !d5_dtype_is_minifloat(D5_I4) &&
              !d5_dtype_is_minifloat(D5_F16));
    cr_expect(!d5_dtype_is_float(D5_F8E4M3FN), "float8 is no compute type");
    cr_expect(d5_dtype_is_float(D5_F16) && d5_dtype_is_float(D5_BF16) &&
              d5_dtype_is_float(D5_F64) && d5_dtype_is_float(D5_F32));
    cr_expect(!d5_dtype_is_float(D5_U64) && !d5_dtype_is_float(D5_BOOL) &&
              !d5_dtype_is_float(D5_DTYPE_INVALID));
}

/* float16: sign 1, exponent 5 (bias 15), significand 10; the largest finite
 * value is 0x7BFF = 65504, its unit in the last place 32, so 65520 is the
 * midpoint to 65536 (which would need exponent 16: infinity). Subnormals are
 * multiples of 2^-24. */
Test(half, float16_rounding)
{
    const struct {
        float x;
        uint16_t h;
    } cases[] = {
        {1.0f, 0x3C00},
        {-2.0f, 0xC000},
        {0.5f, 0x3800},
        {65504.0f, 0x7BFF},
        {65519.99f, 0x7BFF}, /* below the midpoint */
        {65520.0f, 0x7C00},  /* the midpoint: ties to even, infinity */
        {-65520.0f, 0xFC00},
        {65536.0f, 0x7C00},
        {1e10f, 0x7C00},
        {INFINITY, 0x7C00},
        {-INFINITY, 0xFC00},
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {0x1p-24f, 0x0001},        /* the smallest subnormal */
        {0x1p-25f, 0x0000},        /* half of it: ties to even, 0 */
        {0x1.000002p-25f, 0x0001}, /* just above half */
        {0x3p-25f, 0x0002},        /* 1.5 units: ties to even, 2 */
        {-0x5p-25f, 0x8002},       /* 2.5 units: 2 */
        {1023 * 0x1p-24f, 0x03FF}, /* the largest subnormal */
        {2047 * 0x1p-25f, 0x0400}, /* 1023.5 units: up to the smallest normal */
        {0x1p-14f, 0x0400},
        {1.0f + 0x1p-11f, 0x3C00},            /* a tie between 0x3C00 and 0x3C01 */
        {1.0f + 0x3p-11f, 0x3C02},            /* a tie between 0x3C01 and 0x3C02 */
        {1.0f + 0x1p-11f + 0x1p-20f, 0x3C01}, /* above the tie */
        {0x1p-30f, 0x0000},
        {FLT_TRUE_MIN, 0x0000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(d5_f16_from_f32(cases[i].x), cases[i].h, "%a: 0x%04x, want 0x%04x",
                     (double)cases[i].x, d5_f16_from_f32(cases[i].x), cases[i].h);
        cr_expect_eq(d5_f16_from_f64(cases[i].x), cases[i].h, "%a (double)", (double)cases[i].x);
    }
    /* Widening is exact. */
    cr_expect_eq(d5_f32_from_f16(0x0001), 0x1p-24f);
    cr_expect_eq(d5_f32_from_f16(0x03FF), 1023 * 0x1p-24f);
    cr_expect_eq(d5_f32_from_f16(0x7BFF), 65504.0f);
    cr_expect_eq(d5_f32_from_f16(0xC000), -2.0f);
    cr_expect_eq(bits_of(d5_f32_from_f16(0x8000)), 0x80000000u, "-0 stays -0");
    cr_expect(isinf(d5_f32_from_f16(0x7C00)) && d5_f32_from_f16(0xFC00) < 0);
}

Test(half, float16_nan_stays_quiet_nan)
{
    /* A quiet NaN, and a signalling one whose payload lies below the 10
     * bits float16 keeps: both come out NaN with the quiet bit 0x200. */
    const uint32_t nans[] = {0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7FA00000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = d5_f16_from_f32(float_of(nans[i]));
        cr_expect_eq(h & 0x7E00, 0x7E00, "0x%08x -> 0x%04x", nans[i], h);
        cr_expect_eq(h >> 15, nans[i] >> 31, "sign of 0x%08x", nans[i]);
        uint16_t d = d5_f16_from_f64((double)float_of(nans[i]));
        cr_expect_eq(d & 0x7E00, 0x7E00, "0x%08x (double) -> 0x%04x", nans[i], d);
    }
    cr_expect(isnan(d5_f32_from_f16(0x7C01)), "a signalling float16 NaN widens to NaN");
    cr_expect(bits_of(d5_f32_from_f16(0x7C01)) & 0x400000u, "made quiet");
}

/* From double the rounding happens once: 1 + 2^-11 + 2^-40 lies above the
 * tie between 0x3C00 and 0x3C01, but rounded to float32 first it lands on
 * the tie and then goes to even. */
Test(half, from_double_rounds_once)
{
    double x = 1.0 + 0x1p-11 + 0x1p-40;
    cr_expect_eq(d5_f16_from_f64(x), 0x3C01);
    cr_expect_eq(d5_f16_from_f32((float)x), 0x3C00, "the double rounding the API avoids");
    double y = 1.0 + 0x1p-8 + 0x1p-30;
    cr_expect_eq(d5_bf16_from_f64(y), 0x3F81);
    cr_expect_eq(d5_bf16_from_f32((float)y), 0x3F80);
    cr_expect_eq(d5_f16_from_f64(65519.99999999999), 0x7BFF);
    cr_expect_eq(d5_f16_from_f64(0x1p-25 + 0x1p-60), 0x0001);
    cr_expect_eq(d5_f16_from_f64(1e300), 0x7C00);
    cr_expect_eq(d5_f16_from_f64(-1e-300), 0x8000);
    cr_expect_eq(d5_f16_from_f64(0x0.0000000000001p-1022), 0x0000, "a float64 subnormal");
}

/* bfloat16 is float32's top half: exponent 8 (bias 127), significand 7. Its
 * largest finite value 0x7F7F is 0x1.FEp127; the midpoint to 2^128 is
 * 0x1.FFp127 (float32 0x7F7F8000), and FLT_MAX lies above it. */
Test(half, bfloat16_rounding)
{
    const struct {
        uint32_t f;
        uint16_t b;
    } cases[] = {
        {0x3F800000u, 0x3F80}, /* 1 */
        {0x3F808000u, 0x3F80}, /* 1 + 2^-8: a tie, to even */
        {0x3F818000u, 0x3F82}, /* 1 + 3 * 2^-8: a tie, to even */
        {0x3F808001u, 0x3F81}, /* above the tie */
        {0x3F807FFFu, 0x3F80}, /* below it */
        {0xBF808001u, 0xBF81}, /* negative */
        {0x7F7F7FFFu, 0x7F7F}, /* below the last midpoint */
        {0x7F7F8000u, 0x7F80}, /* the midpoint (0x7F7F is odd): infinity */
        {0x7F7FFFFFu, 0x7F80}, /* FLT_MAX */
        {0xFF7FFFFFu, 0xFF80}, /* -FLT_MAX */
        {0x7F800000u, 0x7F80}, /* infinity */
        {0x80000000u, 0x8000}, /* -0 */
        {0x00000001u, 0x0000}, /* 2^-149, below half of 2^-133 */
        {0x00008000u, 0x0000}, /* 2^-134: half a unit, ties to even */
        {0x00018000u, 0x0002}, /* 1.5 units: ties to even */
        {0x00010000u, 0x0001}, /* the smallest subnormal, 2^-133 */
        {0x007FFFFFu, 0x0080}, /* the largest float32 subnormal rounds up */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float x = float_of(cases[i].f);
        cr_expect_eq(d5_bf16_from_f32(x), cases[i].b, "0x%08x: 0x%04x, want 0x%04x", cases[i].f,
                     d5_bf16_from_f32(x), cases[i].b);
        cr_expect_eq(d5_bf16_from_f64(x), cases[i].b, "0x%08x (double)", cases[i].f);
    }
    cr_expect_eq(d5_bf16_from_f64(1e39), 0x7F80, "beyond float32's range");
    cr_expect_eq(d5_bf16_from_f64(-1e39), 0xFF80);
    cr_expect_eq(d5_bf16_from_f64(3.39e38), 0x7F7F); /* 3.3895e38, below the midpoint 3.3961e38 */
    cr_expect_eq(d5_bf16_from_f64(0x1p-133), 0x0001);
    cr_expect_eq(d5_bf16_from_f64(0x1p-134), 0x0000);
    cr_expect_eq(d5_bf16_from_f64(0x1.8p-134), 0x0001);
    /* NaN: one whose payload sits in the low half would truncate to infinity. */
    uint16_t n = d5_bf16_from_f32(float_of(0x7F800001u));
    cr_expect(n > 0x7F80 && (n & 0x40), "0x%04x", n);
    n = d5_bf16_from_f64(double_of(0xFFF0000000000001ull));
    cr_expect((n & 0x7FFF) > 0x7F80 && (n & 0x40) && (n & 0x8000), "0x%04x", n);
    cr_expect_eq(bits_of(d5_f32_from_bf16(0x3F81)), 0x3F810000u);
    cr_expect_eq(bits_of(d5_f32_from_bf16(0x0001)), 0x00010000u);
    cr_expect(isnan(d5_f32_from_bf16(0x7F81)) && (bits_of(d5_f32_from_bf16(0x7F81)) & 0x400000u));
}

/* Random values: float16 from numpy's astype (which rounds float64 once),
 * bfloat16 from PyTorch's float32 -> bfloat16 conversion. */
Test(half, agrees_with_numpy_and_pytorch)
{
    static const struct {
        uint32_t f;
        uint16_t h, b;
    } f32[] = {
        {0xba964615u, 0x94b2, 0xba96}, {0x381c6405u, 0x0272, 0x381c}, {0x470df960u, 0x7870, 0x470e},
        {0x38f17b6cu, 0x078c, 0x38f1}, {0x3efdf984u, 0x37f0, 0x3efe}, {0xba8d13edu, 0x9469, 0xba8d},
        {0x3507ff48u, 0x0008, 0x3508}, {0xba08ae76u, 0x9045, 0xba09}, {0xc3416dacu, 0xda0b, 0xc341},
        {0xbb1b373au, 0x98da, 0xbb1b}, {0x3fa15615u, 0x3d0b, 0x3fa1}, {0xbeed8232u, 0xb76c, 0xbeee},
        {0xb2efcb43u, 0x8000, 0xb2f0}, {0x423b4197u, 0x51da, 0x423b}, {0x40901f3cu, 0x4481, 0x4090},
        {0x434ccc6du, 0x5a66, 0x434d},
    };
    static const struct {
        uint64_t d;
        uint16_t h;
    } f64[] = {
        {0x40189aa932351defull, 0x4627}, {0x400aee15e051e439ull, 0x42bc},
        {0xc0203d3a0058fa1full, 0xc80f}, {0xbe3886c1be15c315ull, 0x8000},
        {0x40cd15e6074703f3ull, 0x7345}, {0x3f5678c587550c64ull, 0x159e},
        {0x3e860c7c1b25ad3aull, 0x0003}, {0x40ec1e6b5e1bd975ull, 0x7b08},
    };
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++) {
        cr_expect_eq(d5_f16_from_f32(float_of(f32[i].f)), f32[i].h, "0x%08x", f32[i].f);
        cr_expect_eq(d5_bf16_from_f32(float_of(f32[i].f)), f32[i].b, "0x%08x", f32[i].f);
    }
    for (size_t i = 0; i < sizeof f64 / sizeof f64[0]; i++)
        cr_expect_eq(d5_f16_from_f64(double_of(f64[i].d)), f64[i].h, "0x%016llx",
                     (unsigned long long)f64[i].d);
}

/* Every finite half value survives a round trip through float32 and double;
 * the bulk loops agree with the scalar functions. */
Test(half, round_trips_and_bulk_loops)
{
    static uint16_t h[65536], back[65536];
    static float f[65536];
    for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (int type = 0; type < 2; type++) {
        d5_dtype dt = type ? D5_BF16 : D5_F16;
        cr_assert_eq(d5_convert(h, dt, f, D5_F32, 65536), D5_OK);
        cr_assert_eq(d5_convert(f, D5_F32, back, dt, 65536), D5_OK);
        for (int i = 0; i < 65536; i++) {
            float one = type ? d5_f32_from_bf16(h[i]) : d5_f32_from_f16(h[i]);
            cr_assert_eq(memcmp(&one, &f[i], 4), 0, "%s 0x%04x widens differently in bulk",
                         d5_dtype_name(dt), i);
            if (isnan(one)) continue;
            cr_assert_eq(back[i], h[i], "%s 0x%04x -> %a -> 0x%04x", d5_dtype_name(dt), i,
                         (double)one, back[i]);
            uint16_t via64 = type ? d5_bf16_from_f64(one) : d5_f16_from_f64(one);
            cr_assert_eq(via64, h[i], "%s 0x%04x through double", d5_dtype_name(dt), i);
        }
    }
    /* Odd lengths and values off the grid: bulk equals scalar. */
    float x[37];
    uint16_t hb[37], bb[37];
    for (int i = 0; i < 37; i++) x[i] = (float)((i - 18) * 3217.123 + 0.000123 * i);
    x[3] = 65520.0f;
    x[4] = NAN;
    x[5] = 0x3p-25f;
    cr_assert_eq(d5_convert(x, D5_F32, hb, D5_F16, 37), D5_OK);
    cr_assert_eq(d5_convert(x, D5_F32, bb, D5_BF16, 37), D5_OK);
    for (int i = 0; i < 37; i++) {
        cr_expect_eq(hb[i], d5_f16_from_f32(x[i]), "element %d", i);
        cr_expect_eq(bb[i], d5_bf16_from_f32(x[i]), "element %d", i);
    }
}

/* Converts n values of type `from` at src to `to` and expects them to be
 * `want` (n values of `to`) bit for bit, naming the types and the element. */
static void expect_convert(const void *src, d5_dtype from, d5_dtype to, const void *want, int n)
{
    unsigned char got[8 * 16];
    size_t size = d5_dtype_size(to);
    cr_assert_leq(size * (size_t)n, sizeof got);
    cr_assert_eq(d5_convert(src, from, got, to, n), D5_OK, "%s to %s: %s", d5_dtype_name(from),
                 d5_dtype_name(to), d5_last_error());
    for (int i = 0; i < n; i++)
        cr_expect(memcmp(got + (size_t)i * size, (const unsigned char *)want + (size_t)i * size,
                         size) == 0,
                  "%s to %s: element %d", d5_dtype_name(from), d5_dtype_name(to), i);
}

Test(convert, float_to_integer_truncates_and_saturates)
{
    const double x[] = {127.9, 300, -1e10, NAN, -0.9, INFINITY, -INFINITY, -5, 42.5};
    const int8_t want8[] = {127, 127, -128, 0, 0, 127, -128, -5, 42};
    const uint8_t wantu8[] = {127, 255, 0, 0, 0, 255, 0, 0, 42};
    const int64_t want64[] = {127, 300, -10000000000, 0, 0, INT64_MAX, INT64_MIN, -5, 42};
    const uint64_t wantu64[] = {127, 300, 0, 0, 0, UINT64_MAX, 0, 0, 42};
    expect_convert(x, D5_F64, D5_I8, want8, 9);
    expect_convert(x, D5_F64, D5_U8, wantu8, 9);
    expect_convert(x, D5_F64, D5_I64, want64, 9);
    expect_convert(x, D5_F64, D5_U64, wantu64, 9);
    const double big[] = {0x1p63 + 0x1p11, 2e19, 0x1p63, -0x1p63, 0x1p64};
    const uint64_t wantbig[] = {(UINT64_C(1) << 63) + 2048, UINT64_MAX, UINT64_C(1) << 63, 0,
                                UINT64_MAX};
    expect_convert(big, D5_F64, D5_U64, wantbig, 5);
    int64_t i64[5];
    cr_assert_eq(d5_convert(big, D5_F64, i64, D5_I64, 5), D5_OK);
    cr_expect_eq(i64[0], INT64_MAX);
    cr_expect_eq(i64[2], INT64_MAX);
    cr_expect_eq(i64[3], INT64_MIN);
    /* float16 to integers through its value. */
    const uint16_t h[] = {0x7BFF, 0xFBFF, 0x3E00, 0x7C00, 0x7E00};
    const int16_t want16[] = {INT16_MAX, INT16_MIN, 1, INT16_MAX, 0};
    const uint32_t want32[] = {65504, 0, 1, UINT32_MAX, 0};
    expect_convert(h, D5_F16, D5_I16, want16, 5);
    expect_convert(h, D5_F16, D5_U32, want32, 5);
}

Test(convert, integers_saturate)
{
    const int64_t v[] = {-1, INT64_MIN, INT64_MAX, 70000, -70000, 255};
    const uint64_t want64[] = {0, 0, INT64_MAX, 70000, 0, 255};
    const uint16_t want16[] = {0, 0, UINT16_MAX, UINT16_MAX, 0, 255};
    const int32_t want32[] = {-1, INT32_MIN, INT32_MAX, 70000, -70000, 255};
    const uint8_t wantb[] = {1, 1, 1, 1, 1, 1};
    expect_convert(v, D5_I64, D5_U64, want64, 6);
    expect_convert(v, D5_I64, D5_U16, want16, 6);
    expect_convert(v, D5_I64, D5_I32, want32, 6);
    expect_convert(v, D5_I64, D5_BOOL, wantb, 6);
    const uint64_t u[] = {UINT64_MAX, UINT64_C(1) << 40, 7};
    const int64_t wanti64[] = {INT64_MAX, INT64_C(1) << 40, 7};
    const uint32_t wantu32[] = {UINT32_MAX, UINT32_MAX, 7};
    const int8_t wanti8[] = {INT8_MAX, INT8_MAX, 7};
    expect_convert(u, D5_U64, D5_I64, wanti64, 3);
    expect_convert(u, D5_U64, D5_U32, wantu32, 3);
    expect_convert(u, D5_U64, D5_I8, wanti8, 3);
}

/* Integers of 64 bits round once to the narrower floating-point types: a
 * conversion through double would first land on a tie. */
Test(convert, large_integers_round_once)
{
    /* float32's unit at 2^60 is 2^37: 2^60 + 2^36 + 1 lies above the tie. */
    const int64_t v[] = {(INT64_C(1) << 60) + (INT64_C(1) << 36) + 1,
                         -((INT64_C(1) << 60) + (INT64_C(1) << 36) + 1),
                         (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1, 65504, 65520};
    float f[5];
    uint16_t bf[5], h[5];
    cr_assert_eq(d5_convert(v, D5_I64, f, D5_F32, 5), D5_OK);
    cr_assert_eq(d5_convert(v, D5_I64, bf, D5_BF16, 5), D5_OK);
    cr_assert_eq(d5_convert(v, D5_I64, h, D5_F16, 5), D5_OK);
    cr_expect_eq(f[0], 0x1p60f + 0x1p37f);
    cr_expect_eq(f[1], -(0x1p60f + 0x1p37f));
    /* bfloat16's unit at 2^60 is 2^53: 2^60 + 2^52 + 1 goes up to 0x5D81. */
    cr_expect_eq(bf[2], 0x5D81, "0x%04x", bf[2]);
    cr_expect_eq(h[3], 0x7BFF);
    cr_expect_eq(h[4], 0x7C00);
    const uint64_t u[] = {UINT64_MAX, (UINT64_C(1) << 63) + (UINT64_C(1) << 39) + 1};
    float uf[2];
    cr_assert_eq(d5_convert(u, D5_U64, uf, D5_F32, 2), D5_OK);
    cr_expect_eq(uf[0], 0x1p64f);
    cr_expect_eq(uf[1], 0x1p63f + 0x1p40f);
    double d[2];
    cr_assert_eq(d5_convert(u, D5_U64, d, D5_F64, 2), D5_OK);
    cr_expect_eq(d[0], 0x1p64);
}

Test(convert, bool_and_same_type)
{
    const float x[] = {NAN, -0.0f, 0.5f, 0};
    expect_convert(x, D5_F32, D5_BOOL, (const uint8_t[]){1, 0, 1, 0}, 4);
    /* bool reads as 0 or 1. */
    const uint8_t odd[] = {7, 0, 1};
    expect_convert(odd, D5_BOOL, D5_F32, (const float[]){1, 0, 1}, 3);
    expect_convert(odd, D5_BOOL, D5_BOOL, (const uint8_t[]){1, 0, 1}, 3);
    /* In place between types of one size. */
    float inplace[3] = {1.5f, -2.5f, 1e20f};
    cr_assert_eq(d5_convert(inplace, D5_F32, inplace, D5_I32, 3), D5_OK);
    int32_t got[3];
    memcpy(got, inplace, sizeof got);
    cr_expect(got[0] == 1 && got[1] == -2 && got[2] == INT32_MAX);
}

Test(convert, errors)
{
    float x[4] = {0};
    double y[4];
    cr_expect_eq(d5_convert(x, D5_DTYPE_INVALID, y, D5_F64, 4), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "invalid data type"), "%s", d5_last_error());
    cr_expect_eq(d5_convert(x, D5_F32, y, (d5_dtype)99, 4), D5_ERR_INVALID);
    cr_expect_eq(d5_convert(NULL, D5_F32, y, D5_F64, 4), D5_ERR_INVALID);
    cr_expect_eq(d5_convert(NULL, D5_F32, NULL, D5_F64, 0), D5_OK, "nothing to convert");
    /* Overlapping buffers of different element sizes. */
    cr_expect_eq(d5_convert(x, D5_F32, (char *)x + 4, D5_F16, 2), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "overlap"), "%s", d5_last_error());
}
