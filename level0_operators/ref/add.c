/* Add (ONNX opset 14): C = A + B with numpy broadcasting, of any numeric
 * type; integer sums wrap around on overflow (uint8: 250 + 10 = 4).
 * https://onnx.ai/onnx/operators/onnx__Add.html */
#include "binary.h"

static double add(double a, double b)
{
    return a + b;
}
static double add_da(double a, double b, double y)
{
    (void)a;
    (void)b;
    (void)y;
    return 1;
}

static const d5_binary_fn add_fn = {"Add", add, add_da, add_da, D5_BINARY_ARITH};

D5_BINARY_OPERATOR(Add, add_fn);
