/* LpNormalization (ONNX opsets 1 and 22): Y = X / ||X||_p along one axis
 * (attribute axis, default -1, negative counting from the back), p = 1
 * (sum |x|) or 2 (sqrt(sum x^2), the default). Where the norm is 0 (every
 * element of the run is 0) the output is 0, as opset 22 specifies and
 * ONNX's reference does for both opsets. X is floating point; Y has its
 * shape and type.
 *
 * Gradient, per run along the axis with norm n and S = sum(dY * X) / n:
 *   dX = (dY - Y * S) / n        (p = 2)
 *   dX = (dY - sign(X) * S) / n  (p = 1)
 * and 0 where n = 0 (the output is 0 around there).
 * https://onnx.ai/onnx/operators/onnx__LpNormalization.html */
#include "util.h"

#include <math.h>

typedef struct lpnorm {
    d5_axis_view v;
    int p;
} lpnorm;

static d5_status lpnorm_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int64_t axis, p;
    int32_t ax = 0;
    d5_status s = d5__need_float("LpNormalization", in, args->ninputs, 0);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "axis", -1, &axis);
    if (s == D5_OK) s = d5_attrs_int(args->attrs, "p", 2, &p);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 1)
        return d5_error(D5_ERR_SHAPE, "LpNormalization: input is a scalar, expected rank >= 1");
    if ((s = d5__axis("LpNormalization", axis, x->ndim, &ax)) != D5_OK) return s;
    if (p != 1 && p != 2)
        return d5_error(D5_ERR_INVALID, "LpNormalization: p is %lld, expected 1 or 2",
                        (long long)p);
    lpnorm l = {{1, x->shape[ax], 1}, (int)p};
    for (int32_t d = 0; d < ax; d++) l.v.outer *= x->shape[d];
    for (int32_t d = ax + 1; d < x->ndim; d++) l.v.inner *= x->shape[d];
    args->outputs[0] = *x;
    return d5__ref_state(state, &l, sizeof l, "LpNormalization");
}

/* The norm of the run of n elements `inner` apart at x. */
static double norm(const lpnorm *l, const double *x)
{
    double acc = 0;
    for (int64_t t = 0; t < l->v.n; t++) {
        double e = x[t * l->v.inner];
        acc += l->p == 1 ? fabs(e) : e * e;
    }
    return l->p == 1 ? acc : sqrt(acc);
}

static d5_status lpnorm_forward(void *state, const d5_ref_call *call)
{
    const lpnorm *l = state;
    for (int64_t r = 0; r < l->v.outer * l->v.inner; r++) {
        int64_t off = d5__axis_row(&l->v, r);
        const double *x = call->inputs[0].data + off;
        double *y = call->outputs[0].data + off, n = norm(l, x);
        for (int64_t t = 0; t < l->v.n; t++) y[t * l->v.inner] = n == 0 ? 0 : x[t * l->v.inner] / n;
    }
    return D5_OK;
}

static d5_status lpnorm_backward(void *state, const d5_ref_call *call)
{
    const lpnorm *l = state;
    if (!call->grad_inputs[0].data) return D5_OK;
    int64_t in = l->v.inner;
    for (int64_t r = 0; r < l->v.outer * in; r++) {
        int64_t off = d5__axis_row(&l->v, r);
        const double *x = call->inputs[0].data + off;
        const double *dy = call->grad_outputs[0].data + off;
        double *dx = call->grad_inputs[0].data + off, n = norm(l, x), sum = 0;
        if (n == 0) continue;
        for (int64_t t = 0; t < l->v.n; t++) sum += dy[t * in] * x[t * in] / n;
        for (int64_t t = 0; t < l->v.n; t++) {
            double e = x[t * in], d = l->p == 2 ? e / n : (e > 0) - (e < 0);
            dx[t * in] += (dy[t * in] - d * sum) / n;
        }
    }
    return D5_OK;
}

/* The norm and a division: about 3 operations per element. */
static double lpnorm_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)state;
    return 3.0 * (double)d5_tensor_desc_numel(&shapes->inputs[0]);
}

D5_REF_OPERATOR(LpNormalization, 1, 1, 1, 1, lpnorm_create, lpnorm_forward, lpnorm_backward, NULL,
                lpnorm_flops);
