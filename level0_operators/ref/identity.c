/* Identity (ONNX opset 16, tensors of any data type): Y = X.
 * https://onnx.ai/onnx/operators/onnx__Identity.html */
#include "shape_util.h"

static d5_status identity_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                 d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    d5_status s = d5__need_input("Identity", in, nin, 0, "input");
    if (s == D5_OK) out[0] = in[0].desc;
    return s;
}

D5_REF_OPERATOR(Identity, 1, 1, 1, 1, identity_create, d5__copy_forward, d5__copy_backward, NULL,
                NULL);
