/* Scatter (ONNX opset 9, deprecated since opset 11 for ScatterElements, which
 * it equals without reduction): a copy of `data` (any data type) into which
 * each element of `updates` (data's data type, indices' shape) is written at
 * the position that the matching element of `indices` (int32 or int64, data's
 * rank) names along `axis` (attribute, default 0; negative counts from the
 * back, as opset 11 allows), its other coordinates unchanged. Where indices
 * repeat, the last update in row-major order wins. A negative index counts
 * from the end of the axis; one outside [-n, n - 1] is D5_ERR_RANGE at run
 * time. Gradients: data gets the output gradient except where an update
 * overwrote it; each update gets the output gradient at its position when it
 * won there.
 * https://onnx.ai/onnx/operators/onnx__Scatter.html */
#include "elements.h"

#include <string.h>

typedef struct scatter {
    int32_t axis;
    int64_t n;        /* data elements */
    int64_t winner[]; /* per data element: 1 + the update that wrote it last, or 0 */
} scatter;

static d5_status scatter_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)nout;
    int32_t axis;
    d5_status s = d5__elements_check("Scatter", in, nin, attrs, &axis);
    if (s != D5_OK) return s;
    if (!d5__has_input(in, nin, 2))
        return d5_error(D5_ERR_INVALID, "Scatter: input 2 (updates) is required");
    const d5_tensor_desc *ind = &in[1].desc, *upd = &in[2].desc;
    int same = upd->ndim == ind->ndim;
    for (int32_t d = 0; same && d < ind->ndim; d++) same = upd->shape[d] == ind->shape[d];
    if (!same) {
        char us[96], is[96];
        d5__shape_str(upd, us, sizeof us);
        d5__shape_str(ind, is, sizeof is);
        return d5_error(D5_ERR_SHAPE, "Scatter: updates %s and indices %s differ in shape", us, is);
    }
    if (upd->dtype != in[0].desc.dtype)
        return d5_error(D5_ERR_INVALID, "Scatter: updates have data type %s but data %s",
                        d5_dtype_name((d5_dtype)upd->dtype),
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    int64_t n = d5_tensor_desc_numel(&in[0].desc);
    scatter *st = d5_alloc(sizeof *st + (size_t)n * sizeof(int64_t), "Scatter");
    if (!st) return D5_ERR_NOMEM;
    st->axis = axis;
    st->n = n;
    *state = st;
    out[0] = in[0].desc;
    return D5_OK;
}

/* Runs the scatter into y (forward) or, with y NULL, only records in
 * st->winner which update wrote each data element last. */
static d5_status scatter_run(scatter *st, const d5_rt *in, double *y)
{
    if (y) memcpy(y, in[0].data, (size_t)st->n * sizeof(double));
    memset(st->winner, 0, (size_t)st->n * sizeof(int64_t));
    for (int64_t e = 0; e < in[2].numel; e++) {
        int64_t dst = d5__elements_index("Scatter", in[0].desc, &in[1], st->axis, e);
        if (dst < 0) return D5_ERR_RANGE;
        if (y) y[dst] = in[2].data[e];
        st->winner[dst] = e + 1;
    }
    return D5_OK;
}

static d5_status scatter_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,
                                 int32_t nout)
{
    (void)nin;
    (void)nout;
    return scatter_run(state, in, out[0].data);
}

static d5_status scatter_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                  int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    (void)out;
    scatter *st = state;
    d5_status s = scatter_run(st, in, NULL);
    if (s != D5_OK) return s;
    if (gin[0].data)
        for (int64_t k = 0; k < st->n; k++)
            if (st->winner[k] == 0) gin[0].data[k] += gout[0].data[k];
    if (gin[2].data)
        for (int64_t e = 0; e < in[2].numel; e++) {
            int64_t dst = d5__elements_index("Scatter", in[0].desc, &in[1], st->axis, e);
            if (st->winner[dst] == e + 1) gin[2].data[e] += gout[0].data[dst];
        }
    return D5_OK;
}

D5_REF_OPERATOR(Scatter, 3, 3, 1, 1, scatter_create, scatter_forward, scatter_backward, NULL, NULL);
