/* oneDNN plumbing shared by the dnnl operators. */
#include "dnnl_util.h"

#include <string.h>

static const char *dnnl_status_text(dnnl_status_t st)
{
    switch (st) {
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "no implementation for these shapes";
    case dnnl_iterator_ends: return "iterator ends";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
    default: return "error";
    }
}

d5_status d5__dnnl_check(dnnl_status_t st, const char *op, const char *what)
{
    if (st == dnnl_success) return D5_OK;
    return d5_error(st == dnnl_out_of_memory   ? D5_ERR_NOMEM
                    : st == dnnl_unimplemented ? D5_ERR_UNSUPPORTED
                                               : D5_ERR_BACKEND,
                    "%s (dnnl): %s: %s (oneDNN status %d)", op, what, dnnl_status_text(st),
                    (int)st);
}

d5_status d5__dnnl_ctx_create(d5_dnnl_ctx *c, const char *op)
{
    memset(c, 0, sizeof *c);
    d5_status s = d5__dnnl_check(dnnl_engine_create(&c->engine, dnnl_cpu, 0), op, "engine");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags), op,
                           "stream");
    if (s != D5_OK) d5__dnnl_ctx_free(c);
    return s;
}

void d5__dnnl_ctx_free(d5_dnnl_ctx *c)
{
    if (c->stream) dnnl_stream_destroy(c->stream);
    if (c->engine) dnnl_engine_destroy(c->engine);
    memset(c, 0, sizeof *c);
}

d5_status d5__dnnl_plain_md_of(dnnl_memory_desc_t *md, int ndims, const int64_t *dims,
                               dnnl_data_type_t dt, const char *op)
{
    static const dnnl_format_tag_t tags[] = {
        dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};
    if (ndims < 1 || ndims > 6)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): %d-d tensors are not supported", op, ndims);
    dnnl_dims_t d;
    for (int i = 0; i < ndims; i++) d[i] = dims[i];
    return d5__dnnl_check(dnnl_memory_desc_init_by_tag(md, ndims, d, dt, tags[ndims]), op,
                          "memory descriptor");
}

d5_status d5__dnnl_plain_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, const char *op)
{
    return d5__dnnl_plain_md_of(md, ndims, dims, dnnl_f32, op);
}

dnnl_data_type_t d5__dnnl_type(int32_t dtype)
{
    switch (dtype) {
    case D5_F32: return dnnl_f32;
    case D5_BF16: return dnnl_bf16;
    case D5_F16: return dnnl_f16;
    case D5_I8: return dnnl_s8;
    case D5_U8: return dnnl_u8;
    case D5_I32: return dnnl_s32;
    default: return dnnl_data_type_undef;
    }
}

const char *d5__dnnl_type_name(dnnl_data_type_t dt)
{
    switch (dt) {
    case dnnl_f32: return "float32";
    case dnnl_bf16: return "bfloat16";
    case dnnl_f16: return "float16";
    case dnnl_s8: return "int8";
    case dnnl_u8: return "uint8";
    case dnnl_s32: return "int32";
    default: return "undefined";
    }
}

d5_status d5__dnnl_blocked_md_of(dnnl_memory_desc_t *md, const int64_t *dims, int64_t channels,
                                 dnnl_data_type_t dt, const char *op)
{
    int block = dnnl_get_effective_cpu_isa() >= dnnl_cpu_isa_avx512_core ? 16 : 8;
    if (channels % block != 0)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): the blocked layout needs channels in multiples of %d, not %lld",
                        op, block, (long long)channels);
    dnnl_dims_t d = {dims[0], dims[1], dims[2], dims[3]};
    return d5__dnnl_check(
        dnnl_memory_desc_init_by_tag(md, 4, d, dt, block == 16 ? dnnl_nChw16c : dnnl_nChw8c), op,
        "blocked memory descriptor");
}

d5_status d5__dnnl_blocked_md(dnnl_memory_desc_t *md, const int64_t *dims, int64_t channels,
                              const char *op)
{
    return d5__dnnl_blocked_md_of(md, dims, channels, dnnl_f32, op);
}

d5_status d5__dnnl_arg_init(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const dnnl_memory_desc_t *user_md,
                            const dnnl_memory_desc_t *inner_md, const char *op)
{
    memset(a, 0, sizeof *a);
    a->user_md = *user_md;
    a->inner_md = *inner_md;
    a->same = dnnl_memory_desc_equal(user_md, inner_md);
    d5_status s = d5__dnnl_check(
        dnnl_memory_create(&a->user_mem, user_md, c->engine, DNNL_MEMORY_NONE), op, "memory");
    if (s != D5_OK || a->same) return s;
    s = d5__dnnl_check(dnnl_memory_create(&a->inner_mem, inner_md, c->engine, DNNL_MEMORY_ALLOCATE),
                       op, "reorder buffer");
    dnnl_primitive_desc_t pd = NULL;
    if (s == D5_OK)
        s = d5__dnnl_check(
            dnnl_reorder_primitive_desc_create(&pd, user_md, c->engine, inner_md, c->engine, NULL),
            op, "reorder");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&a->to_inner, pd), op, "reorder");
    if (pd) dnnl_primitive_desc_destroy(pd);
    pd = NULL;
    if (s == D5_OK)
        s = d5__dnnl_check(
            dnnl_reorder_primitive_desc_create(&pd, inner_md, c->engine, user_md, c->engine, NULL),
            op, "reorder");
    if (s == D5_OK) s = d5__dnnl_check(dnnl_primitive_create(&a->to_user, pd), op, "reorder");
    if (pd) dnnl_primitive_desc_destroy(pd);
    return s;
}

void d5__dnnl_arg_free(d5_dnnl_arg *a)
{
    if (a->to_inner) dnnl_primitive_destroy(a->to_inner);
    if (a->to_user) dnnl_primitive_destroy(a->to_user);
    if (a->inner_mem) dnnl_memory_destroy(a->inner_mem);
    if (a->user_mem) dnnl_memory_destroy(a->user_mem);
    memset(a, 0, sizeof *a);
}

static d5_status reorder(dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to,
                         const d5_dnnl_ctx *c, const char *op)
{
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    return d5__dnnl_check(dnnl_primitive_execute(r, c->stream, 2, args), op, "reorder");
}

d5_status d5__dnnl_arg_in(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const void *ptr, dnnl_memory_t *mem,
                          const char *op)
{
    d5_status s =
        d5__dnnl_check(dnnl_memory_set_data_handle(a->user_mem, (void *)ptr), op, "memory");
    if (s != D5_OK) return s;
    if (a->same) {
        *mem = a->user_mem;
        return D5_OK;
    }
    *mem = a->inner_mem;
    return a->packed ? D5_OK : reorder(a->to_inner, a->user_mem, a->inner_mem, c, op);
}

d5_status d5__dnnl_arg_pack(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const void *ptr, const char *op)
{
    if (a->same || !ptr) return D5_OK;
    a->packed = 0;
    dnnl_memory_t mem;
    d5_status s = d5__dnnl_arg_in(a, c, ptr, &mem, op);
    if (s == D5_OK) s = d5__dnnl_check(dnnl_stream_wait(c->stream), op, "stream");
    a->packed = s == D5_OK;
    return s;
}

d5_status d5__dnnl_arg_out(d5_dnnl_arg *a, void *ptr, dnnl_memory_t *mem)
{
    d5_status s = d5__dnnl_check(dnnl_memory_set_data_handle(a->user_mem, ptr), "dnnl", "memory");
    *mem = a->same ? a->user_mem : a->inner_mem;
    return s;
}

d5_status d5__dnnl_arg_finish(d5_dnnl_arg *a, const d5_dnnl_ctx *c, const char *op)
{
    if (a->same) return D5_OK;
    return reorder(a->to_user, a->inner_mem, a->user_mem, c, op);
}
