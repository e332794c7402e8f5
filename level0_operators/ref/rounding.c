/* Floor, Ceil and Round (ONNX opset 13; opset 22 only adds data types),
 * element-wise on float32 or float64. Round rounds halves to the nearest even
 * integer (numpy.round; 2.5 -> 2, -1.5 -> -2). NaN and infinities pass
 * through. The functions are flat between integers, so their gradient is
 * zero, as in PyTorch; no gradient flows through them.
 * https://onnx.ai/onnx/operators/onnx__Floor.html
 * https://onnx.ai/onnx/operators/onnx__Ceil.html
 * https://onnx.ai/onnx/operators/onnx__Round.html */
#include "unary.h"

#include <math.h>

static double zero(double x, double y, double alpha)
{
    (void)x;
    (void)y;
    (void)alpha;
    return 0;
}

static double floor_f(double x, double alpha)
{
    (void)alpha;
    return floor(x);
}
static double ceil_f(double x, double alpha)
{
    (void)alpha;
    return ceil(x);
}
/* nearbyint rounds in the current rounding mode, which is to-nearest-even
 * unless a program changed it; rounding by hand keeps this independent. */
static double round_f(double x, double alpha)
{
    (void)alpha;
    double r = floor(x), diff = x - r;
    if (diff > 0.5 || (diff == 0.5 && fmod(r, 2) != 0)) r += 1;
    return isfinite(x) ? r : x;
}

static const d5_unary_fn floor_fn = {.name = "Floor", .f = floor_f, .df = zero};
static const d5_unary_fn ceil_fn = {.name = "Ceil", .f = ceil_f, .df = zero};
static const d5_unary_fn round_fn = {.name = "Round", .f = round_f, .df = zero};

D5_UNARY_OPERATOR(Floor, floor_fn);
D5_UNARY_OPERATOR(Ceil, ceil_fn);
D5_UNARY_OPERATOR(Round, round_fn);
