/* The precision of the dnnl backend's Conv, FusedConv, Gemm and MatMul: which
 * type their primitives multiply in, on which instructions, and why.
 *
 * Tensors of bfloat16 or float16 run primitives of that type (float32
 * accumulation inside oneDNN). Float32 tensors under a compute precision
 * (D5_ATTR_PRECISION) first get oneDNN's fpmath mode, which lets a primitive
 * convert its inputs implicitly; oneDNN 2.6's CPU kernels ignore it (the
 * implementation stays "jit:avx512_core"), so the operands are then converted
 * explicitly: the primitive takes bfloat16 sources and weights, which the
 * reorders in front of it produce from the float32 tensors, and writes float32
 * results. Where neither exists, the operator stays float32 and says why; an
 * operator that knows the lower precision is slower for its shape keeps
 * float32 too, with its reason (d5__dnnl_impl_keep_f32).
 *
 * The class of a precision follows oneDNN's effective instruction set:
 * bfloat16 is native with AVX512_BF16 (avx512_core_bf16 and avx512_core_amx),
 * emulated on plain AVX-512 (oneDNN converts with integer instructions), and
 * unsupported below. */
#include "dnnl_util.h"

#include <stdio.h>
#include <string.h>

const char *d5__dnnl_isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
    }
}

/* 1 when `isa` includes every feature of `need` (oneDNN's values are bit sets). */
static int isa_has(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t need)
{
    return ((unsigned)isa & (unsigned)need) == (unsigned)need;
}

static const char *short_name(dnnl_data_type_t dt)
{
    switch (dt) {
    case dnnl_f32: return "f32";
    case dnnl_bf16: return "bf16";
    case dnnl_f16: return "f16";
    default: return "?";
    }
}

/* How the primitive `impl` runs type `dt` on `isa`. */
static d5_precision_class classify(dnnl_data_type_t dt, dnnl_cpu_isa_t isa, const char *impl)
{
    if (dt == dnnl_f32) return D5_PRECISION_NATIVE;
    if (dt == dnnl_bf16)
        return isa_has(isa, dnnl_cpu_isa_avx512_core_bf16) ? D5_PRECISION_NATIVE
                                                           : D5_PRECISION_EMULATED;
    if (dt == dnnl_s8 || dt == dnnl_u8)
        return isa_has(isa, dnnl_cpu_isa_avx512_core_vnni) || isa_has(isa, dnnl_cpu_isa_avx2_vnni)
                   ? D5_PRECISION_NATIVE
                   : D5_PRECISION_EMULATED;
    /* float16: oneDNN 2.6 has no CPU kernel for it; a later one names its ISA. */
    return strstr(impl, "fp16") || strstr(impl, "amx") ? D5_PRECISION_NATIVE
                                                       : D5_PRECISION_EMULATED;
}

/* 1 when implementation `impl` of a float32 primitive multiplies in `dt`:
 * oneDNN names such kernels after the type, or after AMX (which has no float32
 * and names its float16 kernels "amx_fp16"). */
static int lowered(const char *impl, dnnl_data_type_t dt)
{
    if (dt == dnnl_bf16)
        return strstr(impl, "bf16") != NULL || (strstr(impl, "amx") && !strstr(impl, "fp16"));
    for (const char *p = strstr(impl, "f16"); p; p = strstr(p + 1, "f16"))
        if (p == impl || p[-1] != 'b') return 1; /* "f16" or "fp16", not "bf16" */
    return 0;
}

void d5__dnnl_impl_name(const_dnnl_primitive_desc_t pd, char *dst, size_t size)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
        impl = "unknown";
    snprintf(dst, size, "%s", impl);
}

d5_status d5__dnnl_attr(dnnl_primitive_attr_t *attr, dnnl_fpmath_mode_t fpmath,
                        const_dnnl_post_ops_t po, const char *op)
{
    *attr = NULL;
    if (fpmath == dnnl_fpmath_mode_strict && !po) return D5_OK;
    d5_status s = d5__dnnl_check(dnnl_primitive_attr_create(attr), op, "attributes");
    if (s == D5_OK && fpmath != dnnl_fpmath_mode_strict)
        s = d5__dnnl_check(dnnl_primitive_attr_set_fpmath_mode(*attr, fpmath), op, "fpmath mode");
    if (s == D5_OK && po)
        s = d5__dnnl_check(dnnl_primitive_attr_set_post_ops(*attr, po), op, "post-ops");
    if (s != D5_OK && *attr) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return s;
}

d5_status d5__dnnl_impl_init(d5_dnnl_impl *im, const d5_attrs *attrs, int32_t tensors,
                             const char *op)
{
    memset(im, 0, sizeof *im);
    im->info.reported = 1;
    im->fpmath = dnnl_fpmath_mode_strict;
    im->asked = dnnl_data_type_undef;
    snprintf(im->info.isa, sizeof im->info.isa, "%s",
             d5__dnnl_isa_name(dnnl_get_effective_cpu_isa()));
    const char *want = NULL;
    d5_status s = d5_attrs_string(attrs, D5_ATTR_PRECISION, NULL, &want);
    if (s != D5_OK) return s;
    if (want && strcmp(want, "bf16") == 0)
        im->asked = dnnl_bf16;
    else if (want && strcmp(want, "f16") == 0)
        im->asked = dnnl_f16;
    else if (want && strcmp(want, "tf32") == 0)
        want = "f32"; /* a GPU tensor-core precision: float32 on the CPU */
    else if (want && strcmp(want, "f32") != 0)
        return d5_error(D5_ERR_INVALID,
                        "%s (dnnl): attribute %s is '%.32s'; expected f32, bf16 or f16", op,
                        D5_ATTR_PRECISION, want);
    if (want) snprintf(im->info.requested, sizeof im->info.requested, "%s", want);
    im->tensors = d5__dnnl_type(tensors);
    if (im->tensors != dnnl_f32 && im->tensors != dnnl_bf16 && im->tensors != dnnl_f16)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (dnnl): %s tensors; float32 only, or bfloat16 and float16 where "
                        "oneDNN has kernels for them",
                        op, d5_dtype_name((d5_dtype)tensors));
    im->compute = im->tensors;
    return D5_OK;
}

/* Records the forward descriptor that was kept. */
static void accept(d5_dnnl_impl *im, dnnl_data_type_t compute, dnnl_fpmath_mode_t fpmath,
                   dnnl_primitive_desc_t pd)
{
    im->compute = compute;
    im->fpmath = fpmath;
    d5__dnnl_impl_name(pd, im->info.forward, sizeof im->info.forward);
    dnnl_data_type_t eff = compute;
    if (compute == dnnl_f32 && fpmath != dnnl_fpmath_mode_strict) eff = im->asked;
    snprintf(im->info.precision, sizeof im->info.precision, "%s", short_name(eff));
    im->info.support = classify(eff, dnnl_get_effective_cpu_isa(), im->info.forward);
}

static void no_kernel(char *dst, size_t size, dnnl_data_type_t dt, const char *what,
                      const char *isa)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(dst, size, "%s %s: oneDNN %d.%d.%d has no CPU implementation on this machine (%s)",
             d5__dnnl_type_name(dt), what, v->major, v->minor, v->patch, isa);
}

d5_status d5__dnnl_impl_choose(d5_dnnl_impl *im, const char *what, const char *op,
                               d5_dnnl_build_fn build, void *self, dnnl_primitive_desc_t *pd)
{
    *pd = NULL;
    if (im->tensors != dnnl_f32 || im->asked == dnnl_data_type_undef) {
        d5_status s = build(self, im->tensors, dnnl_fpmath_mode_strict, pd);
        if (s == D5_ERR_UNSUPPORTED && im->tensors != dnnl_f32) {
            char msg[256];
            no_kernel(msg, sizeof msg, im->tensors, what, im->info.isa);
            return d5_error(D5_ERR_UNSUPPORTED, "%s (dnnl): %s", op, msg);
        }
        if (s == D5_OK) accept(im, im->tensors, dnnl_fpmath_mode_strict, *pd);
        return s;
    }
    /* Float32 tensors under a compute precision: oneDNN's fpmath mode first. */
    dnnl_fpmath_mode_t mode = im->asked == dnnl_bf16 ? dnnl_fpmath_mode_bf16 : dnnl_fpmath_mode_f16;
    d5_status s = build(self, dnnl_f32, mode, pd);
    if (s == D5_OK) {
        char name[64];
        d5__dnnl_impl_name(*pd, name, sizeof name);
        if (lowered(name, im->asked)) {
            accept(im, dnnl_f32, mode, *pd);
            snprintf(im->info.note, sizeof im->info.note, "oneDNN's fpmath mode %s",
                     short_name(im->asked));
            return D5_OK;
        }
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
    } else if (s != D5_ERR_UNSUPPORTED) {
        return s;
    }
    /* Then float32 operands converted by the reorders in front of the primitive. */
    s = build(self, im->asked, dnnl_fpmath_mode_strict, pd);
    if (s == D5_OK) {
        const dnnl_version_t *v = dnnl_version();
        accept(im, im->asked, dnnl_fpmath_mode_strict, *pd);
        snprintf(im->info.note, sizeof im->info.note,
                 "float32 operands converted to %s for the primitives: oneDNN %d.%d.%d's CPU "
                 "kernels ignore the fpmath mode",
                 d5__dnnl_type_name(im->asked), v->major, v->minor, v->patch);
        return D5_OK;
    }
    if (s != D5_ERR_UNSUPPORTED) return s;
    /* Else float32, with the reason. */
    char msg[200];
    no_kernel(msg, sizeof msg, im->asked, what, im->info.isa);
    s = build(self, dnnl_f32, dnnl_fpmath_mode_strict, pd);
    if (s == D5_OK) {
        accept(im, dnnl_f32, dnnl_fpmath_mode_strict, *pd);
        snprintf(im->info.note, sizeof im->info.note, "%s asked; %s", short_name(im->asked), msg);
    }
    return s;
}

d5_status d5__dnnl_impl_keep_f32(d5_dnnl_impl *im, const char *why, d5_dnnl_build_fn build,
                                 void *self, dnnl_primitive_desc_t *pd)
{
    *pd = NULL;
    d5_status s = build(self, dnnl_f32, dnnl_fpmath_mode_strict, pd);
    if (s != D5_OK) return s;
    accept(im, dnnl_f32, dnnl_fpmath_mode_strict, *pd);
    snprintf(im->info.note, sizeof im->info.note, "%s asked; %s", short_name(im->asked), why);
    return D5_OK;
}

/* ---- Reporting ------------------------------------------------------------------------------ */

/* The operators whose state begins with a d5_op_impl, d5_dnnl_impl (the
 * float operators) and d5_int8_head (the int8 ones), say so with the flag
 * D5_OP_REPORTS_IMPL: d5_op_impl_get (../precision.c) reads it there. */

/* A small matrix multiplication of `dt` (int8: u8 x s8 into s32), for
 * d5_dnnl_precision_support. */
static dnnl_status_t probe(dnnl_engine_t eng, dnnl_data_type_t dt, char *impl, size_t size)
{
    dnnl_memory_desc_t a, b, c;
    dnnl_dims_t da = {64, 64}, db = {64, 64}, dc = {64, 64};
    dnnl_data_type_t ta = dt == dnnl_s8 ? dnnl_u8 : dt, tc = dt == dnnl_s8 ? dnnl_s32 : dt;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_memory_desc_init_by_tag(&a, 2, da, ta, dnnl_ab);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&b, 2, db, dt, dnnl_ab);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&c, 2, dc, tc, dnnl_ab);
    if (st == dnnl_success) st = dnnl_matmul_desc_init(&md, &a, &b, NULL, &c);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL);
    if (st == dnnl_success) d5__dnnl_impl_name(pd, impl, size);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

d5_status d5_dnnl_precision_support(const char *precision, d5_precision_class *cls, char *buf,
                                    size_t size)
{
    static const char *const names[] = {"f32", "bf16", "f16", "int8"};
    static const dnnl_data_type_t types[] = {dnnl_f32, dnnl_bf16, dnnl_f16, dnnl_s8};
    size_t i = 0;
    while (precision && i < 4 && strcmp(precision, names[i]) != 0) i++;
    if (!precision || !cls || i == 4)
        return d5_error(D5_ERR_INVALID,
                        "d5_dnnl_precision_support: '%.32s' is not f32, bf16, f16 or int8",
                        precision ? precision : "(null)");
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    dnnl_engine_t eng = NULL;
    d5_status s = d5__dnnl_check(dnnl_engine_create(&eng, dnnl_cpu, 0), "dnnl", "engine");
    if (s != D5_OK) return s;
    char impl[64] = "";
    dnnl_status_t st = probe(eng, types[i], impl, sizeof impl);
    dnnl_engine_destroy(eng);
    if (st != dnnl_success && st != dnnl_unimplemented)
        return d5__dnnl_check(st, "dnnl", "matrix multiplication probe");
    char text[256];
    if (st == dnnl_unimplemented) {
        *cls = D5_PRECISION_UNSUPPORTED;
        const dnnl_version_t *v = dnnl_version();
        snprintf(text, sizeof text,
                 "unsupported: oneDNN %d.%d.%d has no %s matrix multiplication for this CPU (%s)",
                 v->major, v->minor, v->patch, d5__dnnl_type_name(types[i]),
                 d5__dnnl_isa_name(isa));
    } else {
        *cls = classify(types[i], isa, impl);
        snprintf(text, sizeof text, "%s: %s, %s", d5_precision_class_name(*cls),
                 d5__dnnl_isa_name(isa), impl);
    }
    if (buf && size) snprintf(buf, size, "%s", text);
    return D5_OK;
}
