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

/* One row: y = exp(x - max) / sum. */
static void softmax_row(const double *x, double *y, int64_t n, int64_t inner)
{
    double max = -INFINITY, sum = 0;
    for (int64_t k = 0; k < n; k++) max = fmax(max, x[k * inner]);
    for (int64_t k = 0; k < n; k++) {
        y[k * inner] = exp(x[k * inner] - max);
        sum += y[k * inner];
    }
    for (int64_t k = 0; k < n; k++) y[k * inner] /= sum;
}

/* dx += y * (dy - sum(dy * y)). */
static void softmax_grad(const double *y, const double *dy, double *dx, int64_t n, int64_t inner)
{
    double dot = 0;
    for (int64_t k = 0; k < n; k++) dot += dy[k * inner] * y[k * inner];
    for (int64_t k = 0; k < n; k++) dx[k * inner] += y[k * inner] * (dy[k * inner] - dot);
}

static d5_status softmax_forward(void *state, const d5_ref_call *call)
{
    return d5__axis_forward(state, call, softmax_row);
}

static d5_status softmax_backward(void *state, const d5_ref_call *call)
{
    return d5__axis_backward(state, call, softmax_grad);
}

D5_REF_OPERATOR(Softmax, 1, 1, 1, 1, softmax_create, softmax_forward, softmax_backward, NULL,
                d5__softmax_flops);
