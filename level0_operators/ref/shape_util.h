/* Index arithmetic shared by the reference shape operators (Reshape,
 * Transpose, Concat, Split, Slice, Pad, ...). */
#ifndef D5_REF_SHAPE_UTIL_H
#define D5_REF_SHAPE_UTIL_H

#include "util.h"

/* The coordinates of flat element `i` of a row-major tensor of shape d. */
void d5__unravel(const d5_tensor_desc *d, int64_t i, int64_t *coord);
/* Resolves n possibly negative axes against ndim into out[0..n-1]:
 * D5_ERR_INVALID for one outside [-ndim, ndim - 1] or given twice. */
d5_status d5__resolve_axes(const char *op, const int64_t *axes, int64_t n, int32_t ndim,
                           int32_t *out);
/* The block [offset, offset + len) along `axis` of the tensor `whole` (shape
 * `shape`) as a dense tensor `part`: copied into whole when to_whole, else
 * out of it. Concat and Split are made of these. */
void d5__axis_block(const d5_tensor_desc *shape, int32_t axis, int64_t offset, int64_t len,
                    double *whole, double *part, int to_whole);
/* Kernels of the operators that keep the elements in order and change only
 * the shape (Identity, Reshape, Flatten, Squeeze, Unsqueeze): Y = X, dX = dY. */
d5_status d5__copy_forward(void *state, const d5_ref_call *call);
/* Writes y's ndim and shape from x's and the n axes as given (n is -1 when
 * there are none). */
typedef d5_status (*d5__axes_shape)(const d5_tensor_desc *x, const int64_t *axes, int64_t n,
                                    d5_tensor_desc *y);
/* The create of Squeeze and Unsqueeze: checks the data input, reads the axes
 * (from opset 13 the int64 input 1, known at create; before, the attribute
 * axes, and one input only; none is an error when `required`) and has `shape`
 * write output 0's shape. */
d5_status d5__squeeze_create(const char *op, const d5_op_create_args *args, int required,
                             d5__axes_shape shape);
/* Defines NAME##_create, d5__squeeze_create with SHAPE, and registers the
 * operator NAME (1 or 2 inputs, 1 output, the copy kernels). */
#define D5_SQUEEZE_OPERATOR(NAME, REQUIRED, SHAPE)                                                 \
    static d5_status NAME##_create(const d5_op_create_args *args, void **state)                    \
    {                                                                                              \
        (void)state;                                                                               \
        return d5__squeeze_create(#NAME, args, REQUIRED, SHAPE);                                   \
    }                                                                                              \
    D5_REF_OPERATOR(NAME, 1, 2, 1, 1, NAME##_create, d5__copy_forward, d5__copy_backward, NULL,    \
                    NULL)
d5_status d5__copy_backward(void *state, const d5_ref_call *call);

#endif
