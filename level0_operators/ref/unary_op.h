/* One-line definitions of element-wise unary operators without attributes
 * (Sin, Floor, Softsign, ...) on top of the machinery in unary.h: an operator
 * file writes its scalar function and derivative as a d5_unary_fn and ends
 * with D5_UNARY_OPERATOR(Name, fn). The input is float32 or float64 and the
 * output has its shape and data type. */
#ifndef D5_REF_UNARY_OP_H
#define D5_REF_UNARY_OP_H

#include "unary.h"

#define D5_UNARY_OPERATOR(NAME, FN)                                                                \
    static d5_status NAME##_create(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,        \
                                   d5_tensor_desc *out, int32_t nout, void **state)                \
    {                                                                                              \
        (void)attrs;                                                                               \
        (void)nout;                                                                                \
        (void)state;                                                                               \
        return d5__unary_create(#NAME, in, nin, out);                                              \
    }                                                                                              \
    static d5_status NAME##_forward(void *state, const d5_rt *in, int32_t nin, d5_rt *out,         \
                                    int32_t nout)                                                  \
    {                                                                                              \
        (void)state;                                                                               \
        (void)nin;                                                                                 \
        (void)nout;                                                                                \
        return d5__unary_forward(&FN, 0, in, out);                                                 \
    }                                                                                              \
    static d5_status NAME##_backward(void *state, const d5_rt *gout, int32_t nout,                 \
                                     const d5_rt *in, int32_t nin, const d5_rt *out, d5_rt *gin)   \
    {                                                                                              \
        (void)state;                                                                               \
        (void)nout;                                                                                \
        (void)nin;                                                                                 \
        return d5__unary_backward(&FN, 0, gout, in, out, gin);                                     \
    }                                                                                              \
    D5_REF_OPERATOR(NAME, 1, 1, 1, 1, NAME##_create, NAME##_forward, NAME##_backward, NULL,        \
                    d5__unary_flops)

#endif
