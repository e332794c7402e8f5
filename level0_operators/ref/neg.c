/* Neg (ONNX opset 13): Y = -X, floating point or a signed integer (int8 -128
 * stays -128, as it wraps).
 * https://onnx.ai/onnx/operators/onnx__Neg.html */
#include "unary.h"

#include <math.h>

static double neg_f(double x, double alpha)
{
    (void)alpha;
    return -x;
}
static double neg_df(double x, double y, double alpha)
{
    (void)x;
    (void)y;
    (void)alpha;
    return -1;
}

static const d5_unary_fn neg_fn = {
    .name = "Neg", .f = neg_f, .df = neg_df, .types = D5__FLOATS | D5__SIGNED};

D5_UNARY_OPERATOR(Neg, neg_fn);
