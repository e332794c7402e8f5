/* Tanh (ONNX opset 13): Y = tanh(X); the gradient is 1 - Y^2.
 * https://onnx.ai/onnx/operators/onnx__Tanh.html */
#include "unary.h"

#include <math.h>

static double tanh_f(double x, double alpha)
{
    (void)alpha;
    return tanh(x);
}
static double tanh_df(double x, double y, double alpha)
{
    (void)x;
    (void)alpha;
    return 1 - y * y;
}

static const d5_unary_fn tanh_fn = {"Tanh", tanh_f, tanh_df};

static d5_status tanh_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Tanh", in, nin, out);
}

static d5_status tanh_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&tanh_fn, 0, in, out);
}

static d5_status tanh_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                               int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&tanh_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Tanh, 1, 1, 1, 1, tanh_create, tanh_forward, tanh_backward, NULL, d5__unary_flops);
