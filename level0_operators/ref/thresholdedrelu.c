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

static const d5_unary_fn thresholdedrelu_fn = {"ThresholdedRelu", thresholdedrelu_f,
                                               thresholdedrelu_df};

static d5_status thresholdedrelu_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                        d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    d5_status s = d5__unary_create("ThresholdedRelu", in, nin, out);
    if (s == D5_OK) s = d5__unary_alpha(attrs, 1.0, state);
    return s;
}

static d5_status thresholdedrelu_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                         int32_t nout)
{
    (void)nin;
    (void)nout;
    return d5__unary_forward(&thresholdedrelu_fn, *(const double *)state, in, out);
}

static d5_status thresholdedrelu_backward(void *state, const d5_rt *gout, int32_t nout,
                                          const d5_rt *in, int32_t nin, const d5_rt *out,
                                          d5_rt *gin)
{
    (void)nout;
    (void)nin;
    return d5__unary_backward(&thresholdedrelu_fn, *(const double *)state, gout, in, out, gin);
}

D5_REF_OPERATOR(ThresholdedRelu, 1, 1, 1, 1, thresholdedrelu_create, thresholdedrelu_forward,
                thresholdedrelu_backward, NULL, d5__unary_flops);
