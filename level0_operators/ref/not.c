/* Not (ONNX opset 1): the logical negation of a bool tensor. No gradient.
 * https://onnx.ai/onnx/operators/onnx__Not.html */
#include "util.h"

static d5_status not_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Not: input 0 is required");
    if (in[0].desc.dtype != D5_BOOL)
        return d5_error(D5_ERR_INVALID, "Not: input 0 has data type %s, expected bool",
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    out[0] = in[0].desc;
    return D5_OK;
}

static d5_status not_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    for (int64_t i = 0; i < out[0].numel; i++) out[0].data[i] = in[0].data[i] == 0;
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(Not, 1, 1, 1, 1, not_create, not_forward, NULL, NULL);
