/* oneDNN's matmul primitive for Gemm and MatMul: see mm.h. */
#include "mm.h"

#include <stdio.h>
#include <string.h>

void d5__dnnl_dense_strides(int ndims, const dnnl_dims_t dims, dnnl_dims_t strides)
{
    dnnl_dim_t s = 1;
    for (int d = ndims - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

static d5_status md_of(dnnl_memory_desc_t *md, int ndims, const dnnl_dims_t dims,
                       const dnnl_dims_t strides, dnnl_data_type_t dt, const char *op)
{
    return d5__dnnl_check(dnnl_memory_desc_init_by_strides(md, ndims, dims, dt, strides), op,
                          "matrix memory descriptor");
}

/* The caller's descriptors of A, B and C. */
static d5_status user_mds(const d5_dnnl_mm_shape *sh, dnnl_memory_desc_t *a, dnnl_memory_desc_t *b,
                          dnnl_memory_desc_t *c, const char *op)
{
    dnnl_dims_t cs;
    d5__dnnl_dense_strides(sh->ndims, sh->c_dims, cs);
    d5_status s = md_of(a, sh->ndims, sh->a_dims, sh->a_strides, sh->a_type, op);
    if (s == D5_OK) s = md_of(b, sh->ndims, sh->b_dims, sh->b_strides, sh->b_type, op);
    if (s == D5_OK) s = md_of(c, sh->ndims, sh->c_dims, cs, sh->c_type, op);
    return s;
}

int d5__dnnl_mm_blocked_b(int64_t rows, int constant)
{
    return constant || rows >= D5_DNNL_MM_BLOCKED_ROWS;
}

/* The descriptor with B in the caller's layout, or in oneDNN's choice when
 * `b_any`. */
static d5_status mm_desc(const d5_dnnl_ctx *ctx, const d5_dnnl_mm_shape *sh,
                         dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath, int b_any,
                         dnnl_primitive_desc_t *pd, const char *op)
{
    *pd = NULL;
    dnnl_memory_desc_t a, b, c;
    d5_status s = user_mds(sh, &a, &b, &c, op);
    /* The primitive reads A (and B unless b_any) in the caller's layout, in `compute`. */
    if (s == D5_OK) s = md_of(&a, sh->ndims, sh->a_dims, sh->a_strides, compute, op);
    if (s == D5_OK && b_any)
        s = d5__dnnl_check(
            dnnl_memory_desc_init_by_tag(&b, sh->ndims, sh->b_dims, compute, dnnl_format_tag_any),
            op, "matrix memory descriptor");
    else if (s == D5_OK)
        s = md_of(&b, sh->ndims, sh->b_dims, sh->b_strides, compute, op);
    dnnl_matmul_desc_t md;
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_matmul_desc_init(&md, &a, &b, NULL, &c), op, "matmul descriptor");
    dnnl_post_ops_t po = NULL;
    if (s == D5_OK && sh->beta != 0.0f) {
        s = d5__dnnl_check(dnnl_post_ops_create(&po), op, "post-ops");
        if (s == D5_OK)
            s = d5__dnnl_check(dnnl_post_ops_append_sum(po, sh->beta), op, "sum post-op");
    }
    dnnl_primitive_attr_t attr = NULL;
    if (s == D5_OK) s = d5__dnnl_attr(&attr, fpmath, po, op);
    if (s == D5_OK && sh->alpha != 1.0f) {
        if (!attr) s = d5__dnnl_check(dnnl_primitive_attr_create(&attr), op, "attributes");
        if (s == D5_OK)
            s = d5__dnnl_check(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &sh->alpha), op,
                               "output scale");
    }
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_desc_create(pd, &md, attr, ctx->engine, NULL), op,
                           "matmul primitive descriptor");
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    return s;
}

d5_status d5__dnnl_mm_desc(const d5_dnnl_ctx *ctx, const d5_dnnl_mm_shape *sh,
                           dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath,
                           dnnl_primitive_desc_t *pd, const char *op)
{
    if (sh->b_blocked && compute == dnnl_bf16) {
        d5_status s = mm_desc(ctx, sh, compute, fpmath, 1, pd, op);
        if (s != D5_ERR_UNSUPPORTED) return s;
    }
    return mm_desc(ctx, sh, compute, fpmath, 0, pd, op);
}

d5_status d5__dnnl_mm_init(d5_dnnl_mm *mm, const d5_dnnl_ctx *ctx, const d5_dnnl_mm_shape *sh,
                           const_dnnl_primitive_desc_t pd, const char *op)
{
    memset(mm, 0, sizeof *mm);
    dnnl_memory_desc_t a, b, c;
    d5_status s = user_mds(sh, &a, &b, &c, op);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&mm->prim, pd), op, "matmul");
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&mm->a, ctx, &a,
                              dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), op);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&mm->b, ctx, &b,
                              dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), op);
    if (s == D5_OK)
        s = d5__dnnl_arg_init(&mm->c, ctx, &c,
                              dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), op);
    if (s != D5_OK) d5__dnnl_mm_free(mm);
    return s;
}

d5_status d5__dnnl_mm_create(d5_dnnl_mm *mm, const d5_dnnl_ctx *ctx, const d5_dnnl_mm_shape *sh,
                             dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath, char *impl,
                             size_t impl_size, const char *op)
{
    dnnl_primitive_desc_t pd = NULL;
    memset(mm, 0, sizeof *mm);
    d5_status s = d5__dnnl_mm_desc(ctx, sh, compute, fpmath, &pd, op);
    if (s == D5_OK) s = d5__dnnl_mm_init(mm, ctx, sh, pd, op);
    if (s == D5_OK && impl) d5__dnnl_impl_name(pd, impl, impl_size);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return s;
}

d5_status d5__dnnl_mm_run(d5_dnnl_mm *mm, const d5_dnnl_ctx *ctx, const void *a, const void *b,
                          void *c, const char *op)
{
    dnnl_memory_t ma, mb, mc;
    d5_status s = d5__dnnl_arg_in(&mm->a, ctx, a, &ma, op);
    if (s == D5_OK) s = d5__dnnl_arg_in(&mm->b, ctx, b, &mb, op);
    /* The destination is the caller's memory (C's type and layout are never converted). */
    if (s == D5_OK) s = d5__dnnl_arg_out(&mm->c, c, &mc);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(mm->prim, ctx->stream, 3, args), op, "matmul");
    if (s == D5_OK) s = d5__dnnl_arg_finish(&mm->c, ctx, op);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(ctx->stream), op, "stream");
    return s;
}

void d5__dnnl_mm_free(d5_dnnl_mm *mm)
{
    if (mm->prim) dnnl_primitive_destroy(mm->prim);
    d5__dnnl_arg_free(&mm->a);
    d5__dnnl_arg_free(&mm->b);
    d5__dnnl_arg_free(&mm->c);
    memset(mm, 0, sizeof *mm);
}

d5_status d5__dnnl_convert(const d5_dnnl_ctx *ctx, const void *src, dnnl_data_type_t src_type,
                           void *dst, dnnl_data_type_t dst_type, int64_t n, const char *op)
{
    if (n <= 0) return D5_OK;
    dnnl_memory_desc_t from, to;
    dnnl_dims_t dims = {n};
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t r = NULL;
    dnnl_memory_t m_from = NULL, m_to = NULL;
    d5_status s = d5__dnnl_check(dnnl_memory_desc_init_by_tag(&from, 1, dims, src_type, dnnl_a), op,
                                 "conversion");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_desc_init_by_tag(&to, 1, dims, dst_type, dnnl_a), op,
                           "conversion");
    if (s == D5_OK)
        s = d5__dnnl_check(
            dnnl_reorder_primitive_desc_create(&pd, &from, ctx->engine, &to, ctx->engine, NULL), op,
            "conversion");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&r, pd), op, "conversion");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_create(&m_from, &from, ctx->engine, (void *)src), op,
                           "conversion");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_create(&m_to, &to, ctx->engine, dst), op, "conversion");
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, m_from}, {DNNL_ARG_TO, m_to}};
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_primitive_execute(r, ctx->stream, 2, args), op, "conversion");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(ctx->stream), op, "stream");
    if (m_from) dnnl_memory_destroy(m_from);
    if (m_to) dnnl_memory_destroy(m_to);
    if (r) dnnl_primitive_destroy(r);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return s;
}

static d5_status mm_pair(d5_dnnl_mm *da, d5_dnnl_mm *db, const d5_dnnl_ctx *ctx,
                         const d5_dnnl_mm_shape *a, const d5_dnnl_mm_shape *b,
                         dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath, d5_op_impl *info,
                         const char *op)
{
    d5_status s = d5__dnnl_mm_create(da, ctx, a, compute, fpmath, info->backward_data,
                                     sizeof info->backward_data, op);
    if (s == D5_OK)
        s = d5__dnnl_mm_create(db, ctx, b, compute, fpmath, info->backward_weights,
                               sizeof info->backward_weights, op);
    if (s != D5_OK) {
        d5__dnnl_mm_free(da);
        d5__dnnl_mm_free(db);
    }
    return s;
}

d5_status d5__dnnl_mm_backward_create(d5_dnnl_mm *da, d5_dnnl_mm *db, const d5_dnnl_ctx *ctx,
                                      const d5_dnnl_mm_shape *a, const d5_dnnl_mm_shape *b,
                                      d5_dnnl_impl *im, const char *op)
{
    d5_status s = mm_pair(da, db, ctx, a, b, im->compute, im->fpmath, &im->info, op);
    if (s != D5_ERR_UNSUPPORTED || im->tensors != dnnl_f32 || im->compute == dnnl_f32) return s;
    s = mm_pair(da, db, ctx, a, b, dnnl_f32, dnnl_fpmath_mode_strict, &im->info, op);
    if (s == D5_OK) {
        size_t used = strlen(im->info.note);
        snprintf(im->info.note + used, sizeof im->info.note - used,
                 "%sbackward in float32: oneDNN has no %s matmul for it", used ? "; " : "",
                 d5__dnnl_type_name(im->compute));
    }
    return s;
}
