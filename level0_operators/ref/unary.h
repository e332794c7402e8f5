/* Shared machinery of the element-wise unary operators (Sigmoid, Tanh, Exp,
 * LeakyRelu, ...): each operator file supplies the scalar function and its
 * derivative. `alpha` is the operator's float attribute where it has one
 * (LeakyRelu, Elu) and is ignored otherwise. */
#ifndef D5_REF_UNARY_H
#define D5_REF_UNARY_H

#include "util.h"

typedef struct d5_unary_fn {
    const char *name;
    double (*f)(double x, double alpha);
    double (*df)(double x, double y, double alpha); /* dy/dx at x, y = f(x, alpha) */
} d5_unary_fn;

/* Checks that input 0 is floating point; the output has its shape and dtype. */
d5_status d5__unary_create(const char *name, const d5_tensor *in, int32_t nin, d5_tensor_desc *out);
/* Reads the float attribute `alpha` (default `def`) into a state holding one
 * double, for the operators that have one. */
d5_status d5__unary_alpha(const d5_attrs *attrs, double def, void **state);
d5_status d5__unary_forward(const d5_unary_fn *fn, double alpha, const d5_rt *in, d5_rt *out);
d5_status d5__unary_backward(const d5_unary_fn *fn, double alpha, const d5_rt *gout,
                             const d5_rt *in, const d5_rt *out, d5_rt *gin);
/* One operation per element. */
double d5__unary_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                       const d5_tensor_desc *out, int32_t nout);

#endif
