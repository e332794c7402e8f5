/* The conformance runner with every data type: integer outputs compare
 * exactly (uint64 beyond double's precision too), float16 within rtol and
 * atol after widening, bfloat16 test data stored as UINT16 (ONNX 1.12) read
 * as bfloat16, the data types of a test, and d5 onnx-test's per-type lines
 * and its JSON "by_dtype". Test folders are written here with d5's own
 * writers; the Cast tests of libonnx-testdata run as they are. */
#define _GNU_SOURCE
#include "onnx_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

static d5_tensor raw(d5_dtype dt, int64_t n, const void *values)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(dt, 1, &n, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    memcpy(t.data, values, (size_t)n * d5_dtype_size(dt));
    return t;
}

/* Writes folder dir/name: a model with one Cast from `in`'s type (declared
 * as `from`) to `to`, and one data set with input `in` and expected `want`. */
static void write_cast_test(const char *dir, const char *name, d5_dtype from, d5_dtype to,
                            d5_tensor in, d5_tensor want)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(mkdir(path, 0700), 0);
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create(name, &net), D5_OK);
    cr_assert_eq(d5_network_set_opset(net, "", 13), D5_OK);
    d5_tensor_desc din = in.desc, dout = want.desc;
    din.dtype = from;
    dout.dtype = to;
    cr_assert_eq(d5_network_add_input(net, "x", &din, NULL), D5_OK);
    const int64_t onnx_of[D5_DTYPE_COUNT] = {0,  1,  11, 10, 16, 3,  2,  5,  6,  7,  9,  4, 12,
                                             13, 17, 18, 19, 20, 24, 23, 22, 21, 26, 25, 8};
    d5_attr to_attr = {.name = "to", .type = D5_ATTR_INT, .i = onnx_of[to]};
    d5_attrs attrs = {&to_attr, 1};
    const char *x = "x", *y = "y";
    cr_assert_eq(d5_network_add_node(net, "cast", "Cast", NULL, &x, 1, &y, 1, &attrs, NULL), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "y", &dout), D5_OK);
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, name);
    cr_assert_eq(d5_onnx_save(net, path), D5_OK, "%s", d5_last_error());
    d5_network_free(net);
    snprintf(path, sizeof path, "%s/%s/test_data_set_0", dir, name);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_0.pb", dir, name);
    cr_assert_eq(d5_onnx_tensor_write(path, &in, "x"), D5_OK);
    snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_0.pb", dir, name);
    cr_assert_eq(d5_onnx_tensor_write(path, &want, "y"), D5_OK);
    d5_tensor_free(&in);
    d5_tensor_free(&want);
}

static d5_onnx_test_result run(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    d5_onnx_test_result r;
    d5_onnx_test_params p = d5_onnx_test_default_params();
    p.backend = "ref";
    cr_assert_eq(d5_onnx_test_run(path, &p, &r), D5_OK, "%s", d5_last_error());
    return r;
}

/* Two Cast tests of int64 [-1, 300, 5] to uint8: `ok` expects what ONNX
 * gives ([255, 44, 5]), `off` a last element off by one. */
static void write_uint8_cases(const char *dir, const char *ok, const char *off)
{
    const int64_t x[] = {-1, 300, 5};
    write_cast_test(dir, ok, D5_I64, D5_U8, raw(D5_I64, 3, x),
                    raw(D5_U8, 3, (const uint8_t[]){255, 44, 5}));
    write_cast_test(dir, off, D5_I64, D5_U8, raw(D5_I64, 3, x),
                    raw(D5_U8, 3, (const uint8_t[]){255, 44, 6}));
}

Test(onnx_dtypes, integers_compare_exactly)
{
    char *dir = tmpdir_make();
    write_uint8_cases(dir, "u8_ok", "u8_off");
    /* 2^64 - 1 and 2^64 - 2 are the same double. */
    write_cast_test(dir, "u64_ok", D5_I64, D5_U64, raw(D5_I64, 1, (const int64_t[]){-1}),
                    raw(D5_U64, 1, (const uint64_t[]){UINT64_MAX}));
    write_cast_test(dir, "u64_off", D5_I64, D5_U64, raw(D5_I64, 1, (const int64_t[]){-1}),
                    raw(D5_U64, 1, (const uint64_t[]){UINT64_MAX - 1}));
    d5_onnx_test_result r = run(dir, "u8_ok");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s", r.detail);
    cr_expect_eq(r.dtypes, (1u << D5_I64) | (1u << D5_U8));
    r = run(dir, "u8_off");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_FAIL);
    cr_expect(strstr(r.detail,
                     "output 'y' uint8[3]: element 2 is 5, expected 6 (integers compare exactly)"),
              "%s", r.detail);
    r = run(dir, "u64_ok");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s", r.detail);
    r = run(dir, "u64_off");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_FAIL);
    cr_expect(strstr(r.detail, "element 0 is 18446744073709551615, expected 18446744073709551614"),
              "%s", r.detail);
    rmtree(dir);
    free(dir);
}

/* float16 outputs: widened, within atol + rtol * |want|. One unit in the last
 * place at 1 (2^-10) is within the default rtol of 1e-3, two are not. */
Test(onnx_dtypes, float16_within_tolerance)
{
    char *dir = tmpdir_make();
    const float x[] = {1, -2, 65520};
    write_cast_test(dir, "h_ok", D5_F32, D5_F16, raw(D5_F32, 3, x),
                    raw(D5_F16, 3, (const uint16_t[]){0x3C00, 0xC000, 0x7C00}));
    write_cast_test(dir, "h_one_ulp", D5_F32, D5_F16, raw(D5_F32, 3, x),
                    raw(D5_F16, 3, (const uint16_t[]){0x3C01, 0xC000, 0x7C00}));
    write_cast_test(dir, "h_two_ulp", D5_F32, D5_F16, raw(D5_F32, 3, x),
                    raw(D5_F16, 3, (const uint16_t[]){0x3C02, 0xC000, 0x7C00}));
    d5_onnx_test_result r = run(dir, "h_ok");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s", r.detail);
    cr_expect_eq(r.dtypes, (1u << D5_F32) | (1u << D5_F16));
    r = run(dir, "h_one_ulp");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s", r.detail);
    cr_expect_float_eq(r.max_abs_err, 0x1p-10, 1e-12);
    r = run(dir, "h_two_ulp");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_FAIL);
    cr_expect(strstr(r.detail, "output 'y' float16[3]: element 0 is 1, expected 1.00195312"), "%s",
              r.detail);
    rmtree(dir);
    free(dir);
}

/* ONNX 1.12's test data holds bfloat16 in UINT16 tensors: an input that feeds
 * a bfloat16 graph input and an expected bfloat16 output read as bfloat16. */
Test(onnx_dtypes, bfloat16_stored_as_uint16)
{
    char *dir = tmpdir_make();
    write_cast_test(dir, "bf_in", D5_BF16, D5_F32,
                    raw(D5_U16, 2, (const uint16_t[]){0x3EF5, 0xC040}),
                    raw(D5_F32, 2, (const float[]){0.478515625f, -3}));
    write_cast_test(dir, "bf_out", D5_F32, D5_BF16, raw(D5_F32, 2, (const float[]){0.48f, -3}),
                    raw(D5_U16, 2, (const uint16_t[]){0x3EF5, 0xC040}));
    d5_onnx_test_result r = run(dir, "bf_in");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s", r.detail);
    r = run(dir, "bf_out");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s", r.detail);
    cr_expect_eq(r.dtypes, (1u << D5_F32) | (1u << D5_BF16));
    rmtree(dir);
    free(dir);
}

/* Every Cast and CastLike test of libonnx-testdata passes, those to and
 * from STRING too. */
Test(onnx_dtypes, testdata_cast)
{
    size_t n = 0;
    char **paths = testdata_models("node", &n);
    if (n == 0) cr_skip_test("no libonnx-testdata");
    int ran = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strstr(paths[i], "/test_cast_") && !strstr(paths[i], "/test_castlike_")) continue;
        char dir[512];
        snprintf(dir, sizeof dir, "%.*s", (int)(strlen(paths[i]) - strlen("/model.onnx")),
                 paths[i]);
        d5_onnx_test_result r;
        for (int b = 0; b < 2; b++) {
            d5_onnx_test_params p = d5_onnx_test_default_params();
            p.backend = b ? "ref" : NULL;
            cr_assert_eq(d5_onnx_test_run(dir, &p, &r), D5_OK);
            cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s: %s", dir, r.detail);
            ran++;
        }
    }
    paths_free(paths);
    cr_expect_eq(ran, 2 * 30, "%d Cast and CastLike runs", ran); /* 10 Cast, 20 CastLike */
}

/* d5 onnx-test prints one line per data type before the totals, and its JSON
 * has "by_dtype" and each test's "dtypes". */
Test(onnx_dtypes, cli_counts_by_dtype)
{
    char *dir = tmpdir_make();
    write_uint8_cases(dir, "a_u8_ok", "b_u8_off");
    write_cast_test(dir, "c_h_ok", D5_F32, D5_F16, raw(D5_F32, 1, (const float[]){1}),
                    raw(D5_F16, 1, (const uint16_t[]){0x3C00}));
    char json[600];
    snprintf(json, sizeof json, "%s/out.json", dir);
    char *out = NULL, *err = NULL;
    const char *args[] = {"onnx-test", dir, "--quiet", "--backend", "ref", "--json", json, NULL};
    cr_expect_eq(run_d5(&out, &err, args), 1, "one test fails: %s", err);
    cr_expect(strstr(out, "\nfloat32: 1 passed, 0 failed, 0 skipped\n"
                          "float16: 1 passed, 0 failed, 0 skipped\n"
                          "uint8: 1 passed, 1 failed, 0 skipped\n"
                          "int64: 1 passed, 1 failed, 0 skipped\n"
                          "2 passed, 1 failed, 0 skipped\n"),
              "%s", out);
    cr_expect(strncmp(out, "FAIL  b_u8_off: output 'y' uint8[3]: element 2 is 5, expected 6", 63) ==
                  0,
              "%s", out);
    json_error_t je;
    json_t *root = json_load_file(json, 0, &je);
    cr_assert(root, "%s", je.text);
    json_t *u8 = json_object_get(json_object_get(root, "by_dtype"), "uint8");
    cr_expect_eq(json_integer_value(json_object_get(u8, "passed")), 1);
    cr_expect_eq(json_integer_value(json_object_get(u8, "failed")), 1);
    cr_expect_null(json_object_get(json_object_get(root, "by_dtype"), "float64"));
    json_t *t0 = json_array_get(json_object_get(root, "tests"), 0);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(t0, "dtypes"), 0)), "uint8");
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(t0, "dtypes"), 1)), "int64");
    json_decref(root);
    free(out);
    free(err);
    rmtree(dir);
    free(dir);
}

/* Cast to float4e2m1 of NaN: ONNX's float4 page gives 6, as d5 does; data
 * that expects 0 there (newer ONNX releases, through ml_dtypes) is a skip
 * that says so, and a difference anywhere else is still a failure. */
Test(onnx_dtypes, float4_nan_disagreement_is_a_named_skip)
{
    char *dir = tmpdir_make();
    const float x[] = {0.5f, NAN, 2.0f};
    write_cast_test(dir, "nan_zero", D5_F32, D5_F4E2M1, raw(D5_F32, 3, x),
                    raw(D5_F4E2M1, 3, (const uint8_t[]){0x1, 0x8, 0x4}));
    write_cast_test(dir, "nan_six", D5_F32, D5_F4E2M1, raw(D5_F32, 3, x),
                    raw(D5_F4E2M1, 3, (const uint8_t[]){0x1, 0x7, 0x4}));
    write_cast_test(dir, "other_off", D5_F32, D5_F4E2M1, raw(D5_F32, 3, x),
                    raw(D5_F4E2M1, 3, (const uint8_t[]){0x1, 0x8, 0x5}));
    d5_onnx_test_result r = run(dir, "nan_zero");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_SKIP, "%s", r.detail);
    cr_expect(strstr(r.detail, "ONNX's float4 page maps NaN to 6"), "%s", r.detail);
    r = run(dir, "nan_six");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_PASS, "%s", r.detail);
    r = run(dir, "other_off");
    cr_expect_eq(r.outcome, D5_ONNX_TEST_FAIL, "%s", r.detail);
    rmtree(dir);
    free(dir);
}
