/* Backpropagation: which values get gradients, where they live, and the
 * reverse pass through each operator's backward.
 *
 * A value gets a gradient when it depends on a trainable value (a parameter,
 * or an input with input_gradients) and the loss depends on it. Walking the
 * schedule backwards, the first consumer of a value to run its backward writes
 * the gradient directly; later consumers (and every consumer of the loss,
 * whose gradient is seeded) write a scratch buffer that is added in. Gradients
 * of intermediates live from their first write to their producer's backward;
 * those of parameters to the end of the run. A view (executor.c) runs no
 * backward: its output's gradient is its input's, one buffer. An operator
 * whose input gradient is its output gradient (Add) writes the first of
 * those inputs in place: the two share one buffer and the copy disappears.
 *
 * Gradients live in the memory of their value (device.c): a device node's
 * backward writes the gradient of a host value (or the reverse) into a
 * scratch buffer of its own memory, which is copied into the gradient (its
 * first write) or into a staging buffer there and added. */
#include "executor_internal.h"

#include <string.h>

static int is_float(int32_t dtype)
{
    return dtype == D5_F32 || dtype == D5_F64;
}

d5_status d5__backprop_reach(d5_executor *ex, const int32_t *order)
{
    const d5_network *net = ex->net;
    const char *loss = ex->opt.loss;
    if (!loss || !loss[0]) {
        if (net->noutputs == 0)
            return d5_error(D5_ERR_INVALID, "backprop needs a loss: the network has no output");
        loss = net->outputs[0];
    }
    ex->loss = d5__network_value(net, loss);
    if (ex->loss < 0)
        return d5_error(D5_ERR_NOTFOUND, "backprop: the loss '%s' is not a value of the network",
                        loss);
    ex->vals[ex->loss].reaches_loss = 1;
    for (int32_t i = net->nnodes - 1; i >= 0; i--) {
        const d5__node *node = &net->nodes[order[i]];
        int reaches = 0;
        for (int32_t k = 0; k < node->nout; k++)
            if (ex->vals[d5__network_value(net, node->outputs[k])].reaches_loss) reaches = 1;
        if (!reaches) continue;
        for (int32_t k = 0; k < node->nin; k++)
            if (node->inputs[k][0])
                ex->vals[d5__network_value(net, node->inputs[k])].reaches_loss = 1;
    }
    return D5_OK;
}

/* Whether node n's backward may write an input's gradient into its output's
 * gradient memory (D5_OP_GRAD_IN_PLACE: Add's dA is dY itself). */
static int shares_gradient(const d5_executor *ex, const xnode *n)
{
    if (!(n->desc->flags & D5_OP_GRAD_IN_PLACE) || n->nout != 1 || n->out[0] < 0) return 0;
    const xval *y = &ex->vals[n->out[0]];
    return y->has_grad && y->alias < 0 && !ex->net->values[n->out[0]].is_output;
}

/* Input value v, whose gradient node n writes first, may take the gradient
 * memory of n's output y: an activation (not a view, not a graph output) of
 * y's size. Its gradient is then dY, written in place, and later writers add
 * into it as usual. */
static int can_share(const d5_executor *ex, int32_t v, int32_t y)
{
    const xval *x = &ex->vals[v];
    return x->kind == XV_ACT && x->alias < 0 && !x->trainable && !ex->net->values[v].is_output &&
           x->bytes == ex->vals[y].bytes && x->desc.dtype == ex->vals[y].desc.dtype &&
           x->blocked == ex->vals[y].blocked;
}

d5_status d5__backprop_prepare(d5_executor *ex)
{
    int32_t F = ex->nnodes;
    xval *lv = &ex->vals[ex->loss];
    if (!lv->known || !is_float(lv->desc.dtype))
        return d5_error(D5_ERR_INVALID, "backprop: the loss '%s' must be float32 or float64",
                        ex->net->values[ex->loss].name);
    for (int32_t v = 0; v < ex->nvals; v++) {
        xval *x = &ex->vals[v];
        x->has_grad = x->needs_grad && x->reaches_loss && is_float(x->desc.dtype) &&
                      (x->kind == XV_ACT || x->trainable);
    }
    if (!lv->has_grad)
        return d5_error(D5_ERR_INVALID, "backprop: the loss '%s' does not depend on any parameter",
                        ex->net->values[ex->loss].name);
    /* First write of each gradient, in backward order. */
    int32_t *first = d5_alloc(((size_t)ex->nvals + 1) * sizeof *first, "gradient lifetimes");
    uint8_t *written = d5_calloc((size_t)ex->nvals + 1, 1, "gradient marks");
    d5_status s = first && written ? D5_OK : D5_ERR_NOMEM;
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) first[v] = -1;
    if (s == D5_OK) {
        first[ex->loss] = F;
        written[ex->loss] = 1;
    }
    size_t zeros = 0;
    for (int32_t i = F - 1; s == D5_OK && i >= 0; i--) {
        xnode *n = &ex->nodes[i];
        if (!n->backward || n->alias) continue;
        int32_t step = 2 * F - 1 - i;
        n->tgout = d5_calloc((size_t)n->nout, sizeof *n->tgout, "gradient tensors");
        n->tgin = d5_calloc((size_t)n->nin + 1, sizeof *n->tgin, "gradient tensors");
        n->scratch = d5_alloc(((size_t)n->nin + 1) * sizeof *n->scratch, "gradient tensors");
        n->xfer = d5_calloc((size_t)n->nin + 1, sizeof *n->xfer, "gradient tensors");
        n->stage = d5_alloc(((size_t)n->nin + 1) * sizeof *n->stage, "gradient tensors");
        if (!n->tgout || !n->tgin || !n->scratch || !n->xfer || !n->stage) {
            s = D5_ERR_NOMEM;
            break;
        }
        for (int32_t k = 0; k < n->nout; k++)
            if (!ex->vals[n->out[k]].has_grad && ex->vals[n->out[k]].bytes > zeros)
                zeros = ex->vals[n->out[k]].bytes;
        int32_t share = shares_gradient(ex, n) ? n->out[0] : -1;
        for (int32_t k = 0; k < n->nin && s == D5_OK; k++) {
            n->scratch[k] = n->stage[k] = -1;
            int32_t v = n->in[k];
            if (v < 0 || !ex->vals[v].has_grad) continue;
            if (ex->vals[v].alias >= 0) v = ex->vals[v].alias; /* a view's gradient */
            int other = ex->vals[v].mem != n->mem;
            if (other && ex->vals[v].desc.dtype != D5_F32) {
                const d5__node *node = &ex->net->nodes[n->net_index];
                s = d5_error(D5_ERR_UNSUPPORTED,
                             "node '%s': gradients between host and device memory are float32 "
                             "only",
                             node->name);
                break;
            }
            if (written[v] || other) {
                s = d5__plan_add(ex, ex->vals[v].bytes, step, step, &n->scratch[k]);
                if (s == D5_OK) ex->bufs[n->scratch[k]].mem = n->mem;
                if (s == D5_OK && other && written[v]) {
                    n->xfer[k] = 2;
                    s = d5__plan_add(ex, ex->vals[v].bytes, step, step, &n->stage[k]);
                    if (s == D5_OK) ex->bufs[n->stage[k]].mem = ex->vals[v].mem;
                } else if (other) {
                    n->xfer[k] = 1;
                    written[v] = 1;
                    first[v] = step;
                }
                continue;
            }
            written[v] = 1;
            first[v] = step;
            if (share >= 0 && v == n->in[k] && can_share(ex, v, share)) {
                const xval *y = &ex->vals[share];
                ex->vals[v].grad_root = y->grad_root >= 0 ? y->grad_root : share;
                share = -1;
            }
        }
    }
    /* Gradient buffers: intermediates until their producer's backward; a
     * buffer shared by several values lives until the last of them. */
    int32_t *last = first ? d5_alloc(((size_t)ex->nvals + 1) * sizeof *last, "lifetimes") : NULL;
    if (s == D5_OK && !last) s = D5_ERR_NOMEM;
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) last[v] = -1;
    for (int32_t i = 0; s == D5_OK && i < F; i++) {
        const xnode *n = &ex->nodes[i];
        for (int32_t k = 0; k < n->nout; k++)
            if (n->out[k] >= 0)
                last[n->out[k]] =
                    ex->net->values[n->out[k]].is_output ? D5__STEP_END : 2 * F - 1 - i;
    }
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) {
        int32_t r = ex->vals[v].grad_root;
        if (r >= 0 && last[r] < last[v]) last[r] = last[v];
    }
    for (int32_t i = 0; s == D5_OK && i < F; i++) {
        const xnode *n = &ex->nodes[i];
        for (int32_t k = 0; k < n->nout && s == D5_OK; k++) {
            xval *x = &ex->vals[n->out[k]];
            if (!x->has_grad || x->alias >= 0 || x->grad_root >= 0) continue;
            s = d5__plan_add(ex, x->bytes, first[n->out[k]], last[n->out[k]], &x->grad_buf);
            if (s == D5_OK) ex->bufs[x->grad_buf].mem = x->mem;
        }
    }
    d5_free(last);
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) {
        xval *x = &ex->vals[v];
        if (x->has_grad && x->trainable)
            s = d5__plan_add(ex, x->bytes, F, D5__STEP_END, &x->grad_buf);
        if (s == D5_OK && x->has_grad && x->trainable) ex->bufs[x->grad_buf].mem = x->mem;
    }
    if (s == D5_OK && zeros > 0 && !(ex->zeros = d5_calloc(1, zeros, "zero gradients")))
        s = D5_ERR_NOMEM;
    if (s == D5_OK && zeros > 0) s = d5__device_zeros(ex, zeros);
    d5_free(first);
    d5_free(written);
    return s;
}

static void fill_ones(const xval *x)
{
    int64_t n = d5_tensor_desc_numel(&x->desc);
    if (x->desc.dtype == D5_F32)
        for (int64_t i = 0; i < n; i++) ((float *)x->grad)[i] = 1.0f;
    else
        for (int64_t i = 0; i < n; i++) ((double *)x->grad)[i] = 1.0;
}

static void accumulate(const xval *x, const void *add)
{
    int64_t n = d5_tensor_desc_numel(&x->desc);
    if (x->desc.dtype == D5_F32) {
        float *g = x->grad;
        const float *a = add;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n >= 1 << 16)
#endif
        for (int64_t i = 0; i < n; i++) g[i] += a[i];
    } else {
        double *g = x->grad;
        const double *a = add;
        for (int64_t i = 0; i < n; i++) g[i] += a[i];
    }
}

static d5_status backward_node(d5_executor *ex, int32_t i)
{
    xnode *n = &ex->nodes[i];
    int32_t device = n->mem ? ex->devs[n->mem]->device : D5_DEVICE_CPU;
    for (int32_t k = 0; k < n->nout; k++) {
        const xval *x = &ex->vals[n->out[k]];
        n->tgout[k].desc = x->desc;
        n->tgout[k].data = x->has_grad ? x->grad : n->mem ? ex->dev_zeros[n->mem] : ex->zeros;
        n->tgout[k].device = device;
    }
    for (int32_t k = 0; k < n->nin; k++) {
        memset(&n->tgin[k], 0, sizeof n->tgin[k]);
        int32_t v = n->in[k];
        if (v < 0) continue;
        n->tgin[k].desc = ex->vals[v].desc;
        n->tgin[k].device = device;
        if (!ex->vals[v].has_grad) continue;
        n->tgin[k].data = n->scratch[k] >= 0 ? d5__plan_ptr(ex, n->scratch[k]) : ex->vals[v].grad;
    }
    d5_status s = d5_op_backward(n->op, n->tgout, n->tin, n->tout, n->tgin);
    if (s != D5_OK) return d5__node_error(&ex->net->nodes[n->net_index], s);
    for (int32_t k = 0; k < n->nin && s == D5_OK; k++) {
        if (n->in[k] < 0 || n->scratch[k] < 0 || !ex->vals[n->in[k]].has_grad) continue;
        const xval *x = &ex->vals[n->in[k]];
        int32_t mem = x->alias >= 0 ? ex->vals[x->alias].mem : x->mem;
        if (n->xfer[k] || mem != 0)
            s = d5__device_grad_in(ex, n, k, n->tgin[k].data);
        else
            accumulate(x, n->tgin[k].data);
    }
    if (s != D5_OK) return d5__node_error(&ex->net->nodes[n->net_index], s);
    return D5_OK;
}

d5_status d5__backprop_run(d5_executor *ex)
{
    for (int32_t v = 0; v < ex->nvals; v++) {
        const xval *x = &ex->vals[v];
        if (x->has_grad && x->trainable) memset(x->grad, 0, x->bytes);
    }
    d5_status s = D5_OK;
    if (ex->vals[ex->loss].mem)
        s = d5__device_seed(ex, ex->loss);
    else
        fill_ones(&ex->vals[ex->loss]);
    for (int32_t i = ex->nnodes - 1; i >= 0 && s == D5_OK; i--) {
        if (!ex->nodes[i].backward || ex->nodes[i].alias) continue;
        if (ex->nhandlers) s = d5__emit(ex, D5_EVENT_BEFORE_NODE, D5_PHASE_BACKWARD, i);
        if (s == D5_OK) s = backward_node(ex, i);
        if (s == D5_OK && ex->nhandlers && ex->nodes[i].mem)
            s = d5__device_sync(ex, ex->nodes[i].mem);
        if (s == D5_OK && ex->nhandlers)
            s = d5__emit(ex, D5_EVENT_AFTER_NODE, D5_PHASE_BACKWARD, i);
    }
    if (s == D5_OK && ex->ndevs) s = d5__device_sync(ex, -1);
    if (s == D5_OK && ex->nhandlers)
        s = d5__emit(ex, D5_EVENT_AFTER_BACKPROP, D5_PHASE_BACKWARD, -1);
    return s;
}
