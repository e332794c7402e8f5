/* Softsign (ONNX opset 1; opset 22 only adds data types): Y = X / (1 + |X|),
 * element-wise on float32 or float64. dY/dX = 1 / (1 + |X|)^2.
 * https://onnx.ai/onnx/operators/onnx__Softsign.html */
#include "unary.h"

#include <math.h>

static double softsign_f(double x, double alpha)
{
    (void)alpha;
    return x / (1 + fabs(x));
}
static double softsign_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    double d = 1 + fabs(x);
    return 1 / (d * d);
}

static const d5_unary_fn softsign_fn = {.name = "Softsign", .f = softsign_f, .df = softsign_df};

D5_UNARY_OPERATOR(Softsign, softsign_fn);
