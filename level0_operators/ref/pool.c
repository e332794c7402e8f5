/* Window arithmetic shared by the reference pooling operators. */
#include "pool.h"

#include <string.h>

/* Reads an INTS attribute that must have `want` values, each at least `min`.
 * When it is absent every value is `def`, or, for def < 0, it is required. */
static d5_status axis_ints(const char *op, const d5_attrs *attrs, const char *name, int32_t want,
                           int32_t naxes, int64_t min, int64_t def, int64_t *out)
{
    const int64_t *v;
    int64_t n;
    d5_status s = d5_attrs_ints(attrs, name, &v, &n);
    if (s != D5_OK) return s;
    if (!d5_attrs_find(attrs, name)) {
        if (def < 0) return d5_error(D5_ERR_INVALID, "%s: attribute %s is required", op, name);
        for (int32_t i = 0; i < want; i++) out[i] = def;
        return D5_OK;
    }
    if (n != want)
        return d5_error(D5_ERR_INVALID,
                        "%s: %s has %lld values, expected %d for an input with %d spatial axes", op,
                        name, (long long)n, (int)want, (int)naxes);
    for (int32_t i = 0; i < want; i++) {
        if (v[i] < min)
            return d5_error(D5_ERR_INVALID, "%s: %s[%d] is %lld, must be at least %lld", op, name,
                            (int)i, (long long)v[i], (long long)min);
        out[i] = v[i];
    }
    return D5_OK;
}

/* ceil(a / b) for a >= 0, b > 0. */
static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Output size and padding of axis i from the attributes. */
static d5_status axis_shape(const char *op, d5_pool *p, int32_t i, const char *auto_pad,
                            int ceil_mode)
{
    int64_t in = p->in[i], s = p->stride[i];
    int64_t extent = (p->kernel[i] - 1) * p->dilation[i] + 1;
    if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
        p->out[i] = ceil_div(in, s);
        int64_t total = (p->out[i] - 1) * s + extent - in;
        if (total < 0) total = 0;
        int64_t small = total / 2;
        p->pad_begin[i] = strcmp(auto_pad, "SAME_UPPER") == 0 ? small : total - small;
        p->pad_end[i] = total - p->pad_begin[i];
        return D5_OK;
    }
    int64_t span = in + p->pad_begin[i] + p->pad_end[i] - extent;
    if (span < 0)
        return d5_error(D5_ERR_SHAPE,
                        "%s: the window (extent %lld: kernel %lld, dilation %lld) is larger than "
                        "the padded input (%lld) along spatial axis %d",
                        op, (long long)extent, (long long)p->kernel[i], (long long)p->dilation[i],
                        (long long)(in + p->pad_begin[i] + p->pad_end[i]), (int)i);
    if (ceil_mode && strcmp(auto_pad, "NOTSET") == 0) {
        p->out[i] = ceil_div(span, s) + 1;
        /* The last window must start inside the input or the left padding. */
        if ((p->out[i] - 1) * s >= in + p->pad_begin[i]) p->out[i]--;
    } else {
        p->out[i] = span / s + 1;
    }
    return D5_OK;
}

d5_status d5__pool_init(const char *op, const d5_tensor_desc *x, const d5_attrs *attrs, d5_pool *p,
                        d5_tensor_desc *y)
{
    memset(p, 0, sizeof *p);
    if (x->ndim < 3)
        return d5_error(D5_ERR_SHAPE,
                        "%s: input has %d dims, expected at least 3 (N x C x D1 x ... x Dn)", op,
                        (int)x->ndim);
    int32_t n = x->ndim - 2;
    p->naxes = n;
    p->planes = x->shape[0] * x->shape[1];
    const char *auto_pad;
    int64_t ceil_mode, pads[2 * D5_POOL_MAX_AXES];
    d5_status s = axis_ints(op, attrs, "kernel_shape", n, n, 1, -1, p->kernel);
    if (s == D5_OK) s = axis_ints(op, attrs, "strides", n, n, 1, 1, p->stride);
    if (s == D5_OK) s = axis_ints(op, attrs, "dilations", n, n, 1, 1, p->dilation);
    if (s == D5_OK) s = axis_ints(op, attrs, "pads", 2 * n, n, 0, 0, pads);
    if (s == D5_OK) s = d5_attrs_int(attrs, "ceil_mode", 0, &ceil_mode);
    if (s == D5_OK) s = d5_attrs_string(attrs, "auto_pad", "NOTSET", &auto_pad);
    if (s != D5_OK) return s;
    if (strcmp(auto_pad, "NOTSET") != 0 && strcmp(auto_pad, "VALID") != 0 &&
        strcmp(auto_pad, "SAME_UPPER") != 0 && strcmp(auto_pad, "SAME_LOWER") != 0)
        return d5_error(D5_ERR_INVALID,
                        "%s: auto_pad is \"%s\", expected NOTSET, VALID, SAME_UPPER or SAME_LOWER",
                        op, auto_pad);
    for (int32_t i = 0; i < 2 * n; i++)
        if (pads[i] != 0 && strcmp(auto_pad, "NOTSET") != 0)
            return d5_error(D5_ERR_INVALID, "%s: pads cannot be used with auto_pad %s", op,
                            auto_pad);
    y->ndim = x->ndim;
    y->shape[0] = x->shape[0];
    y->shape[1] = x->shape[1];
    p->in_plane = p->out_plane = p->window = 1;
    for (int32_t i = 0; i < n; i++) {
        p->in[i] = x->shape[2 + i];
        p->pad_begin[i] = pads[i];
        p->pad_end[i] = pads[n + i];
        s = axis_shape(op, p, i, auto_pad, ceil_mode != 0);
        if (s != D5_OK) return s;
        y->shape[2 + i] = p->out[i];
        p->in_plane *= p->in[i];
        p->out_plane *= p->out[i];
        p->window *= p->kernel[i];
    }
    return D5_OK;
}

d5_status d5__pool_check_windows(const char *op, const d5_pool *p)
{
    /* A window is a product of per-axis position sets: it covers an input
     * element when every axis has a position inside the input. */
    for (int32_t i = 0; i < p->naxes; i++)
        for (int64_t o = 0; o < p->out[i]; o++) {
            int inside = 0;
            for (int64_t j = 0; j < p->kernel[i] && !inside; j++) {
                int64_t pos = o * p->stride[i] - p->pad_begin[i] + j * p->dilation[i];
                inside = pos >= 0 && pos < p->in[i];
            }
            if (!inside)
                return d5_error(D5_ERR_INVALID,
                                "%s: the window of output position %lld along spatial axis %d "
                                "covers only padding",
                                op, (long long)o, (int)i);
        }
    return D5_OK;
}

int64_t d5__pool_window(const d5_pool *p, int64_t o, int64_t *idx, int64_t *padded)
{
    int64_t start[D5_POOL_MAX_AXES];
    for (int32_t i = p->naxes - 1; i >= 0; i--) {
        start[i] = (o % p->out[i]) * p->stride[i] - p->pad_begin[i];
        o /= p->out[i];
    }
    int64_t n = 0, npadded = 0;
    for (int64_t w = 0; w < p->window; w++) {
        int64_t rest = w, flat = 0, stride = 1;
        int inside = 1, in_padded = 1;
        for (int32_t i = p->naxes - 1; i >= 0; i--) {
            int64_t pos = start[i] + (rest % p->kernel[i]) * p->dilation[i];
            rest /= p->kernel[i];
            if (pos < 0 || pos >= p->in[i]) inside = 0;
            if (pos >= p->in[i] + p->pad_end[i]) in_padded = 0;
            flat += pos * stride;
            stride *= p->in[i];
        }
        if (in_padded) npadded++;
        if (inside) idx[n++] = flat;
    }
    if (padded) *padded = npadded;
    return n;
}

double d5__pool_flops(void *state, const d5_ref_shapes *shapes)
{
    const d5_pool *p = state;
    return (double)d5_tensor_desc_numel(&shapes->outputs[0]) * (double)p->window;
}

d5_status d5__pool_create(const char *op, const d5_op_create_args *args, const char *flag,
                          int64_t *value, d5_pool *p)
{
    d5_status s = d5_attrs_int(args->attrs, flag, 0, value);
    if (s != D5_OK) return s;
    return d5__pool_init(op, &args->inputs[0].desc, args->attrs, p, &args->outputs[0]);
}

void *d5__pool_state(const d5_pool *p, size_t size, const char *op)
{
    void *st = d5_alloc(size + (size_t)p->window * sizeof(int64_t), op);
    if (st) memcpy(st, p, sizeof *p);
    return st;
}
