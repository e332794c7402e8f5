/* TensorProto <-> d5_tensor: data types, raw_data (little-endian) and the
 * typed fields, size checks, and TensorProto files (.pb).
 * https://onnx.ai/onnx/api/classes.html#tensorproto */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* ---- Data types ---- */

static const char *const type_names[] = {
    "UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
    "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
    "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
    "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
    "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0",
    "UINT2",          "INT2"};

const char *d5__onnx_type_name(int32_t onnx_type, char *buf, size_t size)
{
    if (onnx_type >= 0 && (size_t)onnx_type < sizeof type_names / sizeof type_names[0])
        return type_names[onnx_type];
    snprintf(buf, size, "%d (unknown)", (int)onnx_type);
    return buf;
}

/* The data types that came after the onnx.proto d5 is built with (ONNX
 * 1.14 to 1.20): TensorProto.DataType numbers. */
enum {
    ONNX_FLOAT8E4M3FN = 17,
    ONNX_FLOAT8E4M3FNUZ = 18,
    ONNX_FLOAT8E5M2 = 19,
    ONNX_FLOAT8E5M2FNUZ = 20,
    ONNX_UINT4 = 21,
    ONNX_INT4 = 22,
    ONNX_FLOAT4E2M1 = 23,
    ONNX_FLOAT8E8M0 = 24,
    ONNX_UINT2 = 25,
    ONNX_INT2 = 26
};

/* Pairs of (ONNX data type, d5 dtype). */
static const struct {
    int32_t onnx;
    d5_dtype d5;
} type_map[] = {
    {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, D5_F32},
    {ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, D5_F64},
    {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, D5_F16},
    {ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, D5_BF16},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT8, D5_I8},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, D5_U8},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT16, D5_I16},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT32, D5_I32},
    {ONNX__TENSOR_PROTO__DATA_TYPE__INT64, D5_I64},
    {ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, D5_BOOL},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, D5_U16},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, D5_U32},
    {ONNX__TENSOR_PROTO__DATA_TYPE__UINT64, D5_U64},
    {ONNX_FLOAT8E4M3FN, D5_F8E4M3FN},
    {ONNX_FLOAT8E4M3FNUZ, D5_F8E4M3FNUZ},
    {ONNX_FLOAT8E5M2, D5_F8E5M2},
    {ONNX_FLOAT8E5M2FNUZ, D5_F8E5M2FNUZ},
    {ONNX_FLOAT8E8M0, D5_F8E8M0},
    {ONNX_FLOAT4E2M1, D5_F4E2M1},
    {ONNX_INT4, D5_I4},
    {ONNX_UINT4, D5_U4},
    {ONNX_INT2, D5_I2},
    {ONNX_UINT2, D5_U2},
    {ONNX__TENSOR_PROTO__DATA_TYPE__STRING, D5_STRING},
};
_Static_assert(sizeof type_map / sizeof type_map[0] == D5_DTYPE_COUNT - 1,
               "every d5 dtype needs an ONNX data type");

d5_dtype d5__onnx_dtype(int32_t onnx_type)
{
    for (size_t i = 0; i < sizeof type_map / sizeof type_map[0]; i++)
        if (type_map[i].onnx == onnx_type) return type_map[i].d5;
    return D5_DTYPE_INVALID;
}

int32_t d5__onnx_type_of(d5_dtype dtype)
{
    for (size_t i = 0; i < sizeof type_map / sizeof type_map[0]; i++)
        if (type_map[i].d5 == dtype) return type_map[i].onnx;
    return 0;
}

/* ---- Byte order: ONNX's raw_data is little-endian ---- */

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static void swap_elements(void *data, size_t bytes, size_t esize)
{
    if (esize < 2 || host_is_little_endian()) return;
    uint8_t *p = data;
    for (size_t off = 0; off + esize <= bytes; off += esize)
        for (size_t i = 0; i < esize / 2; i++) {
            uint8_t tmp = p[off + i];
            p[off + i] = p[off + esize - 1 - i];
            p[off + esize - 1 - i] = tmp;
        }
}

/* ---- The sub-byte types: packed in files, one element a byte in memory ---- */

/* Bytes of numel elements of dt in a file: two 4-bit or four 2-bit elements
 * a byte, the first in the low bits. Divided first: numel * bits could
 * overflow (numel is bounded by the address space, a byte an element). */
static size_t file_bytes(d5_dtype dt, size_t numel)
{
    int bits = d5_dtype_bits(dt);
    if (bits >= 8) return numel * d5_dtype_size(dt);
    size_t per = 8 / (size_t)bits;
    return numel / per + (numel % per != 0);
}

static void unpack(d5_dtype dt, const uint8_t *src, uint8_t *dst, size_t numel)
{
    unsigned bits = (unsigned)d5_dtype_bits(dt), per = 8 / bits, mask = (1u << bits) - 1;
    unsigned sign = dt == D5_I4 || dt == D5_I2 ? 1u << (bits - 1) : 0;
    for (size_t i = 0; i < numel; i++) {
        unsigned v = (src[i / per] >> (bits * (i % per))) & mask;
        dst[i] = (uint8_t)(sign ? (uint8_t)(int8_t)((int)(v ^ sign) - (int)sign) : v);
    }
}

static void pack(d5_dtype dt, const uint8_t *src, uint8_t *dst, size_t numel)
{
    unsigned bits = (unsigned)d5_dtype_bits(dt), per = 8 / bits, mask = (1u << bits) - 1;
    memset(dst, 0, file_bytes(dt, numel));
    for (size_t i = 0; i < numel; i++)
        dst[i / per] = (uint8_t)(dst[i / per] | ((src[i] & mask) << (bits * (i % per))));
}

/* ---- TensorProto -> d5_tensor ---- */

/* The typed field that holds values of dtype dt, and its count: float_data
 * for float32, double_data for float64, int64_data for int64, uint64_data
 * for uint32 and uint64, int32_data for the others (float16 and bfloat16 as
 * their bit patterns). */
static const char *typed_field(const Onnx__TensorProto *tp, d5_dtype dt, size_t *count)
{
    switch (dt) {
    case D5_F32: *count = tp->n_float_data; return "float_data";
    case D5_F64: *count = tp->n_double_data; return "double_data";
    case D5_I64: *count = tp->n_int64_data; return "int64_data";
    case D5_U32:
    case D5_U64: *count = tp->n_uint64_data; return "uint64_data";
    default: *count = tp->n_int32_data; return "int32_data";
    }
}

/* The range of values int32_data may hold for dtype dt (bool: any, read as
 * nonzero; float16 and bfloat16: 16-bit patterns). */
static void int32_range(d5_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case D5_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case D5_U8: *lo = 0, *hi = UINT8_MAX; break;
    case D5_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case D5_U16:
    case D5_F16:
    case D5_BF16: *lo = 0, *hi = UINT16_MAX; break;
    case D5_I32:
    case D5_BOOL: *lo = INT32_MIN, *hi = INT32_MAX; break;
    default: *lo = 0, *hi = UINT8_MAX; break; /* float8 and float4 codes, packed sub-byte values */
    }
}

/* Copies the values of the typed field into t (of numel elements), checking
 * that each fits the tensor's type. */
static d5_status copy_typed(const Onnx__TensorProto *tp, const char *what, const char *dbuf,
                            d5_dtype dt, void *dst, size_t numel)
{
    size_t bytes = numel * d5_dtype_size(dt);
    switch (dt) {
    case D5_F32: memcpy(dst, tp->float_data, bytes); return D5_OK;
    case D5_F64: memcpy(dst, tp->double_data, bytes); return D5_OK;
    case D5_I64: memcpy(dst, tp->int64_data, bytes); return D5_OK;
    case D5_U64: memcpy(dst, tp->uint64_data, bytes); return D5_OK;
    case D5_U32:
        for (size_t i = 0; i < numel; i++) {
            if (tp->uint64_data[i] > UINT32_MAX)
                return d5_error(D5_ERR_FORMAT,
                                "%s %s has uint64_data[%zu] = %llu, outside uint32's range", what,
                                dbuf, i, (unsigned long long)tp->uint64_data[i]);
            ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
        }
        return D5_OK;
    default: break;
    }
    int64_t lo, hi;
    int32_range(dt, &lo, &hi);
    for (size_t i = 0; i < numel; i++) {
        int32_t v = tp->int32_data[i];
        if (v < lo || v > hi)
            return d5_error(D5_ERR_FORMAT,
                            "%s %s has int32_data[%zu] = %d, outside %s's range %lld..%lld%s", what,
                            dbuf, i, (int)v, d5_dtype_name(dt), (long long)lo, (long long)hi,
                            dt == D5_F16 || dt == D5_BF16 ? " (bit patterns)" : "");
        switch (dt) {
        case D5_I8: ((int8_t *)dst)[i] = (int8_t)v; break;
        case D5_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
        case D5_I16: ((int16_t *)dst)[i] = (int16_t)v; break;
        case D5_I32: ((int32_t *)dst)[i] = v; break;
        case D5_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
        case D5_U16:
        case D5_F16:
        case D5_BF16: ((uint16_t *)dst)[i] = (uint16_t)v; break;
        default: ((uint8_t *)dst)[i] = (uint8_t)v; break; /* codes and packed bytes */
        }
    }
    return D5_OK;
}

/* The first non-empty typed field, to say where misplaced values are. */
static const char *any_typed_field(const Onnx__TensorProto *tp, size_t *count)
{
    const struct {
        size_t n;
        const char *name;
    } f[] = {{tp->n_float_data, "float_data"},   {tp->n_int32_data, "int32_data"},
             {tp->n_int64_data, "int64_data"},   {tp->n_double_data, "double_data"},
             {tp->n_uint64_data, "uint64_data"}, {tp->n_string_data, "string_data"}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].n) {
            *count = f[i].n;
            return f[i].name;
        }
    *count = 0;
    return NULL;
}

static d5_status check_desc(const Onnx__TensorProto *tp, const char *what, d5_tensor_desc *desc,
                            size_t *bytes)
{
    char tbuf[32];
    if (!tp->has_data_type || tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
        return d5_error(D5_ERR_FORMAT, "%s has no data type", what);
    d5_dtype dt = d5__onnx_dtype(tp->data_type);
    if (dt == D5_DTYPE_INVALID)
        return d5_error(D5_ERR_UNSUPPORTED, "%s has data type %s, which d5 does not support", what,
                        d5__onnx_type_name(tp->data_type, tbuf, sizeof tbuf));
    if (tp->n_dims > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "%s has %zu dimensions; d5 supports at most %d", what,
                        tp->n_dims, D5_MAX_DIMS);
    memset(desc, 0, sizeof *desc);
    desc->dtype = dt;
    desc->ndim = (int32_t)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return d5_error(D5_ERR_FORMAT, "%s has a negative size %lld in dimension %zu", what,
                            (long long)tp->dims[i], i);
        desc->shape[i] = tp->dims[i];
    }
    if (d5_tensor_desc_bytes(desc, bytes) != D5_OK) {
        char dbuf[200];
        d5_tensor_desc_format(desc, dbuf, sizeof dbuf);
        return d5_error(D5_ERR_FORMAT, "%s: shape %s is larger than the address space", what, dbuf);
    }
    if (tp->segment)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s is a segment of a larger tensor, which d5 does not support", what);
    return D5_OK;
}

/* STRING: string_data, a bytes value an element. */
static d5_status strings_from_proto(const Onnx__TensorProto *tp, const char *what,
                                    const d5_tensor_desc *desc, size_t numel, d5_tensor *out)
{
    char dbuf[200];
    d5_tensor_desc_format(desc, dbuf, sizeof dbuf);
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return d5_error(D5_ERR_FORMAT, "%s %s: strings cannot be external data", what, dbuf);
    if (tp->has_raw_data)
        return d5_error(D5_ERR_FORMAT, "%s %s has raw_data; strings go in string_data", what, dbuf);
    if (tp->n_string_data != numel)
        return d5_error(D5_ERR_FORMAT, "%s %s has %zu values in string_data, expected %zu", what,
                        dbuf, tp->n_string_data, numel);
    const char **ptrs = d5_calloc(numel ? numel : 1, sizeof *ptrs, "string pointers");
    size_t *lens = d5_calloc(numel ? numel : 1, sizeof *lens, "string lengths");
    d5_status s = ptrs && lens ? D5_OK : D5_ERR_NOMEM;
    for (size_t i = 0; s == D5_OK && i < numel; i++) {
        ptrs[i] = tp->string_data[i].data ? (const char *)tp->string_data[i].data : "";
        lens[i] = tp->string_data[i].data ? tp->string_data[i].len : 0;
        if (memchr(ptrs[i], 0, lens[i]))
            s = d5_error(D5_ERR_UNSUPPORTED,
                         "%s %s: string_data[%zu] holds a byte 0, which d5's strings cannot", what,
                         dbuf, i);
    }
    if (s == D5_OK) s = d5_tensor_strings(desc, ptrs, lens, out);
    d5_free(ptrs);
    d5_free(lens);
    return s;
}

d5_status d5__onnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *base_dir,
                                     const char *what, d5_tensor *out)
{
    d5_tensor_desc desc;
    size_t bytes;
    d5_status s = check_desc(tp, what, &desc, &bytes);
    if (s != D5_OK) return s;
    d5_dtype dt = (d5_dtype)desc.dtype;
    size_t esize = d5_dtype_size(dt), numel = bytes / esize, fbytes = file_bytes(dt, numel);
    if (dt == D5_STRING) return strings_from_proto(tp, what, &desc, numel, out);
    int packed = d5_dtype_bits(dt) < 8; /* the file holds fbytes of packed elements */
    char dbuf[200];
    d5_tensor_desc_format(&desc, dbuf, sizeof dbuf);

    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (!packed) {
            s = d5__onnx_external_read(tp, base_dir, what, &desc, bytes, out);
            if (s == D5_OK) swap_elements(out->data, bytes, esize);
            return s;
        }
        d5_tensor_desc pd = {.dtype = D5_U8, .ndim = 1, .shape = {(int64_t)fbytes}};
        d5_tensor p, t;
        s = d5__onnx_external_read(tp, base_dir, what, &pd, fbytes, &p);
        if (s != D5_OK) return s;
        s = d5_tensor_alloc(&desc, &t);
        if (s == D5_OK) {
            unpack(dt, p.data, t.data, numel);
            *out = t;
        }
        d5_tensor_free(&p);
        return s;
    }
    if (tp->has_data_location && tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
        return d5_error(D5_ERR_FORMAT, "%s has an unknown data_location %d", what,
                        (int)tp->data_location);

    size_t count = 0;
    const char *field = NULL;
    size_t want = packed ? fbytes : numel; /* int32_data holds a packed byte each */
    if (tp->has_raw_data) {
        if (tp->raw_data.len != fbytes)
            return d5_error(D5_ERR_FORMAT, "%s %s has %zu bytes of raw_data, expected %zu%s", what,
                            dbuf, tp->raw_data.len, fbytes,
                            packed ? " (packed, the first element in the low bits)" : "");
    } else {
        field = typed_field(tp, dt, &count);
        if (count != want) {
            size_t other_count;
            const char *other = any_typed_field(tp, &other_count);
            if (count == 0 && other)
                return d5_error(D5_ERR_FORMAT,
                                "%s %s has its %zu values in %s, expected %zu in raw_data or %s",
                                what, dbuf, other_count, other, want, field);
            return d5_error(D5_ERR_FORMAT, "%s %s has %zu values in %s, expected %zu%s", what, dbuf,
                            count, field, want, packed ? " (packed bytes)" : "");
        }
    }

    d5_tensor t;
    s = d5_tensor_alloc(&desc, &t);
    if (s != D5_OK) return d5_error(s, "%s %s: out of memory for %zu bytes", what, dbuf, bytes);
    if (tp->has_raw_data && packed) {
        unpack(dt, tp->raw_data.data, t.data, numel);
    } else if (tp->has_raw_data) {
        if (bytes) memcpy(t.data, tp->raw_data.data, bytes);
        swap_elements(t.data, bytes, esize);
        if (dt == D5_BOOL)
            for (size_t i = 0; i < numel; i++) ((uint8_t *)t.data)[i] = ((uint8_t *)t.data)[i] != 0;
    } else if (packed && numel) {
        uint8_t *p = d5_alloc(fbytes, "packed elements");
        s = p ? copy_typed(tp, what, dbuf, dt, p, fbytes) : D5_ERR_NOMEM;
        if (s == D5_OK) unpack(dt, p, t.data, numel);
        d5_free(p);
    } else if (numel) {
        s = copy_typed(tp, what, dbuf, dt, t.data, numel);
    }
    if (s != D5_OK) {
        d5_tensor_free(&t);
        return s;
    }
    *out = t;
    return D5_OK;
}

/* ---- d5_tensor -> TensorProto ---- */

d5_status d5__onnx_tensor_to_proto(const d5_tensor_desc *desc, const void *data, const char *name,
                                   d5__arena *arena, Onnx__TensorProto *tp)
{
    size_t bytes;
    if (d5_tensor_desc_bytes(desc, &bytes) != D5_OK)
        return d5_error(D5_ERR_INVALID, "tensor '%s': %s", name ? name : "", d5_last_error());
    if (bytes && !data)
        return d5_error(D5_ERR_INVALID, "tensor '%s' has no data", name ? name : "");
    tp->name = (char *)name;
    tp->has_data_type = 1;
    tp->data_type = d5__onnx_type_of((d5_dtype)desc->dtype);
    tp->n_dims = (size_t)desc->ndim;
    if (desc->ndim > 0) {
        tp->dims = d5__arena_array(arena, (size_t)desc->ndim, sizeof(int64_t));
        if (!tp->dims) return D5_ERR_NOMEM;
        memcpy(tp->dims, desc->shape, (size_t)desc->ndim * sizeof(int64_t));
    }
    d5_dtype dt = (d5_dtype)desc->dtype;
    size_t esize = d5_dtype_size(dt);
    if (dt == D5_STRING) {
        size_t numel = bytes / esize;
        tp->n_string_data = numel;
        tp->string_data = d5__arena_array(arena, numel ? numel : 1, sizeof *tp->string_data);
        if (!tp->string_data) return D5_ERR_NOMEM;
        for (size_t i = 0; i < numel; i++) {
            const char *str = ((const char *const *)data)[i];
            tp->string_data[i].data = (uint8_t *)(str ? str : "");
            tp->string_data[i].len = str ? strlen(str) : 0;
        }
        return D5_OK;
    }
    tp->has_raw_data = 1;
    tp->raw_data.len = bytes;
    tp->raw_data.data = (uint8_t *)data;
    if (d5_dtype_bits(dt) < 8) { /* packed, the first element in the low bits */
        size_t numel = bytes / esize;
        tp->raw_data.len = file_bytes(dt, numel);
        tp->raw_data.data = d5__arena_alloc(arena, tp->raw_data.len ? tp->raw_data.len : 1);
        if (!tp->raw_data.data) return D5_ERR_NOMEM;
        pack(dt, data, tp->raw_data.data, numel);
        return D5_OK;
    }
    if (bytes && esize > 1 && !host_is_little_endian()) {
        tp->raw_data.data = d5__arena_alloc(arena, bytes);
        if (!tp->raw_data.data) return D5_ERR_NOMEM;
        memcpy(tp->raw_data.data, data, bytes);
        swap_elements(tp->raw_data.data, bytes, esize);
    }
    return D5_OK;
}

/* ---- TensorProto files ---- */

static d5_status tensor_read(const char *path, d5_tensor *t, char **name)
{
    void *buf = NULL;
    size_t size = 0;
    d5_status s = d5__onnx_read_file(path, D5__ONNX_MAX_MESSAGE, "ONNX TensorProto", &buf, &size);
    if (s != D5_OK) return s; /* the message names the file */
    s = d5__onnx_check_depth(&onnx__tensor_proto__descriptor, buf, size);
    if (s != D5_OK) {
        d5_free(buf);
        return d5__onnx_prefix(s, path);
    }
    d5__pb_alloc pa;
    d5__pb_alloc_init(&pa);
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pa.base, size, buf);
    d5_free(buf);
    if (!tp)
        return pa.failed ? d5_error(D5_ERR_NOMEM, "%s: out of memory parsing it", path)
                         : d5_error(D5_ERR_FORMAT,
                                    "%s: not an ONNX TensorProto (protobuf parse failed)", path);
    char what[160];
    if (tp->name && tp->name[0])
        snprintf(what, sizeof what, "tensor '%s'", tp->name);
    else
        snprintf(what, sizeof what, "tensor");
    char *dir = d5__onnx_dirname(path);
    char *copy = NULL;
    d5_tensor out;
    if (!dir) s = D5_ERR_NOMEM;
    if (s == D5_OK) s = d5__onnx_tensor_from_proto(tp, dir, what, &out);
    if (s == D5_OK && name) {
        copy = d5_strdup(tp->name ? tp->name : "", "tensor name");
        if (!copy) {
            d5_tensor_free(&out);
            s = D5_ERR_NOMEM;
        }
    }
    if (s == D5_OK) {
        *t = out;
        if (name) *name = copy;
    }
    d5_free(dir);
    onnx__tensor_proto__free_unpacked(tp, &pa.base);
    return s == D5_OK ? s : d5__onnx_prefix(s, path);
}

d5_status d5_onnx_tensor_read(const char *path, d5_tensor *t, char **name)
{
    if (!path || !t) return d5_error(D5_ERR_INVALID, "d5_onnx_tensor_read: NULL argument");
    return tensor_read(path, t, name);
}

d5_status d5_onnx_tensor_write(const char *path, const d5_tensor *t, const char *name)
{
    if (!path || !t) return d5_error(D5_ERR_INVALID, "d5_onnx_tensor_write: NULL argument");
    if (t->device != D5_DEVICE_CPU)
        return d5_error(D5_ERR_INVALID, "%s: tensor '%s' is not in CPU memory", path,
                        name ? name : "");
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    d5__arena arena = {NULL};
    uint8_t *buf = NULL;
    int written = 0;
    d5_status s = d5__onnx_tensor_to_proto(&t->desc, t->data, name, &arena, &tp);
    if (s == D5_OK) {
        size_t size = onnx__tensor_proto__get_packed_size(&tp);
        if (size > D5__ONNX_MAX_MESSAGE)
            s = d5_error(D5_ERR_UNSUPPORTED, "%zu bytes, more than protobuf's 2 GiB limit", size);
        else if (!(buf = d5_alloc(size ? size : 1, "TensorProto")))
            s = D5_ERR_NOMEM;
        else if (onnx__tensor_proto__pack(&tp, buf) != size)
            s = d5_error(D5_ERR_INVALID, "protobuf packing gave an unexpected size");
        if (s == D5_OK) {
            written = 1;
            s = d5_file_write_atomic(path, buf, size);
        }
    }
    if (s != D5_OK && !written) s = d5__onnx_prefix(s, path); /* the writer names the file */
    d5_free(buf);
    d5__arena_free(&arena);
    return s;
}
