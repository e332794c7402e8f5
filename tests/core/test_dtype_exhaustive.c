/* Every float32 bit pattern through d5_convert to float16 and bfloat16,
 * against an independent rounding: the 16-bit values decoded with ldexp, the
 * midpoints between neighbours computed in double, and each float32 mapped to
 * the neighbour it is nearer to, ties to the even code (float32 bit patterns
 * of one sign are ordered as their values, so the expected codes are runs
 * between midpoints). NaN must stay NaN, quiet, with its sign. Back: every
 * 16-bit pattern to float32 is its exact value.
 *
 * Each sweep is its own test (the suite runs them on two jobs): in a release
 * build 4 s (bfloat16) and 7 s (float16) of CPU on the 2-core development
 * machine at a load average of 10, most of it in d5_convert. Under
 * AddressSanitizer, whose instrumentation makes the loops several times
 * slower, one chunk of 65,536 patterns in 16 is checked, with every boundary
 * inside those chunks. */
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define CHUNK_STRIDE 16u
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHUNK_STRIDE 16u
#endif
#endif
#ifndef CHUNK_STRIDE
#define CHUNK_STRIDE 1u
#endif

#define CHUNK (1u << 16)

typedef struct format {
    d5_dtype dtype;
    const char *name;
    int mant;       /* stored significand bits */
    int bias;       /* exponent bias */
    uint16_t inf;   /* the code of +infinity */
    uint16_t quiet; /* the quiet bit of a NaN */
} format;

static const format f16 = {D5_F16, "float16", 10, 15, 0x7c00, 0x0200};
static const format bf16 = {D5_BF16, "bfloat16", 7, 127, 0x7f80, 0x0040};

/* The value of a non-negative code below NaN; the infinity code gives 2^(emax
 * + 1), the value it would have with an unbounded exponent, which is what
 * IEEE 754's rounding compares against before it overflows. */
static double decode(const format *f, uint32_t h)
{
    uint32_t e = h >> f->mant, m = h & ((1u << f->mant) - 1);
    if (e == 0) return ldexp((double)m, 1 - f->bias - f->mant);
    return ldexp((double)(m + (1u << f->mant)), (int)e - f->bias - f->mant);
}

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* The largest non-negative float32 bit pattern that rounds to code h < inf:
 * the one below the midpoint to h + 1, or the midpoint itself when the tie
 * goes to h (h even). The midpoint has one bit more than the 16-bit format,
 * so float32 holds it exactly. */
static uint32_t last_of(const format *f, uint32_t h)
{
    double mid = (decode(f, h) + decode(f, h + 1)) / 2;
    cr_assert_eq((double)(float)mid, mid, "%s: midpoint %a is not a float32", f->name, mid);
    uint32_t mb = f32_bits((float)mid);
    return (h & 1) ? mb - 1 : mb;
}

static int is_quiet_nan(const format *f, uint16_t r, uint16_t sign)
{
    return (r & 0x8000) == sign && (r & 0x7fff) > f->inf && (r & f->quiet);
}

/* Converts every float32 pattern to f and counts the codes that differ from
 * the expected ones (the first few are printed). */
static void sweep(const format *f)
{
    float *src = malloc(2 * CHUNK * sizeof *src);
    uint16_t *dst = malloc(2 * CHUNK * sizeof *dst), *want = malloc(CHUNK * sizeof *want);
    cr_assert(src && dst && want);
    uint64_t bad = 0, checked = 0;
    uint32_t h = 0, last = last_of(f, 0);
    /* Non-negative patterns u, ordered as their values, and their negatives. */
    for (uint32_t c = 0; c < 0x80000000u / CHUNK; c += CHUNK_STRIDE) {
        uint32_t u0 = c * CHUNK;
        for (uint32_t i = 0; i < CHUNK; i++) {
            uint32_t u = u0 + i, v = u | 0x80000000u;
            memcpy(&src[i], &u, sizeof u);
            memcpy(&src[CHUNK + i], &v, sizeof v);
        }
        cr_assert_eq(d5_convert(src, D5_F32, dst, f->dtype, 2 * CHUNK), D5_OK, "%s",
                     d5_last_error());
        checked += 2 * CHUNK;
        /* The expected codes come in runs: h up to the last pattern of h.
         * Mismatches are counted without branches; a chunk is looked at
         * again only when one is wrong. */
        uint32_t finite =
            u0 > 0x7f800000u ? 0 : (0x7f800001u - u0 < CHUNK ? 0x7f800001u - u0 : CHUNK);
        uint32_t wrong = 0;
        for (uint32_t i = 0; i < finite;) {
            while (u0 + i > last) last = ++h < f->inf ? last_of(f, h) : 0xffffffffu;
            uint32_t end = last - u0 >= finite - 1 ? finite : last - u0 + 1;
            const uint16_t w = (uint16_t)h, wn = (uint16_t)(h | 0x8000);
            for (uint32_t j = i; j < end; j++) {
                want[j] = w;
                wrong += (dst[j] != w) | (dst[CHUNK + j] != wn);
            }
            i = end;
        }
        /* Each wrong pattern of the chunk, positive and negative. */
        for (uint32_t k = 0; wrong && k < 2 * CHUNK; k++) {
            uint32_t i = k % CHUNK, neg = k >= CHUNK, u = (u0 + i) | (neg ? 0x80000000u : 0);
            uint16_t expected = (uint16_t)(want[i] | (neg ? 0x8000 : 0));
            if (i >= finite || dst[k] == expected) continue;
            if (bad++ < 8)
                fprintf(stderr, "%s: float32 0x%08x gave 0x%04x, expected 0x%04x\n", f->name, u,
                        dst[k], expected);
        }
        /* NaN (the patterns past +infinity): quiet, with its sign. */
        for (uint32_t i = finite; i < CHUNK; i++)
            for (uint32_t neg = 0; neg < 2; neg++) {
                uint16_t r = dst[i + (neg ? CHUNK : 0)];
                if (is_quiet_nan(f, r, neg ? 0x8000 : 0)) continue;
                if (bad++ < 8)
                    fprintf(stderr, "%s: NaN 0x%08x gave 0x%04x\n", f->name,
                            (u0 + i) | (neg ? 0x80000000u : 0), r);
            }
    }
    free(src);
    free(dst);
    free(want);
    cr_assert_eq(h, f->inf, "%s: the sweep ended at code 0x%04x", f->name, h);
    cr_assert_eq(bad, 0, "%s: %llu of %llu float32 patterns converted wrongly", f->name,
                 (unsigned long long)bad, (unsigned long long)checked);
    cr_assert_eq(checked, ((uint64_t)1 << 32) / CHUNK_STRIDE, "%s: %llu checked", f->name,
                 (unsigned long long)checked);
}

Test(dtype_exhaustive, float32_to_float16, .timeout = D5_TIMEOUT(120))
{
    sweep(&f16);
}

Test(dtype_exhaustive, float32_to_bfloat16, .timeout = D5_TIMEOUT(120))
{
    sweep(&bf16);
}

/* Every 16-bit pattern to float32: its exact value with its sign; NaN stays
 * NaN, quiet, with its sign. */
static void widen(const format *f)
{
    uint16_t *src = malloc(65536 * sizeof *src);
    float *dst = malloc(65536 * sizeof *dst);
    cr_assert(src && dst);
    for (uint32_t i = 0; i < 65536; i++) src[i] = (uint16_t)i;
    cr_assert_eq(d5_convert(src, f->dtype, dst, D5_F32, 65536), D5_OK, "%s", d5_last_error());
    for (uint32_t i = 0; i < 65536; i++) {
        uint32_t a = i & 0x7fff, neg = i >> 15;
        cr_assert_eq(!!signbit(dst[i]), neg, "%s 0x%04x: sign", f->name, i);
        if (a > f->inf) {
            cr_assert(isnan(dst[i]) && (f32_bits(dst[i]) & 0x00400000u), "%s 0x%04x gave %a",
                      f->name, i, (double)dst[i]);
            continue;
        }
        double want = a == f->inf ? INFINITY : decode(f, a);
        cr_assert_eq(fabs((double)dst[i]), want, "%s 0x%04x gave %a, expected %a", f->name, i,
                     (double)dst[i], want);
    }
    free(src);
    free(dst);
}

Test(dtype_exhaustive, float16_and_bfloat16_to_float32_are_exact)
{
    widen(&f16);
    widen(&bf16);
}
