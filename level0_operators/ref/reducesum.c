/* ReduceSum (ONNX opsets 1 to 13): sums data over `axes` (negative axes count
 * from the end): from opset 13 the optional second input (int64, known at
 * create), before it the attribute axes. keepdims (default 1) keeps reduced
 * axes with size 1; with no axes every axis is reduced, or, from opset 13,
 * none when noop_with_empty_axes (default 0) is 1.
 * https://onnx.ai/onnx/operators/onnx__ReduceSum.html */
#include "reduce.h"

static d5_status reducesum_create(const d5_op_create_args *args, void **state)
{
    return d5__reduce_create("ReduceSum", D5__WIDE, args->inputs, args->ninputs, args->attrs,
                             args->outputs, state);
}

D5_REF_OPERATOR(ReduceSum, 1, 2, 1, 1, reducesum_create, d5__reduce_sum_forward,
                d5__reduce_sum_backward, NULL, d5__reduce_sum_flops);
