/* fuse-attention: scaled dot-product attention as PyTorch exports it, from
 * 1024 keys on, into one Attention (opset 23). One pass of optimize.c's table
 * (optimize_internal.h); see network.h and docs/level1.md. */
#include "optimize_internal.h"

#include <stdio.h>
#include <string.h>

/* Keys from which the fused kernel is no slower than its parts (dnnl, 2
 * threads, 4 heads of 64: at 128 keys 0.76 ms fused against 0.60 ms for the
 * two products and the Softmax; at 1024 keys 10.2 against 10.3 ms, causal 5.9
 * against 11.5 with the Where): shorter attention stays as it is. */
#define D5_FUSE_ATTENTION_MIN_KEYS 1024

static const int64_t swap12[4] = {0, 2, 1, 3}, keys_t[4] = {0, 2, 3, 1};

/* 1 when node n's INTS attribute `name` is want[0..count-1]. */
static int ints_are(const d5__node *n, const char *name, const int64_t *want, int64_t count)
{
    const int64_t *v = NULL;
    int64_t k = 0;
    if (d5_attrs_ints(&n->attrs_view, name, &v, &k) != D5_OK || !v || k != count) return 0;
    for (int64_t i = 0; i < count; i++)
        if (v[i] != want[i]) return 0;
    return 1;
}

/* The 3-d value [B, S, heads * size] that a Reshape turned into the 4-d
 * value v [B, S, heads, size], read once; its Reshape in *reshape. -1 when v
 * is not such a value. */
static int32_t heads_source(const d5_network *net, const links *l, int32_t v, int32_t *reshape)
{
    int32_t r = d5__opt_prev(net, l, v, "Reshape");
    int32_t x = r >= 0 ? d5__opt_value(net, net->nodes[r].inputs[0]) : -1;
    if (x < 0 || !net->values[x].known || !net->values[v].known) return -1;
    const d5_tensor_desc *xd = &net->values[x].desc, *vd = &net->values[v].desc;
    if (xd->ndim != 3 || vd->ndim != 4 || xd->dtype != D5_F32 || xd->shape[0] != vd->shape[0] ||
        xd->shape[1] != vd->shape[1] || xd->shape[2] != vd->shape[2] * vd->shape[3])
        return -1;
    *reshape = r;
    return x;
}

/* 1 when mask m (of x's rank or less) broadcasts to the scores' shape s with
 * its last dimension equal to the keys'. */
static int mask_fits(const d5_tensor_desc *m, const d5_tensor_desc *s)
{
    if (m->ndim < 1 || m->ndim > s->ndim || m->shape[m->ndim - 1] != s->shape[s->ndim - 1])
        return 0;
    for (int32_t d = 0; d < m->ndim; d++) {
        int64_t n = m->shape[d], want = s->shape[s->ndim - m->ndim + d];
        if (n != want && n != 1) return 0;
    }
    return 1;
}

/* Where's constant condition c (bool, last dimension t keys): -1 when some
 * row attends to no key (Where would average such a row, Attention zero
 * it), 1 when it is the lower triangle of a square (is_causal), else 0. */
static int condition_kind(const d5_tensor *c)
{
    const d5_tensor_desc *d = &c->desc;
    const unsigned char *v = c->data;
    int64_t t = d->shape[d->ndim - 1], rows = t ? d5_tensor_desc_numel(d) / t : 0;
    int tril = d->ndim >= 2 && d->shape[d->ndim - 2] == t && rows == t;
    for (int64_t r = 0; r < rows; r++) {
        int any = 0;
        for (int64_t j = 0; j < t; j++) {
            any |= v[r * t + j] != 0;
            tril = tril && (v[r * t + j] != 0) == (j <= r);
        }
        if (!any) return -1;
    }
    return tril;
}

/* What lies between the scores and the Softmax that reads x: Add(scores, M)
 * with M a float32 mask, or Where(C, scores, fill) with C a constant bool
 * mask and fill a scalar of -1e4 or less (the probabilities of such scores,
 * exp(fill - max) / sum, are 0 in float32 unless a score is below -9896, as
 * under Attention's -inf). Returns the scores' value (x
 * itself when neither), its node in *node (-1: none), the mask in *mask (-1:
 * none) and *causal when C is the lower triangle of a square. */
static int32_t mask_step(d5_network *net, const links *l, int32_t x, int32_t *node, int32_t *mask,
                         int *causal)
{
    int32_t p = x >= 0 && l->count[x] == 1 && !net->values[x].is_output ? l->producer[x] : -1;
    const d5__node *n = p >= 0 ? &net->nodes[p] : NULL;
    *node = *mask = -1;
    *causal = 0;
    if (!n || l->dead[p] || n->nout != 1) return x;
    const d5_tensor_desc *sd = &net->values[x].desc;
    if (d5__opt_is(n, "Add") && n->nin == 2) {
        for (int32_t k = 0; k < 2; k++) {
            int32_t sc = d5__opt_value(net, n->inputs[k]), m = d5__opt_value(net, n->inputs[1 - k]);
            if (sc < 0 || m < 0 || l->producer[sc] < 0 ||
                !d5__opt_is(&net->nodes[l->producer[sc]], "TransposeMatMul") ||
                !net->values[m].known || net->values[m].desc.dtype != D5_F32 ||
                !mask_fits(&net->values[m].desc, sd) || !d5__same_desc(&net->values[sc].desc, sd))
                continue;
            *node = p;
            *mask = m;
            return sc;
        }
        return -1;
    }
    if (!d5__opt_is(n, "Where") || n->nin != 3) return x;
    int32_t c = d5__opt_value(net, n->inputs[0]), sc = d5__opt_value(net, n->inputs[1]);
    double fill = 0;
    if (c < 0 || sc < 0 || net->values[c].kind != D5_VALUE_INITIALIZER ||
        net->values[c].init.desc.dtype != D5_BOOL || !mask_fits(&net->values[c].init.desc, sd) ||
        !net->values[sc].known || !d5__same_desc(&net->values[sc].desc, sd) ||
        !d5__opt_scalar(net, n, 2, &fill) || !(fill <= -1e4))
        return -1;
    int kind = condition_kind(&net->values[c].init);
    if (kind < 0) return -1;
    *node = p;
    *causal = kind;
    *mask = kind ? -1 : c;
    return sc;
}

/* Scaled dot-product attention as PyTorch exports it, after
 * fold-transpose-matmul and fuse-matmul-scale:
 *   Q, K, V [B, S, heads * size] each Reshaped to [B, S, heads, size],
 *   scores = TransposeMatMul(Q, K, perm_a [0,2,1,3], perm_b [0,2,3,1], alpha),
 *   optionally Add(scores, mask) or Where(causal or mask, scores, -inf), or
 *   a mask of one value per key that fuse-matmul-bias made the scores' bias,
 *   P = Softmax(last axis), TransposeMatMul(P, V, perm_b [0,2,1,3]),
 *   Transpose [0,2,1,3], Reshape to [B, S, heads * size],
 * becomes one Attention (opset 23) on the 3-d Q, K and V with q_num_heads,
 * kv_num_heads, scale = alpha, attn_mask or is_causal: no [queries, keys]
 * matrix in memory. Only from D5_FUSE_ATTENTION_MIN_KEYS keys on. */
d5_status d5__opt_fuse_attention(d5_network *net, int32_t si, links *l, int32_t *applied)
{
    const d5__node *sm = &net->nodes[si];
    int64_t axis = 0;
    if (sm->nin != 1 || sm->nout != 1 ||
        d5_attrs_int(&sm->attrs_view, "axis", d5_network_opset(net, "") >= 13 ? -1 : 1, &axis) !=
            D5_OK ||
        (axis != -1 && axis != 3))
        return D5_OK;
    int32_t x = d5__opt_value(net, sm->inputs[0]), p = d5__opt_value(net, sm->outputs[0]);
    if (x < 0 || p < 0 || !net->values[x].known || net->values[x].desc.dtype != D5_F32 ||
        net->values[x].desc.ndim != 4 || net->values[x].desc.shape[3] < D5_FUSE_ATTENTION_MIN_KEYS)
        return D5_OK;
    int32_t mnode, mask, rq = -1, rk = -1, rv = -1;
    int causal;
    int32_t sc = mask_step(net, l, x, &mnode, &mask, &causal);
    int32_t qk = sc >= 0 ? d5__opt_prev(net, l, sc, "TransposeMatMul") : -1;
    if (qk < 0 || net->nodes[qk].nin < 2 || !ints_are(&net->nodes[qk], "perm_a", swap12, 4) ||
        !ints_are(&net->nodes[qk], "perm_b", keys_t, 4))
        return D5_OK;
    if (net->nodes[qk].nin == 3) { /* a mask of one value per key, taken as fuse-matmul-bias's C */
        int32_t c = d5__opt_value(net, net->nodes[qk].inputs[2]);
        if (mask >= 0 || causal || c < 0 || !mask_fits(&net->values[c].desc, &net->values[x].desc))
            return D5_OK;
        mask = c;
    }
    int32_t pv = d5__opt_next(net, l, p, "TransposeMatMul");
    if (pv < 0 || net->nodes[pv].nin != 2 || d5__opt_value(net, net->nodes[pv].inputs[0]) != p ||
        d5_attrs_find(&net->nodes[pv].attrs_view, "alpha") ||
        d5_attrs_find(&net->nodes[pv].attrs_view, "perm_a") ||
        !ints_are(&net->nodes[pv], "perm_b", swap12, 4))
        return D5_OK;
    int32_t tr = d5__opt_next(net, l, d5__opt_value(net, net->nodes[pv].outputs[0]), "Transpose");
    if (tr < 0 || !ints_are(&net->nodes[tr], "perm", swap12, 4)) return D5_OK;
    int32_t rs = d5__opt_next(net, l, d5__opt_value(net, net->nodes[tr].outputs[0]), "Reshape");
    int32_t y = rs >= 0 ? d5__opt_value(net, net->nodes[rs].outputs[0]) : -1;
    int32_t q3 = heads_source(net, l, d5__opt_value(net, net->nodes[qk].inputs[0]), &rq);
    int32_t k3 = heads_source(net, l, d5__opt_value(net, net->nodes[qk].inputs[1]), &rk);
    int32_t v3 = heads_source(net, l, d5__opt_value(net, net->nodes[pv].inputs[1]), &rv);
    if (y < 0 || q3 < 0 || k3 < 0 || v3 < 0 || !net->values[y].known) return D5_OK;
    const d5_tensor_desc *q4 = &net->values[d5__opt_value(net, net->nodes[qk].inputs[0])].desc,
                         *k4 = &net->values[d5__opt_value(net, net->nodes[qk].inputs[1])].desc,
                         *v4 = &net->values[d5__opt_value(net, net->nodes[pv].inputs[1])].desc,
                         *yd = &net->values[y].desc;
    if (yd->ndim != 3 || yd->shape[0] != q4->shape[0] || yd->shape[1] != q4->shape[1] ||
        yd->shape[2] != q4->shape[2] * v4->shape[3] || k4->shape[2] != v4->shape[2])
        return D5_OK;
    double scale = 1;
    const d5_attr *alpha = d5_attrs_find(&net->nodes[qk].attrs_view, "alpha");
    if (alpha && d5_attrs_float(&net->nodes[qk].attrs_view, "alpha", 1, &scale) != D5_OK)
        return D5_OK;
    d5_attr attrs[4] = {
        {.name = "q_num_heads", .type = D5_ATTR_INT, .i = q4->shape[2]},
        {.name = "kv_num_heads", .type = D5_ATTR_INT, .i = k4->shape[2]},
        {.name = "scale", .type = D5_ATTR_FLOAT, .f = scale},
        {.name = "is_causal", .type = D5_ATTR_INT, .i = 1},
    };
    char name[256];
    snprintf(name, sizeof name, "%s+%s+%s", net->nodes[qk].name, sm->name, net->nodes[pv].name);
    d5_status s = d5__network_rewrite_node(net, rs, d5__network_node(net, name) < 0 ? name : NULL,
                                           "Attention", NULL);
    if (s == D5_OK) s = d5__network_set_attrs(net, rs, attrs, causal ? 4 : 3);
    const int32_t ins[4] = {q3, k3, v3, mask};
    for (int32_t k = 0; s == D5_OK && k < (mask >= 0 ? 4 : 3); k++)
        s = d5_network_set_node_input(net, net->nodes[rs].name, k, net->values[ins[k]].name);
    if (s == D5_OK) {
        const int32_t gone[8] = {qk, mnode, si, pv, tr, rq, rk, rv};
        for (int k = 0; k < 8; k++)
            if (gone[k] >= 0) l->dead[gone[k]] = 1;
        (*applied)++;
    }
    return s;
}
