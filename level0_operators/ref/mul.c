/* Mul (ONNX opset 14): C = A * B with numpy broadcasting, of any numeric
 * type; integer products wrap around on overflow (int8: 16 * 8 = -128).
 * https://onnx.ai/onnx/operators/onnx__Mul.html */
#include "binary.h"

static double mul(double a, double b)
{
    return a * b;
}
static double mul_da(double a, double b, double y)
{
    (void)a;
    (void)y;
    return b;
}
static double mul_db(double a, double b, double y)
{
    (void)b;
    (void)y;
    return a;
}

static const d5_binary_fn mul_fn = {"Mul", mul, mul_da, mul_db, D5_BINARY_ARITH};

D5_BINARY_OPERATOR(Mul, mul_fn);
