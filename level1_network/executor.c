/* The executor: compiles a network once (shapes, constant folding, backend
 * choice, operator instances, schedule, memory plan), then feeds, runs and
 * fetches. Backward is in backprop.c, the memory plan in plan.c, the backend
 * choice in choose.c, constant folding in fold.c. */
#include "executor_internal.h"

#include <stdio.h>
#include <string.h>

d5_executor_options d5_executor_default_options(void)
{
    d5_executor_options o;
    memset(&o, 0, sizeof o);
    o.auto_reps = 5;
    return o;
}

d5_status d5__node_error(const d5__node *node, d5_status s)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", d5_last_error());
    return d5_error(s, "node '%s' (%s): %s", node->name, node->op_type, msg);
}

static int is_float(int32_t dtype)
{
    return dtype == D5_F32 || dtype == D5_F64;
}

/* ---- Free --------------------------------------------------------------------------------- */

static void node_free(xnode *n)
{
    d5_op_free(n->op);
    d5_free(n->attrs);
    d5_free(n->in);
    d5_free(n->out);
    d5_free(n->tin);
    d5_free(n->tout);
    d5_free(n->tgout);
    d5_free(n->tgin);
    d5_free(n->scratch);
    d5_free(n->xfer);
    d5_free(n->stage);
}

void d5_executor_free(d5_executor *ex)
{
    if (!ex) return;
    d5__timer_detach(ex);
    for (int32_t i = 0; i < ex->nnodes; i++) node_free(&ex->nodes[i]);
    for (int32_t v = 0; v < ex->nvals; v++) d5_free(ex->vals[v].owned);
    d5__device_free(ex);
    d5_free(ex->nodes);
    d5_free(ex->vals);
    d5_free(ex->bufs);
    d5_allocator a = d5_allocator_get();
    if (ex->arena) a.free(a.ctx, ex->arena);
    d5_free(ex->zeros);
    d5_free(ex->handlers);
    d5__lowered_free(ex->lowered);
    d5_free(ex->backend_list);
    d5_free(ex->node_backends);
    d5_free(ex);
}

/* ---- Compile ------------------------------------------------------------------------------- */

int d5__executor_value_is_const(const d5_executor *ex, int32_t v)
{
    const xval *x = &ex->vals[v];
    return x->kind == XV_CONST || (x->kind == XV_INIT && !x->variable);
}

static d5_status unknown_input_error(const d5_network *net, int32_t v)
{
    const d5__value *val = &net->values[v];
    for (int32_t d = 0; d < val->desc.ndim; d++)
        if (val->desc.shape[d] < 0) {
            if (val->dim_params[d])
                return d5_error(D5_ERR_SHAPE,
                                "graph input '%s': dimension %d ('%s') has no size; give it one "
                                "(--batch N, or d5_network_bind_dim)",
                                val->name, (int)d, val->dim_params[d]);
            return d5_error(D5_ERR_SHAPE,
                            "graph input '%s': dimension %d has no size; give the input a shape",
                            val->name, (int)d);
        }
    return d5_error(D5_ERR_SHAPE, "graph input '%s' has no type or shape", val->name);
}

static d5_status init_values(d5_executor *ex)
{
    const d5_network *net = ex->net;
    ex->vals = d5_calloc((size_t)net->nvalues + 1, sizeof *ex->vals, "executor values");
    if (!ex->vals) return D5_ERR_NOMEM;
    ex->nvals = net->nvalues;
    for (int32_t v = 0; v < ex->nvals; v++) {
        const d5__value *val = &net->values[v];
        xval *x = &ex->vals[v];
        x->buf = x->grad_buf = x->alias = x->grad_root = x->host_copy = -1;
        if (val->kind == D5_VALUE_INITIALIZER) {
            x->kind = XV_INIT;
            x->desc = val->desc;
            x->known = 1;
            x->data = val->init.data;
            x->trainable = ex->opt.backprop && d5__network_is_param(net, v);
            x->variable =
                (ex->opt.backprop || ex->opt.variable_params) && d5__network_is_param(net, v);
        } else if (val->kind == D5_VALUE_INPUT) {
            int32_t c = 0;
            while (c < ex->opt.nconst && strcmp(ex->opt.const_names[c], val->name) != 0) c++;
            if (c < ex->opt.nconst) {
                x->kind = XV_CONST;
                x->desc = ex->opt.const_values[c].desc;
                x->data = ex->opt.const_values[c].data;
                x->known = 1;
                d5_status s = d5_tensor_desc_bytes(&x->desc, &x->bytes);
                if (s != D5_OK) return s;
                continue;
            }
            if (!val->known) return unknown_input_error(net, v);
            x->kind = XV_INPUT;
            x->desc = val->desc;
            x->known = 1;
            x->trainable = ex->opt.backprop && ex->opt.input_gradients && is_float(val->desc.dtype);
        }
        if (x->known) {
            d5_status s = d5_tensor_desc_bytes(&x->desc, &x->bytes);
            if (s != D5_OK) return s;
        }
    }
    return D5_OK;
}

/* The operators a compute precision applies to (D5_ATTR_PRECISION). */
static int precision_op(const d5__node *node)
{
    static const char *const ops[] = {"Conv", "Gemm", "MatMul", "FusedConv"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !node->domain[0]; i++)
        if (strcmp(node->op_type, ops[i]) == 0) return 1;
    return 0;
}

/* The attributes of a node plus the opset version of its domain and, for the
 * operators concerned, the compute precision other than float32. */
static d5_status node_attrs(const d5_executor *ex, const d5__node *node, d5_attr **attrs,
                            d5_attrs *view)
{
    d5_attr *a = d5_calloc((size_t)node->nattrs + 2, sizeof *a, "node attributes");
    if (!a) return D5_ERR_NOMEM;
    int32_t n = node->nattrs;
    if (n) memcpy(a, node->attrs, (size_t)n * sizeof *a);
    a[n].name = D5_ATTR_OPSET;
    a[n].type = D5_ATTR_INT;
    a[n++].i = d5_network_opset(ex->net, node->domain);
    if (ex->opt.compute_precision && precision_op(node)) {
        a[n].name = D5_ATTR_PRECISION;
        a[n].type = D5_ATTR_STRING;
        a[n++].s = ex->opt.compute_precision;
    }
    *attrs = a;
    view->items = a;
    view->count = n;
    return D5_OK;
}

/* Fills in[] for a node from the values known so far; *all_const tells
 * whether every present input is a constant. */
static d5_status node_inputs(d5_executor *ex, const d5__node *node, d5_tensor *in, int *all_const)
{
    *all_const = 1;
    for (int32_t k = 0; k < node->nin; k++) {
        memset(&in[k], 0, sizeof in[k]);
        if (!node->inputs[k][0]) continue;
        int32_t v = d5__network_value(ex->net, node->inputs[k]);
        const xval *x = &ex->vals[v];
        if (!x->known)
            return d5_error(D5_ERR_SHAPE, "node '%s' (%s): the shape of input '%s' is unknown",
                            node->name, node->op_type, node->inputs[k]);
        in[k].desc = x->desc;
        if (d5__executor_value_is_const(ex, v))
            in[k].data = x->data;
        else
            *all_const = 0;
    }
    return D5_OK;
}

static d5_status schedule_node(d5_executor *ex, const d5__node *node, int32_t index,
                               const d5_tensor *in, d5_attr *attrs, d5_attrs view)
{
    xnode *n = &ex->nodes[ex->nnodes];
    memset(n, 0, sizeof *n);
    n->net_index = index;
    n->attrs = attrs;
    n->attrs_view = view;
    n->nin = node->nin;
    n->nout = node->nout;
    n->in = d5_alloc(((size_t)n->nin + 1) * sizeof *n->in, "node inputs");
    n->out = d5_alloc((size_t)n->nout * sizeof *n->out, "node outputs");
    n->tin = d5_calloc((size_t)n->nin + 1, sizeof *n->tin, "node tensors");
    n->tout = d5_calloc((size_t)n->nout, sizeof *n->tout, "node tensors");
    ex->nnodes++; /* owned from here: freed with the executor on failure */
    if (!n->in || !n->out || !n->tin || !n->tout) return D5_ERR_NOMEM;
    int need_backward = 0;
    for (int32_t k = 0; k < n->nin; k++) {
        n->in[k] = node->inputs[k][0] ? d5__network_value(ex->net, node->inputs[k]) : -1;
        if (n->in[k] >= 0 && ex->vals[n->in[k]].needs_grad) need_backward = 1;
    }
    int reaches = 0;
    for (int32_t k = 0; k < n->nout; k++) {
        n->out[k] = d5__network_value(ex->net, node->outputs[k]);
        if (ex->vals[n->out[k]].reaches_loss) reaches = 1;
    }
    need_backward = need_backward && reaches && ex->opt.backprop;
    d5_status s =
        d5__choose(ex, node, in, node->nin, &n->attrs_view, need_backward, &n->desc, &n->op);
    if (s != D5_OK) return s;
    n->backward = need_backward;
    d5_op_cost(n->op, &n->flops, &n->bytes);
    for (int32_t k = 0; k < n->nout; k++) {
        xval *x = &ex->vals[n->out[k]];
        x->desc = *d5_op_output_desc(n->op, k);
        x->known = 1;
        x->kind = XV_ACT;
        x->needs_grad = need_backward && is_float(x->desc.dtype);
        if ((s = d5_tensor_desc_bytes(&x->desc, &x->bytes)) != D5_OK) return s;
    }
    return D5_OK;
}

static d5_status compile(d5_executor *ex)
{
    const d5_network *net = ex->net;
    int32_t *order = d5_alloc(((size_t)net->nnodes + 1) * sizeof *order, "schedule");
    d5_tensor *in = NULL;
    d5_status s = order ? d5_network_check(net, order) : D5_ERR_NOMEM;
    if (s == D5_OK) s = init_values(ex);
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++)
        if (ex->vals[v].trainable) ex->vals[v].needs_grad = 1;
    if (s == D5_OK && ex->opt.backprop) s = d5__backprop_reach(ex, order);
    if (s == D5_OK) {
        ex->nodes = d5_calloc((size_t)net->nnodes + 1, sizeof *ex->nodes, "schedule");
        int32_t maxin = 1;
        for (int32_t i = 0; i < net->nnodes; i++)
            if (net->nodes[i].nin > maxin) maxin = net->nodes[i].nin;
        in = d5_calloc((size_t)maxin, sizeof *in, "node inputs");
        if (!ex->nodes || !in) s = D5_ERR_NOMEM;
    }
    for (int32_t i = 0; s == D5_OK && i < net->nnodes; i++) {
        const d5__node *node = &net->nodes[order[i]];
        int all_const = 0;
        d5_attr *attrs = NULL;
        d5_attrs view;
        s = node_inputs(ex, node, in, &all_const);
        if (s == D5_OK) s = node_attrs(ex, node, &attrs, &view);
        if (s != D5_OK) break;
        if (d5__fold_candidate(node, all_const)) {
            int folded = 0;
            s = d5__fold(ex, node, in, &view, &folded);
            if (s != D5_OK || folded) {
                d5_free(attrs);
                ex->nfolded += folded;
                continue;
            }
        }
        s = schedule_node(ex, node, order[i], in, attrs, view);
    }
    d5_free(order);
    d5_free(in);
    return s;
}

/* Points every node's tensors at the planned memory. */
static void bind(d5_executor *ex)
{
    for (int32_t v = 0; v < ex->nvals; v++) {
        xval *x = &ex->vals[v];
        if (x->buf >= 0) x->data = d5__plan_ptr(ex, x->buf);
        if (x->grad_buf >= 0) x->grad = d5__plan_ptr(ex, x->grad_buf);
    }
    for (int32_t v = 0; v < ex->nvals; v++)
        if (ex->vals[v].grad_root >= 0) ex->vals[v].grad = ex->vals[ex->vals[v].grad_root].grad;
    for (int32_t v = 0; v < ex->nvals; v++)
        if (ex->vals[v].alias >= 0) {
            ex->vals[v].data = ex->vals[ex->vals[v].alias].data;
            ex->vals[v].grad = ex->vals[ex->vals[v].alias].grad;
        }
    for (int32_t i = 0; i < ex->nnodes; i++) {
        xnode *n = &ex->nodes[i];
        for (int32_t k = 0; k < n->nin; k++) {
            memset(&n->tin[k], 0, sizeof n->tin[k]);
            if (n->in[k] < 0) continue;
            n->tin[k].desc = ex->vals[n->in[k]].desc;
            n->tin[k].data = ex->vals[n->in[k]].data;
        }
        for (int32_t k = 0; k < n->nout; k++) {
            n->tout[k].desc = ex->vals[n->out[k]].desc;
            n->tout[k].data = ex->vals[n->out[k]].data;
        }
    }
    d5__device_bind(ex);
}

/* Lifetimes of the forward values and the plan. */
/* Operators whose output is their first input's bytes under another shape. */
static int is_view(const char *op_type)
{
    d5_op_meta m;
    d5_op_meta_get(op_type, &m);
    return m.view;
}

/* View nodes do not run: their output shares the input's memory (whose life
 * then extends to the output's last reader). Under backprop the gradients
 * share one buffer the same way (backprop.c), which needs the view to be its
 * input's only reader and neither value to be a graph output or an input. */
static void find_views(d5_executor *ex)
{
    int32_t *readers = NULL;
    if (ex->opt.backprop) {
        readers = d5_calloc((size_t)ex->nvals + 1, sizeof *readers, "readers");
        if (!readers) return; /* views run as copies */
        for (int32_t i = 0; i < ex->nnodes; i++)
            for (int32_t k = 0; k < ex->nodes[i].nin; k++)
                if (ex->nodes[i].in[k] >= 0) readers[ex->nodes[i].in[k]]++;
    }
    for (int32_t i = 0; i < ex->nnodes; i++) {
        xnode *n = &ex->nodes[i];
        const d5__node *node = &ex->net->nodes[n->net_index];
        if (!is_view(node->op_type) || node->domain[0] || n->nout != 1 || n->nin < 1 ||
            n->in[0] < 0)
            continue;
        xval *in = &ex->vals[n->in[0]], *out = &ex->vals[n->out[0]];
        if (in->desc.dtype != out->desc.dtype || in->bytes != out->bytes) continue;
        if (readers &&
            (readers[n->in[0]] != 1 || in->kind != XV_ACT || out->kind != XV_ACT ||
             ex->net->values[n->in[0]].is_output || ex->net->values[n->out[0]].is_output))
            continue;
        n->alias = 1;
        out->alias = in->alias >= 0 ? in->alias : n->in[0];
    }
    d5_free(readers);
}

static int32_t root_of(const d5_executor *ex, int32_t v)
{
    return v >= 0 && ex->vals[v].alias >= 0 ? ex->vals[v].alias : v;
}

/* Outputs written over an input (D5_OP_Z_IN_PLACE: FusedConv's Z): Y takes
 * Z's memory when nothing reads that memory after this node (Z, or a value
 * sharing it), Z is an activation of Y's size and layout, no other input of
 * the node is Z, and neither is a graph output. Chains follow: the next
 * block's Z may be this Y. Not under backprop (backward reads the forward's
 * values) nor with keep_values. */
static d5_status find_in_place(d5_executor *ex)
{
    if (ex->opt.backprop || ex->opt.keep_values) return D5_OK;
    int32_t *last = d5_alloc(((size_t)ex->nvals + 1) * sizeof *last, "last readers");
    if (!last) return D5_ERR_NOMEM;
    for (int32_t v = 0; v < ex->nvals; v++) last[v] = -1;
    for (int32_t i = 0; i < ex->nnodes; i++)
        for (int32_t k = 0; k < ex->nodes[i].nin; k++)
            if (ex->nodes[i].in[k] >= 0) last[root_of(ex, ex->nodes[i].in[k])] = i;
    for (int32_t i = 0; i < ex->nnodes; i++) {
        const xnode *n = &ex->nodes[i];
        if (!(n->desc->flags & D5_OP_Z_IN_PLACE) || n->alias || n->nin < 4 || n->in[3] < 0 ||
            n->nout < 1 || n->out[0] < 0)
            continue;
        int32_t z = n->in[3], y = n->out[0], r = root_of(ex, z), other = 0;
        for (int32_t k = 0; k < 3; k++) other |= n->in[k] >= 0 && root_of(ex, n->in[k]) == r;
        const xval *zv = &ex->vals[z], *rv = &ex->vals[r];
        xval *yv = &ex->vals[y];
        if (other || last[r] != i || rv->kind != XV_ACT || yv->kind != XV_ACT || yv->alias >= 0 ||
            ex->net->values[r].is_output || ex->net->values[z].is_output ||
            ex->net->values[y].is_output || zv->bytes != yv->bytes ||
            zv->desc.dtype != yv->desc.dtype || zv->blocked != yv->blocked || rv->mem != n->mem)
            continue;
        /* Y, and the views of Y, now share r; so do their readers. */
        for (int32_t v = 0; v < ex->nvals; v++)
            if (ex->vals[v].alias == y) ex->vals[v].alias = r;
        yv->alias = r;
        last[r] = last[y];
    }
    d5_free(last);
    return D5_OK;
}

static d5_status plan(d5_executor *ex)
{
    int32_t *def = d5_alloc(((size_t)ex->nvals + 1) * sizeof *def, "lifetimes");
    int32_t *last = d5_alloc(((size_t)ex->nvals + 1) * sizeof *last, "lifetimes");
    if (!def || !last) {
        d5_free(def);
        d5_free(last);
        return D5_ERR_NOMEM;
    }
    int32_t F = ex->nnodes;
    find_views(ex);
    d5_status s = d5__device_assign(ex);
    if (s == D5_OK) s = find_in_place(ex);
    for (int32_t v = 0; v < ex->nvals; v++) def[v] = last[v] = -1;
    for (int32_t i = 0; i < F; i++) {
        const xnode *n = &ex->nodes[i];
        int32_t b = n->backward ? 2 * F - 1 - i : i;
        for (int32_t k = 0; k < n->nout; k++) {
            int32_t r = root_of(ex, n->out[k]);
            if (n->out[k] >= 0 && ex->vals[n->out[k]].alias < 0) def[r] = i;
            if (last[r] < b) last[r] = b;
        }
        for (int32_t k = 0; k < n->nin; k++) {
            int32_t r = root_of(ex, n->in[k]);
            if (r >= 0 && last[r] < b) last[r] = b;
        }
    }
    /* A graph output keeps its memory (shared or not) to the end. */
    for (int32_t v = 0; v < ex->nvals; v++)
        if (ex->net->values[v].is_output) last[root_of(ex, v)] = D5__STEP_END;
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) {
        xval *x = &ex->vals[v];
        if (x->kind == XV_INPUT) {
            x->owned = x->data = d5_calloc(1, x->bytes ? x->bytes : 1, "graph input");
            if (!x->owned) s = D5_ERR_NOMEM;
            continue;
        }
        if (x->kind != XV_ACT || x->alias >= 0 || def[v] < 0) continue;
        int32_t end = last[v] < 0 ? D5__STEP_END : last[v];
        s = d5__plan_add(ex, x->bytes, def[v], end, &x->buf);
        if (s == D5_OK) ex->bufs[x->buf].mem = x->mem;
    }
    if (s == D5_OK && ex->opt.backprop) s = d5__backprop_prepare(ex);
    if (s == D5_OK) s = d5__device_copies(ex);
    if (s == D5_OK) s = d5__plan_place(ex);
    if (s == D5_OK) bind(ex);
    d5_free(def);
    d5_free(last);
    return s;
}

/* options.compute_precision as the executor keeps it: NULL for float32,
 * else a static "bf16", "f16" or "tf32" (the caller's string is not kept). */
static d5_status compute_precision(const char *given, const char **out)
{
    static const char *const names[] = {"bf16", "f16", "tf32"};
    *out = NULL;
    if (!given || strcmp(given, "f32") == 0) return D5_OK;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(given, names[i]) == 0) {
            *out = names[i];
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID,
                    "options.compute_precision: '%.64s' is not a compute precision (f32, bf16 "
                    "or f16; tf32 for the cuda backend's tensor cores)",
                    given);
}

static d5_status executor_new(const d5_network *net, const d5_executor_options *opt,
                              d5_executor **out)
{
    d5_executor *ex = d5_calloc(1, sizeof *ex, "executor");
    if (!ex) return D5_ERR_NOMEM;
    ex->net = net;
    ex->opt = opt ? *opt : d5_executor_default_options();
    if (ex->opt.auto_reps < 1) ex->opt.auto_reps = 5;
    if (compute_precision(ex->opt.compute_precision, &ex->opt.compute_precision) != D5_OK)
        ex->opt.compute_precision = NULL; /* checked before (check_options) */
    ex->loss = -1;
    ex->backend_list =
        d5_strdup(ex->opt.backend ? ex->opt.backend : d5_backend_default_list(), "backend");
    ex->node_backends = d5_strdup(ex->opt.node_backends ? ex->opt.node_backends : "", "backends");
    *out = ex;
    if (!ex->backend_list || !ex->node_backends) return D5_ERR_NOMEM;
    ex->opt.backend = ex->backend_list;
    ex->opt.node_backends = ex->node_backends;
    return D5_OK;
}

/* The backend options: an explicit list or override that names no backend,
 * or one that cannot run here, fails instead of being skipped; so does a
 * compute precision d5 does not know. */
static d5_status check_options(const d5_network *net, const d5_executor_options *opt)
{
    char msg[1024];
    const char *precision;
    if (opt && compute_precision(opt->compute_precision, &precision) != D5_OK)
        return D5_ERR_INVALID;
    d5_status s = opt && opt->backend ? d5_executor_check_backends(opt->backend) : D5_OK;
    if (s != D5_OK) {
        snprintf(msg, sizeof msg, "%s", d5_last_error());
        return d5_error(s, "options.backend: %s", msg);
    }
    s = opt ? d5_executor_check_node_backends(net, opt->node_backends) : D5_OK;
    if (s != D5_OK) {
        snprintf(msg, sizeof msg, "%s", d5_last_error());
        return d5_error(s, "options.node_backends: %s", msg);
    }
    return D5_OK;
}

d5_status d5_executor_create(const d5_network *net, const d5_executor_options *opt,
                             d5_executor **out)
{
    if (!net || !out) return d5_error(D5_ERR_INVALID, "d5_executor_create: NULL argument");
    *out = NULL;
    d5_executor *ex = NULL;
    d5__lowered *lowered = NULL;
    d5_status s = check_options(net, opt);
    if (s != D5_OK) return s;
    /* Control flow is resolved first (lower.c): the executor keeps the network it gives. */
    if (d5_network_has_control_flow(net) && (s = d5__lower(net, opt, &lowered)) != D5_OK) return s;
    s = executor_new(lowered ? lowered->net : net, opt, &ex);
    if (!ex) d5__lowered_free(lowered);
    if (ex) ex->lowered = lowered;
    if (s == D5_OK) s = compile(ex);
    if (s == D5_OK) s = d5__layout_propagate(ex);
    if (s == D5_OK) s = plan(ex);
    if (s == D5_OK && lowered) s = d5__executor_feed_given(ex);
    if (s != D5_OK) {
        d5_executor_free(ex);
        return s;
    }
    *out = ex;
    return D5_OK;
}

d5_status d5__executor_infer(const d5_network *net, d5_tensor_desc *descs, int32_t *known)
{
    d5_executor_options o = d5_executor_default_options();
    o.backend = "ref";
    d5_executor *ex = NULL;
    d5_status s = executor_new(net, &o, &ex);
    if (s == D5_OK) {
        ex->infer_only = 1;
        s = compile(ex);
    }
    for (int32_t v = 0; s == D5_OK && v < ex->nvals; v++) {
        descs[v] = ex->vals[v].desc;
        known[v] = ex->vals[v].known;
    }
    d5_executor_free(ex);
    return s;
}

/* ---- Running -------------------------------------------------------------------------------- */

/* The index of value `name` (v may be NULL; -1 when there is none) and its
 * entry (x may be NULL; NULL when there is none). */
static d5_status find_value(const d5_executor *ex, const char *name, int32_t *v, const xval **x)
{
    int32_t i = name ? d5__network_value(ex->net, name) : -1;
    if (v) *v = i;
    if (x) *x = i >= 0 ? &ex->vals[i] : NULL;
    if (i < 0)
        return d5_error(D5_ERR_NOTFOUND, "the network has no value named '%s'",
                        name ? name : "(null)");
    return D5_OK;
}

/* A view of `data`, which holds value x. */
static d5_status view_of(const xval *x, void *data, d5_tensor *view)
{
    memset(view, 0, sizeof *view);
    view->desc = x->desc;
    view->data = data;
    return D5_OK;
}

d5_status d5_executor_feed(d5_executor *ex, const char *name, const d5_tensor *t)
{
    int32_t v;
    d5_status s = find_value(ex, name, &v, NULL);
    if (s != D5_OK) return s;
    xval *x = &ex->vals[v];
    if (x->kind != XV_INPUT)
        return d5_error(D5_ERR_INVALID, "'%s' is not a graph input%s", name,
                        x->kind == XV_CONST ? " fed at run time (it was bound at create)" : "");
    if (!d5__same_desc(&t->desc, &x->desc)) {
        char a[128], b[128];
        d5_tensor_desc_format(&t->desc, a, sizeof a);
        d5_tensor_desc_format(&x->desc, b, sizeof b);
        return d5_error(D5_ERR_SHAPE, "graph input '%s' is %s; the tensor fed is %s", name, b, a);
    }
    if (t->device != D5_DEVICE_CPU)
        return d5_error(D5_ERR_UNSUPPORTED, "graph input '%s': feed CPU tensors", name);
    if (x->bytes) memcpy(x->data, t->data, x->bytes);
    return D5_OK;
}

d5_status d5_executor_fetch(const d5_executor *ex, const char *name, d5_tensor *view)
{
    int32_t v;
    const xval *x;
    d5_status s = find_value(ex, name, &v, &x);
    if (s != D5_OK) return s;
    if (x->kind == XV_NONE || !x->known)
        return d5_error(D5_ERR_STATE, "value '%s' is not computed by this executor", name);
    if (x->kind == XV_ACT && !ex->opt.keep_values && !ex->net->values[v].is_output)
        return d5_error(D5_ERR_STATE,
                        "value '%s' is not kept after a run (its memory is reused): make it a "
                        "graph output, or create the executor with keep_values",
                        name);
    if (x->mem != 0 && x->host_copy < 0)
        return d5_error(D5_ERR_STATE,
                        "value '%s' lives in %s device memory: make it a graph output, which is "
                        "copied to the host after each run",
                        name, ex->devs[x->mem]->name);
    return view_of(x, x->host_copy >= 0 ? ex->copies[x->host_copy].data : x->data, view);
}

d5_status d5_executor_bind_param(d5_executor *ex, const char *name, void *data)
{
    int32_t v;
    d5_status s = find_value(ex, name, &v, NULL);
    if (s != D5_OK) return s;
    if (ex->vals[v].kind != XV_INIT || !data)
        return d5_error(D5_ERR_INVALID, "'%s' is not an initializer read by this executor", name);
    /* Values folded from it at create keep the old data: bind parameters of
     * executors created with backprop, where nothing is folded from them. */
    ex->vals[v].data = data;
    for (int32_t w = 0; w < ex->nvals; w++)
        if (ex->vals[w].alias == v) ex->vals[w].data = data;
    bind(ex);
    d5__device_invalidate(ex, v);
    for (int32_t i = 0; i < ex->nnodes; i++)
        for (int32_t k = 0; k < ex->nodes[i].nin; k++)
            if (ex->nodes[i].in[k] == v && ex->nodes[i].mem == ex->vals[v].mem)
                ex->nodes[i].tin[k].data = data;
    return D5_OK;
}

/* The copies before node i (from *c on), or those after the forward pass
 * (i < 0), with their events when handlers listen. */
static d5_status run_copies(d5_executor *ex, int32_t i, int32_t *c)
{
    d5_status s = D5_OK;
    for (; s == D5_OK && *c < ex->ncopies && ex->copies[*c].node == i; ++*c) {
        if (ex->copies[*c].once && ex->copies[*c].done) continue;
        if (ex->nhandlers) s = d5__emit_copy(ex, D5_EVENT_BEFORE_COPY, *c);
        if (s == D5_OK) s = d5__device_copy(ex, *c);
        if (s == D5_OK && ex->nhandlers) s = d5__emit_copy(ex, D5_EVENT_AFTER_COPY, *c);
    }
    return s;
}

static d5_status run_forward(d5_executor *ex)
{
    d5_status s = D5_OK;
    int32_t c = 0;
    if (ex->nhandlers == 0) {
        for (int32_t i = 0; i < ex->nnodes && s == D5_OK; i++) {
            xnode *n = &ex->nodes[i];
            if (n->alias) continue;
            if (c < ex->ncopies && (s = run_copies(ex, i, &c)) != D5_OK) break;
            s = d5_op_forward(n->op, n->tin, n->tout);
            if (s != D5_OK) s = d5__node_error(&ex->net->nodes[n->net_index], s);
        }
        if (s == D5_OK && ex->ndevs) s = run_copies(ex, -1, &c);
        if (s == D5_OK && ex->ndevs) s = d5__device_sync(ex, -1);
        return s;
    }
    for (int32_t i = 0; i < ex->nnodes && s == D5_OK; i++) {
        xnode *n = &ex->nodes[i];
        if (n->alias) continue;
        if (c < ex->ncopies) s = run_copies(ex, i, &c);
        if (s == D5_OK) s = d5__emit(ex, D5_EVENT_BEFORE_NODE, D5_PHASE_FORWARD, i);
        if (s == D5_OK) {
            s = d5_op_forward(n->op, n->tin, n->tout);
            if (s != D5_OK) s = d5__node_error(&ex->net->nodes[n->net_index], s);
        }
        /* A device's operators queue their work: the node ends when it is done. */
        if (s == D5_OK && n->mem) s = d5__device_sync(ex, n->mem);
        if (s == D5_OK) s = d5__emit(ex, D5_EVENT_AFTER_NODE, D5_PHASE_FORWARD, i);
    }
    if (s == D5_OK && ex->ndevs) s = run_copies(ex, -1, &c);
    if (s == D5_OK && ex->ndevs) s = d5__device_sync(ex, -1);
    if (s == D5_OK) s = d5__emit(ex, D5_EVENT_AFTER_INFERENCE, D5_PHASE_FORWARD, -1);
    return s;
}

d5_status d5_executor_inference(d5_executor *ex)
{
    d5_status s =
        ex->nhandlers ? d5__emit(ex, D5_EVENT_BEFORE_EXECUTOR, D5_PHASE_FORWARD, -1) : D5_OK;
    if (s == D5_OK) s = run_forward(ex);
    if (s == D5_OK && ex->nhandlers)
        s = d5__emit(ex, D5_EVENT_AFTER_EXECUTOR, D5_PHASE_FORWARD, -1);
    return s;
}

d5_status d5_executor_inference_and_backprop(d5_executor *ex)
{
    if (!ex->opt.backprop)
        return d5_error(D5_ERR_STATE,
                        "this executor was created for inference only; create it with backprop");
    d5_status s =
        ex->nhandlers ? d5__emit(ex, D5_EVENT_BEFORE_EXECUTOR, D5_PHASE_FORWARD, -1) : D5_OK;
    if (s == D5_OK) s = run_forward(ex);
    if (s == D5_OK) s = d5__backprop_run(ex);
    if (s == D5_OK && ex->nhandlers)
        s = d5__emit(ex, D5_EVENT_AFTER_EXECUTOR, D5_PHASE_BACKWARD, -1);
    return s;
}

d5_status d5_executor_gradient(const d5_executor *ex, const char *name, d5_tensor *view)
{
    const xval *x;
    d5_status s = find_value(ex, name, NULL, &x);
    if (s != D5_OK) return s;
    if (!x->trainable || !x->has_grad)
        return d5_error(D5_ERR_NOTFOUND,
                        "'%s' has no gradient: it is not a parameter%s on the loss's path", name,
                        ex->opt.input_gradients ? " or graph input" : "");
    return view_of(x, x->grad, view);
}

/* ---- The schedule ---------------------------------------------------------------------------- */

int32_t d5_executor_node_count(const d5_executor *ex)
{
    return ex->nnodes;
}
int32_t d5_executor_folded_count(const d5_executor *ex)
{
    return ex->nfolded;
}

void d5_executor_node_at(const d5_executor *ex, int32_t i, d5_exec_node *out)
{
    const xnode *n = &ex->nodes[i];
    const d5__node *node = &ex->net->nodes[n->net_index];
    out->name = node->name;
    out->op_type = node->op_type;
    out->backend = n->desc->backend;
    out->network_index = n->net_index;
    out->flops = n->alias ? 0 : n->flops;
    out->bytes = n->alias ? 0 : n->bytes;
    out->op = n->op;
    out->view = n->alias;
}

int32_t d5_executor_backend_nodes(const d5_executor *ex, d5_backend_nodes *out, int32_t max)
{
    const char *seen[64];
    int32_t count[64], n = 0;
    for (int32_t i = 0; i < ex->nnodes; i++) {
        const xnode *x = &ex->nodes[i];
        if (x->alias) continue;
        int32_t k = 0;
        while (k < n && strcmp(seen[k], x->desc->backend) != 0) k++;
        if (k == n) {
            if (n == 64) continue;
            seen[n] = x->desc->backend;
            count[n++] = 0;
        }
        count[k]++;
    }
    for (int32_t k = 0; k < n && k < max && out; k++) {
        snprintf(out[k].backend, sizeof out[k].backend, "%s", seen[k]);
        out[k].nodes = count[k];
    }
    return n;
}

d5_status d5_executor_run_node(d5_executor *ex, int32_t i)
{
    if (i < 0 || i >= ex->nnodes)
        return d5_error(D5_ERR_RANGE, "node %d of a schedule of %d", (int)i, (int)ex->nnodes);
    xnode *n = &ex->nodes[i];
    if (n->alias) return D5_OK;
    d5_status s = d5_op_forward(n->op, n->tin, n->tout);
    if (s == D5_OK && n->mem) s = d5__device_sync(ex, n->mem);
    return s == D5_OK ? s : d5__node_error(&ex->net->nodes[n->net_index], s);
}

void d5_executor_memory(const d5_executor *ex, d5_memory_plan *out)
{
    *out = ex->plan;
}

/* The memory recorder (memory.c) watches runs through a handler that it
 * removes when freed: without handlers, runs take the path without events. */
void d5__executor_remove_handler(d5_executor *ex, d5_event_fn fn, void *user)
{
    for (int32_t i = 0; i < ex->nhandlers; i++) {
        if (ex->handlers[i].fn != fn || ex->handlers[i].user != user) continue;
        memmove(&ex->handlers[i], &ex->handlers[i + 1],
                (size_t)(ex->nhandlers - i - 1) * sizeof *ex->handlers);
        ex->nhandlers--;
        return;
    }
}
