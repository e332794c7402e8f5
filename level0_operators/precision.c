/* Compute precisions (d5/precision.h): the class names, and d5_op_impl_get,
 * which asks the backend that made an operator instance. The dnnl backend's
 * answers are in dnnl/precision.c; in a build without oneDNN the stand-ins
 * below say so. */
#include "d5/precision.h"

#include <stdio.h>
#include <string.h>

#ifndef D5_HAVE_DNNL
#define D5_HAVE_DNNL 0
#endif

void *d5__op_state(const d5_op *op); /* abi/instance.c */
/* Fills `out` when `desc` is one of the dnnl operators that report (dnnl/precision.c). */
void d5__dnnl_impl_get(const d5_op_desc *desc, const void *state, d5_op_impl *out);

const char *d5_precision_class_name(int cls)
{
    switch (cls) {
    case D5_PRECISION_UNSUPPORTED: return "unsupported";
    case D5_PRECISION_EMULATED: return "emulated";
    case D5_PRECISION_NATIVE: return "native";
    default: return "unknown";
    }
}

void d5_op_impl_get(const d5_op *op, d5_op_impl *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!op) return;
#if D5_HAVE_DNNL
    d5__dnnl_impl_get(d5_op_desc_of(op), d5__op_state(op), out);
#endif
}

#if !D5_HAVE_DNNL
d5_status d5_dnnl_precision_support(const char *precision, d5_precision_class *cls, char *buf,
                                    size_t size)
{
    static const char *const known[] = {"f32", "bf16", "f16", "int8"};
    size_t i = 0;
    while (precision && i < sizeof known / sizeof known[0] && strcmp(precision, known[i]) != 0) i++;
    if (!precision || !cls || i == sizeof known / sizeof known[0])
        return d5_error(D5_ERR_INVALID,
                        "d5_dnnl_precision_support: '%.32s' is not f32, bf16, f16 or int8",
                        precision ? precision : "(null)");
    *cls = D5_PRECISION_UNSUPPORTED;
    if (buf && size) snprintf(buf, size, "unsupported: d5 was built without oneDNN");
    return D5_OK;
}
#endif
