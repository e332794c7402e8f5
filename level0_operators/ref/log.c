/* Log (ONNX opset 13): Y = log(X), natural logarithm (NaN for X < 0, -inf at
 * 0); the gradient is 1 / X. https://onnx.ai/onnx/operators/onnx__Log.html */
#include "unary.h"

#include <math.h>

static double log_f(double x, double alpha)
{
    (void)alpha;
    return log(x);
}
static double log_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return 1 / x;
}

static const d5_unary_fn log_fn = {"Log", log_f, log_df};

static d5_status log_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Log", in, nin, out);
}

static d5_status log_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&log_fn, 0, in, out);
}

static d5_status log_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&log_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Log, 1, 1, 1, 1, log_create, log_forward, log_backward, NULL, d5__unary_flops);
