/* Erf (ONNX opset 13): Y = erf(X), the Gauss error function
 * 2 / sqrt(pi) * integral from 0 to X of exp(-t^2) dt. The gradient is
 * 2 / sqrt(pi) * exp(-X^2).
 * https://onnx.ai/onnx/operators/onnx__Erf.html */
#include "unary.h"

#include <math.h>

/* 2 / sqrt(pi). */
#define TWO_OVER_SQRT_PI 1.12837916709551257390

static double erf_f(double x, double alpha)
{
    (void)alpha;
    return erf(x);
}
static double erf_df(double x, double y, double alpha)
{
    (void)y;
    (void)alpha;
    return TWO_OVER_SQRT_PI * exp(-x * x);
}

static const d5_unary_fn erf_fn = {"Erf", erf_f, erf_df};

static d5_status erf_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__unary_create("Erf", in, nin, out);
}

static d5_status erf_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__unary_forward(&erf_fn, 0, in, out);
}

static d5_status erf_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__unary_backward(&erf_fn, 0, gout, in, out, gin);
}

D5_REF_OPERATOR(Erf, 1, 1, 1, 1, erf_create, erf_forward, erf_backward, NULL, d5__unary_flops);
