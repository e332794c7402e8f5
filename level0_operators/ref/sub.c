/* Sub (ONNX opset 14): C = A - B with numpy broadcasting.
 * https://onnx.ai/onnx/operators/onnx__Sub.html */
#include "binary.h"

static double sub(double a, double b)
{
    return a - b;
}
static double sub_da(double a, double b, double y)
{
    (void)a;
    (void)b;
    (void)y;
    return 1;
}
static double sub_db(double a, double b, double y)
{
    (void)a;
    (void)b;
    (void)y;
    return -1;
}

static const d5_binary_fn sub_fn = {"Sub", sub, sub_da, sub_db};

static d5_status sub_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                            d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    return d5__binary_create("Sub", in, nin, out);
}

static d5_status sub_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)nout;
    return d5__binary_forward(&sub_fn, in, out);
}

static d5_status sub_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                              int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)nin;
    return d5__binary_backward(&sub_fn, gout, in, out, gin);
}

static double sub_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                        const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)in;
    (void)nin;
    (void)nout;
    return (double)d5_tensor_desc_numel(&out[0]);
}

D5_REF_OPERATOR(Sub, 2, 2, 1, 1, sub_create, sub_forward, sub_backward, NULL, sub_flops);
