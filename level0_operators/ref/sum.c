/* Sum (ONNX opset 13): element-wise sum of 1..N inputs with multidirectional
 * (numpy) broadcasting. Each input's gradient is the output gradient summed
 * over the axes it was broadcast along.
 * https://onnx.ai/onnx/operators/onnx__Sum.html */
#include "util.h"

static const d5_sum_op sum_op = {"Sum", 0};

D5_REF_CREATE_WITH(Sum, d5__sum_create, sum_op)
D5_REF_OPERATOR(Sum, 1, INT32_MAX, 1, 1, Sum_create, d5__sum_forward, d5__sum_backward,
                d5__ref_keep, d5__sum_flops);
