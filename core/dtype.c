/* Data types: names and sizes, generated from D5_DTYPE_LIST. */
#include "d5/core.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {{"invalid", 0},
#define D5__DTYPE_ROW(name, text, size) {text, size},
              D5_DTYPE_LIST(D5__DTYPE_ROW)
#undef D5__DTYPE_ROW
};

_Static_assert(sizeof dtypes / sizeof dtypes[0] == D5_DTYPE_COUNT,
               "dtype table out of sync with the enum");

/* "float32, float64, ... or uint64", for messages. */
#define D5__DTYPE_TEXT(name, text, size) text ", "
static const char dtype_names[] = D5_DTYPE_LIST(D5__DTYPE_TEXT);
#undef D5__DTYPE_TEXT

const char *d5_dtype_name(d5_dtype t)
{
    if ((unsigned)t >= D5_DTYPE_COUNT) return "invalid";
    return dtypes[t].name;
}

size_t d5_dtype_size(d5_dtype t)
{
    if ((unsigned)t >= D5_DTYPE_COUNT) return 0;
    return dtypes[t].size;
}

int d5_dtype_is_float(d5_dtype t)
{
    return t == D5_F32 || t == D5_F64 || t == D5_F16 || t == D5_BF16;
}

d5_status d5_dtype_parse(const char *name, d5_dtype *out)
{
    if (!name || !out) return d5_error(D5_ERR_INVALID, "d5_dtype_parse: NULL argument");
    for (int i = 1; i < D5_DTYPE_COUNT; i++) {
        if (strcmp(dtypes[i].name, name) == 0) {
            *out = (d5_dtype)i;
            return D5_OK;
        }
    }
    /* The list without its final ", ". */
    return d5_error(D5_ERR_NOTFOUND, "unknown data type '%s' (expected one of %.*s)", name,
                    (int)(sizeof dtype_names - 3), dtype_names);
}
