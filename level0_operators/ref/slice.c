/* Slice (ONNX opset 13): Y takes, along each of `axes`, the elements start,
 * start + step, ... short of end. starts, ends, axes (default 0..n-1) and steps
 * (default 1) are int64 inputs known at create. Negative starts and ends count
 * from the back; then they are clamped to [0, dim] (step > 0) or [-1, dim - 1]
 * (step < 0, slicing backwards; start to [0, dim - 1]).
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

static d5_status slice_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                              d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    const char *names[4] = {"starts", "ends", "axes", "steps"};
    int64_t v[4][D5_MAX_DIMS], n[4];
    d5_status s = d5__need_input("Slice", in, nin, 0, "data");
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

static d5_status slice_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)nin;
    (void)nout;
    for (int64_t i = 0; i < out[0].numel; i++)
        out[0].data[i] = in[0].data[source(state, in[0].desc, out[0].desc, i)];
    return D5_OK;
}

static d5_status slice_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                                int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)nout;
    (void)nin;
    if (gin[0].data)
        for (int64_t i = 0; i < out[0].numel; i++)
            gin[0].data[source(state, in[0].desc, out[0].desc, i)] += gout[0].data[i];
    return D5_OK;
}

D5_REF_OPERATOR(Slice, 3, 5, 1, 1, slice_create, slice_forward, slice_backward, NULL, NULL);
