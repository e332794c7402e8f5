/* Clip (ONNX opsets 1 to 13): Y = min(max(X, min), max). From opset 11 min
 * and max are optional scalar inputs (defaults -inf and +inf) whose values are
 * read at each forward call; before, they are the float attributes min and
 * max (same defaults), and the operator takes one input. When min > max every
 * element becomes max. X may be of any numeric type; min and max must have its
 * type. The gradient passes to X where min < X < max, to min where X <= min
 * and to max where X >= max.
 * https://onnx.ai/onnx/operators/onnx__Clip.html */
#include "util.h"

#include <math.h>

/* The bounds of opsets 1 to 10, from the attributes; NULL state from opset 11. */
typedef struct clip_bounds {
    double lo, hi;
} clip_bounds;

/* Opsets 1 to 10: one input, and the bounds from the attributes. */
static d5_status clip_attributes(int32_t nin, const d5_attrs *attrs, int64_t opset, void **state)
{
    clip_bounds b;
    if (nin > 1)
        return d5_error(D5_ERR_INVALID,
                        "Clip: opset %lld takes 1 input (min and max are attributes), got %d",
                        (long long)opset, (int)nin);
    d5_status s = d5_attrs_float(attrs, "min", -INFINITY, &b.lo);
    if (s == D5_OK) s = d5_attrs_float(attrs, "max", INFINITY, &b.hi);
    if (s != D5_OK) return s;
    return d5__ref_state(state, &b, sizeof b, "Clip");
}

static d5_status clip_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    static const char *const what[3] = {"input", "min", "max"};
    int64_t opset;
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Clip: input 0 is required");
    if (in[0].desc.dtype == D5_BOOL)
        return d5_error(D5_ERR_UNSUPPORTED, "Clip: input 0 has data type bool, expected a number");
    d5_status s = d5__ref_opset("Clip", attrs, D5__OPSET_NEWEST, &opset);
    if (s != D5_OK) return s;
    if (opset < 11) {
        s = clip_attributes(nin, attrs, opset, state);
        if (s == D5_OK) out[0] = in[0].desc;
        return s;
    }
    if (d5_attrs_find(attrs, "min") || d5_attrs_find(attrs, "max"))
        return d5_error(D5_ERR_INVALID,
                        "Clip: opset %lld takes min and max as inputs 1 and 2, not as attributes",
                        (long long)opset);
    for (int32_t i = 1; i < nin; i++) {
        if (!d5__has_input(in, nin, i)) continue;
        if (in[i].desc.dtype != in[0].desc.dtype)
            return d5_error(D5_ERR_INVALID, "Clip: input %d (%s) has data type %s, input 0 %s",
                            (int)i, what[i], d5_dtype_name((d5_dtype)in[i].desc.dtype),
                            d5_dtype_name((d5_dtype)in[0].desc.dtype));
        if (d5_tensor_desc_numel(&in[i].desc) != 1) {
            char shape[96];
            d5__shape_str(&in[i].desc, shape, sizeof shape);
            return d5_error(D5_ERR_SHAPE, "Clip: input %d (%s) has shape %s, expected a scalar",
                            (int)i, what[i], shape);
        }
    }
    out[0] = in[0].desc;
    return D5_OK;
}

/* The bounds of this call: an omitted input is -inf or +inf. */
static double bound(const d5_rt *in, int32_t nin, int32_t i, double def)
{
    return i < nin && in[i].data ? in[i].data[0] : def;
}

static d5_status clip_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *out = call->outputs;
    const clip_bounds *b = state;
    double lo = b ? b->lo : bound(in, nin, 1, -INFINITY),
           hi = b ? b->hi : bound(in, nin, 2, INFINITY);
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i];
        double y = x < lo ? lo : x;
        out[0].data[i] = y > hi ? hi : y;
    }
    return D5_OK;
}

static d5_status clip_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *in = call->inputs;
    int32_t nin = call->ninputs;
    d5_rt *gin = call->grad_inputs;
    const clip_bounds *b = state;
    if (b) { /* opsets 1 to 10: the bounds are constants */
        if (gin[0].data)
            for (int64_t i = 0; i < in[0].numel; i++) {
                double x = in[0].data[i];
                int inside = !(x >= b->hi || b->lo > b->hi) && !(x <= b->lo);
                if (inside) gin[0].data[i] += gout[0].data[i];
            }
        return D5_OK;
    }
    int has_lo = nin > 1 && in[1].data, has_hi = nin > 2 && in[2].data;
    double lo = bound(in, nin, 1, -INFINITY), hi = bound(in, nin, 2, INFINITY);
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i], g = gout[0].data[i];
        if (has_hi && (x >= hi || lo > hi)) {
            if (gin[2].data) gin[2].data[0] += g;
        } else if (has_lo && x <= lo) {
            if (gin[1].data) gin[1].data[0] += g;
        } else if (gin[0].data) {
            gin[0].data[i] += g;
        }
    }
    return D5_OK;
}

static double clip_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_tensor_desc *in = shapes->inputs;
    (void)state;
    return 2.0 * (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(Clip, 1, 3, 1, 1, clip_create, clip_forward, clip_backward, NULL, clip_flops);
