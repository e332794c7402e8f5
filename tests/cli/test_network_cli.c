/* d5 run, d5 summary and d5 onnx-test on models from Debian's ONNX test data. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})
#define DATA               "/usr/share/libonnx-testdata/data"
#define CONV2D             DATA "/pytorch-converted/test_Conv2d"

static void need_data(void)
{
    struct stat st;
    if (stat(CONV2D "/model.onnx", &st) != 0) cr_skip_test("libonnx-testdata is not installed");
}

TestSuite(network_cli, .timeout = D5_TIMEOUT(300));

/* d5 run with the test's own input writes the test's expected output. */
Test(network_cli, run_with_inputs_saves_the_expected_outputs)
{
    need_data();
    char *dir = tmpdir_make(), *save, *json, *trace, *out, *err;
    cr_assert_geq(asprintf(&save, "%s/outputs", dir), 0);
    cr_assert_geq(asprintf(&json, "%s/run.json", dir), 0);
    cr_assert_geq(asprintf(&trace, "%s/trace.json", dir), 0);
    int rc = RUN(&out, &err, "run", CONV2D "/model.onnx", "--inputs",
                 CONV2D "/test_data_set_0/input_0.pb", "--save-outputs", save, "--time", "0.05",
                 "--json", json, "--trace", trace, "--threads", "1");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    /* "Conv " is a row of the per-operator table. */
    EXPECT_HAS(out, "latency", "throughput", "FrameworkOverhead", "Conv ", "activations");

    char *path;
    d5_tensor got, want;
    cr_assert_geq(asprintf(&path, "%s/output_0.pb", save), 0);
    cr_assert_eq(d5_onnx_tensor_read(path, &got, NULL), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_onnx_tensor_read(CONV2D "/test_data_set_0/output_0.pb", &want, NULL), D5_OK);
    int64_t n = d5_tensor_desc_numel(&want.desc);
    cr_assert_eq(d5_tensor_desc_numel(&got.desc), n);
    for (int64_t i = 0; i < n; i++) {
        float g = ((float *)got.data)[i], w = ((float *)want.data)[i];
        cr_assert(fabsf(g - w) <= 1e-5f + 1e-3f * fabsf(w), "element %lld: %g vs %g", (long long)i,
                  g, w);
    }
    d5_tensor_free(&got);
    d5_tensor_free(&want);

    json_t *doc = json_read(json);
    json_t *b = json_object_get(doc, "benchmarks");
    cr_assert_geq(json_array_size(b), 3); /* the run, the graph, one node at least */
    const char *first = json_string_value(json_object_get(json_array_get(b, 0), "name"));
    cr_assert_not_null(first);
    cr_assert(strstr(first, "run/inference"), "%s", first);
    json_decref(doc);
    doc = json_read(trace); /* the trace is JSON */
    json_decref(doc);
    free(path);
    free(save);
    free(json);
    free(trace);
    run_done(out, err, dir);
}

Test(network_cli, run_backprop_and_backends)
{
    need_data();
    char *out, *err;
    int rc = RUN(&out, &err, "run", CONV2D "/model.onnx", "--backprop", "--backend", "ref",
                 "--time", "0.05", "--no-overhead");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "latency"), "%s", out);
    free(out);
    free(err);
    rc = RUN(&out, &err, "run", CONV2D "/model.onnx", "--backend", "auto", "--time", "0.05",
             "--no-overhead", "--batch", "3");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "per batch of 3"), "%s", out);
    free(out);
    free(err);
}

Test(network_cli, run_errors_name_what_is_wrong)
{
    need_data();
    char *out, *err;
    int rc = RUN(&out, &err, "run", "/nonexistent/model.onnx");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "/nonexistent/model.onnx"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "run", CONV2D "/model.onnx", "--inputs",
             CONV2D "/test_data_set_0/output_0.pb", "--time", "0.05");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "output_0.pb holds"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "run", CONV2D "/model.onnx", "--batch", "0");
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    free(out);
    free(err);
}

Test(network_cli, summary_counts_parameters_and_macs)
{
    need_data();
    char *out, *err;
    int rc = RUN(&out, &err, "summary", CONV2D "/model.onnx");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    /* One Conv with weight [4,3,3,2] and bias [4]: 76 parameters. */
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(CONV2D "/model.onnx", &net), D5_OK);
    char want[64];
    snprintf(want, sizeof want, "%lld", (long long)d5_network_param_elements(net));
    cr_assert_str_eq(want, "76");
    EXPECT_HAS(out, "total parameters:", "total parameters:  76\n", "Conv", "total mult-adds:");
    d5_network_free(net);
    free(out);
    free(err);
}

Test(network_cli, onnx_test_counts_and_fails)
{
    need_data();
    char *out, *err;
    int rc = RUN(&out, &err, "onnx-test", DATA "/node/test_add", DATA "/node/test_relu");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "pass  test_add\n"), "%s", out);
    cr_assert(strstr(out, "2 passed, 0 failed, 0 skipped"), "%s", out);
    free(out);
    free(err);
    /* A test whose expected output is not what the model computes fails. */
    char *dir = tmpdir_make(), *cmd;
    cr_assert_geq(asprintf(&cmd,
                           "cp -r %s/node/test_add %s/ && cp %s/node/test_sub/test_data_set_0/"
                           "output_0.pb %s/test_add/test_data_set_0/output_0.pb",
                           DATA, dir, DATA, dir),
                  0);
    cr_assert_eq(system(cmd), 0);
    rc = RUN(&out, &err, "onnx-test", dir);
    cr_assert_eq(rc, 1, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "FAIL  test_add: output 'sum'"), "%s", out);
    cr_assert(strstr(out, "0 passed, 1 failed, 0 skipped"), "%s", out);
    free(out);
    free(err);
    rc = RUN(&out, &err, "onnx-test", "/nonexistent");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    free(cmd);
    run_done(out, err, dir);
}
