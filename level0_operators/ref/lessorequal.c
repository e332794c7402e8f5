/* LessOrEqual (ONNX opset 16; opset 12 the same without bfloat16):
 * C = (A <= B) element-wise with numpy broadcasting; A and B share one numeric
 * data type, C is bool. No gradient. A NaN compares false.
 * https://onnx.ai/onnx/operators/onnx__LessOrEqual.html */
#include "binary.h"

static double less_or_equal(double a, double b)
{
    return a <= b;
}

static const d5_binary_fn less_or_equal_fn = {"LessOrEqual", less_or_equal, NULL, NULL,
                                              D5_BINARY_NUMERIC};

D5_BINARY_OPERATOR_NO_BACKWARD(LessOrEqual, less_or_equal_fn);
