/* LeakyRelu (ONNX opset 16): Y = X for X >= 0, alpha * X for X < 0; attribute
 * alpha (default 0.01). The gradient at 0 is taken as 1. (Opset 16 only adds
 * bfloat16 to opset 6.)
 * https://onnx.ai/onnx/operators/onnx__LeakyRelu.html */
#include "unary.h"

static double leakyrelu_f(double x, double alpha)
{
    return x < 0 ? alpha * x : x;
}
static double leakyrelu_df(double x, double y, double alpha)
{
    (void)y;
    return x < 0 ? alpha : 1;
}

static const d5_unary_fn leakyrelu_fn = {
    .name = "LeakyRelu", .f = leakyrelu_f, .df = leakyrelu_df, .attr = {"alpha"}, .def = {0.01}};

D5_UNARY_OPERATOR(LeakyRelu, leakyrelu_fn);
