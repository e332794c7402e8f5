/* The cuda backend's own kernels (kernels.cu, compiled by nvcc), for the
 * operators that cuDNN and cuBLAS do not provide: element-wise functions,
 * broadcasting binary operators and Where, strided copies (Transpose,
 * Concat, Split), LayerNormalization and Gather. float32 (Where's condition
 * bool, Gather's indices int64), device memory, queued on the default stream
 * and returning at once; each launcher returns the launch's cudaError_t as an
 * int (0: queued). Called from C (kernel_ops.c) only. */
#ifndef D5_CUDA_KERNELS_H
#define D5_CUDA_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define D5__CUK_MAX_DIMS 8

/* An iteration space of `rank` axes of sizes dims (row major, the last axis
 * fastest) and, for up to three operands, the stride of each axis in
 * elements (0 along an axis the operand broadcasts). */
typedef struct d5__cuk_space {
    int32_t rank;
    int64_t dims[D5__CUK_MAX_DIMS];
    int64_t stride[3][D5__CUK_MAX_DIMS];
} d5__cuk_space;

enum d5__cuk_unary {
    D5__CUK_ERF,
    D5__CUK_SQRT,
    D5__CUK_EXP,
    D5__CUK_NEG,
    D5__CUK_RECIPROCAL,
    D5__CUK_GELU,     /* x (1 + erf(x / sqrt 2)) / 2 */
    D5__CUK_GELU_TANH /* x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2 */
};

enum d5__cuk_binary { D5__CUK_ADD, D5__CUK_SUB, D5__CUK_MUL, D5__CUK_DIV, D5__CUK_POW };

/* y[i] = f(x[i]), i < n. */
int d5__cuk_unary(int op, const float *x, float *y, int64_t n);
/* y (contiguous over sp) = a op b, a and b read with sp.stride[0] and [1]. */
int d5__cuk_binary(int op, const float *a, const float *b, float *y, const d5__cuk_space *sp);
/* y = cond ? a : b, with strides 0 (cond, bytes), 1 (a), 2 (b). */
int d5__cuk_where(const unsigned char *cond, const float *a, const float *b, float *y,
                  const d5__cuk_space *sp);
/* y[offset_1(i)] = x[offset_0(i)] over sp: a transpose, a slice, a concat. */
int d5__cuk_copy(const float *x, float *y, const d5__cuk_space *sp);
/* Each of `rows` rows of `cols`: y = (x - mean) / sqrt(var + eps) * scale +
 * bias (bias may be NULL); scale and bias have `cols` elements. */
int d5__cuk_layernorm(const float *x, const float *scale, const float *bias, float *y, int64_t rows,
                      int64_t cols, float eps);
/* Backward passes. dx[i] = dy[i] f'(x[i]) (y = f(x), for the functions
 * whose derivative reads it). */
int d5__cuk_unary_backward(int op, const float *x, const float *y, const float *dy, float *dx,
                           int64_t n);
/* da += dy d(a op b)/da and db += dy d(a op b)/db over sp (ADD, SUB, MUL,
 * DIV), with atomic additions, so that a broadcast operand sums its
 * gradient: zero da and db first. Either may be NULL. */
int d5__cuk_binary_backward(int op, const float *a, const float *b, const float *dy, float *da,
                            float *db, const d5__cuk_space *sp);
/* dx[o, idx[j], r] += dy[o, j, r] (atomic): zero dx first. */
int d5__cuk_gather_backward(const float *dy, const int64_t *idx, float *dx, int64_t outer,
                            int64_t nidx, int64_t inner, int64_t axis_dim);
/* y[i] += x[i] and y[i] = v, i < n (gradients in device memory). */
int d5__cuk_add(float *y, const float *x, int64_t n);
int d5__cuk_fill(float *y, float v, int64_t n);
/* y[o, j, r] = data[o, idx[j], r] for o < outer, j < nidx, r < inner; an
 * index below 0 counts from axis_dim, one outside [0, axis_dim) gives 0. */
int d5__cuk_gather(const float *data, const int64_t *idx, float *y, int64_t outer, int64_t nidx,
                   int64_t inner, int64_t axis_dim);

#ifdef __cplusplus
}
#endif
#endif
