/* Cast (ONNX opset 13; opset 19's saturate only concerns float8 types, which
 * d5 does not have): converts the input to the data type `to`, a TensorProto
 * data type number. The ref backend casts between float32, float64, int64,
 * int32, int16, int8, uint8 and bool; float16 and bfloat16 exist in d5 but not
 * in this backend's conversions.
 *
 * The results follow numpy's astype on x86-64: floating point to integer
 * truncates toward zero; a value outside the target's range wraps modulo
 * 2^bits, except that NaN, infinities and values outside the int32 range (for
 * targets of 32 bits or fewer) or the int64 range (int64) become the smallest
 * int32 (int64) value, reduced the same way. Integer to narrower integer wraps.
 * Anything to bool is "nonzero" (NaN is true). Integers are carried as doubles,
 * exact up to 2^53.
 *
 * Gradient: passed through when input and output are both floating point;
 * otherwise none flows (the input gradient is zero).
 * https://onnx.ai/onnx/operators/onnx__Cast.html */
#include "util.h"

#include <math.h>

typedef struct cast {
    int32_t from, to;
} cast;

/* ONNX TensorProto.DataType numbers and the d5 data types they map to. */
static const struct {
    int64_t onnx;
    const char *name;
    int32_t dtype;
} types[] = {
    {1, "FLOAT", D5_F32},      {2, "UINT8", D5_U8},     {3, "INT8", D5_I8},
    {5, "INT16", D5_I16},      {6, "INT32", D5_I32},    {7, "INT64", D5_I64},
    {9, "BOOL", D5_BOOL},      {10, "FLOAT16", D5_F16}, {11, "DOUBLE", D5_F64},
    {16, "BFLOAT16", D5_BF16},
};

static int is_float(int32_t dtype)
{
    return dtype == D5_F32 || dtype == D5_F64;
}

static d5_status cast_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Cast: input 0 is required");
    const d5_attr *a = d5_attrs_find(attrs, "to");
    if (!a) return d5_error(D5_ERR_INVALID, "Cast: attribute 'to' is required");
    int64_t to;
    d5_status s = d5_attrs_int(attrs, "to", 0, &to);
    if (s != D5_OK) return s;
    int32_t dtype = D5_DTYPE_INVALID;
    size_t k = 0;
    for (; k < sizeof types / sizeof types[0]; k++)
        if (types[k].onnx == to) {
            dtype = types[k].dtype;
            break;
        }
    if (dtype == D5_DTYPE_INVALID)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Cast: attribute 'to' is %lld, a data type d5 does not have (d5 has "
                        "FLOAT 1, UINT8 2, INT8 3, INT16 5, INT32 6, INT64 7, BOOL 9, FLOAT16 10, "
                        "DOUBLE 11, BFLOAT16 16)",
                        (long long)to);
    if (dtype == D5_F16 || dtype == D5_BF16)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Cast (ref): casting to %s (to = %lld) is not supported by the ref "
                        "backend, which handles float32, float64, integers and bool",
                        types[k].name, (long long)to);
    cast *c = d5_alloc(sizeof *c, "Cast");
    if (!c) return D5_ERR_NOMEM;
    c->from = in[0].desc.dtype;
    c->to = dtype;
    *state = c;
    out[0] = in[0].desc;
    out[0].dtype = dtype;
    return D5_OK;
}

/* The value an integer target of `bits` bits (signed unless uns) holds for
 * the integer-valued v: v modulo 2^bits, in the target's range. */
static double wrap(double v, int bits, int uns)
{
    double m = ldexp(1.0, bits);
    double r = fmod(v, m);
    if (r < 0) r += m;
    if (!uns && r >= m / 2) r -= m;
    return r;
}

static double convert(double v, int32_t from, int32_t to)
{
    if (is_float(to) || to == D5_BOOL) return v; /* the wrapper rounds or tests != 0 */
    if (to == D5_I64) {
        if (!is_float(from)) return v;
        return v >= -0x1p63 && v < 0x1p63 ? trunc(v) : -0x1p63;
    }
    int bits = (int)(8 * d5_dtype_size((d5_dtype)to));
    if (is_float(from)) v = v >= -0x1p31 && v < 0x1p31 ? trunc(v) : -0x1p31;
    return wrap(v, bits, to == D5_U8);
}

static d5_status cast_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)nin;
    (void)nout;
    const cast *c = state;
    for (int64_t i = 0; i < out[0].numel; i++)
        out[0].data[i] = convert(in[0].data[i], c->from, c->to);
    return D5_OK;
}

static d5_status cast_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                               int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    (void)in;
    const cast *c = state;
    if (!gin[0].data || !is_float(c->from) || !is_float(c->to)) return D5_OK;
    for (int64_t i = 0; i < out[0].numel; i++) gin[0].data[i] = gout[0].data[i];
    return D5_OK;
}

D5_REF_OPERATOR(Cast, 1, 1, 1, 1, cast_create, cast_forward, cast_backward, NULL, NULL);
