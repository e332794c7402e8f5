/* Mean (ONNX opset 13): element-wise mean of 1..N inputs with multidirectional
 * (numpy) broadcasting. Each input's gradient is the output gradient summed
 * over the axes it was broadcast along, divided by N.
 * https://onnx.ai/onnx/operators/onnx__Mean.html */
#include "util.h"

static const d5_sum_op mean_op = {"Mean", 1};

D5_REF_CREATE_WITH(Mean, d5__sum_create, mean_op)
D5_REF_OPERATOR(Mean, 1, INT32_MAX, 1, 1, Mean_create, d5__sum_forward, d5__sum_backward,
                d5__ref_keep, d5__sum_flops);
