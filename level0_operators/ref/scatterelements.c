/* ScatterElements (ONNX opset 18): a copy of `data` (any data type) into
 * which each element of `updates` is written at the position that the
 * matching element of `indices` (int32 or int64, updates' shape, data's rank)
 * names along `axis` (attribute, default 0; negative counts from the back),
 * its other coordinates unchanged. reduction (default "none") says how an
 * update meets the value there: "none" replaces it (with repeated indices the
 * last update in row-major order wins), "add" and "mul" (opset 16) add or
 * multiply it in, "max" and "min" (opset 18) keep the larger or smaller. A
 * negative index counts from the end of the axis; one outside [-n, n - 1] is
 * D5_ERR_RANGE at run time. Integer sums and products wrap into the type.
 *
 * Gradients for "none" and "add": data gets the output gradient, except (for
 * "none") at the positions an update overwrote; each update gets the output
 * gradient at its position (for "none", only the update that won). The other
 * reductions have no gradient here (D5_ERR_UNSUPPORTED).
 *
 * Scatter (opset 9, deprecated since opset 11) is ScatterElements without
 * reduction and shares this file.
 * https://onnx.ai/onnx/operators/onnx__ScatterElements.html
 * https://onnx.ai/onnx/operators/onnx__Scatter.html */
#include "elements.h"
#include "scatter_reduction.h"

#include <math.h>
#include <string.h>

typedef struct scatter {
    const char *op; /* "ScatterElements" or "Scatter" */
    int32_t axis;
    d5_scatter_reduction reduction;
    int64_t n;        /* data elements */
    int64_t winner[]; /* per data element: 1 + the update that wrote it last, or 0 */
} scatter;

/* The create of both operators; Scatter (reductions 0) has no reduction. */
static d5_status scatter_create_as(const char *op, int reductions, const d5_tensor *in, int32_t nin,
                                   const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    int32_t axis;
    d5_scatter_reduction red = D5_SCATTER_NONE;
    d5_status s = d5__elements_check(op, in, nin, attrs, &axis);
    if (s == D5_OK && reductions) s = d5__scatter_reduction(op, attrs, &red);
    if (s != D5_OK) return s;
    if (!d5__has_input(in, nin, 2))
        return d5_error(D5_ERR_INVALID, "%s: input 2 (updates) is required", op);
    const d5_tensor_desc *ind = &in[1].desc, *upd = &in[2].desc;
    int same = upd->ndim == ind->ndim;
    for (int32_t d = 0; same && d < ind->ndim; d++) same = upd->shape[d] == ind->shape[d];
    if (!same) {
        char us[96], is[96];
        d5__shape_str(upd, us, sizeof us);
        d5__shape_str(ind, is, sizeof is);
        return d5_error(D5_ERR_SHAPE, "%s: updates %s and indices %s differ in shape", op, us, is);
    }
    if (upd->dtype != in[0].desc.dtype)
        return d5_error(D5_ERR_INVALID, "%s: updates have data type %s but data %s", op,
                        d5_dtype_name((d5_dtype)upd->dtype),
                        d5_dtype_name((d5_dtype)in[0].desc.dtype));
    int64_t n = d5_tensor_desc_numel(&in[0].desc);
    scatter *st = d5_alloc(sizeof *st + (size_t)n * sizeof(int64_t), op);
    if (!st) return D5_ERR_NOMEM;
    st->op = op;
    st->axis = axis;
    st->reduction = red;
    st->n = n;
    *state = st;
    out[0] = in[0].desc;
    return D5_OK;
}

static d5_status scatterelements_create(const d5_op_create_args *args, void **state)
{
    return scatter_create_as("ScatterElements", 1, args->inputs, args->ninputs, args->attrs,
                             args->outputs, state);
}

static d5_status scatter_create(const d5_op_create_args *args, void **state)
{
    return scatter_create_as("Scatter", 0, args->inputs, args->ninputs, args->attrs, args->outputs,
                             state);
}

/* Runs the scatter into y (forward) or, with y NULL, only records in
 * st->winner which update wrote each data element last. */
static d5_status scatter_run(scatter *st, const d5_rt *in, double *y)
{
    if (y) memcpy(y, in[0].data, (size_t)st->n * sizeof(double));
    memset(st->winner, 0, (size_t)st->n * sizeof(int64_t));
    for (int64_t e = 0; e < in[2].numel; e++) {
        int64_t dst = d5__elements_index(st->op, in[0].desc, &in[1], st->axis, e);
        if (dst < 0) return D5_ERR_RANGE;
        if (y) y[dst] = d5__scatter_combine(st->reduction, y[dst], in[2].data[e]);
        st->winner[dst] = e + 1;
    }
    return D5_OK;
}

static d5_status scatter_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    d5_status s = scatter_run(state, in, out[0].data);
    if (s == D5_OK) d5__wrap_ints(&out[0]); /* an integer "add" or "mul" that overflows */
    return s;
}

static d5_status scatter_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    scatter *st = state;
    d5_status s = d5__scatter_gradient(st->op, st->reduction);
    if (s == D5_OK) s = scatter_run(st, in, NULL);
    if (s != D5_OK) return s;
    d5__scatter_data_grad(st->reduction, st->winner, st->n, gout, gin);
    if (gin[2].data)
        for (int64_t e = 0; e < in[2].numel; e++) {
            int64_t dst = d5__elements_index(st->op, in[0].desc, &in[1], st->axis, e);
            if (d5__scatter_passes(st->reduction, st->winner, dst, e + 1))
                gin[2].data[e] += gout[0].data[dst];
        }
    return D5_OK;
}

D5_REF_OPERATOR(ScatterElements, 3, 3, 1, 1, scatterelements_create, scatter_forward,
                scatter_backward, NULL, NULL);
D5_REF_OPERATOR(Scatter, 3, 3, 1, 1, scatter_create, scatter_forward, scatter_backward, NULL, NULL);
