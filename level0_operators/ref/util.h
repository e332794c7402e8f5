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
/* The flat index in `in` of the element that element i of `out` copies. */
typedef int64_t (*d5_source_fn)(const d5_tensor_desc *out, const d5_tensor_desc *in, int64_t i);
/* The kernels of a copy whose output element i is input element src(i)
 * (Expand, Tile); the gradient of an input element is the sum of those of its
 * copies. Inline so that a constant src is called directly. */
static inline void d5__gather_forward(d5_source_fn src, const d5_rt *in, d5_rt *out)
{
    for (int64_t i = 0; i < out[0].numel; i++)
        out[0].data[i] = in[0].data[src(out[0].desc, in[0].desc, i)];
}
static inline void d5__gather_backward(d5_source_fn src, const d5_rt *gout, const d5_rt *in,
                                       const d5_rt *out, d5_rt *gin)
{
    if (gin[0].data)
        for (int64_t i = 0; i < out[0].numel; i++)
            gin[0].data[src(out[0].desc, in[0].desc, i)] += gout[0].data[i];
}
/* The row-major offset within dims[0..m-1] of index tuple t, the m values
 * indices[t * m .. t * m + m - 1] (GatherND, ScatterND; a negative one counts
 * from the end of its dimension); -1 with D5_ERR_RANGE naming the operator,
 * the tuple and the value when one is outside [-n, n - 1]. */
int64_t d5__index_tuple(const char *op, const double *indices, int64_t t, const int64_t *dims,
                        int64_t m);
/* The same with the operator's state: output element i of a copy is input
 * element src(state, i) (SpaceToDepth, DepthToSpace, Compress). These are a
 * forward and a backward for such an operator to call with its source. */
typedef int64_t (*d5_state_source_fn)(const void *state, int64_t i);
static inline d5_status d5__source_forward(d5_state_source_fn src, const void *state,
                                           const d5_ref_call *call)
{
    const d5_rt *in = call->inputs;
    d5_rt *out = call->outputs;
    for (int64_t i = 0; i < out[0].numel; i++) out[0].data[i] = in[0].data[src(state, i)];
    return D5_OK;
}
static inline d5_status d5__source_backward(d5_state_source_fn src, const void *state,
                                            const d5_ref_call *call)
{
    const d5_rt *gout = call->grad_outputs;
    d5_rt *gin = call->grad_inputs;
    if (gin[0].data)
        for (int64_t i = 0; i < call->outputs[0].numel; i++)
            gin[0].data[src(state, i)] += gout[0].data[i];
    return D5_OK;
}
/* Row-major strides (elements) of a shape. */
void d5__strides(const d5_tensor_desc *d, int64_t *strides);
/* Resolves a possibly negative axis against ndim; D5_ERR_INVALID names the
 * operator when it is outside [-ndim, ndim - 1]. */
d5_status d5__axis(const char *op, int64_t axis, int32_t ndim, int32_t *out);
/* ---- Data types ----
 * The kernels compute in double whatever the tensors' type (ref.h); these
 * sets say which types an operator's inputs take, after the type constraints
 * of its ONNX schema. A set has bit t for the d5_dtype t. */
typedef uint32_t d5_dtypes;
_Static_assert(D5_DTYPE_COUNT <= 32, "d5_dtypes has one bit per data type");
#define D5__DT(t)    ((d5_dtypes)1 << (t))
#define D5__FLOATS   (D5__DT(D5_F32) | D5__DT(D5_F64) | D5__DT(D5_F16) | D5__DT(D5_BF16))
#define D5__SIGNED   (D5__DT(D5_I8) | D5__DT(D5_I16) | D5__DT(D5_I32) | D5__DT(D5_I64))
#define D5__UNSIGNED (D5__DT(D5_U8) | D5__DT(D5_U16) | D5__DT(D5_U32) | D5__DT(D5_U64))
#define D5__INTS     (D5__SIGNED | D5__UNSIGNED)
#define D5__NUMBERS  (D5__FLOATS | D5__INTS)
#define D5__ANY      (D5__NUMBERS | D5__DT(D5_BOOL))
/* The floating-point types and the 32- and 64-bit integers (Gemm, MatMul,
 * PRelu, CumSum and most reductions). */
#define D5__WIDE (D5__FLOATS | D5__DT(D5_I32) | D5__DT(D5_I64) | D5__DT(D5_U32) | D5__DT(D5_U64))

/* 1 when dtype is in the set. */
static inline int d5__in_types(int32_t dtype, d5_dtypes types)
{
    return dtype > D5_DTYPE_INVALID && dtype < D5_DTYPE_COUNT && (types & D5__DT(dtype)) != 0;
}
/* 1 for the integer types (signed and unsigned; not bool). */
static inline int d5__is_int(int32_t dtype)
{
    return d5__in_types(dtype, D5__INTS);
}
/* Checks that input i is given and of a type in `types`: D5_ERR_INVALID
 * when it is omitted, D5_ERR_UNSUPPORTED naming the operator, the input, its
 * type and the expected ones otherwise ("Relu: input 0 has data type uint8,
 * expected float32, float64, float16, bfloat16, int8, int16, int32 or
 * int64"). */
d5_status d5__need_types(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                         d5_dtypes types);
/* Checks that input i is present and floating point (float32, float64,
 * float16 or bfloat16): d5__need_types with D5__FLOATS. */
d5_status d5__need_float(const char *op, const d5_tensor *in, int32_t nin, int32_t i);
/* Checks that input i is given; D5_ERR_INVALID names the operator and input. */
d5_status d5__need_input(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                         const char *what);
/* Checks that input i, when given, has input j's data type (the one type
 * variable T of a schema); D5_ERR_INVALID naming both otherwise. */
d5_status d5__same_type(const char *op, const d5_tensor *in, int32_t nin, int32_t i, int32_t j);
/* "float32, float64, float16 or bfloat16": the names of a set, for messages. */
void d5__types_str(d5_dtypes types, char *buf, size_t size);
/* An integer result: x, computed in double for an output of type dtype,
 * truncated toward zero and wrapped modulo 2^bits into the type's range, as
 * numpy and ONNX Runtime wrap on overflow (uint8: 250 + 10 = 4, int8:
 * -(-128) = -128). x unchanged for other types; NaN and infinities stay (the
 * wrapper makes them 0 and the type's ends). Exact while x is, up to 2^53. */
double d5__int_wrap(double x, int32_t dtype);
/* Applies d5__int_wrap to every element of t when its type is an integer
 * one; does nothing for other types. */
void d5__wrap_ints(d5_rt *t);
/* 1 when input i is given (not omitted). */
int d5__has_input(const d5_tensor *in, int32_t nin, int32_t i);
/* Reads the values of an integer input known at create (int64 or int32) into
 * out[0..max-1]; D5_ERR_UNSUPPORTED naming the operator and input when its
 * values are not known at create ("Reshape: input 1 (shape) must be a
 * constant"), D5_ERR_INVALID when it has more than `max` values or is not an
 * integer tensor. */
d5_status d5__const_ints(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                         const char *what, int64_t *out, int64_t max, int64_t *n);
/* Reads the values of a floating-point input known at create (float32,
 * float64, float16 or bfloat16), such as Resize's scales, into
 * out[0..max-1]; the same errors as d5__const_ints, with the floating-point
 * types expected. */
d5_status d5__const_floats(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                           const char *what, double *out, int64_t max, int64_t *n);
/* The same for an input of any numeric type (OneHot's depth); 64-bit
 * integers beyond 2^53 are rounded to a double. */
d5_status d5__const_numbers(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
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
/* The sizes of a 4-d image tensor: batch, channels, height, width. */
typedef struct d5_nchw {
    int64_t n, c, h, w;
} d5_nchw;
/* The sizes of x, which has 4 dims [N, C, H, W]. */
static inline d5_nchw d5__nchw(const d5_tensor_desc *x)
{
    return (d5_nchw){x->shape[0], x->shape[1], x->shape[2], x->shape[3]};
}
/* A tensor seen as [outer, n, inner] around one axis (softmax-like operators). */
typedef struct d5_axis_view {
    int64_t outer, n, inner;
} d5_axis_view;
/* The offset of row r (0 <= r < outer * inner) of a view: its n elements are
 * at offset + k * inner. */
static inline int64_t d5__axis_row(const d5_axis_view *v, int64_t r)
{
    return r / v->inner * v->n * v->inner + r % v->inner;
}
/* Checks a floating-point input 0, reads the attribute "axis" (default -1),
 * sets out[0] to input 0's descriptor and allocates *state as a d5_axis_view.
 * Before opset 13 (Softmax, LogSoftmax, Hardmax), the input is instead seen as
 * the 2-d [prod(shape[:axis]), prod(shape[axis:])] with axis default 1, and
 * the view covers the whole second dimension (inner = 1). Exported for the cuda
 * plugin. */
D5_API d5_status d5__axis_view_create(const char *op, const d5_tensor *in, int32_t nin,
                                      const d5_attrs *attrs, d5_tensor_desc *out, void **state);
/* Softmax-like operators row by row over the view `state`: forward runs
 * row(x, y, n, inner) from input 0 into output 0, backward
 * grad(y, dy, dx, n, inner) from output 0 and its gradient into input 0's
 * gradient (when wanted). A row's n elements are `inner` apart. */
typedef void (*d5_axis_row_fn)(const double *x, double *y, int64_t n, int64_t inner);
typedef void (*d5_axis_grad_fn)(const double *y, const double *dy, double *dx, int64_t n,
                                int64_t inner);
d5_status d5__axis_forward(void *state, const d5_ref_call *call, d5_axis_row_fn row);
d5_status d5__axis_backward(void *state, const d5_ref_call *call, d5_axis_grad_fn grad);
/* Checks 1..N inputs of one dtype, floating point (float_only: Sum, Mean) or
 * any but bool (Max, Min), and broadcasts them all into out[0]. */
d5_status d5__broadcast_create(const char *op, const d5_tensor *in, int32_t nin, int float_only,
                               d5_tensor_desc *out);
/* Sum (mean 0) or Mean (mean 1): the element-wise sum of 1..N floating-point
 * inputs broadcast together, divided by N for Mean. The state of both
 * operators (free it with d5__ref_keep), their create, kernels and FLOPs. */
typedef struct d5_sum_op {
    const char *name;
    int mean;
} d5_sum_op;
d5_status d5__sum_create(const d5_sum_op *op, const d5_tensor *in, int32_t nin,
                         const d5_attrs *attrs, d5_tensor_desc *out, void **state);
d5_status d5__sum_forward(void *state, const d5_ref_call *call);
d5_status d5__sum_backward(void *state, const d5_ref_call *call);
double d5__sum_flops(void *state, const d5_ref_shapes *shapes);
/* The FLOPs of an operator that does one operation per element of input 0
 * (a d5_ref_flops_fn). */
double d5__flops_per_input(void *state, const d5_ref_shapes *shapes);
/* The FLOPs of Softmax and LogSoftmax: max, subtract, exp, sum, and divide or
 * log and subtract: about five operations per element. */
double d5__softmax_flops(void *state, const d5_ref_shapes *shapes);
/* Shape string "[2,3,4]" for messages. */
void d5__shape_str(const d5_tensor_desc *d, char *buf, size_t size);
/* 1 when a and b have the same dims (whatever their data types), else 0. */
int d5__same_shape(const d5_tensor_desc *a, const d5_tensor_desc *b);
/* D5_ERR_INVALID "op: name is value, must be >= 0" when the attribute's value
 * is negative, else D5_OK. */
d5_status d5__need_not_negative(const char *op, const char *name, int64_t value);

#endif
