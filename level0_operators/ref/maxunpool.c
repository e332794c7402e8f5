/* MaxUnpool (ONNX opsets 9 and 11): the partial inverse of MaxPool. X (N x C
 * x D1 x ... x Dn, floating point) and I (int64, X's shape: MaxPool's Indices, flat
 * positions in an N x C x D1' x ... x Dn' tensor) put each X element at its
 * position in a zero tensor of the unpooled shape
 *     Di' = (Di - 1) * strides[i] - pads_begin[i] - pads_end[i] + kernel_shape[i]
 * (attributes kernel_shape, required; strides, default 1; pads, default 0).
 * The optional input output_shape (int64, known at create: it decides the
 * output shape) gives a larger output, N and C unchanged, in which that tensor
 * sits at the origin, the rest zero, as the ONNX reference implementation and
 * its node test have it (indices stay positions in the unpooled shape). A
 * position outside it is D5_ERR_RANGE at run time; where positions repeat,
 * the last element wins. The gradient of X is the output gradient at each
 * element's position (zero for an element that lost to a later one); I has
 * none.
 * https://onnx.ai/onnx/operators/onnx__MaxUnpool.html */
#include "util.h"

#include <string.h>

typedef struct maxunpool {
    int32_t ndim;
    int64_t inner[D5_MAX_DIMS]; /* the unpooled shape */
    int64_t outer[D5_MAX_DIMS]; /* the output shape */
    int64_t inner_numel, out_numel;
    int64_t *winner; /* per output element: 1 + the X element written there last, or 0 */
} maxunpool;

static void maxunpool_destroy(void *state)
{
    maxunpool *m = state;
    if (!m) return;
    d5_free(m->winner);
    d5_free(m);
}

/* Reads kernel_shape, strides and pads into the unpooled shape. */
static d5_status unpooled_shape(const d5_tensor_desc *x, const d5_attrs *attrs, int64_t *shape)
{
    int32_t n = x->ndim - 2;
    const int64_t *kernel, *strides, *pads;
    int64_t nk, ns, np;
    d5_status s = d5_attrs_ints(attrs, "kernel_shape", &kernel, &nk);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "strides", &strides, &ns);
    if (s == D5_OK) s = d5_attrs_ints(attrs, "pads", &pads, &np);
    if (s != D5_OK) return s;
    if (!kernel) return d5_error(D5_ERR_INVALID, "MaxUnpool: attribute kernel_shape is required");
    if (nk != n)
        return d5_error(D5_ERR_INVALID,
                        "MaxUnpool: kernel_shape has %lld values, expected %d (X's spatial axes)",
                        (long long)nk, (int)n);
    if (strides && ns != n)
        return d5_error(D5_ERR_INVALID, "MaxUnpool: strides has %lld values, expected %d",
                        (long long)ns, (int)n);
    if (pads && np != 2 * n)
        return d5_error(D5_ERR_INVALID, "MaxUnpool: pads has %lld values, expected %d",
                        (long long)np, (int)(2 * n));
    shape[0] = x->shape[0];
    shape[1] = x->shape[1];
    for (int32_t i = 0; i < n; i++) {
        int64_t stride = strides ? strides[i] : 1;
        int64_t pad = pads ? pads[i] + pads[n + i] : 0;
        if (kernel[i] < 1 || stride < 1 || (pads && (pads[i] < 0 || pads[n + i] < 0)))
            return d5_error(D5_ERR_INVALID,
                            "MaxUnpool: axis %d has kernel %lld, stride %lld, pads %lld and %lld; "
                            "expected positive kernel and stride, pads >= 0",
                            (int)i + 2, (long long)kernel[i], (long long)stride,
                            (long long)(pads ? pads[i] : 0), (long long)(pads ? pads[n + i] : 0));
        shape[i + 2] = (x->shape[i + 2] - 1) * stride - pad + kernel[i];
        if (shape[i + 2] < 0)
            return d5_error(D5_ERR_SHAPE, "MaxUnpool: axis %d of the output would have size %lld",
                            (int)i + 2, (long long)shape[i + 2]);
    }
    return D5_OK;
}

static d5_status maxunpool_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    d5_status s = d5__need_float("MaxUnpool", in, nin, 0);
    if (s != D5_OK) return s;
    if (!d5__has_input(in, nin, 1))
        return d5_error(D5_ERR_INVALID, "MaxUnpool: input 1 (I) is required");
    const d5_tensor_desc *x = &in[0].desc, *ind = &in[1].desc;
    if (ind->dtype != D5_I64 && ind->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID, "MaxUnpool: input 1 (I) has data type %s, expected int64",
                        d5_dtype_name((d5_dtype)ind->dtype));
    char xs[96], is[96];
    d5__shape_str(x, xs, sizeof xs);
    d5__shape_str(ind, is, sizeof is);
    if (x->ndim < 3)
        return d5_error(D5_ERR_SHAPE, "MaxUnpool: X is %s, expected N x C x D1 x ... (rank >= 3)",
                        xs);
    if (!d5__same_shape(ind, x))
        return d5_error(D5_ERR_SHAPE, "MaxUnpool: I is %s, expected X's shape %s", is, xs);
    maxunpool m;
    memset(&m, 0, sizeof m);
    m.ndim = x->ndim;
    if ((s = unpooled_shape(x, attrs, m.inner)) != D5_OK) return s;
    memcpy(m.outer, m.inner, sizeof m.inner);
    if (d5__has_input(in, nin, 2)) {
        int64_t n;
        s = d5__const_ints("MaxUnpool", in, nin, 2, "output_shape", m.outer, D5_MAX_DIMS, &n);
        if (s != D5_OK) return s;
        if (n != x->ndim)
            return d5_error(D5_ERR_SHAPE,
                            "MaxUnpool: input 2 (output_shape) has %lld values, expected %d",
                            (long long)n, (int)x->ndim);
        for (int32_t d = 0; d < x->ndim; d++)
            if (m.outer[d] < m.inner[d] || (d < 2 && m.outer[d] != m.inner[d]))
                return d5_error(D5_ERR_SHAPE,
                                "MaxUnpool: output_shape[%d] is %lld, expected %s%lld (the "
                                "unpooled size)",
                                (int)d, (long long)m.outer[d], d < 2 ? "" : "at least ",
                                (long long)m.inner[d]);
    }
    m.inner_numel = m.out_numel = 1;
    for (int32_t d = 0; d < x->ndim; d++) {
        m.inner_numel *= m.inner[d];
        m.out_numel *= m.outer[d];
    }
    maxunpool *st = d5_alloc(sizeof *st, "MaxUnpool");
    if (!st) return D5_ERR_NOMEM;
    *st = m;
    st->winner = d5_alloc((size_t)(m.out_numel ? m.out_numel : 1) * sizeof(int64_t), "MaxUnpool");
    if (!st->winner) {
        d5_free(st);
        return D5_ERR_NOMEM;
    }
    *state = st;
    out[0] = *x;
    memcpy(out[0].shape, m.outer, sizeof m.outer);
    return D5_OK;
}

/* The output position of element e of X (its index I[e] in the unpooled
 * shape), or -1 with D5_ERR_RANGE set. */
static int64_t position(const maxunpool *m, const d5_rt *ind, int64_t e)
{
    double v = ind->data[e];
    if (!(v >= 0 && v < (double)m->inner_numel)) {
        d5_error(D5_ERR_RANGE, "MaxUnpool: I[%lld] is %.0f, outside [0, %lld)", (long long)e, v,
                 (long long)m->inner_numel);
        return -1;
    }
    int64_t rest = (int64_t)v, pos = 0, stride = 1;
    for (int32_t d = m->ndim - 1; d >= 0; d--) {
        pos += rest % m->inner[d] * stride;
        rest /= m->inner[d];
        stride *= m->outer[d];
    }
    return pos;
}

static d5_status maxunpool_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const maxunpool *m = state;
    memset(out[0].data, 0, (size_t)m->out_numel * sizeof(double));
    for (int64_t e = 0; e < in[0].numel; e++) {
        int64_t p = position(m, &in[1], e);
        if (p < 0) return D5_ERR_RANGE;
        out[0].data[p] = in[0].data[e];
    }
    return D5_OK;
}

static d5_status maxunpool_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    maxunpool *m = state;
    if (!gin[0].data) return D5_OK;
    memset(m->winner, 0, (size_t)m->out_numel * sizeof(int64_t));
    for (int64_t e = 0; e < in[0].numel; e++) {
        int64_t p = position(m, &in[1], e);
        if (p < 0) return D5_ERR_RANGE;
        m->winner[p] = e + 1;
    }
    for (int64_t e = 0; e < in[0].numel; e++) {
        int64_t p = position(m, &in[1], e);
        if (m->winner[p] == e + 1) gin[0].data[e] += gout[0].data[p];
    }
    return D5_OK;
}

D5_REF_OPERATOR(MaxUnpool, 2, 3, 1, 1, maxunpool_create, maxunpool_forward, maxunpool_backward,
                maxunpool_destroy, NULL);
