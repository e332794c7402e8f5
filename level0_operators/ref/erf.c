/* Erf (ONNX opset 13): Y = erf(X), the Gauss error function
 * 2 / sqrt(pi) * integral from 0 to X of exp(-t^2) dt, of any numeric type
 * (integer results are truncated toward zero, as numpy's astype does). The
 * gradient is 2 / sqrt(pi) * exp(-X^2).
 * https://onnx.ai/onnx/operators/onnx__Erf.html */
#include "unary.h"

#include <math.h>

/* 2 / sqrt(pi). */
#define TWO_OVER_SQRT_PI 1.12837916709551257390

static double erf_f(double x, double alpha)
{
    (void)alpha;
    return erf(x);
}
static double erf_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return TWO_OVER_SQRT_PI * exp(-x * x);
}

static const d5_unary_fn erf_fn = {.name = "Erf", .f = erf_f, .df = erf_df, .types = D5__NUMBERS};

D5_UNARY_OPERATOR(Erf, erf_fn);
