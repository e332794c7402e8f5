/* CenterCropPad (ONNX opset 18): crops or zero-pads input 0 (any numeric or
 * bool type) to `shape` (input 1, int64 or int32, known at create) along
 * `axes` (attribute; default all axes, negative ones count from the back),
 * keeping the others. Along an axis of size D resized to S, output element o
 * reads input element o + (D - S) / 2, the division truncated toward zero:
 * a crop starts at floor((D - S) / 2), and a pad puts floor((S - D) / 2)
 * zeros before the input and the odd one after it, as the specification and
 * ONNX's reference implementation say. Elements that read outside the input
 * are 0.
 *
 * The gradient with respect to input 0 is the adjoint copy: each input
 * element kept receives its output element's gradient, a cropped one 0.
 * https://onnx.ai/onnx/operators/onnx__CenterCropPad.html */
#include "util.h"

typedef struct centercroppad {
    int32_t ndim;
    int64_t in[D5_MAX_DIMS], out[D5_MAX_DIMS];
    int64_t offset[D5_MAX_DIMS]; /* input index = output index + offset */
    int64_t out_numel;
} centercroppad;

/* Reads axes (default 0..rank-1) into axes[0..*naxes-1], resolved and
 * distinct. */
static d5_status read_axes(const d5_attrs *attrs, int32_t rank, int32_t *axes, int64_t *naxes)
{
    const int64_t *given;
    d5_status s = d5_attrs_ints(attrs, "axes", &given, naxes);
    if (s != D5_OK) return d5_error(s, "CenterCropPad: attribute axes must be a list of integers");
    if (!given) *naxes = rank;
    if (*naxes > rank)
        return d5_error(D5_ERR_INVALID, "CenterCropPad: axes has %lld values for a %d-d input",
                        (long long)*naxes, (int)rank);
    int seen[D5_MAX_DIMS] = {0};
    for (int64_t k = 0; k < *naxes; k++) {
        if (!given) {
            axes[k] = (int32_t)k;
            continue;
        }
        s = d5__axis("CenterCropPad", given[k], rank, &axes[k]);
        if (s != D5_OK) return s;
        if (seen[axes[k]]++)
            return d5_error(D5_ERR_INVALID, "CenterCropPad: axes names axis %d twice",
                            (int)axes[k]);
    }
    return D5_OK;
}

static d5_status centercroppad_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    centercroppad c = {0};
    int32_t axes[D5_MAX_DIMS];
    int64_t naxes, shape[D5_MAX_DIMS], n;
    d5_status s = d5__need_types("CenterCropPad", in, nin, 0, D5__ANY);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    s = read_axes(args->attrs, x->ndim, axes, &naxes);
    if (s == D5_OK)
        s = d5__const_ints("CenterCropPad", in, nin, 1, "shape", shape, D5_MAX_DIMS, &n);
    if (s != D5_OK) return s;
    if (n != naxes)
        return d5_error(D5_ERR_INVALID,
                        "CenterCropPad: shape (input 1) has %lld values, expected %lld (one per "
                        "%s)",
                        (long long)n, (long long)naxes,
                        d5_attrs_find(args->attrs, "axes") ? "entry of axes" : "axis of the input");
    c.ndim = x->ndim;
    for (int32_t d = 0; d < c.ndim; d++) c.in[d] = c.out[d] = x->shape[d];
    for (int64_t k = 0; k < naxes; k++) {
        if (shape[k] < 0)
            return d5_error(D5_ERR_INVALID, "CenterCropPad: shape[%lld] is %lld, must be >= 0",
                            (long long)k, (long long)shape[k]);
        c.out[axes[k]] = shape[k];
        c.offset[axes[k]] = (x->shape[axes[k]] - shape[k]) / 2;
    }
    d5_tensor_desc *y = &args->outputs[0];
    y->ndim = c.ndim;
    c.out_numel = 1;
    for (int32_t d = 0; d < c.ndim; d++) {
        y->shape[d] = c.out[d];
        c.out_numel *= c.out[d];
    }
    return d5__ref_state(state, &c, sizeof c, "CenterCropPad");
}

/* The flat input index that output element o reads; -1 in the padding. */
static int64_t source(const centercroppad *c, int64_t o)
{
    int64_t at = 0, scale = 1;
    for (int32_t d = c->ndim - 1; d >= 0; d--) {
        int64_t i = o % c->out[d] + c->offset[d];
        o /= c->out[d];
        if (i < 0 || i >= c->in[d]) return -1;
        at += i * scale;
        scale *= c->in[d];
    }
    return at;
}

static d5_status centercroppad_forward(void *state, const d5_ref_call *call)
{
    const centercroppad *c = state;
    const double *x = call->inputs[0].data;
    double *y = call->outputs[0].data;
    for (int64_t o = 0; o < c->out_numel; o++) {
        int64_t i = source(c, o);
        y[o] = i < 0 ? 0 : x[i];
    }
    return D5_OK;
}

static d5_status centercroppad_backward(void *state, const d5_ref_call *call)
{
    const centercroppad *c = state;
    double *gx = call->grad_inputs[0].data;
    const double *gy = call->grad_outputs[0].data;
    if (!gx) return D5_OK;
    for (int64_t o = 0; o < c->out_numel; o++) {
        int64_t i = source(c, o);
        if (i >= 0) gx[i] += gy[o];
    }
    return D5_OK;
}

D5_REF_OPERATOR(CenterCropPad, 2, 2, 1, 1, centercroppad_create, centercroppad_forward,
                centercroppad_backward, NULL, NULL);
