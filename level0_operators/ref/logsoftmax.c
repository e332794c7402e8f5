/* LogSoftmax (ONNX opsets 1 to 13): Y = X - max - log(sum(exp(X - max))).
 * From opset 13 along the one axis given by the attribute axis (default -1;
 * negative counts from the back). Before opset 13 the input is coerced to
 * the 2-d [prod(shape[:axis]), prod(shape[axis:])] (axis default 1) and each
 * row is normalised over all of shape[axis:]. The gradient is
 * dY - exp(Y) * sum(dY) over the same elements.
 * https://onnx.ai/onnx/operators/onnx__LogSoftmax.html */
#include "util.h"

#include <math.h>

static d5_status logsoftmax_create(const d5_op_create_args *args, void **state)
{
    return d5__axis_view_create("LogSoftmax", args->inputs, args->ninputs, args->attrs,
                                args->outputs, state);
}

/* One row: y = x - max - log(sum(exp(x - max))). */
static void logsoftmax_row(const double *x, double *y, int64_t n, int64_t inner)
{
    double max = -INFINITY, sum = 0;
    for (int64_t k = 0; k < n; k++) max = fmax(max, x[k * inner]);
    for (int64_t k = 0; k < n; k++) sum += exp(x[k * inner] - max);
    double shift = max + log(sum);
    for (int64_t k = 0; k < n; k++) y[k * inner] = x[k * inner] - shift;
}

/* dx += dy - exp(y) * sum(dy). */
static void logsoftmax_grad(const double *y, const double *dy, double *dx, int64_t n, int64_t inner)
{
    double sum = 0;
    for (int64_t k = 0; k < n; k++) sum += dy[k * inner];
    for (int64_t k = 0; k < n; k++) dx[k * inner] += dy[k * inner] - exp(y[k * inner]) * sum;
}

static d5_status logsoftmax_forward(void *state, const d5_ref_call *call)
{
    return d5__axis_forward(state, call, logsoftmax_row);
}

static d5_status logsoftmax_backward(void *state, const d5_ref_call *call)
{
    return d5__axis_backward(state, call, logsoftmax_grad);
}

D5_REF_OPERATOR(LogSoftmax, 1, 1, 1, 1, logsoftmax_create, logsoftmax_forward, logsoftmax_backward,
                NULL, d5__softmax_flops);
