/* The narrow types against ONNX's own conversions (narrow_reference.h,
 * written by make_narrow_reference.py from the reference helpers of ONNX
 * 1.18 and 1.20): every code of every float8 type and of float4 decoded,
 * and for each type some 1400 float32 inputs (every value, the midpoints
 * between neighbours and their float32 neighbours, values past the largest,
 * tiny ones, zeros, infinities, NaN, random ones) encoded with and without
 * saturation; E8M0 under each rounding mode; and d5_convert through them. */
#include "narrow_reference.h"

#include "d5/d5.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static float f32_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Equal values: NaN to NaN, and zeros of the same sign. */
static int same(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

typedef struct f8_case {
    d5_dtype type;
    const double *value;
    const uint32_t *in;
    const uint8_t *sat1, *sat0;
    int n;
} f8_case;

#define F8(T, name)                                                                                \
    {                                                                                              \
        T, name##_value, name##_in, name##_sat1, name##_sat0, N(name##_in)                         \
    }
static const f8_case f8_cases[] = {F8(D5_F8E4M3FN, e4m3fn), F8(D5_F8E4M3FNUZ, e4m3fnuz),
                                   F8(D5_F8E5M2, e5m2), F8(D5_F8E5M2FNUZ, e5m2fnuz)};

Test(narrow, float8_every_code_decodes_as_onnx)
{
    for (int k = 0; k < N(f8_cases); k++)
        for (int c = 0; c < 256; c++) {
            double got = d5_f64_from_narrow(f8_cases[k].type, (uint8_t)c);
            cr_expect(same(got, f8_cases[k].value[c]), "%s code 0x%02X: %g, ONNX %g",
                      d5_dtype_name(f8_cases[k].type), c, got, f8_cases[k].value[c]);
        }
}

/* Where ONNX 1.18's helpers depart from the Cast page's table (without
 * saturation, [x] > FLT_MAX gives NaN, and infinity for E5M2; [x] is x
 * rounded to the type's mantissa): E4M3FN gave 448 for 480 < |x| < 496,
 * which round to 480 (NaN), and E5M2 gave NaN for 61440 < |x| < 65536,
 * which round to 65536 (infinity). d5 follows the table; these inputs check
 * that it does, and that the helper's value is the one described. */
static uint8_t expected_unsaturated(d5_dtype t, float x, uint8_t onnx)
{
    float a = fabsf(x);
    uint8_t sign = signbit(x) ? 0x80 : 0;
    if (t == D5_F8E4M3FN && a > 480 && a < 496) {
        cr_expect_eq(onnx, sign | 0x7E, "ONNX 1.18 gave 448 for %g", (double)x);
        return sign | 0x7F;
    }
    if (t == D5_F8E5M2 && a > 61440 && a < 65536) {
        cr_expect_eq(onnx, sign | 0x7F, "ONNX 1.18 gave NaN for %g", (double)x);
        return sign | 0x7C;
    }
    return onnx;
}

Test(narrow, float8_encodes_as_onnx_saturated_or_not)
{
    for (int k = 0; k < N(f8_cases); k++) {
        const f8_case *f = &f8_cases[k];
        cr_assert_gt(f->n, 1000);
        for (int i = 0; i < f->n; i++) {
            float x = f32_of(f->in[i]);
            uint8_t s1 = d5_narrow_from_f64(f->type, x, 1), s0 = d5_narrow_from_f64(f->type, x, 0);
            cr_expect_eq(s1, f->sat1[i], "%s of %.9g (0x%08X), saturated: 0x%02X, ONNX 0x%02X",
                         d5_dtype_name(f->type), (double)x, f->in[i], s1, f->sat1[i]);
            uint8_t want = expected_unsaturated(f->type, x, f->sat0[i]);
            cr_expect_eq(s0, want, "%s of %.9g (0x%08X): 0x%02X, expected 0x%02X",
                         d5_dtype_name(f->type), (double)x, f->in[i], s0, want);
        }
    }
}

Test(narrow, float4_as_onnx)
{
    for (int c = 0; c < 16; c++)
        cr_expect(same(d5_f64_from_narrow(D5_F4E2M1, (uint8_t)c), e2m1_value[c]),
                  "float4 code %d: %g, ONNX %g", c, d5_f64_from_narrow(D5_F4E2M1, (uint8_t)c),
                  e2m1_value[c]);
    for (int i = 0; i < N(e2m1_in); i++) {
        float x = f32_of(e2m1_in[i]);
        for (int sat = 0; sat < 2; sat++) /* float4 always saturates */
            cr_expect_eq(d5_narrow_from_f64(D5_F4E2M1, x, sat), e2m1_code[i],
                         "float4 of %.9g: 0x%X, ONNX 0x%X", (double)x,
                         d5_narrow_from_f64(D5_F4E2M1, x, sat), e2m1_code[i]);
    }
}

Test(narrow, e8m0_as_onnx_in_every_mode)
{
    const uint8_t *want[3][2] = {{e8m0_up_sat0, e8m0_up_sat1},
                                 {e8m0_down_sat0, e8m0_down_sat1},
                                 {e8m0_nearest_sat0, e8m0_nearest_sat1}};
    const char *names[3] = {"up", "down", "nearest"};
    for (int m = 0; m < 3; m++)
        for (int sat = 0; sat < 2; sat++)
            for (int i = 0; i < N(e8m0_in); i++) {
                float x = f32_of(e8m0_in[i]);
                uint8_t got = d5_f8e8m0_from_f32(x, sat, (d5_round_mode)m);
                cr_expect_eq(got, want[m][sat][i], "e8m0 %s%s of %.9g: %u, ONNX %u", names[m],
                             sat ? " saturated" : "", (double)x, got, want[m][sat][i]);
            }
    for (int c = 0; c < 255; c++)
        cr_expect_eq(d5_f64_from_narrow(D5_F8E8M0, (uint8_t)c), ldexp(1, c - 127));
    cr_expect(isnan(d5_f64_from_narrow(D5_F8E8M0, 0xFF)));
    d5_round_mode m;
    cr_expect_eq(d5_round_mode_parse("nearest", &m), D5_OK);
    cr_expect_eq(m, D5_ROUND_NEAREST);
    cr_expect_eq(d5_round_mode_parse("even", &m), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "round_mode 'even': expected up, down or nearest"), "%s",
              d5_last_error());
}

/* d5_convert: every code widens to its value, and floats narrow as Cast does
 * without saturation (E8M0: rounding up, saturated); integers saturate. */
Test(narrow, convert_through_every_narrow_type)
{
    for (int k = 0; k < N(f8_cases); k++) {
        const f8_case *f = &f8_cases[k];
        uint8_t codes[256], back[256];
        double v[256];
        for (int c = 0; c < 256; c++) codes[c] = (uint8_t)c;
        cr_assert_eq(d5_convert(codes, f->type, v, D5_F64, 256), D5_OK);
        for (int c = 0; c < 256; c++) cr_expect(same(v[c], f->value[c]));
        float x[2000];
        uint8_t y[2000];
        for (int i = 0; i < f->n; i++) x[i] = f32_of(f->in[i]);
        cr_assert_eq(d5_convert(x, D5_F32, y, f->type, (size_t)f->n), D5_OK);
        for (int i = 0; i < f->n; i++)
            cr_expect_eq(y[i], expected_unsaturated(f->type, x[i], f->sat0[i]),
                         "d5_convert to %s of %g", d5_dtype_name(f->type), (double)x[i]);
        /* A code through float32 and back is itself, NaN codes aside. */
        float w[256];
        cr_assert_eq(d5_convert(codes, f->type, w, D5_F32, 256), D5_OK);
        cr_assert_eq(d5_convert(w, D5_F32, back, f->type, 256), D5_OK);
        for (int c = 0; c < 256; c++)
            if (!isnan(f->value[c]))
                cr_expect(back[c] == c || (f->value[c] == 0 && f->type == D5_F8E4M3FNUZ) ||
                              (f->value[c] == 0 && f->type == D5_F8E5M2FNUZ),
                          "%s: 0x%02X back as 0x%02X", d5_dtype_name(f->type), c, back[c]);
    }
    const double ints[] = {-20, -8.5, -2.5, -1, 0, 1, 1.5, 3, 7.6, 15, 99, NAN};
    const struct {
        d5_dtype t;
        int8_t want[12];
    } small[] = {{D5_I4, {-8, -8, -2, -1, 0, 1, 1, 3, 7, 7, 7, 0}},
                 {D5_U4, {0, 0, 0, 0, 0, 1, 1, 3, 7, 15, 15, 0}},
                 {D5_I2, {-2, -2, -2, -1, 0, 1, 1, 1, 1, 1, 1, 0}},
                 {D5_U2, {0, 0, 0, 0, 0, 1, 1, 3, 3, 3, 3, 0}}};
    for (int k = 0; k < N(small); k++) {
        int8_t y[12];
        cr_assert_eq(d5_convert(ints, D5_F64, y, small[k].t, 12), D5_OK);
        for (int i = 0; i < 12; i++)
            cr_expect_eq(y[i], small[k].want[i], "%s of %g: %d, want %d (truncated, saturated)",
                         d5_dtype_name(small[k].t), ints[i], y[i], small[k].want[i]);
    }
}
