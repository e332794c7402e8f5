/* Transpose (ONNX opset 13): Y[i_0, ..., i_{r-1}] = X indexed with i_j on axis
 * perm[j], so that Y's dimension j is X's dimension perm[j]; perm defaults to
 * the reversed axes.
 * https://onnx.ai/onnx/operators/onnx__Transpose.html */
#include "shape_util.h"

typedef struct transpose {
    int64_t stride[D5_MAX_DIMS]; /* X's stride along the axis that Y's axis j reads */
} transpose;

static d5_status transpose_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    const int64_t *perm;
    int64_t n;
    d5_status s = d5__need_input("Transpose", in, nin, 0, "data");
    if (s == D5_OK) s = d5_attrs_ints(attrs, "perm", &perm, &n);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int32_t p[D5_MAX_DIMS];
    if (perm && n != x->ndim)
        return d5_error(D5_ERR_INVALID, "Transpose: perm has %lld values for a %d-d input",
                        (long long)n, (int)x->ndim);
    for (int32_t j = 0; j < x->ndim; j++) {
        if (!perm) {
            p[j] = x->ndim - 1 - j;
            continue;
        }
        if (perm[j] < 0 || perm[j] >= x->ndim)
            return d5_error(D5_ERR_INVALID, "Transpose: perm[%d] = %lld is outside [0, %d]", (int)j,
                            (long long)perm[j], (int)x->ndim - 1);
        p[j] = (int32_t)perm[j];
        for (int32_t k = 0; k < j; k++)
            if (p[k] == p[j])
                return d5_error(D5_ERR_INVALID, "Transpose: perm repeats axis %d", (int)p[j]);
    }
    transpose *st = d5_alloc(sizeof *st, "Transpose");
    if (!st) return D5_ERR_NOMEM;
    int64_t xs[D5_MAX_DIMS];
    d5__strides(x, xs);
    out[0].ndim = x->ndim;
    for (int32_t j = 0; j < x->ndim; j++) {
        out[0].shape[j] = x->shape[p[j]];
        st->stride[j] = xs[p[j]];
    }
    *state = st;
    return D5_OK;
}

/* The flat index in X of element i of Y. */
static int64_t source(const transpose *t, const d5_tensor_desc *y, int64_t i)
{
    int64_t c[D5_MAX_DIMS], idx = 0;
    d5__unravel(y, i, c);
    for (int32_t j = 0; j < y->ndim; j++) idx += c[j] * t->stride[j];
    return idx;
}

static d5_status transpose_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    for (int64_t i = 0; i < out[0].numel; i++)
        out[0].data[i] = in[0].data[source(state, out[0].desc, i)];
    return D5_OK;
}

static d5_status transpose_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    if (gin[0].data)
        for (int64_t i = 0; i < out[0].numel; i++)
            gin[0].data[source(state, out[0].desc, i)] += gout[0].data[i];
    return D5_OK;
}

D5_REF_OPERATOR(Transpose, 1, 1, 1, 1, transpose_create, transpose_forward, transpose_backward,
                NULL, NULL);
