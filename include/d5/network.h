/* d5 level 1: the network graph.
 *
 * A d5_network is an ONNX-style dataflow graph: named values (graph inputs,
 * initializers and the outputs of nodes) and nodes that read and write them by
 * name. It owns copies of everything it is given: node attributes, initializer
 * data, names. onnx.h turns an ONNX file into a network and back; the models
 * (d5_model_build) build one in C; executor.h runs one.
 *
 * Values have descriptors. A dimension that is not known yet is -1 (a
 * symbolic dimension of an ONNX input, "N", keeps its name as a dim_param);
 * d5_network_bind_dim and d5_network_set_batch give such dimensions sizes, and
 * d5_network_infer_shapes fills in the descriptor of every value by the shape
 * inference of level 0's reference operators.
 *
 * Views returned by the getters (names, node and value infos) are borrowed:
 * they stay valid until the network is changed or freed. A network is not
 * thread safe; distinct networks are independent.
 */
#ifndef D5_NETWORK_H
#define D5_NETWORK_H

#include "d5/core.h"
#include "d5/operator.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct d5_network d5_network;

/* A node as the getters show it. */
typedef struct d5_node_info {
    const char *name;    /* unique in the network */
    const char *op_type; /* "Conv" */
    const char *domain;  /* "" for the default ONNX domain */
    int32_t ninputs, noutputs;
    const char *const *inputs; /* value names; "" for an omitted optional input */
    const char *const *outputs;
    const d5_attrs *attrs;
    int32_t ngraphs; /* graph attributes (If's branches, Loop's body): d5_network_node_graph */
} d5_node_info;

typedef enum d5_value_kind {
    D5_VALUE_INTERMEDIATE = 0, /* written by a node */
    D5_VALUE_INPUT = 1,        /* a graph input, fed by the user */
    D5_VALUE_INITIALIZER = 2   /* a constant tensor stored in the network */
} d5_value_kind;

typedef struct d5_value_info {
    const char *name;
    int32_t kind;      /* a d5_value_kind */
    int32_t is_output; /* 1 for a graph output */
    /* Known so far: graph inputs and initializers from the start, others after
     * d5_network_infer_shapes; a dtype of D5_DTYPE_INVALID or ndim < 0 when not
     * known, a dimension of -1 when not known. */
    d5_tensor_desc desc;
    int32_t known; /* 1 when desc is fully known */
    /* Per dimension, the symbolic name from the model ("N") or NULL. */
    const char *dim_params[D5_MAX_DIMS];
    const void *data; /* initializer data (CPU, row-major) or NULL */
    int32_t producer; /* index of the node that writes it, -1 for inputs and initializers */
    int32_t type;     /* a d5_type: D5_TYPE_TENSOR but for declared sequences and optionals */
} d5_value_info;

/* ---- Types other than tensors -------------------------------------------------------- */

/* ONNX values are tensors, sequences of tensors, and optionals, which hold a
 * tensor or a sequence, or nothing. A graph may take and give all of them;
 * the executor resolves sequences and optionals at create (executor.h). */
typedef enum d5_type {
    D5_TYPE_TENSOR = 0,
    D5_TYPE_SEQUENCE = 1,         /* tensors of one dtype, shapes may differ */
    D5_TYPE_OPTIONAL = 2,         /* an optional tensor */
    D5_TYPE_OPTIONAL_SEQUENCE = 3 /* an optional sequence */
} d5_type;

/* "tensor", "sequence", "optional tensor", "optional sequence". */
D5_API const char *d5_type_name(int32_t type);

/* A value of any type as it is fed and fetched: a tensor (count 1), a
 * sequence (count tensors, possibly 0), an optional (present 0: none; else
 * its tensor, count 1, or its sequence). dtype is the element type, which an
 * empty sequence keeps. */
typedef struct d5_value {
    int32_t type; /* a d5_type */
    int32_t present;
    int32_t dtype; /* a d5_dtype */
    int32_t count;
    d5_tensor *items;
} d5_value;

/* Frees the items' data (from d5_tensor_alloc) and the items array (from
 * d5_alloc) of a value that owns them, as d5_onnx_value_read gives them;
 * zeroes *v. NULL is a no-op. */
D5_API void d5_value_free(d5_value *v);

/* ---- Building ---------------------------------------------------------------------- */

/* Creates an empty network named `name` (may be NULL: "d5"). Free with d5_network_free. */
D5_API D5_NODISCARD d5_status d5_network_create(const char *name, d5_network **out);
D5_API void d5_network_free(d5_network *net);
D5_API const char *d5_network_name(const d5_network *net);

/* The opset version of a domain ("" = ai.onnx) the network's nodes follow.
 * Operators change meaning across opsets (axes as attribute or input); the
 * network passes the version to operators as the attribute "__opset". A network
 * without one for "" uses D5_DEFAULT_OPSET. */
#define D5_DEFAULT_OPSET 17
D5_API D5_NODISCARD d5_status d5_network_set_opset(d5_network *net, const char *domain,
                                                   int64_t version);
D5_API int64_t d5_network_opset(const d5_network *net, const char *domain);
D5_API int32_t d5_network_opset_count(const d5_network *net);
D5_API void d5_network_opset_at(const d5_network *net, int32_t i, const char **domain,
                                int64_t *version);

/* Declares a graph input. Dimensions of -1 are unknown; dim_params (may be
 * NULL, entries may be NULL) names them. D5_ERR_INVALID when the name is taken. */
D5_API D5_NODISCARD d5_status d5_network_add_input(d5_network *net, const char *name,
                                                   const d5_tensor_desc *desc,
                                                   const char *const *dim_params);
/* Marks a value (existing or to be written by a node added later) as a graph
 * output; desc may be NULL (inferred). */
D5_API D5_NODISCARD d5_status d5_network_add_output(d5_network *net, const char *name,
                                                    const d5_tensor_desc *desc);
/* Adds an initializer, copying t's CPU data. D5_ERR_INVALID when the name is taken,
 * except that an initializer may share its name with a graph input (ONNX IR < 4
 * lists initializers as inputs too): the input then becomes the initializer. */
D5_API D5_NODISCARD d5_status d5_network_add_initializer(d5_network *net, const char *name,
                                                         const d5_tensor *t);
/* The same, taking ownership of t->data, which must come from d5_tensor_alloc
 * (it is freed with d5_tensor_free, also on failure); t->data is set to NULL. */
D5_API D5_NODISCARD d5_status d5_network_add_initializer_take(d5_network *net, const char *name,
                                                              d5_tensor *t);
/* Replaces an initializer's data (same descriptor), copying it: trained weights. */
D5_API D5_NODISCARD d5_status d5_network_set_initializer(d5_network *net, const char *name,
                                                         const d5_tensor *t);

/* Adds a node. name NULL or "" gives "<op_type>_<index>"; a taken name is
 * D5_ERR_INVALID. domain NULL is "". inputs may contain "" (omitted optional
 * input). The node may refer to values that do not exist yet; d5_network_check
 * verifies the graph. attrs (may be NULL) is copied deeply. `index` (may be
 * NULL) receives the node's index. */
D5_API D5_NODISCARD d5_status d5_network_add_node(d5_network *net, const char *name,
                                                  const char *op_type, const char *domain,
                                                  const char *const *inputs, int32_t ninputs,
                                                  const char *const *outputs, int32_t noutputs,
                                                  const d5_attrs *attrs, int32_t *index);
/* Removes a node by name (its output values go with it unless another node
 * writes them). Indices of later nodes shift down by one. D5_ERR_NOTFOUND. */
D5_API D5_NODISCARD d5_status d5_network_remove_node(d5_network *net, const char *name);
/* Rewires one edge: input `slot` of node `node` now reads value `value` ("" to
 * omit it). D5_ERR_NOTFOUND for an unknown node, D5_ERR_RANGE for a bad slot. */
D5_API D5_NODISCARD d5_status d5_network_set_node_input(d5_network *net, const char *node,
                                                        int32_t slot, const char *value);

/* A deep copy of a network (values, nodes, attributes, initializer data,
 * opsets, inferred descriptors). Free it with d5_network_free. */
D5_API D5_NODISCARD d5_status d5_network_clone(const d5_network *net, d5_network **out);
/* The data of initializer `name`, writable in place (an optimizer's updates);
 * NULL when there is no such initializer. Borrowed like the other views. */
D5_API void *d5_network_initializer_data(d5_network *net, const char *name);

/* ---- Inspecting ---------------------------------------------------------------------- */

/* Counts are 0 for a NULL network. An index out of range (or a NULL network)
 * gives NULL names and a zeroed info (producer -1), never a read outside the
 * network. */

D5_API int32_t d5_network_node_count(const d5_network *net);
D5_API void d5_network_node_at(const d5_network *net, int32_t i, d5_node_info *out);
/* D5_ERR_NOTFOUND naming the node when absent. */
D5_API D5_NODISCARD d5_status d5_network_find_node(const d5_network *net, const char *name,
                                                   int32_t *index);

/* Values: graph inputs, initializers, and every name a node writes. */
D5_API int32_t d5_network_value_count(const d5_network *net);
D5_API void d5_network_value_at(const d5_network *net, int32_t i, d5_value_info *out);
D5_API D5_NODISCARD d5_status d5_network_find_value(const d5_network *net, const char *name,
                                                    int32_t *index);

/* Graph inputs that are not initializers, and graph outputs, in declaration order. */
D5_API int32_t d5_network_input_count(const d5_network *net);
D5_API const char *d5_network_input_name(const d5_network *net, int32_t i);
D5_API int32_t d5_network_output_count(const d5_network *net);
D5_API const char *d5_network_output_name(const d5_network *net, int32_t i);

/* Parameters: floating-point initializers that some node reads as a weight,
 * in order of first use. Operands that are settings are not parameters:
 * BatchNormalization's running mean and variance (buffers, in torch's words),
 * Resize's roi and scales, Clip's bounds, Pad's value, Dropout's ratio. Their
 * gradients come from d5_executor_gradient. */
D5_API int32_t d5_network_param_count(const d5_network *net);
D5_API const char *d5_network_param_name(const d5_network *net, int32_t i);
/* Total number of parameter elements. */
D5_API int64_t d5_network_param_elements(const d5_network *net);

/* Checks the graph: every node input is a value some node, input or
 * initializer provides; no value is written twice; no cycle; every output is
 * provided. Fills order[0..node_count-1] (may be NULL) with a topological order
 * (stable: nodes keep their relative order where the graph allows).
 * D5_ERR_INVALID names the node and value at fault. */
D5_API D5_NODISCARD d5_status d5_network_check(const d5_network *net, int32_t *order);

/* Declares a graph input of any type. desc gives a tensor's dtype and shape,
 * or a sequence's or optional's element dtype and shape (dimensions -1 where
 * elements differ), or the dtype alone with ndim -1 (rank unknown); desc may
 * be NULL, or have dtype D5_DTYPE_INVALID, where the type is left to the
 * value given (a subgraph's inputs, bound by the node that runs it). */
D5_API D5_NODISCARD d5_status d5_network_add_input_typed(d5_network *net, const char *name,
                                                         int32_t type, const d5_tensor_desc *desc,
                                                         const char *const *dim_params);
/* The type of a declared graph output (d5_network_add_output declares tensors). */
D5_API D5_NODISCARD d5_status d5_network_set_output_type(d5_network *net, const char *name,
                                                         int32_t type);

/* Subgraphs. Control-flow nodes (If's then_branch and else_branch, Loop's and
 * Scan's body, SequenceMap's body) hold graphs as attributes. A subgraph is a
 * d5_network whose graph inputs are the values the node binds (a Loop body's
 * iteration number, condition and carried values) and whose nodes may read
 * any value of the graphs around it by name. Takes ownership of `graph`,
 * also on failure. D5_ERR_INVALID when node `node` has a graph `attr` already. */
D5_API D5_NODISCARD d5_status d5_network_attach_graph(d5_network *net, int32_t node,
                                                      const char *attr, d5_network *graph);
/* Node `node`'s graph attribute `attr` (borrowed), NULL when it has none. */
D5_API const d5_network *d5_network_node_graph(const d5_network *net, int32_t node,
                                               const char *attr);
/* Its graph attribute number i (0 .. ngraphs - 1): the attribute's name, and
 * the graph (NULL for an index out of range). */
D5_API const d5_network *d5_network_node_graph_at(const d5_network *net, int32_t node, int32_t i,
                                                  const char **attr);
/* 1 when the network has control flow, sequences or optionals: subgraphs,
 * their operators, or graph inputs and outputs other than tensors. The
 * executor resolves them at create (executor.h); the optimisation passes
 * leave such networks alone. */
D5_API int d5_network_has_control_flow(const d5_network *net);

/* ---- Shapes ---------------------------------------------------------------------- */

/* Gives the symbolic dimension `dim_param` ("N", "batch_size") the size `size`
 * in every graph input. D5_ERR_NOTFOUND when no input has it. */
D5_API D5_NODISCARD d5_status d5_network_bind_dim(d5_network *net, const char *dim_param,
                                                  int64_t size);
/* Sets the first dimension of every graph input whose first dimension is
 * unknown or symbolic, and of every graph input when `force` is 1 (a model
 * exported at batch 1 run at batch 64). */
D5_API D5_NODISCARD d5_status d5_network_set_batch(d5_network *net, int64_t batch, int force);
/* Replaces the descriptor of graph input `name`. */
D5_API D5_NODISCARD d5_status d5_network_set_input_desc(d5_network *net, const char *name,
                                                        const d5_tensor_desc *desc);
/* Infers the descriptor of every value from the graph inputs, walking the
 * nodes in topological order through the reference operators' shape inference
 * (evaluating nodes whose inputs are all constant, such as Shape -> Gather ->
 * Concat -> Reshape chains). D5_ERR_SHAPE / D5_ERR_UNSUPPORTED / D5_ERR_INVALID
 * name the node and operator at fault; a graph input with an unknown dimension
 * is D5_ERR_SHAPE naming it and its dim_param. A network with control flow
 * (d5_network_has_control_flow) is D5_ERR_UNSUPPORTED: its shapes depend on
 * the values the executor binds at create. */
D5_API D5_NODISCARD d5_status d5_network_infer_shapes(d5_network *net);

/* ---- Graph optimisation ---------------------------------------------------------- */

/* Passes that rewrite a network for inference before an executor compiles it.
 * Each keeps every graph output equal to the unoptimised graph's within
 * float32 rounding; several change parameters (a BatchNormalization folded
 * into the convolution before it), so an optimised network is for inference,
 * not for training. Constant subgraphs are folded by the executor itself.
 *
 *   level  pass                 what it does
 *   basic  eliminate-identity   Identity, and Dropout at inference, removed; readers rewired
 *   basic  fold-batchnorm       BatchNormalization (inference) after a Conv folded into its
 *                               weights and bias
 *   all    fuse-conv-activation Conv -> Relu, Conv -> Add(Z) [-> Relu] become one FusedConv
 *                               (Z of the convolution's output shape), named conv+add+relu
 *   all    fuse-gelu            x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5 (PyTorch's GELU; the
 *                               multiplications in either order) becomes one Gelu (opset 20's
 *                               operator, approximate "none"), named erf+gelu
 *   all    fold-transpose-matmul MatMul(Transpose(A), Transpose(B)) (either or both) becomes
 *                               d5's TransposeMatMul(A, B) with perm_a, perm_b: the backends
 *                               read the operands through strides
 *   all    fuse-matmul-scale    MatMul or TransposeMatMul -> Div or Mul by a float32 scalar
 *                               constant becomes TransposeMatMul with alpha
 *   all    fuse-matmul-bias     MatMul or TransposeMatMul -> Add(C), C a float32 initializer
 *                               of one value per column, becomes TransposeMatMul(A, B, C)
 *   all    fuse-attention       Reshape to heads -> TransposeMatMul(Q, K) [-> mask] -> Softmax
 *                               -> TransposeMatMul(P, V) -> Transpose -> Reshape, from 1024
 *                               keys on, becomes one Attention (opset 23) on the 3-d Q, K, V
 *
 * A pass leaves alone what it cannot prove equal: a value that is a graph
 * output or read by more than one node, weights that are graph inputs, types
 * other than float32. */
typedef enum d5_optimize_level {
    D5_OPTIMIZE_NONE = 0,
    D5_OPTIMIZE_BASIC = 1,
    D5_OPTIMIZE_ALL = 2
} d5_optimize_level;

#define D5_OPTIMIZE_MAX_PASSES 16

typedef struct d5_optimize_report {
    int32_t level; /* a d5_optimize_level */
    int32_t nodes_before, nodes_after;
    int32_t npasses; /* the passes of the level, in the order they ran */
    struct {
        const char *name; /* "fold-batchnorm" */
        int32_t applied;  /* rewrites made */
    } passes[D5_OPTIMIZE_MAX_PASSES];
} d5_optimize_report;

/* "none", "basic", "all"; D5_ERR_INVALID naming what was given otherwise. */
D5_API D5_NODISCARD d5_status d5_optimize_parse(const char *text, d5_optimize_level *level);
D5_API const char *d5_optimize_name(d5_optimize_level level);
/* Runs the passes of `level` and below; report (may be NULL) says what each did.
 * On failure the network may be partly rewritten (every rewrite keeps it valid). */
D5_API D5_NODISCARD d5_status d5_network_optimize(d5_network *net, d5_optimize_level level,
                                                  d5_optimize_report *report);

/* Attribute a network passes to every operator it creates: the opset version. */
#define D5_ATTR_OPSET "__opset"

#ifdef __cplusplus
}
#endif
#endif
