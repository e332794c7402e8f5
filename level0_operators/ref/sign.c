/* Sign (ONNX opset 13): -1, 0 or 1 by the sign of each element, of any
 * numeric data type (NaN stays NaN). The function is flat away from 0, so its
 * gradient is zero, as in PyTorch.
 * https://onnx.ai/onnx/operators/onnx__Sign.html */
#include "util.h"

#include <math.h>

static d5_status sign_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Sign: input 0 is required");
    if (in[0].desc.dtype == D5_BOOL)
        return d5_error(D5_ERR_INVALID, "Sign: input 0 is bool, expected a numeric data type");
    out[0] = in[0].desc;
    return D5_OK;
}

static d5_status sign_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i];
        out[0].data[i] = x > 0 ? 1 : x < 0 ? -1 : x; /* 0 and NaN pass through */
    }
    return D5_OK;
}

/* The input gradient stays as the wrapper zeroed it. */
static d5_status sign_backward(void *state, const d5_ref_call *call)
{
    (void)call;
    (void)state;
    return D5_OK;
}

D5_REF_OPERATOR(Sign, 1, 1, 1, 1, sign_create, sign_forward, sign_backward, NULL, NULL);
