/* Shapes of a network: symbolic dimensions bound to sizes (the batch above
 * all), graph inputs' descriptors, and shape inference over the whole graph
 * (each operator's create infers its outputs, run by the executor's
 * inference pass without computing anything). */
#include "network_internal.h"

#include <string.h>

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
    if (d5_network_has_control_flow(net))
        return d5_error(D5_ERR_UNSUPPORTED,
                        "the network has control flow, sequences or optionals: its shapes are "
                        "known once an executor resolves them with the inputs bound at create "
                        "(d5_executor_create)");
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
