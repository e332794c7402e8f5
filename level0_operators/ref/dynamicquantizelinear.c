/* DynamicQuantizeLinear (ONNX opset 11): quantises float32 x to uint8 with a
 * scale and zero point chosen from x's own range, which is widened to
 * include 0:
 *   lo = min(0, min(x)), hi = max(0, max(x))
 *   y_scale = (hi - lo) / 255               (1 / 255 when hi = lo = 0)
 *   y_zero_point = round(saturate(0 - lo / y_scale))
 *   y = saturate(round(x / y_scale) + y_zero_point)
 * saturating to [0, 255], rounding half to even, every step in float32 as in
 * ONNX's reference. NaN elements are left out of the range (and quantise to
 * the zero point). Outputs: y (x's shape, uint8), y_scale (float32 scalar),
 * y_zero_point (uint8 scalar).
 * https://onnx.ai/onnx/operators/onnx__DynamicQuantizeLinear.html */
#include "quant.h"

static d5_status dynamic_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "DynamicQuantizeLinear: input 0 (x) is required");
    if (in[0].desc.dtype != D5_F32)
        return d5_error(D5_ERR_INVALID,
                        "DynamicQuantizeLinear: input 0 (x) has data type %s, expected float32",
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    out[0] = in[0].desc;
    out[0].dtype = D5_U8;
    out[1].ndim = out[2].ndim = 0;
    out[1].dtype = D5_F32;
    out[2].dtype = D5_U8;
    return D5_OK;
}

static d5_status dynamic_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    const double *x = in[0].data;
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < in[0].numel; i++) {
        float v = (float)x[i];
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    float range = hi == lo ? 1.0f : hi - lo;
    float scale = range / 255.0f;
    float initial = 0.0f - lo / scale;
    double zp = d5__round_half_even(d5__quant_saturate(initial, 0, 255, 0));
    for (int64_t i = 0; i < out[0].numel; i++) {
        float q = (float)x[i] / scale;
        out[0].data[i] = d5__quant_saturate(d5__round_half_even(q) + zp, 0, 255, zp);
    }
    out[1].data[0] = scale;
    out[2].data[0] = zp;
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(DynamicQuantizeLinear, 1, 1, 3, 3, dynamic_create, dynamic_forward,
                            NULL, d5__flops_per_input);
