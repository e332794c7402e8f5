/* Graph checks and the topological order, parameters, and the binding of
 * symbolic dimensions before shape inference. */
#include "network_internal.h"

#include <string.h>

static int is_float(int32_t dtype)
{
    return dtype == D5_F32 || dtype == D5_F64 || dtype == D5_F16 || dtype == D5_BF16;
}

/* Floating-point operands that are settings, not weights: they are never
 * trained (torch calls the BatchNorm statistics buffers, not parameters). */
static int setting_slot(const char *op_type, int32_t slot)
{
    static const struct {
        const char *op;
        int32_t first, last;
    } settings[] = {
        {"BatchNormalization", 3, 4},
        {"Resize", 1, 3},
        {"Upsample", 1, 1},
        {"Clip", 1, 2},
        {"Pad", 2, 2},
        {"Dropout", 1, 2},
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        if (strcmp(op_type, settings[i].op) == 0)
            return slot >= settings[i].first && slot <= settings[i].last;
    return 0;
}

int d5__network_is_param(const d5_network *net, int32_t v)
{
    const d5__value *val = &net->values[v];
    if (val->kind != D5_VALUE_INITIALIZER || !is_float(val->desc.dtype)) return 0;
    for (int32_t n = 0; n < net->nnodes; n++) {
        const d5__node *node = &net->nodes[n];
        for (int32_t k = 0; k < node->nin; k++)
            if (!setting_slot(node->op_type, k) && strcmp(node->inputs[k], val->name) == 0)
                return 1;
    }
    return 0;
}

/* Calls fn for every parameter in order of first use; stops early when fn
 * returns nonzero. */
static int32_t for_each_param(const d5_network *net, int (*fn)(void *ctx, int32_t v), void *ctx)
{
    uint8_t *seen = d5_calloc((size_t)net->nvalues + 1, 1, "parameter marks");
    int32_t count = 0;
    if (!seen) return -1;
    for (int32_t n = 0; n < net->nnodes; n++) {
        const d5__node *node = &net->nodes[n];
        for (int32_t k = 0; k < node->nin; k++) {
            int32_t v = node->inputs[k][0] ? d5__network_value(net, node->inputs[k]) : -1;
            if (v < 0 || seen[v] || net->values[v].kind != D5_VALUE_INITIALIZER ||
                !is_float(net->values[v].desc.dtype) || setting_slot(node->op_type, k))
                continue;
            seen[v] = 1;
            count++;
            if (fn && fn(ctx, v)) {
                d5_free(seen);
                return count;
            }
        }
    }
    d5_free(seen);
    return count;
}

int32_t d5_network_param_count(const d5_network *net)
{
    return for_each_param(net, NULL, NULL);
}

typedef struct nth {
    int32_t want, seen, value;
} nth;

static int pick_nth(void *ctx, int32_t v)
{
    nth *p = ctx;
    if (p->seen++ == p->want) {
        p->value = v;
        return 1;
    }
    return 0;
}

const char *d5_network_param_name(const d5_network *net, int32_t i)
{
    nth p = {i, 0, -1};
    for_each_param(net, pick_nth, &p);
    return p.value >= 0 ? net->values[p.value].name : NULL;
}

int64_t d5_network_param_elements(const d5_network *net)
{
    int64_t total = 0;
    int32_t n = d5_network_param_count(net);
    for (int32_t i = 0; i < n; i++) {
        int32_t v = d5__network_value(net, d5_network_param_name(net, i));
        total += d5_tensor_desc_numel(&net->values[v].desc);
    }
    return total;
}

/* ---- The check and topological order ----------------------------------------------------- */

/* A binary min-heap of node indexes: of the nodes that are ready, the one
 * listed first in the file runs first. */
typedef struct heap {
    int32_t *a;
    int32_t n;
} heap;

static void heap_push(heap *h, int32_t x)
{
    int32_t i = h->n++;
    while (i > 0 && h->a[(i - 1) / 2] > x) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = x;
}

static int32_t heap_pop(heap *h)
{
    int32_t top = h->a[0], x = h->a[--h->n], i = 0;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->a[c + 1] < h->a[c]) c++;
        if (h->a[c] >= x) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0) h->a[i] = x;
    return top;
}

/* Kahn's algorithm, linear in nodes and edges (with a heap: n log n), keeping
 * the file's order wherever the graph allows. avail marks the values known
 * from the start; pending[n] counts node n's inputs still to be computed, and
 * users lists, per value, the input slots that read it. */
static d5_status kahn(const d5_network *net, uint8_t *avail, uint8_t *done, int32_t *ord)
{
    int32_t nn = net->nnodes, nv = net->nvalues, edges = 0;
    for (int32_t n = 0; n < nn; n++) edges += net->nodes[n].nin;
    int32_t *pending = d5_calloc((size_t)nn + 1, sizeof *pending, "topological order");
    int32_t *first = d5_calloc((size_t)nv + 2, sizeof *first, "topological order");
    int32_t *users = d5_alloc(((size_t)edges + 1) * sizeof *users, "topological order");
    heap h = {d5_alloc(((size_t)nn + 1) * sizeof *h.a, "topological order"), 0};
    d5_status s = D5_OK;
    if (!pending || !first || !users || !h.a) {
        s = D5_ERR_NOMEM;
        goto out;
    }
    /* Counting sort of the input slots by the value they read. */
    for (int32_t n = 0; n < nn; n++)
        for (int32_t k = 0; k < net->nodes[n].nin; k++) {
            if (!net->nodes[n].inputs[k][0]) continue;
            int32_t v = d5__network_value(net, net->nodes[n].inputs[k]);
            if (avail[v]) continue;
            pending[n]++;
            first[v + 2]++;
        }
    for (int32_t v = 0; v < nv; v++) first[v + 2] += first[v + 1];
    for (int32_t n = 0; n < nn; n++)
        for (int32_t k = 0; k < net->nodes[n].nin; k++) {
            if (!net->nodes[n].inputs[k][0]) continue;
            int32_t v = d5__network_value(net, net->nodes[n].inputs[k]);
            if (!avail[v]) users[first[v + 1]++] = n;
        }
    for (int32_t n = 0; n < nn; n++)
        if (pending[n] == 0) heap_push(&h, n);
    int32_t emitted = 0;
    while (h.n > 0) {
        int32_t n = heap_pop(&h);
        const d5__node *node = &net->nodes[n];
        done[n] = 1;
        ord[emitted++] = n;
        for (int32_t k = 0; k < node->nout; k++) {
            if (!node->outputs[k][0]) continue;
            int32_t v = d5__network_value(net, node->outputs[k]);
            if (v < 0 || avail[v]) continue;
            avail[v] = 1;
            for (int32_t u = first[v]; u < first[v + 1]; u++)
                if (--pending[users[u]] == 0) heap_push(&h, users[u]);
        }
    }
    for (int32_t n = 0; emitted < nn && n < nn; n++) {
        if (done[n]) continue;
        const d5__node *node = &net->nodes[n];
        for (int32_t k = 0; k < node->nin; k++)
            if (node->inputs[k][0] && !avail[d5__network_value(net, node->inputs[k])]) {
                s = d5_error(D5_ERR_INVALID,
                             "the graph has a cycle: node '%s' (%s) waits for its input '%s', "
                             "which depends on the node itself",
                             node->name, node->op_type, node->inputs[k]);
                goto out;
            }
    }
out:
    d5_free(pending);
    d5_free(first);
    d5_free(users);
    d5_free(h.a);
    return s;
}

d5_status d5_network_check(const d5_network *net, int32_t *order)
{
    d5_status s = D5_OK;
    uint8_t *avail = d5_calloc((size_t)net->nvalues + 1, 1, "value marks");
    uint8_t *done = d5_calloc((size_t)net->nnodes + 1, 1, "node marks");
    int32_t *ord = order ? order : d5_alloc(((size_t)net->nnodes + 1) * sizeof *ord, "order");
    if (!avail || !done || !ord) {
        s = D5_ERR_NOMEM;
        goto out;
    }
    /* Every input must name a value that something provides. */
    for (int32_t n = 0; n < net->nnodes; n++) {
        const d5__node *node = &net->nodes[n];
        for (int32_t k = 0; k < node->nin; k++) {
            if (!node->inputs[k][0]) continue;
            int32_t v = d5__network_value(net, node->inputs[k]);
            if (v < 0 ||
                (net->values[v].kind == D5_VALUE_INTERMEDIATE && net->values[v].producer < 0)) {
                s = d5_error(D5_ERR_INVALID,
                             "node '%s' (%s): input %d '%s' is not a graph input, an initializer "
                             "or the output of any node",
                             node->name, node->op_type, (int)k, node->inputs[k]);
                goto out;
            }
        }
    }
    for (int32_t k = 0; k < net->noutputs; k++) {
        int32_t v = d5__network_value(net, net->outputs[k]);
        if (v < 0 ||
            (net->values[v].kind == D5_VALUE_INTERMEDIATE && net->values[v].producer < 0)) {
            s = d5_error(D5_ERR_INVALID, "graph output '%s' is not written by any node",
                         net->outputs[k]);
            goto out;
        }
    }
    for (int32_t v = 0; v < net->nvalues; v++)
        avail[v] = net->values[v].kind != D5_VALUE_INTERMEDIATE;
    s = kahn(net, avail, done, ord);
out:
    d5_free(avail);
    d5_free(done);
    if (!order) d5_free(ord);
    return s;
}

/* ---- Binding dimensions ---------------------------------------------------------------------- */

static void refresh_known(d5__value *v)
{
    v->known = v->desc.dtype != D5_DTYPE_INVALID && v->desc.ndim >= 0;
    for (int32_t d = 0; d < v->desc.ndim; d++)
        if (v->desc.shape[d] < 0) v->known = 0;
}

d5_status d5_network_bind_dim(d5_network *net, const char *dim_param, int64_t size)
{
    if (!dim_param || !dim_param[0] || size < 0)
        return d5_error(D5_ERR_INVALID, "binding dimension '%s' to %lld",
                        dim_param ? dim_param : "", (long long)size);
    int found = 0;
    for (int32_t i = 0; i < net->ninputs; i++) {
        d5__value *v = &net->values[net->inputs[i]];
        for (int32_t d = 0; d < v->desc.ndim; d++)
            if (v->dim_params[d] && strcmp(v->dim_params[d], dim_param) == 0) {
                v->desc.shape[d] = size;
                found = 1;
            }
        refresh_known(v);
    }
    if (!found) return d5_error(D5_ERR_NOTFOUND, "no graph input has a dimension '%s'", dim_param);
    return D5_OK;
}

d5_status d5_network_set_batch(d5_network *net, int64_t batch, int force)
{
    if (batch < 1)
        return d5_error(D5_ERR_INVALID, "batch size %lld must be at least 1", (long long)batch);
    for (int32_t i = 0; i < net->ninputs; i++) {
        d5__value *v = &net->values[net->inputs[i]];
        if (v->desc.ndim < 1) continue;
        if (force || v->desc.shape[0] < 0 || v->dim_params[0]) v->desc.shape[0] = batch;
        refresh_known(v);
    }
    return D5_OK;
}

d5_status d5_network_set_input_desc(d5_network *net, const char *name, const d5_tensor_desc *desc)
{
    int32_t i = d5__network_value(net, name);
    if (i < 0 || net->values[i].kind != D5_VALUE_INPUT)
        return d5_error(D5_ERR_NOTFOUND, "no graph input named '%s'", name ? name : "");
    if (desc->ndim < 0 || desc->ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_INVALID, "graph input '%s': %d dims", name, (int)desc->ndim);
    net->values[i].desc = *desc;
    refresh_known(&net->values[i]);
    return D5_OK;
}

/* ---- Shape inference ---------------------------------------------------------------------------
 */

d5_status d5_network_infer_shapes(d5_network *net)
{
    d5_tensor_desc *descs = d5_calloc((size_t)net->nvalues + 1, sizeof *descs, "inferred shapes");
    int32_t *known = d5_calloc((size_t)net->nvalues + 1, sizeof *known, "inferred shapes");
    d5_status s = descs && known ? d5__executor_infer(net, descs, known) : D5_ERR_NOMEM;
    if (s == D5_OK)
        for (int32_t v = 0; v < net->nvalues; v++)
            if (known[v] && net->values[v].kind == D5_VALUE_INTERMEDIATE) {
                net->values[v].desc = descs[v];
                net->values[v].known = 1;
            }
    d5_free(descs);
    d5_free(known);
    return s;
}
