/* LeakyRelu (ONNX opset 16): Y = X for X >= 0, alpha * X for X < 0; attribute
 * alpha (default 0.01). The gradient at 0 is taken as 1. (Opset 16 only adds
 * bfloat16 to opset 6.)
 * https://onnx.ai/onnx/operators/onnx__LeakyRelu.html */
#include "unary.h"

static double leakyrelu_f(double x, double alpha)
{
    return x < 0 ? alpha * x : x;
}
static double leakyrelu_df(double x, double y, double alpha)
{
    (void)y;
    return x < 0 ? alpha : 1;
}

static const d5_unary_fn leakyrelu_fn = {"LeakyRelu", leakyrelu_f, leakyrelu_df};

static d5_status leakyrelu_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                  d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    d5_status s = d5__unary_create("LeakyRelu", in, nin, out);
    if (s == D5_OK) s = d5__unary_alpha(attrs, 0.01, state);
    return s;
}

static d5_status leakyrelu_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                   int32_t nout)
{
    (void)nin;
    (void)nout;
    return d5__unary_forward(&leakyrelu_fn, *(const double *)state, in, out);
}

static d5_status leakyrelu_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                    int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    return d5__unary_backward(&leakyrelu_fn, *(const double *)state, gout, in, out, gin);
}

D5_REF_OPERATOR(LeakyRelu, 1, 1, 1, 1, leakyrelu_create, leakyrelu_forward, leakyrelu_backward,
                NULL, d5__unary_flops);
