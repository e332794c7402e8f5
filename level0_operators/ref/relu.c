/* Relu (ONNX opset 14): Y = max(0, X), floating point or a signed integer.
 * The gradient at 0 is taken as 0.
 * https://onnx.ai/onnx/operators/onnx__Relu.html */
#include "util.h"

static d5_status relu_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    d5_status s = d5__need_types("Relu", in, nin, 0, D5__FLOATS | D5__SIGNED);
    if (s == D5_OK) out[0] = in[0].desc;
    return s;
}

static d5_status relu_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    for (int64_t i = 0; i < in[0].numel; i++)
        out[0].data[i] = in[0].data[i] > 0 ? in[0].data[i] : 0;
    return D5_OK;
}

static d5_status relu_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    (void)state;
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++)
            gin[0].data[i] = in[0].data[i] > 0 ? gout[0].data[i] : 0;
    return D5_OK;
}

D5_REF_OPERATOR(Relu, 1, 1, 1, 1, relu_create, relu_forward, relu_backward, NULL,
                d5__flops_per_input);
