/* IsNaN (ONNX opset 13; opset 20 only adds float8 types): a bool tensor, true
 * where the float32 or float64 input is NaN. No gradient.
 * https://onnx.ai/onnx/operators/onnx__IsNaN.html */
#include "util.h"

#include <math.h>

static d5_status isnan_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    d5_status s = d5__need_float("IsNaN", in, nin, 0);
    if (s != D5_OK) return s;
    out[0] = in[0].desc;
    out[0].dtype = D5_BOOL;
    return D5_OK;
}

static d5_status isnan_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    for (int64_t i = 0; i < in[0].numel; i++) out[0].data[i] = isnan(in[0].data[i]) ? 1 : 0;
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(IsNaN, 1, 1, 1, 1, isnan_create, isnan_forward, NULL, NULL);
