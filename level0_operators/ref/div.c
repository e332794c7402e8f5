/* Div (ONNX opset 14): C = A / B with numpy broadcasting (IEEE: x / 0 is
 * +-inf or NaN).
 * https://onnx.ai/onnx/operators/onnx__Div.html */
#include "binary.h"

static double divide(double a, double b)
{
    return a / b;
}
static double div_da(double a, double b, double y)
{
    (void)a;
    (void)y;
    return 1 / b;
}
static double div_db(double a, double b, double y)
{
    (void)y;
    return -a / (b * b);
}

static const d5_binary_fn div_fn = {"Div", divide, div_da, div_db};

static d5_status div_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__binary_create("Div", in, nin, out);
}

static d5_status div_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__binary_forward(&div_fn, in, out);
}

static d5_status div_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__binary_backward(&div_fn, gout, in, out, gin);
}

static double div_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                        const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)in;
    (void)nin;
    (void)nout;
    return (double)d5_tensor_desc_numel(&out[0]);
}

D5_REF_OPERATOR(Div, 2, 2, 1, 1, div_create, div_forward, div_backward, NULL, div_flops);
