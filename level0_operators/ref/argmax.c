/* ArgMax and ArgMin (ONNX opset 13): the int64 index of the largest
 * (smallest) element along `axis` (attribute, default 0; negative counts from
 * the back). keepdims (default 1) keeps that axis with size 1, else it is
 * dropped. On a tie the first index wins, or the last when select_last_index
 * (default 0) is 1. A NaN counts as larger (smaller) than every number, as in
 * numpy.argmax. The input is of any numeric data type; the axis must not be
 * empty. No gradient.
 * https://onnx.ai/onnx/operators/onnx__ArgMax.html
 * https://onnx.ai/onnx/operators/onnx__ArgMin.html */
#include "util.h"

#include <math.h>

typedef struct argext {
    d5_axis_view v;
    int last;
} argext;

static d5_status argext_create(const char *op, const d5_tensor *in, int32_t nin,
                               const d5_attrs *attrs, d5_tensor_desc *out, void **state)
{
    if (!d5__has_input(in, nin, 0))
        return d5_error(D5_ERR_INVALID, "%s: input 0 (data) is required", op);
    const d5_tensor_desc *x = &in[0].desc;
    if (x->dtype == D5_BOOL)
        return d5_error(D5_ERR_INVALID, "%s: input 0 is bool, expected a numeric data type", op);
    int64_t axis, keepdims, last;
    int32_t ax = 0;
    d5_status s = d5_attrs_int(attrs, "axis", 0, &axis);
    if (s == D5_OK) s = d5_attrs_int(attrs, "keepdims", 1, &keepdims);
    if (s == D5_OK) s = d5_attrs_int(attrs, "select_last_index", 0, &last);
    if (s == D5_OK) s = d5__axis(op, axis, x->ndim, &ax);
    if (s != D5_OK) return s;
    if (x->shape[ax] == 0)
        return d5_error(D5_ERR_SHAPE, "%s: axis %d of the input is empty: no index to return", op,
                        (int)ax);
    argext a = {{1, x->shape[ax], 1}, last != 0};
    for (int32_t d = 0; d < ax; d++) a.v.outer *= x->shape[d];
    for (int32_t d = ax + 1; d < x->ndim; d++) a.v.inner *= x->shape[d];
    out[0].dtype = D5_I64;
    out[0].ndim = 0;
    for (int32_t d = 0; d < x->ndim; d++)
        if (d != ax)
            out[0].shape[out[0].ndim++] = x->shape[d];
        else if (keepdims)
            out[0].shape[out[0].ndim++] = 1;
    return d5__ref_state(state, &a, sizeof a, op);
}

/* 1 when v should replace the best so far, b (sign 1: ArgMax, -1: ArgMin). */
static int better(double v, double b, double sign, int last)
{
    if (isnan(b)) return last && isnan(v);
    if (isnan(v)) return 1;
    return last ? sign * v >= sign * b : sign * v > sign * b;
}

static d5_status argext_forward(const argext *a, const d5_rt *in, d5_rt *out, double sign)
{
    const double *x = in[0].data;
    for (int64_t o = 0; o < a->v.outer; o++)
        for (int64_t k = 0; k < a->v.inner; k++) {
            const double *row = x + o * a->v.n * a->v.inner + k;
            int64_t best = 0;
            for (int64_t j = 1; j < a->v.n; j++)
                if (better(row[j * a->v.inner], row[best * a->v.inner], sign, a->last)) best = j;
            out[0].data[o * a->v.inner + k] = (double)best;
        }
    return D5_OK;
}

#define ARG_OPERATOR(NAME, SIGN)                                                                   \
    static d5_status NAME##_create(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        return argext_create(#NAME, args->inputs, args->ninputs, args->attrs, args->outputs,       \
                             state);                                                               \
    }                                                                                              \
    static d5_status NAME##_forward(void *state, const d5_ref_call *call)                          \
    {                                                                                              \
        return argext_forward(state, call->inputs, call->outputs, SIGN);                           \
    }                                                                                              \
    D5_REF_OPERATOR_NO_BACKWARD(NAME, 1, 1, 1, 1, NAME##_create, NAME##_forward, NULL, NULL)

ARG_OPERATOR(ArgMax, 1);
ARG_OPERATOR(ArgMin, -1);
