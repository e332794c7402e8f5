/* d5_dnnl_precision_support in a build without oneDNN: it says so. */
#include "d5/precision.h"

#include <stdio.h>
#include <string.h>

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
