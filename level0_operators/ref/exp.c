/* Exp (ONNX opset 13): Y = exp(X); the gradient is Y.
 * https://onnx.ai/onnx/operators/onnx__Exp.html */
#include "unary.h"

#include <math.h>

static double exp_f(double x, double alpha)
{
    (void)alpha;
    return exp(x);
}
static double exp_df(double x, double y, double alpha)
{
    (void)x;
    (void)alpha;
    return y;
}

static const d5_unary_fn exp_fn = {"Exp", exp_f, exp_df};

static d5_status exp_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Exp", in, nin, out);
}

static d5_status exp_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&exp_fn, 0, in, out);
}

static d5_status exp_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&exp_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Exp, 1, 1, 1, 1, exp_create, exp_forward, exp_backward, NULL, d5__unary_flops);
