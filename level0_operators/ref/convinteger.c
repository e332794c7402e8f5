/* ConvInteger (ONNX opset 10): Conv (ref/conv.c, conv_shape.h: groups, pads,
 * auto_pad, strides, dilations) of 8-bit integers x and w (uint8 or int8,
 * each on its own) with int32 output:
 *   y[n, m, o] = sum over the taps of (x - x_zero_point) * (w - w_zero_point[m])
 * x is padded with its zero point (padding contributes nothing). The optional
 * zero points (of x's and w's types, 0 when omitted) hold one value; w's may
 * instead hold one per output channel ([M]). The sum is exact; a result
 * outside int32 saturates.
 * https://onnx.ai/onnx/operators/onnx__ConvInteger.html */
#include "quant.h"

typedef struct convinteger {
    d5_conv_geometry g;
    int wzp_per_channel;
} convinteger;

static d5_status convinteger_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const char *op = "ConvInteger";
    for (int32_t i = 0; i < 2; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "%s: input %d (%c) is required", op, (int)i, "xw"[i]);
    convinteger c = {.wzp_per_channel = 0};
    d5_status s = d5__qconv_geometry(op, &in[0].desc, &in[1].desc, NULL, attrs, &c.g);
    if (s == D5_OK && d5__has_input(in, nin, 2))
        s = d5__quant_need_scalar_zp(op, in, nin, 2, "x_zero_point", in[0].desc.dtype, "x");
    if (s == D5_OK && d5__has_input(in, nin, 3)) {
        if (in[3].desc.dtype != in[1].desc.dtype)
            s = d5_error(D5_ERR_INVALID,
                         "%s: input 3 (w_zero_point) has data type %s, expected %s (that of w)", op,
                         d5_dtype_name((d5_dtype)in[3].desc.dtype),
                         d5_dtype_name((d5_dtype)in[1].desc.dtype));
        else
            s = d5__qconv_channel_param(op, in, 3, "w_zero_point", &c.g, &c.wzp_per_channel);
    }
    if (s != D5_OK) return s;
    d5__conv_output_desc(&c.g, &out[0]);
    out[0].dtype = D5_I32;
    convinteger *p = d5_alloc(sizeof *p, op);
    if (!p) return D5_ERR_NOMEM;
    *p = c;
    *state = p;
    return D5_OK;
}

static d5_status convinteger_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const convinteger *c = state;
    const double *xzp = nin > 2 ? in[2].data : NULL, *wzp = nin > 3 ? in[3].data : NULL;
    d5__qconv_accumulate(&c->g, in[0].data, xzp ? xzp[0] : 0, in[1].data, wzp, c->wzp_per_channel,
                         out[0].data);
    return D5_OK;
}

static double convinteger_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    return d5__conv_flops(&((const convinteger *)state)->g);
}

D5_REF_OPERATOR_NO_BACKWARD(ConvInteger, 2, 4, 1, 1, convinteger_create, convinteger_forward, NULL,
                            convinteger_flops);
