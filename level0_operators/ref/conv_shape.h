/* Geometry of Conv and ConvTranspose (ONNX opset 11): attribute checking,
 * auto_pad resolution and output sizes, in one place so that the reference
 * operators and the fast backends agree on shapes and padding.
 *
 * A backend's create() calls d5__conv_geometry (or d5__conv_transpose_geometry)
 * with the input descriptors and attributes, then d5__conv_output_desc for its
 * output; every spatial quantity it needs is then in the struct, with auto_pad
 * and output_shape already turned into explicit pads:
 *
 *     d5_conv_geometry g;
 *     d5_status s = d5__conv_geometry(&in[0].desc, &in[1].desc,
 *                                     nin > 2 ? &in[2].desc : NULL, attrs, &g);
 *     if (s != D5_OK) return s;
 *     d5__conv_output_desc(&g, &out[0]);
 *
 * Errors name the operator ("Conv: pads has 2 values for a 2-d convolution,
 * expected 4").
 */
#ifndef D5_REF_CONV_SHAPE_H
#define D5_REF_CONV_SHAPE_H

#include "util.h"

/* Spatial dimensions: X is (N, C, D1, ..., Dn). */
#define D5_CONV_MAX_SPATIAL (D5_MAX_DIMS - 2)

typedef struct d5_conv_geometry {
    int transposed;                      /* 0: Conv, 1: ConvTranspose */
    int has_bias;                        /* the optional input B is given */
    int32_t n;                           /* spatial dimensions: 1, 2 (images), 3 (volumes), ... */
    int64_t batch;                       /* N */
    int64_t in_channels;                 /* C = X.shape[1] */
    int64_t out_channels;                /* M = Y.shape[1] */
    int64_t group;                       /* C and M are split into `group` equal groups */
    int64_t in[D5_CONV_MAX_SPATIAL];     /* spatial sizes of X */
    int64_t out[D5_CONV_MAX_SPATIAL];    /* spatial sizes of Y */
    int64_t kernel[D5_CONV_MAX_SPATIAL]; /* spatial sizes of W (undilated) */
    int64_t strides[D5_CONV_MAX_SPATIAL];
    int64_t dilations[D5_CONV_MAX_SPATIAL];
    /* Conv: zeros added before and after X along each axis (>= 0).
     * ConvTranspose: elements cropped from the start and the end of the full
     * transposed result along each axis; negative when output_shape asks for
     * more than the full result (the extra elements hold only the bias). */
    int64_t pads_begin[D5_CONV_MAX_SPATIAL];
    int64_t pads_end[D5_CONV_MAX_SPATIAL];
    int64_t output_padding[D5_CONV_MAX_SPATIAL]; /* ConvTranspose; zeros for Conv */
    /* Products of in, out and kernel: elements per channel. */
    int64_t in_size, out_size, kernel_size;
} d5_conv_geometry;

/* Conv: checks X (N, C, D1..Dn) with n >= 1, W (M, C/group, k1..kn) and the
 * optional B (M) (b NULL or of dtype D5_DTYPE_INVALID when omitted): X float32
 * or float64, W and B of X's dtype. Reads the attributes auto_pad (NOTSET,
 * SAME_UPPER, SAME_LOWER, VALID), dilations, group, kernel_shape (must match
 * W), pads (begin..., end...; >= 0) and strides, and computes along each axis
 *   NOTSET, VALID: out = floor((in + pad_begin + pad_end - dk) / stride) + 1,
 *   SAME_*:        out = ceil(in / stride), total pad = max(0, (out - 1) *
 *                  stride + dk - in), its odd element at the end (SAME_UPPER)
 *                  or the beginning (SAME_LOWER),
 * with dk = (kernel - 1) * dilation + 1. pads may be given with auto_pad
 * other than NOTSET only when they are all zero. d5__conv_geometry,
 * d5__conv_output_desc and d5__conv_flops are exported for the cuda plugin. */
D5_API d5_status d5__conv_geometry(const d5_tensor_desc *x, const d5_tensor_desc *w,
                                   const d5_tensor_desc *b, const d5_attrs *attrs,
                                   d5_conv_geometry *g);

/* ConvTranspose: X (N, C, D1..Dn), W (C, M/group, k1..kn), optional B (M);
 * attributes as Conv's plus output_padding (each < its stride or dilation)
 * and output_shape (the n spatial sizes of Y). Along each axis, with
 * full = stride * (in - 1) + output_padding + dk:
 *   output_shape given: out = output_shape, total = full - out, and
 *     SAME_UPPER: pad_begin = floor(total / 2), pad_end = total - pad_begin,
 *     otherwise:  pad_end = floor(total / 2), pad_begin = total - pad_end
 *     (explicit pads are ignored);
 *   SAME_UPPER, SAME_LOWER: out = in * stride, pads split as above;
 *   NOTSET, VALID: out = full - pad_begin - pad_end (VALID: no pads).
 * Element o of Y along an axis is element o + pad_begin of the full result
 * (zero outside it, before the bias). */
d5_status d5__conv_transpose_geometry(const d5_tensor_desc *x, const d5_tensor_desc *w,
                                      const d5_tensor_desc *b, const d5_attrs *attrs,
                                      d5_conv_geometry *g);

/* The reference Conv's or ConvTranspose's create: float inputs X and W, the
 * geometry from `geometry` (d5__conv_geometry, d5__conv_transpose_geometry),
 * Y's shape, and a copy of the geometry as the state. */
typedef d5_status (*d5_conv_geometry_fn)(const d5_tensor_desc *x, const d5_tensor_desc *w,
                                         const d5_tensor_desc *b, const d5_attrs *attrs,
                                         d5_conv_geometry *g);
d5_status d5__conv_ref_create(const char *op, d5_conv_geometry_fn geometry,
                              const d5_op_create_args *args, void **state);
/* The reference kernels of both, whose state is that geometry: one loop nest
 * over the strided side (Y for Conv, X for ConvTranspose) and the taps, in
 * double. Backward accumulates dX, dW and dB where they are wanted. */
d5_status d5__conv_ref_forward(void *state, const d5_ref_call *call);
d5_status d5__conv_ref_backward(void *state, const d5_ref_call *call);
/* d5__conv_flops of the state (a d5_ref_flops_fn). */
double d5__conv_ref_flops(void *state, const d5_ref_shapes *shapes);

/* Sets y's ndim and shape to (N, M, out...); its dtype is left alone. */
D5_API void d5__conv_output_desc(const d5_conv_geometry *g, d5_tensor_desc *y);

/* FLOPs of one forward call, two per multiply-add of the direct algorithm:
 * Conv 2 * N * M * prod(out) * (C / group) * prod(kernel); ConvTranspose
 * 2 * N * C * prod(in) * (M / group) * prod(kernel). The bias is not counted. */
D5_API double d5__conv_flops(const d5_conv_geometry *g);

/* The sliding window as flat spatial positions within one channel. Conv:
 * output position `pos` reads, through kernel tap `k` (0 .. kernel_size - 1),
 * input position d5__conv_tap(g, pos, k). ConvTranspose: input position `pos`
 * adds, through tap `k`, into output position d5__conv_tap(g, pos, k). Along
 * each axis the strided-side coordinate p and tap coordinate t reach the dense
 * side at p * stride + t * dilation - pad_begin; -1 when that falls outside
 * (in the padding or the cropped part). */
int64_t d5__conv_tap(const d5_conv_geometry *g, int64_t pos, int64_t k);

#endif
