/* ReduceMean (ONNX opsets 1 to 18): the mean of data over `axes` (negative
 * axes count from the end): before opset 18 the attribute axes, from opset 18
 * the optional second input (int64, known at create) with
 * noop_with_empty_axes (default 0: no axes reduce every axis; 1: none).
 * keepdims (default 1) keeps reduced axes with size 1. Integer data is
 * averaged in double precision and truncated.
 * https://onnx.ai/onnx/operators/onnx__ReduceMean.html */
#include "reduce.h"

static d5_status reducemean_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__reduce_create("ReduceMean", D5__WIDE, in, nin, attrs, out, state);
    if (s == D5_OK) ((d5_reduce *)*state)->mean = 1;
    return s;
}

D5_REF_OPERATOR(ReduceMean, 1, 2, 1, 1, reducemean_create, d5__reduce_sum_forward,
                d5__reduce_sum_backward, NULL, d5__reduce_sum_flops);
