/* Loading ONNX models: every model of libonnx-testdata that d5 can represent
 * loads (the counts come from `make_fixtures.py --survey`, which classifies
 * the models with the onnx package); the others fail with
 * D5_ERR_UNSUPPORTED; the test data tensors of test_add add up; attributes,
 * dim_params, generated names and IR 3 initializer inputs come through. */
#define _GNU_SOURCE
#include "onnx_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loads every model of a folder; failures must be D5_ERR_UNSUPPORTED naming
 * the file. Checks the counts of the survey and returns the number loaded. */
static size_t load_folder(const char *folder)
{
    size_t n = 0, ok = 0, expect_total = 0;
    size_t expect_ok = testdata_representable(folder, &expect_total);
    char **paths = testdata_models(folder, &n);
    if (n == 0) cr_skip_test("no libonnx-testdata at %s", TESTDATA);
    cr_expect_eq(n, expect_total, "%s: %zu models", folder, n);
    for (size_t i = 0; i < n; i++) {
        d5_network *net = NULL;
        d5_status s = d5_onnx_load(paths[i], &net);
        if (s == D5_OK) {
            ok++;
            cr_expect_gt(d5_network_node_count(net), 0, "%s", paths[i]);
            cr_expect_gt(d5_network_output_count(net), 0, "%s", paths[i]);
            d5_network_free(net);
            continue;
        }
        cr_expect_eq(s, D5_ERR_UNSUPPORTED, "%s: %s: %s", paths[i], d5_status_name(s),
                     d5_last_error());
        cr_expect(strstr(d5_last_error(), paths[i]), "message without the file: %s",
                  d5_last_error());
        cr_expect(strstr(d5_last_error(), "d5 supports") ||
                      strstr(d5_last_error(), "which d5 does not support"),
                  "%s", d5_last_error());
    }
    paths_free(paths);
    cr_expect_eq(ok, expect_ok, "%zu of the %s models loaded, %zu expected", ok, folder, expect_ok);
    return ok;
}

Test(onnx_load, testdata_node, .timeout = D5_TIMEOUT(600))
{
    cr_expect_eq(load_folder("node"), 932u);
}

Test(onnx_load, testdata_simple)
{
    cr_expect_eq(load_folder("simple"), 23u);
}

Test(onnx_load, testdata_pytorch, .timeout = D5_TIMEOUT(600))
{
    cr_expect_eq(load_folder("pytorch-converted"), 82u);
    cr_expect_eq(load_folder("pytorch-operator"), 35u);
}

/* If's branches and a sequence input: the graphs become the node's
 * subgraphs, the types stay. */
Test(onnx_load, graph_attributes_become_subgraphs)
{
    const char *path = TESTDATA "/node/test_if/model.onnx";
    if (!path_exists(path)) cr_skip_test("no libonnx-testdata");
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(path, &net), D5_OK, "%s", d5_last_error());
    d5_node_info info;
    d5_network_node_at(net, 0, &info);
    cr_expect_str_eq(info.op_type, "If");
    cr_expect_eq(info.ngraphs, 2);
    cr_expect_eq(info.attrs->count, 0, "graph attributes are not attributes");
    const d5_network *then_g = d5_network_node_graph(net, 0, "then_branch");
    cr_assert_not_null(then_g);
    cr_expect_eq(d5_network_output_count(then_g), 1);
    cr_expect_str_eq(d5_network_output_name(then_g, 0), "then_out");
    cr_expect_eq(d5_network_opset(then_g, ""), d5_network_opset(net, ""));
    cr_expect(d5_network_has_control_flow(net));
    d5_network_free(net);

    path = FIXTURES "/models/sequence_input.onnx";
    cr_assert_eq(d5_onnx_load(path, &net), D5_OK, "%s", d5_last_error());
    int32_t v;
    d5_value_info vi;
    cr_assert_eq(d5_network_find_value(net, "s", &v), D5_OK);
    d5_network_value_at(net, v, &vi);
    cr_expect_eq(vi.type, D5_TYPE_SEQUENCE);
    cr_expect_eq(vi.desc.dtype, D5_F32);
    d5_network_free(net);
}

/* Reads test_data_set_0 of test_add and checks output = input_0 + input_1. */
Test(onnx_load, test_add_data)
{
    const char *dir = TESTDATA "/node/test_add";
    if (!path_exists(dir)) cr_skip_test("no libonnx-testdata");
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(TESTDATA "/node/test_add/model.onnx", &net), D5_OK, "%s",
                 d5_last_error());
    cr_assert_eq(d5_network_input_count(net), 2);
    cr_assert_eq(d5_network_output_count(net), 1);
    d5_tensor in[2], out;
    char *name[3];
    cr_assert_eq(
        d5_onnx_tensor_read(TESTDATA "/node/test_add/test_data_set_0/input_0.pb", &in[0], &name[0]),
        D5_OK, "%s", d5_last_error());
    cr_assert_eq(
        d5_onnx_tensor_read(TESTDATA "/node/test_add/test_data_set_0/input_1.pb", &in[1], &name[1]),
        D5_OK);
    cr_assert_eq(
        d5_onnx_tensor_read(TESTDATA "/node/test_add/test_data_set_0/output_0.pb", &out, &name[2]),
        D5_OK);
    /* The tensors are the graph's inputs and output, with its descriptors. */
    for (int i = 0; i < 2; i++) {
        cr_expect_str_eq(name[i], d5_network_input_name(net, i));
        int32_t v;
        d5_value_info info;
        cr_assert_eq(d5_network_find_value(net, name[i], &v), D5_OK);
        d5_network_value_at(net, v, &info);
        cr_expect_eq(info.desc.dtype, in[i].desc.dtype);
        cr_expect_eq(info.desc.ndim, in[i].desc.ndim);
        for (int32_t d = 0; d < info.desc.ndim; d++)
            cr_expect_eq(info.desc.shape[d], in[i].desc.shape[d]);
    }
    cr_expect_str_eq(name[2], d5_network_output_name(net, 0));
    cr_assert_eq(out.desc.dtype, D5_F32);
    cr_assert_eq(d5_tensor_desc_numel(&out.desc), 60);
    cr_assert_eq(d5_tensor_desc_numel(&in[0].desc), 60);
    const float *a = in[0].data, *b = in[1].data, *c = out.data;
    for (int i = 0; i < 60; i++) cr_expect_eq(c[i], a[i] + b[i], "element %d", i);
    for (int i = 0; i < 3; i++) d5_free(name[i]);
    d5_tensor_free(&in[0]);
    d5_tensor_free(&in[1]);
    d5_tensor_free(&out);
    d5_network_free(net);
}

/* Reads one test data tensor of a loaded model and compares it with the graph
 * input or output it belongs to (input_N.pb, output_N.pb). Returns 1 when read. */
static int check_test_tensor(const d5_network *net, const char *path)
{
    const char *base = strrchr(path, '/') + 1;
    int is_input = strncmp(base, "input_", 6) == 0;
    int index = atoi(base + (is_input ? 6 : 7));
    int count = is_input ? d5_network_input_count(net) : d5_network_output_count(net);
    const char *vname = NULL;
    if (index < count)
        vname = is_input ? d5_network_input_name(net, index) : d5_network_output_name(net, index);
    int32_t v;
    d5_value_info info;
    memset(&info, 0, sizeof info);
    if (vname && d5_network_find_value(net, vname, &v) == D5_OK) d5_network_value_at(net, v, &info);
    /* Sequences and optionals as their SequenceProto and OptionalProto. */
    d5_value val;
    d5_status s = d5_onnx_value_read(path, info.type, &val, NULL);
    cr_expect_eq(s, D5_OK, "%s", d5_last_error());
    if (s != D5_OK) return 0;
    for (int32_t k = 0; k < val.count; k++) {
        d5_tensor *t = &val.items[k];
        /* ONNX 1.12's test data stores bfloat16 values as UINT16 tensors. */
        if (info.desc.dtype == D5_BF16 && t->desc.dtype == D5_U16) t->desc.dtype = D5_BF16;
        if (info.desc.dtype != D5_DTYPE_INVALID)
            cr_expect_eq(info.desc.dtype, t->desc.dtype, "%s", path);
        if (info.known && info.desc.ndim == t->desc.ndim)
            for (int32_t d = 0; d < t->desc.ndim; d++)
                cr_expect_eq(info.desc.shape[d], t->desc.shape[d], "%s", path);
    }
    d5_value_free(&val);
    return 1;
}

/* Every test data tensor of a model that loads is read, with the dtype of the
 * graph input or output it feeds and, where the graph says so, its shape. */
Test(onnx_load, testdata_tensors, .timeout = D5_TIMEOUT(600))
{
    size_t n = 0, read = 0;
    char **paths = testdata_models("node", &n);
    if (n == 0) cr_skip_test("no libonnx-testdata");
    for (size_t i = 0; i < n; i++) {
        d5_network *net = NULL;
        if (d5_onnx_load(paths[i], &net) != D5_OK) continue;
        char pattern[600];
        snprintf(pattern, sizeof pattern, "%.*s/test_data_set_*/*.pb",
                 (int)(strlen(paths[i]) - strlen("/model.onnx")), paths[i]);
        glob_t g;
        if (glob(pattern, 0, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc; k++)
                read += (size_t)check_test_tensor(net, g.gl_pathv[k]);
            globfree(&g);
        }
        d5_network_free(net);
    }
    paths_free(paths);
    cr_log_info("%zu test data tensors read", read);
    cr_expect_gt(read, 1500u);
}

/* IR 3 lists initializers among the graph inputs: they are not inputs in d5. */
Test(onnx_load, ir3_initializer_inputs)
{
    const char *path = TESTDATA "/pytorch-converted/test_Conv2d/model.onnx";
    if (!path_exists(path)) cr_skip_test("no libonnx-testdata");
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(path, &net), D5_OK, "%s", d5_last_error());
    cr_expect_eq(d5_network_input_count(net), 1); /* '0'; '1' and '2' are the weights */
    cr_expect_str_eq(d5_network_input_name(net, 0), "0");
    int32_t v;
    d5_value_info info;
    cr_assert_eq(d5_network_find_value(net, "1", &v), D5_OK);
    d5_network_value_at(net, v, &info);
    cr_expect_eq(info.kind, D5_VALUE_INITIALIZER);
    cr_expect_not_null(info.data);
    cr_expect_eq(d5_network_opset(net, ""), 6);
    d5_network_free(net);
}

static const d5_attr *find_attr(const d5_node_info *n, const char *name)
{
    const d5_attr *a = d5_attrs_find(n->attrs, name);
    cr_assert_not_null(a, "attribute %s", name);
    return a;
}

/* tests/onnx/data/models/attrs.onnx: see make_fixtures.py. */
Test(onnx_load, attributes_and_names)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(FIXTURES "/models/attrs.onnx", &net), D5_OK, "%s", d5_last_error());
    cr_expect_str_eq(d5_network_name(net), "attrs");
    cr_expect_eq(d5_network_opset(net, ""), 13);
    cr_expect_eq(d5_network_opset(net, "test.d5"), 1);
    cr_assert_eq(d5_network_node_count(net), 3);

    d5_node_info n;
    d5_network_node_at(net, 0, &n);
    cr_expect_str_eq(n.name, "all");
    cr_expect_str_eq(n.op_type, "AllAttrs");
    cr_expect_str_eq(n.domain, "test.d5");
    cr_expect_eq(n.attrs->count, 7);
    const d5_attr *a = find_attr(&n, "i");
    cr_expect_eq(a->type, D5_ATTR_INT);
    cr_expect_eq(a->i, -7);
    a = find_attr(&n, "f");
    cr_expect_eq(a->type, D5_ATTR_FLOAT);
    cr_expect_eq(a->f, 0.25);
    a = find_attr(&n, "s");
    cr_expect_eq(a->type, D5_ATTR_STRING);
    cr_expect_str_eq(a->s, "text");
    a = find_attr(&n, "ints");
    cr_expect_eq(a->type, D5_ATTR_INTS);
    cr_assert_eq(a->count, 3);
    cr_expect(a->ints[0] == 1 && a->ints[1] == -2 && a->ints[2] == 3);
    a = find_attr(&n, "floats");
    cr_expect_eq(a->type, D5_ATTR_FLOATS);
    cr_assert_eq(a->count, 2);
    cr_expect(a->floats[0] == 0.5 && a->floats[1] == -1.5);
    a = find_attr(&n, "t");
    cr_expect_eq(a->type, D5_ATTR_TENSOR);
    cr_assert_eq(a->tensor->desc.dtype, D5_I64);
    cr_assert_eq(d5_tensor_desc_numel(&a->tensor->desc), 2);
    cr_expect(((const int64_t *)a->tensor->data)[0] == 1 &&
              ((const int64_t *)a->tensor->data)[1] == 2);
    a = find_attr(&n, "empty_ints");
    cr_expect_eq(a->type, D5_ATTR_INTS);
    cr_expect_eq(a->count, 0);

    /* The unnamed Relu is named by the network. */
    d5_network_node_at(net, 1, &n);
    cr_expect_str_eq(n.op_type, "Relu");
    cr_expect_str_neq(n.name, "");

    /* x: float32[N,3] with N symbolic. */
    int32_t v;
    d5_value_info info;
    cr_assert_eq(d5_network_find_value(net, "x", &v), D5_OK);
    d5_network_value_at(net, v, &info);
    cr_expect_eq(info.desc.dtype, D5_F32);
    cr_assert_eq(info.desc.ndim, 2);
    cr_expect_eq(info.desc.shape[0], -1);
    cr_expect_str_eq(info.dim_params[0], "N");
    cr_expect_eq(info.desc.shape[1], 3);
    cr_expect_null(info.dim_params[1]);
    /* w: the initializer 0..5. */
    cr_assert_eq(d5_network_find_value(net, "w", &v), D5_OK);
    d5_network_value_at(net, v, &info);
    cr_expect_eq(info.kind, D5_VALUE_INITIALIZER);
    for (int i = 0; i < 6; i++) cr_expect_eq(((const float *)info.data)[i], (float)i);
    /* out: float32[-1,-1] (N, then an unknown dimension). */
    cr_assert_eq(d5_network_find_value(net, "out", &v), D5_OK);
    d5_network_value_at(net, v, &info);
    cr_expect_eq(info.is_output, 1);
    cr_expect_eq(info.desc.dtype, D5_F32);
    cr_expect_eq(info.desc.ndim, 2);
    d5_network_free(net);
}

Test(onnx_load, external_initializer)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(FIXTURES "/models/external.onnx", &net), D5_OK, "%s",
                 d5_last_error());
    int32_t v;
    d5_value_info info;
    cr_assert_eq(d5_network_find_value(net, "w", &v), D5_OK);
    d5_network_value_at(net, v, &info);
    const float want[] = {1, -2, 0.5f, 8};
    cr_expect_eq(memcmp(info.data, want, sizeof want), 0);
    d5_network_free(net);
}
