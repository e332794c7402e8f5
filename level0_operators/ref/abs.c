/* Abs (ONNX opset 13): Y = |X|. The gradient is sign(X), 0 at 0.
 * https://onnx.ai/onnx/operators/onnx__Abs.html */
#include "unary.h"

#include <math.h>

static double abs_f(double x, double alpha)
{
    (void)alpha;
    return fabs(x);
}
static double abs_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return x > 0 ? 1 : x < 0 ? -1 : 0;
}

static const d5_unary_fn abs_fn = {"Abs", abs_f, abs_df};

static d5_status abs_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Abs", in, nin, out);
}

static d5_status abs_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&abs_fn, 0, in, out);
}

static d5_status abs_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&abs_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Abs, 1, 1, 1, 1, abs_create, abs_forward, abs_backward, NULL, d5__unary_flops);
