/* Deep copies of node attributes: a network owns everything it is given. */
#include "network_internal.h"

#include <string.h>

static void attr_free(d5_attr *a)
{
    d5_free((void *)a->name);
    d5_free((void *)a->s);
    d5_free((void *)a->ints);
    d5_free((void *)a->floats);
    if (a->tensor) {
        d5_tensor *t = (d5_tensor *)a->tensor;
        d5_tensor_free(t);
        d5_free(t);
    }
    memset(a, 0, sizeof *a);
}

static d5_status attr_copy(const d5_attr *src, d5_attr *dst)
{
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    dst->i = src->i;
    dst->f = src->f;
    dst->count = src->count;
    if (!src->name || !src->name[0]) return d5_error(D5_ERR_INVALID, "an attribute has no name");
    if (!(dst->name = d5_strdup(src->name, "attribute name"))) return D5_ERR_NOMEM;
    switch (src->type) {
    case D5_ATTR_INT:
    case D5_ATTR_FLOAT: return D5_OK;
    case D5_ATTR_STRING:
        if (!(dst->s = d5_strdup(src->s ? src->s : "", "attribute string"))) return D5_ERR_NOMEM;
        return D5_OK;
    case D5_ATTR_INTS:
    case D5_ATTR_FLOATS: {
        if (src->count < 0)
            return d5_error(D5_ERR_INVALID, "attribute '%s' has a negative count", src->name);
        size_t size = src->type == D5_ATTR_INTS ? sizeof(int64_t) : sizeof(double);
        const void *from =
            src->type == D5_ATTR_INTS ? (const void *)src->ints : (const void *)src->floats;
        if (src->count > 0 && !from)
            return d5_error(D5_ERR_INVALID, "attribute '%s' has %lld values but no array",
                            src->name, (long long)src->count);
        void *copy = d5_alloc(src->count > 0 ? (size_t)src->count * size : 1, "attribute values");
        if (!copy) return D5_ERR_NOMEM;
        if (src->count > 0) memcpy(copy, from, (size_t)src->count * size);
        if (src->type == D5_ATTR_INTS)
            dst->ints = copy;
        else
            dst->floats = copy;
        return D5_OK;
    }
    case D5_ATTR_TENSOR: {
        if (!src->tensor)
            return d5_error(D5_ERR_INVALID, "attribute '%s' is a tensor without a value",
                            src->name);
        d5_tensor *t = d5_calloc(1, sizeof *t, "attribute tensor");
        if (!t) return D5_ERR_NOMEM;
        /* A clone: a string tensor's strings are copied too. */
        d5_status s = src->tensor->data ? d5_tensor_clone(src->tensor, t)
                                        : d5_tensor_alloc(&src->tensor->desc, t);
        if (s != D5_OK) {
            d5_free(t);
            return s;
        }
        dst->tensor = t;
        return s;
    }
    default:
        return d5_error(D5_ERR_UNSUPPORTED, "attribute '%s' has unknown type %d", src->name,
                        (int)src->type);
    }
}

d5_status d5__attrs_copy(const d5_attrs *src, d5_attr **out, int32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!src || src->count <= 0) return D5_OK;
    d5_attr *a = d5_calloc((size_t)src->count, sizeof *a, "node attributes");
    if (!a) return D5_ERR_NOMEM;
    for (int32_t i = 0; i < src->count; i++) {
        d5_status s = attr_copy(&src->items[i], &a[i]);
        if (s != D5_OK) {
            d5__attrs_free(a, i + 1);
            return s;
        }
    }
    *out = a;
    *n = src->count;
    return D5_OK;
}

void d5__attrs_free(d5_attr *a, int32_t n)
{
    if (!a) return;
    for (int32_t i = 0; i < n; i++) attr_free(&a[i]);
    d5_free(a);
}
