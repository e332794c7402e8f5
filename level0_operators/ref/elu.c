/* Elu (ONNX opset 6): Y = X for X >= 0, alpha * (exp(X) - 1) for X < 0;
 * attribute alpha (default 1.0). The gradient for X < 0 is alpha * exp(X) =
 * Y + alpha. (Opset 22 only adds data types.)
 * https://onnx.ai/onnx/operators/onnx__Elu.html */
#include "unary.h"

#include <math.h>

static double elu_f(double x, double alpha)
{
    return x < 0 ? alpha * expm1(x) : x;
}
static double elu_df(double x, double y, double alpha)
{
    (void)y;
    return x < 0 ? alpha * exp(x) : 1;
}

static const d5_unary_fn elu_fn = {
    .name = "Elu", .f = elu_f, .df = elu_df, .attr = {"alpha"}, .def = {1.0}};

D5_UNARY_OPERATOR(Elu, elu_fn);
