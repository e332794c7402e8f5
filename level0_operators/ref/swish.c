/* Swish (ONNX opset 24): Y = X * sigmoid(alpha * X) element-wise, attribute
 * alpha (default 1.0); with alpha = 1 it is SiLU. The input is floating
 * point. The gradient is s + alpha * x * s * (1 - s), s = sigmoid(alpha * x).
 * https://onnx.ai/onnx/operators/onnx__Swish.html */
#include "unary.h"

#include <math.h>

static double sigmoid(double z)
{
    return z >= 0 ? 1 / (1 + exp(-z)) : exp(z) / (1 + exp(z));
}

static double swish_f(double x, double alpha)
{
    return x * sigmoid(alpha * x);
}
static double swish_df(double x, double y, double alpha)
{
    (void)y;
    double s = sigmoid(alpha * x);
    return s + alpha * x * s * (1 - s);
}

static const d5_unary_fn swish_fn = {
    .name = "Swish", .f = swish_f, .df = swish_df, .attr = {"alpha"}, .def = {1.0}};

D5_UNARY_OPERATOR(Swish, swish_fn);
