/* Clip (ONNX opset 13): Y = min(max(X, min), max), with min and max optional
 * scalar inputs (defaults -inf and +inf) whose values are read at each forward
 * call. When min > max every element becomes max. X may be of any numeric
 * type; min and max must have its type. The gradient passes to X where
 * min < X < max, to min where X <= min and to max where X >= max.
 * https://onnx.ai/onnx/operators/onnx__Clip.html */
#include "util.h"

#include <math.h>

static d5_status clip_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                             d5_tensor_desc *out, int32_t nout, void **state)
{
    (void)attrs;
    (void)nout;
    (void)state;
    static const char *const what[3] = {"input", "min", "max"};
    if (!d5__has_input(in, nin, 0)) return d5_error(D5_ERR_INVALID, "Clip: input 0 is required");
    if (in[0].desc.dtype == D5_BOOL)
        return d5_error(D5_ERR_UNSUPPORTED, "Clip: input 0 has data type bool, expected a number");
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

static d5_status clip_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out, int32_t nout)
{
    (void)state;
    (void)nout;
    double lo = bound(in, nin, 1, -INFINITY), hi = bound(in, nin, 2, INFINITY);
    for (int64_t i = 0; i < in[0].numel; i++) {
        double x = in[0].data[i];
        double y = x < lo ? lo : x;
        out[0].data[i] = y > hi ? hi : y;
    }
    return D5_OK;
}

static d5_status clip_backward(void *state, const d5_rt *gout, int32_t nout, const d5_rt *in,
                               int32_t nin, const d5_rt *out, d5_rt *gin)
{
    (void)state;
    (void)nout;
    (void)out;
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

static double clip_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                         const d5_tensor_desc *out, int32_t nout)
{
    (void)state;
    (void)nin;
    (void)out;
    (void)nout;
    return 2.0 * (double)d5_tensor_desc_numel(&in[0]);
}

D5_REF_OPERATOR(Clip, 1, 3, 1, 1, clip_create, clip_forward, clip_backward, NULL, clip_flops);
