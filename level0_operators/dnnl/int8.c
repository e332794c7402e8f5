/* The int8 operators' shared plumbing: see int8.h. */
#include "int8.h"

#include <stdio.h>
#include <string.h>

d5_status d5__int8_dt(const char *op, const char *what, int32_t dtype, dnnl_data_type_t *out)
{
    switch (dtype) {
    case D5_U8: *out = dnnl_u8; return D5_OK;
    case D5_I8: *out = dnnl_s8; return D5_OK;
    case D5_I32: *out = dnnl_s32; return D5_OK;
    case D5_F32: *out = dnnl_f32; return D5_OK;
    default:
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): %s is %s; the int8 kernels take uint8, int8, int32 and float32",
                        op, what, d5_dtype_name((d5_dtype)dtype));
    }
}

d5_status d5__int8_md(dnnl_memory_desc_t *md, int ndims, const int64_t *dims, dnnl_data_type_t dt,
                      int any, const char *op)
{
    static const dnnl_format_tag_t tags[] = {
        dnnl_format_tag_undef, dnnl_a,       dnnl_ab,       dnnl_abc,      dnnl_abcd, dnnl_abcde,
        dnnl_abcdef,           dnnl_abcdefg, dnnl_abcdefgh, dnnl_abcdefghi};
    if (ndims < 1 || ndims > 9)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): %d-d tensors are not supported", op, ndims);
    dnnl_dims_t d;
    for (int i = 0; i < ndims; i++) d[i] = dims[i];
    return d5__dnnl_check(
        dnnl_memory_desc_init_by_tag(md, ndims, d, dt, any ? dnnl_format_tag_any : tags[ndims]), op,
        "memory descriptor");
}

d5_status d5__qparam_read(const char *op, const d5_tensor *in, int32_t nin, int32_t i,
                          const char *what, int32_t dtype, int64_t channels, d5_qparam *q)
{
    memset(q, 0, sizeof *q);
    if (i >= nin || in[i].desc.dtype == D5_DTYPE_INVALID) return D5_OK;
    const d5_tensor_desc *d = &in[i].desc;
    q->present = 1;
    q->dtype = d->dtype;
    q->count = d5_tensor_desc_numel(d);
    if (dtype != D5_DTYPE_INVALID && d->dtype != dtype)
        return d5_error(D5_ERR_INVALID, "%s: input %d (%s) is %s, expected %s", op, (int)i, what,
                        d5_dtype_name((d5_dtype)d->dtype), d5_dtype_name((d5_dtype)dtype));
    if (d->ndim > 1 || (q->count != 1 && (channels < 0 || q->count != channels))) {
        char shape[96];
        d5_tensor_desc_format(d, shape, sizeof shape);
        if (channels < 0)
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s (dnnl): input %d (%s) is %s; the dnnl backend takes one value", op,
                            (int)i, what, shape);
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): input %d (%s) is %s; the dnnl backend takes one value or %lld "
                        "(one per channel)",
                        op, (int)i, what, shape, (long long)channels);
    }
    q->known = in[i].data != NULL;
    q->data = in[i].data;
    return D5_OK;
}

static double value_at(int32_t dtype, const void *p, int64_t k)
{
    switch (dtype) {
    case D5_U8: return ((const uint8_t *)p)[k];
    case D5_I8: return ((const int8_t *)p)[k];
    case D5_I32: return ((const int32_t *)p)[k];
    case D5_F32: return ((const float *)p)[k];
    default: return 0;
    }
}

int32_t d5__qparam_int(const d5_qparam *q, int64_t k)
{
    if (!q->present || !q->data) return 0;
    return (int32_t)value_at(q->dtype, q->data, q->count == 1 ? 0 : k);
}

float d5__qparam_float(const d5_qparam *q, int64_t k)
{
    if (!q->present || !q->data) return 0.f;
    return (float)value_at(q->dtype, q->data, q->count == 1 ? 0 : k);
}

int d5__qparam_uniform(const d5_qparam *q)
{
    if (!q->present || q->count == 1) return 1;
    if (!q->known) return 0;
    for (int64_t k = 1; k < q->count; k++)
        if (value_at(q->dtype, q->data, k) != value_at(q->dtype, q->data, 0)) return 0;
    return 1;
}

int32_t d5__qvalue_int(const d5_tensor *t, int64_t k)
{
    if (t->desc.dtype == D5_DTYPE_INVALID || !t->data) return 0;
    return (int32_t)value_at(t->desc.dtype, t->data, d5_tensor_desc_numel(&t->desc) == 1 ? 0 : k);
}

float d5__qvalue_float(const d5_tensor *t, int64_t k)
{
    if (t->desc.dtype == D5_DTYPE_INVALID || !t->data) return 0.f;
    return (float)value_at(t->desc.dtype, t->data, d5_tensor_desc_numel(&t->desc) == 1 ? 0 : k);
}

d5_status d5__int8_weights_fold(const char *op, const void *w, int32_t dtype, int64_t n,
                                const d5_qparam *zp, int64_t inner, int8_t *out)
{
    for (int64_t e = 0; e < n; e++) {
        int64_t ch = zp->present && zp->count > 1 ? (e / inner) % zp->count : 0;
        int32_t v = (int32_t)value_at(dtype, w, e) - d5__qparam_int(zp, ch);
        if (v < -128 || v > 127)
            return d5_error(D5_ERR_UNSUPPORTED,
                            "%s (dnnl): weight %lld minus its zero point is %d, outside int8; "
                            "oneDNN's int8 kernels take int8 weights with no zero point",
                            op, (long long)e, (int)v);
        out[e] = (int8_t)v;
    }
    return D5_OK;
}

void d5__int8_flip(const uint8_t *w, int8_t *out, int64_t n)
{
    for (int64_t e = 0; e < n; e++) out[e] = (int8_t)(w[e] ^ 0x80u);
}

d5_status d5__int8_impl(dnnl_primitive_desc_t pd, const char *op, const char *precision,
                        d5_op_impl *info)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        impl = "unknown";
    memset(info, 0, sizeof *info);
    info->reported = 1;
    snprintf(info->precision, sizeof info->precision, "%s", precision);
    snprintf(info->forward, sizeof info->forward, "%s", impl);
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    snprintf(info->isa, sizeof info->isa, "%s", d5__dnnl_isa_name(isa));
    /* int8 products are native with VNNI (AMX has it too), emulated below. */
    int vnni =
        ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx512_core_vnni) ==
            (unsigned)dnnl_cpu_isa_avx512_core_vnni ||
        ((unsigned)isa & (unsigned)dnnl_cpu_isa_avx2_vnni) == (unsigned)dnnl_cpu_isa_avx2_vnni;
    int int8 = strcmp(precision, "int8") == 0;
    info->support = !int8 || vnni ? D5_PRECISION_NATIVE : D5_PRECISION_EMULATED;
    if (int8 && !vnni)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): without VNNI (%s), oneDNN's int8 kernels (%s) add pairs of "
                        "byte products in 16 bits with saturation (vpmaddubsw), which ONNX's "
                        "exact sums do not; d5's ref backend runs it",
                        op, info->isa, impl);
    if (strncmp(impl, "ref", 3) == 0)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): oneDNN has only its reference kernel (%s) for this case on "
                        "this CPU; d5's ref backend runs it",
                        op, impl);
    return D5_OK;
}

d5_status d5__int8_rt_mem(const d5_dnnl_ctx *c, dnnl_data_type_t dt, int64_t count,
                          dnnl_memory_t *mem, const char *op)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t d = {count};
    d5_status s = d5__dnnl_check(dnnl_memory_desc_init_by_tag(&md, 1, d, dt, dnnl_a), op,
                                 "memory descriptor");
    if (s == D5_OK)
        s = d5__dnnl_check(dnnl_memory_create(mem, &md, c->engine, DNNL_MEMORY_NONE), op,
                           "run-time scale or zero point");
    return s;
}
