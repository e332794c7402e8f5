/* Geometry of Conv and ConvTranspose (ONNX opset 11): attribute checking,
 * auto_pad resolution and output sizes. See conv_shape.h.
 * https://onnx.ai/onnx/operators/onnx__Conv.html
 * https://onnx.ai/onnx/operators/onnx__ConvTranspose.html */
#include "conv_shape.h"

#include <stdio.h>
#include <string.h>

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

/* The attribute getters' messages do not name the operator: prefix it. */
static d5_status attr_failed(const char *op, d5_status s)
{
    char msg[256];
    snprintf(msg, sizeof msg, "%s", d5_last_error());
    return d5_error(s, "%s: %s", op, msg);
}

/* Reads the INTS attribute `name` into out[0..count-1]: `def` everywhere when
 * absent (or given empty, as some exporters write it), otherwise exactly
 * `count` values, each >= min. *given (may be NULL) tells which. */
static d5_status ints_attr(const char *op, const d5_attrs *attrs, const char *name, int32_t n,
                           int32_t count, int64_t def, int64_t min, int64_t *out, int *given)
{
    const int64_t *v;
    int64_t c;
    d5_status s = d5_attrs_ints(attrs, name, &v, &c);
    if (s != D5_OK) return attr_failed(op, s);
    if (given) *given = c > 0;
    for (int32_t i = 0; i < count; i++) out[i] = def;
    if (c == 0) return D5_OK;
    if (c != count)
        return d5_error(D5_ERR_INVALID,
                        "%s: %s has %lld value%s for a %d-d convolution, expected %d", op, name,
                        (long long)c, c == 1 ? "" : "s", (int)n, (int)count);
    for (int32_t i = 0; i < count; i++) {
        if (v[i] < min)
            return d5_error(D5_ERR_INVALID, "%s: %s[%d] is %lld, must be %s", op, name, (int)i,
                            (long long)v[i], min > 0 ? "positive" : ">= 0");
        out[i] = v[i];
    }
    return D5_OK;
}

static d5_status parse_auto_pad(const char *op, const d5_attrs *attrs, int *out)
{
    static const char *const names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    const char *s;
    d5_status st = d5_attrs_string(attrs, "auto_pad", "NOTSET", &s);
    if (st != D5_OK) return attr_failed(op, st);
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID,
                    "%s: auto_pad is '%s', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", op,
                    s);
}

static int64_t dilated_kernel(const d5_conv_geometry *g, int32_t i)
{
    return (g->kernel[i] - 1) * g->dilations[i] + 1;
}

/* floor(v / 2), also for negative v (C's / truncates toward zero). */
static int64_t floor_half(int64_t v)
{
    return v >= 0 ? v / 2 : -((1 - v) / 2);
}

/* Checks the tensors' ranks and dtypes, takes N, C, the spatial sizes and the
 * kernel from X and W and reads the attributes both operators share. pads
 * given along with auto_pad other than NOTSET must be all zero, unless
 * `pads_ignored` (ConvTranspose with output_shape). */
static d5_status parse_common(const char *op, const d5_tensor_desc *x, const d5_tensor_desc *w,
                              const d5_tensor_desc *b, const d5_attrs *attrs, int pads_ignored,
                              d5_conv_geometry *g, int *auto_pad)
{
    memset(g, 0, sizeof *g);
    if (!d5__in_types(x->dtype, D5__FLOATS))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: X has data type %s, expected float32, float64, float16 or bfloat16",
                        op, d5_dtype_name((d5_dtype)x->dtype));
    if (w->dtype != x->dtype)
        return d5_error(D5_ERR_INVALID, "%s: W has data type %s but X has %s", op,
                        d5_dtype_name((d5_dtype)w->dtype), d5_dtype_name((d5_dtype)x->dtype));
    g->has_bias = b && b->dtype != D5_DTYPE_INVALID;
    if (g->has_bias && b->dtype != x->dtype)
        return d5_error(D5_ERR_INVALID, "%s: B has data type %s but X has %s", op,
                        d5_dtype_name((d5_dtype)b->dtype), d5_dtype_name((d5_dtype)x->dtype));
    if (x->ndim < 3)
        return d5_error(D5_ERR_SHAPE,
                        "%s: X has %d dimensions, expected at least 3 (N, C, D1, ...)", op,
                        (int)x->ndim);
    if (w->ndim != x->ndim)
        return d5_error(D5_ERR_SHAPE, "%s: W has %d dimensions but X has %d", op, (int)w->ndim,
                        (int)x->ndim);
    int32_t n = x->ndim - 2;
    g->n = n;
    g->batch = x->shape[0];
    g->in_channels = x->shape[1];
    for (int32_t i = 0; i < n; i++) {
        g->in[i] = x->shape[2 + i];
        g->kernel[i] = w->shape[2 + i];
        if (g->kernel[i] < 1)
            return d5_error(D5_ERR_SHAPE, "%s: W has size 0 along spatial axis %d", op, (int)i);
    }

    d5_status s = d5_attrs_int(attrs, "group", 1, &g->group);
    if (s != D5_OK) return attr_failed(op, s);
    if (g->group < 1)
        return d5_error(D5_ERR_INVALID, "%s: group is %lld, must be positive", op,
                        (long long)g->group);
    int64_t kernel_shape[D5_CONV_MAX_SPATIAL];
    int given;
    s = ints_attr(op, attrs, "kernel_shape", n, n, 1, 1, kernel_shape, &given);
    if (s != D5_OK) return s;
    for (int32_t i = 0; given && i < n; i++)
        if (kernel_shape[i] != g->kernel[i]) {
            char ws[96];
            d5__shape_str(w, ws, sizeof ws);
            return d5_error(D5_ERR_SHAPE, "%s: kernel_shape[%d] is %lld but W has shape %s", op,
                            (int)i, (long long)kernel_shape[i], ws);
        }
    s = ints_attr(op, attrs, "strides", n, n, 1, 1, g->strides, NULL);
    if (s == D5_OK) s = ints_attr(op, attrs, "dilations", n, n, 1, 1, g->dilations, NULL);
    if (s == D5_OK) s = parse_auto_pad(op, attrs, auto_pad);
    if (s != D5_OK) return s;
    int64_t pads[2 * D5_CONV_MAX_SPATIAL];
    s = ints_attr(op, attrs, "pads", n, 2 * n, 0, 0, pads, NULL);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < 2 * n; i++)
        if (pads[i] != 0 && *auto_pad != PAD_NOTSET && !pads_ignored)
            return d5_error(D5_ERR_INVALID, "%s: pads cannot be used together with auto_pad %s", op,
                            *auto_pad == PAD_VALID ? "VALID" : "SAME_UPPER or SAME_LOWER");
    for (int32_t i = 0; i < n; i++) {
        g->pads_begin[i] = pads[i];
        g->pads_end[i] = pads[n + i];
    }
    return D5_OK;
}

static d5_status check_bias(const char *op, const d5_tensor_desc *b, const d5_conv_geometry *g)
{
    if (!g->has_bias || (b->ndim == 1 && b->shape[0] == g->out_channels)) return D5_OK;
    char bs[96];
    d5__shape_str(b, bs, sizeof bs);
    return d5_error(D5_ERR_SHAPE, "%s: B has shape %s, expected [%lld] (one per output channel)",
                    op, bs, (long long)g->out_channels);
}

static void finish(d5_conv_geometry *g)
{
    g->in_size = g->out_size = g->kernel_size = 1;
    for (int32_t i = 0; i < g->n; i++) {
        g->in_size *= g->in[i];
        g->out_size *= g->out[i];
        g->kernel_size *= g->kernel[i];
    }
}

d5_status d5__conv_geometry(const d5_tensor_desc *x, const d5_tensor_desc *w,
                            const d5_tensor_desc *b, const d5_attrs *attrs, d5_conv_geometry *g)
{
    int auto_pad;
    d5_status s = parse_common("Conv", x, w, b, attrs, 0, g, &auto_pad);
    if (s != D5_OK) return s;
    g->out_channels = w->shape[0];
    if (g->in_channels != w->shape[1] * g->group)
        return d5_error(D5_ERR_SHAPE,
                        "Conv: X has %lld channels but W.shape[1] * group = %lld * %lld = %lld",
                        (long long)g->in_channels, (long long)w->shape[1], (long long)g->group,
                        (long long)(w->shape[1] * g->group));
    if (g->out_channels % g->group != 0)
        return d5_error(
            D5_ERR_SHAPE,
            "Conv: W has %lld output channels (W.shape[0]), not a multiple of group %lld",
            (long long)g->out_channels, (long long)g->group);
    s = check_bias("Conv", b, g);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < g->n; i++) {
        int64_t dk = dilated_kernel(g, i), stride = g->strides[i];
        if (auto_pad == PAD_SAME_UPPER || auto_pad == PAD_SAME_LOWER) {
            g->out[i] = (g->in[i] + stride - 1) / stride;
            int64_t total = (g->out[i] - 1) * stride + dk - g->in[i];
            if (total < 0) total = 0;
            g->pads_begin[i] = auto_pad == PAD_SAME_UPPER ? total / 2 : total - total / 2;
            g->pads_end[i] = total - g->pads_begin[i];
            continue;
        }
        int64_t span = g->in[i] + g->pads_begin[i] + g->pads_end[i] - dk;
        if (span < 0)
            return d5_error(D5_ERR_SHAPE,
                            "Conv: along spatial axis %d the padded input (%lld + %lld + %lld) is "
                            "smaller than the dilated kernel (%lld)",
                            (int)i, (long long)g->pads_begin[i], (long long)g->in[i],
                            (long long)g->pads_end[i], (long long)dk);
        g->out[i] = span / stride + 1;
    }
    finish(g);
    return D5_OK;
}

d5_status d5__conv_transpose_geometry(const d5_tensor_desc *x, const d5_tensor_desc *w,
                                      const d5_tensor_desc *b, const d5_attrs *attrs,
                                      d5_conv_geometry *g)
{
    const char *op = "ConvTranspose";
    int32_t n = x->ndim > 2 ? x->ndim - 2 : 1;
    int64_t output_shape[D5_CONV_MAX_SPATIAL];
    int has_output_shape = 0, auto_pad;
    d5_status s = D5_OK;
    if (x->ndim >= 3 && x->ndim <= D5_MAX_DIMS)
        s = ints_attr(op, attrs, "output_shape", n, n, 0, 1, output_shape, &has_output_shape);
    if (s == D5_OK) s = parse_common(op, x, w, b, attrs, has_output_shape, g, &auto_pad);
    if (s != D5_OK) return s;
    g->transposed = 1;
    if (w->shape[0] != g->in_channels)
        return d5_error(D5_ERR_SHAPE, "ConvTranspose: X has %lld channels but W.shape[0] is %lld",
                        (long long)g->in_channels, (long long)w->shape[0]);
    if (g->in_channels % g->group != 0)
        return d5_error(D5_ERR_SHAPE,
                        "ConvTranspose: X has %lld channels, not a multiple of group %lld",
                        (long long)g->in_channels, (long long)g->group);
    g->out_channels = w->shape[1] * g->group;
    s = check_bias(op, b, g);
    if (s == D5_OK) s = ints_attr(op, attrs, "output_padding", n, n, 0, 0, g->output_padding, NULL);
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < n; i++) {
        int64_t stride = g->strides[i], dilation = g->dilations[i];
        if (g->output_padding[i] >= stride && g->output_padding[i] >= dilation)
            return d5_error(D5_ERR_INVALID,
                            "ConvTranspose: output_padding[%d] is %lld, must be less than the "
                            "stride (%lld) or the dilation (%lld)",
                            (int)i, (long long)g->output_padding[i], (long long)stride,
                            (long long)dilation);
        int64_t full = stride * (g->in[i] - 1) + g->output_padding[i] + dilated_kernel(g, i);
        if (has_output_shape || auto_pad == PAD_SAME_UPPER || auto_pad == PAD_SAME_LOWER) {
            g->out[i] = has_output_shape ? output_shape[i] : g->in[i] * stride;
            int64_t total = full - g->out[i];
            if (auto_pad == PAD_SAME_UPPER) {
                g->pads_begin[i] = floor_half(total);
                g->pads_end[i] = total - g->pads_begin[i];
            } else {
                g->pads_end[i] = floor_half(total);
                g->pads_begin[i] = total - g->pads_end[i];
            }
            continue;
        }
        g->out[i] = full - g->pads_begin[i] - g->pads_end[i];
        if (g->out[i] < 1)
            return d5_error(D5_ERR_SHAPE,
                            "ConvTranspose: along spatial axis %d the output size would be %lld "
                            "(full size %lld less pads %lld and %lld)",
                            (int)i, (long long)g->out[i], (long long)full,
                            (long long)g->pads_begin[i], (long long)g->pads_end[i]);
    }
    finish(g);
    return D5_OK;
}

void d5__conv_output_desc(const d5_conv_geometry *g, d5_tensor_desc *y)
{
    y->ndim = g->n + 2;
    y->shape[0] = g->batch;
    y->shape[1] = g->out_channels;
    for (int32_t i = 0; i < g->n; i++) y->shape[2 + i] = g->out[i];
}

double d5__conv_flops(const d5_conv_geometry *g)
{
    if (g->transposed)
        return 2.0 * (double)g->batch * (double)g->in_channels * (double)g->in_size *
               (double)(g->out_channels / g->group) * (double)g->kernel_size;
    return 2.0 * (double)g->batch * (double)g->out_channels * (double)g->out_size *
           (double)(g->in_channels / g->group) * (double)g->kernel_size;
}

int64_t d5__conv_tap(const d5_conv_geometry *g, int64_t pos, int64_t k)
{
    const int64_t *strided = g->transposed ? g->in : g->out;
    const int64_t *dense = g->transposed ? g->out : g->in;
    int64_t at = 0, scale = 1;
    for (int32_t i = g->n - 1; i >= 0; i--) {
        int64_t p = pos % strided[i], t = k % g->kernel[i];
        pos /= strided[i];
        k /= g->kernel[i];
        int64_t q = p * g->strides[i] + t * g->dilations[i] - g->pads_begin[i];
        if (q < 0 || q >= dense[i]) return -1;
        at += q * scale;
        scale *= dense[i];
    }
    return at;
}

d5_status d5__conv_ref_create(const char *op, d5_conv_geometry_fn geometry,
                              const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    d5_conv_geometry g;
    d5_status s = d5__need_float(op, in, nin, 0);
    if (s == D5_OK) s = d5__need_float(op, in, nin, 1);
    if (s == D5_OK)
        s = geometry(&in[0].desc, &in[1].desc, nin > 2 ? &in[2].desc : NULL, args->attrs, &g);
    if (s != D5_OK) return s;
    d5__conv_output_desc(&g, &args->outputs[0]);
    return d5__ref_state(state, &g, sizeof g, op);
}

/* The weight offset of output channel m and input channel c0 + c (c within
 * m's group): W is (M, C/group, k...) for Conv and (C, M/group, k...) for
 * ConvTranspose. */
static int64_t weight_offset(const d5_conv_geometry *g, int64_t m, int64_t c0, int64_t c)
{
    int64_t cg = g->in_channels / g->group, mg = g->out_channels / g->group;
    return (g->transposed ? (c0 + c) * mg + m % mg : m * cg + c) * g->kernel_size;
}

/* Walks the strided side (Y for Conv, X for ConvTranspose): position p meets
 * the dense side at t = d5__conv_tap(g, p, k) through tap k, so that input
 * position i and output position o are (t, p) for Conv and (p, t) for
 * ConvTranspose. Each output element sums its terms channel by channel and,
 * within a channel, tap by tap. */
d5_status d5__conv_ref_forward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    const d5_conv_geometry *g = state;
    const double *x = in[0].data, *w = in[1].data;
    const double *b = call->ninputs > 2 ? in[2].data : NULL;
    int64_t cg = g->in_channels / g->group, mg = g->out_channels / g->group;
    int64_t strided = g->transposed ? g->in_size : g->out_size;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t m = 0; m < g->out_channels; m++) {
            int64_t c0 = m / mg * cg; /* the first input channel of m's group */
            double *y = call->outputs[0].data + (n * g->out_channels + m) * g->out_size;
            for (int64_t o = 0; o < g->out_size; o++) y[o] = b ? b[m] : 0;
            for (int64_t c = 0; c < cg; c++) {
                const double *xc = x + (n * g->in_channels + c0 + c) * g->in_size;
                const double *wc = w + weight_offset(g, m, c0, c);
                for (int64_t p = 0; p < strided; p++)
                    for (int64_t k = 0; k < g->kernel_size; k++) {
                        int64_t t = d5__conv_tap(g, p, k);
                        if (t < 0) continue;
                        int64_t i = g->transposed ? p : t, o = g->transposed ? t : p;
                        y[o] += xc[i] * wc[k];
                    }
            }
        }
    return D5_OK;
}

/* The forward loop nest, with every multiply-add sending dY back to its two
 * factors: dX[c, i] += dY[m, o] W[k], dW[k] += dY[m, o] X[c, i]; dB[m] = sum
 * of dY[., m, .]. */
d5_status d5__conv_ref_backward(void *state, const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *gin = call->grad_inputs;
    const d5_conv_geometry *g = state;
    const double *x = in[0].data, *w = in[1].data;
    double *dx = gin[0].data, *dw = gin[1].data, *db = call->ninputs > 2 ? gin[2].data : NULL;
    int64_t cg = g->in_channels / g->group, mg = g->out_channels / g->group;
    int64_t strided = g->transposed ? g->in_size : g->out_size;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t m = 0; m < g->out_channels; m++) {
            int64_t c0 = m / mg * cg;
            const double *dy = call->grad_outputs[0].data + (n * g->out_channels + m) * g->out_size;
            if (db)
                for (int64_t o = 0; o < g->out_size; o++) db[m] += dy[o];
            for (int64_t c = 0; c < cg; c++) {
                int64_t xoff = (n * g->in_channels + c0 + c) * g->in_size;
                int64_t woff = weight_offset(g, m, c0, c);
                for (int64_t p = 0; p < strided; p++)
                    for (int64_t k = 0; k < g->kernel_size; k++) {
                        int64_t t = d5__conv_tap(g, p, k);
                        if (t < 0) continue;
                        int64_t i = g->transposed ? p : t, o = g->transposed ? t : p;
                        if (dx) dx[xoff + i] += dy[o] * w[woff + k];
                        if (dw) dw[woff + k] += dy[o] * x[xoff + i];
                    }
            }
        }
    return D5_OK;
}

double d5__conv_ref_flops(void *state, const d5_ref_shapes *shapes)
{
    (void)shapes;
    return d5__conv_flops(state);
}
