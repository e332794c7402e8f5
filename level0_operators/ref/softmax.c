/* Softmax (ONNX opsets 1 to 13): Y = exp(X - max) / sum(exp(X - max)). From
 * opset 13 along the one axis given by the attribute axis (default -1;
 * negative counts from the back). Before opset 13 the input is coerced to
 * the 2-d [prod(shape[:axis]), prod(shape[axis:])] (axis default 1) and each
 * row is normalised over all of shape[axis:]. The gradient is
 * Y * (dY - sum(dY * Y)) over the same elements.
 * https://onnx.ai/onnx/operators/onnx__Softmax.html */
#include "util.h"

#include <math.h>

static d5_status softmax_create(const d5_op_create_args *args, void **state)
{
    return d5__axis_view_create("Softmax", args->inputs, args->ninputs, args->attrs, args->outputs,
                                state);
}

static d5_status softmax_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const d5_axis_view *g = state;
    for (int64_t r = 0; r < g->outer * g->inner; r++) {
        const double *x = in[0].data + d5__axis_row(g, r);
        double *y = out[0].data + d5__axis_row(g, r);
        double max = -INFINITY, sum = 0;
        for (int64_t k = 0; k < g->n; k++) max = fmax(max, x[k * g->inner]);
        for (int64_t k = 0; k < g->n; k++) {
            y[k * g->inner] = exp(x[k * g->inner] - max);
            sum += y[k * g->inner];
        }
        for (int64_t k = 0; k < g->n; k++) y[k * g->inner] /= sum;
    }
    return D5_OK;
}

static d5_status softmax_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    const d5_axis_view *g = state;
    if (!gin[0].data) return D5_OK;
    for (int64_t r = 0; r < g->outer * g->inner; r++) {
        int64_t base = d5__axis_row(g, r);
        const double *y = out[0].data + base, *dy = gout[0].data + base;
        double *dx = gin[0].data + base, dot = 0;
        for (int64_t k = 0; k < g->n; k++) dot += dy[k * g->inner] * y[k * g->inner];
        for (int64_t k = 0; k < g->n; k++)
            dx[k * g->inner] += y[k * g->inner] * (dy[k * g->inner] - dot);
    }
    return D5_OK;
}

D5_REF_OPERATOR(Softmax, 1, 1, 1, 1, softmax_create, softmax_forward, softmax_backward, NULL,
                d5__softmax_flops);
