/* What the tests of the graph optimisation passes share (optimize_support.c). */
#ifndef D5_TEST_OPTIMIZE_SUPPORT_H
#define D5_TEST_OPTIMIZE_SUPPORT_H

#include "support.h"

/* How many nodes of net run op_type. */
int count_op(const d5_network *net, const char *op_type);
/* Runs net on seeded inputs with the backends `backend` (NULL: the default
 * list) and returns a copy (malloc) of output 0, of *n elements. */
float *run_output(d5_network *net, const char *backend, int64_t *n);
/* Optimises a clone of net at `level` and checks its output 0 against net's
 * on the default backends, on blas and, with `ref`, on ref too. */
d5_optimize_report compare_on(d5_network *net, d5_optimize_level level, int ref);
d5_optimize_report optimise_and_compare(d5_network *net, d5_optimize_level level);
/* The rewrites the pass named `pass` made, in r; -1 when it did not run. */
int32_t applied(const d5_optimize_report *r, const char *pass);
/* Optimises net (level all, checked against the unoptimised graph first),
 * expects one node left and describes it in *out; returns the rewrites of
 * `pass`. */
int32_t fused_to_one(d5_network *net, const char *pass, d5_node_info *out);

/* Small graphs built by hand: a float32 descriptor, an initializer of
 * `shape` with values from `base`, a node of one output, and an empty
 * network of `opset` with the float32 input x of `shape`. */
d5_tensor_desc desc(int32_t ndim, const int64_t *shape);
void add_f32(d5_network *net, const char *name, int32_t ndim, const int64_t *shape, float base);
void node(d5_network *net, const char *name, const char *op, const char *const *in, int32_t nin,
          const char *out, const d5_attrs *attrs);
d5_network *graph(const char *name, int opset, int32_t ndim, const int64_t *shape);

#endif
