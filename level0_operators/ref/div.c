/* Div (ONNX opset 14): C = A / B with numpy broadcasting, of any numeric
 * type. Floating point follows IEEE (x / 0 is +-inf or NaN); an integer
 * quotient is truncated toward zero, as C and ONNX Runtime divide (-7 / 2 =
 * -3, where numpy's // gives -4), and an integer division by zero is an
 * error, as in Mod.
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

static const d5_binary_fn div_fn = {"Div", divide, div_da, div_db, D5_BINARY_ARITH};

/* The quotient's truncation is d5__binary_forward's wrap into the type. */
static d5_status div_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    if (d5__is_int(in[1].desc->dtype))
        for (int64_t j = 0; j < in[1].numel; j++)
            if (in[1].data[j] == 0)
                return d5_error(D5_ERR_NUMERIC,
                                "Div: integer division by zero (element %lld of B is 0)",
                                (long long)j);
    return d5__binary_forward(state, call);
}

D5_REF_CREATE_WITH(Div, d5__binary_create, div_fn)
D5_REF_OPERATOR(Div, 2, 2, 1, 1, Div_create, div_forward, d5__binary_backward, d5__ref_keep,
                d5__binary_flops);
