/* Attribute reading shared by Col2Im and DeformConv. See spatial.h. */
#include "spatial.h"

d5_status d5__spatial_ints(const char *op, const d5_attrs *attrs, const char *name, int32_t naxes,
                           int32_t count, int64_t def, int64_t min, int64_t *out)
{
    const int64_t *v;
    int64_t n;
    d5_status s = d5_attrs_ints(attrs, name, &v, &n);
    if (s != D5_OK) return d5_error(s, "%s: attribute %s must be a list of integers", op, name);
    for (int32_t i = 0; i < count; i++) out[i] = def;
    if (n == 0) return D5_OK;
    if (n != count)
        return d5_error(D5_ERR_INVALID, "%s: %s has %lld values for %d spatial axes, expected %d",
                        op, name, (long long)n, (int)naxes, (int)count);
    for (int32_t i = 0; i < count; i++) {
        if (v[i] < min)
            return d5_error(D5_ERR_INVALID, "%s: %s[%d] is %lld, must be at least %lld", op, name,
                            (int)i, (long long)v[i], (long long)min);
        out[i] = v[i];
    }
    return D5_OK;
}
