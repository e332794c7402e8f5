/* The machinery of the classification losses (class_loss.h). */
#include "class_loss.h"

/* "has" or "have", "does" or "do": the verb of the target or the weight. */
static const char *has(const d5_class_loss_names *nm)
{
    return nm->plural ? "have" : "has";
}

/* The target (input 1): int64 or int32, of input 0's shape without axis 1. */
static d5_status check_target(const d5_class_loss_names *nm, const d5_tensor *in, int32_t nin)
{
    if (!d5__has_input(in, nin, 1))
        return d5_error(D5_ERR_INVALID, "%s: input 1 (%s) is required", nm->op, nm->target);
    const d5_tensor_desc *x = &in[0].desc, *t = &in[1].desc;
    if (t->dtype != D5_I64 && t->dtype != D5_I32)
        return d5_error(D5_ERR_INVALID, "%s: %s %s data type %s, expected int64 or int32", nm->op,
                        nm->target, has(nm), d5_dtype_name((d5_dtype)t->dtype));
    if (x->ndim < 2)
        return d5_error(D5_ERR_SHAPE, "%s: %s has %d dims, expected (N, C) or (N, C, D1..Dk)",
                        nm->op, nm->input, (int)x->ndim);
    int same = t->ndim == x->ndim - 1 && t->shape[0] == x->shape[0];
    for (int32_t i = 1; same && i < t->ndim; i++) same = t->shape[i] == x->shape[i + 1];
    if (!same) {
        char xs[96], ts[96];
        d5__shape_str(x, xs, sizeof xs);
        d5__shape_str(t, ts, sizeof ts);
        return d5_error(D5_ERR_SHAPE,
                        "%s: %s %s %s not match %s %s (expected %s shape without axis 1)", nm->op,
                        nm->target, ts, nm->plural ? "do" : "does", nm->input, xs, nm->input_of);
    }
    return D5_OK;
}

/* The optional weight (input 2): input 0's floating-point type, shape (C). */
static d5_status check_weight(const d5_class_loss_names *nm, const d5_tensor *in, int32_t nin,
                              int64_t c)
{
    if (!d5__has_input(in, nin, 2)) return D5_OK;
    d5_status s = d5__need_float(nm->op, in, nin, 2);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc, *w = &in[2].desc;
    if (w->dtype != x->dtype)
        return d5_error(D5_ERR_INVALID, "%s: %s %s data type %s, %s %s", nm->op, nm->weight,
                        has(nm), d5_dtype_name((d5_dtype)w->dtype), nm->input,
                        d5_dtype_name((d5_dtype)x->dtype));
    if (w->ndim != 1 || w->shape[0] != c) {
        char ws[96];
        d5__shape_str(w, ws, sizeof ws);
        return d5_error(D5_ERR_SHAPE, "%s: %s %s shape %s, expected [%lld] (one per class)", nm->op,
                        nm->weight, has(nm), ws, (long long)c);
    }
    return D5_OK;
}

d5_status d5__class_loss_create(const d5_class_loss_names *names, const d5_op_create_args *args,
                                void **state)
{
    const d5_tensor *in = args->inputs;
    int32_t nin = args->ninputs;
    const d5_attrs *attrs = args->attrs;
    d5_class_loss g = {.names = names};
    d5_status s = d5__need_float(names->op, in, nin, 0);
    if (s == D5_OK) s = d5__loss_reduction(names->op, attrs, &g.reduction);
    if (s == D5_OK && d5_attrs_find(attrs, "ignore_index")) {
        g.has_ignore = 1;
        s = d5_attrs_int(attrs, "ignore_index", 0, &g.ignore_index);
    }
    if (s == D5_OK) s = check_target(names, in, nin);
    if (s != D5_OK) return s;
    const d5_tensor_desc *x = &in[0].desc, *t = &in[1].desc;
    g.n = x->shape[0];
    g.c = x->shape[1];
    if (g.c < names->min_classes) {
        char xs[96];
        d5__shape_str(x, xs, sizeof xs);
        return d5_error(D5_ERR_SHAPE, "%s: %s %s has no classes", names->op, names->input, xs);
    }
    g.d = 1;
    for (int32_t i = 2; i < x->ndim; i++) g.d *= x->shape[i];
    s = check_weight(names, in, nin, g.c);
    if (s != D5_OK) return s;
    d5_tensor_desc *out = args->outputs;
    out[0].ndim = 0;
    if (g.reduction == D5_LOSS_NONE) {
        out[0].ndim = t->ndim;
        for (int32_t i = 0; i < t->ndim; i++) out[0].shape[i] = t->shape[i];
    }
    return d5__ref_state(state, &g, sizeof g, names->op);
}

d5_status d5__class_loss_class(const d5_class_loss *g, const d5_rt *target, int64_t j, int64_t *cls)
{
    int64_t t = (int64_t)target->data[j];
    *cls = -1;
    if (g->has_ignore && t == g->ignore_index) return D5_OK;
    if (t < 0 || t >= g->c)
        return d5_error(D5_ERR_RANGE, "%s: %s %lld at position %lld is outside [0, %lld)",
                        g->names->op, g->names->target_value, (long long)t, (long long)j,
                        (long long)g->c);
    *cls = t;
    return D5_OK;
}

d5_status d5__class_loss_totals(const d5_class_loss *g, const d5_rt *in, int32_t nin,
                                d5_class_nll_fn nll, double *loss, double *log_prob, double *sum,
                                double *wsum)
{
    *sum = *wsum = 0;
    for (int64_t j = 0; j < g->n * g->d; j++) {
        int64_t base = d5__class_loss_base(g, j), cls;
        d5_status s = d5__class_loss_class(g, &in[1], j, &cls);
        if (s != D5_OK) return s;
        double w = d5__class_loss_weight(in, nin, cls);
        double v = nll(g, in[0].data + base, cls, log_prob ? log_prob + base : NULL);
        double l = cls < 0 ? 0 : w * v;
        if (loss) loss[j] = l;
        *sum += l;
        *wsum += w;
    }
    return D5_OK;
}

d5_status d5__class_loss_forward(const d5_class_loss *g, const d5_ref_call *call,
                                 d5_class_nll_fn nll)
{
    d5_rt *out = call->outputs;
    int none = g->reduction == D5_LOSS_NONE;
    double sum, wsum;
    d5_status s =
        d5__class_loss_totals(g, call->inputs, call->ninputs, nll, none ? out[0].data : NULL,
                              call->noutputs > 1 ? out[1].data : NULL, &sum, &wsum);
    if (s != D5_OK) return s;
    if (!none) out[0].data[0] = g->reduction == D5_LOSS_SUM ? sum : sum / wsum;
    return D5_OK;
}
