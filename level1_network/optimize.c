/* Graph optimisation passes: rewrites of a network for inference, run once at
 * load before the executor compiles it. One row per pass in `passes` below;
 * each pass proves what it rewrites equal and leaves alone what it cannot (a
 * value read by several nodes or declared a graph output, weights that are
 * graph inputs, types other than float32). See network.h. */
#include "optimize_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef d5_status (*pass_fn)(d5_network *net, int32_t *applied);

/* ---- Helpers ---- */

int32_t d5__opt_value(const d5_network *net, const char *name)
{
    return name && name[0] ? d5__network_value(net, name) : -1;
}

int d5__opt_is(const d5__node *n, const char *op_type)
{
    return !n->domain[0] && strcmp(n->op_type, op_type) == 0;
}

/* The float32 initializer behind input `slot` of n, or NULL. */
static d5__value *f32_init(d5_network *net, const d5__node *n, int32_t slot)
{
    if (slot >= n->nin) return NULL;
    int32_t v = d5__opt_value(net, n->inputs[slot]);
    if (v < 0 || net->values[v].kind != D5_VALUE_INITIALIZER) return NULL;
    return net->values[v].init.desc.dtype == D5_F32 ? &net->values[v] : NULL;
}

/* How many node inputs read each value (a node reading a value twice counts twice). */
static d5_status count_readers(const d5_network *net, int32_t **out)
{
    int32_t *n = d5_calloc((size_t)(net->nvalues ? net->nvalues : 1), sizeof *n, "reader counts");
    if (!n) return D5_ERR_NOMEM;
    for (int32_t i = 0; i < net->nnodes; i++)
        for (int32_t j = 0; j < net->nodes[i].nin; j++) {
            int32_t v = d5__opt_value(net, net->nodes[i].inputs[j]);
            if (v >= 0) n[v]++;
        }
    *out = n;
    return D5_OK;
}

static d5_status links_make(const d5_network *net, links *l)
{
    size_t nv = (size_t)(net->nvalues ? net->nvalues : 1);
    memset(l, 0, sizeof *l);
    l->reader = d5_alloc(nv * sizeof *l->reader, "readers");
    l->producer = d5_alloc(nv * sizeof *l->producer, "producers");
    l->dead = d5_calloc((size_t)(net->nnodes ? net->nnodes : 1), 1, "removed nodes");
    d5_status s =
        l->reader && l->producer && l->dead ? count_readers(net, &l->count) : D5_ERR_NOMEM;
    for (int32_t v = 0; s == D5_OK && v < net->nvalues; v++) l->producer[v] = -1;
    for (int32_t i = 0; s == D5_OK && i < net->nnodes; i++) {
        for (int32_t j = 0; j < net->nodes[i].nin; j++) {
            int32_t v = d5__opt_value(net, net->nodes[i].inputs[j]);
            if (v >= 0) l->reader[v] = i;
        }
        for (int32_t j = 0; j < net->nodes[i].nout; j++) {
            int32_t v = d5__opt_value(net, net->nodes[i].outputs[j]);
            if (v >= 0) l->producer[v] = i;
        }
    }
    return s;
}

/* Removes the nodes marked dead when the pass applied and succeeded, frees l,
 * and returns the pass's status. */
static d5_status links_finish(d5_network *net, links *l, d5_status s, int32_t applied)
{
    if (s == D5_OK && applied) s = d5__network_remove_nodes(net, l->dead);
    d5_free(l->count);
    d5_free(l->reader);
    d5_free(l->producer);
    d5_free(l->dead);
    return s;
}

/* Tries `one` on every node that is not removed and, with anchor, is that
 * operator. Shapes decide what can be fused: without them nothing is. */
static d5_status fuse_each(d5_network *net, int32_t *applied, const char *anchor, fuse_fn one)
{
    if (d5_network_infer_shapes(net) != D5_OK) return D5_OK;
    links l;
    d5_status s = links_make(net, &l);
    for (int32_t i = 0, nnodes = net->nnodes; s == D5_OK && i < nnodes; i++)
        if (!l.dead[i] && (!anchor || d5__opt_is(&net->nodes[i], anchor)))
            s = one(net, i, &l, applied);
    return links_finish(net, &l, s, *applied);
}

/* The node that alone reads value v (v not a graph output) when it is not
 * removed and, with op_type, is that operator; else -1. */
int32_t d5__opt_next(const d5_network *net, const links *l, int32_t v, const char *op_type)
{
    if (v < 0 || l->count[v] != 1 || net->values[v].is_output) return -1;
    int32_t r = l->reader[v];
    return !l->dead[r] && (!op_type || d5__opt_is(&net->nodes[r], op_type)) ? r : -1;
}

/* The node that alone writes value v, read once and no graph output, when it
 * is op_type with one output and not removed; else -1. */
int32_t d5__opt_prev(const d5_network *net, const links *l, int32_t v, const char *op_type)
{
    if (v < 0 || l->count[v] != 1 || net->values[v].is_output) return -1;
    int32_t p = l->producer[v];
    return p >= 0 && !l->dead[p] && net->nodes[p].nout == 1 && d5__opt_is(&net->nodes[p], op_type)
               ? p
               : -1;
}

/* A name no value has yet: base, or base_2, base_3, ... */
static d5_status fresh_name(const d5_network *net, const char *base, char *buf, size_t size)
{
    snprintf(buf, size, "%s", base);
    for (int k = 2; d5__network_value(net, buf) >= 0; k++) {
        if (k > 1000000) return d5_error(D5_ERR_INVALID, "no free value name near '%s'", base);
        snprintf(buf, size, "%s_%d", base, k);
    }
    if (strlen(buf) + 1 >= size) return d5_error(D5_ERR_INVALID, "value name '%s' too long", base);
    return D5_OK;
}

/* ---- eliminate-identity ---- */

/* A node that passes its first input through unchanged at inference. */
static int passes_through(const d5_network *net, const d5__node *n)
{
    if (n->nin < 1 || !n->inputs[0][0] || n->nout != 1) return 0;
    if (d5__opt_is(n, "Identity")) return 1;
    if (!d5__opt_is(n, "Dropout")) return 0;
    int64_t opset = d5_network_opset(net, "");
    if (opset < 7) {
        int64_t is_test = 0;
        return d5_attrs_int(&n->attrs_view, "is_test", 0, &is_test) == D5_OK && is_test != 0;
    }
    if (opset < 12 || n->nin < 3 || !n->inputs[2][0]) return 1;
    int32_t v = d5__opt_value(net, n->inputs[2]); /* training_mode: a constant false only */
    const d5__value *t = v >= 0 ? &net->values[v] : NULL;
    return t && t->kind == D5_VALUE_INITIALIZER && t->init.desc.dtype == D5_BOOL &&
           d5_tensor_desc_numel(&t->init.desc) == 1 && !*(const unsigned char *)t->init.data;
}

static d5_status eliminate_identity(d5_network *net, int32_t *applied)
{
    int32_t *order = d5_alloc((size_t)(net->nnodes ? net->nnodes : 1) * sizeof *order, "order");
    int32_t *alias = d5_alloc((size_t)(net->nvalues ? net->nvalues : 1) * sizeof *alias, "aliases");
    unsigned char *dead = d5_calloc((size_t)(net->nnodes ? net->nnodes : 1), 1, "removed nodes");
    d5_status s = order && alias && dead ? d5_network_check(net, order) : D5_ERR_NOMEM;
    for (int32_t i = 0; s == D5_OK && i < net->nvalues; i++) alias[i] = -1;
    /* In topological order, so that a chain of identities resolves in one step each. */
    for (int32_t k = 0; s == D5_OK && k < net->nnodes; k++) {
        const d5__node *n = &net->nodes[order[k]];
        if (!passes_through(net, n)) continue;
        int32_t x = d5__opt_value(net, n->inputs[0]), y = d5__opt_value(net, n->outputs[0]);
        if (x < 0 || y < 0 || net->values[y].is_output) continue;
        alias[y] = alias[x] >= 0 ? alias[x] : x;
        dead[order[k]] = 1;
        (*applied)++;
    }
    for (int32_t i = 0; s == D5_OK && *applied && i < net->nnodes; i++) {
        d5__node *n = &net->nodes[i];
        for (int32_t j = 0; s == D5_OK && !dead[i] && j < n->nin; j++) {
            int32_t v = d5__opt_value(net, n->inputs[j]);
            if (v < 0 || alias[v] < 0) continue;
            char *name = d5_strdup(net->values[alias[v]].name, "node input");
            if (!name) {
                s = D5_ERR_NOMEM;
                break;
            }
            d5_free(n->inputs[j]);
            n->inputs[j] = name;
        }
    }
    if (s == D5_OK && *applied) s = d5__network_remove_nodes(net, dead);
    d5_free(order);
    d5_free(alias);
    d5_free(dead);
    return s;
}

/* ---- fold-batchnorm ---- */

/* BatchNormalization in inference mode with one output and per-channel operands. */
static int bn_inference(const d5_network *net, const d5__node *n)
{
    int64_t opset = d5_network_opset(net, ""), v = 0;
    if (!d5__opt_is(n, "BatchNormalization") || n->nin != 5 || n->nout != 1 || opset < 7) return 0;
    if (d5_attrs_find(&n->attrs_view, "spatial")) return 0;
    return opset < 14 || (d5_attrs_int(&n->attrs_view, "training_mode", 0, &v) == D5_OK && v == 0);
}

/* Conv(X, W, B) -> BatchNormalization(scale, bias, mean, var) becomes
 * Conv(X, W * a, (B - mean) * a + bias) with a = scale / sqrt(var + epsilon),
 * per output channel, computed in double. */
static d5_status fold_one(d5_network *net, int32_t ci, const d5__node *bn, double eps)
{
    d5__node *conv = &net->nodes[ci];
    const d5__value *w = f32_init(net, conv, 1);
    const d5__value *b = conv->nin > 2 && conv->inputs[2][0] ? f32_init(net, conv, 2) : NULL;
    const d5__value *p[4];
    for (int32_t i = 0; i < 4; i++) p[i] = f32_init(net, bn, i + 1);
    if (!w || (conv->nin > 2 && conv->inputs[2][0] && !b) || !p[0] || !p[1] || !p[2] || !p[3])
        return D5_ERR_UNSUPPORTED;
    int64_t m = w->init.desc.ndim >= 1 ? w->init.desc.shape[0] : 0;
    for (int32_t i = 0; i < 4; i++)
        if (p[i]->init.desc.ndim != 1 || p[i]->init.desc.shape[0] != m) return D5_ERR_UNSUPPORTED;
    if (m <= 0 || (b && d5_tensor_desc_numel(&b->init.desc) != m)) return D5_ERR_UNSUPPORTED;
    d5_tensor nw = {0}, nb = {0};
    d5_tensor_desc bd;
    d5_status s = d5_tensor_alloc(&w->init.desc, &nw);
    if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 1, &m, &bd);
    if (s == D5_OK) s = d5_tensor_alloc(&bd, &nb);
    if (s != D5_OK) {
        d5_tensor_free(&nw);
        return s;
    }
    const float *scale = p[0]->init.data, *bias = p[1]->init.data, *mean = p[2]->init.data,
                *var = p[3]->init.data, *wd = w->init.data, *bdata = b ? b->init.data : NULL;
    float *ow = nw.data, *ob = nb.data;
    int64_t per = d5_tensor_desc_numel(&w->init.desc) / m;
    for (int64_t c = 0; c < m; c++) {
        double a = (double)scale[c] / sqrt((double)var[c] + eps);
        for (int64_t k = 0; k < per; k++) ow[c * per + k] = (float)(wd[c * per + k] * a);
        ob[c] = (float)(((bdata ? (double)bdata[c] : 0.0) - mean[c]) * a + bias[c]);
    }
    char wname[512], bname[512];
    char base[480];
    snprintf(base, sizeof base, "%.440s.folded_W", conv->name);
    s = fresh_name(net, base, wname, sizeof wname);
    snprintf(base, sizeof base, "%.440s.folded_B", conv->name);
    if (s == D5_OK) s = fresh_name(net, base, bname, sizeof bname);
    if (s == D5_OK)
        s = d5_network_add_initializer_take(net, wname, &nw);
    else
        d5_tensor_free(&nw);
    if (s == D5_OK)
        s = d5_network_add_initializer_take(net, bname, &nb);
    else
        d5_tensor_free(&nb);
    /* The node array did not move (initializers are values), but re-read it. */
    conv = &net->nodes[ci];
    if (s == D5_OK) s = d5_network_set_node_input(net, conv->name, 1, wname);
    if (s == D5_OK) s = d5_network_set_node_input(net, conv->name, 2, bname);
    return s;
}

static d5_status fold_batchnorm(d5_network *net, int32_t *applied)
{
    int32_t *readers = NULL;
    unsigned char *dead = d5_calloc((size_t)(net->nnodes ? net->nnodes : 1), 1, "removed nodes");
    d5_status s = dead ? count_readers(net, &readers) : D5_ERR_NOMEM;
    for (int32_t i = 0; s == D5_OK && i < net->nnodes; i++) {
        const d5__node *bn = &net->nodes[i];
        if (!bn_inference(net, bn)) continue;
        int32_t x = d5__opt_value(net, bn->inputs[0]), y = d5__opt_value(net, bn->outputs[0]);
        if (x < 0 || y < 0 || net->values[x].is_output || readers[x] != 1) continue;
        int32_t ci = net->values[x].producer;
        if (ci < 0 || dead[ci] || !d5__opt_is(&net->nodes[ci], "Conv") || net->nodes[ci].nout != 1)
            continue;
        double eps = 1e-5;
        if (d5_attrs_float(&bn->attrs_view, "epsilon", 1e-5, &eps) != D5_OK) continue;
        s = fold_one(net, ci, bn, eps);
        if (s == D5_ERR_UNSUPPORTED) {
            s = D5_OK;
            continue;
        }
        /* Value indices are stable until nodes are removed: the conv now writes y. */
        if (s == D5_OK) s = d5__network_move_output(net, ci, 0, d5__opt_value(net, bn->outputs[0]));
        if (s == D5_OK) {
            dead[i] = 1;
            (*applied)++;
        }
    }
    if (s == D5_OK && *applied) s = d5__network_remove_nodes(net, dead);
    if (s == D5_OK && *applied) s = d5__network_drop_unread(net);
    d5_free(readers);
    d5_free(dead);
    return s;
}

/* ---- fuse-conv-activation ---- */

/* One Conv and what follows it: Conv -> Relu, Conv -> Add(Z) or Conv -> Add(Z) -> Relu
 * become one FusedConv(X, W, B, Z) with activation Relu; oneDNN runs the addition and
 * the activation as post-ops of the convolution, on its output while it is in cache.
 * Z must have the convolution's output shape (no broadcasting). */
static d5_status fuse_one(d5_network *net, int32_t ci, links *l, int32_t *applied)
{
    const d5__node *conv = &net->nodes[ci];
    if (conv->nout != 1 || conv->nin < 2) return D5_OK;
    int32_t y = d5__opt_value(net, conv->outputs[0]);
    int32_t r = d5__opt_next(net, l, y, NULL);
    if (r < 0 || net->values[y].desc.dtype != D5_F32) return D5_OK;
    int32_t last = -1, add = -1, relu = -1, z = -1;
    const d5__node *next = &net->nodes[r];
    if (d5__opt_is(next, "Add") && next->nin == 2 && next->nout == 1) {
        int32_t a = d5__opt_value(net, next->inputs[0]), b = d5__opt_value(net, next->inputs[1]);
        z = a == y ? b : a;
        int32_t sum = d5__opt_value(net, next->outputs[0]);
        if (z < 0 || z == y || !net->values[z].known || sum < 0 ||
            !d5__same_desc(&net->values[z].desc, &net->values[y].desc) ||
            !d5__same_desc(&net->values[sum].desc, &net->values[y].desc))
            return D5_OK;
        add = last = r;
        int32_t after = d5__opt_next(net, l, sum, "Relu");
        if (after >= 0 && net->nodes[after].nout == 1) relu = last = after;
    } else if (d5__opt_is(next, "Relu") && next->nout == 1) {
        relu = last = r;
    } else {
        return D5_OK;
    }
    /* The fused node is named after the nodes it replaces: conv1+add1+relu1. */
    char *name = NULL;
    size_t len = strlen(conv->name) + 3;
    if (add >= 0) len += strlen(net->nodes[add].name) + 1;
    if (relu >= 0) len += strlen(net->nodes[relu].name) + 1;
    if (!(name = d5_alloc(len, "node name"))) return D5_ERR_NOMEM;
    snprintf(name, len, "%s%s%s%s%s", conv->name, add >= 0 ? "+" : "",
             add >= 0 ? net->nodes[add].name : "", relu >= 0 ? "+" : "",
             relu >= 0 ? net->nodes[relu].name : "");
    d5_attr act = {.name = "activation", .type = D5_ATTR_STRING, .s = "Relu"};
    int32_t out = d5__opt_value(net, net->nodes[last].outputs[0]);
    char zname[1];
    zname[0] = '\0';
    d5_status s = d5__network_rewrite_node(net, ci, d5__network_node(net, name) < 0 ? name : NULL,
                                           "FusedConv", relu >= 0 ? &act : NULL);
    d5_free(name);
    conv = &net->nodes[ci];
    if (s == D5_OK && z >= 0 && conv->nin < 3)
        s = d5_network_set_node_input(net, conv->name, 2, zname);
    if (s == D5_OK && z >= 0)
        s = d5_network_set_node_input(net, conv->name, 3, net->values[z].name);
    if (s == D5_OK) s = d5__network_move_output(net, ci, 0, out);
    if (s == D5_OK) {
        if (add >= 0) l->dead[add] = 1;
        if (relu >= 0) l->dead[relu] = 1;
        (*applied)++;
    }
    return s;
}

/* ---- fuse-gelu ---- */

/* The value of the float32 scalar initializer behind input `slot` of n (one
 * element, any rank), in *out; 0 when there is none. */
int d5__opt_scalar(d5_network *net, const d5__node *n, int32_t slot, double *out)
{
    const d5__value *c = f32_init(net, n, slot);
    if (c && d5_tensor_desc_numel(&c->init.desc) == 1) {
        *out = *(const float *)c->init.data;
        return 1;
    }
    /* Or the output of a Constant node holding a float32 tensor of one element. */
    int32_t v = slot < n->nin ? d5__opt_value(net, n->inputs[slot]) : -1;
    for (int32_t i = 0; v >= 0 && i < net->nnodes; i++) {
        const d5__node *k = &net->nodes[i];
        if (!d5__opt_is(k, "Constant") || k->nout != 1 || d5__opt_value(net, k->outputs[0]) != v)
            continue;
        const d5_attr *a = d5_attrs_find(&k->attrs_view, "value");
        const d5_tensor *t = a && a->type == D5_ATTR_TENSOR ? a->tensor : NULL;
        if (!t || t->desc.dtype != D5_F32 || d5_tensor_desc_numel(&t->desc) != 1) return 0;
        *out = *(const float *)t->data;
        return 1;
    }
    return 0;
}

/* For a binary node n reading value v: the slot of its other input when that
 * is a float32 scalar initializer within 1e-6 of `want`, else -1. */
static int32_t other_is(d5_network *net, const d5__node *n, int32_t v, double want)
{
    double c;
    if (n->nin != 2 || n->nout != 1) return -1;
    for (int32_t k = 0; k < 2; k++)
        if (d5__opt_value(net, n->inputs[k]) == v && d5__opt_scalar(net, n, 1 - k, &c) &&
            fabs(c - want) <= 1e-6 * fabs(want))
            return 1 - k;
    return -1;
}

/* The input of the two-input node n that is multiplied, divided or added
 * by the scalar constant `want` (the other input); -1 when neither is. */
static int32_t scaled_input(d5_network *net, const d5__node *n, double want)
{
    double c;
    if (n->nin != 2 || n->nout != 1) return -1;
    for (int32_t k = 0; k < 2; k++)
        if (d5__opt_scalar(net, n, 1 - k, &c) && fabs(c - want) <= 1e-6 * fabs(want))
            return d5__opt_value(net, n->inputs[k]);
    return -1;
}

/* The end that both forms of GELU share, from the value e (Erf's or Tanh's
 * output) and the GELU's input x:
 *   a = Add(e, 1)  then y = Mul(Mul(x, a), 0.5)  or  y = Mul(Mul(x, 0.5), a)
 * Returns y and the three nodes in `tail`, or -1. */
static int32_t gelu_tail(d5_network *net, const links *l, int32_t e, int32_t x, int32_t tail[3])
{
    int32_t ai = d5__opt_next(net, l, e, "Add");
    if (ai < 0 || other_is(net, &net->nodes[ai], e, 1.0) < 0) return -1;
    int32_t a = d5__opt_value(net, net->nodes[ai].outputs[0]);
    int32_t m1 = d5__opt_next(net, l, a, "Mul"), m2 = -1, y = -1;
    if (m1 < 0) return -1;
    const d5__node *mn = &net->nodes[m1];
    int32_t other = d5__opt_value(net, mn->inputs[d5__opt_value(net, mn->inputs[0]) == a ? 1 : 0]);
    int32_t h = d5__opt_value(net, mn->outputs[0]);
    if (other == x) { /* Mul(x, a) then Mul(., 0.5) */
        m2 = d5__opt_next(net, l, h, "Mul");
        if (m2 < 0 || other_is(net, &net->nodes[m2], h, 0.5) < 0) return -1;
        y = d5__opt_value(net, net->nodes[m2].outputs[0]);
    } else { /* Mul(x, 0.5) then Mul(., a) */
        m2 = d5__opt_prev(net, l, other, "Mul");
        if (m2 < 0 || other_is(net, &net->nodes[m2], x, 0.5) < 0) return -1;
        y = h;
    }
    tail[0] = ai, tail[1] = m1, tail[2] = m2;
    return y;
}

/* The GELU's input x of the tanh form, from the Tanh's input s:
 *   c = Mul(Pow(x, 3), 0.044715);  i = Add(x, c);  s = Mul(i, sqrt(2 / pi))
 * (operands in either order). Returns x and the four nodes in `head`, or -1. */
static int32_t gelu_tanh_head(d5_network *net, const links *l, int32_t s, int32_t head[4])
{
    int32_t si = d5__opt_prev(net, l, s, "Mul");
    if (si < 0) return -1;
    int32_t i = scaled_input(net, &net->nodes[si], 0.79788456080286536);
    int32_t ii = d5__opt_prev(net, l, i, "Add");
    if (ii < 0 || net->nodes[ii].nin != 2) return -1;
    for (int32_t k = 0; k < 2; k++) {
        int32_t x = d5__opt_value(net, net->nodes[ii].inputs[k]);
        int32_t ci = d5__opt_prev(net, l, d5__opt_value(net, net->nodes[ii].inputs[1 - k]), "Mul");
        if (ci < 0) continue;
        int32_t pi = d5__opt_prev(net, l, scaled_input(net, &net->nodes[ci], 0.044715), "Pow");
        double e;
        if (pi < 0 || net->nodes[pi].nin != 2 ||
            d5__opt_value(net, net->nodes[pi].inputs[0]) != x ||
            !d5__opt_scalar(net, &net->nodes[pi], 1, &e) || e != 3.0)
            continue;
        head[0] = si, head[1] = ii, head[2] = ci, head[3] = pi;
        return x;
    }
    return -1;
}

/* One GELU in a form PyTorch exports, from its Erf or its Tanh, becomes
 * y = Gelu(x):
 *   Erf form (nn.GELU()): d = Div(x, sqrt(2)) or Mul(x, 1/sqrt(2));
 *     e = Erf(d), then gelu_tail;
 *   tanh form (nn.GELU(approximate="tanh"), GPT-2's gelu_new): gelu_tanh_head,
 *     e = Tanh(s), then gelu_tail; the Gelu is approximate="tanh".
 * Every intermediate value has one reader and is no graph output; x, the
 * Erf's or Tanh's input and y have one float32 shape. */
static d5_status fuse_gelu_one(d5_network *net, int32_t ei, links *l, int32_t *applied)
{
    const d5__node *en = &net->nodes[ei];
    const int tanh_form = d5__opt_is(en, "Tanh");
    if ((!tanh_form && !d5__opt_is(en, "Erf")) || en->nin != 1 || en->nout != 1) return D5_OK;
    int32_t d = d5__opt_value(net, en->inputs[0]), e = d5__opt_value(net, en->outputs[0]);
    int32_t head[4] = {-1, -1, -1, -1}, tail[3], x = -1;
    if (tanh_form) {
        x = gelu_tanh_head(net, l, d, head);
    } else {
        head[0] = d5__opt_prev(net, l, d, "Div");
        if (head[0] < 0) head[0] = d5__opt_prev(net, l, d, "Mul");
        if (head[0] < 0 || net->nodes[head[0]].nin != 2) return D5_OK;
        const d5__node *dn = &net->nodes[head[0]];
        double c;
        if (d5__opt_is(dn, "Div") && d5__opt_scalar(net, dn, 1, &c) &&
            fabs(c - 1.41421356237309505) <= 1e-6)
            x = d5__opt_value(net, dn->inputs[0]);
        if (d5__opt_is(dn, "Mul")) x = scaled_input(net, dn, 0.70710678118654752);
    }
    if (x < 0 || e < 0) return D5_OK;
    int32_t y = gelu_tail(net, l, e, x, tail);
    if (y < 0 || net->values[x].desc.dtype != D5_F32 ||
        !d5__same_desc(&net->values[x].desc, &net->values[d].desc) ||
        !d5__same_desc(&net->values[x].desc, &net->values[y].desc))
        return D5_OK;
    char name[512];
    snprintf(name, sizeof name, "%s+gelu", en->name);
    d5_attr approximate = {0};
    approximate.name = "approximate";
    approximate.type = D5_ATTR_STRING;
    approximate.s = "tanh";
    d5_status s = d5__network_rewrite_node(net, ei, d5__network_node(net, name) < 0 ? name : NULL,
                                           "Gelu", tanh_form ? &approximate : NULL);
    if (s == D5_OK) s = d5_network_set_node_input(net, net->nodes[ei].name, 0, net->values[x].name);
    if (s == D5_OK) s = d5__network_move_output(net, ei, 0, y);
    if (s == D5_OK) {
        for (int k = 0; k < 4; k++)
            if (head[k] >= 0) l->dead[head[k]] = 1;
        for (int k = 0; k < 3; k++) l->dead[tail[k]] = 1;
        (*applied)++;
    }
    return s;
}

/* ---- fold-transpose-matmul ---- */

/* MatMul(Transpose(A), Transpose(B)), either Transpose or both, becomes
 * TransposeMatMul(A, B) with the permutations perm_a and perm_b: the
 * backends read the operands through strides instead of writing them out
 * transposed. Each Transpose's output has the MatMul as its one reader and
 * is no graph output; float32 operands of rank 2 or more. */
static d5_status fold_one_matmul(d5_network *net, int32_t i, links *l, int32_t *applied)
{
    const d5__node *mm = &net->nodes[i];
    int32_t t[2] = {-1, -1}, x[2] = {-1, -1};
    if (mm->nin != 2 || mm->nout != 1) return D5_OK;
    for (int32_t k = 0; k < 2; k++) {
        int32_t v = d5__opt_value(net, mm->inputs[k]);
        if (v < 0 || !net->values[v].known || net->values[v].desc.dtype != D5_F32 ||
            net->values[v].desc.ndim < 2)
            return D5_OK;
        int32_t p = d5__opt_prev(net, l, v, "Transpose");
        if (p >= 0 && net->nodes[p].nin == 1) x[k] = d5__opt_value(net, net->nodes[p].inputs[0]);
        if (x[k] >= 0) t[k] = p;
    }
    if (t[0] < 0 && t[1] < 0) return D5_OK;
    d5_status s = D5_OK;
    for (int32_t k = 0; k < 2 && s == D5_OK; k++) {
        if (t[k] < 0) continue;
        const d5__node *tn = &net->nodes[t[k]];
        const int64_t *perm = NULL;
        int64_t n = 0, rev[D5_MAX_DIMS];
        int32_t rank = net->values[x[k]].desc.ndim;
        s = d5_attrs_ints(&tn->attrs_view, "perm", &perm, &n);
        if (s != D5_OK) break;
        if (!perm) { /* the default: the axes reversed */
            for (int32_t j = 0; j < rank; j++) rev[j] = rank - 1 - j;
            perm = rev;
            n = rank;
        }
        d5_attr a = {
            .name = k ? "perm_b" : "perm_a", .type = D5_ATTR_INTS, .ints = perm, .count = n};
        s = d5__network_rewrite_node(net, i, NULL, "TransposeMatMul", &a);
        if (s == D5_OK)
            s = d5_network_set_node_input(net, net->nodes[i].name, k, net->values[x[k]].name);
        if (s == D5_OK) l->dead[t[k]] = 1;
    }
    if (s == D5_OK) (*applied)++;
    return s;
}

/* ---- fuse-matmul-scale, fuse-matmul-bias ---- */

/* The one reader of a MatMul or TransposeMatMul's float32 output, when it is
 * op_type and no node is removed; -1 otherwise. */
static int32_t matmul_then(const d5_network *net, const links *l, int32_t i, const char *op_type)
{
    const d5__node *mm = &net->nodes[i];
    if (l->dead[i] || mm->nin != 2 || mm->nout != 1 ||
        !(d5__opt_is(mm, "MatMul") || d5__opt_is(mm, "TransposeMatMul")))
        return -1;
    int32_t y = d5__opt_value(net, mm->outputs[0]);
    int32_t r = d5__opt_next(net, l, y, op_type);
    if (r < 0 || !net->values[y].known || net->values[y].desc.dtype != D5_F32 ||
        net->nodes[r].nin != 2 || net->nodes[r].nout != 1)
        return -1;
    return r;
}

/* Matmul i takes over the output of its reader r, which is removed. */
static d5_status matmul_absorb(d5_network *net, int32_t i, int32_t r, links *l, int32_t *applied)
{
    d5_status s = d5__network_move_output(net, i, 0, d5__opt_value(net, net->nodes[r].outputs[0]));
    if (s == D5_OK) {
        l->dead[r] = 1;
        (*applied)++;
    }
    return s;
}

/* MatMul(A, B) or TransposeMatMul(A, B) without a bias or an alpha, whose
 * output only a Div by a float32 scalar constant c (or a Mul by one, in
 * either order) reads, becomes TransposeMatMul with alpha = 1 / c (or c): an
 * attention block's scores divided by sqrt(d) scaled by the product's
 * kernel. */
static d5_status scale_one(d5_network *net, int32_t i, links *l, int32_t *applied)
{
    if (d5_attrs_find(&net->nodes[i].attrs_view, "alpha")) return D5_OK;
    int32_t r = matmul_then(net, l, i, "Div");
    if (r < 0) r = matmul_then(net, l, i, "Mul");
    if (r < 0) return D5_OK;
    const d5__node *op = &net->nodes[r];
    int32_t y = d5__opt_value(net, net->nodes[i].outputs[0]),
            z = d5__opt_value(net, op->outputs[0]);
    double c = 0, alpha = 0;
    if (d5__opt_is(op, "Div") && d5__opt_value(net, op->inputs[0]) == y &&
        d5__opt_scalar(net, op, 1, &c) && c != 0)
        alpha = 1.0 / c;
    else if (d5__opt_is(op, "Mul") &&
             d5__opt_scalar(net, op, d5__opt_value(net, op->inputs[0]) == y, &c))
        alpha = c;
    if (alpha == 0 || z < 0 || !net->values[z].known ||
        !d5__same_desc(&net->values[z].desc, &net->values[y].desc))
        return D5_OK;
    d5_attr a = {.name = "alpha", .type = D5_ATTR_FLOAT, .f = alpha};
    d5_status s = d5__network_rewrite_node(net, i, NULL, "TransposeMatMul", &a);
    return s == D5_OK ? matmul_absorb(net, i, r, l, applied) : s;
}

/* MatMul(A, B) or TransposeMatMul(A, B) whose output only an Add reads, the
 * Add's other operand a float32 initializer of N values (the last dimension
 * of the product; shape [N] or [1, ..., N]) that does not widen the product,
 * becomes TransposeMatMul(A, B, C): the bias added by the matrix product's
 * kernel while its output is in cache. */
static d5_status bias_one(d5_network *net, int32_t i, links *l, int32_t *applied)
{
    int32_t ai = matmul_then(net, l, i, "Add");
    if (ai < 0) return D5_OK;
    int32_t y = d5__opt_value(net, net->nodes[i].outputs[0]);
    const d5__node *add = &net->nodes[ai];
    const d5__value *c = f32_init(net, add, d5__opt_value(net, add->inputs[0]) == y ? 1 : 0);
    int32_t sum = d5__opt_value(net, add->outputs[0]);
    const d5_tensor_desc *yd = &net->values[y].desc;
    if (yd->ndim < 2 || !c || sum < 0 || !net->values[sum].known || c->init.desc.ndim > yd->ndim ||
        d5_tensor_desc_numel(&c->init.desc) != yd->shape[yd->ndim - 1] ||
        !d5__same_desc(&net->values[sum].desc, yd))
        return D5_OK;
    const char *cname = c->name;
    d5_status s = d5__network_rewrite_node(net, i, NULL, "TransposeMatMul", NULL);
    if (s == D5_OK) s = d5_network_set_node_input(net, net->nodes[i].name, 2, cname);
    return s == D5_OK ? matmul_absorb(net, i, ai, l, applied) : s;
}

/* ---- The passes ---- */

/* A pass is a function of the whole network (run) or a fusion tried on
 * every node of one operator (anchor, one; anchor NULL: every node). */
static const struct {
    const char *name;
    d5_optimize_level level;
    pass_fn run;
    const char *anchor;
    fuse_fn one;
} passes[] = {
    {"eliminate-identity", D5_OPTIMIZE_BASIC, eliminate_identity, NULL, NULL},
    {"fold-batchnorm", D5_OPTIMIZE_BASIC, fold_batchnorm, NULL, NULL},
    {"fuse-conv-activation", D5_OPTIMIZE_ALL, NULL, "Conv", fuse_one},
    {"fuse-gelu", D5_OPTIMIZE_ALL, NULL, NULL, fuse_gelu_one},
    {"fold-transpose-matmul", D5_OPTIMIZE_ALL, NULL, "MatMul", fold_one_matmul},
    {"fuse-matmul-scale", D5_OPTIMIZE_ALL, NULL, NULL, scale_one},
    {"fuse-matmul-bias", D5_OPTIMIZE_ALL, NULL, NULL, bias_one},
    {"fuse-attention", D5_OPTIMIZE_ALL, NULL, "Softmax", d5__opt_fuse_attention},
};

static const char *const level_names[] = {"none", "basic", "all"};

d5_status d5_optimize_parse(const char *text, d5_optimize_level *level)
{
    for (int32_t i = 0; text && i < 3; i++)
        if (strcmp(text, level_names[i]) == 0) {
            *level = (d5_optimize_level)i;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID, "optimisation level '%s': expected none, basic or all",
                    text ? text : "(null)");
}

const char *d5_optimize_name(d5_optimize_level level)
{
    return level >= 0 && level <= D5_OPTIMIZE_ALL ? level_names[level] : "unknown";
}

d5_status d5_network_optimize(d5_network *net, d5_optimize_level level, d5_optimize_report *report)
{
    d5_optimize_report r;
    memset(&r, 0, sizeof r);
    if (!net) return d5_error(D5_ERR_INVALID, "d5_network_optimize: no network");
    if (level < D5_OPTIMIZE_NONE || level > D5_OPTIMIZE_ALL)
        return d5_error(D5_ERR_INVALID, "d5_network_optimize: level %d is not a d5_optimize_level",
                        (int)level);
    r.level = level;
    r.nodes_before = net->nnodes;
    d5_status s = D5_OK;
    /* Subgraphs read values of the graph by name, which the passes do not
     * follow: such a network is left as it is (every pass applied 0 times). */
    int control = d5_network_has_control_flow(net);
    for (size_t i = 0; s == D5_OK && i < sizeof passes / sizeof passes[0]; i++) {
        if (passes[i].level > level) continue;
        if (control) {
            r.passes[r.npasses++].name = passes[i].name;
            continue;
        }
        int32_t k = r.npasses++;
        r.passes[k].name = passes[i].name;
        int32_t *applied = &r.passes[k].applied;
        s = passes[i].run ? passes[i].run(net, applied)
                          : fuse_each(net, applied, passes[i].anchor, passes[i].one);
    }
    r.nodes_after = net->nnodes;
    if (report) *report = r;
    return s;
}
