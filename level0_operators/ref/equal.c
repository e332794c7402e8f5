/* Equal (ONNX opset 13): C = (A == B) element-wise with numpy broadcasting; A
 * and B share one numeric or bool data type, C is bool. No gradient. Values
 * are compared as doubles, exact for integers up to 2^53.
 * https://onnx.ai/onnx/operators/onnx__Equal.html */
#include "binary.h"

static double equal(double a, double b)
{
    return a == b;
}

static const d5_binary_fn equal_fn = {"Equal", equal, NULL, NULL, D5_BINARY_ANY};

D5_BINARY_OPERATOR_NO_BACKWARD(Equal, equal_fn);
