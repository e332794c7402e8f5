/* Where (ONNX opset 16): output = condition ? X : Y element-wise, the three
 * inputs broadcast together with numpy's rules. condition is bool; X and Y
 * share one data type, which the output takes. The gradient goes to X where
 * the condition holds and to Y elsewhere, summed over broadcast dimensions;
 * the condition has none.
 * https://onnx.ai/onnx/operators/onnx__Where.html */
#include "util.h"

static d5_status where_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    (void)state;
    static const char *const names[3] = {"condition", "X", "Y"};
    for (int32_t i = 0; i < 3; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "Where: input %d (%s) is required", (int)i, names[i]);
    if (in[0].desc.dtype != D5_BOOL)
        return d5_error(D5_ERR_INVALID,
                        "Where: input 0 (condition) has data type %s, expected bool",
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    if (in[1].desc.dtype != in[2].desc.dtype)
        return d5_error(D5_ERR_INVALID, "Where: X has data type %s but Y has %s",
                        d5_dtype_name((d5_dtype)in[1].desc.dtype),
                        d5_dtype_name((d5_dtype)in[2].desc.dtype));
    const d5_tensor_desc *all[3] = {&in[0].desc, &in[1].desc, &in[2].desc};
    out[0].dtype = in[1].desc.dtype;
    return d5__broadcast("Where", all, 3, &out[0]);
}

static d5_status where_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    (void)state;
    const d5_tensor_desc *y = out[0].desc;
    for (int64_t i = 0; i < out[0].numel; i++) {
        int take_x = in[0].data[d5__broadcast_index(y, in[0].desc, i)] != 0;
        const d5_rt *src = take_x ? &in[1] : &in[2];
        out[0].data[i] = src->data[d5__broadcast_index(y, src->desc, i)];
    }
    return D5_OK;
}

static d5_status where_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    (void)state;
    const d5_tensor_desc *y = out[0].desc;
    for (int64_t i = 0; i < out[0].numel; i++) {
        int32_t k = in[0].data[d5__broadcast_index(y, in[0].desc, i)] != 0 ? 1 : 2;
        if (gin[k].data) gin[k].data[d5__broadcast_index(y, in[k].desc, i)] += gout[0].data[i];
    }
    return D5_OK;
}

D5_REF_OPERATOR(Where, 3, 3, 1, 1, where_create, where_forward, where_backward, NULL, NULL);
