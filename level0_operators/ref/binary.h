/* Shared machinery of the element-wise binary operators with numpy
 * broadcasting (Add, Sub, Mul, Div, Pow, ...): each operator file supplies the
 * scalar function and its two partial derivatives. */
#ifndef D5_REF_BINARY_H
#define D5_REF_BINARY_H

#include "util.h"

typedef struct d5_binary_fn {
    const char *name;
    double (*f)(double a, double b);
    double (*da)(double a, double b, double y); /* dy/da at (a, b), y = f(a, b) */
    double (*db)(double a, double b, double y); /* dy/db */
} d5_binary_fn;

d5_status d5__binary_create(const char *name, const d5_tensor *in, int32_t nin,
                            d5_tensor_desc *out);
d5_status d5__binary_forward(const d5_binary_fn *fn, const d5_rt *in, d5_rt *out);
/* Gradients are summed over the axes an input was broadcast along. */
d5_status d5__binary_backward(const d5_binary_fn *fn, const d5_rt *gout, const d5_rt *in,
                              const d5_rt *out, d5_rt *gin);

#endif
