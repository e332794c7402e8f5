/* Slice (ONNX opsets 1 to 13): Y takes, along each of `axes`, the elements
 * start, start + step, ... short of end. From opset 10 starts, ends, axes
 * (default 0..n-1) and steps (default 1) are int64 inputs known at create;
 * before, starts and ends are required attributes, axes an optional one, and
 * steps are 1. Negative starts and ends count from the back; then they are
 * clamped to [0, dim] (step > 0) or [-1, dim - 1] (step < 0, slicing
 * backwards; start to [0, dim - 1]).
 * https://onnx.ai/onnx/operators/onnx__Slice.html */
#include "shape_util.h"

typedef struct slice {
    int64_t start[D5_MAX_DIMS], step[D5_MAX_DIMS]; /* per axis of the input */
} slice;

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Clamps start and end of one axis of size dim; returns the output size. */
static int64_t resolve(int64_t dim, int64_t *start, int64_t end, int64_t step)
{
    if (dim == 0) {
        *start = 0;
        return 0;
    }
    if (*start < 0) *start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
        *start = clamp(*start, 0, dim);
        end = clamp(end, 0, dim);
        return end > *start ? (end - *start - 1) / step + 1 : 0;
    }
    *start = clamp(*start, 0, dim - 1);
    end = clamp(end, -1, dim - 1);
    int64_t back = step == INT64_MIN ? INT64_MAX : -step;
    return *start > end ? (*start - end - 1) / back + 1 : 0;
}

static const char *const names[4] = {"starts", "ends", "axes", "steps"};

/* Opsets 1 to 9: starts, ends and axes from the attributes; n[2] is -1
 * without axes, n[3] -1 (no steps). */
static d5_status read_attributes(int32_t nin, const d5_attrs *attrs, int64_t opset,
                                 int64_t v[4][D5_MAX_DIMS], int64_t n[4])
{
    if (nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "Slice: opset %lld takes 1 input (starts, ends and axes are attributes), "
                        "got %d",
                        (long long)opset, (int)nin);
    n[3] = -1;
    for (int32_t i = 0; i < 3; i++) {
        const int64_t *vals;
        d5_status s = d5_attrs_ints(attrs, names[i], &vals, &n[i]);
        if (s != D5_OK) return s;
        if (!vals && i < 2)
            return d5_error(D5_ERR_INVALID, "Slice: opset %lld requires the attribute %s",
                            (long long)opset, names[i]);
        if (!vals) {
            n[i] = -1;
            continue;
        }
        if (n[i] > D5_MAX_DIMS)
            return d5_error(D5_ERR_INVALID, "Slice: %s has %lld values, at most %d allowed",
                            names[i], (long long)n[i], D5_MAX_DIMS);
        if (n[i] != n[0])
            return d5_error(D5_ERR_INVALID, "Slice: starts has %lld values but %s has %lld",
                            (long long)n[0], names[i], (long long)n[i]);
        for (int64_t k = 0; k < n[i]; k++) v[i][k] = vals[k];
    }
    return D5_OK;
}

/* Opset 10 and later: starts, ends, axes and steps from inputs 1 to 4. */
static d5_status read_inputs(const d5_tensor *in, int32_t nin, const d5_attrs *attrs, int64_t opset,
                             int64_t v[4][D5_MAX_DIMS], int64_t n[4])
{
    d5_status s = D5_OK;
    for (int32_t i = 0; i < 3; i++)
        if (d5_attrs_find(attrs, names[i]))
            return d5_error(D5_ERR_INVALID,
                            "Slice: opset %lld takes %s as input %d, not as an attribute",
                            (long long)opset, names[i], (int)i + 1);
    if (nin < 3)
        return d5_error(D5_ERR_INVALID,
                        "Slice: opset %lld takes 3 to 5 inputs (data, starts, ends, axes, "
                        "steps), got %d",
                        (long long)opset, (int)nin);
    for (int32_t i = 1; s == D5_OK && i < 5; i++) {
        if (i >= 3 && !d5__has_input(in, nin, i)) {
            n[i - 1] = -1;
            continue;
        }
        s = d5__const_ints("Slice", in, nin, i, names[i - 1], v[i - 1], D5_MAX_DIMS, &n[i - 1]);
        if (s == D5_OK && in[i].desc.ndim != 1)
            s = d5_error(D5_ERR_INVALID, "Slice: input %d (%s) must be 1-d, got %d-d", (int)i,
                         names[i - 1], (int)in[i].desc.ndim);
        if (s == D5_OK && n[i - 1] != n[0])
            s = d5_error(D5_ERR_INVALID, "Slice: starts has %lld values but %s has %lld",
                         (long long)n[0], names[i - 1], (long long)n[i - 1]);
    }
    return s;
}

static d5_status slice_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int64_t v[4][D5_MAX_DIMS], n[4], opset;
    d5_status s = d5__need_input("Slice", in, nin, 0, "data");
    if (s == D5_OK) s = d5__ref_opset("Slice", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK)
        s = opset < 10 ? read_attributes(nin, attrs, opset, v, n)
                       : read_inputs(in, nin, attrs, opset, v, n);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    int32_t axes[D5_MAX_DIMS];
    if (n[2] < 0)
        for (int32_t k = 0; k < n[0]; k++) v[2][k] = k;
    s = d5__resolve_axes("Slice", v[2], n[0], x->ndim, axes);
    if (s != D5_OK) return s;
    slice *st = d5_alloc(sizeof *st, "Slice");
    if (!st) return D5_ERR_NOMEM;
    out[0] = *x;
    for (int32_t d = 0; d < x->ndim; d++) {
        st->start[d] = 0;
        st->step[d] = 1;
    }
    for (int32_t k = 0; k < n[0]; k++) {
        int64_t step = n[3] < 0 ? 1 : v[3][k];
        if (step == 0) {
            d5_free(st);
            return d5_error(D5_ERR_INVALID, "Slice: steps[%d] is 0", (int)k);
        }
        int32_t d = axes[k];
        st->start[d] = v[0][k];
        st->step[d] = step;
        out[0].shape[d] = resolve(x->shape[d], &st->start[d], v[1][k], step);
    }
    *state = st;
    return D5_OK;
}

/* The flat index in X of element i of Y. */
static int64_t source(const slice *sl, const d5_tensor_desc *x, const d5_tensor_desc *y, int64_t i)
{
    int64_t c[D5_MAX_DIMS], idx = 0;
    d5__unravel(y, i, c);
    for (int32_t d = 0; d < x->ndim; d++)
        idx = idx * x->shape[d] + sl->start[d] + c[d] * sl->step[d];
    return idx;
}

static d5_status slice_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    for (int64_t i = 0; i < out[0].numel; i++)
        out[0].data[i] = in[0].data[source(state, in[0].desc, out[0].desc, i)];
    return D5_OK;
}

static d5_status slice_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    if (gin[0].data)
        for (int64_t i = 0; i < out[0].numel; i++)
            gin[0].data[source(state, in[0].desc, out[0].desc, i)] += gout[0].data[i];
    return D5_OK;
}

D5_REF_OPERATOR(Slice, 1, 5, 1, 1, slice_create, slice_forward, slice_backward, NULL, NULL);
