/* The network's representation, shared by network.c, check.c and the executor. */
#ifndef D5_NETWORK_INTERNAL_H
#define D5_NETWORK_INTERNAL_H

#include "d5/executor.h"
#include "d5/network.h"

typedef struct d5__value {
    char *name;
    int32_t kind; /* d5_value_kind */
    int32_t is_output;
    d5_tensor_desc desc;
    int32_t known;
    char *dim_params[D5_MAX_DIMS];
    d5_tensor init; /* initializer: desc + data from d5_tensor_alloc */
    int32_t producer;
    int32_t type; /* d5_type */
} d5__value;

/* A graph attribute of a node (network_graphs.c). */
typedef struct d5__subgraph {
    char *attr;
    d5_network *graph;
} d5__subgraph;

typedef struct d5__node {
    char *name, *op_type, *domain;
    int32_t nin, nout;
    char **inputs, **outputs;
    d5_attr *attrs;
    int32_t nattrs;
    d5_attrs attrs_view;
    d5__subgraph *graphs;
    int32_t ngraphs;
} d5__node;

typedef struct d5__opset {
    char *domain;
    int64_t version;
} d5__opset;

/* A name -> index table (open addressing, FNV-1a). */
typedef struct d5__index {
    int32_t *slots; /* -1 empty */
    size_t cap;
} d5__index;

struct d5_network {
    char *name;
    d5__opset *opsets;
    int32_t nopsets;
    d5__node *nodes;
    int32_t nnodes, node_cap;
    d5__value *values;
    int32_t nvalues, value_cap;
    int32_t *inputs; /* value indices of graph inputs, in order */
    int32_t ninputs, input_cap;
    char **outputs; /* output names, in order */
    int32_t noutputs, output_cap;
    d5__index value_index, node_index;
};

/* Index of a value or node by name, -1 when absent. */
int32_t d5__network_value(const d5_network *net, const char *name);
int32_t d5__network_node(const d5_network *net, const char *name);

/* 1 when two descriptors have the same type and shape. */
int d5__same_desc(const d5_tensor_desc *a, const d5_tensor_desc *b);

/* Graph rewriting for the optimisation passes (optimize.c). */
/* Removes every node i with dead[i] set, in one pass, keeping the order of the
 * others; values only they wrote go unless declared graph outputs. */
d5_status d5__network_remove_nodes(d5_network *net, const unsigned char *dead);
/* Output `slot` of node `node` becomes value `value` (which no node writes);
 * the value it wrote before is left unproduced, and dropped by the next
 * d5__network_remove_nodes unless it is a graph output. */
d5_status d5__network_move_output(d5_network *net, int32_t node, int32_t slot, int32_t value);
/* Renames node `node` (name NULL: kept; a taken name is D5_ERR_INVALID),
 * changes its operator (op_type NULL: kept) and appends the attribute `extra`
 * (copied; NULL: none). */
d5_status d5__network_rewrite_node(d5_network *net, int32_t node, const char *name,
                                   const char *op_type, const d5_attr *extra);
/* Node `node`'s attributes become a copy of attrs[0..n-1]. */
d5_status d5__network_set_attrs(d5_network *net, int32_t node, const d5_attr *attrs, int32_t n);
/* Drops initializers that no node reads and that are not graph outputs. */
d5_status d5__network_drop_unread(d5_network *net);

/* 1 when value v is a parameter: a floating-point initializer that some node
 * reads as a weight (not as a setting such as BatchNormalization's running
 * statistics or Resize's scales). */
int d5__network_is_param(const d5_network *net, int32_t v);

/* Deep copies of attributes (attr.c); free with d5__attrs_free. */
d5_status d5__attrs_copy(const d5_attrs *src, d5_attr **out, int32_t *n);
void d5__attrs_free(d5_attr *a, int32_t n);

/* Subgraphs (network_graphs.c): frees node n's, and copies src's graphs to
 * node `node` of dst. */
void d5__node_graphs_free(d5__node *n);
d5_status d5__node_graphs_copy(d5_network *dst, int32_t node, const d5__node *src);
/* 1 for the operators that the executor resolves at create (control flow,
 * sequences, optionals), by op_type of the default domain. */
int d5__control_op(const d5__node *n);

/* Writes "NAME (OP)" for messages. */
void d5__node_label(const d5__node *n, char *buf, size_t size);

/* Internal mode of the executor used by d5_network_infer_shapes: infer and
 * fold only, then copy every value's descriptor out. descs[] has one entry per
 * network value. */
d5_status d5__executor_infer(const d5_network *net, d5_tensor_desc *descs, int32_t *known);

#endif
