/* DequantizeLinear (ONNX opsets 10, 13, 19, 21, 23 and 25): x (uint8, int8 or
 * int32; from opset 19 float8 E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ; from 21
 * uint16, int16, uint4, int4; from 23 float4 E2M1; from 25 uint2, int2) to
 *   y = (x - x_zero_point) * x_scale
 * with the optional zero point (x's type) 0 when omitted; for int32 x it is
 * meant to be 0, and is subtracted when given; float8 and float4 take their
 * values. The scale and zero point hold one value (per tensor) or, from
 * opset 13, one per index of x along `axis` (default 1), or, from opset 21
 * with block_size > 0, one per block along the axis. y is float32, from
 * opset 19 of the scale's type (float32, float16 or bfloat16), and from
 * opset 23 of the attribute output_dtype when it is given. The difference is
 * converted to float32 and multiplied in float32, as ONNX's reference and
 * ONNX Runtime do.
 * https://onnx.ai/onnx/operators/onnx__DequantizeLinear.html */
#include "quant.h"

static d5_status dequantize_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const char *op = "DequantizeLinear";
    int64_t opset;
    d5_status s = d5__ref_opset(op, attrs, D5__OPSET_NEWEST, &opset);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < 2; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "DequantizeLinear: input %d (%s) is required", (int)i,
                            i ? "x_scale" : "x");
    int32_t xt = in[0].desc.dtype, st = in[1].desc.dtype;
    int64_t since = d5__quant_since(xt);
    if (!since || opset < since)
        return d5_error(D5_ERR_INVALID,
                        "DequantizeLinear: input 0 (x) has data type %s, expected uint8, int8 or "
                        "int32, float8 from opset 19, uint16, int16, uint4 or int4 from 21, "
                        "float4e2m1 from 23, uint2 or int2 from 25 (opset %lld)",
                        d5_dtype_name((d5_dtype)xt), (long long)opset);
    int64_t output_dtype = 0;
    s = d5_attrs_int(attrs, "output_dtype", 0, &output_dtype);
    if (s != D5_OK) return s;
    int32_t yt = st;
    if (output_dtype) {
        yt = d5__cast_d5_type(output_dtype);
        if (opset < 23 || !d5_dtype_is_float((d5_dtype)yt))
            return d5_error(D5_ERR_INVALID,
                            "DequantizeLinear: attribute output_dtype is %lld; expected float32, "
                            "float16 or bfloat16, from opset 23",
                            (long long)output_dtype);
    }
    int scale_ok = st == D5_F32 || (opset >= 19 && (st == D5_F16 || st == D5_BF16));
    if (!scale_ok)
        return d5_error(D5_ERR_INVALID,
                        "DequantizeLinear: input 1 (x_scale) has data type %s, expected float32%s",
                        d5_dtype_name((d5_dtype)st),
                        opset >= 19 ? ", float16 or bfloat16"
                                    : " (float16 and bfloat16 from opset 19)");
    if (d5__has_input(in, nin, 2) && in[2].desc.dtype != xt)
        return d5_error(D5_ERR_INVALID,
                        "DequantizeLinear: input 2 (x_zero_point) has data type %s, expected %s "
                        "(that of x)",
                        d5_dtype_name((d5_dtype)in[2].desc.dtype), d5_dtype_name((d5_dtype)xt));
    d5_quant_axis axis;
    s = d5__quant_axis(op, in, nin, attrs, opset, "x_scale", "x_zero_point", &axis);
    if (s != D5_OK) return s;
    out[0] = in[0].desc;
    out[0].dtype = yt;
    d5_quant_axis *p = d5_alloc(sizeof *p, op);
    if (!p) return D5_ERR_NOMEM;
    *p = axis;
    *state = p;
    return D5_OK;
}

static d5_status dequantize_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const d5_quant_axis *a = state;
    const double *x = in[0].data, *scale = in[1].data, *zp = nin > 2 ? in[2].data : NULL;
    for (int64_t i = 0; i < out[0].numel; i++) {
        int64_t p = d5__quant_param(a, i);
        float d = (float)(x[i] - (zp ? zp[p] : 0)); /* exact for 8-bit x and float8 values */
        float y = d * (float)scale[p];
        out[0].data[i] = y;
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(DequantizeLinear, 2, 3, 1, 1, dequantize_create, dequantize_forward,
                            NULL, d5__flops_per_input);
