/* HardSigmoid (ONNX opset 6): Y = max(0, min(1, alpha * X + beta)); attributes
 * alpha (default 0.2) and beta (default 0.5). The gradient is alpha where
 * 0 < alpha * X + beta < 1 and 0 where the output saturates. (Opset 22 only
 * adds data types.)
 * https://onnx.ai/onnx/operators/onnx__HardSigmoid.html */
#include "unary.h"

/* The shared element-wise machinery passes one parameter: the kernels below
 * apply beta themselves and hand alpha to the derivative. */
static double hardsigmoid_f(double z, double alpha)
{
    (void)alpha;
    return z < 0 ? 0 : z > 1 ? 1 : z;
}
/* dY/dX from the output: alpha strictly inside (0, 1), 0 on the flat parts. */
static double hardsigmoid_df(double x, double y, double alpha)
{
    (void)x;
    return y > 0 && y < 1 ? alpha : 0;
}

static const d5_unary_fn hardsigmoid_fn = {.name = "HardSigmoid",
                                           .f = hardsigmoid_f,
                                           .df = hardsigmoid_df,
                                           .attr = {"alpha", "beta"},
                                           .def = {0.2, 0.5}};

static d5_status hardsigmoid_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const d5_unary_state *h = state;
    double alpha = h->attr[0], beta = h->attr[1];
    for (int64_t i = 0; i < in[0].numel; i++)
        out[0].data[i] = hardsigmoid_f(alpha * in[0].data[i] + beta, 0);
    return D5_OK;
}

D5_REF_CREATE_WITH(HardSigmoid, d5__unary_op_create, hardsigmoid_fn)
D5_REF_OPERATOR(HardSigmoid, 1, 1, 1, 1, HardSigmoid_create, hardsigmoid_forward,
                d5__unary_backward, NULL, d5__flops_per_input);
