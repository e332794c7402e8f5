/* And, Or and Xor (ONNX opset 7): element-wise logic on two bool tensors
 * broadcast together with numpy's rules; the output is bool. No gradient.
 * https://onnx.ai/onnx/operators/onnx__And.html
 * https://onnx.ai/onnx/operators/onnx__Or.html
 * https://onnx.ai/onnx/operators/onnx__Xor.html */
#include "binary.h"

static double and_f(double a, double b)
{
    return a != 0 && b != 0;
}
static double or_f(double a, double b)
{
    return a != 0 || b != 0;
}
static double xor_f(double a, double b)
{
    return (a != 0) != (b != 0);
}

static const d5_binary_fn and_fn = {"And", and_f, NULL, NULL, D5_BINARY_BOOL};
static const d5_binary_fn or_fn = {"Or", or_f, NULL, NULL, D5_BINARY_BOOL};
static const d5_binary_fn xor_fn = {"Xor", xor_f, NULL, NULL, D5_BINARY_BOOL};

D5_BINARY_OPERATOR_NO_BACKWARD(And, and_fn);
D5_BINARY_OPERATOR_NO_BACKWARD(Or, or_fn);
D5_BINARY_OPERATOR_NO_BACKWARD(Xor, xor_fn);
