/* Exp (ONNX opset 13): Y = exp(X); the gradient is Y.
 * https://onnx.ai/onnx/operators/onnx__Exp.html */
#include "unary.h"

#include <math.h>

static double exp_f(double x, double alpha)
{
    (void)alpha;
    return exp(x);
}
static double exp_df(double x, double y, double alpha)
{
    (void)x;
    (void)alpha;
    return y;
}

static const d5_unary_fn exp_fn = {.name = "Exp", .f = exp_f, .df = exp_df};

D5_UNARY_OPERATOR(Exp, exp_fn);
