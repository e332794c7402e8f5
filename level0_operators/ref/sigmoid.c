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

static const d5_unary_fn sigmoid_fn = {"Sigmoid", sigmoid_f, sigmoid_df};

static d5_status sigmoid_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Sigmoid", in, nin, out);
}

static d5_status sigmoid_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                 int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&sigmoid_fn, 0, in, out);
}

static d5_status sigmoid_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                  int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&sigmoid_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Sigmoid, 1, 1, 1, 1, sigmoid_create, sigmoid_forward, sigmoid_backward, NULL,
                d5__unary_flops);
