/* Attribute look-up with typed getters. */
#include "d5/operator.h"

#include <string.h>

static const char *const type_names[] = {"?", "int", "float", "string", "ints", "floats", "tensor"};

const d5_attr *d5_attrs_find(const d5_attrs *a, const char *name)
{
    if (!a || !name) return NULL;
    for (int32_t i = 0; i < a->count; i++)
        if (a->items[i].name && strcmp(a->items[i].name, name) == 0) return &a->items[i];
    return NULL;
}

static d5_status wrong_type(const d5_attr *at, d5_attr_type want)
{
    int got = at->type >= 1 && at->type <= 6 ? at->type : 0;
    return d5_error(D5_ERR_INVALID, "attribute '%s' is of type %s, expected %s", at->name,
                    type_names[got], type_names[want]);
}

d5_status d5_attrs_int(const d5_attrs *a, const char *name, int64_t def, int64_t *out)
{
    const d5_attr *at = d5_attrs_find(a, name);
    if (!at) {
        *out = def;
        return D5_OK;
    }
    if (at->type != D5_ATTR_INT) return wrong_type(at, D5_ATTR_INT);
    *out = at->i;
    return D5_OK;
}

d5_status d5_attrs_float(const d5_attrs *a, const char *name, double def, double *out)
{
    const d5_attr *at = d5_attrs_find(a, name);
    if (!at) {
        *out = def;
        return D5_OK;
    }
    if (at->type == D5_ATTR_INT) { /* ONNX writers sometimes store whole floats as ints */
        *out = (double)at->i;
        return D5_OK;
    }
    if (at->type != D5_ATTR_FLOAT) return wrong_type(at, D5_ATTR_FLOAT);
    *out = at->f;
    return D5_OK;
}

d5_status d5_attrs_string(const d5_attrs *a, const char *name, const char *def, const char **out)
{
    const d5_attr *at = d5_attrs_find(a, name);
    if (!at) {
        *out = def;
        return D5_OK;
    }
    if (at->type != D5_ATTR_STRING) return wrong_type(at, D5_ATTR_STRING);
    *out = at->s ? at->s : "";
    return D5_OK;
}

d5_status d5_attrs_ints(const d5_attrs *a, const char *name, const int64_t **values, int64_t *count)
{
    const d5_attr *at = d5_attrs_find(a, name);
    if (!at) {
        *values = NULL;
        *count = 0;
        return D5_OK;
    }
    if (at->type != D5_ATTR_INTS) return wrong_type(at, D5_ATTR_INTS);
    *values = at->ints;
    *count = at->count;
    return D5_OK;
}
