/* Helpers for operator tests: tensors from literals, running an operator,
 * and the gradient check as an assertion. */
#ifndef D5_TEST_OP_SUPPORT_H
#define D5_TEST_OP_SUPPORT_H

#include "d5/d5.h"

/* A float32 tensor of the given shape holding `values` (NULL: zeros). Free with
 * d5_tensor_free. */
d5_tensor tf32(int32_t ndim, const int64_t *shape, const float *values);
/* An int64 tensor (for shapes, axes, indices). */
d5_tensor ti64(int32_t ndim, const int64_t *shape, const int64_t *values);
/* A tensor of any type holding the bytes at `values` (its element count
 * times the type's size; NULL for none). */
d5_tensor traw(d5_dtype dt, int32_t ndim, const int64_t *shape, const void *values);
/* A string tensor of the given words (NUL-terminated, NULL for ""), in one
 * block (d5_tensor_strings). */
d5_tensor tstr(int32_t ndim, const int64_t *shape, const char *const *words);
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...)  ((const float[]){__VA_ARGS__})
#define IVALS(...) ((const int64_t[]){__VA_ARGS__})

/* Skips the test where `backend` is not built or not loadable, saying why;
 * need_dnnl is need_backend("dnnl"). */
void need_backend(const char *backend);
void need_dnnl(void);

/* Attribute constructors. */
d5_attr attr_int(const char *name, int64_t v);
d5_attr attr_float(const char *name, double v);
d5_attr attr_string(const char *name, const char *v);
d5_attr attr_ints(const char *name, const int64_t *v, int64_t n);
d5_attr attr_floats(const char *name, const double *v, int64_t n);

/* Runs `name` on `backend` with inputs; allocates outputs (freed by the caller
 * with d5_tensor_free); asserts success. */
void run_op(const char *name, const char *backend, const d5_tensor *in, int32_t nin,
            const d5_attrs *attrs, d5_tensor *out, int32_t nout);
/* As run_op, returning the status of create or forward instead of asserting. */
d5_status try_op(const char *name, const char *backend, const d5_tensor *in, int32_t nin,
                 const d5_attrs *attrs, d5_tensor *out, int32_t nout);
/* Asserts |got - want| <= tol element-wise, with the index of the first miss. */
void expect_values(const d5_tensor *got, const float *want, int64_t n, double tol);
/* Runs the one-output ref operator `name` on `in` and expects its n values
 * to be `want` (as expect_values); the output freed, the inputs left. */
void expect_op_values(const char *name, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                      const float *want, int64_t n, double tol);
/* Asserts that the ref operator's backward matches central differences in
 * float64 on inputs drawn in [-1, 1] (or `given` where not NULL). */
void expect_gradient(const char *name, const d5_tensor_desc *in, int32_t nin,
                     const d5_tensor *given, const d5_attrs *attrs, int32_t nout);
/* expect_gradient of a two-input operator with respect to its float32 input 0
 * of `shape`, input 1 being `given` (an index, shape or mask tensor; left to
 * the caller). */
void expect_gradient_given(const char *name, int32_t ndim, const int64_t *shape,
                           const d5_tensor *given, const d5_attrs *attrs, int32_t nout);
/* Checks `name` on `backend` against ref on the same random inputs, forward
 * and then the gradient of every input, with the tolerances of p (NULL: the
 * defaults); the messages name the operator, the backend and the worst
 * element. */
void expect_same_as_ref(const char *backend, const char *name, const d5_tensor_desc *in,
                        int32_t nin, const d5_attrs *attrs, const d5_check_params *p);
/* As expect_gradient, its messages naming `label` (say, the case of a table)
 * instead of the operator. */
void expect_gradient_of(const char *label, const char *name, const d5_tensor_desc *in, int32_t nin,
                        const d5_tensor *given, const d5_attrs *attrs, int32_t nout);

/* The shape operators' tests (test_ref_shape*.c): a float32 descriptor; a
 * float32 tensor holding 0, 1, 2, ...; freeing n tensors; asserting a shape;
 * running a one-output ref operator and checking its shape and values (the
 * inputs and output freed); and running one that must fail with `status` and
 * an error containing `text` (the inputs freed). */
d5_tensor_desc op_fdesc(int32_t ndim, const int64_t *shape);
d5_tensor op_iota(int32_t ndim, const int64_t *shape);
void op_free_all(d5_tensor *t, int32_t n);
void op_expect_shape(const d5_tensor *t, int32_t ndim, const int64_t *shape);
void op_check(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, int32_t ndim,
              const int64_t *shape, const float *want);
void op_check_fails(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, int32_t nout,
                    d5_status status, const char *text);
/* As op_check_fails, leaving the inputs to the caller. */
void op_expect_fails(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                     int32_t nout, d5_status status, const char *text);

/* Attributes `extra` (at most 3, copied) plus "__opset" = opset, as a network
 * passes them to an operator of an older opset; with_opset returns &o->attrs,
 * valid while `o` is. */
typedef struct opset_attrs {
    d5_attr items[4];
    d5_attrs attrs;
} opset_attrs;
const d5_attrs *with_opset(opset_attrs *o, int64_t opset, const d5_attr *extra, int32_t n);

#endif
