/* Sigmoid (ONNX opset 13): Y = 1 / (1 + exp(-X)), computed without overflow for
 * large |X|. The gradient is Y * (1 - Y).
 * https://onnx.ai/onnx/operators/onnx__Sigmoid.html */
#include "unary.h"

#include <math.h>

static double sigmoid_f(double x, double alpha)
{
    (void)alpha;
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}
static double sigmoid_df(double x, double y, double alpha)
{
    (void)x;
    (void)alpha;
    return y * (1 - y);
}

static const d5_unary_fn sigmoid_fn = {.name = "Sigmoid", .f = sigmoid_f, .df = sigmoid_df};

D5_UNARY_OPERATOR(Sigmoid, sigmoid_fn);
