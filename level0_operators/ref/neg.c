/* Neg (ONNX opset 13): Y = -X.
 * https://onnx.ai/onnx/operators/onnx__Neg.html */
#include "unary.h"

#include <math.h>

static double neg_f(double x, double alpha)
{
    (void)alpha;
    return -x;
}
static double neg_df(double x, double y, double alpha)
{
    (void)x;
    (void)y;
    (void)alpha;
    return -1;
}

static const d5_unary_fn neg_fn = {"Neg", neg_f, neg_df};

static d5_status neg_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Neg", in, nin, out);
}

static d5_status neg_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&neg_fn, 0, in, out);
}

static d5_status neg_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&neg_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Neg, 1, 1, 1, 1, neg_create, neg_forward, neg_backward, NULL, d5__unary_flops);
