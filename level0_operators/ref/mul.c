/* Mul (ONNX opset 14): C = A * B with numpy broadcasting.
 * https://onnx.ai/onnx/operators/onnx__Mul.html */
#include "binary.h"

static double mul(double a, double b)
{
    return a * b;
}
static double mul_da(double a, double b, double y)
{
    (void)a;
    (void)y;
    return b;
}
static double mul_db(double a, double b, double y)
{
    (void)b;
    (void)y;
    return a;
}

static const d5_binary_fn mul_fn = {"Mul", mul, mul_da, mul_db};

static d5_status mul_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__binary_create("Mul", in, nin, out);
}

static d5_status mul_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__binary_forward(&mul_fn, in, out);
}

static d5_status mul_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__binary_backward(&mul_fn, gout, in, out, gin);
}

static double mul_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                        const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)in;
    (void)nin;
    (void)nout;
    return (double)d5_tensor_desc_numel(&out[0]);
}

D5_REF_OPERATOR(Mul, 2, 2, 1, 1, mul_create, mul_forward, mul_backward, NULL, mul_flops);
