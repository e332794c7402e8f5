/* Sqrt (ONNX opset 13): Y = sqrt(X) (NaN for X < 0); the gradient is 1 / (2 Y).
 * https://onnx.ai/onnx/operators/onnx__Sqrt.html */
#include "unary.h"

#include <math.h>

static double sqrt_f(double x, double alpha)
{
    (void)alpha;
    return sqrt(x);
}
static double sqrt_df(double x, double y, double alpha)
{
    (void)x;
    (void)alpha;
    return 0.5 / y;
}

static const d5_unary_fn sqrt_fn = {.name = "Sqrt", .f = sqrt_f, .df = sqrt_df};

D5_UNARY_OPERATOR(Sqrt, sqrt_fn);
