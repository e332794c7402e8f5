/* DeformConv (ONNX opsets 19 and 22), deformable convolution in any number r
 * of spatial axes: inputs X [N, C, D1..Dr], W [oC, C / group, k1..kr],
 * offset [N, offset_group * K * r, o1..or] with K = k1 * ... * kr, the
 * optional B [oC] and the optional mask [N, offset_group * K, o1..or], all of
 * one floating-point type. Attributes dilations, strides (default 1), pads
 * (default 0), group and offset_group (default 1) and kernel_shape (default:
 * W's; must match it). Along axis i the output has
 *   o_i = floor((D_i + pads[i] + pads[r + i] - dilations[i] * (k_i - 1) - 1)
 *         / strides[i]) + 1
 * positions, and offset's spatial sizes must be these. Output position o
 * reads, through kernel tap t, the point
 *   p_i = o_i * strides[i] - pads[i] + t_i * dilations[i] + offset[n, (g K + t) r + i, o]
 * of input channel c, whose offset group is g = c / (C / offset_group): the
 * r-linear interpolation of the 2^r elements around p, those outside X
 * counting as 0 (as ONNX's reference implementation, GridSample with
 * align_corners=1 and zeros padding, gives it). Then
 *   Y[n, m, o] = B[m] + sum over c in m's group and t of
 *                W[m, c mod (C / group), t] * mask[n, g K + t, o] * sample,
 * the mask 1 when omitted.
 *
 * Gradients with respect to every input: X (each interpolated element
 * receives its weight's share), W, B, mask, and offset (the slope of the
 * interpolation along each axis, which jumps where p crosses an integer).
 * https://onnx.ai/onnx/operators/onnx__DeformConv.html */
#include "spatial.h"

#include <math.h>
#include <string.h>

#define MAX_AXES (D5_MAX_DIMS - 2)

typedef struct deformconv {
    int32_t r;
    int64_t batch, in_channels, out_channels, group, offset_group;
    int64_t in[MAX_AXES], out[MAX_AXES], kernel[MAX_AXES];
    int64_t stride[MAX_AXES], dilation[MAX_AXES], pad[MAX_AXES];
    int64_t in_size, out_size, kernel_size;
    int has_bias, has_mask;
} deformconv;

/* "[2,3,4]" of a descriptor, for messages. */
static const char *shape_of(const d5_tensor_desc *d, char *buf, size_t size)
{
    d5__shape_str(d, buf, size);
    return buf;
}

/* Checks W, B and the attributes against X and fills the geometry. */
static d5_status read_geometry(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                               deformconv *c)
{
    const d5_tensor_desc *x = &in[0].desc, *w = &in[1].desc;
    char buf[96];
    if (x->ndim < 3 || w->ndim != x->ndim)
        return d5_error(D5_ERR_SHAPE,
                        "DeformConv: X has %d dims and W %d, expected the same number, at least 3 "
                        "([N, C, D1, ...] and [oC, C / group, k1, ...])",
                        (int)x->ndim, (int)w->ndim);
    int32_t r = x->ndim - 2;
    int64_t kernel_shape[MAX_AXES], pads[2 * MAX_AXES];
    c->r = r;
    d5_status s = d5_attrs_int(attrs, "group", 1, &c->group);
    if (s == D5_OK) s = d5_attrs_int(attrs, "offset_group", 1, &c->offset_group);
    if (s == D5_OK)
        s = d5__spatial_ints("DeformConv", attrs, "kernel_shape", r, r, 0, 1, kernel_shape);
    if (s == D5_OK) s = d5__spatial_ints("DeformConv", attrs, "strides", r, r, 1, 1, c->stride);
    if (s == D5_OK) s = d5__spatial_ints("DeformConv", attrs, "dilations", r, r, 1, 1, c->dilation);
    if (s == D5_OK) s = d5__spatial_ints("DeformConv", attrs, "pads", r, 2 * r, 0, 0, pads);
    if (s != D5_OK) return s;
    c->batch = x->shape[0];
    c->in_channels = x->shape[1];
    c->out_channels = w->shape[0];
    if (c->group < 1 || c->offset_group < 1)
        return d5_error(D5_ERR_INVALID,
                        "DeformConv: group is %lld and offset_group %lld, both must be positive",
                        (long long)c->group, (long long)c->offset_group);
    if (c->in_channels != w->shape[1] * c->group || c->out_channels % c->group != 0)
        return d5_error(D5_ERR_SHAPE,
                        "DeformConv: X has %lld channels and W shape %s, expected W [oC, %lld / "
                        "group, ...] with oC a multiple of group %lld",
                        (long long)c->in_channels, shape_of(w, buf, sizeof buf),
                        (long long)c->in_channels, (long long)c->group);
    if (c->in_channels % c->offset_group != 0)
        return d5_error(D5_ERR_SHAPE,
                        "DeformConv: X has %lld channels, not a multiple of offset_group %lld",
                        (long long)c->in_channels, (long long)c->offset_group);
    c->in_size = c->out_size = c->kernel_size = 1;
    for (int32_t i = 0; i < r; i++) {
        c->in[i] = x->shape[2 + i];
        c->kernel[i] = w->shape[2 + i];
        if (kernel_shape[i] != 0 && kernel_shape[i] != c->kernel[i])
            return d5_error(D5_ERR_SHAPE, "DeformConv: kernel_shape[%d] is %lld but W has shape %s",
                            (int)i, (long long)kernel_shape[i], shape_of(w, buf, sizeof buf));
        int64_t extent = c->dilation[i] * (c->kernel[i] - 1) + 1;
        int64_t span = c->in[i] + pads[i] + pads[r + i] - extent;
        if (c->kernel[i] < 1 || span < 0)
            return d5_error(D5_ERR_SHAPE,
                            "DeformConv: along spatial axis %d the dilated kernel (%lld) is larger "
                            "than the padded input (%lld)",
                            (int)i, (long long)extent,
                            (long long)(c->in[i] + pads[i] + pads[r + i]));
        c->pad[i] = pads[i];
        c->out[i] = span / c->stride[i] + 1;
        c->in_size *= c->in[i];
        c->out_size *= c->out[i];
        c->kernel_size *= c->kernel[i];
    }
    c->has_bias = d5__has_input(in, nin, 3);
    c->has_mask = d5__has_input(in, nin, 4);
    if (c->has_bias && (in[3].desc.ndim != 1 || in[3].desc.shape[0] != c->out_channels))
        return d5_error(D5_ERR_SHAPE, "DeformConv: B has shape %s, expected [%lld]",
                        shape_of(&in[3].desc, buf, sizeof buf), (long long)c->out_channels);
    return D5_OK;
}

/* Checks that input i (offset or mask) is [N, per_group * offset_group, o1..or]. */
static d5_status check_field(const deformconv *c, const d5_tensor *in, int32_t i, const char *name,
                             int64_t per_group)
{
    const d5_tensor_desc *d = &in[i].desc;
    int ok = d->ndim == c->r + 2 && d->shape[0] == c->batch &&
             d->shape[1] == per_group * c->offset_group;
    for (int32_t k = 0; ok && k < c->r; k++) ok = d->shape[2 + k] == c->out[k];
    if (ok) return D5_OK;
    char got[96], want[96] = "";
    d5__shape_str(d, got, sizeof got);
    for (int32_t k = 0; k < c->r; k++) {
        size_t len = strlen(want);
        snprintf(want + len, sizeof want - len, ", %lld", (long long)c->out[k]);
    }
    return d5_error(D5_ERR_SHAPE, "DeformConv: %s (input %d) has shape %s, expected [%lld, %lld%s]",
                    name, (int)i, got, (long long)c->batch,
                    (long long)(per_group * c->offset_group), want);
}

static d5_status deformconv_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    deformconv c;
    memset(&c, 0, sizeof c);
    d5_status s = d5__need_float("DeformConv", in, nin, 0);
    for (int32_t i = 1; s == D5_OK && i < nin; i++) s = d5__same_type("DeformConv", in, nin, i, 0);
    if (s == D5_OK) s = d5__need_input("DeformConv", in, nin, 1, "W");
    if (s == D5_OK) s = d5__need_input("DeformConv", in, nin, 2, "offset");
    if (s == D5_OK) s = read_geometry(in, nin, args->attrs, &c);
    if (s == D5_OK) s = check_field(&c, in, 2, "offset", c.kernel_size * c.r);
    if (s == D5_OK && c.has_mask) s = check_field(&c, in, 4, "mask", c.kernel_size);
    if (s != D5_OK) return s;
    d5_tensor_desc *y = &args->outputs[0];
    y->ndim = c.r + 2;
    y->shape[0] = c.batch;
    y->shape[1] = c.out_channels;
    for (int32_t i = 0; i < c.r; i++) y->shape[2 + i] = c.out[i];
    return d5__ref_state(state, &c, sizeof c, "DeformConv");
}

/* The r-linear interpolation of one channel `plane` at point p: the value,
 * and, for the 2^r corners, their offsets in the plane (idx; -1 outside X)
 * and weights (w), and in dv the value's derivative along each axis. */
static double sample(const deformconv *c, const double *plane, const double *p, int64_t *idx,
                     double *w, double *dv)
{
    int64_t lo[MAX_AXES];
    double f[MAX_AXES];
    int corners = 1 << c->r;
    for (int32_t i = 0; i < c->r; i++) dv[i] = 0;
    for (int32_t i = 0; i < c->r; i++) {
        /* Far outside (or not a number) every corner reads 0. */
        if (!(p[i] > -1 && p[i] < (double)c->in[i])) {
            for (int k = 0; k < corners; k++) {
                idx[k] = -1;
                w[k] = 0;
            }
            return 0;
        }
        double fl = floor(p[i]);
        lo[i] = (int64_t)fl;
        f[i] = p[i] - fl;
    }
    double v = 0;
    for (int k = 0; k < corners; k++) {
        double weight = 1;
        int64_t at = 0;
        int inside = 1;
        for (int32_t i = 0; i < c->r; i++) {
            int bit = (k >> (c->r - 1 - i)) & 1;
            int64_t pos = lo[i] + bit;
            inside = inside && pos >= 0 && pos < c->in[i];
            at = at * c->in[i] + pos;
            weight *= bit ? f[i] : 1 - f[i];
        }
        idx[k] = inside ? at : -1;
        w[k] = weight;
        if (!inside) continue;
        double x = plane[at];
        v += weight * x;
        for (int32_t i = 0; i < c->r; i++) {
            /* The weight without axis i's factor, signed by the corner's side. */
            double rest = 1;
            for (int32_t j = 0; j < c->r; j++) {
                if (j == i) continue;
                int bit = (k >> (c->r - 1 - j)) & 1;
                rest *= bit ? f[j] : 1 - f[j];
            }
            dv[i] += ((k >> (c->r - 1 - i)) & 1 ? rest : -rest) * x;
        }
    }
    return v;
}

/* One term's place: the sampling point of output position o through tap t
 * for image n and offset group g, into p; returns the mask's value. */
static double locate(const deformconv *c, const d5_ref_call *call, int64_t n, int64_t g, int64_t t,
                     int64_t o, double *p)
{
    const double *offset = call->inputs[2].data;
    int64_t ot = o, tt = t;
    int64_t base = ((n * c->offset_group + g) * c->kernel_size + t) * c->r;
    for (int32_t i = c->r - 1; i >= 0; i--) {
        double at = (double)((ot % c->out[i]) * c->stride[i] - c->pad[i] +
                             (tt % c->kernel[i]) * c->dilation[i]);
        p[i] = at + offset[(base + i) * c->out_size + o];
        ot /= c->out[i];
        tt /= c->kernel[i];
    }
    if (!c->has_mask) return 1;
    return call->inputs[4].data[(base / c->r) * c->out_size + o];
}

/* Both passes over every term (image n, input channel, tap t, position o).
 * Forward adds W * mask * sample into Y; backward accumulates the wanted
 * gradients. */
static void sweep(const deformconv *c, const d5_ref_call *call, int backward)
{
    const double *x = call->inputs[0].data, *wt = call->inputs[1].data;
    double *y = call->outputs[0].data;
    const double *gy = backward ? call->grad_outputs[0].data : NULL;
    d5_rt *gin = call->grad_inputs;
    int64_t per_group = c->in_channels / c->group, out_per_group = c->out_channels / c->group;
    int64_t per_offset = c->in_channels / c->offset_group;
    int64_t idx[1 << MAX_AXES];
    double w[1 << MAX_AXES], dv[MAX_AXES], p[MAX_AXES];
    for (int64_t n = 0; n < c->batch; n++)
        for (int64_t ch = 0; ch < c->in_channels; ch++) {
            int64_t g = ch / per_offset, first = ch / per_group * out_per_group;
            const double *plane = x + (n * c->in_channels + ch) * c->in_size;
            for (int64_t t = 0; t < c->kernel_size; t++)
                for (int64_t o = 0; o < c->out_size; o++) {
                    double m = locate(c, call, n, g, t, o, p);
                    double v = sample(c, plane, p, idx, w, dv);
                    /* W[k, ch mod per_group, t] is wrow[k * wstep]. */
                    const double *wrow = wt + (ch % per_group) * c->kernel_size + t;
                    int64_t wstep = per_group * c->kernel_size;
                    if (!backward) {
                        for (int64_t k = first; k < first + out_per_group; k++)
                            y[(n * c->out_channels + k) * c->out_size + o] +=
                                wrow[k * wstep] * m * v;
                        continue;
                    }
                    double gsum = 0;
                    for (int64_t k = first; k < first + out_per_group; k++) {
                        double g_out = gy[(n * c->out_channels + k) * c->out_size + o];
                        gsum += g_out * wrow[k * wstep];
                        if (gin[1].data) gin[1].data[wrow - wt + k * wstep] += g_out * m * v;
                    }
                    int64_t field = (n * c->offset_group + g) * c->kernel_size + t;
                    if (c->has_mask && gin[4].data)
                        gin[4].data[field * c->out_size + o] += gsum * v;
                    if (gin[0].data)
                        for (int k = 0; k < 1 << c->r; k++)
                            if (idx[k] >= 0)
                                gin[0].data[(n * c->in_channels + ch) * c->in_size + idx[k]] +=
                                    gsum * m * w[k];
                    if (gin[2].data)
                        for (int32_t i = 0; i < c->r; i++)
                            gin[2].data[(field * c->r + i) * c->out_size + o] += gsum * m * dv[i];
                }
        }
}

static d5_status deformconv_forward(void *state, const d5_ref_call *call)
{
    const deformconv *c = state;
    double *y = call->outputs[0].data;
    for (int64_t i = 0; i < call->outputs[0].numel; i++)
        y[i] = c->has_bias ? call->inputs[3].data[i / c->out_size % c->out_channels] : 0;
    sweep(c, call, 0);
    return D5_OK;
}

static d5_status deformconv_backward(void *state, const d5_ref_call *call)
{
    const deformconv *c = state;
    sweep(c, call, 1);
    double *gb = c->has_bias ? call->grad_inputs[3].data : NULL;
    if (gb)
        for (int64_t i = 0; i < call->outputs[0].numel; i++)
            gb[i / c->out_size % c->out_channels] += call->grad_outputs[0].data[i];
    return D5_OK;
}

/* Two per multiply-add of the convolution, plus about 4 * 2^r for each
 * interpolation. */
static double deformconv_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    const deformconv *c = state;
    double terms =
        (double)c->batch * (double)c->in_channels * (double)c->kernel_size * (double)c->out_size;
    return terms * (2.0 * (double)(c->out_channels / c->group) + 4.0 * (double)(1 << c->r));
}

D5_REF_OPERATOR(DeformConv, 3, 5, 1, 1, deformconv_create, deformconv_forward, deformconv_backward,
                NULL, deformconv_flops);
