/* ScatterND (ONNX opset 18; opsets 11, 13 and 16 read as the spec has them):
 * a copy of `data` (rank r >= 1, any data type) into which the slices of
 * `updates` (data's data type) are written at the index tuples in the last
 * dimension of `indices` (int64, or int32; rank q >= 1; last dimension m in
 * [1, r]). updates has shape indices.shape[:-1] + data.shape[m:]: slice t of it
 * goes to data[indices[t]] (a slice of shape data.shape[m:]). reduction
 * (default "none") says how an update meets the value there: "none" replaces
 * it (where tuples repeat, which the spec leaves undefined, the last in
 * row-major order wins), "add" and "mul" (opset 16) add or multiply it in,
 * "max" and "min" (opset 18) keep the larger or smaller. A negative index
 * counts from the end of its dimension; one outside [-n, n - 1] is
 * D5_ERR_RANGE at run time.
 *
 * Gradients for "none" and "add", as ScatterElements has them: data gets the
 * output gradient except (for "none") where an update overwrote it; each
 * update gets the output gradient at its position (for "none", only the one
 * that won). The other reductions have no gradient here (D5_ERR_UNSUPPORTED).
 * https://onnx.ai/onnx/operators/onnx__ScatterND.html */
#include "scatter_reduction.h"

#include <math.h>
#include <string.h>

typedef struct scatternd {
    d5_scatter_reduction reduction;
    int64_t m, tuples, slice, n; /* tuple length, tuples, elements per slice, data elements */
    int64_t dims[D5_MAX_DIMS];   /* data.shape[:m] */
    int64_t winner[];            /* per data element: 1 + the tuple that wrote it last, or 0 */
} scatternd;

static d5_status scatternd_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    static const char *const names[] = {"data", "indices", "updates"};
    for (int32_t i = 0; i < 3; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "ScatterND: input %d (%s) is required", (int)i,
                            names[i]);
    const d5_tensor_desc *x = &in[0].desc, *ind = &in[1].desc, *upd = &in[2].desc;
    if (ind->dtype != D5_I64 && ind->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID,
                        "ScatterND: input 1 (indices) has data type %s, expected int64 (or int32)",
                        d5_dtype_name((d5_dtype)ind->dtype));
    if (upd->dtype != x->dtype)
        return d5_error(D5_ERR_INVALID, "ScatterND: updates have data type %s but data %s",
                        d5_dtype_name((d5_dtype)upd->dtype), d5_dtype_name((d5_dtype)x->dtype));
    d5_scatter_reduction red = D5_SCATTER_NONE;
    d5_status s = d5__scatter_reduction("ScatterND", attrs, &red);
    if (s != D5_OK) return s;
    char xs[96], is[96], us[96];
    d5__shape_str(x, xs, sizeof xs);
    d5__shape_str(ind, is, sizeof is);
    d5__shape_str(upd, us, sizeof us);
    if (x->ndim < 1 || ind->ndim < 1)
        return d5_error(D5_ERR_SHAPE, "ScatterND: %s is a scalar, expected rank >= 1",
                        x->ndim < 1 ? "data" : "indices");
    int64_t m = ind->shape[ind->ndim - 1];
    if (m < 1 || m > x->ndim)
        return d5_error(D5_ERR_SHAPE,
                        "ScatterND: the last dimension of indices %s is %lld, expected 1 to %d "
                        "(data %s)",
                        is, (long long)m, (int)x->ndim, xs);
    /* updates: indices.shape[:-1] + data.shape[m:] */
    int same = upd->ndim == ind->ndim - 1 + x->ndim - m;
    for (int32_t d = 0; same && d < ind->ndim - 1; d++) same = upd->shape[d] == ind->shape[d];
    for (int32_t d = (int32_t)m; same && d < x->ndim; d++)
        same = upd->shape[ind->ndim - 1 + d - m] == x->shape[d];
    if (!same)
        return d5_error(D5_ERR_SHAPE,
                        "ScatterND: updates %s, expected indices.shape[:-1] + data.shape[%lld:] "
                        "(indices %s, data %s)",
                        us, (long long)m, is, xs);
    int64_t n = d5_tensor_desc_numel(x);
    scatternd *st = d5_alloc(sizeof *st + (size_t)n * sizeof(int64_t), "ScatterND");
    if (!st) return D5_ERR_NOMEM;
    st->reduction = red;
    st->m = m;
    st->tuples = d5_tensor_desc_numel(ind) / m;
    st->slice = 1;
    for (int32_t d = (int32_t)m; d < x->ndim; d++) st->slice *= x->shape[d];
    st->n = n;
    for (int64_t j = 0; j < m; j++) st->dims[j] = x->shape[j];
    *state = st;
    out[0] = *x;
    return D5_OK;
}

/* The offset in data of the slice that tuple t names, or -1 with D5_ERR_RANGE
 * set. */
static int64_t slice_offset(const scatternd *st, const double *indices, int64_t t)
{
    int64_t off = d5__index_tuple("ScatterND", indices, t, st->dims, st->m);
    return off < 0 ? -1 : off * st->slice;
}

/* Runs the scatter into y (forward) or, with y NULL, only records in
 * st->winner which tuple wrote each data element last. */
static d5_status scatternd_run(scatternd *st, const d5_rt *in, double *y)
{
    if (y) memcpy(y, in[0].data, (size_t)st->n * sizeof(double));
    memset(st->winner, 0, (size_t)st->n * sizeof(int64_t));
    for (int64_t t = 0; t < st->tuples; t++) {
        int64_t dst = slice_offset(st, in[1].data, t);
        if (dst < 0) return D5_ERR_RANGE;
        for (int64_t e = 0; e < st->slice; e++) {
            if (y)
                y[dst + e] =
                    d5__scatter_combine(st->reduction, y[dst + e], in[2].data[t * st->slice + e]);
            st->winner[dst + e] = t + 1;
        }
    }
    return D5_OK;
}

static d5_status scatternd_forward(void *state, const d5_ref_call *call)
{
    return scatternd_run(state, call->inputs, call->outputs[0].data);
}

static d5_status scatternd_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    scatternd *st = state;
    d5_status s = d5__scatter_gradient("ScatterND", st->reduction);
    if (s == D5_OK) s = scatternd_run(st, in, NULL);
    if (s != D5_OK) return s;
    d5__scatter_data_grad(st->reduction, st->winner, st->n, gout, gin);
    if (gin[2].data)
        for (int64_t t = 0; t < st->tuples; t++) {
            int64_t dst = slice_offset(st, in[1].data, t);
            for (int64_t e = 0; e < st->slice; e++)
                if (d5__scatter_passes(st->reduction, st->winner, dst + e, t + 1))
                    gin[2].data[t * st->slice + e] += gout[0].data[dst + e];
        }
    return D5_OK;
}

D5_REF_OPERATOR(ScatterND, 3, 3, 1, 1, scatternd_create, scatternd_forward, scatternd_backward,
                NULL, NULL);
