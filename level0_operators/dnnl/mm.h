/* One oneDNN matmul primitive on (batched) matrices in the caller's memory:
 * C = alpha op(A) op(B) (+ beta C), the transpositions and broadcasts given as
 * strides and dims of 1, the operands converted by reorders when the primitive
 * multiplies in another type than the caller's (a compute precision). Used by
 * the dnnl backend's Gemm and MatMul, forward and backward. */
#ifndef D5_DNNL_MM_H
#define D5_DNNL_MM_H

#include "dnnl_util.h"

typedef struct d5_dnnl_mm_shape {
    int ndims; /* 2 to DNNL_MAX_NDIMS: batch dims first, then rows and columns */
    /* A (..., M, K), B (..., K, N), C (..., M, N): a batch dim of 1 in A or B
     * broadcasts. Strides are in elements of the caller's memory. */
    dnnl_dims_t a_dims, a_strides, b_dims, b_strides, c_dims;
    dnnl_data_type_t a_type, b_type, c_type; /* the caller's types */
    float alpha;                             /* output scale */
    float beta;                              /* != 0: C = alpha AB + beta C (a sum post-op) */
    /* Nonzero: a bfloat16 primitive may read B in the blocked layout oneDNN
     * prefers, B reordered into it at every run (or once, for a constant B:
     * d5__dnnl_arg_pack). See d5__dnnl_mm_blocked_b. */
    int b_blocked;
} d5_dnnl_mm_shape;

/* Rows of the product from which B in bfloat16 is reordered into oneDNN's
 * blocked layout at every run. oneDNN 2.6.3's AMX matmul copies a plain B
 * inside every run; given B blocked it ran 1760x128x1760 in 913 us instead
 * of 1129 us on one core, and the reorder cost 44 us. The reorder grows with
 * B and the gain with the rows: at 128 rows ([128,768] x [768,3072]) the
 * product gained 248 us and the reorder cost 600 us. */
#define D5_DNNL_MM_BLOCKED_ROWS 1024

/* Whether a product of `rows` rows of C per B matrix (A's batch included
 * when B is broadcast) reads B blocked: always for a constant B (reordered
 * once), else from D5_DNNL_MM_BLOCKED_ROWS rows. */
int d5__dnnl_mm_blocked_b(int64_t rows, int constant);

typedef struct d5_dnnl_mm {
    dnnl_primitive_t prim;
    d5_dnnl_arg a, b, c;
} d5_dnnl_mm;

/* Row-major strides of `dims` (ndims of them). */
void d5__dnnl_dense_strides(int ndims, const dnnl_dims_t dims, dnnl_dims_t strides);
/* The primitive descriptor with A and B read in `compute` (C in its caller's
 * type) and `fpmath` on its attributes; B in the layout oneDNN prefers when
 * sh->b_blocked and `compute` is bfloat16 (the caller's layout where oneDNN
 * has no such primitive). */
d5_status d5__dnnl_mm_desc(const d5_dnnl_ctx *ctx, const d5_dnnl_mm_shape *sh,
                           dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath,
                           dnnl_primitive_desc_t *pd, const char *op);
/* The primitive of `pd` and the arguments that bridge the caller's memory. */
d5_status d5__dnnl_mm_init(d5_dnnl_mm *mm, const d5_dnnl_ctx *ctx, const d5_dnnl_mm_shape *sh,
                           const_dnnl_primitive_desc_t pd, const char *op);
/* Builds the descriptor and the primitive together. */
d5_status d5__dnnl_mm_create(d5_dnnl_mm *mm, const d5_dnnl_ctx *ctx, const d5_dnnl_mm_shape *sh,
                             dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath, char *impl,
                             size_t impl_size, const char *op);
/* Runs it on the caller's a, b and c (c read first when beta != 0); waits. */
d5_status d5__dnnl_mm_run(d5_dnnl_mm *mm, const d5_dnnl_ctx *ctx, const void *a, const void *b,
                          void *c, const char *op);
void d5__dnnl_mm_free(d5_dnnl_mm *mm);
/* The two gradient products of a matrix product, dA from shape `a` and dB
 * from `b`, multiplying in the forward's compute type and fpmath of `im`.
 * Float32 tensors multiplied in a lower type fall back to float32 when
 * oneDNN has no such product, and im's note says so. Kernel names go to
 * im->info.backward_data and backward_weights; nothing is left on failure. */
d5_status d5__dnnl_mm_backward_create(d5_dnnl_mm *da, d5_dnnl_mm *db, const d5_dnnl_ctx *ctx,
                                      const d5_dnnl_mm_shape *a, const d5_dnnl_mm_shape *b,
                                      d5_dnnl_impl *im, const char *op);

/* Converts n elements between oneDNN types with a reorder (src and dst
 * contiguous, not overlapping). */
d5_status d5__dnnl_convert(const d5_dnnl_ctx *ctx, const void *src, dnnl_data_type_t src_type,
                           void *dst, dnnl_data_type_t dst_type, int64_t n, const char *op);

#endif
