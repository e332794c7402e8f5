/* Helpers of the tests of the dnnl backend in lower precisions
 * (test_dnnl_lowp_mm.c, test_dnnl_lowp_conv.c): bfloat16 by hand, random
 * tensors, references in double with their bounds, and one operator run
 * forward and backward.
 *
 * References are computed in double from the same inputs, rounded to
 * bfloat16 by this file's own conversion (round to nearest even). Tolerance of
 * an element y = sum_i a_i b_i over K terms, S = sum_i |a_i b_i|:
 *   - the products of bfloat16 values are exact in float32 (8 + 8 bits of
 *     significand), and oneDNN accumulates in float32: at most K 2^-24 S,
 *     taken as K 2^-23 S for the order of the additions;
 *   - a bfloat16 output is rounded once more: 2^-8 |y| (8 bits of
 *     significand: a relative error of at most 2^-8 when rounding to nearest);
 *   - float32 inputs converted to bfloat16 (a compute precision) each carry
 *     a relative error up to 2^-8, so a product up to 2^-7: 2^-7 S against the
 *     float32 reference. */
#ifndef D5_TEST_LOWP_SUPPORT_H
#define D5_TEST_LOWP_SUPPORT_H

#include "op_support.h"

#include <math.h>

#define K_SUM(k) ((double)(k)*ldexp(1.0, -23))
#define BF16_OUT ldexp(1.0, -8)

/* Skips the test where oneDNN cannot compute bfloat16 here; otherwise *cls
 * and text hold d5_dnnl_precision_support's answer for "bf16". */
void need_bf16(d5_precision_class *cls, char *text, size_t size);
/* need_dnnl and need_bf16: skips where oneDNN has no bfloat16 kernels here
 * (below AVX-512, where the operators decline bfloat16 tensors). */
void need_bf16_tensors(void);

uint16_t bf16_of(float f);
float f32_of_bf16(uint16_t h);
/* A tensor of `dtype` (F32 or BF16) with deterministic values in [-1, 1];
 * `vals` gets them as float32 (bfloat16-rounded for BF16, and also when
 * `round` is set), to be freed with free(). */
d5_tensor random_tensor(int32_t dtype, int32_t nd, const int64_t *shape, uint32_t seed, int round,
                        float **vals);

/* Reference values with their bound (see the top of the file). */
typedef struct ref_out {
    int64_t n;
    double *y, *tol;
} ref_out;

ref_out ref_alloc(int64_t n);
void ref_free(ref_out *r);
/* tol_i = out_rel |y_i| + sum_rel S_i, where tol holds S_i on entry. */
void ref_bound(ref_out *r, double out_rel, double sum_rel);
/* Stores the rows x cols matrix of r transposed (cols x rows). */
void ref_transpose(ref_out *r, int64_t rows, int64_t cols);
/* Every element within its bound; returns the largest |got - want|. */
double expect_close(const d5_tensor *got, const ref_out *r, const char *what);

/* The dnnl operator `name` created with every input given; asserts success. */
d5_op *lowp_create(const char *name, const d5_tensor *in, int32_t nin, const d5_attrs *attrs);
/* Allocates y as the operator's output 0, asserts its data type and runs forward. */
void lowp_forward(d5_op *op, const d5_tensor *in, d5_dtype dtype, d5_tensor *y);
/* Allocates gin[0..nin-1] like the inputs and runs backward from dy. */
void lowp_backward(d5_op *op, const d5_tensor *dy, const d5_tensor *in, int32_t nin,
                   const d5_tensor *y, d5_tensor *gin);
/* Frees what one forward and backward run holds: the operator, in and gin
 * (nin each), y and dy. */
void lowp_free_run(d5_op *op, d5_tensor *in, d5_tensor *gin, int32_t nin, d5_tensor *y,
                   d5_tensor *dy);

#endif
