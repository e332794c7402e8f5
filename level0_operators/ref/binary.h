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
/* One FLOP per output element. */
double d5__binary_flops(void *state, const d5_tensor_desc *in, int32_t nin,
                        const d5_tensor_desc *out, int32_t nout);

/* The comparisons (Equal, Less, Greater): checks that both inputs are present
 * and of one data type (numeric, or bool too when allow_bool) and broadcasts
 * them into a bool output. Their d5_binary_fn gives f = 1 or 0 and no
 * derivatives: they have no gradient. */
d5_status d5__compare_create(const char *name, const d5_tensor *in, int32_t nin, int allow_bool,
                             d5_tensor_desc *out);

/* Defines the operator table d5__op_ref_<NAME> of a broadcasting binary
 * operator from its d5_binary_fn FN. */
#define D5_BINARY_OPERATOR(NAME, FN)                                                               \
    static d5_status NAME##_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,        \
                                   d5_tensor_desc *out, int32_t nout, void **state)                \
    {                                                                                              \
        (void)attrs;                                                                               \
        (void)nout;                                                                                \
        (void)state;                                                                               \
        return d5__binary_create(#NAME, in, nin, out);                                             \
    }                                                                                              \
    static d5_status NAME##_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,         \
                                    int32_t nout)                                                  \
    {                                                                                              \
        (void)state;                                                                               \
        (void)nin;                                                                                 \
        (void)nout;                                                                                \
        return d5__binary_forward(&FN, in, out);                                                   \
    }                                                                                              \
    static d5_status NAME##_backward(void *state, const d5_rt *gout, int32_t nout,                 \
                                     const d5_rt *in, int32_t nin, const d5_rt *out, d5_rt *gin)   \
    {                                                                                              \
        (void)state;                                                                               \
        (void)nout;                                                                                \
        (void)nin;                                                                                 \
        return d5__binary_backward(&FN, gout, in, out, gin);                                       \
    }                                                                                              \
    D5_REF_OPERATOR(NAME, 2, 2, 1, 1, NAME##_create, NAME##_forward, NAME##_backward, NULL,        \
                    d5__binary_flops)

/* Defines the operator table d5__op_ref_<NAME> of a broadcasting comparison
 * from its d5_binary_fn FN (da and db unused); ALLOW_BOOL as in
 * d5__compare_create. */
#define D5_COMPARE_OPERATOR(NAME, FN, ALLOW_BOOL)                                                  \
    static d5_status NAME##_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,        \
                                   d5_tensor_desc *out, int32_t nout, void **state)                \
    {                                                                                              \
        (void)attrs;                                                                               \
        (void)nout;                                                                                \
        (void)state;                                                                               \
        return d5__compare_create(#NAME, in, nin, ALLOW_BOOL, out);                                \
    }                                                                                              \
    static d5_status NAME##_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,         \
                                    int32_t nout)                                                  \
    {                                                                                              \
        (void)state;                                                                               \
        (void)nin;                                                                                 \
        (void)nout;                                                                                \
        return d5__binary_forward(&FN, in, out);                                                   \
    }                                                                                              \
    D5_REF_OPERATOR_NO_BACKWARD(NAME, 2, 2, 1, 1, NAME##_create, NAME##_forward, NULL,             \
                                d5__binary_flops)

#endif
