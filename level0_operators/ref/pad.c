/* Pad (ONNX opsets 1 to 21): pads[i] elements are added before axis i and
 * pads[i + r] after it (negative pads remove elements). From opset 11 pads is
 * an int64 input known at create, with the optional scalar input
 * constant_value (default 0, read at run time) and, from opset 18, the
 * optional input axes that pads covers; before opset 11 they are the
 * attributes pads (paddings in opset 1) and value (a float, default 0), and
 * the operator takes one input. mode constant fills with the constant;
 * reflect mirrors the input without repeating its edge; edge repeats the
 * edge; wrap (opset 19) repeats the input periodically. Removal happens
 * before padding.
 * https://onnx.ai/onnx/operators/onnx__Pad.html */
#include "shape_util.h"

#include <string.h>

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

typedef struct pad {
    int mode;
    int value_attr; /* opsets 1 to 10: the constant is `value`, not an input */
    double value;
    int64_t before[D5_MAX_DIMS]; /* elements added before the kept ones, >= 0 */
    int64_t first[D5_MAX_DIMS];  /* first input element kept */
    int64_t kept[D5_MAX_DIMS];   /* input elements kept */
} pad;

static const char *const mode_names[4] = {"constant", "reflect", "edge", "wrap"};

static d5_status parse_mode(const d5_attrs *attrs, int64_t opset, int *mode)
{
    const char *m;
    d5_status s = d5_attrs_string(attrs, "mode", "constant", &m);
    if (s != D5_OK) return s;
    for (int k = 0; k < 4; k++)
        if (strcmp(m, mode_names[k]) == 0) {
            if (k == PAD_WRAP && opset < 19)
                return d5_error(D5_ERR_INVALID,
                                "Pad: mode 'wrap' belongs to opset 19 and later, not to opset %lld",
                                (long long)opset);
            *mode = k;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID, "Pad: mode '%s' is not constant, reflect, edge or wrap", m);
}

/* Opsets 1 to 10: pads (paddings in opset 1) and value are attributes. */
static d5_status read_pad_attributes(int32_t nin, const d5_attrs *attrs, int64_t opset,
                                     int32_t ndim, int64_t *begin, int64_t *end, double *value)
{
    const char *name = opset < 2 ? "paddings" : "pads";
    const int64_t *pads;
    int64_t np;
    if (nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "Pad: opset %lld takes 1 input (%s and value are attributes), got %d",
                        (long long)opset, name, (int)nin);
    d5_status s = d5_attrs_ints(attrs, name, &pads, &np);
    if (s == D5_OK) s = d5_attrs_float(attrs, "value", 0.0, value);
    if (s != D5_OK) return s;
    if (!pads)
        return d5_error(D5_ERR_INVALID, "Pad: opset %lld requires the attribute %s",
                        (long long)opset, name);
    if (np != 2 * (int64_t)ndim)
        return d5_error(D5_ERR_INVALID, "Pad: attribute %s has %lld values, expected %lld", name,
                        (long long)np, (long long)(2 * ndim));
    for (int32_t d = 0; d < ndim; d++) {
        begin[d] = pads[d];
        end[d] = pads[d + ndim];
    }
    return D5_OK;
}

/* Opset 11 and later: reads pads (and axes) into per-axis begin and end
 * amounts. */
static d5_status read_pads(const d5_tensor *in, int32_t nin, const d5_attrs *attrs, int64_t opset,
                           int32_t ndim, int64_t *begin, int64_t *end)
{
    int64_t pads[2 * D5_MAX_DIMS], axes[D5_MAX_DIMS], np, na = ndim;
    int32_t ax[D5_MAX_DIMS];
    if (d5_attrs_find(attrs, "pads") || d5_attrs_find(attrs, "value"))
        return d5_error(D5_ERR_INVALID,
                        "Pad: opset %lld takes pads and constant_value as inputs 1 and 2, not as "
                        "attributes",
                        (long long)opset);
    if (nin < 2)
        return d5_error(D5_ERR_INVALID, "Pad: opset %lld takes 2 to %d inputs, got %d",
                        (long long)opset, opset < 18 ? 3 : 4, (int)nin);
    if (opset < 18 && nin > 3)
        return d5_error(D5_ERR_INVALID,
                        "Pad: input 3 (axes) belongs to opset 18 and later, not to opset %lld",
                        (long long)opset);
    d5_status s = d5__const_ints("Pad", in, nin, 1, "pads", pads, 2 * D5_MAX_DIMS, &np);
    if (s == D5_OK && d5__has_input(in, nin, 3))
        s = d5__const_ints("Pad", in, nin, 3, "axes", axes, D5_MAX_DIMS, &na);
    else
        for (int32_t d = 0; d < ndim; d++) axes[d] = d;
    if (s == D5_OK) s = d5__resolve_axes("Pad", axes, na, ndim, ax);
    if (s != D5_OK) return s;
    if (np != 2 * na)
        return d5_error(D5_ERR_INVALID, "Pad: input 1 (pads) has %lld values, expected %lld",
                        (long long)np, (long long)(2 * na));
    for (int32_t d = 0; d < ndim; d++) begin[d] = end[d] = 0;
    for (int64_t k = 0; k < na; k++) {
        begin[ax[k]] = pads[k];
        end[ax[k]] = pads[k + na];
    }
    return D5_OK;
}

static d5_status pad_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    pad p = {0};
    int64_t begin[D5_MAX_DIMS], end[D5_MAX_DIMS], opset;
    d5_status s = d5__need_input("Pad", in, nin, 0, "data");
    if (s == D5_OK) s = d5__ref_opset("Pad", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = parse_mode(attrs, opset, &p.mode);
    if (s != D5_OK) return s;
    p.value_attr = opset < 11;
    s = p.value_attr ? read_pad_attributes(nin, attrs, opset, in[0].desc.ndim, begin, end, &p.value)
                     : read_pads(in, nin, attrs, opset, in[0].desc.ndim, begin, end);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (d5__has_input(in, nin, 2)) {
        if (in[2].desc.dtype != x->dtype)
            return d5_error(D5_ERR_INVALID, "Pad: constant_value has data type %s, data %s",
                            d5_dtype_name((d5_dtype)in[2].desc.dtype),
                            d5_dtype_name((d5_dtype)x->dtype));
        if (d5_tensor_desc_numel(&in[2].desc) != 1)
            return d5_error(D5_ERR_SHAPE, "Pad: constant_value must be a scalar, got %lld values",
                            (long long)d5_tensor_desc_numel(&in[2].desc));
    }
    out[0] = *x;
    for (int32_t d = 0; d < x->ndim; d++) {
        const int64_t big = INT64_MAX / 4;
        if (begin[d] > big || begin[d] < -big || end[d] > big || end[d] < -big)
            return d5_error(D5_ERR_RANGE, "Pad: pads of axis %d are too large", (int)d);
        int64_t cut_front = begin[d] < 0 ? -begin[d] : 0, cut_back = end[d] < 0 ? -end[d] : 0;
        if (cut_front + cut_back > x->shape[d])
            return d5_error(D5_ERR_SHAPE,
                            "Pad: pads remove %lld elements from axis %d of size %lld",
                            (long long)(cut_front + cut_back), (int)d, (long long)x->shape[d]);
        p.before[d] = begin[d] > 0 ? begin[d] : 0;
        p.first[d] = cut_front;
        p.kept[d] = x->shape[d] - cut_front - cut_back;
        out[0].shape[d] = x->shape[d] + begin[d] + end[d];
        if (p.mode != PAD_CONSTANT && p.kept[d] == 0 && out[0].shape[d] > 0)
            return d5_error(D5_ERR_SHAPE, "Pad: cannot pad axis %d in mode %s: it has no elements",
                            (int)d, mode_names[p.mode]);
    }
    return d5__ref_state(state, &p, sizeof p, "Pad");
}

/* The input position read for position j (relative to the first kept
 * element) along an axis with n kept elements; -1 for the constant. */
static int64_t fold(int mode, int64_t j, int64_t n)
{
    if (j >= 0 && j < n) return j;
    switch (mode) {
    case PAD_EDGE: return j < 0 ? 0 : n - 1;
    case PAD_WRAP: return ((j % n) + n) % n;
    case PAD_REFLECT:
        if (n == 1) return 0;
        j = ((j % (2 * (n - 1))) + 2 * (n - 1)) % (2 * (n - 1));
        return j < n ? j : 2 * (n - 1) - j;
    default: return -1;
    }
}

/* The flat index in X read by element i of Y; -1 for the constant. */
static int64_t source(const pad *p, const d5_tensor_desc *x, const d5_tensor_desc *y, int64_t i)
{
    int64_t c[D5_MAX_DIMS], idx = 0;
    d5__unravel(y, i, c);
    for (int32_t d = 0; d < x->ndim; d++) {
        int64_t j = fold(p->mode, c[d] - p->before[d], p->kept[d]);
        if (j < 0) return -1;
        idx = idx * x->shape[d] + p->first[d] + j;
    }
    return idx;
}

static d5_status pad_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const pad *p = state;
    double value = p->value_attr ? p->value : nin > 2 && in[2].data ? in[2].data[0] : 0;
    for (int64_t i = 0; i < out[0].numel; i++) {
        int64_t k = source(state, in[0].desc, out[0].desc, i);
        out[0].data[i] = k < 0 ? value : in[0].data[k];
    }
    return D5_OK;
}

/* dX sums dY over the outputs that read each element; d(constant_value) sums
 * dY over the padding. */
static d5_status pad_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    for (int64_t i = 0; i < out[0].numel; i++) {
        int64_t k = source(state, in[0].desc, out[0].desc, i);
        if (k >= 0 && gin[0].data) gin[0].data[k] += gout[0].data[i];
        if (k < 0 && nin > 2 && gin[2].data) gin[2].data[0] += gout[0].data[i];
    }
    return D5_OK;
}

D5_REF_OPERATOR(Pad, 1, 4, 1, 1, pad_create, pad_forward, pad_backward, NULL, NULL);
