/* Celu (ONNX opset 12): Y = max(0, X) + min(0, alpha * (exp(X / alpha) - 1)),
 * element-wise; attribute alpha (default 1.0, nonzero). The input is floating
 * point. The gradient is 1 for X > 0 and exp(X / alpha) otherwise.
 * https://onnx.ai/onnx/operators/onnx__Celu.html */
#include "unary.h"

#include <math.h>

static double celu_f(double x, double alpha)
{
    return x > 0 ? x : alpha * expm1(x / alpha);
}
static double celu_df(double x, double y, double alpha)
{
    (void)y;
    return x > 0 ? 1 : exp(x / alpha);
}

static const d5_unary_fn celu_fn = {
    .name = "Celu", .f = celu_f, .df = celu_df, .attr = {"alpha"}, .def = {1.0}};

static d5_status celu_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__unary_op_create(&celu_fn, in, nin, attrs, out, state);
    if (s != D5_OK) return s;
    const d5_unary_state *u = *state;
    if (u->attr[0] == 0) {
        d5_free(*state);
        *state = NULL;
        return d5_error(D5_ERR_INVALID, "Celu: attribute alpha is 0, expected a nonzero value");
    }
    return D5_OK;
}

D5_REF_OPERATOR(Celu, 1, 1, 1, 1, celu_create, d5__unary_forward, d5__unary_backward, NULL,
                d5__flops_per_input);
