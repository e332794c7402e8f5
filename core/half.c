/* Half precision: float16 (IEEE 754 binary16) and bfloat16 to and from
 * float32 and float64, and d5_convert between any two d5 data types.
 *
 * Narrowing rounds once, to nearest with ties to even, by integer arithmetic
 * on the bit patterns (float16's subnormals by one float addition). The
 * float32 routines are branch-free selects so that the bulk loops of
 * d5_convert vectorise. */
#include "d5/core.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- Bit patterns ---- */

static inline uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ---- float32 <-> float16 ---- */

static inline uint16_t f16_from_f32_bits(uint32_t u)
{
    /* Signed 32-bit arithmetic on |x|'s bits (below 2^31) vectorises with
     * SSE2's compares. */
    int32_t sign = (int32_t)((u >> 16) & 0x8000u), a = (int32_t)(u & 0x7fffffffu);
    /* Normal results (|x| >= 2^-14): the exponent rebiased from 127 to 15,
     * the 13 dropped bits rounded to nearest even; a carry out of the
     * significand moves into the exponent, and past 0x7bff (65504) the
     * result is infinity. Infinity itself lands there too. */
    int32_t n = a - (112 << 23);
    n = (n + 0xfff + ((n >> 13) & 1)) >> 13;
    n = n > 0x7c00 ? 0x7c00 : n;
    /* Subnormal results: |x| in units of 2^-24, rounded to nearest even by
     * the float addition of 0.5, whose unit in the last place is 2^-24 (in
     * the default rounding mode, which d5 never changes). */
    int32_t s = (int32_t)f32_bits(f32_from_bits((uint32_t)a) + 0.5f) - 0x3f000000;
    /* NaN: quiet, with the top of its payload. */
    int32_t nan = 0x7e00 | ((a >> 13) & 0x3ff);
    int32_t h = a > 0x7f800000 ? nan : (a >= (113 << 23) ? n : s);
    return (uint16_t)(sign | h);
}

static inline uint32_t f32_bits_from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t normal = ((e + 112u) << 23) | (m << 13);
    uint32_t special = 0x7f800000u | (m << 13) | ((uint32_t)(m != 0) << 22); /* NaN made quiet */
    uint32_t sub = f32_bits((float)m * 0x1p-24f);                            /* exact: m < 2^10 */
    return sign | (e == 31 ? special : (e == 0 ? sub : normal));
}

/* ---- float32 <-> bfloat16 ---- */

static inline uint16_t bf16_from_f32_bits(uint32_t u)
{
    /* bfloat16 is the top half of float32: round the low 16 bits to nearest
     * even. Values near FLT_MAX carry into infinity; subnormals round the
     * same way across the boundary with the normals. */
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

static inline uint32_t f32_bits_from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    return (h & 0x7fffu) > 0x7f80u ? u | 0x400000u : u;
}

uint16_t d5_f16_from_f32(float x)
{
    return f16_from_f32_bits(f32_bits(x));
}

float d5_f32_from_f16(uint16_t h)
{
    return f32_from_bits(f32_bits_from_f16(h));
}

uint16_t d5_bf16_from_f32(float x)
{
    return bf16_from_f32_bits(f32_bits(x));
}

float d5_f32_from_bf16(uint16_t h)
{
    return f32_from_bits(f32_bits_from_bf16(h));
}

/* ---- float64 -> float16, bfloat16: one rounding ---- */

/* sig >> shift rounded to nearest even, 1 <= shift; 0 for shifts of 64 and
 * more (sig < 2^53 is then below half a unit). */
static uint64_t round_shift(uint64_t sig, int shift)
{
    if (shift >= 64) return 0;
    uint64_t q = sig >> shift, rem = sig & ((UINT64_C(1) << shift) - 1);
    uint64_t half = UINT64_C(1) << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

/* x rounded to a 16-bit binary format of `mant` stored significand bits and
 * `ebits` exponent bits (float16: 10 and 5; bfloat16: 7 and 8). */
static uint16_t narrow_from_f64(double x, int mant, int ebits)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t sign = (uint32_t)(u >> 63) << 15;
    int e = (int)((u >> 52) & 0x7ff);
    uint64_t m = u & ((UINT64_C(1) << 52) - 1);
    uint32_t inf = ((1u << ebits) - 1u) << mant;
    if (e == 0x7ff) /* infinity, or NaN made quiet with the top of its payload */
        return (uint16_t)(sign | inf |
                          (m ? (1u << (mant - 1)) | (uint32_t)(m >> (52 - mant)) : 0u));
    if (e == 0) return (uint16_t)sign; /* zero and float64 subnormals: far below half a unit */
    int bias = (1 << (ebits - 1)) - 1, ue = e - 1023, emin = 1 - bias;
    if (ue > bias) return (uint16_t)(sign | inf);
    uint64_t sig = (UINT64_C(1) << 52) | m; /* x = sig * 2^(ue - 52) */
    if (ue >= emin) {
        /* Normal: the significand with its leading bit, in [2^mant, 2^(mant+1)];
         * adding it onto the exponent field carries a rounding overflow into
         * the exponent, and from the largest exponent into infinity. */
        uint64_t r = round_shift(sig, 52 - mant);
        return (uint16_t)(sign + ((uint32_t)(ue + bias - 1) << mant) + (uint32_t)r);
    }
    /* Subnormal: units of 2^(emin - mant); a carry gives the smallest normal. */
    return (uint16_t)(sign + (uint32_t)round_shift(sig, 52 - mant + (emin - ue)));
}

uint16_t d5_f16_from_f64(double x)
{
    return narrow_from_f64(x, 10, 5);
}

uint16_t d5_bf16_from_f64(double x)
{
    return narrow_from_f64(x, 7, 8);
}

/* ---- Bulk loops between float32 and the half types ---- */

static void f32_to_f16(const float *s, uint16_t *d, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = f16_from_f32_bits(f32_bits(s[i]));
}

static void f16_to_f32(const uint16_t *s, float *d, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = f32_from_bits(f32_bits_from_f16(s[i]));
}

static void f32_to_bf16(const float *s, uint16_t *d, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = bf16_from_f32_bits(f32_bits(s[i]));
}

static void bf16_to_f32(const uint16_t *s, float *d, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = f32_from_bits(f32_bits_from_bf16(s[i]));
}

/* ---- d5_convert: any type to any type ---- */

/* Values pass through one of three carriers: double for the floating-point
 * types (exact for all four), int64 for the other integers and bool, uint64
 * for uint64. */
typedef enum carrier { C_FLOAT, C_INT, C_UINT } carrier;

enum { CHUNK = 256 };

typedef struct chunk {
    carrier kind;
    double f[CHUNK];
    int64_t i[CHUNK];
    uint64_t u[CHUNK];
} chunk;

static carrier carrier_of(d5_dtype t)
{
    return d5_dtype_is_float(t) || d5_dtype_is_minifloat(t) ? C_FLOAT
           : t == D5_U64                                    ? C_UINT
                                                            : C_INT;
}

#define LOAD(FIELD, T, EXPR)                                                                       \
    do {                                                                                           \
        const T *p = (const T *)src + off;                                                         \
        for (size_t j = 0; j < k; j++) c->FIELD[j] = EXPR;                                         \
    } while (0)

static void load(const void *src, d5_dtype t, size_t off, size_t k, chunk *c)
{
    c->kind = carrier_of(t);
    switch (t) {
    case D5_F32: LOAD(f, float, p[j]); break;
    case D5_F64: LOAD(f, double, p[j]); break;
    case D5_F16: LOAD(f, uint16_t, d5_f32_from_f16(p[j])); break;
    case D5_BF16: LOAD(f, uint16_t, d5_f32_from_bf16(p[j])); break;
    case D5_I8: LOAD(i, int8_t, p[j]); break;
    case D5_U8: LOAD(i, uint8_t, p[j]); break;
    case D5_I16: LOAD(i, int16_t, p[j]); break;
    case D5_I32: LOAD(i, int32_t, p[j]); break;
    case D5_I64: LOAD(i, int64_t, p[j]); break;
    case D5_BOOL: LOAD(i, uint8_t, p[j] != 0); break;
    case D5_U16: LOAD(i, uint16_t, p[j]); break;
    case D5_U32: LOAD(i, uint32_t, p[j]); break;
    case D5_U64: LOAD(u, uint64_t, p[j]); break;
    case D5_F8E4M3FN:
    case D5_F8E4M3FNUZ:
    case D5_F8E5M2:
    case D5_F8E5M2FNUZ:
    case D5_F8E8M0:
    case D5_F4E2M1: LOAD(f, uint8_t, d5_f64_from_narrow(t, p[j])); break;
    case D5_I4:
    case D5_I2: LOAD(i, int8_t, p[j]); break;
    case D5_U4:
    case D5_U2: LOAD(i, uint8_t, p[j]); break;
    case D5_STRING: /* refused by d5_convert */
    case D5_DTYPE_INVALID:
    case D5_DTYPE_COUNT: break;
    }
}

#undef LOAD

/* A double that rounds to any format of at most 51 significand bits as the
 * integer m itself would: exact below 2^53, else m rounded to 53 bits with
 * the dropped bits kept as a sticky last bit (round to odd). */
static double u64_sticky(uint64_t m)
{
    if (m < (UINT64_C(1) << 53)) return (double)m;
    int shift = 0;
    while ((m >> shift) >= (UINT64_C(1) << 53)) shift++;
    uint64_t r = m >> shift;
    if (m & ((UINT64_C(1) << shift) - 1)) r |= 1;
    return ldexp((double)r, shift);
}

static double i64_sticky(int64_t v)
{
    return v < 0 ? -u64_sticky((uint64_t)0 - (uint64_t)v) : u64_sticky((uint64_t)v);
}

/* Element j of a chunk as a double for a half type (rounded once later). */
static double half_source(const chunk *c, size_t j)
{
    return c->kind == C_FLOAT ? c->f[j]
           : c->kind == C_INT ? i64_sticky(c->i[j])
                              : u64_sticky(c->u[j]);
}

/* Element j as an integer of [lo, hi] (hi <= INT64_MAX): truncated toward
 * zero and saturated; NaN is 0. */
static int64_t int_in(const chunk *c, size_t j, int64_t lo, int64_t hi)
{
    if (c->kind == C_UINT) return c->u[j] > (uint64_t)hi ? hi : (int64_t)c->u[j];
    if (c->kind == C_INT) return c->i[j] < lo ? lo : c->i[j] > hi ? hi : c->i[j];
    double x = c->f[j];
    if (x != x) return 0;
    if (x <= (double)lo) return lo;
    /* (double)INT64_MAX is 2^63, which no int64 holds. */
    if (x >= (double)hi) return hi;
    return (int64_t)x;
}

static uint64_t uint64_in(const chunk *c, size_t j)
{
    if (c->kind == C_UINT) return c->u[j];
    if (c->kind == C_INT) return c->i[j] < 0 ? 0 : (uint64_t)c->i[j];
    double x = c->f[j];
    if (!(x > 0)) return 0; /* NaN, zero and negatives */
    if (x >= 0x1p64) return UINT64_MAX;
    return (uint64_t)x;
}

static int nonzero(const chunk *c, size_t j)
{
    return c->kind == C_FLOAT ? c->f[j] != 0 : c->kind == C_INT ? c->i[j] != 0 : c->u[j] != 0;
}

#define STORE(T, EXPR)                                                                             \
    do {                                                                                           \
        T *p = (T *)dst + off;                                                                     \
        for (size_t j = 0; j < k; j++) p[j] = (T)(EXPR);                                           \
    } while (0)

static void store(const chunk *c, void *dst, d5_dtype t, size_t off, size_t k)
{
    switch (t) {
    case D5_F32:
        if (c->kind == C_FLOAT)
            STORE(float, c->f[j]);
        else
            STORE(float, half_source(c, j));
        break;
    case D5_F64:
        if (c->kind == C_FLOAT)
            STORE(double, c->f[j]);
        else if (c->kind == C_INT)
            STORE(double, c->i[j]);
        else
            STORE(double, c->u[j]);
        break;
    case D5_F16: STORE(uint16_t, d5_f16_from_f64(half_source(c, j))); break;
    case D5_BF16: STORE(uint16_t, d5_bf16_from_f64(half_source(c, j))); break;
    case D5_I8: STORE(int8_t, int_in(c, j, INT8_MIN, INT8_MAX)); break;
    case D5_U8: STORE(uint8_t, int_in(c, j, 0, UINT8_MAX)); break;
    case D5_I16: STORE(int16_t, int_in(c, j, INT16_MIN, INT16_MAX)); break;
    case D5_I32: STORE(int32_t, int_in(c, j, INT32_MIN, INT32_MAX)); break;
    case D5_I64: STORE(int64_t, int_in(c, j, INT64_MIN, INT64_MAX)); break;
    case D5_BOOL: STORE(uint8_t, nonzero(c, j)); break;
    case D5_U16: STORE(uint16_t, int_in(c, j, 0, UINT16_MAX)); break;
    case D5_U32: STORE(uint32_t, int_in(c, j, 0, UINT32_MAX)); break;
    case D5_U64: STORE(uint64_t, uint64_in(c, j)); break;
    case D5_F8E4M3FN:
    case D5_F8E4M3FNUZ:
    case D5_F8E5M2:
    case D5_F8E5M2FNUZ:
    case D5_F4E2M1: STORE(uint8_t, d5_narrow_from_f64(t, half_source(c, j), 0)); break;
    case D5_F8E8M0:
        STORE(uint8_t, d5_f8e8m0_from_f32((float)half_source(c, j), 1, D5_ROUND_UP));
        break;
    case D5_I4: STORE(int8_t, int_in(c, j, -8, 7)); break;
    case D5_U4: STORE(uint8_t, int_in(c, j, 0, 15)); break;
    case D5_I2: STORE(int8_t, int_in(c, j, -2, 1)); break;
    case D5_U2: STORE(uint8_t, int_in(c, j, 0, 3)); break;
    case D5_STRING: /* refused by d5_convert */
    case D5_DTYPE_INVALID:
    case D5_DTYPE_COUNT: break;
    }
}

#undef STORE

/* 1 when the fast loops handled the pair. */
static int convert_fast(const void *src, d5_dtype st, void *dst, d5_dtype dt, size_t n)
{
    if (st == D5_F32 && dt == D5_F16)
        f32_to_f16(src, dst, n);
    else if (st == D5_F16 && dt == D5_F32)
        f16_to_f32(src, dst, n);
    else if (st == D5_F32 && dt == D5_BF16)
        f32_to_bf16(src, dst, n);
    else if (st == D5_BF16 && dt == D5_F32)
        bf16_to_f32(src, dst, n);
    else if (st == dt && st != D5_BOOL)
        memmove(dst, src, n * d5_dtype_size(st));
    else
        return 0;
    return 1;
}

d5_status d5_convert(const void *src, d5_dtype src_dtype, void *dst, d5_dtype dst_dtype, size_t n)
{
    size_t ss = d5_dtype_size(src_dtype), ds = d5_dtype_size(dst_dtype);
    if (ss == 0 || ds == 0)
        return d5_error(D5_ERR_INVALID, "d5_convert: invalid data type %d -> %d", (int)src_dtype,
                        (int)dst_dtype);
    if (src_dtype == D5_STRING || dst_dtype == D5_STRING) {
        if (src_dtype == dst_dtype && n > 0 && src && dst && src != dst)
            memmove(dst, src, n * ss); /* the pointers */
        else if (src_dtype != dst_dtype)
            return d5_error(D5_ERR_UNSUPPORTED,
                            "d5_convert: %s -> %s: strings convert to and from numbers only "
                            "through Cast",
                            d5_dtype_name(src_dtype), d5_dtype_name(dst_dtype));
        return D5_OK;
    }
    if (n == 0) return D5_OK;
    if (!src || !dst) return d5_error(D5_ERR_INVALID, "d5_convert: NULL buffer");
    if (n > SIZE_MAX / 8)
        return d5_error(D5_ERR_RANGE, "d5_convert: %zu elements exceed the address space", n);
    uintptr_t s0 = (uintptr_t)src, d0 = (uintptr_t)dst;
    if (s0 < d0 + n * ds && d0 < s0 + n * ss && !(s0 == d0 && ss == ds))
        return d5_error(D5_ERR_INVALID,
                        "d5_convert: the %s source and %s destination overlap without being the "
                        "same buffer of equal element sizes",
                        d5_dtype_name(src_dtype), d5_dtype_name(dst_dtype));
    if (convert_fast(src, src_dtype, dst, dst_dtype, n)) return D5_OK;
    chunk c;
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t k = n - off < CHUNK ? n - off : CHUNK;
        load(src, src_dtype, off, k, &c);
        store(&c, dst, dst_dtype, off, k);
    }
    return D5_OK;
}
