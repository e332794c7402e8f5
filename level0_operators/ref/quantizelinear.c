/* QuantizeLinear (ONNX opsets 10, 13, 19 and 21): x (float32 or int32; from
 * opset 19 also float16 and bfloat16) to uint8 or int8, from opset 21 also
 * uint16 or int16 (the type of the optional y_zero_point, uint8 when it is
 * omitted):
 *   y = saturate(round(x / y_scale) + y_zero_point)
 * rounding half to even, saturating to the type's range; NaN gives the
 * zero point. The scale and zero point hold one value (per tensor) or, from
 * opset 13, one per index of x along `axis` (default 1). The quotient is
 * formed in float32 for floating-point x, as ONNX's reference and ONNX Runtime
 * do, and in double for int32 x. The scale is float32, or from opset 19 of
 * x's type (the schema's T1; float32 stays allowed, the only scale that makes
 * sense for int32 x). Opset 19's saturate attribute concerns float8
 * outputs only and is not read; opset 21's block_size and output_dtype are
 * refused when set (not implemented).
 * https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html */
#include "quant.h"

typedef struct quantize {
    d5_quant_axis axis;
    double lo, hi;
    int float_quotient;
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
    int32_t yt = d5__has_input(in, nin, 2) ? in[2].desc.dtype : D5_U8;
    quantize q = {{1, 1}, 0, 0, xt != D5_I32};
    int wide = yt == D5_I16 || yt == D5_U16;
    if (!d5__quant_range(yt, &q.lo, &q.hi) || (wide && opset < 21))
        return d5_error(D5_ERR_INVALID,
                        "QuantizeLinear: input 2 (y_zero_point) has data type %s, expected uint8 "
                        "or int8%s",
                        d5_dtype_name((d5_dtype)yt),
                        opset >= 21 ? ", uint16 or int16" : " (uint16 and int16 from opset 21)");
    s = d5__quant_unimplemented_attrs(op, attrs);
    if (s != D5_OK) return s;
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
        int64_t p = i / q->axis.inner % q->axis.n;
        double z = zp ? zp[p] : 0, v;
        if (q->float_quotient) {
            float f = (float)x[i] / (float)scale[p];
            v = f;
        } else {
            v = x[i] / scale[p];
        }
        out[0].data[i] = d5__quant_saturate(d5__round_half_even(v) + z, q->lo, q->hi, z);
    }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(QuantizeLinear, 2, 3, 1, 1, quantize_create, quantize_forward, NULL,
                            d5__flops_per_input);
