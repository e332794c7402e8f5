/* Sub (ONNX opset 14): C = A - B with numpy broadcasting, of any numeric
 * type; integer differences wrap around (uint8: 3 - 5 = 254).
 * https://onnx.ai/onnx/operators/onnx__Sub.html */
#include "binary.h"

static double sub(double a, double b)
{
    return a - b;
}
static double sub_db(double a, double b, double y)
{
    (void)a;
    (void)b;
    (void)y;
    return -1;
}

static const d5_binary_fn sub_fn = {"Sub", sub, d5__binary_one, sub_db, D5_BINARY_ARITH};

D5_BINARY_OPERATOR(Sub, sub_fn);
