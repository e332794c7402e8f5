/* Upsample (ONNX opset 9; opset 7 read as the spec has it; deprecated since
 * opset 10 for Resize): scales X (any numeric type) up by `scales`, one value
 * >= 1 per dimension: the attribute scales in opset 7, input 1 (float32,
 * known at create, as it decides the output shape) from opset 9. Along
 * dimension d, out = floor(in * scale), and output coordinate x reads input
 * coordinate x / scale, as Resize with coordinate_transformation_mode
 * "asymmetric" does: mode "nearest" (the default) takes the element at
 * floor(x / scale), mode "linear" blends the two around x / scale along every
 * dimension (positions past the last element clamp to it). The gradient with
 * respect to X scatters each output gradient back with the same weights.
 * https://onnx.ai/onnx/operators/onnx__Upsample.html */
#include "util.h"

#include <math.h>
#include <string.h>

typedef struct upsample {
    int32_t ndim;
    int linear;
    int64_t in[D5_MAX_DIMS], out[D5_MAX_DIMS];
    double scale[D5_MAX_DIMS];
} upsample;

static d5_status upsample_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_tensor_desc *out = args->outputs;
    int64_t opset, n = 0;
    double scales[D5_MAX_DIMS];
    const char *mode;
    d5_status s = d5__need_types("Upsample", in, nin, 0, D5__NUMBERS);
    if (s == D5_OK) s = d5__ref_opset("Upsample", attrs, D5__OPSET_NEWEST, &opset);
    if (s == D5_OK) s = d5_attrs_string(attrs, "mode", "nearest", &mode);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc;
    if (strcmp(mode, "nearest") != 0 && strcmp(mode, "linear") != 0)
        return d5_error(D5_ERR_INVALID, "Upsample: mode is '%s', expected nearest or linear", mode);
    if (opset < 9) {
        const d5_attr *a = d5_attrs_find(attrs, "scales");
        if (!a || a->type != D5_ATTR_FLOATS)
            return d5_error(D5_ERR_INVALID,
                            "Upsample: attribute scales (floats) is required before opset 9");
        n = a->count;
        for (int64_t d = 0; d < n && d < D5_MAX_DIMS; d++) scales[d] = a->floats[d];
    } else {
        s = d5__const_floats("Upsample", in, nin, 1, "scales", scales, D5_MAX_DIMS, &n);
        if (s != D5_OK) return s;
    }
    if (n != x->ndim)
        return d5_error(D5_ERR_SHAPE, "Upsample: scales has %lld values, expected %d (X's rank)",
                        (long long)n, (int)x->ndim);
    upsample *u = d5_alloc(sizeof *u, "Upsample");
    if (!u) return D5_ERR_NOMEM;
    memset(u, 0, sizeof *u);
    u->ndim = x->ndim;
    u->linear = strcmp(mode, "linear") == 0;
    out[0] = *x;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (!(scales[d] >= 1) || !isfinite(scales[d])) {
            d5_free(u);
            return d5_error(D5_ERR_INVALID, "Upsample: scales[%d] is %g, expected a value >= 1",
                            (int)d, scales[d]);
        }
        u->in[d] = x->shape[d];
        u->out[d] = out[0].shape[d] = (int64_t)floor((double)x->shape[d] * scales[d]);
        u->scale[d] = scales[d];
    }
    *state = u;
    return D5_OK;
}

/* Along dimension d, output coordinate c reads input lo (weight 1 - w) and
 * hi (weight w). */
static void taps(const upsample *u, int32_t d, int64_t c, int64_t *lo, int64_t *hi, double *w)
{
    double pos = (double)c / u->scale[d];
    int64_t last = u->in[d] - 1;
    *lo = (int64_t)floor(pos);
    if (*lo > last) *lo = last;
    *hi = *lo < last ? *lo + 1 : last;
    *w = u->linear && *hi != *lo ? pos - (double)*lo : 0;
}

/* Forward (gx NULL: y = the upsampled x) or backward (gx += the adjoint of
 * gy) over every output element and its 2^ndim corners (one where w = 0). */
static void run(const upsample *u, const double *x, double *y, const double *gy, double *gx,
                int64_t numel)
{
    for (int64_t e = 0; e < numel; e++) {
        int64_t lo[D5_MAX_DIMS], hi[D5_MAX_DIMS];
        double w[D5_MAX_DIMS];
        int64_t rest = e;
        for (int32_t d = u->ndim - 1; d >= 0; d--) {
            taps(u, d, rest % u->out[d], &lo[d], &hi[d], &w[d]);
            rest /= u->out[d];
        }
        double acc = 0;
        for (uint32_t corner = 0; corner < (1u << u->ndim); corner++) {
            double weight = 1;
            int64_t src = 0;
            for (int32_t d = 0; d < u->ndim && weight != 0; d++) {
                int up = (corner >> d) & 1;
                weight *= up ? w[d] : 1 - w[d];
                src = src * u->in[d] + (up ? hi[d] : lo[d]);
            }
            if (weight == 0) continue;
            if (gx)
                gx[src] += weight * gy[e];
            else
                acc += weight * x[src];
        }
        if (!gx) y[e] = acc;
    }
}

static d5_status upsample_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    run(state, in[0].data, out[0].data, NULL, NULL, out[0].numel);
    return D5_OK;
}

static d5_status upsample_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    const d5_rt *out = call->outputs;
    d5_rt *gin = call->grad_inputs;
    if (gin[0].data) run(state, NULL, NULL, gout[0].data, gin[0].data, out[0].numel);
    return D5_OK;
}

D5_REF_OPERATOR(Upsample, 1, 2, 1, 1, upsample_create, upsample_forward, upsample_backward, NULL,
                NULL);
