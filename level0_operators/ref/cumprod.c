/* CumProd (ONNX opset 26): the running product of x along one axis, given as
 * input 1 (an int32 or int64 scalar, known at create; negative counts from
 * the back). exclusive = 1 leaves each element out of its own product (the
 * first product is 1); reverse = 1 runs from the end of the axis: for
 * [1, 2, 3], [1, 2, 6]; exclusive [1, 1, 2]; reverse [6, 6, 3]; both
 * [6, 3, 1]. x is floating point or a 32- or 64-bit integer; the output has
 * its shape and type, integer products wrapping around on overflow (exact
 * while they stay within 2^53, the ref backend's doubles).
 *
 * Gradient: y_j is the product of the x_i of its prefix P_j, so
 * dx_k = sum over the j whose prefix holds k of dy_j * prod(P_j without k).
 * It is computed by direct differentiation, multiplying the other factors
 * (never dividing by x_k), so it is exact where elements are 0; O(n^2) per
 * run along the axis.
 * https://onnx.ai/onnx/operators/onnx__CumProd.html */
#include "util.h"

typedef struct cumprod {
    d5_axis_view v;
    int exclusive, reverse;
} cumprod;

static d5_status cumprod_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_status s = d5__need_types("CumProd", in, nin, 0, D5__WIDE);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int64_t axis, n, exclusive, reverse;
    int32_t ax;
    s = d5__const_ints("CumProd", in, nin, 1, "axis", &axis, 1, &n);
    if (s != D5_OK) return s;
    if (n != 1 || in[1].desc.ndim > 1)
        return d5_error(D5_ERR_INVALID, "CumProd: input 1 (axis) must be a scalar, got %lld values",
                        (long long)n);
    s = d5__axis("CumProd", axis, x->ndim, &ax);
    if (s == D5_OK) s = d5_attrs_int(attrs, "exclusive", 0, &exclusive);
    if (s == D5_OK) s = d5_attrs_int(attrs, "reverse", 0, &reverse);
    if (s != D5_OK) return s;
    cumprod c = {{1, x->shape[ax], 1}, exclusive != 0, reverse != 0};
    for (int32_t d = 0; d < ax; d++) c.v.outer *= x->shape[d];
    for (int32_t d = ax + 1; d < x->ndim; d++) c.v.inner *= x->shape[d];
    args->outputs[0] = *x;
    return d5__ref_state(state, &c, sizeof c, "CumProd");
}

/* The flat index of the t-th element in scan order of run (o, k). */
static int64_t at(const cumprod *c, int64_t o, int64_t k, int64_t t)
{
    int64_t j = c->reverse ? c->v.n - 1 - t : t;
    return (o * c->v.n + j) * c->v.inner + k;
}

static d5_status cumprod_forward(void *state, const d5_ref_call *call)
{
    const cumprod *c = state;
    const double *x = call->inputs[0].data;
    d5_rt *out = call->outputs;
    for (int64_t o = 0; o < c->v.outer; o++)
        for (int64_t k = 0; k < c->v.inner; k++) {
            double acc = 1;
            for (int64_t t = 0; t < c->v.n; t++) {
                int64_t idx = at(c, o, k, t);
                if (c->exclusive) {
                    out[0].data[idx] = acc;
                    acc *= x[idx];
                } else {
                    acc *= x[idx];
                    out[0].data[idx] = acc;
                }
            }
        }
    d5__wrap_ints(&out[0]);
    return D5_OK;
}

/* In scan order, output t's prefix is elements 0..t (exclusive: 0..t-1).
 * For element m, `before` is the product of the elements ahead of it; the
 * outputs whose prefix holds m start at t = m (m + 1 when exclusive), and
 * each later one multiplies in one more element. */
static d5_status cumprod_backward(void *state, const d5_ref_call *call)
{
    const cumprod *c = state;
    const double *x = call->inputs[0].data, *dy = call->grad_outputs[0].data;
    double *dx = call->grad_inputs[0].data;
    if (!dx) return D5_OK;
    int64_t e = c->exclusive;
    for (int64_t o = 0; o < c->v.outer; o++)
        for (int64_t k = 0; k < c->v.inner; k++) {
            double before = 1;
            for (int64_t m = 0; m < c->v.n; m++) {
                double others = before, sum = 0;
                for (int64_t t = m + e; t < c->v.n; t++) {
                    if (t > m + e) others *= x[at(c, o, k, t - e)];
                    sum += dy[at(c, o, k, t)] * others;
                }
                dx[at(c, o, k, m)] += sum;
                before *= x[at(c, o, k, m)];
            }
        }
    return D5_OK;
}

D5_REF_OPERATOR(CumProd, 2, 2, 1, 1, cumprod_create, cumprod_forward, cumprod_backward, NULL,
                d5__flops_per_input);
