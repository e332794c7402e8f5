/* Reciprocal (ONNX opset 13): Y = 1 / X element-wise on float32 or float64
 * (1 / 0 is an infinity of the zero's sign). dY/dX = -1 / X^2 = -Y^2.
 * https://onnx.ai/onnx/operators/onnx__Reciprocal.html */
#include "unary.h"

static double reciprocal_f(double x, double alpha)
{
    (void)alpha;
    return 1 / x;
}
static double reciprocal_df(double x, double y, double alpha)
{
    (void)x;
    (void)alpha;
    return -y * y;
}

static const d5_unary_fn reciprocal_fn = {
    .name = "Reciprocal", .f = reciprocal_f, .df = reciprocal_df};

D5_UNARY_OPERATOR(Reciprocal, reciprocal_fn);
