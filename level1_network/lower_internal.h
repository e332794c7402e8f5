/* Control flow, sequences and optionals resolved at create: lower.c walks the
 * graphs and emits tensor nodes; lower_ops.c has the rule of each operator
 * the walk resolves itself (If, Loop, Scan, SequenceMap, Sequence*,
 * Optional*). */
#ifndef D5_LOWER_INTERNAL_H
#define D5_LOWER_INTERNAL_H

#include "executor_internal.h"

#include <string.h>

/* What a value of the source graphs is in the network being built: a tensor
 * (n 1), a sequence (n tensors), an optional (present, then its tensor or
 * its sequence). names[] are value names of the network being built. */
typedef struct d5__lval {
    int32_t type; /* d5_type */
    int32_t present;
    int32_t dtype; /* the elements' d5_dtype; an empty sequence keeps it */
    int32_t n;
    char **names;
} d5__lval;

/* The values of one graph instance, by source name; lookups go on to the
 * graphs around it. */
typedef struct d5__scope {
    const struct d5__scope *parent;
    const d5_network *body; /* the graph whose initializers it holds (a body scope), or NULL */
    char **keys;
    d5__lval *vals;
    int32_t n, cap;
} d5__scope;

typedef struct d5__lowerer {
    const d5_network *top; /* the network given */
    d5_network *out;       /* the network built */
    int64_t counter;       /* for names of nodes the rules add */
    int variable;          /* floating-point initializers are parameters: never folded */
} d5__lowerer;

/* Nodes and values an unrolled network may have. */
#define D5__LOWER_MAX_NODES ((int64_t)1 << 20)
/* D5_ERR_UNSUPPORTED naming `label` once the network built holds more nodes
 * and values than D5__LOWER_MAX_NODES: checked at every iteration. */
d5_status d5__lower_budget(const d5__lowerer *L, const char *label);

void d5__lval_clear(d5__lval *v);
d5_status d5__lval_copy(const d5__lval *src, d5__lval *dst);
/* *v becomes the tensor `name` (a copy). */
d5_status d5__lval_tensor(d5__lval *v, const char *name);
/* Appends tensor `name` to a sequence (or optional). */
d5_status d5__lval_push(d5__lval *v, const char *name);

/* Binds key to *v, which the scope takes (v is cleared). */
d5_status d5__scope_put(d5__scope *sc, const char *key, d5__lval *v);
const d5__lval *d5__scope_get(const d5__scope *sc, const char *key);
void d5__scope_free(d5__scope *sc);

/* The value `name` of the network built, NULL when there is none. */
const d5__value *d5__lower_value(const d5__lowerer *L, const char *name);
/* An integer or bool initializer of one element as int64; D5_ERR_UNSUPPORTED
 * (naming `label`, `role` and the value) when `name` is not constant at create. */
d5_status d5__lower_const_int(const d5__lowerer *L, const char *name, const char *label,
                              const char *role, int64_t *x);
/* A name no value or node of the network built has: "<base>/<what>_<k>". */
void d5__lower_fresh(d5__lowerer *L, const char *base, const char *what, char *buf, size_t size);
/* Adds an initializer (copied) of int64 values: a scalar when scalar is 1,
 * else a vector of n; or a bool scalar. */
d5_status d5__lower_i64(d5__lowerer *L, const char *name, const int64_t *v, int32_t n, int scalar);
d5_status d5__lower_bool(d5__lowerer *L, const char *name, int b);
/* Adds a tensor node to the network built, evaluating it at once when its
 * inputs are constants and its outputs small (they become initializers), and
 * recording its outputs' descriptors through the ref operator's inference. */
d5_status d5__lower_emit(d5__lowerer *L, const char *name, const char *op_type,
                         const char *const *in, int32_t nin, const char *const *out, int32_t nout,
                         const d5_attr *attrs, int32_t nattrs);
/* Runs subgraph g once: binds its inputs to args[0..nargs-1], names what it
 * adds "<prefix><name>", and gives its first nres outputs. Its initializers
 * are copied in, unless `parent` is a scope of d5__lower_body_scope for g. */
d5_status d5__lower_graph(d5__lowerer *L, const d5_network *g, const d5__scope *parent,
                          const char *prefix, const d5__lval *args, int32_t nargs, d5__lval *res,
                          int32_t nres, const char *label);
/* The scope of a loop's body g (Loop, Scan, SequenceMap), child of `parent`:
 * g's initializers, once, named "<prefix><name>", which every iteration then
 * reads (one parameter, whose gradient sums over the iterations). Free with
 * d5__scope_free. */
d5_status d5__lower_body_scope(d5__lowerer *L, const d5_network *g, const d5__scope *parent,
                               const char *prefix, d5__scope *out);

/* The rule of a control node (lower_ops.c): in[k] is the value of input k
 * (NULL when omitted); out[0..nout-1] receive the node's outputs. base is
 * "<prefix><node name>", for the names of what it adds. */
d5_status d5__lower_control(d5__lowerer *L, const d5__node *n, const d5__scope *sc,
                            const char *base, const char *label, const d5__lval *const *in,
                            d5__lval *out);

/* An INT attribute (a node the rules emit). */
static inline d5_attr d5__lower_int_attr(const char *name, int64_t i)
{
    d5_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = D5_ATTR_INT;
    a.i = i;
    return a;
}

/* FlexAttention of ai.onnx.preview (lower_attention.c): its nodes, score_mod
 * and prob_mod inlined; in[0..2] are Q, K, V. */
d5_status d5__lower_flex_attention(d5__lowerer *L, const d5__node *n, const d5__scope *sc,
                                   const char *base, const char *label, const d5__lval *const *in,
                                   d5__lval *out);

#endif
