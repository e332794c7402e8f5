/* Graph checks, the topological order and the network's parameters. Shapes:
 * shape.c. */
#include "network_internal.h"

#include <string.h>

static int is_float(int32_t dtype)
{
    return dtype == D5_F32 || dtype == D5_F64 || dtype == D5_F16 || dtype == D5_BF16;
}

/* Floating-point operands that are settings, not weights (d5_op_meta). */
static int setting_slot(const char *op_type, int32_t slot)
{
    d5_op_meta m;
    d5_op_meta_get(op_type, &m);
    return m.first_setting >= 0 && slot >= m.first_setting && slot <= m.last_setting;
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
