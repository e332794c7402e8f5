/* DequantizeLinear (ONNX opsets 10, 13, 19 and 21): x (uint8, int8 or int32;
 * from opset 21 also uint16 and int16) to
 *   y = (x - x_zero_point) * x_scale
 * with the optional zero point (x's type) 0 when omitted; for int32 x it is
 * meant to be 0, and is subtracted when given. The scale and zero point hold
 * one value (per tensor) or, from opset 13, one per index of x along `axis`
 * (default 1). y is float32, and from opset 19 of the scale's type (float32,
 * float16 or bfloat16). The difference is converted to float32 and multiplied
 * in float32, as ONNX's reference and ONNX Runtime do. Opset 21's block_size
 * is refused when set (not implemented).
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
    int wide = xt == D5_I16 || xt == D5_U16;
    if ((xt != D5_U8 && xt != D5_I8 && xt != D5_I32 && !wide) || (wide && opset < 21))
        return d5_error(D5_ERR_INVALID,
                        "DequantizeLinear: input 0 (x) has data type %s, expected uint8, int8 or "
                        "int32%s",
                        d5_dtype_name((d5_dtype)xt),
                        opset >= 21 ? ", uint16 or int16" : " (uint16 and int16 from opset 21)");
    s = d5__quant_unimplemented_attrs(op, attrs);
    if (s != D5_OK) return s;
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
    out[0].dtype = st;
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
        int64_t p = i / a->inner % a->n;
        float d = (float)(x[i] - (zp ? zp[p] : 0)); /* exact for 8-bit x */
        float y = d * (float)scale[p];
        out[0].data[i] = y;
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(DequantizeLinear, 2, 3, 1, 1, dequantize_create, dequantize_forward,
                            NULL, d5__flops_per_input);
