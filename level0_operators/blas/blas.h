/* The blas backend: float32 operators on OpenBLAS's sgemm. */
#ifndef D5_BLAS_H
#define D5_BLAS_H

#include "d5/operator.h"

/* C (m x n, row-major) = alpha * op(A) op(B) + beta * C with leading dimensions
 * of the row-major operands; a thin wrapper of cblas_sgemm. */
void d5__sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc);
/* Checks that input i is present and float32. */
d5_status d5__blas_need_f32(const char *op, const d5_tensor *in, int32_t nin, int32_t i);

#endif
