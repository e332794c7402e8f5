/* Div (ONNX opset 14): C = A / B with numpy broadcasting (IEEE: x / 0 is
 * +-inf or NaN).
 * https://onnx.ai/onnx/operators/onnx__Div.html */
#include "binary.h"

static double divide(double a, double b)
{
    return a / b;
}
static double div_da(double a, double b, double y)
{
    (void)a;
    (void)y;
    return 1 / b;
}
static double div_db(double a, double b, double y)
{
    (void)y;
    return -a / (b * b);
}

static const d5_binary_fn div_fn = {"Div", divide, div_da, div_db, D5_BINARY_FLOAT};

D5_BINARY_OPERATOR(Div, div_fn);
