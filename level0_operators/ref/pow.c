/* Pow (ONNX opset 15): Z = X ^ Y with numpy broadcasting. The base is
 * floating point, int32 or int64, and Z has its type; the exponent may be of
 * any numeric type, another than the base's (int64 ^ float32,
 * float32 ^ uint64). An integer Z is the power computed in double, truncated
 * toward zero (2 ^ -1 = 0) and wrapped into its type, as ONNX Runtime
 * computes it.
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

static const d5_binary_fn pow_fn = {"Pow", power, pow_da, pow_db, D5_BINARY_FLOAT};

static d5_status pow_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_types("Pow", in, nin, 0, D5__FLOATS | D5__DT(D5_I32) | D5__DT(D5_I64));
    if (s == D5_OK) s = d5__need_types("Pow", in, nin, 1, D5__NUMBERS);
    if (s != D5_OK) return s;
    const d5_tensor_desc *both[2] = {&in[0].desc, &in[1].desc};
    *state = (void *)&pow_fn; /* read only */
    return d5__broadcast("Pow", both, 2, &out[0]);
}

D5_REF_OPERATOR(Pow, 2, 2, 1, 1, pow_create, d5__binary_forward, d5__binary_backward, d5__ref_keep,
                d5__binary_flops);
