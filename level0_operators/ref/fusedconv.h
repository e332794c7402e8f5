/* FusedConv's attributes and inputs, read alike by every backend (ref/fusedconv.c). */
#ifndef D5_REF_FUSEDCONV_H
#define D5_REF_FUSEDCONV_H

#include "d5/operator.h"

typedef struct d5__fusion {
    int relu; /* activation "Relu" */
    int sum;  /* Z given: added before the activation */
} d5__fusion;

/* Exported for the cuda plugin. Reads the activation attribute (Relu or none; others
 * D5_ERR_UNSUPPORTED) and whether input 3 (Z) is given. */
D5_API d5_status d5__fusion_read(const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                                 d5__fusion *f);
/* D5_ERR_SHAPE unless Z, when given, has the descriptor y of the output. */
D5_API d5_status d5__fusion_check_z(const d5_tensor *in, int32_t nin, const d5_tensor_desc *y);

/* A FusedConv made of a backend's Conv (`conv_op`) followed by one pass that
 * adds Z and applies the activation: the operator functions of the ref and
 * blas FusedConv. */
d5_status d5__fused_create(const d5_op_desc *conv_op, const d5_tensor *in, int32_t nin,
                           const d5_attrs *attrs, d5_tensor_desc *out, int32_t nout, void **state);
d5_status d5__fused_forward(void *state, const d5_op_call *call);
void d5__fused_destroy(void *state);
void d5__fused_cost(void *state, double *flops, double *bytes);

#endif
