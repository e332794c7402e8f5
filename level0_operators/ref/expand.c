/* Expand (ONNX opset 13): broadcasts the input (any data type) against the
 * 1-d int64 `shape` (known at create) with numpy's rules; the output's shape
 * is the broadcast of both, so a 1 in `shape` keeps the input's dimension and
 * `shape` may have fewer dims than the input. The gradient sums the output
 * gradient over the broadcast dimensions.
 * https://onnx.ai/onnx/operators/onnx__Expand.html */
#include "util.h"

static d5_status expand_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    int64_t shape[D5_MAX_DIMS], n;
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "Expand: input 0 (input) is required");
    d5_status s = d5__const_ints("Expand", in, nin, 1, "shape", shape, D5_MAX_DIMS, &n);
    if (s != D5_OK) return s;
    if (in[1].desc.ndim != 1)
        return d5_error(D5_ERR_INVALID, "Expand: input 1 (shape) must be 1-d, got %d-d",
                        (int)in[1].desc.ndim);
    d5_tensor_desc target = in[0].desc;
    target.ndim = (int32_t)n;
    for (int64_t i = 0; i < n; i++) {
        if (shape[i] < 0)
            return d5_error(D5_ERR_INVALID, "Expand: shape[%lld] is %lld, expected >= 0",
                            (long long)i, (long long)shape[i]);
        target.shape[i] = shape[i];
    }
    const d5_tensor_desc *both[2] = {&in[0].desc, &target};
    out[0].dtype = in[0].desc.dtype;
    return d5__broadcast("Expand", both, 2, &out[0]);
}

static d5_status expand_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    d5__gather_forward(d5__broadcast_index, in, out);
    return D5_OK;
}

static d5_status expand_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    (void)state;
    d5__gather_backward(d5__broadcast_index, gout, in, out, gin);
    return D5_OK;
}

D5_REF_OPERATOR(Expand, 2, 2, 1, 1, expand_create, expand_forward, expand_backward, NULL, NULL);
