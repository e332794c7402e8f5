/* Selu (ONNX opset 6; opset 22 only adds data types): Y = gamma * X for X > 0
 * and gamma * alpha * (e^X - 1) otherwise, element-wise on float32 or float64;
 * attributes alpha (default 1.67326319217681884765625) and gamma (default
 * 1.05070102214813232421875). dY/dX is gamma for X > 0 and
 * gamma * alpha * e^X otherwise.
 * https://onnx.ai/onnx/operators/onnx__Selu.html */
#include "unary.h"

#include <math.h>

/* The kernels below use the attributes; f and df are not needed. */
static const d5_unary_fn selu_fn = {.name = "Selu",
                                    .attr = {"alpha", "gamma"},
                                    .def = {1.67326319217681884765625, 1.05070102214813232421875}};

static d5_status selu_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const d5_unary_state *p = state;
    double alpha = p->attr[0], gamma = p->attr[1];
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i];
        out[0].data[i] = gamma * (x > 0 ? x : alpha * expm1(x));
    }
    return D5_OK;
}

static d5_status selu_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const d5_unary_state *p = state;
    double alpha = p->attr[0], gamma = p->attr[1];
    if (gin[0].data)
        for (int64_t i = 0; i < in[0].numel; i++) {
            double x = in[0].data[i];
            gin[0].data[i] += gout[0].data[i] * gamma * (x > 0 ? 1 : alpha * exp(x));
        }
    return D5_OK;
}

D5_REF_CREATE_WITH(Selu, d5__unary_op_create, selu_fn)
D5_REF_OPERATOR(Selu, 1, 1, 1, 1, Selu_create, selu_forward, selu_backward, NULL,
                d5__flops_per_input);
