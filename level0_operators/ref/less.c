/* Less (ONNX opset 13): C = (A < B) element-wise with numpy broadcasting; A and
 * B share one numeric data type, C is bool. No gradient. A NaN compares false.
 * https://onnx.ai/onnx/operators/onnx__Less.html */
#include "binary.h"

static double less(double a, double b)
{
    return a < b;
}

static const d5_binary_fn less_fn = {"Less", less, NULL, NULL, D5_BINARY_NUMERIC};

D5_BINARY_OPERATOR_NO_BACKWARD(Less, less_fn);
