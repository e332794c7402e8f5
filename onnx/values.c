/* Sequence and optional values in files: the SequenceProto and OptionalProto
 * messages of ONNX's test data (values.proto), read into d5_value. */
#include "internal.h"
#include "values.pb-c.h"

#include <stdio.h>
#include <string.h>

/* ONNX's element types of SequenceProto and OptionalProto. */
enum { ELEM_NONE = 0, ELEM_TENSOR = 1, ELEM_SPARSE = 2, ELEM_SEQUENCE = 3, ELEM_MAP = 4 };

static const char *elem_name(int32_t e)
{
    static const char *const names[] = {"nothing",    "a tensor", "a sparse tensor",
                                        "a sequence", "a map",    "an optional"};
    return e >= 0 && e <= 5 ? names[e] : "an unknown element type";
}

/* Converts n TensorProtos into v->items (v->count of them). */
static d5_status read_tensors(Onnx__TensorProto *const *tps, size_t n, const char *dir,
                              const char *path, d5_value *v)
{
    if (n > INT32_MAX) return d5_error(D5_ERR_UNSUPPORTED, "%s: %zu tensors", path, n);
    v->items = d5_calloc(n ? n : 1, sizeof *v->items, "value items");
    if (!v->items) return D5_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        char what[200];
        snprintf(what, sizeof what, "%s: tensor %zu", path, i);
        d5_status s = d5__onnx_tensor_from_proto(tps[i], dir, what, &v->items[i]);
        if (s != D5_OK) return s;
        v->count++;
        if (i == 0) v->dtype = v->items[0].desc.dtype;
        if (v->items[i].desc.dtype != v->dtype)
            return d5_error(D5_ERR_FORMAT,
                            "%s: tensor %zu is %s, tensor 0 %s: a sequence has one "
                            "element type",
                            path, i, d5_dtype_name((d5_dtype)v->items[i].desc.dtype),
                            d5_dtype_name((d5_dtype)v->dtype));
    }
    return D5_OK;
}

static d5_status read_sequence(const Onnx__SequenceProto *sp, const char *dir, const char *path,
                               d5_value *v)
{
    v->type = D5_TYPE_SEQUENCE;
    v->present = 1;
    int32_t e = sp->has_elem_type ? sp->elem_type : ELEM_TENSOR;
    if (e != ELEM_TENSOR || sp->n_sequence_values || sp->n_optional_values)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s: a sequence of %s; d5 supports sequences of tensors", path,
                        elem_name(sp->n_sequence_values ? ELEM_SEQUENCE : e));
    return read_tensors(sp->tensor_values, sp->n_tensor_values, dir, path, v);
}

static d5_status read_message(const char *path, int32_t type, const uint8_t *buf, size_t size,
                              const char *dir, d5_value *v, char **name)
{
    const ProtobufCMessageDescriptor *desc = type == D5_TYPE_SEQUENCE
                                                 ? &onnx__sequence_proto__descriptor
                                                 : &onnx__optional_proto__descriptor;
    d5_status s = d5__onnx_check_depth(desc, buf, size);
    if (s != D5_OK) return d5__onnx_prefix(s, path);
    d5__pb_alloc pa;
    d5__pb_alloc_init(&pa);
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, &pa.base, size, buf);
    if (!m)
        return pa.failed ? d5_error(D5_ERR_NOMEM, "%s: out of memory parsing it", path)
                         : d5_error(D5_ERR_FORMAT, "%s: not an ONNX %s (protobuf parse failed)",
                                    path, desc->short_name);
    const char *n = NULL;
    if (type == D5_TYPE_SEQUENCE) {
        const Onnx__SequenceProto *sp = (const Onnx__SequenceProto *)m;
        n = sp->name;
        s = read_sequence(sp, dir, path, v);
    } else {
        const Onnx__OptionalProto *op = (const Onnx__OptionalProto *)m;
        n = op->name;
        int32_t e = op->has_elem_type ? op->elem_type : ELEM_NONE;
        v->type = D5_TYPE_OPTIONAL;
        if (e == ELEM_TENSOR && op->tensor_value) {
            v->present = 1;
            s = read_tensors(&op->tensor_value, 1, dir, path, v);
        } else if (e == ELEM_SEQUENCE && op->sequence_value) {
            s = read_sequence(op->sequence_value, dir, path, v);
            v->type = D5_TYPE_OPTIONAL_SEQUENCE;
        } else if (e != ELEM_NONE && e != ELEM_TENSOR && e != ELEM_SEQUENCE) {
            s = d5_error(D5_ERR_UNSUPPORTED,
                         "%s: an optional of %s; d5 supports optional tensors and sequences", path,
                         elem_name(e));
        } else if (e != ELEM_NONE) {
            s = d5_error(D5_ERR_FORMAT, "%s: an optional of %s without its value", path,
                         elem_name(e));
        }
        /* One that holds nothing keeps the type the graph declares. */
        if (s == D5_OK && !v->present) v->type = type;
    }
    if (s == D5_OK && name && !(*name = d5_strdup(n ? n : "", "value name"))) s = D5_ERR_NOMEM;
    protobuf_c_message_free_unpacked(m, &pa.base);
    return s;
}

d5_status d5_onnx_value_read(const char *path, int32_t type, d5_value *v, char **name)
{
    if (!path || !v) return d5_error(D5_ERR_INVALID, "d5_onnx_value_read: NULL argument");
    memset(v, 0, sizeof *v);
    if (name) *name = NULL;
    if (type < D5_TYPE_TENSOR || type > D5_TYPE_OPTIONAL_SEQUENCE)
        return d5_error(D5_ERR_INVALID, "d5_onnx_value_read: type %d is not a d5_type", (int)type);
    if (type == D5_TYPE_TENSOR) {
        v->items = d5_calloc(1, sizeof *v->items, "value items");
        if (!v->items) return D5_ERR_NOMEM;
        d5_status s = d5_onnx_tensor_read(path, &v->items[0], name);
        if (s != D5_OK) {
            d5_value_free(v);
            return s;
        }
        v->present = v->count = 1;
        v->dtype = v->items[0].desc.dtype;
        return D5_OK;
    }
    void *buf = NULL;
    size_t size = 0;
    d5_status s = d5__onnx_read_file(path, D5__ONNX_MAX_MESSAGE, "ONNX value", &buf, &size);
    if (s != D5_OK) return s;
    char *dir = d5__onnx_dirname(path);
    s = dir ? read_message(path, type, buf, size, dir, v, name) : D5_ERR_NOMEM;
    d5_free(dir);
    d5_free(buf);
    if (s != D5_OK) {
        if (name) {
            d5_free(*name);
            *name = NULL;
        }
        d5_value_free(v);
    }
    return s;
}
