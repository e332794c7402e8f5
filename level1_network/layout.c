/* Layout propagation: chains of operators that take a backend's own blocked
 * layout (the flag D5_OP_BLOCKED_LAYOUT: convolutions, poolings and batch
 * normalizations of a backend that blocks channels, such as nChw16c), with
 * the element-wise operators between them, keep their activations in that
 * layout, so that a chain reorders once at each end instead of around every
 * node. Runs after every node has its backend and before memory is
 * planned (the blocked layout of these values takes the same bytes: only
 * whole blocks of channels are accepted).
 *
 * Two kinds of nodes take part:
 *   - layout operators (D5_OP_BLOCKED_LAYOUT; of one backend, the first such
 *     node's, since each backend blocks in its own way) are created again with the
 *     attribute D5_ATTR_BLOCKED naming which of X (slot 0), FusedConv's Z
 *     (slot 3) and Y are blocked; one that declines (channels not a multiple
 *     of the block, a 3-d convolution) takes its values out of the set;
 *   - element-wise operators on any backend (Relu, Add, ...) whose inputs
 *     and output have one shape compute the same thing in any layout, as
 *     long as all of them share it: a mix takes all of them out.
 * Both rules are applied until nothing changes. A value is a candidate when
 * it is a float32 4-d activation written by such a node and read only by
 * such nodes in such slots, not a graph output nor shared with a view.
 *
 * Under backprop the gradient of a blocked value is blocked too: it is
 * written and read only by the backward passes of the same nodes, which
 * D5_ATTR_BLOCKED tells (operator.h). Not with keep_values (any value may be
 * fetched). */
#include "executor_internal.h"

#include <string.h>

enum { LK_NONE, LK_OPERATOR, LK_ELEMENTWISE };

static int named(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0) return 1;
    return 0;
}

/* Inputs that are present all have the output's descriptor. */
static int same_shapes(const d5_executor *ex, const xnode *n)
{
    if (n->nout != 1 || n->out[0] < 0) return 0;
    const d5_tensor_desc *y = &ex->vals[n->out[0]].desc;
    for (int32_t k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && !d5__same_desc(&ex->vals[n->in[k]].desc, y)) return 0;
    return 1;
}

/* The backend whose blocked layout is propagated: that of the first node
 * with D5_OP_BLOCKED_LAYOUT, or NULL when there is none. */
static const char *layout_backend(const d5_executor *ex)
{
    for (int32_t i = 0; i < ex->nnodes; i++)
        if (ex->nodes[i].desc->flags & D5_OP_BLOCKED_LAYOUT) return ex->nodes[i].desc->backend;
    return NULL;
}

/* `lb`: layout_backend(ex). */
static int layout_kind(const d5_executor *ex, const char *lb, const xnode *n)
{
    static const char *const elementwise[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh",
                                              "Add",  "Sub",       "Mul"};
    if (lb && (n->desc->flags & D5_OP_BLOCKED_LAYOUT) && strcmp(n->desc->backend, lb) == 0 &&
        n->nout >= 1)
        return LK_OPERATOR;
    if (named(n->desc->name, elementwise, 7) && same_shapes(ex, n)) return LK_ELEMENTWISE;
    return LK_NONE;
}

/* Whether input slot k of node n may read a blocked value. */
static int blockable_slot(const d5_executor *ex, const char *lb, const xnode *n, int32_t k)
{
    int kind = layout_kind(ex, lb, n);
    if (kind == LK_ELEMENTWISE) return 1;
    return kind == LK_OPERATOR && (k == 0 || (k == 3 && strcmp(n->desc->name, "FusedConv") == 0));
}

/* Marks in ok[] the values that may stay blocked (see the top). One pass
 * over the nodes. */
static void candidates(const d5_executor *ex, const char *lb, const int32_t *producer,
                       unsigned char *ok)
{
    unsigned char *bad = d5_calloc((size_t)ex->nvals, 1, "values"), *read = ok;
    if (!bad) return; /* nothing is blocked */
    for (int32_t i = 0; i < ex->nnodes; i++) {
        const xnode *n = &ex->nodes[i];
        for (int32_t k = 0; k < n->nin; k++) {
            if (n->in[k] < 0) continue;
            read[n->in[k]] = 1;
            if (!blockable_slot(ex, lb, n, k)) bad[n->in[k]] = 1;
        }
    }
    for (int32_t v = 0; v < ex->nvals; v++)
        if (ex->vals[v].alias >= 0) bad[ex->vals[v].alias] = 1;
    for (int32_t v = 0; v < ex->nvals; v++) {
        const xval *x = &ex->vals[v];
        const xnode *p = producer[v] >= 0 ? &ex->nodes[producer[v]] : NULL;
        ok[v] = read[v] && !bad[v] && x->kind == XV_ACT && !ex->net->values[v].is_output &&
                x->alias < 0 && x->desc.dtype == D5_F32 && x->desc.ndim == 4 && p &&
                p->out[0] == v && layout_kind(ex, lb, p) != LK_NONE;
    }
    d5_free(bad);
}

static int32_t flags_of(const xnode *n, const unsigned char *blocked)
{
    int32_t f = 0, backward = n->backward ? D5_BLOCKED_BACKWARD : 0;
    if (n->nin > 0 && n->in[0] >= 0 && blocked[n->in[0]]) f |= D5_BLOCKED_X;
    if (n->nin > 3 && n->in[3] >= 0 && blocked[n->in[3]]) f |= D5_BLOCKED_Z;
    if (n->out[0] >= 0 && blocked[n->out[0]]) f |= D5_BLOCKED_Y;
    return f ? f | backward : 0;
}

/* Takes every value of node n out of the set; whether one was in it. */
static int unblock(const xnode *n, unsigned char *blocked)
{
    int changed = 0;
    for (int32_t k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && blocked[n->in[k]]) changed = 1, blocked[n->in[k]] = 0;
    if (n->out[0] >= 0 && blocked[n->out[0]]) changed = 1, blocked[n->out[0]] = 0;
    return changed;
}

/* An element-wise node whose values do not share one layout. */
static int mixed(const xnode *n, const unsigned char *blocked)
{
    int any = 0, all = 1;
    for (int32_t k = -1; k < n->nin; k++) {
        int32_t v = k < 0 ? n->out[0] : n->in[k];
        if (v < 0) continue;
        any |= blocked[v];
        all &= blocked[v];
    }
    return any && !all;
}

/* Creates node n's operator again with `flags`; on success *op and *attrs
 * hold the new instance and attribute array. */
static d5_status recreate(const d5_executor *ex, const xnode *n, int32_t flags, d5_op **op,
                          d5_attr **attrs)
{
    int32_t na = (int32_t)n->attrs_view.count;
    d5_attr *a = d5_calloc((size_t)na + 1, sizeof *a, "node attributes");
    d5_tensor *in = d5_calloc((size_t)n->nin + 1, sizeof *in, "node inputs");
    d5_status s = a && in ? D5_OK : D5_ERR_NOMEM;
    if (s == D5_OK) {
        if (na) memcpy(a, n->attrs_view.items, (size_t)na * sizeof *a);
        a[na].name = D5_ATTR_BLOCKED;
        a[na].type = D5_ATTR_INT;
        a[na].i = flags;
        for (int32_t k = 0; k < n->nin; k++) {
            if (n->in[k] < 0) continue;
            in[k].desc = ex->vals[n->in[k]].desc;
            if (d5__executor_value_is_const(ex, n->in[k])) in[k].data = ex->vals[n->in[k]].data;
        }
        d5_attrs view = {a, na + 1};
        s = d5_op_create(n->desc, in, n->nin, &view, n->nout, op);
    }
    /* The logical descriptor stays; only the bytes' order changes. */
    if (s == D5_OK && !d5__same_desc(d5_op_output_desc(*op, 0), &ex->vals[n->out[0]].desc)) {
        d5_op_free(*op);
        s = d5_error(D5_ERR_UNSUPPORTED, "the blocked layout changed the output's shape");
    }
    d5_free(in);
    if (s != D5_OK) {
        d5_free(a);
        return s;
    }
    *attrs = a;
    return D5_OK;
}

d5_status d5__layout_propagate(d5_executor *ex)
{
    const char *lb = layout_backend(ex);
    if (ex->opt.keep_values || ex->infer_only) return D5_OK;
    size_t nv = (size_t)(ex->nvals ? ex->nvals : 1), nn = (size_t)(ex->nnodes ? ex->nnodes : 1);
    int32_t *producer = d5_alloc(nv * sizeof *producer, "producers");
    unsigned char *blocked = d5_calloc(nv, 1, "blocked values");
    d5_op **ops = d5_calloc(nn, sizeof *ops, "operators");
    d5_attr **attrs = d5_calloc(nn, sizeof *attrs, "attributes");
    int32_t *flags = d5_calloc(nn, sizeof *flags, "layouts");
    d5_status s = producer && blocked && ops && attrs && flags ? D5_OK : D5_ERR_NOMEM;
    for (size_t v = 0; s == D5_OK && v < nv; v++) producer[v] = -1;
    for (int32_t i = 0; s == D5_OK && i < ex->nnodes; i++)
        for (int32_t k = 0; k < ex->nodes[i].nout; k++)
            if (ex->nodes[i].out[k] >= 0) producer[ex->nodes[i].out[k]] = i;
    int any = 0;
    if (s == D5_OK) candidates(ex, lb, producer, blocked);
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) any |= blocked[v];
    /* Until every element-wise node sees one layout and every operator
     * accepts its layouts; an operator is created again only when its
     * layouts changed. Each round takes at least one value out. */
    for (int again = any; s == D5_OK && again;) {
        again = 0;
        for (int changed = 1; changed;) {
            changed = 0;
            for (int32_t i = 0; i < ex->nnodes; i++)
                if (layout_kind(ex, lb, &ex->nodes[i]) == LK_ELEMENTWISE &&
                    mixed(&ex->nodes[i], blocked))
                    changed |= unblock(&ex->nodes[i], blocked);
        }
        for (int32_t i = 0; i < ex->nnodes && s == D5_OK; i++) {
            const xnode *n = &ex->nodes[i];
            if (layout_kind(ex, lb, n) != LK_OPERATOR) continue;
            int32_t f = flags_of(n, blocked);
            if (ops[i] && f == flags[i]) continue;
            if (ops[i]) {
                d5_op_free(ops[i]);
                d5_free(attrs[i]);
                ops[i] = NULL;
                attrs[i] = NULL;
            }
            flags[i] = f;
            if (!f) continue;
            d5_status r = recreate(ex, n, f, &ops[i], &attrs[i]);
            if (r == D5_ERR_NOMEM) s = r;
            if (r == D5_OK || s != D5_OK) continue;
            /* Declined: its values go back to ONNX's layout. */
            unblock(n, blocked);
            flags[i] = 0;
            again = 1;
        }
    }
    for (int32_t i = 0; ops && attrs && i < ex->nnodes; i++) {
        if (!ops[i]) continue;
        xnode *n = &ex->nodes[i];
        if (s == D5_OK) {
            d5_op_free(n->op);
            d5_free(n->attrs);
            n->op = ops[i];
            n->attrs = attrs[i];
            n->attrs_view.items = attrs[i];
            n->attrs_view.count++;
        } else {
            d5_op_free(ops[i]);
            d5_free(attrs[i]);
        }
    }
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) ex->vals[v].blocked = blocked[v];
    d5_free(producer);
    d5_free(blocked);
    d5_free(ops);
    d5_free(attrs);
    d5_free(flags);
    return s;
}
