/* Tanh (ONNX opset 13): Y = tanh(X); the gradient is 1 - Y^2.
 * https://onnx.ai/onnx/operators/onnx__Tanh.html */
#include "unary.h"

#include <math.h>

static double tanh_f(double x, double alpha)
{
    (void)alpha;
    return tanh(x);
}
static double tanh_df(double x, double y, double alpha)
{
    (void)x;
    (void)alpha;
    return 1 - y * y;
}

static const d5_unary_fn tanh_fn = {.name = "Tanh", .f = tanh_f, .df = tanh_df};

D5_UNARY_OPERATOR(Tanh, tanh_fn);
