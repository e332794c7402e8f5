/* Log (ONNX opset 13): Y = log(X), natural logarithm (NaN for X < 0, -inf at
 * 0); the gradient is 1 / X. https://onnx.ai/onnx/operators/onnx__Log.html */
#include "unary.h"

#include <math.h>

static double log_f(double x, double alpha)
{
    (void)alpha;
    return log(x);
}
static double log_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return 1 / x;
}

static const d5_unary_fn log_fn = {.name = "Log", .f = log_f, .df = log_df};

D5_UNARY_OPERATOR(Log, log_fn);
