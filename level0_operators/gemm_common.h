/* Gemm on a row-major sgemm, shared by the backends that have one. */
#ifndef D5_GEMM_COMMON_H
#define D5_GEMM_COMMON_H

#include "d5/operator.h"

/* C (m x n) = alpha op(A) op(B) + beta C, all row-major with leading dimensions. */
typedef void (*d5_sgemm_fn)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                            const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                            float *c, int64_t ldc);

typedef struct bgemm bgemm;

/* Gemm's sizes and attributes: Y (m x n) = alpha A' (m x k) B' (k x n) + beta C,
 * C broadcast from (cm x cn); cm == 0 without C. */
typedef struct d5_gemm_dims {
    int64_t m, n, k;
    int ta, tb;
    float alpha, beta;
    int64_t cm, cn;
} d5_gemm_dims;

/* Reads transA, transB, alpha and beta and checks the shapes of A, B and the
 * optional C (any element type: the caller checks those). */
d5_status d5__gemm_dims(const d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_gemm_dims *out);

/* d5__gemm_create and d5__gemm_destroy are exported for the cuda plugin. */
D5_API d5_status d5__gemm_create(const char *backend, d5_sgemm_fn sgemm, const d5_tensor *in,
                                 int32_t nin, const d5_attrs *attrs, d5_tensor_desc *out,
                                 void **state);
d5_status d5__gemm_forward(void *state, const d5_op_call *call);
d5_status d5__gemm_backward(void *state, const d5_op_call *call);
void d5__gemm_cost(void *state, double *flops, double *bytes);
D5_API void d5__gemm_destroy(void *state);

/* The operator table of Gemm on one backend. */
#define D5_GEMM_OPERATOR(BACKEND, SGEMM)                                                           \
    static d5_status gemm_create_##BACKEND(const d5_op_create_args *args, void **state)            \
    {                                                                                              \
        return d5__gemm_create(#BACKEND, SGEMM, args->inputs, args->ninputs, args->attrs,          \
                               args->outputs, state);                                              \
    }                                                                                              \
    const d5_op_desc d5__op_##BACKEND##_Gemm = {.abi_version = D5_OP_ABI_VERSION,                  \
                                                .flags = D5_OP_HAS_BACKWARD,                       \
                                                .name = "Gemm",                                    \
                                                .backend = #BACKEND,                               \
                                                .min_inputs = 2,                                   \
                                                .max_inputs = 3,                                   \
                                                .min_outputs = 1,                                  \
                                                .max_outputs = 1,                                  \
                                                .create = gemm_create_##BACKEND,                   \
                                                .forward = d5__gemm_forward,                       \
                                                .backward = d5__gemm_backward,                     \
                                                .destroy = d5__gemm_destroy,                       \
                                                .cost = d5__gemm_cost}

#endif
