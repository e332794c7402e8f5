/* TensorProto files: d5's writer and reader against each other and against
 * files written by the onnx Python package (tests/onnx/make_fixtures.py):
 * typed fields and raw_data of every data type, bad tensors (types d5 does
 * not have, values outside their type, misplaced fields), external data. */
#define _GNU_SOURCE
#include "onnx_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TENSORS FIXTURES "/tensors/"

/* A tensor of the given dtype and shape whose bytes follow a pattern (bools 0/1). */
static d5_tensor pattern_tensor(d5_dtype dt, int32_t ndim, const int64_t *shape)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    size_t bytes = 0;
    cr_assert_eq(d5_tensor_desc_bytes(&d, &bytes), D5_OK);
    int bits = d5_dtype_bits(dt);
    for (size_t i = 0; i < bytes; i++) {
        uint8_t v = dt == D5_BOOL ? (uint8_t)(i % 3 == 0) : (uint8_t)(i * 37 + (size_t)dt);
        if (bits < 8) { /* the sub-byte types' values: int4 and int2 sign-extended */
            unsigned m = v & ((1u << bits) - 1), sign = 1u << (bits - 1);
            v = dt == D5_I4 || dt == D5_I2 ? (uint8_t)(int8_t)((int)(m ^ sign) - (int)sign)
                                           : (uint8_t)m;
        }
        ((uint8_t *)t.data)[i] = v;
    }
    return t;
}

static size_t dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

Test(onnx_tensor, write_read_every_dtype)
{
    char *dir = tmpdir_make();
    const int64_t shapes[][3] = {{2, 3, 5}, {0, 4, 1}};
    for (int dt = 1; dt < D5_DTYPE_COUNT; dt++) {
        if (dt == D5_STRING) continue; /* its bytes are no pattern: typed_fields */
        for (int k = 0; k < 3; k++) {
            int32_t ndim = k == 2 ? 0 : 3; /* k == 2: a scalar */
            d5_tensor t = pattern_tensor((d5_dtype)dt, ndim, shapes[k % 2]);
            char path[512], name[64];
            snprintf(path, sizeof path, "%s/%s_%d.pb", dir, d5_dtype_name((d5_dtype)dt), k);
            snprintf(name, sizeof name, "t_%s", d5_dtype_name((d5_dtype)dt));
            cr_assert_eq(d5_onnx_tensor_write(path, &t, name), D5_OK, "%s", d5_last_error());
            d5_tensor back;
            char *got_name = NULL;
            cr_assert_eq(d5_onnx_tensor_read(path, &back, &got_name), D5_OK, "%s", d5_last_error());
            cr_expect_str_eq(got_name, name);
            cr_expect_eq(back.desc.dtype, dt);
            cr_expect_eq(back.desc.ndim, ndim);
            for (int32_t i = 0; i < ndim; i++) cr_expect_eq(back.desc.shape[i], shapes[k % 2][i]);
            size_t bytes = 0;
            cr_assert_eq(d5_tensor_desc_bytes(&t.desc, &bytes), D5_OK);
            cr_expect(bytes == 0 || memcmp(back.data, t.data, bytes) == 0, "%s: data differs",
                      path);
            d5_free(got_name);
            d5_tensor_free(&back);
            d5_tensor_free(&t);
        }
    }
    /* Atomic writes leave nothing else behind. */
    cr_expect_eq(dir_entries(dir), (size_t)(3 * (D5_DTYPE_COUNT - 2)));
    rmtree(dir);
    free(dir);
}

/* The onnx package reads what d5 writes: dtype, shape and bytes. */
Test(onnx_tensor, python_reads_written_tensors)
{
    const char *python = D5_PYTHON;
    if (!python[0] || !path_exists(python)) cr_skip_test("no /usr/bin/python3");
    char *dir = tmpdir_make();
    const int64_t shape[] = {3, 2};
    /* Debian's onnx (1.12) has none of the narrow types (float8 and after). */
    for (int dt = 1; dt < D5_F8E4M3FN; dt++) {
        d5_tensor t = pattern_tensor((d5_dtype)dt, 2, shape);
        char path[512];
        snprintf(path, sizeof path, "%s/%s.pb", dir, d5_dtype_name((d5_dtype)dt));
        cr_assert_eq(d5_onnx_tensor_write(path, &t, d5_dtype_name((d5_dtype)dt)), D5_OK);
        snprintf(path, sizeof path, "%s/%s.bin", dir, d5_dtype_name((d5_dtype)dt));
        FILE *f = fopen(path, "wb");
        cr_assert(f);
        fwrite(t.data, 1, 6 * d5_dtype_size((d5_dtype)dt), f);
        fclose(f);
        d5_tensor_free(&t);
    }
    /* numpy has no bfloat16: its bytes are compared through uint16. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s -c \"import glob, sys, numpy as np, onnx\n"
             "from onnx import numpy_helper\n"
             "names = {1: 'float32', 11: 'float64', 10: 'float16', 16: 'bfloat16', 3: 'int8',\n"
             "         2: 'uint8', 5: 'int16', 6: 'int32', 7: 'int64', 9: 'bool',\n"
             "         4: 'uint16', 12: 'uint32', 13: 'uint64'}\n"
             "n = 0\n"
             "for pb in glob.glob(sys.argv[1] + '/*.pb'):\n"
             "    t = onnx.load_tensor(pb)\n"
             "    assert names[t.data_type] == t.name, (pb, t.data_type)\n"
             "    assert list(t.dims) == [3, 2], pb\n"
             "    raw = t.raw_data if t.data_type == 16 else numpy_helper.to_array(t).tobytes()\n"
             "    assert raw == open(pb[:-3] + '.bin', 'rb').read(), pb\n"
             "    n += 1\n"
             "sys.exit(0 if n == %d else 1)\" '%s'",
             python, D5_F8E4M3FN - 1, dir);
    cr_expect_eq(system(cmd), 0, "the onnx package disagrees with d5's TensorProto files");
    rmtree(dir);
    free(dir);
}

static d5_tensor read_fixture(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s%s", TENSORS, file);
    d5_tensor t;
    cr_assert_eq(d5_onnx_tensor_read(path, &t, NULL), D5_OK, "%s", d5_last_error());
    return t;
}

#define EXPECT_VALUES(file, want_dtype, type, ...)                                                 \
    do {                                                                                           \
        const type want[] = {__VA_ARGS__};                                                         \
        d5_tensor t = read_fixture(file);                                                          \
        cr_expect_eq(t.desc.dtype, want_dtype, "%s", file);                                        \
        cr_expect_eq(d5_tensor_desc_numel(&t.desc), (int64_t)(sizeof want / sizeof want[0]), "%s", \
                     file);                                                                        \
        cr_expect_eq(memcmp(t.data, want, sizeof want), 0, "%s: values differ", file);             \
        d5_tensor_free(&t);                                                                        \
    } while (0)

Test(onnx_tensor, typed_fields)
{
    EXPECT_VALUES("typed_float.pb", D5_F32, float, 1.5f, -2, 3.25f, 0, 1e-3f, -7);
    EXPECT_VALUES("typed_double.pb", D5_F64, double, 1.0 / 3, -2.5, 1e300);
    EXPECT_VALUES("typed_int8.pb", D5_I8, int8_t, -128, -1, 0, 127);
    EXPECT_VALUES("typed_uint8.pb", D5_U8, uint8_t, 0, 200, 255);
    EXPECT_VALUES("typed_int16.pb", D5_I16, int16_t, -32768, 5, 32767);
    EXPECT_VALUES("typed_int32.pb", D5_I32, int32_t, INT32_MIN, 0, INT32_MAX);
    EXPECT_VALUES("typed_int64.pb", D5_I64, int64_t, INT64_MIN, 1, INT64_MAX);
    EXPECT_VALUES("typed_bool.pb", D5_BOOL, uint8_t, 1, 0, 0, 1);
    EXPECT_VALUES("typed_float16.pb", D5_F16, uint16_t, 0x3C00, 0xC000, 0x3800);
    EXPECT_VALUES("typed_bfloat16.pb", D5_BF16, uint16_t, 0x3F80, 0xC040);
    EXPECT_VALUES("typed_uint16.pb", D5_U16, uint16_t, 0, 40000, 65535);
    EXPECT_VALUES("typed_uint32.pb", D5_U32, uint32_t, 0, 3000000000u, UINT32_MAX);
    EXPECT_VALUES("typed_uint64.pb", D5_U64, uint64_t, 0, (UINT64_C(1) << 63) + 5, UINT64_MAX);
    EXPECT_VALUES("typed_scalar.pb", D5_F32, float, 42);
    EXPECT_VALUES("raw_float.pb", D5_F32, float, 0.25f, -1, 3, 1e-7f);
    EXPECT_VALUES("raw_int64.pb", D5_I64, int64_t, 5, -6, (int64_t)1 << 40);

    /* Strings: each element its bytes, written back in string_data. */
    d5_tensor t = read_fixture("typed_string.pb"), back;
    cr_expect_eq(t.desc.dtype, D5_STRING);
    const char *want[] = {"alpha", "", "\xc3\xa9t\xc3\xa9", "x y"};
    cr_assert_eq(d5_tensor_desc_numel(&t.desc), 4);
    for (int i = 0; i < 4; i++) cr_expect_str_eq(d5_string_at(&t, i), want[i]);
    char *sdir = tmpdir_make(), spath[512];
    snprintf(spath, sizeof spath, "%s/s.pb", sdir);
    cr_assert_eq(d5_onnx_tensor_write(spath, &t, "s"), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_onnx_tensor_read(spath, &back, NULL), D5_OK, "%s", d5_last_error());
    for (int i = 0; i < 4; i++) cr_expect_str_eq(d5_string_at(&back, i), want[i]);
    d5_tensor_free(&back);
    d5_tensor_free(&t);
    rmtree(sdir);
    free(sdir);

    t = read_fixture("typed_float.pb");
    cr_expect_eq(t.desc.ndim, 2);
    cr_expect_eq(t.desc.shape[0], 2);
    cr_expect_eq(t.desc.shape[1], 3);
    d5_tensor_free(&t);
    t = read_fixture("typed_scalar.pb");
    cr_expect_eq(t.desc.ndim, 0);
    d5_tensor_free(&t);
    t = read_fixture("typed_empty.pb");
    cr_expect_eq(t.desc.ndim, 2);
    cr_expect_eq(d5_tensor_desc_numel(&t.desc), 0);
    d5_tensor_free(&t);

    char *name = NULL;
    cr_assert_eq(d5_onnx_tensor_read(TENSORS "typed_int8.pb", &t, &name), D5_OK);
    cr_expect_str_eq(name, "i8");
    d5_free(name);
    d5_tensor_free(&t);
}

/* raw_data of every type, as numpy_helper writes it, and the same values in
 * the typed fields (int32_data, uint64_data, ...) where the fixture has them. */
Test(onnx_tensor, raw_data_of_every_type)
{
    EXPECT_VALUES("raw_all_float32.pb", D5_F32, float, 1.5f, -2, 3.25f, 0, 1e-3f, -7);
    EXPECT_VALUES("raw_all_float64.pb", D5_F64, double, 1.0 / 3, -2.5, 1e300);
    EXPECT_VALUES("raw_all_float16.pb", D5_F16, uint16_t, 0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001,
                  0xFC00);
    EXPECT_VALUES("raw_all_bfloat16.pb", D5_BF16, uint16_t, 0x3F80, 0xC040, 0x7F7F, 0x0001);
    EXPECT_VALUES("raw_all_int8.pb", D5_I8, int8_t, -128, -1, 0, 127);
    EXPECT_VALUES("raw_all_uint8.pb", D5_U8, uint8_t, 0, 200, 255);
    EXPECT_VALUES("raw_all_int16.pb", D5_I16, int16_t, -32768, 5, 32767);
    EXPECT_VALUES("raw_all_int32.pb", D5_I32, int32_t, INT32_MIN, 0, INT32_MAX);
    EXPECT_VALUES("raw_all_int64.pb", D5_I64, int64_t, INT64_MIN, 1, INT64_MAX);
    EXPECT_VALUES("raw_all_bool.pb", D5_BOOL, uint8_t, 1, 0, 0, 1);
    EXPECT_VALUES("raw_all_uint16.pb", D5_U16, uint16_t, 0, 40000, 65535);
    EXPECT_VALUES("raw_all_uint32.pb", D5_U32, uint32_t, 0, 3000000000u, UINT32_MAX);
    EXPECT_VALUES("raw_all_uint64.pb", D5_U64, uint64_t, 0, (UINT64_C(1) << 63) + 5, UINT64_MAX);
    /* Read from either encoding, written back as raw_data, read again: the same bytes. */
    static const char *const files[] = {
        "raw_all_float32.pb", "raw_all_float64.pb", "raw_all_float16.pb", "raw_all_bfloat16.pb",
        "raw_all_int8.pb",    "raw_all_uint8.pb",   "raw_all_int16.pb",   "raw_all_int32.pb",
        "raw_all_int64.pb",   "raw_all_bool.pb",    "raw_all_uint16.pb",  "raw_all_uint32.pb",
        "raw_all_uint64.pb",  "typed_float.pb",     "typed_double.pb",    "typed_float16.pb",
        "typed_bfloat16.pb",  "typed_int8.pb",      "typed_uint8.pb",     "typed_int16.pb",
        "typed_int32.pb",     "typed_int64.pb",     "typed_bool.pb",      "typed_uint16.pb",
        "typed_uint32.pb",    "typed_uint64.pb"};
    char *dir = tmpdir_make();
    int seen[D5_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        d5_tensor t = read_fixture(files[i]), back;
        seen[t.desc.dtype]++;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        cr_assert_eq(d5_onnx_tensor_write(path, &t, "t"), D5_OK, "%s", d5_last_error());
        cr_assert_eq(d5_onnx_tensor_read(path, &back, NULL), D5_OK, "%s", d5_last_error());
        size_t bytes = 0;
        cr_assert_eq(d5_tensor_desc_bytes(&t.desc, &bytes), D5_OK);
        cr_expect_eq(back.desc.dtype, t.desc.dtype, "%s", files[i]);
        cr_expect(memcmp(back.data, t.data, bytes) == 0, "%s: bytes differ", files[i]);
        d5_tensor_free(&t);
        d5_tensor_free(&back);
    }
    for (int dt = 1; dt < D5_F8E4M3FN; dt++) /* the narrow types: test_onnx_narrow.c */
        cr_expect_eq(seen[dt], 2, "%s: raw_data and a typed field", d5_dtype_name((d5_dtype)dt));
    rmtree(dir);
    free(dir);
}

/* A file that must not read: the status and a part of the message. */
typedef struct bad_file {
    const char *file;
    d5_status status;
    const char *what;
} bad_file;

/* The file fails with `status`, and the message names the file and says `what`. */
static void expect_bad(const char *file, d5_status status, const char *what)
{
    char path[512];
    snprintf(path, sizeof path, "%s%s", TENSORS, file);
    d5_tensor t;
    memset(&t, 0, sizeof t);
    d5_status s = d5_onnx_tensor_read(path, &t, NULL);
    cr_expect_eq(s, status, "%s: %s, expected %s (%s)", file, d5_status_name(s),
                 d5_status_name(status), d5_last_error());
    cr_expect(strstr(d5_last_error(), path), "%s: message without the file: %s", file,
              d5_last_error());
    cr_expect(strstr(d5_last_error(), what), "%s: '%s' not in: %s", file, what, d5_last_error());
    cr_expect_null(t.data);
}

/* expect_bad for each of n cases. */
static void expect_all_bad(const bad_file *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) expect_bad(cases[i].file, cases[i].status, cases[i].what);
}

static const bad_file bad_tensors[] = {
    {"bad_string.pb", D5_ERR_UNSUPPORTED,
     "tensor 'str' string[2]: string_data[0] holds a byte 0, which d5's strings cannot"},
    {"bad_string_raw.pb", D5_ERR_FORMAT, "string[1] has raw_data; strings go in string_data"},
    {"bad_string_count.pb", D5_ERR_FORMAT, "string[3] has 2 values in string_data, expected 3"},
    {"bad_complex.pb", D5_ERR_UNSUPPORTED, "COMPLEX64"},
    {"bad_range_uint8.pb", D5_ERR_FORMAT,
     "tensor 'u8' uint8[3] has int32_data[1] = 300, outside uint8's range 0..255"},
    {"bad_raw_size_int4.pb", D5_ERR_FORMAT,
     "int4[5] has 2 bytes of raw_data, expected 3 (packed, the first element in the low bits)"},
    {"bad_range_int4.pb", D5_ERR_FORMAT, "int32_data[1] = 300, outside int4's range 0..255"},
    {"bad_range_float16.pb", D5_ERR_FORMAT,
     "int32_data[1] = 70000, outside float16's range 0..65535 (bit patterns)"},
    {"bad_range_uint32.pb", D5_ERR_FORMAT, "uint64_data[1] = 4294967296, outside uint32's range"},
    {"bad_uint64_field.pb", D5_ERR_FORMAT,
     "has its 2 values in int64_data, expected 2 in raw_data or uint64_data"},
    {"bad_9dims.pb", D5_ERR_UNSUPPORTED, "9 dimensions; d5 supports at most 8"},
    {"bad_raw_size.pb", D5_ERR_FORMAT, "12 bytes of raw_data, expected 16"},
    {"bad_count.pb", D5_ERR_FORMAT, "4 values in float_data, expected 5"},
    {"bad_wrong_field.pb", D5_ERR_FORMAT,
     "values in float_data, expected 2 in raw_data or int64_data"},
    {"bad_negative_dim.pb", D5_ERR_FORMAT, "negative size -1 in dimension 0"},
    {"bad_no_type.pb", D5_ERR_FORMAT, "no data type"},
    /* Sizes are checked before anything is allocated. */
    {"bad_huge.pb", D5_ERR_FORMAT, "1 values in float_data, expected 1099511627776"},
    {"bad_overflow.pb", D5_ERR_FORMAT, "is larger than the address space"},
    /* Protobuf cannot tell messages apart: a model reads as an untyped tensor. */
    {"../models/attrs.onnx", D5_ERR_FORMAT, "has no data type"},
};

/* The narrow types as ONNX writes them (make_fixtures.py): 4-bit elements two
 * a byte and 2-bit ones four a byte, the first in the low bits, in raw_data
 * or one packed byte per int32_data; float8 codes one a byte. In memory one
 * element a byte: int4 sign-extended, codes as they are. Written back, the
 * same bytes. */
Test(onnx_tensor, narrow_types)
{
    static const struct {
        const char *file;
        d5_dtype dtype;
        int64_t n;
        uint8_t bytes[6];
        double values[6];
    } cases[] = {
        {"narrow_int4_raw.pb", D5_I4, 5, {1, 2, 0xFF, 0xF8, 7}, {1, 2, -1, -8, 7}},
        {"narrow_uint2_typed.pb", D5_U2, 6, {0, 1, 2, 3, 2, 0}, {0, 1, 2, 3, 2, 0}},
        {"narrow_float4_raw.pb", D5_F4E2M1, 3, {1, 7, 0xF}, {0.5, 6, -6}},
        {"narrow_e4m3fn_typed.pb", D5_F8E4M3FN, 3, {0x38, 0x7E, 0xFF}, {1, 448, NAN}},
        {"narrow_e5m2_raw.pb", D5_F8E5M2, 2, {0xFC, 0x7B}, {-INFINITY, 57344}},
        {"narrow_e8m0_raw.pb", D5_F8E8M0, 3, {0, 0x7F, 0xFF}, {0x1p-127, 1, NAN}},
    };
    char *dir = tmpdir_make();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d5_tensor t = read_fixture(cases[i].file), back;
        cr_assert_eq(t.desc.dtype, cases[i].dtype, "%s", cases[i].file);
        cr_assert_eq(d5_tensor_desc_numel(&t.desc), cases[i].n, "%s", cases[i].file);
        cr_expect(memcmp(t.data, cases[i].bytes, (size_t)cases[i].n) == 0, "%s: bytes",
                  cases[i].file);
        double v[6];
        cr_assert_eq(d5_convert(t.data, cases[i].dtype, v, D5_F64, (size_t)cases[i].n), D5_OK);
        for (int64_t k = 0; k < cases[i].n; k++) {
            double want = cases[i].values[k];
            cr_expect(isnan(want) ? isnan(v[k]) : v[k] == want, "%s element %lld: %g, want %g",
                      cases[i].file, (long long)k, v[k], want);
        }
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].file);
        cr_assert_eq(d5_onnx_tensor_write(path, &t, "t"), D5_OK, "%s", d5_last_error());
        cr_assert_eq(d5_onnx_tensor_read(path, &back, NULL), D5_OK, "%s", d5_last_error());
        cr_expect(memcmp(back.data, t.data, (size_t)cases[i].n) == 0, "%s: written back",
                  cases[i].file);
        d5_tensor_free(&t);
        d5_tensor_free(&back);
    }
    rmtree(dir);
    free(dir);
}

/* An input the fuzzer found: int4 of 2^63 - 1 elements and no data. Its
 * packed size, computed as elements * 4 bits, wrapped to 0 bytes, which the
 * absent data matched: the read then asked for 2^63 bytes. */
Test(onnx_tensor, huge_packed_shape_is_a_format_error)
{
    static const char bytes[] = "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x00\x10\x16";
    char *dir = tmpdir_make(), path[512];
    snprintf(path, sizeof path, "%s/huge_int4.pb", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, sizeof bytes - 1, f), sizeof bytes - 1);
    fclose(f);
    d5_tensor t;
    cr_expect_eq(d5_onnx_tensor_read(path, &t, NULL), D5_ERR_FORMAT);
    cr_expect(strstr(d5_last_error(), "has 0 values in int32_data, expected 4611686018427387904"),
              "%s", d5_last_error());
    rmtree(dir);
    free(dir);
}

Test(onnx_tensor, bad_tensors)
{
    expect_all_bad(bad_tensors, sizeof bad_tensors / sizeof bad_tensors[0]);
}

Test(onnx_tensor, not_protobuf)
{
    char *dir = tmpdir_make();
    char path[512];
    snprintf(path, sizeof path, "%s/junk.pb", dir);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fwrite("\xff\xff\xff\xff\x0f\x12\x34", 1, 7, f);
    fclose(f);
    d5_tensor t;
    cr_expect_eq(d5_onnx_tensor_read(path, &t, NULL), D5_ERR_FORMAT);
    cr_expect(strstr(d5_last_error(), path), "%s", d5_last_error());
    cr_expect(strstr(d5_last_error(), "not an ONNX TensorProto (protobuf parse failed)"), "%s",
              d5_last_error());
    f = fopen(path, "wb");
    fclose(f);
    cr_expect_eq(d5_onnx_tensor_read(path, &t, NULL), D5_ERR_FORMAT);
    cr_expect(strstr(d5_last_error(), "empty file (0 bytes)"), "%s", d5_last_error());
    rmtree(dir);
    free(dir);
}

static const bad_file bad_external[] = {
    {"ext_escape.pb", D5_ERR_FORMAT, "'../tensors/weights.bin' leaves the model's folder"},
    {"ext_absolute.pb", D5_ERR_FORMAT, "'/etc/hostname' is an absolute path"},
    {"ext_missing.pb", D5_ERR_IO, "missing.bin"},
    {"ext_short.pb", D5_ERR_FORMAT, "has 28 bytes; the tensor needs 16 at offset 20"},
    {"ext_length.pb", D5_ERR_FORMAT, "length 12, expected 16 bytes"},
    {"ext_no_location.pb", D5_ERR_FORMAT, "without a 'location' key"},
};

Test(onnx_tensor, external_data)
{
    EXPECT_VALUES("ext_ok.pb", D5_F32, float, 1, -2, 0.5f, 8);
    expect_all_bad(bad_external, sizeof bad_external / sizeof bad_external[0]);
}

/* Copies a fixture into dir. */
static void copy_fixture(const char *file, const char *dir, const char *as)
{
    char from[512], to[512];
    snprintf(from, sizeof from, "%s%s", TENSORS, file);
    snprintf(to, sizeof to, "%s/%s", dir, as);
    size_t len = 0;
    char *data = slurp(from, &len);
    cr_assert(data);
    FILE *f = fopen(to, "wb");
    cr_assert(f);
    fwrite(data, 1, len, f);
    fclose(f);
    free(data);
}

/* A symbolic link inside the folder is followed; one that leads out is refused. */
Test(onnx_tensor, external_data_through_links)
{
    char *dir = tmpdir_make();
    char sub[512], path[600], target[600];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    copy_fixture("ext_link.pb", sub, "t.pb");
    snprintf(path, sizeof path, "%s/t.pb", sub);
    snprintf(target, sizeof target, "%s/link.bin", sub);

    /* link.bin -> ../secret.bin: outside. */
    copy_fixture("weights.bin", dir, "secret.bin");
    cr_assert_eq(symlink("../secret.bin", target), 0);
    d5_tensor t;
    cr_expect_eq(d5_onnx_tensor_read(path, &t, NULL), D5_ERR_FORMAT);
    cr_expect(strstr(d5_last_error(), "outside the model's folder"), "%s", d5_last_error());

    /* link.bin -> real.bin: inside (the first 16 bytes are the padding and 2 floats). */
    unlink(target);
    copy_fixture("weights.bin", sub, "real.bin");
    cr_assert_eq(symlink("real.bin", target), 0);
    cr_assert_eq(d5_onnx_tensor_read(path, &t, NULL), D5_OK, "%s", d5_last_error());
    cr_expect_eq(memcmp(t.data, "PADDING!", 8), 0);
    d5_tensor_free(&t);
    rmtree(dir);
    free(dir);
}

Test(onnx_tensor, write_errors)
{
    const int64_t shape[] = {2};
    d5_tensor t = pattern_tensor(D5_F32, 1, shape);
    const char *path = "/nonexistent-d5-folder/t.pb";
    cr_expect_eq(d5_onnx_tensor_write(path, &t, "x"), D5_ERR_IO);
    cr_expect(strstr(d5_last_error(), path), "%s", d5_last_error());
    t.device = D5_DEVICE_CUDA;
    cr_expect_eq(d5_onnx_tensor_write("/tmp/unused.pb", &t, "x"), D5_ERR_INVALID);
    t.device = D5_DEVICE_CPU;
    d5_tensor_free(&t);
    cr_expect_eq(d5_onnx_tensor_read("/nonexistent-d5-folder/t.pb", &t, NULL), D5_ERR_IO);
    cr_expect(strstr(d5_last_error(), "/nonexistent-d5-folder/t.pb"), "%s", d5_last_error());
}

/* Every allocation failure is reported as D5_ERR_NOMEM and frees what it took. */
Test(onnx_tensor, out_of_memory)
{
    char *dir = tmpdir_make();
    char path[512];
    snprintf(path, sizeof path, "%s/t.pb", dir);
    const int64_t shape[] = {4, 4};
    d5_tensor t = pattern_tensor(D5_F64, 2, shape);
    cr_assert_eq(d5_onnx_tensor_write(path, &t, "w"), D5_OK);
    int done_read = 0, done_write = 0;
    for (long budget = 0; budget < 100 && !(done_read && done_write); budget++) {
        d5_tensor back;
        char *name = NULL;
        failing_alloc_install(budget);
        d5_status s = d5_onnx_tensor_read(path, &back, &name);
        if (s == D5_OK) {
            d5_tensor_free(&back);
            d5_free(name);
            done_read = 1;
        } else {
            cr_expect_eq(s, D5_ERR_NOMEM, "budget %ld: %s", budget, d5_last_error());
        }
        cr_expect_eq(failing_alloc_live(), 0, "budget %ld: read leaks", budget);
        failing_alloc_install(budget);
        s = d5_onnx_tensor_write(path, &t, "w");
        if (s == D5_OK)
            done_write = 1;
        else
            cr_expect_eq(s, D5_ERR_NOMEM, "budget %ld: %s", budget, d5_last_error());
        cr_expect_eq(failing_alloc_live(), 0, "budget %ld: write leaks", budget);
        failing_alloc_remove();
    }
    cr_expect(done_read && done_write);
    d5_tensor_free(&t);
    cr_expect_eq(dir_entries(dir), 1u);
    rmtree(dir);
    free(dir);
}
