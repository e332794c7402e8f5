/* Cast (ONNX opsets 1, 6, 9, 13, 19, 21, 23, 24): converts the input to the
 * data type `to`, a TensorProto data type number (a type name such as
 * "FLOAT" in opset 1). Every pair of d5's types is supported, the float8,
 * float4, int4 and int2 types of opsets 19 to 24 included, and STRING
 * both ways (cast_string.c: numbers as numpy writes them, text read as
 * numbers); complex is not a d5 type and is refused by name.
 *
 * Unlike the other reference operators, Cast works on the tensors' own types
 * rather than through doubles, so that 64-bit integers convert exactly. The
 * results are those of ONNX's reference implementation, which is numpy's
 * astype on x86-64:
 *   - to float32, float64, float16: the nearest value, ties to even, rounded
 *     once; beyond the type's range, infinity (65520 and up for float16).
 *   - to bfloat16, from opset 19 on: the nearest value, ties to even, as for
 *     every other floating-point target. Opset 19 is where the operator's
 *     page specifies a rule for conversions to narrower floating-point types
 *     (float8: round to nearest even), and ONNX's reference and its later test
 *     data round bfloat16 so (test_cast_FLOAT_to_BFLOAT16 of ONNX 1.16 and
 *     after: 0.48033667 -> 0x3EF6).
 *   - to bfloat16 in opsets 13 to 18 (bfloat16 came with 13; the page says
 *     nothing of its rounding): the value as float32 (rounded to nearest
 *     even), then truncated to its top 16 bits, as ONNX's reference of those
 *     opsets and its test data do (test_cast_FLOAT_to_BFLOAT16 of ONNX 1.12,
 *     opset 13: 0.48033667 -> 0x3EF5). NaN stays a quiet NaN.
 *   - floating point (float16 and bfloat16 through float32) to an integer:
 *     truncated toward zero. Then, as x86-64's conversions do: for int64, a
 *     value outside int64's range, NaN or an infinity gives INT64_MIN; for
 *     int32, int16, int8, uint16 and uint8, the value goes through int32 (with
 *     INT32_MIN for what int32 cannot hold) and wraps modulo 2^bits; uint32
 *     and uint64 take values from 2^31 (2^63) on as value - 2^31 (2^63)
 *     through int32 (int64) with the top bit set again, others through int32
 *     (int64). So 300.7 -> uint8 44, -1.5 -> uint32 4294967295, NaN -> int32
 *     INT32_MIN, NaN -> uint8 0.
 *   - integer to integer: two's complement wrapping (keeps the low bits).
 *   - anything to bool: nonzero (NaN is true); bool to anything: 0 or 1.
 *   - to float8 E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ and float4 E2M1: the nearest
 *     value, ties to even; past the largest finite value (after rounding)
 *     the largest value when `saturate` (the default), else infinity (E5M2)
 *     or NaN; float4 always saturates and makes NaN 6 (d5_narrow_from_f64).
 *   - to float8 E8M0: ONNX's rule on the float32's bits with `round_mode`
 *     (up, the default; down; nearest) and `saturate` (d5_f8e8m0_from_f32).
 *   - floating point to int4, uint4, int2, uint2: rounded to the nearest
 *     integer, ties to even (ONNX's int4 and int2 pages); out of range (which
 *     the operator's page leaves undefined) clipped to the type's range in
 *     opsets 21 to 23, as ONNX's reference of those opsets and its test data
 *     (ONNX 1.17, 1.18: -9 -> int4 -8), and the low bits from opset 24 on, as
 *     ONNX 1.19 and after (-9 -> 7). Integers: the low bits. Narrow types
 *     widen exactly.
 *
 * Gradient: converted from the output's type to the input's when both are
 * floating point; otherwise none flows (the input gradient is zero).
 * https://onnx.ai/onnx/operators/onnx__Cast.html */
#include "cast_string.h"
#include "util.h"

#include <math.h>
#include <string.h>

typedef struct cast {
    int32_t from, to;
    int64_t numel;
    int bf16_nearest;       /* opset 19 on: to bfloat16 rounds to nearest even */
    int saturate;           /* to float8: out of range gives the largest value */
    int clip_small;         /* opsets 21 to 23: floating point to 4 and 2 bits clipped */
    d5_round_mode rounding; /* to float8 E8M0 */
    d5_strpool pool;        /* to STRING: the output's strings, until the next forward */
} cast;

/* ONNX TensorProto.DataType numbers, their names, and the d5 type of each
 * (0: none). */
static const struct {
    int64_t onnx;
    const char *name;
    int32_t dtype;
} types[] = {
    {1, "FLOAT", D5_F32},
    {2, "UINT8", D5_U8},
    {3, "INT8", D5_I8},
    {4, "UINT16", D5_U16},
    {5, "INT16", D5_I16},
    {6, "INT32", D5_I32},
    {7, "INT64", D5_I64},
    {8, "STRING", D5_STRING},
    {9, "BOOL", D5_BOOL},
    {10, "FLOAT16", D5_F16},
    {11, "DOUBLE", D5_F64},
    {12, "UINT32", D5_U32},
    {13, "UINT64", D5_U64},
    {14, "COMPLEX64", 0},
    {15, "COMPLEX128", 0},
    {16, "BFLOAT16", D5_BF16},
    {17, "FLOAT8E4M3FN", D5_F8E4M3FN},
    {18, "FLOAT8E4M3FNUZ", D5_F8E4M3FNUZ},
    {19, "FLOAT8E5M2", D5_F8E5M2},
    {20, "FLOAT8E5M2FNUZ", D5_F8E5M2FNUZ},
    {21, "UINT4", D5_U4},
    {22, "INT4", D5_I4},
    {23, "FLOAT4E2M1", D5_F4E2M1},
    {24, "FLOAT8E8M0", D5_F8E8M0},
    {25, "UINT2", D5_U2},
    {26, "INT2", D5_I2},
};
#define NTYPES (sizeof types / sizeof types[0])

/* The ONNX data type number of a d5 type (CastLike's target); 0 for none. */
int64_t d5__cast_onnx_type(int32_t dtype);
int64_t d5__cast_onnx_type(int32_t dtype)
{
    for (size_t k = 0; k < NTYPES; k++)
        if (types[k].dtype && types[k].dtype == dtype) return types[k].onnx;
    return 0;
}

/* The d5 type of an ONNX data type number (QuantizeLinear's output_dtype); 0
 * for none. */
int32_t d5__cast_d5_type(int64_t onnx);
int32_t d5__cast_d5_type(int64_t onnx)
{
    for (size_t k = 0; k < NTYPES; k++)
        if (types[k].onnx == onnx) return types[k].dtype;
    return 0;
}

/* The table row of attribute `to`: an INT, or before opset 6 a STRING. */
static d5_status target_row(const d5_attrs *attrs, size_t *row)
{
    const d5_attr *a = d5_attrs_find(attrs, "to");
    if (!a) return d5_error(D5_ERR_INVALID, "Cast: attribute 'to' is required");
    if (a->type == D5_ATTR_STRING) {
        for (size_t k = 0; k < NTYPES; k++)
            if (a->s && strcmp(a->s, types[k].name) == 0) {
                *row = k;
                return D5_OK;
            }
        return d5_error(D5_ERR_INVALID, "Cast: attribute 'to' is '%s', not an ONNX data type name",
                        a->s ? a->s : "");
    }
    int64_t to;
    d5_status s = d5_attrs_int(attrs, "to", 0, &to);
    if (s != D5_OK) return s;
    for (size_t k = 0; k < NTYPES; k++)
        if (types[k].onnx == to) {
            *row = k;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID, "Cast: attribute 'to' is %lld, not an ONNX data type (1..%lld)",
                    (long long)to, (long long)types[NTYPES - 1].onnx);
}

static d5_status cast_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Cast: input 0 is required");
    if (d5_dtype_size((d5_dtype)in[0].desc.dtype) == 0)
        return d5_error(D5_ERR_INVALID, "Cast: input 0 has invalid data type %d",
                        (int)in[0].desc.dtype);
    size_t row = 0;
    int64_t opset, saturate;
    const char *round_mode = NULL;
    d5_round_mode rounding = D5_ROUND_UP;
    d5_status s = target_row(attrs, &row);
    if (s == D5_OK) s = d5__ref_opset("Cast", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_int(attrs, "saturate", 1, &saturate);
    if (s == D5_OK) s = d5_attrs_string(attrs, "round_mode", "up", &round_mode);
    if (s == D5_OK && d5_round_mode_parse(round_mode, &rounding) != D5_OK)
        s = d5_error(D5_ERR_INVALID,
                     "Cast: attribute round_mode is '%s'; expected up, down or "
                     "nearest",
                     round_mode);
    if (s != D5_OK) return s;
    if (!types[row].dtype)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Cast: casting to %s (to = %lld) is not supported: d5 has no %s tensors "
                        "(it has every other ONNX type up to INT2 = 26)",
                        types[row].name, (long long)types[row].onnx, types[row].name);
    size_t bytes;
    d5_tensor_desc o = in[0].desc;
    o.dtype = types[row].dtype;
    if ((s = d5_tensor_desc_bytes(&o, &bytes)) != D5_OK) return s;
    cast *c = d5_calloc(1, sizeof *c, "Cast");
    if (!c) return D5_ERR_NOMEM;
    c->from = in[0].desc.dtype;
    c->to = types[row].dtype;
    c->numel = d5_tensor_desc_numel(&o);
    c->bf16_nearest = opset >= 19;
    c->saturate = saturate != 0;
    c->clip_small = opset <= 23;
    c->rounding = rounding;
    *state = c;
    out[0] = o;
    return D5_OK;
}

enum { CHUNK = 512 };

/* ---- To bfloat16 before opset 19: through float32, truncated ---- */

static d5_status to_bf16(const void *src, int32_t from, uint16_t *dst, size_t n)
{
    float f[CHUNK];
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t k = n - off < CHUNK ? n - off : CHUNK;
        d5_status s = d5_convert((const char *)src + off * d5_dtype_size((d5_dtype)from),
                                 (d5_dtype)from, f, D5_F32, k);
        if (s != D5_OK) return s;
        for (size_t j = 0; j < k; j++) {
            uint32_t u;
            memcpy(&u, &f[j], sizeof u);
            uint16_t h = (uint16_t)(u >> 16);
            /* A NaN whose payload sits in the low half would truncate to
             * infinity: it stays a quiet NaN. */
            dst[off + j] = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)(h | 0x40u) : h;
        }
    }
    return D5_OK;
}

/* ---- Integers as 64-bit patterns (sign-extended), stored by their low bits ---- */

#define LOAD_BITS(T)                                                                               \
    for (size_t j = 0; j < k; j++) bits[j] = (uint64_t)(int64_t)((const T *)src)[off + j]
#define LOAD_UBITS(T)                                                                              \
    for (size_t j = 0; j < k; j++) bits[j] = ((const T *)src)[off + j]

static void load_bits(const void *src, int32_t dt, size_t off, size_t k, uint64_t *bits)
{
    switch (dt) {
    case D5_I8: LOAD_BITS(int8_t); break;
    case D5_I16: LOAD_BITS(int16_t); break;
    case D5_I32: LOAD_BITS(int32_t); break;
    case D5_I64: LOAD_BITS(int64_t); break;
    case D5_U8: LOAD_UBITS(uint8_t); break;
    case D5_U16: LOAD_UBITS(uint16_t); break;
    case D5_U32: LOAD_UBITS(uint32_t); break;
    case D5_U64: LOAD_UBITS(uint64_t); break;
    case D5_I4:
    case D5_I2: LOAD_BITS(int8_t); break;
    case D5_U4:
    case D5_U2: LOAD_UBITS(uint8_t); break;
    default: /* bool */
        for (size_t j = 0; j < k; j++) bits[j] = ((const uint8_t *)src)[off + j] != 0;
        break;
    }
}

#define STORE_BITS(T)                                                                              \
    for (size_t j = 0; j < k; j++) ((T *)dst)[off + j] = (T)bits[j]

static void store_bits(const uint64_t *bits, void *dst, int32_t dt, size_t off, size_t k)
{
    switch (dt) {
    case D5_I8: STORE_BITS(int8_t); break;
    case D5_I16: STORE_BITS(int16_t); break;
    case D5_I32: STORE_BITS(int32_t); break;
    case D5_I64: STORE_BITS(int64_t); break;
    case D5_U8: STORE_BITS(uint8_t); break;
    case D5_U16: STORE_BITS(uint16_t); break;
    case D5_U32: STORE_BITS(uint32_t); break;
    case D5_I4: /* the low bits, sign-extended */
    case D5_I2: {
        unsigned bits_n = dt == D5_I4 ? 4u : 2u, sign = 1u << (bits_n - 1),
                 mask = (1u << bits_n) - 1;
        for (size_t j = 0; j < k; j++)
            ((int8_t *)dst)[off + j] =
                (int8_t)((int)(((unsigned)bits[j] & mask) ^ sign) - (int)sign);
        break;
    }
    case D5_U4:
        for (size_t j = 0; j < k; j++) ((uint8_t *)dst)[off + j] = (uint8_t)(bits[j] & 15u);
        break;
    case D5_U2:
        for (size_t j = 0; j < k; j++) ((uint8_t *)dst)[off + j] = (uint8_t)(bits[j] & 3u);
        break;
    default: STORE_BITS(uint64_t); break; /* uint64 */
    }
}

/* ---- Floating point to integers, as x86-64 converts ---- */

/* cvttsd2si: truncation, or the "integer indefinite" INT_MIN when the result
 * does not fit (NaN and infinities included). */
static uint64_t trunc32(double x)
{
    return (uint64_t)(int64_t)(x > -0x1p31 - 1 && x < 0x1p31 ? (int32_t)x : INT32_MIN);
}

static uint64_t trunc64(double x)
{
    return (uint64_t)(x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN);
}

static uint64_t float_bits(double x, int32_t to)
{
    switch (to) {
    case D5_I64: return trunc64(x);
    case D5_U64: return x >= 0x1p63 ? trunc64(x - 0x1p63) ^ (UINT64_C(1) << 63) : trunc64(x);
    case D5_U32: return x >= 0x1p31 ? trunc32(x - 0x1p31) ^ (UINT64_C(1) << 31) : trunc32(x);
    default: return trunc32(x); /* int32 and narrower: the low bits */
    }
}

/* Floating point to 4 or 2 bits: the nearest integer, ties to even; clipped
 * to the type's range first (clip != 0) or left to wrap. */
static uint64_t small_bits(double x, int32_t to, int clip)
{
    double lo = to == D5_I4   ? -8
                : to == D5_I2 ? -2
                              : 0,
           hi = to == D5_I4   ? 7
                : to == D5_U4 ? 15
                : to == D5_I2 ? 1
                              : 3;
    if (clip) x = x < lo ? lo : x > hi ? hi : x; /* NaN stays */
    return float_bits(nearbyint(x), to);
}

static d5_status to_int(const void *src, int32_t from, void *dst, int32_t to, size_t n, int clip)
{
    uint64_t bits[CHUNK];
    double f[CHUNK];
    size_t size = d5_dtype_size((d5_dtype)from);
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t k = n - off < CHUNK ? n - off : CHUNK;
        if (d5_dtype_is_float((d5_dtype)from) || d5_dtype_is_minifloat((d5_dtype)from)) {
            /* float16 and bfloat16 widen exactly: as numpy, through float32 */
            d5_status s = d5_convert((const char *)src + off * size, (d5_dtype)from, f, D5_F64, k);
            if (s != D5_OK) return s;
            int narrow = d5_dtype_bits((d5_dtype)to) < 8;
            for (size_t j = 0; j < k; j++)
                bits[j] = narrow ? small_bits(f[j], to, clip) : float_bits(f[j], to);
        } else {
            load_bits(src, from, off, k, bits);
        }
        store_bits(bits, dst, to, off, k);
    }
    return D5_OK;
}

/* ---- To float8 and float4 ---- */

/* Through double (float32 for E8M0, as ONNX's rule reads its bits): the
 * nearest code, saturated or not; E8M0 by its rounding mode. */
static d5_status to_minifloat(const cast *c, const void *src, uint8_t *dst, size_t n)
{
    double f[CHUNK];
    size_t size = d5_dtype_size((d5_dtype)c->from);
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t k = n - off < CHUNK ? n - off : CHUNK;
        d5_status s = d5_convert((const char *)src + off * size, (d5_dtype)c->from, f, D5_F64, k);
        if (s != D5_OK) return s;
        for (size_t j = 0; j < k; j++)
            dst[off + j] = c->to == D5_F8E8M0
                               ? d5_f8e8m0_from_f32((float)f[j], c->saturate, c->rounding)
                               : d5_narrow_from_f64((d5_dtype)c->to, f[j], c->saturate);
    }
    return D5_OK;
}

/* n elements between two numeric types. */
static d5_status cast_numbers(const cast *c, const void *src, void *dst, size_t n)
{
    if (d5_dtype_is_minifloat((d5_dtype)c->to) && c->from != c->to)
        return to_minifloat(c, src, dst, n);
    if (c->to == D5_BF16 && c->from != D5_BF16 && !c->bf16_nearest)
        return to_bf16(src, c->from, dst, n);
    if (d5_dtype_is_float((d5_dtype)c->to) || c->to == D5_BOOL || c->from == c->to)
        return d5_convert(src, (d5_dtype)c->from, dst, (d5_dtype)c->to, n);
    return to_int(src, c->from, dst, c->to, n, c->clip_small);
}

/* ---- From STRING: read as float32, as integers, or as float64 and cast ---- */

static d5_status from_strings(const cast *c, const char *const *src, void *dst, size_t n)
{
    double f[CHUNK];
    int64_t iv[CHUNK];
    uint64_t bits[CHUNK];
    uint8_t is_float[CHUNK];
    d5_dtype to = (d5_dtype)c->to;
    int integer = !d5_dtype_is_float(to) && !d5_dtype_is_minifloat(to) && to != D5_BOOL;
    int is_unsigned =
        to == D5_U8 || to == D5_U16 || to == D5_U32 || to == D5_U64 || to == D5_U4 || to == D5_U2;
    cast via = *c;
    via.from = D5_F64;
    d5_status s = D5_OK;
    for (size_t off = 0; s == D5_OK && off < n; off += CHUNK) {
        size_t k = n - off < CHUNK ? n - off : CHUNK;
        if (to == D5_F32) {
            s = d5__cast_parse_f64(src + off, k, off, NULL, (float *)dst + off, 0);
        } else if (integer) {
            s = d5__cast_parse_i64(src + off, k, off, is_unsigned, iv, f, is_float);
            int narrow = d5_dtype_bits(to) < 8;
            for (size_t j = 0; s == D5_OK && j < k; j++)
                bits[j] = !is_float[j] ? (uint64_t)iv[j]
                          : narrow     ? small_bits(f[j], to, c->clip_small)
                                       : float_bits(f[j], to);
            if (s == D5_OK) store_bits(bits, dst, to, off, k);
        } else {
            s = d5__cast_parse_f64(src + off, k, off, f, NULL, to == D5_BOOL);
            if (s == D5_OK) s = cast_numbers(&via, f, (char *)dst + off * d5_dtype_size(to), k);
        }
    }
    return s;
}

static d5_status cast_forward(void *state, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    cast *c = state;
    size_t n = (size_t)c->numel;
    if (c->to == D5_STRING) {
        d5_strpool_clear(&c->pool);
        return d5__cast_to_strings(in[0].data, (d5_dtype)c->from, out[0].data, n, &c->pool);
    }
    if (c->from == D5_STRING) return from_strings(c, in[0].data, out[0].data, n);
    return cast_numbers(c, in[0].data, out[0].data, n);
}

static void cast_destroy(void *state)
{
    cast *c = state;
    if (c) d5_strpool_clear(&c->pool);
    d5_free(c);
}

static d5_status cast_backward(void *state, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    d5_tensor *gin = call->grad_inputs;
    const cast *c = state;
    if (!gin[0].data) return D5_OK;
    size_t n = (size_t)c->numel;
    if (d5_dtype_is_float((d5_dtype)c->from) && d5_dtype_is_float((d5_dtype)c->to) && gout[0].data)
        return d5_convert(gout[0].data, (d5_dtype)c->to, gin[0].data, (d5_dtype)c->from, n);
    memset(gin[0].data, 0, n * d5_dtype_size((d5_dtype)c->from));
    return D5_OK;
}

static void cast_cost(void *state, double *flops, double *bytes)
{
    const cast *c = state;
    *flops = 0;
    *bytes = (double)c->numel *
             (double)(d5_dtype_size((d5_dtype)c->from) + d5_dtype_size((d5_dtype)c->to));
}

/* clang-format off */
const d5_op_desc d5__op_ref_Cast = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64 | D5_OP_HAS_BACKWARD, .name = "Cast",
    .backend = "ref", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = cast_create, .forward = cast_forward, .backward = cast_backward, .destroy = cast_destroy,
    .cost = cast_cost};
/* clang-format on */
