/* Sqrt (ONNX opset 13): Y = sqrt(X) (NaN for X < 0); the gradient is 1 / (2 Y).
 * https://onnx.ai/onnx/operators/onnx__Sqrt.html */
#include "unary.h"

#include <math.h>

static double sqrt_f(double x, double alpha)
{
    (void)alpha;
    return sqrt(x);
}
static double sqrt_df(double x, double y, double alpha)
{
    (void)x;
    (void)alpha;
    return 0.5 / y;
}

static const d5_unary_fn sqrt_fn = {"Sqrt", sqrt_f, sqrt_df};

static d5_status sqrt_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Sqrt", in, nin, out);
}

static d5_status sqrt_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&sqrt_fn, 0, in, out);
}

static d5_status sqrt_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                               int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&sqrt_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Sqrt, 1, 1, 1, 1, sqrt_create, sqrt_forward, sqrt_backward, NULL, d5__unary_flops);
