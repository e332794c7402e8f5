/* Gather (ONNX opset 13): picks entries of `data` (rank r >= 1, any data type)
 * along `axis` (attribute, default 0, negative counts from the back) at the
 * int32 or int64 `indices` (any shape; a negative index counts from the end of
 * the axis). The output has shape
 *     data.shape[:axis] + indices.shape + data.shape[axis+1:].
 * Indices are read at run time: one outside [-n, n - 1] is D5_ERR_RANGE. The
 * gradient with respect to data scatters the output gradient back (adding
 * where an index repeats); indices have no gradient.
 * https://onnx.ai/onnx/operators/onnx__Gather.html */
#include "util.h"

typedef struct gather {
    int64_t outer; /* product of data.shape[:axis] */
    int64_t n;     /* data.shape[axis] */
    int64_t inner; /* product of data.shape[axis+1:] */
    int64_t count; /* number of indices */
    int32_t axis;
} gather;

static d5_status gather_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    for (int32_t i = 0; i < 2; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "Gather: input %d (%s) is required", (int)i,
                            i ? "indices" : "data");
    const d5_tensor_desc *x = &in[0].desc, *ind = &in[1].desc;
    if (ind->dtype != D5_I64 && ind->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID,
                        "Gather: input 1 (indices) has data type %s, expected int32 or int64",
                        d5_dtype_name((d5_dtype)ind->dtype));
    int64_t axis;
    int32_t ax;
    d5_status s = d5_attrs_int(attrs, "axis", 0, &axis);
    if (s == D5_OK) s = d5__axis("Gather", axis, x->ndim, &ax);
    if (s != D5_OK) return s;
    if (x->ndim - 1 + ind->ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "Gather: the output would have %d dims (data %d-d, indices %d-d), at most "
                        "%d supported",
                        (int)(x->ndim - 1 + ind->ndim), (int)x->ndim, (int)ind->ndim, D5_MAX_DIMS);
    gather *g = d5_alloc(sizeof *g, "Gather");
    if (!g) return D5_ERR_NOMEM;
    *g = (gather){1, x->shape[ax], 1, d5_tensor_desc_numel(ind), ax};
    for (int32_t d = 0; d < ax; d++) g->outer *= x->shape[d];
    for (int32_t d = ax + 1; d < x->ndim; d++) g->inner *= x->shape[d];
    out[0].dtype = x->dtype;
    out[0].ndim = 0;
    for (int32_t d = 0; d < ax; d++) out[0].shape[out[0].ndim++] = x->shape[d];
    for (int32_t d = 0; d < ind->ndim; d++) out[0].shape[out[0].ndim++] = ind->shape[d];
    for (int32_t d = ax + 1; d < x->ndim; d++) out[0].shape[out[0].ndim++] = x->shape[d];
    *state = g;
    return D5_OK;
}

/* Resolves every index into [0, n), or names the first one out of range. */
static d5_status check_indices(const gather *g, const d5_rt *ind)
{
    for (int64_t j = 0; j < g->count; j++) {
        double v = ind->data[j];
        if (v < -(double)g->n || v >= (double)g->n)
            return d5_error(D5_ERR_RANGE,
                            "Gather: indices[%lld] is %lld, outside [%lld, %lld] for axis %d of "
                            "size %lld",
                            (long long)j, (long long)v, (long long)-g->n, (long long)g->n - 1,
                            (int)g->axis, (long long)g->n);
    }
    return D5_OK;
}

/* The flat index in data of output element (o, j, k). */
static int64_t source(const gather *g, const d5_rt *ind, int64_t o, int64_t j, int64_t k)
{
    int64_t idx = (int64_t)ind->data[j];
    if (idx < 0) idx += g->n;
    return (o * g->n + idx) * g->inner + k;
}

/* Output element i reads data element source(i): forward copies
 * to[i] = from[source(i)]; backward adds to[source(i)] += from[i]. */
static void gather_elements(const gather *g, const d5_rt *idx, const double *from, double *to,
                            int backward)
{
    int64_t i = 0;
    for (int64_t o = 0; o < g->outer; o++)
        for (int64_t j = 0; j < g->count; j++)
            for (int64_t k = 0; k < g->inner; k++, i++) {
                int64_t at = source(g, idx, o, j, k);
                if (backward)
                    to[at] += from[i];
                else
                    to[i] = from[at];
            }
}

static d5_status gather_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const gather *g = state;
    d5_status s = check_indices(g, &in[1]);
    if (s != D5_OK) return s;
    gather_elements(g, &in[1], in[0].data, out[0].data, 0);
    return D5_OK;
}

static d5_status gather_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const gather *g = state;
    if (!gin[0].data) return D5_OK;
    d5_status s = check_indices(g, &in[1]);
    if (s != D5_OK) return s;
    gather_elements(g, &in[1], gout[0].data, gin[0].data, 1);
    return D5_OK;
}

D5_REF_OPERATOR(Gather, 2, 2, 1, 1, gather_create, gather_forward, gather_backward, NULL, NULL);
