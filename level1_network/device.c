/* Values in device memory. A node whose operator runs on a device (its table
 * flagged D5_OP_CUDA) reads and writes the memory of its backend
 * (d5_backend_memory, or its library's d5_op_library_memory); every other
 * node, the graph's inputs, initializers and constants live on the host. A
 * value produced in one memory and read by a node of another is copied there
 * once, before its first reader in that memory, into a buffer of the plan in
 * the reader's arena; a constant is copied at the first run only (again after
 * d5_executor_bind_param); a graph output produced on a device is copied to
 * the host after the forward pass, where d5_executor_fetch reads it. Views
 * (Reshape, Flatten, ...) take their input's memory. A copy moves bytes, so
 * a value in a blocked layout (layout.c) keeps it: its readers are all
 * element-wise or blocked-layout operators. Each copy is a step of
 * its own (d5_executor_copy_at), with events, a timer region and
 * d5_executor_run_copy, so that reports show the bytes moved and their time
 * as part of FrameworkOverhead, as Deep500 counts them.
 *
 * Memories are numbered: 0 is the host, 1..ndevs the device memories of
 * ex->devs. */
#include "executor_internal.h"

#include <stdio.h>
#include <string.h>

static const char *mem_name(const d5_executor *ex, int32_t mem)
{
    return mem == 0 ? "host" : ex->devs[mem]->name;
}

/* The memory of a node's operator: 0 for the host, else the index of its
 * device memory in ex->devs (added on first use). */
static d5_status node_memory(d5_executor *ex, const xnode *n, int32_t *mem)
{
    *mem = 0;
    if (!(n->desc->flags & D5_OP_CUDA)) return D5_OK;
    const d5__node *node = &ex->net->nodes[n->net_index];
    const d5_device_memory *dm = NULL;
    int from_library = 0;
    for (int32_t i = 0; i < ex->opt.nlibraries && !from_library; i++)
        for (int32_t k = 0; k < d5_op_library_count(ex->opt.libraries[i]); k++)
            if (d5_op_library_at(ex->opt.libraries[i], k) == n->desc) {
                dm = d5_op_library_memory(ex->opt.libraries[i]);
                from_library = 1;
                break;
            }
    if (!from_library) {
        for (int32_t m = 1; m <= ex->ndevs; m++)
            if (strcmp(ex->dev_backends[m], n->desc->backend) == 0) {
                *mem = m;
                return D5_OK;
            }
        d5_status s = d5_backend_memory(n->desc->backend, &dm);
        if (s != D5_OK) return d5__node_error(node, s);
    }
    if (!dm)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "node '%s' (%s): its operator on backend '%s' runs on device memory, but "
                        "%s no device memory (D5_DEVICE_MEMORY_EXPORT)",
                        node->name, node->op_type, n->desc->backend,
                        from_library ? "its library exports" : "the backend has");
    for (int32_t m = 1; m <= ex->ndevs; m++)
        if (ex->devs[m] == dm) {
            *mem = m;
            return D5_OK;
        }
    if (ex->ndevs == D5__MAX_DEVICES)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "node '%s' (%s): an executor uses at most %d device memories", node->name,
                        node->op_type, D5__MAX_DEVICES);
    *mem = ++ex->ndevs;
    ex->devs[*mem] = dm;
    ex->dev_backends[*mem] = n->desc->backend;
    return D5_OK;
}

d5_status d5__device_assign(d5_executor *ex)
{
    for (int32_t i = 0; i < ex->nnodes; i++) {
        xnode *n = &ex->nodes[i];
        n->mem = 0;
        if (n->alias) continue;
        d5_status s = node_memory(ex, n, &n->mem);
        if (s != D5_OK) return s;
        for (int32_t k = 0; k < n->nout; k++)
            if (n->out[k] >= 0) ex->vals[n->out[k]].mem = n->mem;
    }
    /* Views share their root's memory (find_views points alias at the root). */
    for (int32_t v = 0; v < ex->nvals; v++)
        if (ex->vals[v].alias >= 0) ex->vals[v].mem = ex->vals[ex->vals[v].alias].mem;
    return D5_OK;
}

static d5_status add_copy(d5_executor *ex, const xcopy *c)
{
    if (ex->ncopies == ex->copy_cap) {
        int32_t cap = ex->copy_cap ? 2 * ex->copy_cap : 16;
        xcopy *p = d5_realloc(ex->copies, (size_t)ex->copy_cap * sizeof *p, (size_t)cap * sizeof *p,
                              "value copies");
        if (!p) return D5_ERR_NOMEM;
        ex->copies = p;
        ex->copy_cap = cap;
    }
    ex->copies[ex->ncopies++] = *c;
    return D5_OK;
}

/* The copy of value r into memory `to`, or -1. */
static int32_t find_copy(const d5_executor *ex, int32_t r, int32_t to)
{
    for (int32_t c = 0; c < ex->ncopies; c++)
        if (ex->copies[c].value == r && ex->copies[c].to == to && ex->copies[c].node >= 0) return c;
    return -1;
}

static int32_t root(const d5_executor *ex, int32_t v)
{
    return ex->vals[v].alias >= 0 ? ex->vals[v].alias : v;
}

d5_status d5__device_copies(d5_executor *ex)
{
    if (ex->ndevs == 0) return D5_OK;
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < ex->nnodes; i++) {
        const xnode *n = &ex->nodes[i];
        if (n->alias) continue;
        for (int32_t k = 0; s == D5_OK && k < n->nin; k++) {
            if (n->in[k] < 0) continue;
            int32_t r = root(ex, n->in[k]);
            const xval *x = &ex->vals[r];
            if (x->mem == n->mem || find_copy(ex, r, n->mem) >= 0) continue;
            if (x->mem != 0 && n->mem != 0) {
                const d5__node *node = &ex->net->nodes[n->net_index];
                return d5_error(D5_ERR_UNSUPPORTED,
                                "node '%s' on %s reads '%s' from %s memory: copies between two "
                                "device memories are not supported",
                                node->name, mem_name(ex, n->mem), ex->net->values[r].name,
                                mem_name(ex, x->mem));
            }
            xcopy c = {
                .value = r, .from = x->mem, .to = n->mem, .node = i, .buf = -1, .bytes = x->bytes};
            c.once = d5__executor_value_is_const(ex, r);
            /* Live from this node to the last reader in that memory, the
             * backward passes of the readers included (backprop: node j's
             * backward runs at step 2F - 1 - j). */
            int32_t last = i, F = ex->nnodes;
            for (int32_t j = i; j < F; j++) {
                const xnode *m = &ex->nodes[j];
                if (m->alias || m->mem != n->mem) continue;
                for (int32_t q = 0; q < m->nin; q++)
                    if (m->in[q] >= 0 && root(ex, m->in[q]) == r) {
                        if (j > last) last = j;
                        if (m->backward && 2 * F - 1 - j > last) last = 2 * F - 1 - j;
                    }
            }
            s = c.once ? d5__plan_add(ex, c.bytes, 0, D5__STEP_END, &c.buf)
                       : d5__plan_add(ex, c.bytes, i, last, &c.buf);
            if (s == D5_OK) ex->bufs[c.buf].mem = c.to;
            if (s == D5_OK) s = add_copy(ex, &c);
        }
    }
    /* Graph outputs produced on a device: to the host after the forward pass. */
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) {
        const xval *x = &ex->vals[v];
        if (!ex->net->values[v].is_output || x->mem == 0 || x->kind != XV_ACT) continue;
        xcopy c = {.value = v, .from = x->mem, .to = 0, .node = -1, .buf = -1, .bytes = x->bytes};
        c.owned = c.data = d5_calloc(1, c.bytes ? c.bytes : 1, "graph output on the host");
        if (!c.owned) return D5_ERR_NOMEM;
        s = add_copy(ex, &c);
        if (s != D5_OK)
            d5_free(c.owned);
        else
            ex->vals[v].host_copy = ex->ncopies - 1;
    }
    return s;
}

void d5__device_bind(d5_executor *ex)
{
    for (int32_t c = 0; c < ex->ncopies; c++)
        if (ex->copies[c].buf >= 0) ex->copies[c].data = d5__plan_ptr(ex, ex->copies[c].buf);
    for (int32_t i = 0; i < ex->nnodes; i++) {
        xnode *n = &ex->nodes[i];
        int32_t device = n->mem ? ex->devs[n->mem]->device : D5_DEVICE_CPU;
        for (int32_t k = 0; k < n->nin; k++) {
            if (n->in[k] < 0) continue;
            n->tin[k].device = device;
            int32_t r = root(ex, n->in[k]);
            if (ex->vals[r].mem == n->mem) continue;
            int32_t c = find_copy(ex, r, n->mem);
            if (c >= 0) n->tin[k].data = ex->copies[c].data;
        }
        for (int32_t k = 0; k < n->nout; k++) n->tout[k].device = device;
    }
}

void d5__device_invalidate(d5_executor *ex, int32_t v)
{
    for (int32_t c = 0; c < ex->ncopies; c++)
        if (ex->copies[c].value == root(ex, v)) ex->copies[c].done = 0;
}

d5_status d5__device_copy(d5_executor *ex, int32_t c)
{
    xcopy *x = &ex->copies[c];
    if (x->once && x->done) return D5_OK;
    const xval *v = &ex->vals[x->value];
    d5_status s = x->to ? ex->devs[x->to]->to_device(x->data, v->data, x->bytes)
                        : ex->devs[x->from]->to_host(x->data, v->data, x->bytes);
    if (s != D5_OK)
        return d5_error(s, "copy of '%s' (%zu bytes) from %s to %s memory: %s",
                        ex->net->values[x->value].name, x->bytes, mem_name(ex, x->from),
                        mem_name(ex, x->to), d5_last_error());
    x->done = 1;
    return D5_OK;
}

d5_status d5__device_sync(d5_executor *ex, int32_t mem)
{
    d5_status s = D5_OK;
    for (int32_t m = 1; m <= ex->ndevs && s == D5_OK; m++)
        if (mem < 0 || m == mem) s = ex->devs[m]->sync();
    return s;
}

void d5__device_free(d5_executor *ex)
{
    for (int32_t c = 0; c < ex->ncopies; c++) d5_free(ex->copies[c].owned);
    d5_free(ex->copies);
    for (int32_t m = 1; m <= ex->ndevs; m++) {
        if (ex->dev_arena[m]) ex->devs[m]->free(ex->dev_arena[m]);
        if (ex->dev_zeros[m]) ex->devs[m]->free(ex->dev_zeros[m]);
    }
}

/* ---- Backprop ---- */

d5_status d5__device_zeros(d5_executor *ex, size_t bytes)
{
    d5_status s = D5_OK;
    for (int32_t m = 1; m <= ex->ndevs && s == D5_OK; m++)
        s = ex->devs[m]->alloc(bytes, &ex->dev_zeros[m]);
    return s;
}

d5_status d5__device_seed(d5_executor *ex, int32_t v)
{
    const xval *x = &ex->vals[v];
    if (x->desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED, "backprop: the loss '%s' on %s memory must be float32",
                        ex->net->values[v].name, mem_name(ex, x->mem));
    return ex->devs[x->mem]->fill(x->grad, 1.0f, (size_t)d5_tensor_desc_numel(&x->desc));
}

/* dst (memory `to`) = src (memory `from`), one of them the host. */
static d5_status move(d5_executor *ex, int32_t from, int32_t to, void *dst, const void *src,
                      size_t bytes)
{
    if (from == to) return d5_error(D5_ERR_STATE, "a gradient moved within one memory");
    return to ? ex->devs[to]->to_device(dst, src, bytes) : ex->devs[from]->to_host(dst, src, bytes);
}

d5_status d5__device_grad_in(d5_executor *ex, const xnode *n, int32_t k, void *scratch)
{
    const xval *x = &ex->vals[n->in[k]];
    int32_t mem = x->alias >= 0 ? ex->vals[x->alias].mem : x->mem;
    size_t count = (size_t)d5_tensor_desc_numel(&x->desc);
    d5_status s = D5_OK;
    if (n->xfer[k] == 1) return move(ex, n->mem, mem, x->grad, scratch, x->bytes);
    if (n->xfer[k] == 2) {
        void *stage = d5__plan_ptr(ex, n->stage[k]);
        s = move(ex, n->mem, mem, stage, scratch, x->bytes);
        scratch = stage;
    }
    if (s != D5_OK) return s;
    if (mem) return ex->devs[mem]->add(x->grad, scratch, count);
    float *g = x->grad;
    const float *a = scratch;
    for (size_t i = 0; i < count; i++) g[i] += a[i];
    return D5_OK;
}

/* ---- The copies as the schedule shows them ---- */

int32_t d5_executor_copy_count(const d5_executor *ex)
{
    return ex ? ex->ncopies : 0;
}

void d5_executor_copy_at(const d5_executor *ex, int32_t i, d5_exec_copy *out)
{
    memset(out, 0, sizeof *out);
    if (!ex || i < 0 || i >= ex->ncopies) return;
    const xcopy *c = &ex->copies[i];
    out->value = ex->net->values[c->value].name;
    out->from = mem_name(ex, c->from);
    out->to = mem_name(ex, c->to);
    out->bytes = c->bytes;
    out->node = c->node;
    out->once = c->once;
}

d5_status d5_executor_run_copy(d5_executor *ex, int32_t i)
{
    if (i < 0 || i >= ex->ncopies)
        return d5_error(D5_ERR_RANGE, "copy %d of %d", (int)i, (int)ex->ncopies);
    xcopy *c = &ex->copies[i];
    int32_t once = c->once;
    c->once = 0; /* run it even when done */
    d5_status s = d5__device_copy(ex, i);
    c->once = once;
    return s;
}
