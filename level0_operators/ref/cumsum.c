/* CumSum (ONNX opset 14): the running sum of x along one axis, given as input
 * 1 (an int32 or int64 scalar or one-element tensor known at create; negative
 * counts from the back). exclusive = 1 leaves each element out of its own sum
 * (the first sum is 0); reverse = 1 runs from the end of the axis. x is
 * floating point or a 32- or 64-bit integer; the output has its shape and
 * type, integer sums wrapping around on overflow.
 *
 * Gradient: each x[i] enters the sums at the positions after (or, reversed,
 * before) it, so dx is the running sum of dy in the opposite direction with
 * the same exclusive setting.
 * https://onnx.ai/onnx/operators/onnx__CumSum.html */
#include "util.h"

typedef struct cumsum {
    d5_axis_view v;
    int exclusive, reverse;
} cumsum;

static d5_status cumsum_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_types("CumSum", in, nin, 0, D5__WIDE);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int64_t axis, n, exclusive, reverse;
    int32_t ax;
    s = d5__const_ints("CumSum", in, nin, 1, "axis", &axis, 1, &n);
    if (s != D5_OK) return s;
    if (n != 1 || in[1].desc.ndim > 1)
        return d5_error(D5_ERR_INVALID, "CumSum: input 1 (axis) must hold one value, got %lld",
                        (long long)n);
    s = d5__axis("CumSum", axis, x->ndim, &ax);
    if (s == D5_OK) s = d5_attrs_int(attrs, "exclusive", 0, &exclusive);
    if (s == D5_OK) s = d5_attrs_int(attrs, "reverse", 0, &reverse);
    if (s != D5_OK) return s;
    cumsum c = {{1, x->shape[ax], 1}, exclusive != 0, reverse != 0};
    for (int32_t d = 0; d < ax; d++) c.v.outer *= x->shape[d];
    for (int32_t d = ax + 1; d < x->ndim; d++) c.v.inner *= x->shape[d];
    out[0] = *x;
    return d5__ref_state(state, &c, sizeof c, "CumSum");
}

/* dst += the running sums of src along the axis. */
static void scan(const d5_axis_view *v, const double *src, double *dst, int exclusive, int reverse)
{
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t k = 0; k < v->inner; k++) {
            double acc = 0;
            for (int64_t t = 0; t < v->n; t++) {
                int64_t j = reverse ? v->n - 1 - t : t;
                int64_t idx = (o * v->n + j) * v->inner + k;
                if (exclusive) {
                    dst[idx] += acc;
                    acc += src[idx];
                } else {
                    acc += src[idx];
                    dst[idx] += acc;
                }
            }
        }
}

static d5_status cumsum_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const cumsum *c = state;
    for (int64_t i = 0; i < out[0].numel; i++) out[0].data[i] = 0;
    scan(&c->v, in[0].data, out[0].data, c->exclusive, c->reverse);
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

static d5_status cumsum_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    const cumsum *c = state;
    if (gin[0].data) scan(&c->v, gout[0].data, gin[0].data, c->exclusive, !c->reverse);
    return D5_OK;
}

D5_REF_OPERATOR(CumSum, 2, 2, 1, 1, cumsum_create, cumsum_forward, cumsum_backward, NULL,
                d5__flops_per_input);
