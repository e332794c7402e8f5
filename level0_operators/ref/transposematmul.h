/* TransposeMatMul, d5's operator that the graph passes fold-transpose-matmul,
 * fuse-matmul-scale and fuse-matmul-bias write: Y = alpha MatMul(Transpose(A,
 * perm_a), Transpose(B, perm_b)) + C, each attribute optional (absent: that
 * operand as it is; alpha 1), the optional input C broadcast into the product
 * (a bias of N values). Read alike by every backend (ref/transposematmul.c). */
#ifndef D5_REF_TRANSPOSEMATMUL_H
#define D5_REF_TRANSPOSEMATMUL_H

#include "d5/operator.h"

/* perm_a (k = 0) or perm_b (k = 1) of an operand of rank `ndim`: *perm is
 * NULL when absent; D5_ERR_INVALID when it is not a permutation of 0..ndim-1. */
D5_API d5_status d5__tmm_perm(const d5_attrs *attrs, int32_t k, int32_t ndim, const int64_t **perm);

/* A TransposeMatMul made of a backend's Transpose, MatMul and Add with
 * scratch tensors in between: the ref operator, and the dnnl one when
 * oneDNN's matmul does not take the strided operands or the bias. */
d5_status d5__tmm_create(const d5_op_desc *transpose, const d5_op_desc *matmul,
                         const d5_op_desc *add, const d5_tensor *in, int32_t nin,
                         const d5_attrs *attrs, d5_tensor_desc *out, void **state);
d5_status d5__tmm_forward(void *state, const d5_op_call *call);
void d5__tmm_destroy(void *state);
void d5__tmm_cost(void *state, double *flops, double *bytes);

#endif
