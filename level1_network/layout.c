/* Layout propagation: a value that one dnnl convolution or pooling writes
 * and only such operators read (as X, or as FusedConv's Z) stays in oneDNN's
 * blocked layout, so that chains of convolutions reorder once at each end
 * instead of around every node. Runs after every node has its backend and before memory
 * is planned (the blocked layout of these values takes the same bytes).
 *
 * The operators of the nodes concerned are created again with the attribute
 * D5_ATTR_BLOCKED; a node whose operator declines (channels not a multiple
 * of the block, a 3-d convolution) takes its values out of the set and the
 * others are tried again, until every operator agrees. Not under backprop
 * (the backward passes read plain tensors) nor with keep_values (any value
 * may be fetched). */
#include "executor_internal.h"

#include <string.h>

static int blockable_op(const xnode *n)
{
    static const char *const ops[] = {"Conv", "FusedConv", "MaxPool", "AveragePool"};
    if (strcmp(n->desc->backend, "dnnl") != 0 || n->nout != 1) return 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->desc->name, ops[i]) == 0) return 1;
    return 0;
}

/* Marks in ok[] the values that may stay blocked: written by a dnnl
 * convolution, read only by dnnl convolutions as X or Z, not a graph output
 * nor shared with a view, float32 4-d tensors. One pass over the nodes. */
static void candidates(const d5_executor *ex, const int32_t *producer, unsigned char *ok)
{
    unsigned char *bad = d5_calloc((size_t)ex->nvals, 1, "values"), *read = ok;
    if (!bad) return; /* nothing is blocked */
    for (int32_t i = 0; i < ex->nnodes; i++) {
        const xnode *n = &ex->nodes[i];
        for (int32_t k = 0; k < n->nin; k++) {
            if (n->in[k] < 0) continue;
            read[n->in[k]] = 1;
            if (!blockable_op(n) || (k != 0 && k != 3)) bad[n->in[k]] = 1;
        }
    }
    for (int32_t v = 0; v < ex->nvals; v++)
        if (ex->vals[v].alias >= 0) bad[ex->vals[v].alias] = 1;
    for (int32_t v = 0; v < ex->nvals; v++) {
        const xval *x = &ex->vals[v];
        ok[v] = read[v] && !bad[v] && x->kind == XV_ACT && !ex->net->values[v].is_output &&
                x->alias < 0 && x->desc.dtype == D5_F32 && x->desc.ndim == 4 && producer[v] >= 0 &&
                blockable_op(&ex->nodes[producer[v]]);
    }
    d5_free(bad);
}

static int32_t flags_of(const xnode *n, const unsigned char *blocked)
{
    int32_t f = 0;
    if (n->nin > 0 && n->in[0] >= 0 && blocked[n->in[0]]) f |= D5_BLOCKED_X;
    if (n->nin > 3 && n->in[3] >= 0 && blocked[n->in[3]]) f |= D5_BLOCKED_Z;
    if (n->out[0] >= 0 && blocked[n->out[0]]) f |= D5_BLOCKED_Y;
    return f;
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
    if (ex->opt.backprop || ex->opt.keep_values || ex->infer_only) return D5_OK;
    size_t nv = (size_t)(ex->nvals ? ex->nvals : 1), nn = (size_t)(ex->nnodes ? ex->nnodes : 1);
    int32_t *producer = d5_alloc(nv * sizeof *producer, "producers");
    unsigned char *blocked = d5_calloc(nv, 1, "blocked values");
    d5_op **ops = d5_calloc(nn, sizeof *ops, "operators");
    d5_attr **attrs = d5_calloc(nn, sizeof *attrs, "attributes");
    d5_status s = producer && blocked && ops && attrs ? D5_OK : D5_ERR_NOMEM;
    for (size_t v = 0; s == D5_OK && v < nv; v++) producer[v] = -1;
    for (int32_t i = 0; s == D5_OK && i < ex->nnodes; i++)
        for (int32_t k = 0; k < ex->nodes[i].nout; k++)
            if (ex->nodes[i].out[k] >= 0) producer[ex->nodes[i].out[k]] = i;
    int any = 0;
    if (s == D5_OK) candidates(ex, producer, blocked);
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) any |= blocked[v];
    /* Until every operator concerned accepts its layouts. */
    for (int again = any; s == D5_OK && again;) {
        again = 0;
        for (int32_t i = 0; i < ex->nnodes && !again; i++) {
            const xnode *n = &ex->nodes[i];
            int32_t f = blockable_op(n) ? flags_of(n, blocked) : 0;
            if (ops[i]) {
                d5_op_free(ops[i]);
                d5_free(attrs[i]);
                ops[i] = NULL;
                attrs[i] = NULL;
            }
            if (!f) continue;
            d5_status r = recreate(ex, n, f, &ops[i], &attrs[i]);
            if (r == D5_ERR_NOMEM) s = r;
            if (r == D5_OK) continue;
            /* Declined: its values go back to ONNX's layout; start over. */
            for (int32_t k = 0; k < n->nin; k++)
                if (n->in[k] >= 0) blocked[n->in[k]] = 0;
            if (n->out[0] >= 0) blocked[n->out[0]] = 0;
            again = s == D5_OK;
        }
    }
    for (int32_t i = 0; i < ex->nnodes; i++) {
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
    return s;
}
