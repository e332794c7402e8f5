/* ThresholdedRelu (ONNX opset 10; opset 22 only adds data types): Y = X where
 * X > alpha and 0 elsewhere, element-wise on float32 or float64; attribute
 * alpha (default 1.0). dY/dX is 1 where X > alpha and 0 elsewhere.
 * https://onnx.ai/onnx/operators/onnx__ThresholdedRelu.html */
#include "unary.h"

static double thresholdedrelu_f(double x, double alpha)
{
    return x > alpha ? x : 0;
}
static double thresholdedrelu_df(double x, double y, double alpha)
{
    (void)y;
    return x > alpha ? 1 : 0;
}

static const d5_unary_fn thresholdedrelu_fn = {.name = "ThresholdedRelu",
                                               .f = thresholdedrelu_f,
                                               .df = thresholdedrelu_df,
                                               .attr = {"alpha"},
                                               .def = {1.0}};

D5_UNARY_OPERATOR(ThresholdedRelu, thresholdedrelu_fn);
