/* Helpers of the tests of ref/ops_more.def (test_ref_more.c, test_ref_indexing.c)
 * and of the graph operators (test_ref_graph.c). */
#ifndef D5_TEST_MORE_SUPPORT_H
#define D5_TEST_MORE_SUPPORT_H

#include "op_support.h"

#define DV(...) ((const double[]){__VA_ARGS__})
/* A d5_attrs of the attributes listed, for the duration of the call. */
#define ATTRS(...)                                                                                 \
    (&(const d5_attrs){(const d5_attr[]){__VA_ARGS__},                                             \
                       (int32_t)(sizeof((const d5_attr[]){__VA_ARGS__}) / sizeof(d5_attr))})
#define OPSET(v) attr_int("__opset", v)

/* A tensor of any data type holding `values` (NULL: zeros), converted with C casts. */
d5_tensor tmake(d5_dtype dt, int32_t ndim, const int64_t *shape, const double *values);
d5_tensor f64(int32_t ndim, const int64_t *shape, const double *values);
double element(const d5_tensor *t, int64_t i);
/* Asserts the data type, shape and values of a tensor: |got - want| <= abs_tol +
 * rel_tol * |want|, equal infinities, or both NaN. `what` starts each message. */
void expect_tensor_within(const d5_tensor *y, d5_dtype dt, int32_t ndim, const int64_t *shape,
                          const double *want, double abs_tol, double rel_tol, const char *what);
/* expect_tensor_within with abs_tol = rel_tol = tol: |got - want| <= tol * (1 + |want|). */
void expect_tensor(const d5_tensor *y, d5_dtype dt, int32_t ndim, const int64_t *shape,
                   const double *want, double tol, const char *what);
/* Runs a one-output ref operator, checks its output with expect_tensor_within,
 * frees the inputs and output. */
void check_within(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_dtype dt,
                  int32_t ndim, const int64_t *shape, const double *want, double abs_tol,
                  double rel_tol);
/* check_within with tol * (1 + |want|), tol 1e-6 for float32 and 1e-12 otherwise. */
void check(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_dtype dt,
           int32_t ndim, const int64_t *shape, const double *want);
/* Runs an operator that must fail with `status` and a message containing
 * `text`; frees the inputs. */
void check_fails(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                 d5_status status, const char *text);
/* Creates `op` with every input given (data and all, float ones too: known at
 * create), runs forward, and when gout is not NULL backward into gin (one
 * tensor per input, allocated here; freed by the caller). Returns the status
 * of the first step that failed. */
d5_status run_known(const char *name, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                    d5_tensor *y, const d5_tensor *gout, d5_tensor *gin);
/* Creates `op` with no input known at create and returns the status. */
d5_status create_unknown(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs);

#endif
