/* Bad ONNX input: every failure is a precise status with a message naming
 * the file, never a crash (these tests run under AddressSanitizer in the
 * sanitizer build): empty, missing, truncated, random and hostile files,
 * wrong types, duplicate initializers, external data outside the folder. */
#define _GNU_SOURCE
#include "onnx_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODELS FIXTURES "/models/"

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Loading `path` fails with `status`, naming the file and saying `what`. */
static void expect_load(const char *path, d5_status status, const char *what)
{
    d5_network *net = NULL;
    d5_status s = d5_onnx_load(path, &net);
    cr_expect_eq(s, status, "%s: %s, expected %s (%s)", path, d5_status_name(s),
                 d5_status_name(status), d5_last_error());
    cr_expect_null(net);
    cr_expect(strstr(d5_last_error(), path), "message without the file: %s", d5_last_error());
    cr_expect(strstr(d5_last_error(), what), "'%s' not in: %s", what, d5_last_error());
    d5_network_free(net);
}

Test(onnx_bad, empty_missing_and_folder)
{
    char *dir = tmpdir_make();
    char path[512];
    snprintf(path, sizeof path, "%s/empty.onnx", dir);
    write_bytes(path, "", 0);
    expect_load(path, D5_ERR_FORMAT, "empty file (0 bytes), not an ONNX model");
    snprintf(path, sizeof path, "%s/missing.onnx", dir);
    expect_load(path, D5_ERR_IO, "No such file");
    expect_load(dir, D5_ERR_IO, "not a regular file");
    d5_network *net = NULL;
    cr_expect_eq(d5_onnx_load_buffer("", 0, NULL, "mem.onnx", &net), D5_ERR_FORMAT);
    cr_expect(strstr(d5_last_error(), "mem.onnx"), "%s", d5_last_error());
    cr_expect_eq(d5_onnx_load(NULL, &net), D5_ERR_INVALID);
    /* Over protobuf's 2 GiB: refused before reading (a sparse file). */
    snprintf(path, sizeof path, "%s/huge.onnx", dir);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(ftruncate(fileno(f), ((off_t)1 << 31) + 1), 0);
    fclose(f);
    expect_load(path, D5_ERR_UNSUPPORTED, "2147483649 bytes, more than the 2147483647 bytes");
    rmtree(dir);
    free(dir);
}

/* Every prefix of a real model either fails cleanly or, where it ends on a
 * field boundary, loads a smaller graph; half of it is not protobuf. */
Test(onnx_bad, truncated)
{
    const char *src = TESTDATA "/node/test_conv_with_strides_padding/model.onnx";
    if (!path_exists(src)) cr_skip_test("no libonnx-testdata");
    size_t n = 0;
    char *data = slurp(src, &n);
    cr_assert(data && n > 100);
    size_t failed = 0;
    for (size_t cut = 1; cut < n; cut++) {
        d5_network *net = NULL;
        d5_status s = d5_onnx_load_buffer(data, cut, NULL, "truncated.onnx", &net);
        if (s == D5_OK) {
            d5_network_free(net);
            continue;
        }
        failed++;
        cr_expect(s == D5_ERR_FORMAT || s == D5_ERR_INVALID || s == D5_ERR_UNSUPPORTED,
                  "cut %zu: %s (%s)", cut, d5_status_name(s), d5_last_error());
        cr_expect(strstr(d5_last_error(), "truncated.onnx"), "%s", d5_last_error());
    }
    cr_expect_gt(failed, n / 2);

    char *dir = tmpdir_make();
    char path[512];
    snprintf(path, sizeof path, "%s/half.onnx", dir);
    write_bytes(path, data, n / 2);
    expect_load(path, D5_ERR_FORMAT, "not an ONNX model (protobuf parse failed)");
    free(data);
    rmtree(dir);
    free(dir);
}

Test(onnx_bad, random_bytes)
{
    d5_rng rng;
    d5_rng_seed(&rng, 5);
    uint8_t buf[4096];
    for (int round = 0; round < 2000; round++) {
        size_t n = 1 + (size_t)d5_rng_below(&rng, sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)d5_rng_next(&rng);
        d5_network *net = NULL;
        d5_status s = d5_onnx_load_buffer(buf, n, NULL, "random.onnx", &net);
        cr_expect_neq(s, D5_OK, "round %d loaded", round);
        cr_expect(strstr(d5_last_error(), "random.onnx"), "%s", d5_last_error());
        d5_network_free(net);
    }
    char *dir = tmpdir_make();
    char path[512];
    snprintf(path, sizeof path, "%s/random.onnx", dir);
    const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x34};
    write_bytes(path, junk, sizeof junk);
    expect_load(path, D5_ERR_FORMAT, "not an ONNX model (protobuf parse failed)");
    rmtree(dir);
    free(dir);
}

/* Messages nested 100000 deep (graph -> node -> attribute -> graph ...) are
 * refused before protobuf-c would recurse through them. */
Test(onnx_bad, deep_nesting)
{
    const size_t levels = 100000;
    const uint8_t tags[3] = {0x0a /* GraphProto.node */, 0x2a /* NodeProto.attribute */,
                             0x32 /* AttributeProto.g */};
    size_t cap = levels * 8 + 16, pos = cap, len = 0;
    uint8_t *buf = malloc(cap);
    cr_assert(buf);
    for (size_t i = 0; i < levels; i++) {
        uint8_t varint[10];
        size_t vn = 0;
        for (size_t v = len;; v >>= 7) {
            varint[vn++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
            if (v < 0x80) break;
        }
        pos -= vn;
        memcpy(buf + pos, varint, vn);
        buf[--pos] = i + 1 == levels ? 0x3a /* ModelProto.graph */ : tags[(levels - 2 - i) % 3];
        len = cap - pos;
    }
    d5_network *net = NULL;
    cr_expect_eq(d5_onnx_load_buffer(buf + pos, len, NULL, "deep.onnx", &net), D5_ERR_FORMAT);
    cr_expect(strstr(d5_last_error(), "deep.onnx: messages nest more than"), "%s", d5_last_error());
    free(buf);
}

/* A STRINGS attribute becomes one STRING of the strings joined by commas. */
Test(onnx_bad, strings_attribute_joined)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(MODELS "strings_attr.onnx", &net), D5_OK, "%s", d5_last_error());
    d5_node_info info;
    d5_network_node_at(net, 0, &info);
    const d5_attr *a = d5_attrs_find(info.attrs, "names");
    cr_assert_not_null(a);
    cr_assert_eq(a->type, D5_ATTR_STRING);
    cr_assert_str_eq(a->s, "a,b");
    d5_network_free(net);
}

/* ONNX's LSTM node test omits output Y and gives Y_h: the omitted output
 * gets a name of its own, which no node reads. */
Test(onnx_bad, omitted_output_before_a_given_one)
{
    const char *path = "/usr/share/libonnx-testdata/data/node/test_lstm_defaults/model.onnx";
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(path, &net), D5_OK, "%s", d5_last_error());
    d5_node_info info;
    d5_network_node_at(net, 0, &info);
    cr_assert_str_eq(info.op_type, "LSTM");
    cr_assert_eq(info.noutputs, 2);
    cr_assert_str_eq(info.outputs[0], "__omitted:0:0");
    cr_assert_str_eq(info.outputs[1], "Y_h");
    d5_network_free(net);
}

Test(onnx_bad, wrong_types_and_duplicates)
{
    expect_load(MODELS "nested_sequence_input.onnx", D5_ERR_UNSUPPORTED,
                "graph input 's' has a type with sequence elements; d5 supports tensors, "
                "sequences of tensors and optionals of either");
    expect_load(MODELS "dup_init.onnx", D5_ERR_FORMAT, "initializer 'w' appears twice");
    expect_load(MODELS "no_graph.onnx", D5_ERR_FORMAT, "not an ONNX model (no graph)");
    /* A TensorProto is not a model. */
    expect_load(FIXTURES "/tensors/typed_float.pb", D5_ERR_FORMAT, "not an ONNX model");
}

Test(onnx_bad, external_data)
{
    expect_load(MODELS "external_escape.onnx", D5_ERR_FORMAT,
                "initializer 'w': external data location '../tensors/weights.bin' leaves the "
                "model's folder");
    /* The model without its weights file. */
    char *dir = tmpdir_make();
    char path[512];
    snprintf(path, sizeof path, "%s/external.onnx", dir);
    size_t n = 0;
    char *data = slurp(MODELS "external.onnx", &n);
    cr_assert(data);
    write_bytes(path, data, n);
    expect_load(path, D5_ERR_IO, "weights.bin");
    /* From memory, without a folder to look in. */
    d5_network *net = NULL;
    cr_expect_eq(d5_onnx_load_buffer(data, n, NULL, "mem.onnx", &net), D5_ERR_INVALID);
    cr_expect(strstr(d5_last_error(), "mem.onnx: initializer 'w'"), "%s", d5_last_error());
    free(data);
    rmtree(dir);
    free(dir);
}

/* Every allocation failure while loading is D5_ERR_NOMEM and leaks nothing. */
Test(onnx_bad, out_of_memory)
{
    int done = 0;
    for (long budget = 0; budget < 1000 && !done; budget++) {
        d5_network *net = NULL;
        failing_alloc_install(budget);
        d5_status s = d5_onnx_load(MODELS "attrs.onnx", &net);
        if (s == D5_OK) {
            d5_network_free(net);
            done = 1;
        } else {
            cr_expect_eq(s, D5_ERR_NOMEM, "budget %ld: %s", budget, d5_last_error());
            cr_expect_null(net);
        }
        cr_expect_eq(failing_alloc_live(), 0, "budget %ld: leaks", budget);
        failing_alloc_remove();
    }
    cr_expect(done);
}

/* A one-Relu model importing opset `version` of `domain`, written to path. */
static void save_with_opset(const char *path, const char *domain, int64_t version)
{
    save_relu_model(path, "opset", 2, (const int64_t[]){1, 4}, domain, version);
}

/* An opset newer than d5 knows is refused, naming the file, domain and version. */
Test(onnx_bad, opsets_newer_than_known)
{
    char *dir = tmpdir_make(), path[4200];
    snprintf(path, sizeof path, "%s/opset.onnx", dir);
    save_with_opset(path, "", D5_ONNX_NEWEST_OPSET);
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(path, &net), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_opset(net, ""), D5_ONNX_NEWEST_OPSET);
    d5_network_free(net);
    save_with_opset(path, "ai.onnx", D5_ONNX_NEWEST_OPSET + 1);
    expect_load(path, D5_ERR_UNSUPPORTED,
                "imports opset 29 of domain 'ai.onnx', newer than the newest d5 knows (28)");
    save_with_opset(path, "", 999);
    expect_load(path, D5_ERR_UNSUPPORTED, "opset 999 of domain 'ai.onnx'");
    save_with_opset(path, "ai.onnx.preview.training", 2);
    expect_load(path, D5_ERR_UNSUPPORTED, "opset 2 of domain 'ai.onnx.preview.training'");
    rmtree(dir);
    free(dir);
}
