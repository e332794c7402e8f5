/* Reading a network built through network.h: its nodes and values by index
 * and by name, its inputs and outputs, an initializer's data, and a deep
 * copy. Building and changing it is network.c's. */
#include "network_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- Inspecting --------------------------------------------------------------------------------
 */

int32_t d5_network_node_count(const d5_network *net)
{
    return net ? net->nnodes : 0;
}

void d5_network_node_at(const d5_network *net, int32_t i, d5_node_info *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!net || i < 0 || i >= net->nnodes) return;
    const d5__node *n = &net->nodes[i];
    out->name = n->name;
    out->op_type = n->op_type;
    out->domain = n->domain;
    out->ninputs = n->nin;
    out->noutputs = n->nout;
    out->inputs = (const char *const *)n->inputs;
    out->outputs = (const char *const *)n->outputs;
    out->attrs = &n->attrs_view;
    out->ngraphs = n->ngraphs;
}

/* *index = i, or D5_ERR_NOTFOUND when i < 0: no `what` (node, value) named `name`. */
static d5_status found(int32_t i, const char *what, const char *name, int32_t *index)
{
    if (i < 0) return d5_error(D5_ERR_NOTFOUND, "no %s named '%s'", what, name ? name : "");
    *index = i;
    return D5_OK;
}

d5_status d5_network_find_node(const d5_network *net, const char *name, int32_t *index)
{
    return found(d5__network_node(net, name), "node", name, index);
}

int32_t d5_network_value_count(const d5_network *net)
{
    return net ? net->nvalues : 0;
}

void d5_network_value_at(const d5_network *net, int32_t i, d5_value_info *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->producer = -1;
    if (!net || i < 0 || i >= net->nvalues) return;
    const d5__value *v = &net->values[i];
    out->name = v->name;
    out->kind = v->kind;
    out->is_output = v->is_output;
    out->desc = v->desc;
    out->known = v->known;
    for (int d = 0; d < D5_MAX_DIMS; d++) out->dim_params[d] = v->dim_params[d];
    out->data = v->kind == D5_VALUE_INITIALIZER ? v->init.data : NULL;
    out->producer = v->producer;
    out->type = v->type;
}

d5_status d5_network_find_value(const d5_network *net, const char *name, int32_t *index)
{
    return found(d5__network_value(net, name), "value", name, index);
}

int32_t d5_network_input_count(const d5_network *net)
{
    return net ? net->ninputs : 0;
}
const char *d5_network_input_name(const d5_network *net, int32_t i)
{
    return net && i >= 0 && i < net->ninputs ? net->values[net->inputs[i]].name : NULL;
}
int32_t d5_network_output_count(const d5_network *net)
{
    return net ? net->noutputs : 0;
}
const char *d5_network_output_name(const d5_network *net, int32_t i)
{
    return net && i >= 0 && i < net->noutputs ? net->outputs[i] : NULL;
}

void d5__node_label(const d5__node *n, char *buf, size_t size)
{
    snprintf(buf, size, "node '%s' (%s)", n->name, n->op_type);
}

/* ---- Copies -------------------------------------------------------------------------------------
 */

void *d5_network_initializer_data(d5_network *net, const char *name)
{
    int32_t i = d5__network_value(net, name);
    return i >= 0 && net->values[i].kind == D5_VALUE_INITIALIZER ? net->values[i].init.data : NULL;
}

d5_status d5_network_clone(const d5_network *net, d5_network **out)
{
    d5_network *c = NULL;
    d5_status s = d5_network_create(net->name, &c);
    for (int32_t i = 0; s == D5_OK && i < net->nopsets; i++)
        s = d5_network_set_opset(c, net->opsets[i].domain, net->opsets[i].version);
    for (int32_t i = 0; s == D5_OK && i < net->ninputs; i++) {
        const d5__value *v = &net->values[net->inputs[i]];
        s = d5_network_add_input_typed(c, v->name, v->type, &v->desc,
                                       (const char *const *)v->dim_params);
    }
    for (int32_t i = 0; s == D5_OK && i < net->nvalues; i++)
        if (net->values[i].kind == D5_VALUE_INITIALIZER)
            s = d5_network_add_initializer(c, net->values[i].name, &net->values[i].init);
    for (int32_t i = 0; s == D5_OK && i < net->nnodes; i++) {
        const d5__node *n = &net->nodes[i];
        s = d5_network_add_node(c, n->name, n->op_type, n->domain, (const char *const *)n->inputs,
                                n->nin, (const char *const *)n->outputs, n->nout, &n->attrs_view,
                                NULL);
        if (s == D5_OK) s = d5__node_graphs_copy(c, i, n);
    }
    for (int32_t i = 0; s == D5_OK && i < net->noutputs; i++) {
        int32_t v = d5__network_value(net, net->outputs[i]);
        s = d5_network_add_output(c, net->outputs[i],
                                  v >= 0 && net->values[v].known ? &net->values[v].desc : NULL);
        if (s == D5_OK && v >= 0 && net->values[v].type)
            s = d5_network_set_output_type(c, net->outputs[i], net->values[v].type);
    }
    /* Inferred descriptors of intermediate values. */
    for (int32_t i = 0; s == D5_OK && i < net->nvalues; i++) {
        const d5__value *v = &net->values[i];
        int32_t j = d5__network_value(c, v->name);
        if (j >= 0 && v->kind == D5_VALUE_INTERMEDIATE && v->known) {
            c->values[j].desc = v->desc;
            c->values[j].known = 1;
        }
    }
    if (s != D5_OK) {
        d5_network_free(c);
        return s;
    }
    *out = c;
    return D5_OK;
}
