/* BatchNormalization during training (ONNX opset 14+,
 * https://onnx.ai/onnx/operators/onnx__BatchNormalization.html): with
 * training_mode=1 the node normalizes with the batch's mean and variance and
 * writes running_mean = input_mean * momentum + batch mean * (1 - momentum)
 * (and the same for the variance) as its second and third outputs.
 *
 * The trainer's graph gets those outputs as graph outputs; after each step
 * they are copied into the caller's mean and variance initializers, which the
 * training executor reads (bound to them) and which evaluation, running the
 * caller's network in inference mode, normalizes with. */
#include "bn_train.h"

#include <stdio.h>
#include <string.h>

#define PREFIX "__d5_running/"

static d5_status record(d5__bn_train *bn, d5_network *net, const d5_node_info *node, int32_t k,
                        char *update_name)
{
    const char *stat = node->inputs[3 + k];
    int32_t v;
    d5_value_info info;
    d5_status s = d5_network_find_value(net, stat, &v);
    if (s != D5_OK) return s;
    d5_network_value_at(net, v, &info);
    float *data = d5_network_initializer_data(net, stat);
    if (info.kind != D5_VALUE_INITIALIZER || info.desc.dtype != D5_F32 || !data)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "d5_train: BatchNormalization '%s' reads its %s from '%s', which is not "
                        "a float32 initializer; training updates running statistics only in "
                        "initializers",
                        node->name, k ? "variance" : "mean", stat);
    int32_t i = 2 * bn->count + k;
    char *copy = d5_strdup(stat, "batch normalization statistics");
    if (!copy) return D5_ERR_NOMEM;
    bn->stat[i] = copy;
    bn->update[i] = update_name;
    bn->data[i] = data;
    bn->size[i] = d5_tensor_desc_numel(&info.desc);
    return D5_OK;
}

/* Replaces BatchNormalization node `name` of `tnet` by the same node in
 * training mode with three outputs, under the same name. */
static d5_status switch_node(d5__bn_train *bn, d5_network *tnet, d5_network *net, const char *name)
{
    int32_t idx;
    d5_status s = d5_network_find_node(tnet, name, &idx);
    if (s != D5_OK) return s;
    d5_node_info node;
    d5_network_node_at(tnet, idx, &node);
    if (node.ninputs != 5 || node.noutputs != 1)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "d5_train: BatchNormalization '%s' has %d inputs and %d outputs; expected "
                        "X, scale, B, mean, var and the output Y",
                        name, (int)node.ninputs, (int)node.noutputs);
    /* The node's attributes (epsilon, momentum) are numbers: copied by value
     * here, since the node and what it points to go before the new one comes. */
    d5_attr items[8];
    int32_t n = 0;
    for (int32_t a = 0; node.attrs && a < node.attrs->count; a++) {
        const d5_attr *at = &node.attrs->items[a];
        if (strcmp(at->name, "training_mode") == 0) continue;
        if (n == 7 || (at->type != D5_ATTR_INT && at->type != D5_ATTR_FLOAT))
            return d5_error(D5_ERR_UNSUPPORTED,
                            "d5_train: BatchNormalization '%s': attribute '%s' is not a number "
                            "(expected epsilon and momentum)",
                            name, at->name);
        items[n++] = (d5_attr){.type = at->type, .i = at->i, .f = at->f};
        if (strcmp(at->name, "epsilon") == 0)
            items[n - 1].name = "epsilon";
        else if (strcmp(at->name, "momentum") == 0)
            items[n - 1].name = "momentum";
        else
            return d5_error(D5_ERR_UNSUPPORTED,
                            "d5_train: BatchNormalization '%s': unknown attribute '%s'", name,
                            at->name);
    }
    items[n++] = (d5_attr){.name = "training_mode", .type = D5_ATTR_INT, .i = 1};
    d5_attrs attrs = {items, n};
    size_t len = strlen(PREFIX) + strlen(name) + 8;
    char *outs[2] = {d5_alloc(len, "batch normalization outputs"),
                     d5_alloc(len, "batch normalization outputs")};
    if (!outs[0] || !outs[1]) {
        d5_free(outs[0]);
        d5_free(outs[1]);
        return D5_ERR_NOMEM;
    }
    snprintf(outs[0], len, PREFIX "%s/mean", name);
    snprintf(outs[1], len, PREFIX "%s/var", name);
    s = record(bn, net, &node, 0, outs[0]);
    if (s != D5_OK) {
        d5_free(outs[0]);
        d5_free(outs[1]);
        return s;
    }
    s = record(bn, net, &node, 1, outs[1]); /* both names are bn's from here on */
    if (s != D5_OK) {
        d5_free(outs[1]);
        return s;
    }
    bn->count++;
    /* Copies of the names the node info points into, then the swap. */
    char *keep[7] = {NULL};
    const char *src[7] = {name,           node.inputs[0], node.inputs[1], node.inputs[2],
                          node.inputs[3], node.inputs[4], node.outputs[0]};
    for (int k = 0; k < 7 && s == D5_OK; k++)
        if (!(keep[k] = d5_strdup(src[k], "batch normalization node"))) s = D5_ERR_NOMEM;
    if (s == D5_OK) s = d5_network_remove_node(tnet, name);
    const char *ys[3] = {keep[6], outs[0], outs[1]};
    if (s == D5_OK)
        s = d5_network_add_node(tnet, keep[0], "BatchNormalization", NULL,
                                (const char *const *)keep + 1, 5, ys, 3, &attrs, NULL);
    for (int k = 0; k < 7; k++) d5_free(keep[k]);
    for (int k = 0; k < 2 && s == D5_OK; k++) s = d5_network_add_output(tnet, outs[k], NULL);
    return s;
}

d5_status d5__bn_train_prepare(d5_network *tnet, d5_network *net, d5__bn_train *bn)
{
    memset(bn, 0, sizeof *bn);
    int32_t nodes = d5_network_node_count(tnet), total = 0;
    for (int32_t i = 0; i < nodes; i++) {
        d5_node_info info;
        d5_network_node_at(tnet, i, &info);
        total += strcmp(info.op_type, "BatchNormalization") == 0 && !info.domain[0];
    }
    if (total == 0) return D5_OK;
    if (d5_network_opset(tnet, "") < 14) {
        bn->frozen = total;
        return D5_OK;
    }
    bn->stat = d5_calloc((size_t)total * 2, sizeof *bn->stat, "batch normalization statistics");
    bn->update = d5_calloc((size_t)total * 2, sizeof *bn->update, "batch normalization statistics");
    bn->data = d5_calloc((size_t)total * 2, sizeof *bn->data, "batch normalization statistics");
    bn->size = d5_calloc((size_t)total * 2, sizeof *bn->size, "batch normalization statistics");
    bn->cap = 2 * total;
    char **names = d5_calloc((size_t)total, sizeof *names, "batch normalization nodes");
    d5_status s = bn->stat && bn->update && bn->data && bn->size && names ? D5_OK : D5_ERR_NOMEM;
    /* Names first: each switch moves its node to the end of the list. */
    for (int32_t i = 0, k = 0; s == D5_OK && i < nodes; i++) {
        d5_node_info info;
        d5_network_node_at(tnet, i, &info);
        if (strcmp(info.op_type, "BatchNormalization") != 0 || info.domain[0]) continue;
        if (!(names[k++] = d5_strdup(info.name, "batch normalization nodes"))) s = D5_ERR_NOMEM;
    }
    for (int32_t k = 0; s == D5_OK && k < total; k++) s = switch_node(bn, tnet, net, names[k]);
    for (int32_t k = 0; names && k < total; k++) d5_free(names[k]);
    d5_free(names);
    return s;
}

d5_status d5__bn_train_bind(const d5__bn_train *bn, d5_executor *ex)
{
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < 2 * bn->count; i++)
        s = d5_executor_bind_param(ex, bn->stat[i], bn->data[i]);
    return s;
}

d5_status d5__bn_train_update(const d5__bn_train *bn, const d5_executor *ex)
{
    for (int32_t i = 0; i < 2 * bn->count; i++) {
        d5_tensor t;
        d5_status s = d5_executor_fetch(ex, bn->update[i], &t);
        if (s != D5_OK) return s;
        memcpy(bn->data[i], t.data, (size_t)bn->size[i] * sizeof(float));
    }
    return D5_OK;
}

void d5__bn_train_free(d5__bn_train *bn)
{
    for (int32_t i = 0; i < bn->cap; i++) { /* a failed prepare may leave a partial slot */
        if (bn->stat) d5_free(bn->stat[i]);
        if (bn->update) d5_free(bn->update[i]);
    }
    d5_free(bn->stat);
    d5_free(bn->update);
    d5_free(bn->data);
    d5_free(bn->size);
    memset(bn, 0, sizeof *bn);
}
