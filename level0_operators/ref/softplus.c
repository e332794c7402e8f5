/* Softplus (ONNX opset 1): Y = log(exp(X) + 1), computed without overflow for
 * large X. The gradient is the sigmoid of X. (Opset 22 only adds data types.)
 * https://onnx.ai/onnx/operators/onnx__Softplus.html */
#include "unary.h"

#include <math.h>

static double softplus_f(double x, double alpha)
{
    (void)alpha;
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}
static double softplus_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

static const d5_unary_fn softplus_fn = {.name = "Softplus", .f = softplus_f, .df = softplus_df};

D5_UNARY_OPERATOR(Softplus, softplus_fn);
