/* What the graph optimisation passes share (optimize.c; a pass of its own
 * file, such as optimize_attention.c, includes this): the graph's links and
 * the lookups the fusions are written with. Internal to level 1. */
#ifndef D5_OPTIMIZE_INTERNAL_H
#define D5_OPTIMIZE_INTERNAL_H

#include "network_internal.h"

/* What the fusion passes read of the graph's links: how many node inputs read
 * each value, the last node that reads it, the node that writes it (-1 for
 * none), and the nodes a pass removes. */
typedef struct links {
    int32_t *count, *reader, *producer;
    unsigned char *dead;
} links;

/* A fusion pass: `one` tried on node i, which it may rewrite, marking the
 * nodes it absorbs in l->dead and counting in *applied. */
typedef d5_status (*fuse_fn)(d5_network *net, int32_t i, links *l, int32_t *applied);

/* The index of the value called `name`, -1 for none (or ""). */
int32_t d5__opt_value(const d5_network *net, const char *name);
/* 1 when node n runs op_type (in the default domain). */
int d5__opt_is(const d5__node *n, const char *op_type);
/* The node that alone reads value v (v not a graph output) when it is not
 * removed and, with op_type, is that operator; else -1. */
int32_t d5__opt_next(const d5_network *net, const links *l, int32_t v, const char *op_type);
/* The node that alone writes value v, read once and no graph output, when it
 * is op_type with one output and not removed; else -1. */
int32_t d5__opt_prev(const d5_network *net, const links *l, int32_t v, const char *op_type);
/* The value of the float32 scalar initializer (or one-element Constant)
 * behind input `slot` of n, in *out; 0 when there is none. */
int d5__opt_scalar(d5_network *net, const d5__node *n, int32_t slot, double *out);

/* fuse-attention (optimize_attention.c). */
d5_status d5__opt_fuse_attention(d5_network *net, int32_t si, links *l, int32_t *applied);

#endif
