/* Window arithmetic shared by the reference pooling operators (MaxPool,
 * AveragePool): the attributes kernel_shape, strides, pads, dilations,
 * ceil_mode and auto_pad, the output shape they give, and the input positions
 * each sliding window covers.
 *
 * Along spatial axis i, output position o has its window at the input
 * positions o * strides[i] - pads_begin[i] + j * dilations[i], j = 0 ..
 * kernel_shape[i] - 1. Positions outside [0, D_i) are padding and are never
 * read; positions at or past D_i + pads_end[i] (the overhang that ceil_mode
 * may add) are not even padding. The output size is
 *   floor or ceil((D_i + pads_begin + pads_end - ((k - 1) * d + 1)) / s) + 1
 * with, under ceil_mode, one window less when the last one would start at or
 * past D_i + pads_begin (in the right padding), as in PyTorch and in ONNX's
 * shape inference. auto_pad VALID uses no padding; SAME_UPPER and SAME_LOWER
 * give ceil(D_i / s) outputs and pad by max(0, (out - 1) * s + (k - 1) * d + 1
 * - D_i), the odd pixel at the end (UPPER) or at the beginning (LOWER). With
 * auto_pad other than NOTSET, ceil_mode does not change the output shape
 * (the spec's formulas for both modes agree).
 */
#ifndef D5_REF_POOL_H
#define D5_REF_POOL_H

#include "util.h"

#define D5_POOL_MAX_AXES (D5_MAX_DIMS - 2)

typedef struct d5_pool {
    int32_t naxes;  /* spatial axes: input ndim - 2 */
    int64_t planes; /* N * C */
    int64_t in[D5_POOL_MAX_AXES], out[D5_POOL_MAX_AXES];
    int64_t kernel[D5_POOL_MAX_AXES], stride[D5_POOL_MAX_AXES], dilation[D5_POOL_MAX_AXES];
    int64_t pad_begin[D5_POOL_MAX_AXES], pad_end[D5_POOL_MAX_AXES];
    int64_t in_plane, out_plane, window; /* elements of an input plane, an output plane, a window */
} d5_pool;

/* Reads the pooling attributes of `op` for input x (N x C x D1 x ... x Dn,
 * n >= 1), resolves auto_pad and fills `p` and y's ndim and shape. Errors name
 * the operator and the attribute. d5__pool_init and d5__pool_check_windows
 * are exported for the cuda plugin. */
D5_API d5_status d5__pool_init(const char *op, const d5_tensor_desc *x, const d5_attrs *attrs,
                               d5_pool *p, d5_tensor_desc *y);
/* D5_ERR_INVALID naming `op` when some window covers no input element (only
 * padding): a maximum or an average excluding padding is undefined there. */
D5_API d5_status d5__pool_check_windows(const char *op, const d5_pool *p);
/* The common start of AveragePool's and MaxPool's create: reads the
 * operator's own integer attribute `flag` (default 0) into *value, then does
 * d5__pool_init for input 0 and output 0. */
d5_status d5__pool_create(const char *op, const d5_op_create_args *args, const char *flag,
                          int64_t *value, d5_pool *p);
/* Allocates a state of `size` bytes that begins with a copy of p, followed by
 * room for one window's offsets (p->window int64 values). NULL when out of
 * memory (D5_ERR_NOMEM, naming op, is reported). */
void *d5__pool_state(const d5_pool *p, size_t size, const char *op);
/* The window of output position o (flat within an output plane): writes to
 * idx (room for p->window values), in row-major kernel order, the flat offsets
 * within an input plane of its positions that lie inside the input, and
 * returns how many there are. *padded (may be NULL) receives the number of
 * its positions inside the padded input, the divisor of an average that
 * counts padding. */
int64_t d5__pool_window(const d5_pool *p, int64_t o, int64_t *idx, int64_t *padded);
/* The FLOPs of a pooling operator whose state begins with its d5_pool: one
 * operation (a comparison, an addition) per window position of each output
 * element. */
double d5__pool_flops(void *state, const d5_ref_shapes *shapes);

#endif
