/* Add (ONNX opset 14): C = A + B with numpy broadcasting, of any numeric
 * type; integer sums wrap around on overflow (uint8: 250 + 10 = 4).
 * https://onnx.ai/onnx/operators/onnx__Add.html */
#include "binary.h"

static double add(double a, double b)
{
    return a + b;
}

static const d5_binary_fn add_fn = {"Add", add, d5__binary_one, d5__binary_one, D5_BINARY_ARITH};

D5_BINARY_OPERATOR(Add, add_fn);
