/* Shared machinery of the element-wise unary operators (Sigmoid, Tanh, Exp,
 * LeakyRelu, ...): each operator file supplies the scalar function and its
 * derivative as a d5_unary_fn and ends with D5_UNARY_OPERATOR(Name, fn). The
 * input is floating point unless the d5_unary_fn names more types (Abs, Neg,
 * Erf), and the output has its shape and data type; integer results wrap
 * into the type (d5__int_wrap: Abs and Neg of int8 -128 give -128). */
#ifndef D5_REF_UNARY_H
#define D5_REF_UNARY_H

#include "util.h"

typedef struct d5_unary_fn {
    const char *name;
    double (*f)(double x, double alpha);
    double (*df)(double x, double y, double alpha); /* dy/dx at x, y = f(x, alpha) */
    /* The float attributes read at create (NULL: none) and their defaults;
     * f and df get the first as `alpha` (0 when there is none). */
    const char *attr[2];
    double def[2];
    d5_dtypes types; /* the input's data types; 0: D5__FLOATS */
} d5_unary_fn;

/* The state of an operator created by d5__unary_op_create. */
typedef struct d5_unary_state {
    const d5_unary_fn *fn;
    double attr[2]; /* the values of fn->attr */
} d5_unary_state;

/* Checks that input 0 is floating point; the output has its shape and dtype. */
d5_status d5__unary_create(const char *name, const d5_tensor *in, int32_t nin, d5_tensor_desc *out);
/* Checks input 0 against fn->types, then reads fn's attributes into a
 * d5_unary_state. */
d5_status d5__unary_op_create(const d5_unary_fn *fn, const d5_tensor *in, int32_t nin,
                              const d5_attrs *attrs, d5_tensor_desc *out, void **state);
/* The kernels of a d5_unary_state: y = f(x, alpha), gx += gy * df(x, y, alpha). */
d5_status d5__unary_forward(void *state, const d5_ref_call *call);
d5_status d5__unary_backward(void *state, const d5_ref_call *call);

/* Defines the operator table d5__op_ref_<NAME> of a unary operator from its
 * d5_unary_fn FN. */
#define D5_UNARY_OPERATOR(NAME, FN)                                                                \
    D5_REF_CREATE_WITH(NAME, d5__unary_op_create, FN)                                              \
    D5_REF_OPERATOR(NAME, 1, 1, 1, 1, NAME##_create, d5__unary_forward, d5__unary_backward, NULL,  \
                    d5__flops_per_input)

#endif
