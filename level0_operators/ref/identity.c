/* Identity (ONNX opset 16, tensors of any data type): Y = X.
 * https://onnx.ai/onnx/operators/onnx__Identity.html */
#include "shape_util.h"

static d5_status identity_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    d5_status s = d5__need_input("Identity", in, nin, 0, "input");
    if (s == D5_OK) out[0] = in[0].desc;
    return s;
}

D5_REF_OPERATOR(Identity, 1, 1, 1, 1, identity_create, d5__copy_forward, d5__copy_backward, NULL,
                NULL);
