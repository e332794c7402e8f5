/* OneHot (ONNX opset 11): for each element of `indices` (any numeric data
 * type; a non-integer value is truncated) a vector of `depth` elements that
 * holds values[1] (on) at the index and values[0] (off) elsewhere. depth is a
 * numeric scalar or one-element tensor known at create (a floating-point depth
 * is truncated, as ONNX's cast to int64 does); values is a two-element tensor
 * of any data type, which the output takes. The new dimension goes at `axis`
 * (attribute, default -1: last; negative counts from the back of the output's
 * rank r + 1). An index in [-depth, -1] counts from the end; one outside
 * [-depth, depth - 1] gives a vector of off values. No gradient.
 * https://onnx.ai/onnx/operators/onnx__OneHot.html */
#include "util.h"

#include <math.h>

typedef struct onehot {
    int64_t outer, depth, inner;
} onehot;

/* Reads depth (input 1), of any numeric type, known at create. */
static d5_status read_depth(const d5_tensor *in, int32_t nin, int64_t *depth)
{
    int64_t n = 0;
    double v = 0;
    d5_status s = d5__const_numbers("OneHot", in, nin, 1, "depth", &v, 1, &n);
    if (s != D5_OK) return s;
    if (n != 1)
        return d5_error(D5_ERR_INVALID, "OneHot: input 1 (depth) must hold one value, got %lld",
                        (long long)n);
    if (!(fabs(v) < 0x1p62))
        return d5_error(D5_ERR_INVALID, "OneHot: input 1 (depth) is %g, expected a count", v);
    *depth = (int64_t)v;
    if (*depth < 1)
        return d5_error(D5_ERR_INVALID, "OneHot: input 1 (depth) is %lld, expected >= 1",
                        (long long)*depth);
    return D5_OK;
}

static d5_status onehot_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    static const char *const names[3] = {"indices", "depth", "values"};
    for (int32_t i = 0; i < 3; i++)
        if (!d5__has_input(in, nin, i))
            return d5_error(D5_ERR_INVALID, "OneHot: input %d (%s) is required", (int)i, names[i]);
    const d5_tensor_desc *ind = &in[0].desc;
    if (ind->dtype == D5_BOOL)
        return d5_error(D5_ERR_INVALID, "OneHot: indices are bool, expected a numeric data type");
    if (d5_tensor_desc_numel(&in[2].desc) != 2)
        return d5_error(D5_ERR_SHAPE,
                        "OneHot: input 2 (values) has %lld elements, expected 2 (off, on)",
                        (long long)d5_tensor_desc_numel(&in[2].desc));
    if (ind->ndim + 1 > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "OneHot: indices have %d dims; the output would have %d, at most %d "
                        "supported",
                        (int)ind->ndim, (int)ind->ndim + 1, D5_MAX_DIMS);
    int64_t depth = 0, axis;
    int32_t ax;
    d5_status s = read_depth(in, nin, &depth);
    if (s == D5_OK) s = d5_attrs_int(attrs, "axis", -1, &axis);
    if (s == D5_OK) s = d5__axis("OneHot", axis, ind->ndim + 1, &ax);
    if (s != D5_OK) return s;
    onehot h = {1, depth, 1};
    out[0].dtype = in[2].desc.dtype;
    out[0].ndim = ind->ndim + 1;
    for (int32_t d = 0, j = 0; d < out[0].ndim; d++) {
        if (d == ax) {
            out[0].shape[d] = depth;
            continue;
        }
        out[0].shape[d] = ind->shape[j];
        if (d < ax)
            h.outer *= ind->shape[j];
        else
            h.inner *= ind->shape[j];
        j++;
    }
    return d5__ref_state(state, &h, sizeof h, "OneHot");
}

static d5_status onehot_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    const onehot *h = state;
    double off = in[2].data[0], on = in[2].data[1];
    for (int64_t o = 0; o < h->outer; o++)
        for (int64_t k = 0; k < h->inner; k++) {
            double v = in[0].data[o * h->inner + k];
            int64_t idx = -1;
            if (v >= -(double)h->depth && v < (double)h->depth) {
                idx = (int64_t)v;
                if (idx < 0) idx += h->depth;
            }
            for (int64_t c = 0; c < h->depth; c++)
                out[0].data[(o * h->depth + c) * h->inner + k] = c == idx ? on : off;
        }
    return D5_OK;
}

D5_REF_OPERATOR_NO_BACKWARD(OneHot, 3, 3, 1, 1, onehot_create, onehot_forward, NULL, NULL);
