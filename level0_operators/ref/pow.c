/* Pow (ONNX opset 13): Z = X ^ Y with numpy broadcasting. The base is float32
 * or float64; the exponent may be of any numeric type (float or integer).
 * dZ/dX = Y * X^(Y-1); dZ/dY = Z * log(X) where X > 0, and 0 elsewhere (the
 * power is not differentiable in Y for X <= 0).
 * https://onnx.ai/onnx/operators/onnx__Pow.html */
#include "binary.h"

#include <math.h>

static double power(double a, double b)
{
    return pow(a, b);
}
static double pow_da(double a, double b, double y)
{
    (void)y;
    return b == 0 ? 0 : b * pow(a, b - 1);
}
static double pow_db(double a, double b, double y)
{
    (void)b;
    return a > 0 ? y * log(a) : 0;
}

static const d5_binary_fn pow_fn = {"Pow", power, pow_da, pow_db};

static d5_status pow_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    d5_status s = d5__need_float("Pow", in, nin, 0);
    if (s != D5_OK) return s;
    if (!d5__has_input(in, nin, 1)) return d5_error(D5_ERR_INVALID, "Pow: input 1 is required");
    if (in[1].desc.dtype == D5_BOOL)
        return d5_error(D5_ERR_UNSUPPORTED, "Pow: input 1 has data type bool, expected a number");
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    return d5__broadcast("Pow", both, 2, &out[0]);
}

static d5_status pow_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__binary_forward(&pow_fn, in, out);
}

static d5_status pow_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__binary_backward(&pow_fn, gout, in, out, gin);
}

static double pow_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                        const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)in;
    (void)nin;
    (void)nout;
    return (double)d5_tensor_desc_numel(&out[0]);
}

D5_REF_OPERATOR(Pow, 2, 2, 1, 1, pow_create, pow_forward, pow_backward, NULL, pow_flops);
