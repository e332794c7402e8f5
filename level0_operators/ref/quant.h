/* Linear quantisation shared by the reference quantisation operators
 * (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearMatMul,
 * QLinearConv, MatMulInteger, ConvInteger) and by the fast backends that are
 * checked against them: one place for the integer ranges, the rounding, the
 * requantisation multiplier and the shape rules of scales and zero points.
 *
 * A real value r and its quantised q are related by r = (q - zero_point) *
 * scale. Quantising rounds r / scale to the nearest integer, ties to even,
 * adds the zero point and saturates to the range of the quantised type:
 *
 *     double q = d5__quant_saturate(d5__round_half_even(r / scale) + zp, lo, hi);
 *
 * The integer operators accumulate (a - a_zero_point) * (b - b_zero_point)
 * exactly (in double, exact for any realistic size) and requantise with
 * d5__quant_requantize. Kernels see every tensor as doubles (ref.h).
 */
#ifndef D5_REF_QUANT_H
#define D5_REF_QUANT_H

#include "conv_shape.h"

/* ---- Values ---------------------------------------------------------------------------------- */

/* The range of a quantised integer type: uint8 [0, 255], int8 [-128, 127],
 * uint16 [0, 65535], int16 [-32768, 32767], uint4 [0, 15], int4 [-8, 7]
 * (QuantizeLinear and DequantizeLinear from opset 21), uint2 [0, 3], int2
 * [-2, 1] (from opset 25); 0 for any other type. */
int d5__quant_range(int32_t dtype, double *lo, double *hi);
/* The first opset whose QuantizeLinear and DequantizeLinear take `dtype` as
 * their quantised type (uint8, int8: 10; int32 for DequantizeLinear: 10;
 * float8 E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ: 19; uint16, int16, uint4, int4:
 * 21; float4 E2M1: 23; uint2, int2: 25); 0 for none. */
int64_t d5__quant_since(int32_t dtype);
/* The largest finite value of a float8 or float4 type. */
double d5__quant_float_max(int32_t dtype);
/* v rounded to the nearest integer, ties to the even one (2.5 -> 2, 3.5 -> 4,
 * -0.5 -> 0), whatever the floating-point environment's rounding mode;
 * infinities and NaN unchanged. */
double d5__round_half_even(double v);
/* v clamped to [lo, hi]; NaN becomes `nan_as` (the zero point: a NaN input
 * quantises to the value that dequantises to 0). */
double d5__quant_saturate(double v, double lo, double hi, double nan_as);
/* The requantisation multiplier a_scale * b_scale / y_scale formed in
 * float32, as ONNX's reference and ONNX Runtime do (each step rounded to
 * float32), returned exactly as a double. */
double d5__quant_multiplier(double a_scale, double b_scale, double y_scale);
/* An exact integer accumulator `acc` times the multiplier m, rounded half to
 * even, plus the zero point, saturated to [lo, hi]. */
double d5__quant_requantize(double acc, double m, double zp, double lo, double hi);

/* ---- Checks at create (messages name the operator and the input) ---------------------------- */

/* Input i (called `name`) is given and of data type uint8 or int8. */
d5_status d5__quant_need_int8(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                              const char *name);
/* Input i (`name`) is given, float32 and holds one value (a scalar or a
 * 1-element tensor of any rank). */
d5_status d5__quant_need_scalar_scale(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                                      const char *name);
/* Input i (`name`), a zero point, is given, of data type `dtype` (that of the
 * tensor it belongs to, called `of`) and holds one value. */
d5_status d5__quant_need_scalar_zp(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                                   const char *name, int32_t dtype, const char *of);
/* 1 when d holds a single value and has at most one dimension: a scalar or a
 * [1] tensor, the per-tensor forms of a scale or zero point. */
int d5__quant_is_single(const d5_tensor_desc *d);

/* ---- Per-tensor and per-axis parameters (QuantizeLinear, DequantizeLinear) ----------------- */

/* Which parameter each element of X uses: per tensor the one; per axis
 * parameter (i / inner) % n, n = X.shape[axis], inner = the product of the
 * dimensions after it; blocked (block > 0, opset 21), the parameter tensor
 * has X's shape but ceil(X.shape[axis] / block) = n along the axis, and the
 * element at index a along it uses the parameter at a / block there. */
typedef struct d5_quant_axis {
    int64_t n, inner;
    int64_t dim;   /* X.shape[axis] (blocked) */
    int64_t block; /* 0: per tensor or per axis */
} d5_quant_axis;

/* The parameter of element i. */
static inline int64_t d5__quant_param(const d5_quant_axis *a, int64_t i)
{
    if (a->block <= 0) return i / a->inner % a->n;
    int64_t outer = i / (a->dim * a->inner), k = i / a->inner % a->dim;
    return (outer * a->n + k / a->block) * a->inner + i % a->inner;
}
/* Checks the shapes of the scale (input 1) and the optional zero point (input
 * 2, of the scale's shape) of X (input 0), called `scale` and `zp` in
 * messages: one value (a scalar or [1]) per tensor, or, from opset 13, a 1-d
 * tensor of X.shape[axis] values, axis the attribute "axis" (default 1,
 * negative counting from the back, read only for per-axis parameters), or,
 * from opset 21 with the attribute block_size > 0, blocks along the axis. */
d5_status d5__quant_axis(const char *op, const d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                         int64_t opset, const char *scale, const char *zp, d5_quant_axis *out);
/* The d5 type of ONNX data type number `onnx` (cast.c); 0 for none. */
int32_t d5__cast_d5_type(int64_t onnx);

/* ---- Matrix products (QLinearMatMul, MatMulInteger) ----------------------------------------- */

/* numpy.matmul of A [..., M, K] and B [..., K, N] (a 1-d A is [1, K], a 1-d
 * B is [K, 1], the added dimension removed from Y), batch dimensions
 * broadcast. Each operand may come with a scale and zero point per tensor
 * (one value), per row of A / per column of B (1-d [M] / [N]) or per row /
 * column of each batch matrix ([..., M, 1] / [..., 1, N], leading dimensions
 * 1 or A's / B's). d5_qmatmul_param says where matrix t's row (A) or column
 * (B) finds its value. */
typedef struct d5_qmatmul_param {
    d5_tensor_desc full;  /* [A's batch..., M, 1] or [B's batch..., 1, N] */
    d5_tensor_desc shape; /* the parameter, seen at a rank that broadcasts into `full` */
} d5_qmatmul_param;

typedef struct d5_qmatmul {
    int64_t m, n, k;
    d5_tensor_desc a_batch, b_batch, y_batch; /* the batch dimensions */
} d5_qmatmul;

/* Checks the shapes of A and B (names `a` and `b` in messages), fills *g and
 * sets y's ndim and shape (its dtype is left alone). */
d5_status d5__qmatmul_geometry(const char *op, const d5_tensor_desc *a, const d5_tensor_desc *b,
                               d5_qmatmul *g, d5_tensor_desc *y);
/* Checks that input `p` (called `name`; NULL or dtype invalid: omitted, one
 * value 0 or 1 assumed by the caller) is a valid per-tensor, per-row
 * (side 'a') or per-column (side 'b') parameter of the operand and fills *out. */
d5_status d5__qmatmul_param(const char *op, const char *name, const d5_tensor_desc *p, char side,
                            const d5_qmatmul *g, d5_qmatmul_param *out);
/* The flat index in the parameter of batch matrix t's row or column r (t
 * counted in the operand's own batch dimensions). */
static inline int64_t d5__qmatmul_param_index(const d5_qmatmul_param *p, int64_t t, int64_t r)
{
    int64_t rows = p->full.shape[p->full.ndim - 2] * p->full.shape[p->full.ndim - 1];
    return d5__broadcast_index(&p->full, &p->shape, t * rows + r);
}
/* The exact integer products: y[t, i, j] = sum over p of (a[ta, i, p] -
 * azp[ta, i]) * (b[tb, p, j] - bzp[tb, j]), with ta and tb the batch
 * matrices that Y's batch t broadcasts from; a NULL zero point is 0. */
void d5__qmatmul_accumulate(const d5_qmatmul *g, const double *a, const double *azp,
                            const d5_qmatmul_param *ap, const double *b, const double *bzp,
                            const d5_qmatmul_param *bp, double *y);
/* 2 * M * N * K per batch matrix of Y. */
double d5__qmatmul_flops(const d5_qmatmul *g);

/* ---- Convolutions (QLinearConv, ConvInteger) ------------------------------------------------- */

/* Conv's geometry (conv_shape.h) for integer X, W and an optional int32 B
 * (b NULL or omitted): checks that X is uint8 or int8 with rank >= 3 and W
 * uint8 or int8 of X's rank, then every attribute and shape rule of Conv,
 * the messages naming `op`. */
d5_status d5__qconv_geometry(const char *op, const d5_tensor_desc *x, const d5_tensor_desc *w,
                             const d5_tensor_desc *b, const d5_attrs *attrs, d5_conv_geometry *g);
/* Checks that a weight zero point or scale (input i, `name`) holds one value
 * or is 1-d with one value per output channel; *per_channel says which. */
d5_status d5__qconv_channel_param(const char *op, const d5_tensor *in, int32_t i, const char *name,
                                  const d5_conv_geometry *g, int *per_channel);
/* The exact integer convolution: y[n, m, o] = sum over the taps of (x - xzp)
 * * (w - wzp[m]), taps in the padding contributing nothing (X is padded with
 * its zero point); wzp has one value, or one per output channel when
 * wzp_per_channel. */
void d5__qconv_accumulate(const d5_conv_geometry *g, const double *x, double xzp, const double *w,
                          const double *wzp, int wzp_per_channel, double *y);

#endif
