/* QuantizeLinear (ONNX opsets 10, 13, 19, 21, 23 and 25): x (float32 or
 * int32; from opset 19 also float16 and bfloat16) to the type of the
 * optional y_zero_point, or of the attribute output_dtype (opset 21), or
 * uint8: uint8 and int8; from opset 19 float8 (E4M3FN, E4M3FNUZ, E5M2,
 * E5M2FNUZ); from 21 uint16, int16, uint4, int4; from 23 float4 E2M1; from 25
 * uint2, int2. For an integer type
 *   y = saturate(round(x / y_scale) + y_zero_point),
 * rounding half to even, saturating to the type's range; NaN gives the zero
 * point. For float8, y = x / y_scale rounded to the nearest code, ties to
 * even, and under `saturate` (the default) clipped to the type's largest
 * value first, else past it NaN (infinity for E5M2); the zero point is not
 * added, as in ONNX's reference. For float4, x / y_scale + y_zero_point,
 * always saturated. The scale and zero point hold one value (per tensor) or,
 * from opset 13, one per index of x along `axis` (default 1), or, from opset
 * 21 with block_size > 0, one per block of block_size elements along the
 * axis (their shape x's but ceil(x.shape[axis] / block_size) there). The
 * quotient is formed in float32 for floating-point x, as ONNX's reference
 * and ONNX Runtime do, and in double for int32 x; opset 23's `precision`
 * other than float32 is refused. The scale is float32, or from opset 19 of
 * x's type (the schema's T1).
 * https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html */
#include "quant.h"

#include <math.h>

typedef struct quantize {
    d5_quant_axis axis;
    double lo, hi;      /* an integer type's range */
    int float_quotient; /* x / scale formed in float32 */
    int minifloat;      /* 1: float8 (no zero point added), 2: float4 */
    double max;         /* a float type's largest value, 0 to leave it unsaturated */
} quantize;

static d5_status quantize_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const char *op = "QuantizeLinear";
    int64_t opset;
    d5_status s = d5__ref_opset(op, attrs, D5__OPSET_NEWEST, &opset);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < 2; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "QuantizeLinear: input %d (%s) is required", (int)i,
                            i ? "y_scale" : "x");
    int32_t xt = in[0].desc.dtype, st = in[1].desc.dtype;
    int half = xt == D5_F16 || xt == D5_BF16;
    if (xt != D5_F32 && xt != D5_I32 && !(half && opset >= 19))
        return d5_error(D5_ERR_INVALID,
                        "QuantizeLinear: input 0 (x) has data type %s, expected float32 or int32%s",
                        d5_dtype_name((d5_dtype)xt),
                        opset >= 19 ? ", float16 or bfloat16"
                                    : " (float16 and bfloat16 from opset 19)");
    if (st != D5_F32 && !(opset >= 19 && st == xt))
        return d5_error(D5_ERR_INVALID,
                        "QuantizeLinear: input 1 (y_scale) has data type %s, expected float32%s",
                        d5_dtype_name((d5_dtype)st),
                        opset >= 19 ? " or x's type" : " (x's type from opset 19)");
    int64_t output_dtype = 0, saturate = 1, precision = 0;
    s = d5_attrs_int(attrs, "output_dtype", 0, &output_dtype);
    if (s == D5_OK) s = d5_attrs_int(attrs, "saturate", 1, &saturate);
    if (s == D5_OK) s = d5_attrs_int(attrs, "precision", 0, &precision);
    if (s != D5_OK) return s;
    if (precision != 0 && precision != 1)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "QuantizeLinear: attribute precision is %lld; only float32 (1) is "
                        "implemented",
                        (long long)precision);
    int32_t yt = D5_U8;
    if (output_dtype) {
        yt = d5__cast_d5_type(output_dtype);
        if (!yt)
            return d5_error(D5_ERR_INVALID,
                            "QuantizeLinear: attribute output_dtype is %lld, not a data type d5 "
                            "has",
                            (long long)output_dtype);
    }
    if (d5__has_input(in, nin, 2)) {
        if (output_dtype && in[2].desc.dtype != yt)
            return d5_error(D5_ERR_INVALID,
                            "QuantizeLinear: output_dtype is %s but y_zero_point is %s; they "
                            "must agree",
                            d5_dtype_name((d5_dtype)yt), d5_dtype_name((d5_dtype)in[2].desc.dtype));
        yt = in[2].desc.dtype;
    }
    quantize q = {.axis = {1, 1, 1, 0}, .float_quotient = xt != D5_I32};
    int64_t since = d5__quant_since(yt);
    if (!since || yt == D5_I32 || opset < since)
        return d5_error(D5_ERR_INVALID,
                        "QuantizeLinear: the output type %s (y_zero_point's or output_dtype's) "
                        "is %s; expected uint8 or int8, float8 from opset 19, uint16, int16, "
                        "uint4 or int4 from 21, float4e2m1 from 23, uint2 or int2 from 25",
                        d5_dtype_name((d5_dtype)yt),
                        since && yt != D5_I32 ? "too new for this opset" : "not a quantised type");
    if (d5_dtype_is_minifloat((d5_dtype)yt)) {
        q.minifloat = yt == D5_F4E2M1 ? 2 : 1;
        q.max = saturate || yt == D5_F4E2M1 ? d5__quant_float_max(yt) : 0;
    } else {
        d5__quant_range(yt, &q.lo, &q.hi);
    }
    s = d5__quant_axis(op, in, nin, attrs, opset, "y_scale", "y_zero_point", &q.axis);
    if (s != D5_OK) return s;
    out[0] = in[0].desc;
    out[0].dtype = yt;
    quantize *p = d5_alloc(sizeof *p, op);
    if (!p) return D5_ERR_NOMEM;
    *p = q;
    *state = p;
    return D5_OK;
}

static d5_status quantize_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const quantize *q = state;
    const double *x = in[0].data, *scale = in[1].data, *zp = nin > 2 ? in[2].data : NULL;
    for (int64_t i = 0; i < out[0].numel; i++) {
        int64_t p = d5__quant_param(&q->axis, i);
        double z = zp ? zp[p] : 0, v;
        if (q->float_quotient) {
            float f = (float)x[i] / (float)scale[p];
            v = f;
        } else {
            v = x[i] / scale[p];
        }
        if (q->minifloat) { /* the wrapper rounds to the type, ties to even */
            if (q->minifloat == 2) v += z;
            if (q->max > 0 && !isnan(v)) v = v < -q->max ? -q->max : v > q->max ? q->max : v;
            out[0].data[i] = v;
            continue;
        }
        out[0].data[i] = d5__quant_saturate(d5__round_half_even(v) + z, q->lo, q->hi, z);
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(QuantizeLinear, 2, 3, 1, 1, quantize_create, quantize_forward, NULL,
                            d5__flops_per_input);
