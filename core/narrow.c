/* The narrow types of ONNX: float8 (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0),
 * float4 E2M1, and the 4- and 2-bit integers. In memory d5 keeps one element
 * per byte: a float8 or float4 code as it is (float4 in the low four bits),
 * int4 and int2 as int8 values (-8..7, -2..1), uint4 and uint2 as uint8
 * values (0..15, 0..3). ONNX files pack the sub-byte types two or four to a
 * byte (the ONNX layer converts).
 *
 * The minifloats are described by their field widths, bias and kind, and
 * converted by arithmetic on doubles: a value is rounded to the quantum of
 * its binade (or of the smallest normal binade for subnormals), ties to
 * even, which is exact in double; then encoded. A result above the largest
 * finite value is an overflow: the largest value under saturation, else
 * infinity where the type has one (E5M2) and NaN where it has none; float4
 * has neither and always saturates (NaN too becomes 6, as ONNX's table says).
 * https://onnx.ai/onnx/technical/float8.html, float4.html, int4.html */
#include "d5/core.h"

#include <math.h>
#include <string.h>

typedef enum kind {
    IEEE,  /* E5M2: infinities, NaN with the exponent all ones */
    FN,    /* E4M3FN: no infinities; NaN is S.1111.111 */
    FNUZ,  /* no infinities, no -0; NaN is 0x80 */
    FINITE /* float4 E2M1: no infinities, no NaN */
} kind;

typedef struct minifloat {
    int ebits, mbits, bias;
    kind kind;
} minifloat;

static const minifloat *format_of(d5_dtype t)
{
    static const minifloat e4m3fn = {4, 3, 7, FN}, e4m3fnuz = {4, 3, 8, FNUZ},
                           e5m2 = {5, 2, 15, IEEE}, e5m2fnuz = {5, 2, 16, FNUZ},
                           e2m1 = {2, 1, 1, FINITE};
    switch (t) {
    case D5_F8E4M3FN: return &e4m3fn;
    case D5_F8E4M3FNUZ: return &e4m3fnuz;
    case D5_F8E5M2: return &e5m2;
    case D5_F8E5M2FNUZ: return &e5m2fnuz;
    case D5_F4E2M1: return &e2m1;
    default: return NULL;
    }
}

int d5_dtype_bits(d5_dtype t)
{
    switch (t) {
    case D5_F4E2M1:
    case D5_I4:
    case D5_U4: return 4;
    case D5_I2:
    case D5_U2: return 2;
    default: return (int)(8 * d5_dtype_size(t));
    }
}

int d5_dtype_is_minifloat(d5_dtype t)
{
    return format_of(t) != NULL || t == D5_F8E8M0;
}

/* The code's sign bit, and its exponent and mantissa fields. */
static void fields(const minifloat *f, unsigned code, unsigned *s, unsigned *e, unsigned *m)
{
    *s = (code >> (f->ebits + f->mbits)) & 1u;
    *e = (code >> f->mbits) & ((1u << f->ebits) - 1);
    *m = code & ((1u << f->mbits) - 1);
}

/* The largest finite value. */
static double max_of(const minifloat *f)
{
    int emax = (1 << f->ebits) - 1 - f->bias; /* the all-ones exponent */
    double top = 2.0 - ldexp(1.0, -f->mbits); /* mantissa all ones */
    if (f->kind == IEEE) return ldexp(top, emax - 1);
    if (f->kind == FN) return ldexp(top - ldexp(1.0, -f->mbits), emax); /* S.1111.111 is NaN */
    return ldexp(top, emax);
}

static double decode(const minifloat *f, unsigned code)
{
    unsigned s, e, m, eall = (1u << f->ebits) - 1, mall = (1u << f->mbits) - 1;
    fields(f, code, &s, &e, &m);
    if (f->kind == FNUZ && s && !e && !m) return NAN;
    if (f->kind == FN && e == eall && m == mall) return s ? -NAN : NAN;
    if (f->kind == IEEE && e == eall) return m ? (s ? -NAN : NAN) : (s ? -INFINITY : INFINITY);
    double v = e ? ldexp(1.0 + ldexp((double)m, -f->mbits), (int)e - f->bias)
                 : ldexp((double)m, 1 - f->bias - f->mbits);
    return s ? -v : v;
}

/* The code of NaN and of the largest value of sign s. */
static unsigned nan_code(const minifloat *f, unsigned s)
{
    unsigned width = 1u + (unsigned)(f->ebits + f->mbits);
    switch (f->kind) {
    case FNUZ: return 0x80u;
    case FN: return (s << (width - 1)) | ((1u << (width - 1)) - 1);
    case IEEE: return (s << (width - 1)) | ((1u << (width - 1)) - 1); /* as ONNX's reference */
    default: return 0;                                                /* none */
    }
}

static unsigned encode_magnitude(const minifloat *f, double a)
{
    /* a is exactly representable: a multiple of its binade's quantum. */
    int emin = 1 - f->bias;
    if (a < ldexp(1.0, emin)) return (unsigned)ldexp(a, f->mbits - emin); /* subnormal */
    int e;
    frexp(a, &e); /* a = r 2^e, r in [0.5, 1) */
    e -= 1;
    unsigned m = (unsigned)(ldexp(a, f->mbits - e) - ldexp(1.0, f->mbits));
    return ((unsigned)(e + f->bias) << f->mbits) | m;
}

static uint8_t encode(const minifloat *f, double x, int saturate)
{
    unsigned width = 1u + (unsigned)(f->ebits + f->mbits), s = signbit(x) ? 1u : 0u;
    unsigned sign = s << (width - 1);
    double max = max_of(f);
    if (isnan(x)) return (uint8_t)(f->kind == FINITE ? encode_magnitude(f, max) : nan_code(f, s));
    double a = fabs(x), r = a;
    if (!isinf(a)) {
        int emin = 1 - f->bias, e;
        frexp(a, &e);
        e -= 1;
        if (e < emin) e = emin;
        double q = ldexp(1.0, e - f->mbits); /* the quantum of a's binade */
        r = nearbyint(a / q) * q;            /* ties to even: the default rounding mode */
    }
    if (r > max) { /* overflow */
        if (saturate || f->kind == FINITE) return (uint8_t)(sign | encode_magnitude(f, max));
        if (f->kind == IEEE) return (uint8_t)(sign | (((1u << f->ebits) - 1) << f->mbits));
        return (uint8_t)nan_code(f, s);
    }
    if (r == 0 && f->kind == FNUZ) return 0; /* no -0 */
    return (uint8_t)(sign | encode_magnitude(f, r));
}

double d5_f64_from_narrow(d5_dtype t, uint8_t code)
{
    if (t == D5_F8E8M0) return code == 0xFF ? NAN : ldexp(1.0, (int)code - 127);
    const minifloat *f = format_of(t);
    return f ? decode(f, code) : NAN;
}

uint8_t d5_narrow_from_f64(d5_dtype t, double x, int saturate)
{
    if (t == D5_F8E8M0) return d5_f8e8m0_from_f32((float)x, saturate, D5_ROUND_UP);
    const minifloat *f = format_of(t);
    return f ? encode(f, x, saturate) : 0;
}

/* ONNX's rule on the float32's bits: the exponent field itself, moved up by
 * one when the rounding asks (up: any fraction; nearest: the guard bit, and
 * then the round or sticky bits or an odd... nonzero exponent), never past
 * 254 under saturation; NaN and infinities give NaN (255). */
uint8_t d5_f8e8m0_from_f32(float x, int saturate, d5_round_mode mode)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    unsigned e = (u >> 23) & 0xFFu, frac = u & 0x7FFFFFu;
    if (e == 0xFF) return 0xFF;
    int up = 0;
    if (mode == D5_ROUND_UP)
        up = frac != 0;
    else if (mode == D5_ROUND_NEAREST)
        up = (frac & 0x400000u) && ((frac & 0x200000u) || (frac & 0x1FFFFFu) || e > 0);
    if (up && saturate && e == 0xFE) up = 0;
    return (uint8_t)(e + (unsigned)up);
}

d5_status d5_round_mode_parse(const char *text, d5_round_mode *mode)
{
    static const char *const names[3] = {"up", "down", "nearest"};
    for (int i = 0; text && i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *mode = (d5_round_mode)i;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID, "round_mode '%s': expected up, down or nearest",
                    text ? text : "(null)");
}
