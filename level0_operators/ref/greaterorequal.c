/* GreaterOrEqual (ONNX opset 16; opset 12 the same without bfloat16):
 * C = (A >= B) element-wise with numpy broadcasting; A and B share one numeric
 * data type, C is bool. No gradient. A NaN compares false.
 * https://onnx.ai/onnx/operators/onnx__GreaterOrEqual.html */
#include "binary.h"

static double greater_or_equal(double a, double b)
{
    return a >= b;
}

static const d5_binary_fn greater_or_equal_fn = {"GreaterOrEqual", greater_or_equal, NULL, NULL,
                                                 D5_BINARY_NUMERIC};

D5_BINARY_OPERATOR_NO_BACKWARD(GreaterOrEqual, greater_or_equal_fn);
