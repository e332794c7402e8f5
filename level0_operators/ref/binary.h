/* Shared machinery of the element-wise binary operators with numpy
 * broadcasting (Add, Sub, Mul, Div, Pow, ...), comparisons (Equal, Less,
 * Greater) and logic (And, Or, Xor): each operator file supplies the scalar
 * function and, where it has a gradient, its two partial derivatives. */
#ifndef D5_REF_BINARY_H
#define D5_REF_BINARY_H

#include "util.h"

/* The data types a binary operator takes; both inputs have the same one. */
typedef enum d5_binary_inputs {
    D5_BINARY_FLOAT,   /* floating point, and the output alike */
    D5_BINARY_ARITH,   /* any but bool, and the output alike; integer results
                          wrap around (d5__int_wrap), Div's truncate toward 0
                          (Add, Sub, Mul, Div) */
    D5_BINARY_NUMERIC, /* any but bool; the output is bool (Less, Greater) */
    D5_BINARY_ANY,     /* any, bool too; the output is bool (Equal) */
    D5_BINARY_BOOL     /* bool; the output is bool (And, Or, Xor) */
} d5_binary_inputs;

typedef struct d5_binary_fn {
    const char *name;
    double (*f)(double a, double b);
    double (*da)(double a, double b, double y); /* dy/da at (a, b), y = f(a, b) */
    double (*db)(double a, double b, double y); /* dy/db */
    d5_binary_inputs inputs;
} d5_binary_fn;

/* The partial derivative 1, whatever a, b and y (Add's, Sub's and Mod's
 * with respect to A; Add's with respect to B). */
double d5__binary_one(double a, double b, double y);

/* Checks the inputs as fn->inputs asks and broadcasts them into out[0]. The
 * state is fn itself (free it with d5__ref_keep). */
d5_status d5__binary_create(const d5_binary_fn *fn, const d5_tensor *in, int32_t nin,
                            const d5_attrs *attrs, d5_tensor_desc *out, void **state);
/* The kernels of an operator whose state is its d5_binary_fn. Forward
 * wraps integer outputs into their type (d5__wrap_ints). */
d5_status d5__binary_forward(void *state, const d5_ref_call *call);
d5_status d5__binary_backward(void *state, const d5_ref_call *call);
/* out = fn->f(in[0], in[1]) broadcast. */
void d5__binary_eval(const d5_binary_fn *fn, const d5_rt *in, d5_rt *out);
/* The gradients of d5__binary_eval, summed over the axes an input was
 * broadcast along. */
void d5__binary_grad(const d5_binary_fn *fn, const d5_rt *gout, const d5_rt *in, const d5_rt *out,
                     d5_rt *gin);
/* One FLOP per output element. */
double d5__binary_flops(void *state, const d5_ref_shapes *shapes);

/* Defines the operator table d5__op_ref_<NAME> of a differentiable binary
 * operator from its d5_binary_fn FN. */
#define D5_BINARY_OPERATOR(NAME, FN)                                                               \
    D5_REF_CREATE_WITH(NAME, d5__binary_create, FN)                                                \
    D5_REF_OPERATOR(NAME, 2, 2, 1, 1, NAME##_create, d5__binary_forward, d5__binary_backward,      \
                    d5__ref_keep, d5__binary_flops)

/* The same for one without a gradient (comparisons and logic): da and db
 * are unused. */
#define D5_BINARY_OPERATOR_NO_BACKWARD(NAME, FN)                                                   \
    D5_REF_CREATE_WITH(NAME, d5__binary_create, FN)                                                \
    D5_REF_OPERATOR_NO_BACKWARD(NAME, 2, 2, 1, 1, NAME##_create, d5__binary_forward, d5__ref_keep, \
                                d5__binary_flops)

#endif
