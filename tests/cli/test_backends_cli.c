/* Backend options of d5 run, train, onnx-test and test-operator: a name that
 * is no backend, or one that cannot run here, is a usage error (exit 2) that
 * lists the available backends; results record the backends that ran. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(backends_cli, .timeout = D5_TIMEOUT(300));

static char *dir, *lenet;

/* LeNet-5 at batch 2 as an ONNX file in a fresh folder. */
static void setup(void)
{
    char *out, *err;
    dir = tmpdir_make();
    cr_assert_geq(asprintf(&lenet, "%s/lenet.onnx", dir), 0);
    int rc = RUN(&out, &err, "model", "lenet", "--batch", "2", "-o", lenet);
    cr_assert_eq(rc, 0, "%s", err);
    free(out);
    free(err);
}

static void teardown(void)
{
    rmtree(dir);
    free(dir);
    free(lenet);
}

static void expect_usage_error(int rc, const char *out, const char *err, const char *what)
{
    cr_assert_eq(rc, 2, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(err, what), "expected '%s' in: %s", what, err);
    cr_assert_null(strstr(out, "latency"), "it must not run: %s", out);
}

Test(backends_cli, run_refuses_unknown_backends, .init = setup, .fini = teardown)
{
    char *out, *err;
    int rc = RUN(&out, &err, "run", lenet, "--backend", "dnn", "--time", "0.02", "--no-overhead");
    expect_usage_error(rc, out, err, "--backend dnn: unknown backend 'dnn'");
    cr_assert(strstr(err, "available here: ref"), "%s", err);
    cr_assert_eq(count_lines(err), 1, "one line: %s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "run", lenet, "--backend", "blas,ref,blas", "--time", "0.02",
             "--no-overhead");
    expect_usage_error(rc, out, err, "appears twice");
    free(out);
    free(err);
}

/* Without a device cuda is unavailable: refused, never replaced; with one,
 * the network runs with its nodes on device memory. */
Test(backends_cli, run_refuses_cuda_without_a_device, .init = setup, .fini = teardown)
{
    char *out, *err;
    int available = d5_backend_available("cuda", NULL, 0);
    int rc =
        RUN(&out, &err, "run", lenet, "--backend", "cuda,ref", "--time", "0.02", "--no-overhead");
    if (available) {
        cr_assert_eq(rc, 0, "%s", err);
        cr_assert(strstr(out, "cuda"), "%s", out);
    } else {
        expect_usage_error(rc, out, err, "is unavailable here");
        cr_assert(strstr(err, "available here: ref"), "%s", err);
    }
    free(out);
    free(err);
}

/* The cuda backend is a plugin: `test-operator --list` and `machine` say why
 * it cannot run, here (its probe's words) and where the plugin is missing. */
Test(backends_cli, list_and_machine_say_why_cuda_cannot_run)
{
    char *out, *err, why[256];
    int available = d5_backend_available("cuda", why, sizeof why);
    if (strstr(why, "built without")) cr_skip_test("%s", why);
    int rc = RUN(&out, &err, "test-operator", "x", "--list");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    if (!available) cr_assert(strstr(out, why), "'%s' not in:\n%s", why, out);
    free(out);
    free(err);

    char *empty = tmpdir_make(), expect[512];
    cr_assert_eq(setenv("D5_PLUGIN_DIR", empty, 1), 0);
    snprintf(expect, sizeof expect, "plugin not built (no %s/libd5_cuda.so)", empty);
    rc = RUN(&out, &err, "test-operator", "x", "--list");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, expect), "'%s' not in:\n%s", expect, out);
    free(out);
    free(err);
    rc = RUN(&out, &err, "machine", "--no-measure");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    snprintf(expect, sizeof expect, "CUDA unavailable: plugin not built (no %s/libd5_cudart.so)",
             empty);
    cr_assert(strstr(out, expect), "'%s' not in:\n%s", expect, out);
    free(out);
    free(err);
    rmtree(empty);
    free(empty);
}

Test(backends_cli, run_refuses_node_backend_typos, .init = setup, .fini = teardown)
{
    char *out, *err;
    int rc = RUN(&out, &err, "run", lenet, "--node-backend", "nosuchnode=ref", "--time", "0.02",
                 "--no-overhead");
    expect_usage_error(rc, out, err, "--node-backend nosuchnode=ref: no node named 'nosuchnode'");
    cr_assert(strstr(err, "conv1, relu1"), "lists the nodes: %s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "run", lenet, "--node-backend", "conv1=dnn", "--time", "0.02",
             "--no-overhead");
    expect_usage_error(rc, out, err, "node 'conv1': unknown backend 'dnn'");
    cr_assert(strstr(err, "available here: ref"), "%s", err);
    free(out);
    free(err);
}

static const char *context(json_t *doc, const char *key)
{
    const char *v = json_string_value(json_object_get(json_object_get(doc, "context"), key));
    cr_assert_not_null(v, "context.%s", key);
    return v;
}

/* The JSON says what was asked and, per node, what ran. */
Test(backends_cli, run_json_records_the_backend_of_each_node, .init = setup, .fini = teardown)
{
    char *out, *err, *json;
    cr_assert_geq(asprintf(&json, "%s/run.json", dir), 0);
    int rc = RUN(&out, &err, "run", lenet, "--backend", "blas,ref", "--node-backend", "fc1=ref",
                 "--optimize", "none", "--time", "0.02", "--threads", "1", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "backends    blas 4 nodes, ref 7 nodes (requested blas,ref)"), "%s", out);
    json_t *doc = json_read(json);
    cr_assert_null(json_object_get(json_object_get(doc, "context"), "backend"));
    cr_assert_str_eq(context(doc, "backend_requested"), "blas,ref");
    cr_assert_str_eq(context(doc, "backends_used"), "blas=4,ref=7");
    const char *nodes = context(doc, "node_backends");
    cr_assert(strstr(nodes, "conv1=blas,") && strstr(nodes, "fc1=ref,") &&
                  strstr(nodes, "fc2=blas,") && strstr(nodes, "relu1=ref"),
              "%s", nodes);
    /* The per-node benchmarks name the backend that ran them. */
    json_t *b = json_object_get(doc, "benchmarks");
    int conv1 = 0, fc1 = 0;
    for (size_t i = 0; i < json_array_size(b); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(b, i), "name"));
        conv1 |= name && strncmp(name, "node/Conv/conv1/blas", 20) == 0;
        fc1 |= name && strncmp(name, "node/Gemm/fc1/ref", 17) == 0;
    }
    cr_assert(conv1 && fc1, "per-node benchmarks with their backends");
    json_decref(doc);
    free(out);
    free(err);
    free(json);
}

Test(backends_cli, train_refuses_bad_backends)
{
    char *out, *err;
    int rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--batch", "8", "--max-batches",
                 "1", "--backend", "cudaa");
    expect_usage_error(rc, out, err, "--backend cudaa: unknown backend 'cudaa'");
    cr_assert(strstr(err, "available here: ref"), "%s", err);
    cr_assert_null(strstr(out, "training "), "it must not train: %s", out);
    free(out);
    free(err);
    rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--batch", "8", "--max-batches", "1",
             "--compare-backend", "dnn");
    expect_usage_error(rc, out, err, "--compare-backend dnn: unknown backend 'dnn'");
    cr_assert_null(strstr(out, "training "), "it must not train: %s", out);
    free(out);
    free(err);
    rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--batch", "8", "--max-batches", "1",
             "--backend", "cuda");
    expect_usage_error(rc, out, err, "--backend cuda: ");
    free(out);
    free(err);
}

Test(backends_cli, train_json_counts_the_backends_that_ran)
{
    char *tmp = tmpdir_make(), *json, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/train.json", tmp), 0);
    int rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--batch", "8", "--max-batches",
                 "2", "--threads", "1", "--backend", "blas,ref", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "backends: blas "), "%s", out);
    json_t *doc = json_read(json);
    json_t *config = json_object_get(doc, "config");
    cr_assert_null(json_object_get(config, "backend"));
    cr_assert_str_eq(json_string_value(json_object_get(config, "backend_requested")), "blas,ref");
    json_t *used = json_object_get(config, "backends_used");
    cr_assert(json_is_object(used));
    cr_assert_gt(json_integer_value(json_object_get(used, "blas")), 0); /* Conv, Gemm */
    cr_assert_gt(json_integer_value(json_object_get(used, "ref")), 0);  /* Relu, pooling, loss */
    cr_assert_eq(json_object_size(used), 2);
    json_decref(doc);
    free(out);
    free(err);
    free(json);
    rmtree(tmp);
    free(tmp);
}

Test(backends_cli, onnx_test_refuses_bad_backends, .init = setup, .fini = teardown)
{
    char *out, *err;
    int rc = RUN(&out, &err, "onnx-test", dir, "--backend", "dnn");
    expect_usage_error(rc, out, err, "--backend dnn: unknown backend 'dnn'");
    cr_assert_null(strstr(out, "skipped"), "%s", out);
    free(out);
    free(err);
}

Test(backends_cli, test_operator_refuses_bad_backends_and_lists_the_registry)
{
    char *out, *err;
    int rc = RUN(&out, &err, "test-operator", "Gemm", "--backend", "ref,dnn", "--no-peak");
    expect_usage_error(rc, out, err, "--backend dnn: unknown backend 'dnn'");
    cr_assert(strstr(err, "available here: ref"), "%s", err);
    free(out);
    free(err);
    cr_assert_eq(RUN(&out, &err, "test-operator", "x", "--list"), 0, "%s", err);
    cr_assert(strstr(out, "backend  operators  available  dtypes"), "%s", out);
    for (size_t i = 0; i < d5_backend_count(); i++) {
        d5_backend_info b;
        char row[128];
        cr_assert_eq(d5_backend_at(i, &b), D5_OK);
        snprintf(row, sizeof row, "\n%-8s %9d  %-9s  %s\n", b.name, (int)b.operators,
                 b.available ? "yes" : "no", b.dtypes);
        cr_assert(strstr(out, row) || strncmp(out, row + 1, strlen(row) - 1) == 0,
                  "row '%s' in: %s", row + 1, out);
        if (!b.available) cr_assert(strstr(out, b.reason), "%s", out);
    }
    free(out);
    free(err);
}
