/* GatherElements (ONNX opset 13): output[i][j][k] = data[index][j][k] for
 * axis 0, with index = indices[i][j][k] (and likewise for other axes): each
 * element of the int32 or int64 `indices` picks one element of `data` (any
 * data type) along `axis` (attribute, default 0; negative counts from the
 * back), its other coordinates unchanged. indices has data's rank and is no
 * larger than data in the other dimensions; the output has indices' shape and
 * data's type. A negative index counts from the end of the axis; one outside
 * [-n, n - 1] is D5_ERR_RANGE at run time. The gradient with respect to data
 * adds each output gradient at the element it came from; indices have none.
 * https://onnx.ai/onnx/operators/onnx__GatherElements.html */
#include "elements.h"

static d5_status gatherelements_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int32_t axis;
    d5_status s = d5__elements_check("GatherElements", in, nin, attrs, &axis);
    if (s != D5_OK) return s;
    out[0] = in[1].desc;
    out[0].dtype = in[0].desc.dtype;
    return d5__ref_state(state, &axis, sizeof axis, "GatherElements");
}

static d5_status gatherelements_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    int32_t axis = *(const int32_t *)state;
    for (int64_t e = 0; e < out[0].numel; e++) {
        int64_t src = d5__elements_index("GatherElements", in[0].desc, &in[1], axis, e);
        if (src < 0) return D5_ERR_RANGE;
        out[0].data[e] = in[0].data[src];
    }
    return D5_OK;
}

static d5_status gatherelements_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    int32_t axis = *(const int32_t *)state;
    if (!gin[0].data) return D5_OK;
    for (int64_t e = 0; e < out[0].numel; e++) {
        int64_t src = d5__elements_index("GatherElements", in[0].desc, &in[1], axis, e);
        if (src < 0) return D5_ERR_RANGE;
        gin[0].data[src] += gout[0].data[e];
    }
    return D5_OK;
}

D5_REF_OPERATOR(GatherElements, 2, 2, 1, 1, gatherelements_create, gatherelements_forward,
                gatherelements_backward, NULL, NULL);
