/* HardSwish (ONNX opset 14; opset 22 only adds data types):
 * Y = X * max(0, min(1, X / 6 + 1/2)), element-wise on float32 or float64
 * (HardSigmoid with alpha 1/6 and beta 1/2, times X). dY/dX is 0 below -3,
 * 1 above 3 and X / 3 + 1/2 between them.
 * https://onnx.ai/onnx/operators/onnx__HardSwish.html */
#include "unary.h"

static double hardswish_f(double x, double alpha)
{
    (void)alpha;
    double h = x / 6 + 0.5;
    return x * (h < 0 ? 0 : h > 1 ? 1 : h);
}
static double hardswish_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return x < -3 ? 0 : x > 3 ? 1 : x / 3 + 0.5;
}

static const d5_unary_fn hardswish_fn = {.name = "HardSwish", .f = hardswish_f, .df = hardswish_df};

D5_UNARY_OPERATOR(HardSwish, hardswish_fn);
