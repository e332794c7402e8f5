/* The dnnl backend's plumbing: an engine and stream per operator instance,
 * status conversion, and "user" tensors in plain layouts bound to whatever
 * layout the primitive prefers, with reorders between them. Only files in
 * dnnl/ include oneDNN's header. */
#ifndef D5_DNNL_UTIL_H
#define D5_DNNL_UTIL_H

#include "d5/operator.h"
#include "d5/precision.h"

#include <oneapi/dnnl/dnnl.h>

/* Converts a oneDNN status; D5_OK for dnnl_success. */
d5_status d5__dnnl_check(dnnl_status_t st, const char *op, const char *what);

typedef struct d5_dnnl_ctx {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
} d5_dnnl_ctx;

d5_status d5__dnnl_ctx_create(d5_dnnl_ctx *c, const char *op);
void d5__dnnl_ctx_free(d5_dnnl_ctx *c);

/* Plain (row-major) memory descriptor of a float32 tensor of the given dims;
 * `tag` picks the plain tag for that rank. */
d5_status d5__dnnl_plain_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, const char *op);
/* The same for elements of type `dt`. */
d5_status d5__dnnl_plain_md_of(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                               dnnl_data_type_t dt, const char *op);
/* oneDNN's type of a d5 dtype (float32, bfloat16, float16, int8, uint8,
 * int32); dnnl_data_type_undef for the others. */
dnnl_data_type_t d5__dnnl_type(int32_t dtype);
/* "float32", "bfloat16", "float16", ...: a oneDNN type by d5's name for it. */
const char *d5__dnnl_type_name(dnnl_data_type_t dt);
/* oneDNN's name of an instruction set ("avx2", "avx512_core_amx"; "unknown"). */
const char *d5__dnnl_isa_name(dnnl_cpu_isa_t isa);

/* A tensor the caller holds in a plain layout (`user`) and the primitive wants
 * in `inner`; when they differ, a buffer and reorder primitives bridge them. */
typedef struct d5_dnnl_arg {
    dnnl_memory_desc_t user_md, inner_md;
    dnnl_memory_t user_mem, inner_mem;
    dnnl_primitive_t to_inner, to_user;
    int same;
    int packed; /* a constant already in inner_mem (d5__dnnl_arg_pack) */
} d5_dnnl_arg;

/* Sets up `a` for `user_md` and the primitive's `inner_md` (pass user_md for
 * both when the primitive takes plain memory). */
d5_status d5__dnnl_arg_init(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const dnnl_memory_desc_t *user_md,
                            const dnnl_memory_desc_t *inner_md, const char *op);
void d5__dnnl_arg_free(d5_dnnl_arg *a);
/* Points the user memory at `ptr` and, for an input, reorders it into the
 * primitive's layout. Returns the memory the primitive reads or writes. */
d5_status d5__dnnl_arg_in(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const void *ptr, dnnl_memory_t *mem,
                          const char *op);
d5_status d5__dnnl_arg_out(d5_dnnl_arg *a, void *ptr, dnnl_memory_t *mem);
/* The blocked layout of 4-d activations (N, C, H, W) that the executor's
 * layout propagation passes between operators (D5_ATTR_BLOCKED): 16 channels
 * a block with AVX-512, else 8. D5_ERR_UNSUPPORTED when `channels` (dims[1])
 * does not fill the blocks. */
d5_status d5__dnnl_blocked_md(dnnl_memory_desc_t *md, const int64_t *dims, int64_t channels,
                              const char *op);
/* The same layout for elements of type `dt`. */
d5_status d5__dnnl_blocked_md_of(dnnl_memory_desc_t *md, const int64_t *dims, int64_t channels,
                                 dnnl_data_type_t dt, const char *op);
/* For an input known at create (a weight of an inference graph): reorders
 * `ptr` into the primitive's layout once, so that d5__dnnl_arg_in no longer
 * reorders it (weights prepacked at load, not at every run). Nothing to do
 * when the layouts are the same. */
d5_status d5__dnnl_arg_pack(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const void *ptr, const char *op);
/* After the primitive ran: reorders an output back into the user's layout. */
d5_status d5__dnnl_arg_finish(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const char *op);

/* ---- Precision (precision.c) ------------------------------------------------------------ */

/* What a Conv, FusedConv, Gemm or MatMul computes in: the first member of
 * their states, so that d5_op_impl_get can read it. */
typedef struct d5_dnnl_impl {
    d5_op_impl info;
    dnnl_data_type_t tensors;  /* the type of the float tensors given (T) */
    dnnl_data_type_t compute;  /* what the primitives multiply: T, or a lower type for float32
                                  tensors under a compute precision (reorders convert) */
    dnnl_fpmath_mode_t fpmath; /* set on every primitive's attributes */
    dnnl_data_type_t asked;    /* the requested compute precision; undef when none */
} d5_dnnl_impl;

/* Builds the primitive descriptor of the forward pass with the multiplied
 * operands in `compute` and `fpmath` on its attributes. */
typedef d5_status (*d5_dnnl_build_fn)(void *self, dnnl_data_type_t compute,
                                      dnnl_fpmath_mode_t fpmath, dnnl_primitive_desc_t *pd);

/* Reads D5_ATTR_PRECISION and records the tensors' type `tensors` (a d5
 * dtype): D5_ERR_INVALID for another precision than f32, bf16 and f16,
 * D5_ERR_UNSUPPORTED for a tensor type oneDNN has no floating kind of. */
d5_status d5__dnnl_impl_init(d5_dnnl_impl *im, const d5_attrs *attrs, int32_t tensors,
                             const char *op);
/* Picks the compute type and builds the forward descriptor with it: float32
 * tensors under a compute precision try oneDNN's fpmath mode, then operands
 * converted to the lower type, then plain float32 (the note says why);
 * bfloat16 or float16 tensors without an implementation are
 * D5_ERR_UNSUPPORTED ("float16 convolution: oneDNN 2.6.3 has no CPU
 * implementation on this machine"). `what` names the computation. */
d5_status d5__dnnl_impl_choose(d5_dnnl_impl *im, const char *what, const char *op,
                               d5_dnnl_build_fn build, void *self, dnnl_primitive_desc_t *pd);
/* Float32 tensors under a compute precision that the caller computes in
 * float32 anyway, because the lower precision would be slower there: builds
 * the float32 forward descriptor and notes "<asked> asked; <why>". */
d5_status d5__dnnl_impl_keep_f32(d5_dnnl_impl *im, const char *why, d5_dnnl_build_fn build,
                                 void *self, dnnl_primitive_desc_t *pd);
/* Copies the implementation name of `pd` into dst[size]. */
void d5__dnnl_impl_name(const_dnnl_primitive_desc_t pd, char *dst, size_t size);
/* Attributes holding `fpmath` (when not strict) and `po` (may be NULL); *attr
 * is NULL when there is nothing to set. */
d5_status d5__dnnl_attr(dnnl_primitive_attr_t *attr, dnnl_fpmath_mode_t fpmath,
                        const_dnnl_post_ops_t po, const char *op);

#endif
