/* Shared machinery of the reductions over a set of axes (ReduceSum,
 * ReduceMean) and of the losses' reduction attribute (none / sum / mean). */
#ifndef D5_REF_REDUCE_H
#define D5_REF_REDUCE_H

#include "util.h"

/* A planned reduction: which axes of the input are reduced. */
typedef struct d5_reduce {
    d5_tensor_desc in;            /* the input */
    uint8_t reduced[D5_MAX_DIMS]; /* 1 for each reduced axis */
    int64_t count;                /* input elements summed into each output element */
    int mean;                     /* ReduceMean: the kernels below divide the sums by count */
} d5_reduce;

/* Plans the reduction of `in` over axes[0..naxes-1] (negative ones count from
 * the end; a repeated axis is an error). No axes reduce every axis, or none
 * when noop_with_empty_axes is set. Fills out's ndim and shape: reduced axes
 * are kept with size 1 when keepdims is set, else dropped. */
d5_status d5__reduce_plan(const char *op, const d5_tensor_desc *in, const int64_t *axes,
                          int64_t naxes, int keepdims, int noop_with_empty_axes, d5_reduce *plan,
                          d5_tensor_desc *out);
/* The flat index in the output of element i of the input. */
int64_t d5__reduce_index(const d5_reduce *plan, int64_t i);
/* create() of a ReduceX operator: data (input 0, of a type in `types`:
 * D5__WIDE, or for ReduceMax and ReduceMin int8 and uint8 too), attributes
 * keepdims (default 1) and noop_with_empty_axes (default 0). From
 * opset 13 for ReduceSum and 18 for every other ReduceX, the axes are the
 * optional input 1, known at create; before, they are the attribute axes,
 * noop_with_empty_axes does not exist and the operator takes one input.
 * Without "__opset" (an operator created directly) either form is accepted.
 * Stores a d5_reduce as *state. */
d5_status d5__reduce_create(const char *op, d5_dtypes types, const d5_tensor *in, int32_t nin,
                            const d5_attrs *attrs, d5_tensor_desc *out, void **state);
/* The kernels and FLOPs of ReduceSum and ReduceMean, whose state is the
 * d5_reduce of d5__reduce_create. Integer sums wrap into their type and
 * integer means are truncated toward zero. */
d5_status d5__reduce_sum_forward(void *state, const d5_ref_call *call);
/* Every input element gets the gradient of the sum (mean) it went into. */
d5_status d5__reduce_sum_backward(void *state, const d5_ref_call *call);
double d5__reduce_sum_flops(void *state, const d5_ref_shapes *shapes);

/* The `reduction` attribute of a loss. */
typedef enum d5_loss_reduction { D5_LOSS_NONE, D5_LOSS_SUM, D5_LOSS_MEAN } d5_loss_reduction;

/* Reads `reduction` ("none", "sum" or "mean"; default "mean"). */
d5_status d5__loss_reduction(const char *op, const d5_attrs *attrs, d5_loss_reduction *out);

#endif
