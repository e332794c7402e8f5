/* Shape helpers shared by the reference operators. */
#ifndef D5_REF_UTIL_H
#define D5_REF_UTIL_H

#include "ref.h"

/* numpy (ONNX multidirectional) broadcasting of n shapes into `out` (its dtype
 * is left alone). D5_ERR_SHAPE names the operator and both sizes. */
d5_status d5__broadcast(const char *op, const d5_tensor_desc *const *in, int32_t n,
                        d5_tensor_desc *out);
/* The flat index in `in` of element `i` of the broadcast result `out`. */
int64_t d5__broadcast_index(const d5_tensor_desc *out, const d5_tensor_desc *in, int64_t i);
/* Row-major strides (elements) of a shape. */
void d5__strides(const d5_tensor_desc *d, int64_t *strides);
/* Resolves a possibly negative axis against ndim; D5_ERR_INVALID names the
 * operator when it is outside [-ndim, ndim - 1]. */
d5_status d5__axis(const char *op, int64_t axis, int32_t ndim, int32_t *out);
/* Checks that input i is present and floating point (float32 or float64). */
d5_status d5__need_float(const char *op, const d5_tensor *in, int32_t nin, int32_t i);
/* 1 when input i is given (not omitted). */
int d5__has_input(const d5_tensor *in, int32_t nin, int32_t i);
/* Reads the values of an integer input known at create (int64 or int32) into
 * out[0..max-1]; D5_ERR_UNSUPPORTED naming the operator and input when its
 * values are not known at create ("Reshape: input 1 (shape) must be a
 * constant"), D5_ERR_INVALID when it has more than `max` values or is not an
 * integer tensor. */
d5_status d5__const_ints(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                         const char *what, int64_t *out, int64_t max, int64_t *n);
/* Reads the values of a floating-point input known at create (float32 or
 * float64), such as Resize's scales, into out[0..max-1]; the same errors as
 * d5__const_ints, with float32 or float64 expected. */
d5_status d5__const_floats(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                           const char *what, double *out, int64_t max, int64_t *n);
/* The attribute through which a network passes every operator the opset
 * version of its domain (D5_ATTR_OPSET in d5/network.h, a level above). */
#define D5__OPSET_ATTR "__opset"
/* The newest opset whose semantics the reference operators follow: the one an
 * operator created without "__opset" (directly, not by a network) obeys. */
#define D5__OPSET_NEWEST 19
/* Reads "__opset" into *opset (`def` when absent); D5_ERR_INVALID naming the
 * operator when it is not a positive integer. */
d5_status d5__ref_opset(const char *op, const d5_attrs *attrs, int64_t def, int64_t *opset);
/* A tensor seen as [outer, n, inner] around one axis (softmax-like operators). */
typedef struct d5_axis_view {
    int64_t outer, n, inner;
} d5_axis_view;
/* Checks a floating-point input 0, reads the attribute "axis" (default -1),
 * sets out[0] to input 0's descriptor and allocates *state as a d5_axis_view.
 * Before opset 13 (Softmax, LogSoftmax, Hardmax), the input is instead seen as
 * the 2-d [prod(shape[:axis]), prod(shape[axis:])] with axis default 1, and
 * the view covers the whole second dimension (inner = 1). */
d5_status d5__axis_view_create(const char *op, const d5_tensor *in, int32_t nin,
                               const d5_attrs *attrs, d5_tensor_desc *out, void **state);
/* Checks 1..N floating-point inputs of one dtype and broadcasts them all into
 * out[0] (Sum, Mean, Max, Min). */
d5_status d5__broadcast_create(const char *op, const d5_tensor *in, int32_t nin,
                               d5_tensor_desc *out);
/* Shape string "[2,3,4]" for messages. */
void d5__shape_str(const d5_tensor_desc *d, char *buf, size_t size);

#endif
