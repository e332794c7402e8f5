/* Elu (ONNX opset 6): Y = X for X >= 0, alpha * (exp(X) - 1) for X < 0;
 * attribute alpha (default 1.0). The gradient for X < 0 is alpha * exp(X) =
 * Y + alpha. (Opset 22 only adds data types.)
 * https://onnx.ai/onnx/operators/onnx__Elu.html */
#include "unary.h"

#include <math.h>

static double elu_f(double x, double alpha)
{
    return x < 0 ? alpha * expm1(x) : x;
}
static double elu_df(double x, double y, double alpha)
{
    (void)y;
    return x < 0 ? alpha * exp(x) : 1;
}

static const d5_unary_fn elu_fn = {"Elu", elu_f, elu_df};

static d5_status elu_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    d5_status s = d5__unary_create("Elu", in, nin, out);
    if (s == D5_OK) s = d5__unary_alpha(attrs, 1.0, state);
    return s;
}

static d5_status elu_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)nin;
    (void)nout;
    return d5__unary_forward(&elu_fn, *(const double *)state, in, out);
}

static d5_status elu_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    return d5__unary_backward(&elu_fn, *(const double *)state, gout, in, out, gin);
}

D5_REF_OPERATOR(Elu, 1, 1, 1, 1, elu_create, elu_forward, elu_backward, NULL, d5__unary_flops);
