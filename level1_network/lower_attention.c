/* FlexAttention (domain ai.onnx.preview, opset 1) resolved at create into
 * tensor nodes, its score_mod and prob_mod graphs inlined, as ONNX's function
 * body and reference compute it:
 *   Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev] (Hq a multiple of
 *   Hkv: each key and value head repeated Hq / Hkv times, GQA);
 *   c = sqrt(float32(scale)) in Q's type (scale default 1 / sqrt(E));
 *   scores = (Q c) (K c)^T, in the softmax's type (softmax_precision, else
 *   float32 for float16 and bfloat16 inputs, else the input's);
 *   scores = score_mod(scores); P = Softmax(scores, last axis);
 *   P = prob_mod(P); Y = P V (V in the softmax's type), in V's type.
 * Its gradient is that of the nodes it becomes.
 * https://github.com/onnx/onnx/blob/main/onnx/defs/preview/defs.cc */
#include "lower_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NAME_LEN 1024

typedef struct flex {
    d5__lowerer *L;
    const char *base, *label;
} flex;

/* One node of one output, its names fresh under base. */
static d5_status emit(const flex *f, const char *op, const char *const *in, int32_t nin,
                      const d5_attr *attrs, int32_t nattrs, const char *what, char *out)
{
    d5__lower_fresh(f->L, f->base, what, out, NAME_LEN);
    const char *outs[1] = {out};
    return d5__lower_emit(f->L, out, op, in, nin, outs, 1, attrs, nattrs);
}

static d5_attr attr_ints(const char *name, const int64_t *v, int64_t n)
{
    d5_attr a = d5__lower_int_attr(name, 0);
    a.type = D5_ATTR_INTS;
    a.ints = v;
    a.count = n;
    return a;
}

/* ONNX's number of the floating-point types. */
static int64_t onnx_type(int32_t dtype)
{
    switch (dtype) {
    case D5_F32: return 1;
    case D5_F16: return 10;
    case D5_F64: return 11;
    case D5_BF16: return 16;
    default: return 0;
    }
}

static int32_t d5_type_of(int64_t onnx)
{
    return onnx == 1    ? D5_F32
           : onnx == 10 ? D5_F16
           : onnx == 11 ? D5_F64
           : onnx == 16 ? D5_BF16
                        : 0;
}

/* x cast to dtype (x itself when it has it already). */
static d5_status cast(const flex *f, const char *x, int32_t from, int32_t to, char *out)
{
    if (from == to) {
        snprintf(out, NAME_LEN, "%s", x);
        return D5_OK;
    }
    d5_attr a = d5__lower_int_attr("to", onnx_type(to));
    return emit(f, "Cast", &x, 1, &a, 1, "cast", out);
}

/* K or V [B, Hkv, S, D] with each head repeated r times: [B, Hkv * r, S, D]. */
static d5_status repeat_heads(const flex *f, const char *x, const d5_tensor_desc *d, int64_t r,
                              char *out)
{
    if (r == 1) {
        snprintf(out, NAME_LEN, "%s", x);
        return D5_OK;
    }
    char axes[NAME_LEN], shape[NAME_LEN], wide[NAME_LEN], up[NAME_LEN], big[NAME_LEN];
    const int64_t axis = 2;
    const int64_t to[5] = {d->shape[0], d->shape[1], r, d->shape[2], d->shape[3]};
    const int64_t flat[4] = {d->shape[0], d->shape[1] * r, d->shape[2], d->shape[3]};
    d5__lower_fresh(f->L, f->base, "axes", axes, NAME_LEN);
    d5_status s = d5__lower_i64(f->L, axes, &axis, 1, 0);
    const char *in[2] = {x, axes};
    if (s == D5_OK) s = emit(f, "Unsqueeze", in, 2, NULL, 0, "heads", up);
    d5__lower_fresh(f->L, f->base, "shape", wide, NAME_LEN);
    if (s == D5_OK) s = d5__lower_i64(f->L, wide, to, 5, 0);
    const char *ex[2] = {up, wide};
    if (s == D5_OK) s = emit(f, "Expand", ex, 2, NULL, 0, "repeat", big);
    d5__lower_fresh(f->L, f->base, "shape", shape, NAME_LEN);
    if (s == D5_OK) s = d5__lower_i64(f->L, shape, flat, 4, 0);
    const char *re[2] = {big, shape};
    return s == D5_OK ? emit(f, "Reshape", re, 2, NULL, 0, "heads", out) : s;
}

/* Runs graph attribute `attr` of n, when it has one, on tensor *x (updated). */
static d5_status apply_mod(const flex *f, const d5__node *n, const d5__scope *sc, const char *attr,
                           char *x)
{
    const d5_network *g = NULL;
    for (int32_t i = 0; i < n->ngraphs; i++)
        if (strcmp(n->graphs[i].attr, attr) == 0) g = n->graphs[i].graph;
    if (!g) return D5_OK;
    if (g->ninputs != 1 || g->noutputs != 1)
        return d5_error(D5_ERR_INVALID,
                        "%s: graph %s has %d inputs and %d outputs, expected 1 and 1", f->label,
                        attr, (int)g->ninputs, (int)g->noutputs);
    d5__lval arg, res;
    memset(&arg, 0, sizeof arg);
    memset(&res, 0, sizeof res);
    d5_status s = d5__lval_tensor(&arg, x);
    char prefix[NAME_LEN];
    snprintf(prefix, sizeof prefix, "%s/%s/", f->base, attr);
    if (s == D5_OK) s = d5__lower_graph(f->L, g, sc, prefix, &arg, 1, &res, 1, f->label);
    if (s == D5_OK && res.type != D5_TYPE_TENSOR)
        s = d5_error(D5_ERR_INVALID, "%s: graph %s gives a %s, expected a tensor", f->label, attr,
                     d5_type_name(res.type));
    if (s == D5_OK) snprintf(x, NAME_LEN, "%s", res.names[0]);
    d5__lval_clear(&arg);
    d5__lval_clear(&res);
    return s;
}

/* A copy of the input's descriptor: the network built grows (and moves its
 * values) as nodes are added. */
static d5_status need_rank4(const flex *f, const d5__lval *v, const char *what, d5_tensor_desc *d)
{
    const d5__value *x = v && v->type == D5_TYPE_TENSOR ? d5__lower_value(f->L, v->names[0]) : NULL;
    if (!x || !x->known)
        return d5_error(D5_ERR_INVALID, "%s: input %s must be a tensor of known shape", f->label,
                        what);
    if (x->desc.ndim != 4)
        return d5_error(D5_ERR_SHAPE,
                        "%s: input %s has %d dims, expected 4 ([batch, heads, "
                        "sequence, head size])",
                        f->label, what, (int)x->desc.ndim);
    *d = x->desc;
    return D5_OK;
}

d5_status d5__lower_flex_attention(d5__lowerer *L, const d5__node *n, const d5__scope *sc,
                                   const char *base, const char *label, const d5__lval *const *in,
                                   d5__lval *out)
{
    flex f = {L, base, label};
    d5_tensor_desc qd = {0}, kd = {0}, vd = {0};
    const d5_tensor_desc *q = &qd, *k = &kd, *v = &vd;
    if (n->nin < 3)
        return d5_error(D5_ERR_INVALID, "%s: needs Q, K and V, got %d inputs", label, (int)n->nin);
    d5_status s = need_rank4(&f, in[0], "Q", &qd);
    if (s == D5_OK) s = need_rank4(&f, in[1], "K", &kd);
    if (s == D5_OK) s = need_rank4(&f, in[2], "V", &vd);
    if (s != D5_OK) return s;
    if (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0] || k->shape[3] != q->shape[3] ||
        v->shape[1] != k->shape[1] || v->shape[2] != k->shape[2] || k->shape[1] <= 0 ||
        q->shape[1] % k->shape[1] != 0)
        return d5_error(D5_ERR_SHAPE,
                        "%s: Q [B, Hq, L, E], K [B, Hkv, S, E] and V [B, Hkv, S, Ev] must agree, "
                        "with Hq a multiple of Hkv",
                        label);
    if (!onnx_type(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return d5_error(D5_ERR_UNSUPPORTED, "%s: Q, K and V must be of one floating-point type",
                        label);
    const d5_attrs *attrs = &n->attrs_view;
    double scale = 1 / sqrt((double)q->shape[3]);
    int64_t precision = 0;
    if (d5_attrs_find(attrs, "scale")) s = d5_attrs_float(attrs, "scale", scale, &scale);
    if (s == D5_OK) s = d5_attrs_int(attrs, "softmax_precision", 0, &precision);
    if (s != D5_OK) return s;
    int32_t work = precision                                   ? d5_type_of(precision)
                   : q->dtype == D5_F16 || q->dtype == D5_BF16 ? D5_F32
                                                               : q->dtype;
    if (!work)
        return d5_error(D5_ERR_INVALID, "%s: softmax_precision %lld is no floating-point type",
                        label, (long long)precision);
    /* sqrt(scale) in float32, then in Q's type, on both sides. */
    float c32 = sqrtf((float)scale);
    double c64 = c32;
    d5_tensor ct;
    memset(&ct, 0, sizeof ct);
    ct.desc.dtype = q->dtype;
    uint16_t c16;
    if (q->dtype == D5_F16) c16 = d5_f16_from_f32(c32);
    if (q->dtype == D5_BF16) c16 = d5_bf16_from_f32(c32);
    ct.data = q->dtype == D5_F32 ? (void *)&c32 : q->dtype == D5_F64 ? (void *)&c64 : (void *)&c16;
    char cname[NAME_LEN], k_all[NAME_LEN], v_all[NAME_LEN], qs[NAME_LEN], ks[NAME_LEN],
        kt[NAME_LEN], scores[NAME_LEN], probs[NAME_LEN], vw[NAME_LEN], y[NAME_LEN], yt[NAME_LEN];
    d5__lower_fresh(L, base, "scale", cname, NAME_LEN);
    s = d5_network_add_initializer(L->out, cname, &ct);
    int64_t r = q->shape[1] / k->shape[1];
    if (s == D5_OK) s = repeat_heads(&f, in[1]->names[0], k, r, k_all);
    if (s == D5_OK) s = repeat_heads(&f, in[2]->names[0], v, r, v_all);
    const char *mq[2] = {in[0]->names[0], cname}, *mk[2] = {k_all, cname};
    if (s == D5_OK) s = emit(&f, "Mul", mq, 2, NULL, 0, "q_scaled", qs);
    if (s == D5_OK) s = emit(&f, "Mul", mk, 2, NULL, 0, "k_scaled", ks);
    const int64_t perm[4] = {0, 1, 3, 2};
    d5_attr pa = attr_ints("perm", perm, 4);
    if (s == D5_OK) s = emit(&f, "Transpose", (const char *const[]){ks}, 1, &pa, 1, "k_t", kt);
    const char *mm[2] = {qs, kt};
    char raw[NAME_LEN];
    if (s == D5_OK) s = emit(&f, "MatMul", mm, 2, NULL, 0, "scores", raw);
    if (s == D5_OK) s = cast(&f, raw, q->dtype, work, scores);
    if (s == D5_OK) s = apply_mod(&f, n, sc, "score_mod", scores);
    d5_attr axis = d5__lower_int_attr("axis", -1);
    if (s == D5_OK)
        s = emit(&f, "Softmax", (const char *const[]){scores}, 1, &axis, 1, "probs", probs);
    if (s == D5_OK) s = apply_mod(&f, n, sc, "prob_mod", probs);
    if (s == D5_OK) s = cast(&f, v_all, v->dtype, work, vw);
    const char *pv[2] = {probs, vw};
    if (s == D5_OK) s = emit(&f, "MatMul", pv, 2, NULL, 0, "out", y);
    if (s == D5_OK) s = cast(&f, y, work, v->dtype, yt);
    return s == D5_OK ? d5__lval_tensor(&out[0], yt) : s;
}
