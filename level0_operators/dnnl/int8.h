/* What the dnnl backend's int8 operators share (matmulinteger.c,
 * convinteger.c, quant.c): the element types oneDNN takes, the quantization
 * parameters (scales and zero points) as ONNX passes them, weights brought
 * into int8 with their zero point subtracted, and the name of the kernel
 * oneDNN picked.
 *
 * ONNX passes a scale or a zero point as a tensor input: a scalar or a 1-d
 * tensor of one value per tensor, or of one value per channel (a column of
 * MatMul's B, an output channel of Conv's W, a slice along QuantizeLinear's
 * axis). Its values may be known at create (an initializer: the usual case
 * in a quantized model) or arrive with each forward call; oneDNN takes both,
 * as constants baked into the primitive or as run-time arguments. */
#ifndef D5_DNNL_INT8_H
#define D5_DNNL_INT8_H

#include "dnnl_util.h"

/* oneDNN's type for a d5 dtype: uint8, int8, int32, float32;
 * D5_ERR_UNSUPPORTED naming the operator and input otherwise. */
d5_status d5__int8_dt(const char *op, const char *what, int32_t dtype, dnnl_data_type_t *out);

/* A plain (row-major) memory descriptor of `dt`, or one of layout "any"
 * (the primitive picks) when `any` is set. */
d5_status d5__int8_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, dnnl_data_type_t dt,
                      int any, const char *op);

/* A quantization parameter: a scale (float32) or a zero point (int8, uint8,
 * int32). */
typedef struct d5_qparam {
    int present;      /* given (an omitted zero point is 0) */
    int known;        /* values known at create */
    int64_t count;    /* 1, or one per channel */
    int32_t dtype;    /* a d5_dtype */
    const void *data; /* at create only (the caller's memory); NULL when not known */
} d5_qparam;

/* Reads input i of `op` as a scale or zero point named `what`: a scalar or a
 * 1-d tensor of 1 value, or of `channels` values (channels < 0: one value
 * only). `dtype` is the type it must have (D5_DTYPE_INVALID: any). An omitted
 * optional input gives present = 0. Errors, each naming the operator and
 * input: D5_ERR_INVALID for another type, D5_ERR_UNSUPPORTED for another
 * shape (which ref may take: ONNX also allows [..., M, 1] and the like). */
d5_status d5__qparam_read(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                          const char *what, int32_t dtype, int64_t channels, d5_qparam *q);
/* Value k of a known parameter (k < count; 0 for an absent one), as an
 * integer or a float. */
int32_t d5__qparam_int(const d5_qparam *q, int64_t k);
float d5__qparam_float(const d5_qparam *q, int64_t k);
/* 1 when the parameter has one value or is known with all values equal
 * (then a per-channel zero point is a per-tensor one); 0 otherwise. */
int d5__qparam_uniform(const d5_qparam *q);
/* The same value read from forward's tensor: element k of a scale or zero
 * point that arrives at run time. */
int32_t d5__qvalue_int(const d5_tensor *t, int64_t k);
float d5__qvalue_float(const d5_tensor *t, int64_t k);

/* Weights with their zero point subtracted, as int8: out[e] = w[e] -
 * zp[channel(e)] with channel(e) = (e / inner) % zp->count (0 for an absent
 * zero point). D5_ERR_UNSUPPORTED, naming the operator and the first value
 * that does not fit, when a result falls outside [-128, 127]: oneDNN's int8
 * kernels take int8 weights and no weight zero point (convolutions) or one
 * per tensor (matmul). */
d5_status d5__int8_weights_fold(const char *op, const void *w, int32_t dtype, int64_t n,
                                const d5_qparam *zp, int64_t inner, int8_t *out);
/* uint8 weights as int8 shifted by -128 (w - 128, the sign bit flipped):
 * with a weight zero point z, (w - z) = (w' - (z - 128)). */
void d5__int8_flip(const uint8_t *w, int8_t *out, int64_t n);

/* What an int8 operator reports through d5_op_impl_get (d5/precision.h):
 * the first member of its state. */
typedef struct d5_int8_head {
    d5_op_impl info;
} d5_int8_head;

/* Fills `info` for the primitive `pd`: its kernel as oneDNN names it
 * ("brg:avx512_core_amx_int8", "jit_int8:avx512_core_vnni", "gemm:jit",
 * "jit:uni") in info->forward, `precision` ("int8" for the products of int8
 * operands, "f32" for QuantizeLinear and DequantizeLinear), oneDNN's
 * instruction set and whether the kernel is native to it. oneDNN's reference
 * kernels ("ref_int8:any", "ref:any") are what it runs when no optimized
 * kernel takes the case, and without VNNI oneDNN's int8 products saturate
 * sums of two products at 16 bits (vpmaddubsw) where ONNX sums exactly: in
 * both cases the operator declines (D5_ERR_UNSUPPORTED, naming the kernel and
 * ending "d5's ref backend runs it") so that d5's own ref backend runs
 * instead. */
d5_status d5__int8_impl(dnnl_primitive_desc_t pd, const char *op, const char *precision,
                        d5_op_impl *info);

/* A memory object over one int32 (a run-time zero point) or `count` floats
 * (run-time scales), created with no buffer. */
d5_status d5__int8_rt_mem(const d5_dnnl_ctx *c, dnnl_data_type_t dt, int64_t count,
                          dnnl_memory_t *mem, const char *op);

#endif
