/* Subgraphs of nodes (If's branches, Loop's, Scan's and SequenceMap's bodies)
 * and the types other than tensors: what a network holds of control flow,
 * which lower.c resolves for the executor. */
#include "network_internal.h"

#include <string.h>

const char *d5_type_name(int32_t type)
{
    switch (type) {
    case D5_TYPE_TENSOR: return "tensor";
    case D5_TYPE_SEQUENCE: return "sequence";
    case D5_TYPE_OPTIONAL: return "optional tensor";
    case D5_TYPE_OPTIONAL_SEQUENCE: return "optional sequence";
    default: return "unknown type";
    }
}

void d5_value_free(d5_value *v)
{
    if (!v) return;
    for (int32_t i = 0; v->items && i < v->count; i++) d5_tensor_free(&v->items[i]);
    d5_free(v->items);
    memset(v, 0, sizeof *v);
}

void d5__node_graphs_free(d5__node *n)
{
    for (int32_t i = 0; i < n->ngraphs; i++) {
        d5_free(n->graphs[i].attr);
        d5_network_free(n->graphs[i].graph);
    }
    d5_free(n->graphs);
    n->graphs = NULL;
    n->ngraphs = 0;
}

d5_status d5_network_attach_graph(d5_network *net, int32_t node, const char *attr,
                                  d5_network *graph)
{
    d5_status s = D5_OK;
    if (!net || !graph || !attr || !attr[0])
        s = d5_error(D5_ERR_INVALID, "d5_network_attach_graph: NULL argument");
    else if (node < 0 || node >= net->nnodes)
        s = d5_error(D5_ERR_RANGE, "d5_network_attach_graph: no node %d (the network has %d)",
                     (int)node, (int)net->nnodes);
    else if (d5_network_node_graph(net, node, attr))
        s = d5_error(D5_ERR_INVALID, "node '%s' (%s) has a graph '%s' already",
                     net->nodes[node].name, net->nodes[node].op_type, attr);
    if (s != D5_OK) {
        d5_network_free(graph);
        return s;
    }
    d5__node *n = &net->nodes[node];
    d5__subgraph *g = d5_realloc(n->graphs, (size_t)n->ngraphs * sizeof *g,
                                 ((size_t)n->ngraphs + 1) * sizeof *g, "subgraphs");
    char *name = d5_strdup(attr, "graph attribute");
    if (g) n->graphs = g;
    if (!g || !name) {
        d5_free(name);
        d5_network_free(graph);
        return D5_ERR_NOMEM;
    }
    g[n->ngraphs].attr = name;
    g[n->ngraphs++].graph = graph;
    return D5_OK;
}

const d5_network *d5_network_node_graph_at(const d5_network *net, int32_t node, int32_t i,
                                           const char **attr)
{
    if (attr) *attr = NULL;
    if (!net || node < 0 || node >= net->nnodes || i < 0 || i >= net->nodes[node].ngraphs)
        return NULL;
    if (attr) *attr = net->nodes[node].graphs[i].attr;
    return net->nodes[node].graphs[i].graph;
}

const d5_network *d5_network_node_graph(const d5_network *net, int32_t node, const char *attr)
{
    const char *name;
    const d5_network *g;
    for (int32_t i = 0; attr && (g = d5_network_node_graph_at(net, node, i, &name)); i++)
        if (strcmp(name, attr) == 0) return g;
    return NULL;
}

d5_status d5__node_graphs_copy(d5_network *dst, int32_t node, const d5__node *src)
{
    for (int32_t i = 0; i < src->ngraphs; i++) {
        d5_network *copy = NULL;
        d5_status s = d5_network_clone(src->graphs[i].graph, &copy);
        if (s == D5_OK) s = d5_network_attach_graph(dst, node, src->graphs[i].attr, copy);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

int d5__control_op(const d5__node *n)
{
    static const char *const ops[] = {"If",
                                      "Loop",
                                      "Scan",
                                      "SequenceMap",
                                      "SequenceAt",
                                      "SequenceConstruct",
                                      "SequenceEmpty",
                                      "SequenceErase",
                                      "SequenceInsert",
                                      "SequenceLength",
                                      "SplitToSequence",
                                      "ConcatFromSequence",
                                      "Optional",
                                      "OptionalHasElement",
                                      "OptionalGetElement"};
    if (strcmp(n->domain, "ai.onnx.preview") == 0) /* lower_attention.c */
        return strcmp(n->op_type, "FlexAttention") == 0;
    if (n->domain[0]) return 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->op_type, ops[i]) == 0) return 1;
    return 0;
}

int d5_network_has_control_flow(const d5_network *net)
{
    if (!net) return 0;
    for (int32_t i = 0; i < net->nnodes; i++)
        if (net->nodes[i].ngraphs || d5__control_op(&net->nodes[i])) return 1;
    for (int32_t i = 0; i < net->nvalues; i++)
        if (net->values[i].type != D5_TYPE_TENSOR) return 1;
    return 0;
}
