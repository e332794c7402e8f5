/* Relu (ONNX opset 14): Y = max(0, X), floating point or a signed integer.
 * The gradient at 0 is taken as 0.
 * https://onnx.ai/onnx/operators/onnx__Relu.html */
#include "util.h"

static d5_status relu_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    d5_status s = d5__need_types("Relu", in, nin, 0, D5__FLOATS | D5__SIGNED);
    if (s == D5_OK) out[0] = in[0].desc;
    return s;
}

static d5_status relu_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    for (int64_t i = 0; i < in[0].numel; i++)
        out[0].data[i] = in[0].data[i] > 0 ? in[0].data[i] : 0;
    return D5_OK;
}

static d5_status relu_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                               int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    (void)out;
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++)
            gin[0].data[i] = in[0].data[i] > 0 ? gout[0].data[i] : 0;
    return D5_OK;
}

D5_REF_OPERATOR(Relu, 1, 1, 1, 1, relu_create, relu_forward, relu_backward, NULL,
                d5__flops_per_input);
