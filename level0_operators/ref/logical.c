/* And, Or and Xor (ONNX opset 7): element-wise logic on two bool tensors
 * broadcast together with numpy's rules; the output is bool. No gradient.
 * https://onnx.ai/onnx/operators/onnx__And.html
 * https://onnx.ai/onnx/operators/onnx__Or.html
 * https://onnx.ai/onnx/operators/onnx__Xor.html */
#include "binary.h"

static d5_status logical_create(const char *op, const d5_tensor *in, int32_t nin,
                                d5_tensor_desc *out)
{
    for (int32_t i = 0; i < 2; i++) {
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "%s: input %d is required", op, (int)i);
        if (in[i].desc.dtype != D5_BOOL)
            return d5_error(D5_ERR_INVALID, "%s: input %d has data type %s, expected bool", op,
                            (int)i, d5_dtype_name((d5_dtype)in[i].desc.dtype));
    }
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    out[0].dtype = D5_BOOL;
    return d5__broadcast(op, both, 2, &out[0]);
}

static double and_f(double a, double b)
{
    return a != 0 && b != 0;
}
static double or_f(double a, double b)
{
    return a != 0 || b != 0;
}
static double xor_f(double a, double b)
{
    return (a != 0) != (b != 0);
}

static const d5_binary_fn and_fn = {"And", and_f, NULL, NULL};
static const d5_binary_fn or_fn = {"Or", or_f, NULL, NULL};
static const d5_binary_fn xor_fn = {"Xor", xor_f, NULL, NULL};

#define LOGICAL_OPERATOR(NAME, FN)                                                                 \
    static d5_status NAME##_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,        \
                                   d5_tensor_desc *out, int32_t nout, void **state)                \
    {                                                                                              \
        (void)attrs;                                                                               \
        (void)nout;                                                                                \
        (void)state;                                                                               \
        return logical_create(#NAME, in, nin, out);                                                \
    }                                                                                              \
    static d5_status NAME##_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,         \
                                    int32_t nout)                                                  \
    {                                                                                              \
        (void)state;                                                                               \
        (void)nin;                                                                                 \
        (void)nout;                                                                                \
        return d5__binary_forward(&FN, in, out);                                                   \
    }                                                                                              \
    D5_REF_OPERATOR_NO_BACKWARD(NAME, 2, 2, 1, 1, NAME##_create, NAME##_forward, NULL,             \
                                d5__binary_flops)

LOGICAL_OPERATOR(And, and_fn);
LOGICAL_OPERATOR(Or, or_fn);
LOGICAL_OPERATOR(Xor, xor_fn);
