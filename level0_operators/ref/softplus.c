/* Softplus (ONNX opset 1): Y = log(exp(X) + 1), computed without overflow for
 * large X. The gradient is the sigmoid of X. (Opset 22 only adds data types.)
 * https://onnx.ai/onnx/operators/onnx__Softplus.html */
#include "unary.h"

#include <math.h>

static double softplus_f(double x, double alpha)
{
    (void)alpha;
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}
static double softplus_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

static const d5_unary_fn softplus_fn = {"Softplus", softplus_f, softplus_df};

static d5_status softplus_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                 d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Softplus", in, nin, out);
}

static d5_status softplus_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                  int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&softplus_fn, 0, in, out);
}

static d5_status softplus_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                   int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&softplus_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Softplus, 1, 1, 1, 1, softplus_create, softplus_forward, softplus_backward, NULL,
                d5__unary_flops);
