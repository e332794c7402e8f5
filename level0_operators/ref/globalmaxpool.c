/* GlobalMaxPool (ONNX opset 1; opset 22 only adds data types):
 * Y[n, c, 1, ..., 1] = the maximum of X[n, c, :, ..., :] over all spatial axes
 * of X (N x C x D1 x ... x Dn, floating point; with no spatial axis, Y = X). A
 * NaN in a plane makes its maximum NaN. The gradient flows to the first
 * maximum of each plane (the first NaN where there is one), as MaxPool's does.
 * https://onnx.ai/onnx/operators/onnx__GlobalMaxPool.html */
#include "util.h"

typedef struct gmp {
    int64_t planes, size; /* N * C planes of D1 * ... * Dn elements */
} gmp;

static d5_status gmp_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_float("GlobalMaxPool", in, nin, 0);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE,
                        "GlobalMaxPool: input has %d dims, expected at least 2 (N x C x ...)",
                        (int)x->ndim);
    gmp g = {x->shape[0] * x->shape[1], 1};
    out[0] = *x;
    for (int32_t i = 2; i < x->ndim; i++) {
        g.size *= x->shape[i];
        out[0].shape[i] = 1;
    }
    if (g.size == 0 && g.planes > 0)
        return d5_error(D5_ERR_SHAPE, "GlobalMaxPool: the spatial axes hold no element");
    return d5__ref_state(state, &g, sizeof g, "GlobalMaxPool");
}

/* The offset within plane p of its first maximum (of its first NaN if any). */
static int64_t argmax(const gmp *g, const double *x, int64_t p)
{
    const double *v = x + p * g->size;
    int64_t best = 0;
    for (int64_t i = 1; i < g->size && v[best] == v[best]; i++)
        if (v[i] > v[best] || v[i] != v[i]) best = i;
    return best;
}

static d5_status gmp_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const gmp *g = state;
    for (int64_t p = 0; p < g->planes; p++)
        out[0].data[p] = in[0].data[p * g->size + argmax(g, in[0].data, p)];
    return D5_OK;
}

static d5_status gmp_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const gmp *g = state;
    if (!gin[0].data) return D5_OK;
    for (int64_t p = 0; p < g->planes; p++)
        gin[0].data[p * g->size + argmax(g, in[0].data, p)] += gout[0].data[p];
    return D5_OK;
}

D5_REF_OPERATOR(GlobalMaxPool, 1, 1, 1, 1, gmp_create, gmp_forward, gmp_backward, NULL,
                d5__flops_per_input);
