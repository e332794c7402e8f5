/* Linear quantisation shared by the reference quantisation operators: ranges,
 * rounding, requantisation and the shape rules of scales and zero points. See
 * quant.h.
 * https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html
 * https://onnx.ai/onnx/operators/onnx__QLinearMatMul.html
 * https://onnx.ai/onnx/operators/onnx__QLinearConv.html */
#include "quant.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Values ---------------------------------------------------------------------------------- */

int d5__quant_range(int32_t dtype, double *lo, double *hi)
{
    switch (dtype) {
    case D5_U8: *lo = 0, *hi = 255; return 1;
    case D5_I8: *lo = -128, *hi = 127; return 1;
    case D5_U16: *lo = 0, *hi = 65535; return 1;
    case D5_I16: *lo = -32768, *hi = 32767; return 1;
    case D5_U4: *lo = 0, *hi = 15; return 1;
    case D5_I4: *lo = -8, *hi = 7; return 1;
    case D5_U2: *lo = 0, *hi = 3; return 1;
    case D5_I2: *lo = -2, *hi = 1; return 1;
    default: return 0;
    }
}

int64_t d5__quant_since(int32_t dtype)
{
    switch (dtype) {
    case D5_U8:
    case D5_I8:
    case D5_I32: return 10;
    case D5_F8E4M3FN:
    case D5_F8E4M3FNUZ:
    case D5_F8E5M2:
    case D5_F8E5M2FNUZ: return 19;
    case D5_U16:
    case D5_I16:
    case D5_U4:
    case D5_I4: return 21;
    case D5_F4E2M1: return 23;
    case D5_U2:
    case D5_I2: return 25;
    default: return 0;
    }
}

double d5__quant_float_max(int32_t dtype)
{
    double best = 0;
    for (int c = 0; c < 256; c++) { /* the largest finite value a code holds */
        double v = d5_f64_from_narrow((d5_dtype)dtype, (uint8_t)c);
        if (isfinite(v) && v > best) best = v;
    }
    return best;
}

double d5__round_half_even(double v)
{
    if (!isfinite(v)) return v;
    double f = floor(v), frac = v - f; /* exact: f and v are within one unit */
    if (frac > 0.5) return f + 1;
    if (frac < 0.5) return f;
    return fmod(f, 2.0) == 0 ? f : f + 1;
}

double d5__quant_saturate(double v, double lo, double hi, double nan_as)
{
    if (v != v) return nan_as;
    return v < lo ? lo : v > hi ? hi : v;
}

double d5__quant_multiplier(double a_scale, double b_scale, double y_scale)
{
    float product = (float)a_scale * (float)b_scale; /* assignments round to float32 */
    float m = product / (float)y_scale;
    return m;
}

double d5__quant_requantize(double acc, double m, double zp, double lo, double hi)
{
    return d5__quant_saturate(d5__round_half_even(acc * m) + zp, lo, hi, zp);
}

/* ---- Checks ---------------------------------------------------------------------------------- */

int d5__quant_is_single(const d5_tensor_desc *d)
{
    return d->ndim <= 1 && d5_tensor_desc_numel(d) == 1;
}

static const char *dtype_name(int32_t t)
{
    return d5_dtype_name((d5_dtype)t);
}

d5_status d5__quant_need_int8(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                              const char *name)
{
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, (int)i, name);
    int32_t t = in[i].desc.dtype;
    if (t != D5_U8 && t != D5_I8)
        return d5_error(D5_ERR_INVALID,
                        "%s: input %d (%s) has data type %s, expected uint8 or int8", op, (int)i,
                        name, dtype_name(t));
    return D5_OK;
}

/* Input i holds one value; `what` says which kind of parameter. */
static d5_status need_single(const char *op, const d5_tensor *in, int32_t i, const char *name,
                             const char *what)
{
    if (d5__quant_is_single(&in[i].desc)) return D5_OK;
    char s[96];
    d5__shape_str(&in[i].desc, s, sizeof s);
    return d5_error(D5_ERR_SHAPE,
                    "%s: input %d (%s) has shape %s, expected one value (a per-tensor %s: a "
                    "scalar or [1])",
                    op, (int)i, name, s, what);
}

d5_status d5__quant_need_scalar_scale(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                                      const char *name)
{
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, (int)i, name);
    if (in[i].desc.dtype != D5_F32)
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) has data type %s, expected float32", op,
                        (int)i, name, dtype_name(in[i].desc.dtype));
    return need_single(op, in, i, name, "scale");
}

d5_status d5__quant_need_scalar_zp(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                                   const char *name, int32_t dtype, const char *of)
{
    if (!d5__has_input(in, nin, i))
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is required", op, (int)i, name);
    if (in[i].desc.dtype != dtype)
        return d5_error(D5_ERR_INVALID,
                        "%s: input %d (%s) has data type %s, expected %s (that of %s)", op, (int)i,
                        name, dtype_name(in[i].desc.dtype), dtype_name(dtype), of);
    return need_single(op, in, i, name, "zero point");
}

/* ---- Per-tensor and per-axis parameters ------------------------------------------------------ */

d5_status d5__quant_axis(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                         int64_t opset, const char *scale, const char *zp, d5_quant_axis *out)
{
    const d5_tensor_desc *x = &in[0].desc, *s = &in[1].desc;
    char ss[96], zs[96], xs[96];
    d5__shape_str(s, ss, sizeof ss);
    d5__shape_str(x, xs, sizeof xs);
    if (d5__has_input(in, nin, 2)) {
        const d5_tensor_desc *z = &in[2].desc;
        if (!d5__same_shape(z, s) && !(d5__quant_is_single(z) && d5__quant_is_single(s))) {
            d5__shape_str(z, zs, sizeof zs);
            return d5_error(D5_ERR_SHAPE,
                            "%s: input 2 (%s) has shape %s but input 1 (%s) has %s, "
                            "expected the same shape",
                            op, zp, zs, scale, ss);
        }
    }
    out->n = out->inner = 1;
    out->dim = 1;
    out->block = 0;
    int64_t block = 0;
    d5_status bs = d5_attrs_int(attrs, "block_size", 0, &block);
    if (bs != D5_OK) return d5_error(bs, "%s: attribute block_size must be an integer", op);
    if (block < 0)
        return d5_error(D5_ERR_INVALID, "%s: attribute block_size is %lld, expected 0 or more", op,
                        (long long)block);
    if (block > 0) {
        if (opset < 21)
            return d5_error(D5_ERR_INVALID,
                            "%s: attribute block_size is an opset 21 attribute (opset %lld)", op,
                            (long long)opset);
        int64_t axis;
        int32_t ax;
        d5_status st = d5_attrs_int(attrs, "axis", 1, &axis);
        if (st == D5_OK) st = d5__axis(op, axis, x->ndim, &ax);
        if (st != D5_OK) return st;
        int ok = s->ndim == x->ndim;
        for (int32_t d = 0; ok && d < x->ndim; d++)
            ok = d == ax ? s->shape[d] == (x->shape[d] + block - 1) / block
                         : s->shape[d] == x->shape[d];
        if (!ok)
            return d5_error(D5_ERR_SHAPE,
                            "%s: input 1 (%s) has shape %s but x has shape %s: blocks of %lld "
                            "along axis %d need x's shape with ceil(%lld / %lld) = %lld there",
                            op, scale, ss, xs, (long long)block, (int)ax, (long long)x->shape[ax],
                            (long long)block, (long long)((x->shape[ax] + block - 1) / block));
        out->block = block;
        out->dim = x->shape[ax];
        out->n = s->shape[ax];
        for (int32_t d = ax + 1; d < x->ndim; d++) out->inner *= x->shape[d];
        return D5_OK;
    }
    if (d5__quant_is_single(s)) return D5_OK;
    if (s->ndim != 1)
        return d5_error(D5_ERR_SHAPE,
                        "%s: input 1 (%s) has shape %s, expected one value (per tensor) or a "
                        "1-d tensor (per axis)",
                        op, scale, ss);
    if (opset < 13)
        return d5_error(D5_ERR_SHAPE,
                        "%s: input 1 (%s) has shape %s, expected one value: opset %lld quantises "
                        "per tensor only (per axis from opset 13)",
                        op, scale, ss, (long long)opset);
    int64_t axis;
    int32_t ax;
    d5_status st = d5_attrs_int(attrs, "axis", 1, &axis);
    if (st != D5_OK) return d5_error(st, "%s: attribute axis must be an integer", op);
    st = d5__axis(op, axis, x->ndim, &ax);
    if (st != D5_OK) return st;
    if (s->shape[0] != x->shape[ax])
        return d5_error(D5_ERR_SHAPE,
                        "%s: input 1 (%s) has shape %s but x has shape %s: per-axis parameters "
                        "need x.shape[%d] = %lld values",
                        op, scale, ss, xs, (int)ax, (long long)x->shape[ax]);
    out->n = s->shape[0];
    for (int32_t d = ax + 1; d < x->ndim; d++) out->inner *= x->shape[d];
    return D5_OK;
}

/* ---- Matrix products ------------------------------------------------------------------------- */

static d5_tensor_desc leading(const d5_tensor_desc *d, int32_t nd)
{
    d5_tensor_desc b = *d;
    b.ndim = nd < 0 ? 0 : nd;
    return b;
}

d5_status d5__qmatmul_geometry(const char *op, const d5_tensor_desc *a, const d5_tensor_desc *b,
                               d5_qmatmul *g, d5_tensor_desc *y)
{
    char sa[96], sb[96];
    d5__shape_str(a, sa, sizeof sa);
    d5__shape_str(b, sb, sizeof sb);
    if (a->ndim == 0 || b->ndim == 0)
        return d5_error(D5_ERR_SHAPE, "%s: a is %s and b is %s: scalars are not allowed", op, sa,
                        sb);
    g->m = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1;
    g->k = a->shape[a->ndim - 1];
    g->n = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1;
    int64_t kb = b->ndim >= 2 ? b->shape[b->ndim - 2] : b->shape[0];
    if (kb != g->k)
        return d5_error(D5_ERR_SHAPE,
                        "%s: a is %s and b is %s: inner dimensions %lld and %lld differ", op, sa,
                        sb, (long long)g->k, (long long)kb);
    g->a_batch = leading(a, a->ndim - 2);
    g->b_batch = leading(b, b->ndim - 2);
    const d5_tensor_desc *both[2] = {&g->a_batch, &g->b_batch};
    g->y_batch = g->a_batch;
    if (d5__broadcast(op, both, 2, &g->y_batch) != D5_OK)
        return d5_error(D5_ERR_SHAPE, "%s: the batch dimensions of a %s and b %s do not broadcast",
                        op, sa, sb);
    int32_t dtype = y->dtype;
    *y = g->y_batch;
    y->dtype = dtype;
    if (a->ndim >= 2) y->shape[y->ndim++] = g->m;
    if (b->ndim >= 2) y->shape[y->ndim++] = g->n;
    return D5_OK;
}

d5_status d5__qmatmul_param(const char *op, const char *name, const d5_tensor_desc *p, char side,
                            const d5_qmatmul *g, d5_qmatmul_param *out)
{
    int is_a = side == 'a';
    out->full = is_a ? g->a_batch : g->b_batch;
    out->full.shape[out->full.ndim++] = is_a ? g->m : 1;
    out->full.shape[out->full.ndim++] = is_a ? 1 : g->n;
    out->shape = out->full;
    out->shape.ndim = 0;
    if (!p || p->dtype == D5_DTYPE_INVALID || d5_tensor_desc_numel(p) == 1) return D5_OK;
    int64_t rows = is_a ? g->m : g->n;
    int ok = 1;
    if (p->ndim == 1) { /* one value per row of A ([M] seen as [M, 1]) or column of B */
        ok = p->shape[0] == rows;
        out->shape.ndim = is_a ? 2 : 1;
        out->shape.shape[0] = rows;
        out->shape.shape[1] = 1;
    } else { /* [..., M, 1] or [..., 1, N]: broadcasts into `full` unchanged */
        ok = p->ndim <= out->full.ndim;
        for (int32_t d = 0; ok && d < p->ndim; d++) {
            int64_t f = out->full.shape[out->full.ndim - p->ndim + d];
            ok = p->shape[d] == 1 || p->shape[d] == f;
        }
        out->shape = *p;
    }
    if (ok) return D5_OK;
    char ps[96], fs[96];
    d5__shape_str(p, ps, sizeof ps);
    d5__shape_str(&out->full, fs, sizeof fs);
    return d5_error(D5_ERR_SHAPE,
                    "%s: %s has shape %s, expected one value (per tensor), [%lld] (one per %s) "
                    "or a shape that broadcasts to %s",
                    op, name, ps, (long long)rows, is_a ? "row of a" : "column of b", fs);
}

void d5__qmatmul_accumulate(const d5_qmatmul *g, const double *a, const double *azp,
                            const d5_qmatmul_param *ap, const double *b, const double *bzp,
                            const d5_qmatmul_param *bp, double *y)
{
    int64_t batch = d5_tensor_desc_numel(&g->y_batch);
    for (int64_t t = 0; t < batch; t++) {
        int64_t ta = d5__broadcast_index(&g->y_batch, &g->a_batch, t);
        int64_t tb = d5__broadcast_index(&g->y_batch, &g->b_batch, t);
        const double *at = a + ta * g->m * g->k, *bt = b + tb * g->k * g->n;
        double *yt = y + t * g->m * g->n;
        for (int64_t i = 0; i < g->m; i++) {
            double za = azp ? azp[d5__qmatmul_param_index(ap, ta, i)] : 0;
            for (int64_t j = 0; j < g->n; j++) {
                double zb = bzp ? bzp[d5__qmatmul_param_index(bp, tb, j)] : 0;
                double acc = 0;
                for (int64_t p = 0; p < g->k; p++)
                    acc += (at[i * g->k + p] - za) * (bt[p * g->n + j] - zb);
                yt[i * g->n + j] = acc;
            }
        }
    }
}

double d5__qmatmul_flops(const d5_qmatmul *g)
{
    return 2.0 * (double)g->m * (double)g->n * (double)g->k *
           (double)d5_tensor_desc_numel(&g->y_batch);
}

/* ---- Convolutions ---------------------------------------------------------------------------- */

d5_status d5__qconv_geometry(const char *op, const d5_tensor_desc *x, const d5_tensor_desc *w,
                             const d5_tensor_desc *b, const d5_attrs *attrs, d5_conv_geometry *g)
{
    if (x->dtype != D5_U8 && x->dtype != D5_I8)
        return d5_error(D5_ERR_INVALID, "%s: x has data type %s, expected uint8 or int8", op,
                        dtype_name(x->dtype));
    if (w->dtype != D5_U8 && w->dtype != D5_I8)
        return d5_error(D5_ERR_INVALID, "%s: w has data type %s, expected uint8 or int8", op,
                        dtype_name(w->dtype));
    if (x->ndim < 3)
        return d5_error(D5_ERR_SHAPE,
                        "%s: x has %d dimensions, expected at least 3 (N, C, D1, ...)", op,
                        (int)x->ndim);
    if (w->ndim != x->ndim)
        return d5_error(D5_ERR_SHAPE, "%s: w has %d dimensions but x has %d", op, (int)w->ndim,
                        (int)x->ndim);
    int has_b = b && b->dtype != D5_DTYPE_INVALID;
    if (has_b && b->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID, "%s: B has data type %s, expected int32", op,
                        dtype_name(b->dtype));
    /* Conv's rules with the integer types set aside (they are checked above). */
    d5_tensor_desc xf = *x, wf = *w, bf = has_b ? *b : *x;
    xf.dtype = wf.dtype = bf.dtype = D5_F32;
    d5_status s = d5__conv_geometry(&xf, &wf, has_b ? &bf : NULL, attrs, g);
    if (s == D5_OK) return D5_OK;
    char msg[512];
    const char *e = d5_last_error();
    snprintf(msg, sizeof msg, "%s", strncmp(e, "Conv: ", 6) == 0 ? e + 6 : e);
    return d5_error(s, "%s: %s", op, msg);
}

d5_status d5__qconv_channel_param(const char *op, const d5_tensor *in, int32_t i, const char *name,
                                  const d5_conv_geometry *g, int *per_channel)
{
    const d5_tensor_desc *d = &in[i].desc;
    *per_channel = 0;
    if (d5__quant_is_single(d)) return D5_OK;
    if (d->ndim == 1 && d->shape[0] == g->out_channels) {
        *per_channel = 1;
        return D5_OK;
    }
    char s[96];
    d5__shape_str(d, s, sizeof s);
    return d5_error(D5_ERR_SHAPE,
                    "%s: input %d (%s) has shape %s, expected one value (per tensor) or [%lld] "
                    "(one per output channel)",
                    op, (int)i, name, s, (long long)g->out_channels);
}

void d5__qconv_accumulate(const d5_conv_geometry *g, const double *x, double xzp, const double *w,
                          const double *wzp, int wzp_per_channel, double *y)
{
    int64_t cg = g->in_channels / g->group, mg = g->out_channels / g->group;
    for (int64_t n = 0; n < g->batch; n++)
        for (int64_t m = 0; m < g->out_channels; m++) {
            int64_t c0 = m / mg * cg; /* the first input channel of m's group */
            double wz = wzp ? wzp[wzp_per_channel ? m : 0] : 0;
            double *ym = y + (n * g->out_channels + m) * g->out_size;
            for (int64_t o = 0; o < g->out_size; o++) {
                double acc = 0;
                for (int64_t c = 0; c < cg; c++) {
                    const double *xc = x + (n * g->in_channels + c0 + c) * g->in_size;
                    const double *wc = w + (m * cg + c) * g->kernel_size;
                    for (int64_t k = 0; k < g->kernel_size; k++) {
                        int64_t i = d5__conv_tap(g, o, k);
                        if (i >= 0) acc += (xc[i] - xzp) * (wc[k] - wz);
                    }
                }
                ym[o] = acc;
            }
        }
}
