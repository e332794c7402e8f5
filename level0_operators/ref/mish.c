/* Mish (ONNX opset 18): Y = X * tanh(softplus(X)), softplus(X) = log(1 + e^X),
 * element-wise on float32 or float64. With t = tanh(softplus(X)) and
 * sigmoid(X) = d softplus / dX, dY/dX = t + X * sigmoid(X) * (1 - t^2).
 * https://onnx.ai/onnx/operators/onnx__Mish.html */
#include "unary.h"

#include <math.h>

/* log(1 + e^x) without overflow for large x. */
static double softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double mish_f(double x, double alpha)
{
    (void)alpha;
    return x * tanh(softplus(x));
}
static double mish_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    double t = tanh(softplus(x));
    double sigmoid = x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
    return t + x * sigmoid * (1 - t * t);
}

static const d5_unary_fn mish_fn = {.name = "Mish", .f = mish_f, .df = mish_df};

D5_UNARY_OPERATOR(Mish, mish_fn);
