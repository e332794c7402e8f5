/* Cast to and from STRING: numbers as text, text as numbers.
 *
 * ONNX's Cast page asks for a plain floating-point representation ("314.15926")
 * and leaves the digits to the implementation; its reference and test data
 * use numpy's astype(str), which d5 follows:
 *   - floating point: the fewest significant digits that read back as the
 *     same value of the source type (float32 0.039187793, not 0.0391877926),
 *     positional with at least one digit after the point ("100.0", "-0.0")
 *     for magnitudes in [1e-4, 1e16) and zero, else scientific with a
 *     two-digit exponent at least ("1e-05", "1.5e+20"); "nan", "inf", "-inf";
 *   - integers in decimal; bool "True" and "False".
 * Text to numbers: a decimal or scientific number with optional sign and
 * surrounding blanks, "INF", "+INF", "-INF" and "NaN" in any case; read
 * directly as float32 for float32, as an integer for integer types (a
 * non-integral number is truncated toward zero, as Cast does for floats),
 * through float64 for the others; "true" and "false" for bool as well. Any
 * other text is D5_ERR_INVALID naming the element: the page leaves it
 * undefined. */
#include "cast_string.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Numbers to text ---- */

/* 1 when `text` reads back as element i of src (of type t). */
static int reads_back(const char *text, const void *src, d5_dtype t, size_t i)
{
    double v = strtod(text, NULL);
    switch (t) {
    case D5_F32: return strtof(text, NULL) == ((const float *)src)[i];
    case D5_F64: return v == ((const double *)src)[i];
    case D5_F16: return d5_f16_from_f64(v) == ((const uint16_t *)src)[i];
    case D5_BF16: return d5_bf16_from_f64(v) == ((const uint16_t *)src)[i];
    case D5_F8E8M0:
        return d5_f8e8m0_from_f32((float)v, 1, D5_ROUND_NEAREST) == ((const uint8_t *)src)[i];
    default: return d5_narrow_from_f64(t, v, 1) == ((const uint8_t *)src)[i]; /* float8, float4 */
    }
}

/* numpy's str of a floating-point value x, element i of src (of type t). */
static void format_float(double x, const void *src, d5_dtype t, size_t i, char *out, size_t size)
{
    if (isnan(x)) {
        snprintf(out, size, "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(out, size, x < 0 ? "-inf" : "inf");
        return;
    }
    /* The shortest "d.ddde+XX" that reads back: its digits and exponent. */
    char sci[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, x);
        if (reads_back(sci, src, t, i)) break;
    }
    char digits[24];
    size_t nd = 0;
    const char *c = sci + (sci[0] == '-');
    for (; *c && *c != 'e'; c++)
        if (isdigit((unsigned char)*c)) digits[nd++] = *c;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    int e = atoi(c + 1);
    const char *sign = signbit(x) ? "-" : "";
    double ax = fabs(x);
    if (ax == 0 || (ax >= 1e-4 && ax < 1e16)) {
        char buf[64];
        size_t k = 0;
        if (e >= 0) {
            for (int j = 0; j <= e; j++) buf[k++] = (size_t)j < nd ? digits[j] : '0';
            buf[k++] = '.';
            if ((size_t)e + 1 < nd)
                for (size_t j = (size_t)e + 1; j < nd; j++) buf[k++] = digits[j];
            else
                buf[k++] = '0';
        } else {
            buf[k++] = '0';
            buf[k++] = '.';
            for (int j = 0; j < -e - 1; j++) buf[k++] = '0';
            for (size_t j = 0; j < nd; j++) buf[k++] = digits[j];
        }
        buf[k] = '\0';
        snprintf(out, size, "%s%s", sign, buf);
    } else {
        snprintf(out, size, "%s%c%s%.*se%c%02d", sign, digits[0], nd > 1 ? "." : "",
                 (int)(nd > 1 ? nd - 1 : 0), digits + 1, e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
}

d5_status d5__cast_to_strings(const void *src, d5_dtype from, const char **dst, size_t n,
                              d5_strpool *pool)
{
    char text[80];
    for (size_t i = 0; i < n; i++) {
        switch (from) {
        case D5_STRING: dst[i] = ((const char *const *)src)[i]; continue;
        case D5_BOOL:
            snprintf(text, sizeof text, ((const uint8_t *)src)[i] ? "True" : "False");
            break;
        case D5_I8: snprintf(text, sizeof text, "%d", ((const int8_t *)src)[i]); break;
        case D5_I16: snprintf(text, sizeof text, "%d", ((const int16_t *)src)[i]); break;
        case D5_I32: snprintf(text, sizeof text, "%d", (int)((const int32_t *)src)[i]); break;
        case D5_I64:
            snprintf(text, sizeof text, "%lld", (long long)((const int64_t *)src)[i]);
            break;
        case D5_U8: snprintf(text, sizeof text, "%u", ((const uint8_t *)src)[i]); break;
        case D5_U16: snprintf(text, sizeof text, "%u", ((const uint16_t *)src)[i]); break;
        case D5_U32:
            snprintf(text, sizeof text, "%lu", (unsigned long)((const uint32_t *)src)[i]);
            break;
        case D5_U64:
            snprintf(text, sizeof text, "%llu", (unsigned long long)((const uint64_t *)src)[i]);
            break;
        case D5_I4:
        case D5_I2: snprintf(text, sizeof text, "%d", ((const int8_t *)src)[i]); break;
        case D5_U4:
        case D5_U2: snprintf(text, sizeof text, "%u", ((const uint8_t *)src)[i]); break;
        default: { /* floating point: its value exactly, as float64 */
            double x;
            d5_status s =
                d5_convert((const char *)src + i * d5_dtype_size(from), from, &x, D5_F64, 1);
            if (s != D5_OK) return s;
            format_float(x, src, from, i, text, sizeof text);
            break;
        }
        }
        if (!(dst[i] = d5_strpool_add(pool, text, strlen(text)))) return D5_ERR_NOMEM;
    }
    return D5_OK;
}

/* ---- Text to numbers ---- */

/* The end of a number read by strtod/strtoll, past trailing blanks: 1 when
 * nothing else follows. */
static int ends_clean(const char *end)
{
    while (isspace((unsigned char)*end)) end++;
    return *end == '\0';
}

static d5_status not_a_number(size_t i, const char *text, const char *what)
{
    return d5_error(D5_ERR_INVALID, "Cast: string element %zu is '%.60s', not %s", i, text, what);
}

d5_status d5__cast_parse_f64(const char *const *src, size_t n, size_t base, double *dst,
                             float *dst32, int boolean)
{
    for (size_t i = 0; i < n; i++) {
        const char *text = src[i] ? src[i] : "";
        char *end;
        if (boolean) {
            const char *t = text;
            while (isspace((unsigned char)*t)) t++;
            if (strncasecmp(t, "true", 4) == 0 && ends_clean(t + 4)) {
                dst[i] = 1;
                continue;
            }
            if (strncasecmp(t, "false", 5) == 0 && ends_clean(t + 5)) {
                dst[i] = 0;
                continue;
            }
        }
        errno = 0;
        if (dst32)
            dst32[i] = strtof(text, &end);
        else
            dst[i] = strtod(text, &end);
        if (end == text || !ends_clean(end)) return not_a_number(base + i, text, "a number");
    }
    return D5_OK;
}

d5_status d5__cast_parse_i64(const char *const *src, size_t n, size_t base, int is_unsigned,
                             int64_t *dst, double *fallback, uint8_t *is_float)
{
    for (size_t i = 0; i < n; i++) {
        const char *text = src[i] ? src[i] : "";
        char *end;
        errno = 0;
        is_float[i] = 0;
        if (is_unsigned) {
            const char *t = text;
            while (isspace((unsigned char)*t)) t++;
            unsigned long long u = *t == '-' ? 0 : strtoull(text, &end, 10);
            if (*t != '-' && end != text && ends_clean(end) && errno == 0) {
                dst[i] = (int64_t)u;
                continue;
            }
        } else {
            long long v = strtoll(text, &end, 10);
            if (end != text && ends_clean(end) && errno == 0) {
                dst[i] = v;
                continue;
            }
        }
        /* Not an integer of the type: as a float, which the caller converts. */
        errno = 0;
        fallback[i] = strtod(text, &end);
        if (end == text || !ends_clean(end)) return not_a_number(base + i, text, "a number");
        is_float[i] = 1;
    }
    return D5_OK;
}
