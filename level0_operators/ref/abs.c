/* Abs (ONNX opset 13): Y = |X|, of any numeric type (int8 -128 stays -128,
 * as it wraps). The gradient is sign(X), 0 at 0.
 * https://onnx.ai/onnx/operators/onnx__Abs.html */
#include "unary.h"

#include <math.h>

static double abs_f(double x, double alpha)
{
    (void)alpha;
    return fabs(x);
}
static double abs_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return x > 0 ? 1 : x < 0 ? -1 : 0;
}

static const d5_unary_fn abs_fn = {.name = "Abs", .f = abs_f, .df = abs_df, .types = D5__NUMBERS};

D5_UNARY_OPERATOR(Abs, abs_fn);
