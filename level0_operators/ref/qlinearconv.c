/* QLinearConv (ONNX opset 10): Conv (ref/conv.c, conv_shape.h: groups, pads,
 * auto_pad, strides, dilations) of quantised x and w (uint8 or int8, each on
 * its own) into quantised y (the type of y_zero_point):
 *   acc[n, m, o] = B[m] + sum over the taps of (x - x_zero_point) * (w - w_zero_point[m])
 *   y = saturate(round(acc * (x_scale * w_scale[m] / y_scale)) + y_zero_point)
 * x is padded with its zero point (padding contributes nothing), rounding is
 * half to even, saturation to y's type; the multiplier is formed in float32
 * and the product in double. x's and y's scale and zero point hold one value;
 * w's one value or one per output channel ([M]). The optional bias B is int32
 * [M], quantised with scale x_scale * w_scale and zero point 0.
 * https://onnx.ai/onnx/operators/onnx__QLinearConv.html */
#include "quant.h"

typedef struct qlinearconv {
    d5_conv_geometry g;
    int ws_per_channel, wzp_per_channel;
    double lo, hi;
} qlinearconv;

static const char *const names[] = {
    "x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale", "y_zero_point", "B"};

static d5_status qlinearconv_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const char *op = "QLinearConv";
    for (int32_t i = 0; i < 8; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, (int)i, names[i]);
    qlinearconv c;
    d5_status s =
        d5__qconv_geometry(op, &in[0].desc, &in[3].desc, nin > 8 ? &in[8].desc : NULL, attrs, &c.g);
    if (s == D5_OK) s = d5__quant_need_scalar_scale(op, in, nin, 1, names[1]);
    if (s == D5_OK) s = d5__quant_need_scalar_zp(op, in, nin, 2, names[2], in[0].desc.dtype, "x");
    if (s == D5_OK && in[4].desc.dtype != D5_F32)
        s = d5_error(D5_ERR_INVALID, "%s: input 4 (w_scale) has data type %s, expected float32", op,
                     d5_dtype_name((d5_dtype)in[4].desc.dtype));
    if (s == D5_OK) s = d5__qconv_channel_param(op, in, 4, names[4], &c.g, &c.ws_per_channel);
    if (s == D5_OK && in[5].desc.dtype != in[3].desc.dtype)
        s = d5_error(D5_ERR_INVALID,
                     "%s: input 5 (w_zero_point) has data type %s, expected %s (that of w)", op,
                     d5_dtype_name((d5_dtype)in[5].desc.dtype),
                     d5_dtype_name((d5_dtype)in[3].desc.dtype));
    if (s == D5_OK) s = d5__qconv_channel_param(op, in, 5, names[5], &c.g, &c.wzp_per_channel);
    if (s == D5_OK) s = d5__quant_need_scalar_scale(op, in, nin, 6, names[6]);
    if (s == D5_OK) s = d5__quant_need_int8(op, in, nin, 7, names[7]);
    if (s == D5_OK) s = d5__quant_need_scalar_zp(op, in, nin, 7, names[7], in[7].desc.dtype, "y");
    if (s != D5_OK) return s;
    d5__quant_range(in[7].desc.dtype, &c.lo, &c.hi);
    d5__conv_output_desc(&c.g, &out[0]);
    out[0].dtype = in[7].desc.dtype;
    qlinearconv *p = d5_alloc(sizeof *p, op);
    if (!p) return D5_ERR_NOMEM;
    *p = c;
    *state = p;
    return D5_OK;
}

static d5_status qlinearconv_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const qlinearconv *c = state;
    const d5_conv_geometry *g = &c->g;
    const double *bias = nin > 8 ? in[8].data : NULL, *ws = in[4].data;
    double xs = in[1].data[0], ys = in[6].data[0], yzp = in[7].data[0], *y = out[0].data;
    d5__qconv_accumulate(g, in[0].data, in[2].data[0], in[3].data, in[5].data, c->wzp_per_channel,
                         y);
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t m = 0; m < g->out_channels; m++) {
            double mult = d5__quant_multiplier(xs, ws[c->ws_per_channel ? m : 0], ys);
            double b = bias ? bias[m] : 0;
            double *ym = y + (n * g->out_channels + m) * g->out_size;
            for (int64_t o = 0; o < g->out_size; o++)
                ym[o] = d5__quant_requantize(ym[o] + b, mult, yzp, c->lo, c->hi);
        }
    return D5_OK;
}

static double qlinearconv_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    return d5__conv_flops(&((const qlinearconv *)state)->g);
}

D5_REF_OPERATOR_NO_BACKWARD(QLinearConv, 8, 9, 1, 1, qlinearconv_create, qlinearconv_forward, NULL,
                            qlinearconv_flops);
