/* LabelEncoder (ONNX-ML, domain ai.onnx.ml, opsets 1, 2 and 4): maps each
 * element of X to a value by a table of keys and values; Y has X's shape.
 *
 * Opsets 2 and 4: exactly one of keys_strings, keys_int64s, keys_floats (and,
 * from opset 4, keys_tensor: string, int64, int32, int16, float32 or float64)
 * gives the keys, whose type X must have; exactly one of values_strings,
 * values_int64s, values_floats (values_tensor) gives as many values, whose
 * type Y takes. An element that is no key gets the default: default_tensor
 * (opset 4: one element of Y's type) when given, else default_string,
 * default_int64 or default_float after Y's kind of type, else "_Unused", -1
 * or -0.0. Float keys: in opset 4 a NaN key matches every NaN and 0.0 matches
 * -0.0; in opset 2 they match bit for bit, as its page says. A key given
 * twice maps to its last value (opset 4's rule, and ONNX's reference's).
 * Opset 1: classes_strings maps strings to their position (default_int64,
 * -1, for the others) or int64 positions to strings (default_string).
 *
 * ONNX's lists of strings reach d5 joined by commas, so a key or value with a
 * comma cannot be told apart and is refused. Y's strings are the operator's
 * own, valid while it exists. No gradient.
 * https://onnx.ai/onnx/operators/onnx_aionnxml_LabelEncoder.html */
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OP "LabelEncoder"

enum { KIND_STR, KIND_INT, KIND_FLOAT, KIND_BITS }; /* BITS: floats by their bit pattern */

typedef union lval {
    int64_t i;
    double f;
    const char *s;
} lval;

typedef struct entry {
    lval key, value;
    int64_t index; /* position in the attribute: the last of equal keys wins */
    int kind;      /* the keys' KIND_*, read by the comparison */
} entry;

typedef struct encoder {
    int32_t in_dtype, out_dtype;
    int key_kind;
    int64_t n, numel;
    entry *table; /* sorted by key, one entry a key */
    lval def;
    d5_strpool words; /* the strings of keys, values and default */
} encoder;

/* Where a list comes from: an attribute (INTS, FLOATS, comma-joined STRINGS
 * or TENSOR) and its element type. */
typedef struct list {
    const d5_attr *a;
    const char *name;
    int32_t dtype;
    int64_t n;
} list;

static int kind_of(int32_t dtype)
{
    return dtype == D5_STRING                   ? KIND_STR
           : dtype == D5_F32 || dtype == D5_F64 ? KIND_FLOAT
                                                : KIND_INT;
}

static int compare(const lval *a, const lval *b, int kind)
{
    switch (kind) {
    case KIND_STR: return strcmp(a->s, b->s);
    case KIND_FLOAT: { /* NaNs equal to each other, after every number */
        int na = isnan(a->f), nb = isnan(b->f);
        if (na || nb) return na - nb;
        return (a->f > b->f) - (a->f < b->f);
    }
    default: return (a->i > b->i) - (a->i < b->i);
    }
}

static int entry_order(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    int c = compare(&a->key, &b->key, a->kind);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* The bit pattern of a float32 or float64 value (opset 2's comparison). */
static int64_t float_bits(double f, int32_t dtype)
{
    if (dtype == D5_F32) {
        float g = (float)f;
        uint32_t u;
        memcpy(&u, &g, sizeof u);
        return (int64_t)u;
    }
    int64_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Element i of a numeric tensor of type dtype as an lval of its kind. */
static lval number_at(const void *data, int32_t dtype, int64_t i)
{
    lval v;
    switch (dtype) {
    case D5_F32: v.f = ((const float *)data)[i]; break;
    case D5_F64: v.f = ((const double *)data)[i]; break;
    case D5_I32: v.i = ((const int32_t *)data)[i]; break;
    case D5_I16: v.i = ((const int16_t *)data)[i]; break;
    default: v.i = ((const int64_t *)data)[i]; break;
    }
    return v;
}

static const d5_dtypes encoder_types = D5__DT(D5_STRING) | D5__DT(D5_I64) | D5__DT(D5_I32) |
                                       D5__DT(D5_I16) | D5__DT(D5_F32) | D5__DT(D5_F64);

static const char *const list_names[2][4] = {
    {"keys_strings", "keys_int64s", "keys_floats", "keys_tensor"},
    {"values_strings", "values_int64s", "values_floats", "values_tensor"}};

/* D5_ERR_UNSUPPORTED when a comma-joined list of strings does not hold
 * `count` strings: one of them had a comma. */
static d5_status check_commas(const d5_attr *a, const char *name)
{
    int64_t commas = 0;
    for (const char *q = a->s ? a->s : ""; *q; q++) commas += *q == ',';
    if ((a->count > 0 && commas + 1 != a->count) || (a->count == 0 && a->s && a->s[0]))
        return d5_error(D5_ERR_UNSUPPORTED,
                        OP ": %s holds %lld strings joined as '%s', with %lld commas: a string "
                           "with a comma cannot be told apart in d5's comma-joined form",
                        name, (long long)a->count, a->s, (long long)commas);
    return D5_OK;
}

/* The one list of keys (which = 0) or values (1) among the attributes. */
static d5_status find_list(const d5_attrs *attrs, int which, int64_t opset, list *out)
{
    static const int32_t type[] = {D5_STRING, D5_I64, D5_F32, 0};
    static const int32_t attr_type[] = {D5_ATTR_STRING, D5_ATTR_INTS, D5_ATTR_FLOATS,
                                        D5_ATTR_TENSOR};
    static const char *const what[] = {"list of strings", "list of ints", "list of floats",
                                       "tensor"};
    const char *prefix = which ? "values" : "keys";
    int found = 0;
    for (int k = 0; k < 4; k++) {
        const char *name = list_names[which][k];
        const d5_attr *a = d5_attrs_find(attrs, name);
        if (!a) continue;
        if (found++)
            return d5_error(D5_ERR_INVALID, OP ": both %s and %s are set; exactly one %s_* must be",
                            out->name, name, prefix);
        if (k == 3 && opset < 4)
            return d5_error(D5_ERR_INVALID,
                            OP ": %s is an attribute of ai.onnx.ml opset 4; this node has opset "
                               "%lld",
                            name, (long long)opset);
        if (a->type != attr_type[k] || (k == 3 && !a->tensor))
            return d5_error(D5_ERR_INVALID, OP ": attribute %s must be a %s", name, what[k]);
        *out = (list){a, name, type[k], a->count};
        if (k == 0) {
            d5_status s = check_commas(a, name);
            if (s != D5_OK) return s;
        }
        if (k == 3) {
            out->dtype = a->tensor->desc.dtype;
            out->n = d5_tensor_desc_numel(&a->tensor->desc);
            if (!d5__in_types(out->dtype, encoder_types))
                return d5_error(D5_ERR_UNSUPPORTED,
                                OP ": %s has data type %s; expected string, int64, int32, int16, "
                                   "float32 or float64",
                                name, d5_dtype_name((d5_dtype)out->dtype));
        }
    }
    if (!found)
        return d5_error(D5_ERR_INVALID,
                        OP ": no %s_* attribute; exactly one of %s, %s, %s%s%s must be set", prefix,
                        list_names[which][0], list_names[which][1], list_names[which][2],
                        opset >= 4 ? " or " : "", opset >= 4 ? list_names[which][3] : "");
    return D5_OK;
}

/* Opset 1: classes_strings and their positions (a list without attribute). */
static d5_status opset1_lists(const d5_attrs *attrs, int32_t x_dtype, list *keys, list *values)
{
    const d5_attr *a = d5_attrs_find(attrs, "classes_strings");
    if (!a || a->type != D5_ATTR_STRING)
        return d5_error(D5_ERR_INVALID,
                        OP ": ai.onnx.ml opset 1 needs the list of strings classes_strings");
    if (x_dtype != D5_STRING && x_dtype != D5_I64)
        return d5_error(D5_ERR_UNSUPPORTED,
                        OP ": input X has data type %s; opset 1 maps strings or int64",
                        d5_dtype_name((d5_dtype)x_dtype));
    d5_status s = check_commas(a, "classes_strings");
    if (s != D5_OK) return s;
    list strings = {a, "classes_strings", D5_STRING, a->count};
    list positions = {NULL, "the positions of classes_strings", D5_I64, a->count};
    *keys = x_dtype == D5_STRING ? strings : positions;
    *values = x_dtype == D5_STRING ? positions : strings;
    return D5_OK;
}

/* Element k of a list, strings copied into the pool; *at walks the
 * comma-joined strings. */
static d5_status list_at(const list *l, int64_t k, const char **at, d5_strpool *pool, lval *v)
{
    const d5_attr *a = l->a;
    if (!a) { /* opset 1's positions */
        v->i = k;
        return D5_OK;
    }
    if (a->type == D5_ATTR_INTS) {
        v->i = a->ints[k];
        return D5_OK;
    }
    if (a->type == D5_ATTR_FLOATS) {
        v->f = a->floats[k];
        return D5_OK;
    }
    if (a->type == D5_ATTR_TENSOR && l->dtype != D5_STRING) {
        *v = number_at(a->tensor->data, l->dtype, k);
        return D5_OK;
    }
    if (a->type == D5_ATTR_TENSOR) {
        const char *w = d5_string_at(a->tensor, k);
        v->s = d5_strpool_add(pool, w, strlen(w));
    } else {
        const char *comma = strchr(*at, ',');
        size_t len = comma ? (size_t)(comma - *at) : strlen(*at);
        v->s = d5_strpool_add(pool, *at, len);
        *at += comma ? len + 1 : len;
    }
    return v->s ? D5_OK : D5_ERR_NOMEM;
}

/* The table of keys and values, sorted by key, the last of equal keys kept. */
static d5_status build_table(encoder *e, const list *keys, const list *values)
{
    if (keys->n != values->n)
        return d5_error(D5_ERR_INVALID, OP ": %s has %lld keys but %s has %lld values", keys->name,
                        (long long)keys->n, values->name, (long long)values->n);
    int64_t n = keys->n;
    if (!(e->table = d5_calloc((size_t)(n > 0 ? n : 1), sizeof *e->table, OP))) return D5_ERR_NOMEM;
    const char *kat = keys->a && keys->a->type == D5_ATTR_STRING ? keys->a->s : NULL;
    const char *vat = values->a && values->a->type == D5_ATTR_STRING ? values->a->s : NULL;
    for (int64_t k = 0; k < n; k++) {
        entry *t = &e->table[k];
        d5_status s = list_at(keys, k, &kat, &e->words, &t->key);
        if (s == D5_OK) s = list_at(values, k, &vat, &e->words, &t->value);
        if (s != D5_OK) return s;
        if (e->key_kind == KIND_BITS) t->key.i = float_bits(t->key.f, e->in_dtype);
        t->index = k;
        t->kind = e->key_kind;
    }
    qsort(e->table, (size_t)n, sizeof *e->table, entry_order);
    int64_t m = 0;
    for (int64_t k = 0; k < n; k++)
        if (k + 1 == n || compare(&e->table[k].key, &e->table[k + 1].key, e->key_kind) != 0)
            e->table[m++] = e->table[k];
    e->n = m;
    return D5_OK;
}

/* The default of Y's type: default_tensor, else the default_* attribute of its
 * kind, else the page's default. */
static d5_status read_default(encoder *e, const d5_attrs *attrs, int64_t opset)
{
    const d5_attr *t = d5_attrs_find(attrs, "default_tensor");
    if (t && opset < 4)
        return d5_error(D5_ERR_INVALID,
                        OP ": default_tensor is an attribute of ai.onnx.ml opset 4; this node has "
                           "opset %lld",
                        (long long)opset);
    if (t) {
        if (t->type != D5_ATTR_TENSOR || !t->tensor ||
            d5_tensor_desc_numel(&t->tensor->desc) != 1 || t->tensor->desc.dtype != e->out_dtype)
            return d5_error(D5_ERR_INVALID,
                            OP ": default_tensor must be a tensor of one %s, the values' type",
                            d5_dtype_name((d5_dtype)e->out_dtype));
        if (e->out_dtype != D5_STRING) {
            e->def = number_at(t->tensor->data, e->out_dtype, 0);
            return D5_OK;
        }
        const char *w = d5_string_at(t->tensor, 0);
        return (e->def.s = d5_strpool_add(&e->words, w, strlen(w))) ? D5_OK : D5_ERR_NOMEM;
    }
    switch (kind_of(e->out_dtype)) {
    case KIND_STR: {
        const char *w;
        d5_status s = d5_attrs_string(attrs, "default_string", "_Unused", &w);
        if (s != D5_OK) return s;
        return (e->def.s = d5_strpool_add(&e->words, w, strlen(w))) ? D5_OK : D5_ERR_NOMEM;
    }
    case KIND_INT: return d5_attrs_int(attrs, "default_int64", -1, &e->def.i);
    default: return d5_attrs_float(attrs, "default_float", -0.0, &e->def.f);
    }
}

static void encoder_destroy(void *state)
{
    encoder *e = state;
    if (!e) return;
    d5_strpool_clear(&e->words);
    d5_free(e->table);
    d5_free(e);
}

static d5_status encoder_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    const d5_attrs *attrs = args->attrs;
    int64_t opset;
    list keys, values;
    d5_status s = d5__need_types(OP, in, args->ninputs, 0, encoder_types);
    if (s == D5_OK) s = d5__ref_opset(OP, attrs, 4, &opset);
    if (s != D5_OK) return s;
    int32_t x = in[0].desc.dtype;
    if (opset < 2) {
        s = opset1_lists(attrs, x, &keys, &values);
    } else {
        s = find_list(attrs, 0, opset, &keys);
        if (s == D5_OK) s = find_list(attrs, 1, opset, &values);
    }
    if (s != D5_OK) return s;
    if (keys.dtype != x)
        return d5_error(D5_ERR_INVALID,
                        OP ": input X has data type %s but the keys (%s) are %s: they must match",
                        d5_dtype_name((d5_dtype)x), keys.name, d5_dtype_name((d5_dtype)keys.dtype));
    encoder *e = d5_calloc(1, sizeof *e, OP);
    if (!e) return D5_ERR_NOMEM;
    e->in_dtype = x;
    e->out_dtype = values.dtype;
    e->key_kind = kind_of(x) == KIND_FLOAT && opset < 4 ? KIND_BITS : kind_of(x);
    e->numel = d5_tensor_desc_numel(&in[0].desc);
    s = build_table(e, &keys, &values);
    if (s == D5_OK) s = read_default(e, attrs, opset);
    if (s != D5_OK) {
        encoder_destroy(e);
        return s;
    }
    *state = e;
    args->outputs[0] = in[0].desc;
    args->outputs[0].dtype = e->out_dtype;
    return D5_OK;
}

/* The value of a key: binary search in the sorted table, else the default. */
static const lval *lookup(const encoder *e, const lval *key)
{
    int64_t lo = 0, hi = e->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = compare(&e->table[mid].key, key, e->key_kind);
        if (c == 0) return &e->table[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return &e->def;
}

static d5_status encoder_forward(void *state, const d5_op_call *call)
{
    const encoder *e = state;
    const d5_tensor *x = &call->inputs[0];
    void *y = call->outputs[0].data;
    for (int64_t i = 0; i < e->numel; i++) {
        lval key;
        if (e->key_kind == KIND_STR) {
            key.s = d5_string_at(x, i);
        } else {
            key = number_at(x->data, e->in_dtype, i);
            if (e->key_kind == KIND_BITS) key.i = float_bits(key.f, e->in_dtype);
        }
        const lval *v = lookup(e, &key);
        switch (e->out_dtype) {
        case D5_STRING: ((const char **)y)[i] = v->s; break;
        case D5_F32: ((float *)y)[i] = (float)v->f; break;
        case D5_F64: ((double *)y)[i] = v->f; break;
        case D5_I32: ((int32_t *)y)[i] = (int32_t)v->i; break;
        case D5_I16: ((int16_t *)y)[i] = (int16_t)v->i; break;
        default: ((int64_t *)y)[i] = v->i; break;
        }
    }
    return D5_OK;
}

static void encoder_cost(void *state, double *flops, double *bytes)
{
    const encoder *e = state;
    *flops = 0;
    *bytes = (double)e->numel *
             (double)(d5_dtype_size((d5_dtype)e->in_dtype) + d5_dtype_size((d5_dtype)e->out_dtype));
}

/* clang-format off */
const d5_op_desc d5__op_ref_LabelEncoder = {
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64, .name = "LabelEncoder",
    .backend = "ref", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .create = encoder_create, .forward = encoder_forward, .destroy = encoder_destroy,
    .cost = encoder_cost};
/* clang-format on */
