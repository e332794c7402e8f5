/* GatherND (ONNX opset 13; opset 12 the same without bfloat16, opset 11
 * without batch_dims): gathers slices of `data` (rank r >= 1, any data type)
 * at the index tuples in the last dimension of `indices` (int64, or int32;
 * rank q >= 1; its last dimension m in [1, r - b]). The first b = batch_dims
 * (attribute, default 0, below min(q, r)) dimensions of data and indices are
 * batch dimensions and must match; each tuple indexes data.shape[b:b+m] of its
 * batch and picks the slice data.shape[b+m:] there. The output has shape
 *     indices.shape[:-1] + data.shape[b+m:].
 * A negative index counts from the end of its dimension; one outside [-n, n-1]
 * is D5_ERR_RANGE at run time. The gradient with respect to data scatters
 * the output gradient back (adding where a tuple repeats); indices have none.
 * https://onnx.ai/onnx/operators/onnx__GatherND.html */
#include "util.h"

typedef struct gathernd {
    int64_t batches;           /* product of data.shape[:b] */
    int64_t tuples;            /* index tuples per batch: product of indices.shape[b:-1] */
    int64_t m;                 /* entries per tuple */
    int64_t slice;             /* elements per slice: product of data.shape[b+m:] */
    int64_t batch;             /* data elements per batch: product of data.shape[b:] */
    int64_t dims[D5_MAX_DIMS]; /* data.shape[b:b+m] */
} gathernd;

/* Checks data, indices and batch_dims; fills g and *b_out (batch_dims). */
static d5_status gathernd_check(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                gathernd *g, int64_t *b_out)
{
    for (int32_t i = 0; i < 2; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "GatherND: input %d (%s) is required", (int)i,
                            i ? "indices" : "data");
    const d5_tensor_desc *x = &in[0].desc, *ind = &in[1].desc;
    if (ind->dtype != D5_I64 && ind->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID,
                        "GatherND: input 1 (indices) has data type %s, expected int64 (or int32)",
                        d5_dtype_name((d5_dtype)ind->dtype));
    int64_t b;
    d5_status s = d5_attrs_int(attrs, "batch_dims", 0, &b);
    if (s != D5_OK) return s;
    if (x->ndim < 1 || ind->ndim < 1)
        return d5_error(D5_ERR_SHAPE, "GatherND: %s is a scalar, expected rank >= 1",
                        x->ndim < 1 ? "data" : "indices");
    int32_t minrank = x->ndim < ind->ndim ? x->ndim : ind->ndim;
    if (b < 0 || b >= minrank)
        return d5_error(D5_ERR_INVALID,
                        "GatherND: batch_dims is %lld, expected 0 to %d (below the ranks of data, "
                        "%d, and indices, %d)",
                        (long long)b, (int)minrank - 1, (int)x->ndim, (int)ind->ndim);
    char xs[96], is[96];
    d5__shape_str(x, xs, sizeof xs);
    d5__shape_str(ind, is, sizeof is);
    for (int32_t d = 0; d < b; d++)
        if (x->shape[d] != ind->shape[d])
            return d5_error(D5_ERR_SHAPE,
                            "GatherND: data %s and indices %s differ in batch dimension %d", xs, is,
                            (int)d);
    int64_t m = ind->shape[ind->ndim - 1];
    if (m < 1 || m > x->ndim - b)
        return d5_error(D5_ERR_SHAPE,
                        "GatherND: the last dimension of indices %s is %lld, expected 1 to %lld "
                        "(data %s, batch_dims %lld)",
                        is, (long long)m, (long long)(x->ndim - b), xs, (long long)b);
    *g = (gathernd){1, 1, m, 1, 1, {0}};
    for (int32_t d = 0; d < b; d++) g->batches *= x->shape[d];
    for (int32_t d = (int32_t)b; d < ind->ndim - 1; d++) g->tuples *= ind->shape[d];
    for (int32_t d = (int32_t)(b + m); d < x->ndim; d++) g->slice *= x->shape[d];
    for (int32_t d = (int32_t)b; d < x->ndim; d++) g->batch *= x->shape[d];
    for (int64_t j = 0; j < m; j++) g->dims[j] = x->shape[b + j];
    *b_out = b;
    return D5_OK;
}

static d5_status gathernd_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    gathernd g;
    int64_t b = 0;
    d5_status s = gathernd_check(in, nin, attrs, &g, &b);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc, *ind = &in[1].desc;
    int32_t ndim = (int32_t)(ind->ndim - 1 + x->ndim - b - g.m);
    if (ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "GatherND: the output would have %d dims, at most %d",
                        (int)ndim, D5_MAX_DIMS);
    out[0].dtype = x->dtype;
    out[0].ndim = 0;
    for (int32_t d = 0; d < ind->ndim - 1; d++) out[0].shape[out[0].ndim++] = ind->shape[d];
    for (int32_t d = (int32_t)(b + g.m); d < x->ndim; d++)
        out[0].shape[out[0].ndim++] = x->shape[d];
    return d5__ref_state(state, &g, sizeof g, "GatherND");
}

/* The offset in data of the slice that tuple t (over all batches) names, or
 * -1 with D5_ERR_RANGE set. */
static int64_t slice_offset(const gathernd *g, const double *indices, int64_t t)
{
    int64_t off = d5__index_tuple("GatherND", indices, t, g->dims, g->m);
    return off < 0 ? -1 : (t / g->tuples) * g->batch + off * g->slice;
}

static d5_status gathernd_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const gathernd *g = state;
    for (int64_t t = 0; t < g->batches * g->tuples; t++) {
        int64_t src = slice_offset(g, in[1].data, t);
        if (src < 0) return D5_ERR_RANGE;
        for (int64_t e = 0; e < g->slice; e++) out[0].data[t * g->slice + e] = in[0].data[src + e];
    }
    return D5_OK;
}

static d5_status gathernd_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const gathernd *g = state;
    if (!gin[0].data) return D5_OK;
    for (int64_t t = 0; t < g->batches * g->tuples; t++) {
        int64_t src = slice_offset(g, in[1].data, t);
        if (src < 0) return D5_ERR_RANGE;
        for (int64_t e = 0; e < g->slice; e++)
            gin[0].data[src + e] += gout[0].data[t * g->slice + e];
    }
    return D5_OK;
}

D5_REF_OPERATOR(GatherND, 2, 2, 1, 1, gathernd_create, gathernd_forward, gathernd_backward, NULL,
                NULL);
