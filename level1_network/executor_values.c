/* Feeding and fetching values of every type: the sequences and optionals of
 * a network whose control flow was resolved at create (lower.c) are tensors
 * of the compiled network, "<name>[k]". */
#include "executor_internal.h"

#include <string.h>

static const d5__lowered_value *find(const d5__lowered_value *v, int32_t n, const char *name)
{
    for (int32_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0) return &v[i];
    return NULL;
}

static d5_status feed_items(d5_executor *ex, const d5__lowered_value *r, const d5_value *v)
{
    int32_t count = v->present || v->type == D5_TYPE_SEQUENCE ? v->count : 0;
    if (count != r->count || (r->present != 0) != (v->present != 0 || v->type == D5_TYPE_SEQUENCE))
        return d5_error(D5_ERR_SHAPE,
                        "graph input '%s' was given %s of %d tensors at create; the value fed "
                        "has %d%s",
                        r->name, d5_type_name(r->type), (int)r->count, (int)count,
                        v->present || v->type == D5_TYPE_SEQUENCE ? "" : " (none)");
    for (int32_t k = 0; k < count; k++) {
        d5_status s = d5_executor_feed(ex, r->names[k], &v->items[k]);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

d5_status d5__executor_feed_given(d5_executor *ex)
{
    const d5__lowered *l = ex->lowered;
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < l->ninputs; i++)
        for (int32_t k = 0; s == D5_OK && k < ex->opt.nvalues; k++)
            if (ex->opt.value_names[k] && strcmp(ex->opt.value_names[k], l->inputs[i].name) == 0)
                s = feed_items(ex, &l->inputs[i], &ex->opt.values[k]);
    /* Borrowed for create only. */
    ex->opt.value_names = NULL;
    ex->opt.values = NULL;
    ex->opt.nvalues = 0;
    return s;
}

d5_status d5_executor_feed_value(d5_executor *ex, const char *name, const d5_value *v)
{
    if (!ex || !name || !v)
        return d5_error(D5_ERR_INVALID, "d5_executor_feed_value: NULL argument");
    const d5__lowered_value *r =
        ex->lowered ? find(ex->lowered->inputs, ex->lowered->ninputs, name) : NULL;
    if (r) return feed_items(ex, r, v);
    if (v->type != D5_TYPE_TENSOR || v->count != 1 || !v->items)
        return d5_error(D5_ERR_INVALID, "graph input '%s' is a tensor; the value fed is a %s", name,
                        d5_type_name(v->type));
    return d5_executor_feed(ex, name, &v->items[0]);
}

d5_status d5_executor_fetch_value(d5_executor *ex, const char *name, d5_value *view)
{
    if (!ex || !name || !view)
        return d5_error(D5_ERR_INVALID, "d5_executor_fetch_value: NULL argument");
    memset(view, 0, sizeof *view);
    const d5__lowered_value *r =
        ex->lowered ? find(ex->lowered->outputs, ex->lowered->noutputs, name) : NULL;
    if (!r) {
        /* A tensor: its one view lives in the executor like a fetched one. */
        static const d5_tensor none;
        d5_tensor t = none;
        d5_status s = d5_executor_fetch(ex, name, &t);
        if (s != D5_OK) return s;
        view->type = D5_TYPE_TENSOR;
        view->present = view->count = 1;
        view->dtype = t.desc.dtype;
        /* The item array of a tensor output is the executor's too. */
        int32_t v = d5__network_value(ex->net, name);
        view->items = &ex->vals[v].view;
        *view->items = t;
        return D5_OK;
    }
    for (int32_t k = 0; k < r->count; k++) {
        d5_status s = d5_executor_fetch(ex, r->names[k], &r->views[k]);
        if (s != D5_OK) return s;
    }
    view->type = r->type;
    view->present = r->present;
    view->dtype = r->dtype;
    view->count = r->count;
    view->items = r->views;
    return D5_OK;
}

const d5_network *d5_executor_network(const d5_executor *ex)
{
    return ex ? ex->net : NULL;
}
