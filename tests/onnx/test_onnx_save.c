/* Saving ONNX models: load -> save -> load gives the same network (nodes,
 * attributes, initializers bitwise) and saving it again the same bytes; the
 * files pass onnx.checker with full_check (strict shape inference), also with
 * the value_info that d5's shape inference adds; writes are atomic. */
#define _GNU_SOURCE
#include "onnx_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Load, save to a buffer, load it back, compare; save again, compare bytes.
 * Returns 1 when the model loaded; else 0 with the status and message of the
 * failed load in *status and why. */
static int round_trip(const char *path, d5_status *status, char *why_not, size_t size)
{
    d5_network *a = NULL, *b = NULL;
    *status = d5_onnx_load(path, &a);
    if (*status != D5_OK) {
        snprintf(why_not, size, "%s", d5_last_error());
        return 0;
    }
    void *buf1 = NULL, *buf2 = NULL;
    size_t n1 = 0, n2 = 0;
    cr_assert_eq(d5_onnx_save_buffer(a, &buf1, &n1), D5_OK, "%s: %s", path, d5_last_error());
    cr_assert_eq(d5_onnx_load_buffer(buf1, n1, NULL, "saved model", &b), D5_OK, "%s: %s", path,
                 d5_last_error());
    char why[256] = "";
    cr_expect_eq(net_diff(a, b, why, sizeof why), 0, "%s: %s", path, why);
    cr_assert_eq(d5_onnx_save_buffer(b, &buf2, &n2), D5_OK, "%s: %s", path, d5_last_error());
    cr_expect(n1 == n2 && memcmp(buf1, buf2, n1) == 0, "%s: saving twice gives other bytes", path);
    d5_free(buf1);
    d5_free(buf2);
    d5_network_free(a);
    d5_network_free(b);
    return 1;
}

/* A model that must load: the fixtures. */
static void round_trip_one(const char *path)
{
    d5_status s;
    char why[1024];
    cr_assert(round_trip(path, &s, why, sizeof why), "%s does not load: %s: %s", path,
              d5_status_name(s), why);
}

/* Every model of a folder. The ones that do not load are listed with their
 * reason; they must be the unsupported ones that the survey counts
 * (testdata_representable: the models with tensor types, attribute types or
 * graph forms that d5 does not represent), all D5_ERR_UNSUPPORTED, and no
 * more: a model that should load and does not fails the test. */
static void round_trip_folder(const char *folder)
{
    size_t n = 0, total = 0, failed = 0;
    size_t representable = testdata_representable(folder, &total);
    char **paths = testdata_models(folder, &n);
    if (n == 0) cr_skip_test("no libonnx-testdata");
    cr_assert_eq(n, total, "%s: %zu models, the survey counts %zu", folder, n, total);
    for (size_t i = 0; i < n; i++) {
        d5_status s;
        char why[1024];
        if (round_trip(paths[i], &s, why, sizeof why)) continue;
        failed++;
        fprintf(stderr, "onnx_save: %s: not loaded, so not saved: %s: %s\n", paths[i],
                d5_status_name(s), why);
        cr_expect_eq(s, D5_ERR_UNSUPPORTED, "%s: %s: %s", paths[i], d5_status_name(s), why);
    }
    paths_free(paths);
    fprintf(stderr, "onnx_save: %s: %zu of %zu models saved and loaded back, %zu not loaded\n",
            folder, n - failed, n, failed);
    cr_expect_eq(failed, total - representable,
                 "%s: %zu models did not load, %zu expected (the unsupported ones)", folder, failed,
                 total - representable);
}

Test(onnx_save, round_trip_node, .timeout = D5_TIMEOUT(600))
{
    round_trip_folder("node");
}

Test(onnx_save, round_trip_others, .timeout = D5_TIMEOUT(600))
{
    round_trip_folder("simple");
    round_trip_folder("pytorch-converted");
    round_trip_folder("pytorch-operator");
    round_trip_one(FIXTURES "/models/attrs.onnx");
    round_trip_one(FIXTURES "/models/external.onnx");
}

/* The fixture keeps its attribute types, dim_params and opsets through a file. */
Test(onnx_save, file_round_trip)
{
    char *dir = tmpdir_make();
    char path[512];
    snprintf(path, sizeof path, "%s/attrs.onnx", dir);
    d5_network *a = NULL, *b = NULL;
    cr_assert_eq(d5_onnx_load(FIXTURES "/models/attrs.onnx", &a), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_onnx_save(a, path), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_onnx_save(a, path), D5_OK, "%s", d5_last_error()); /* over itself */
    cr_assert_eq(d5_onnx_load(path, &b), D5_OK, "%s", d5_last_error());
    char why[256] = "";
    cr_expect_eq(net_diff(a, b, why, sizeof why), 0, "%s", why);
    cr_expect_eq(d5_network_opset(b, "test.d5"), 1);
    /* Nothing but the model in the folder: the temporary file was renamed. */
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));) entries += e->d_name[0] != '.';
    closedir(d);
    cr_expect_eq(entries, 1);
    cr_expect_eq(d5_onnx_save(a, "/nonexistent-d5-folder/m.onnx"), D5_ERR_IO);
    cr_expect(strstr(d5_last_error(), "/nonexistent-d5-folder/m.onnx"), "%s", d5_last_error());
    d5_network_free(a);
    d5_network_free(b);
    rmtree(dir);
    free(dir);
}

/* Saves `net` as dir/name and lists it, with the model it came from (or NULL). */
static void save_listed(const d5_network *net, const char *dir, const char *name,
                        const char *original, FILE *list)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    cr_assert_eq(d5_onnx_save(net, path), D5_OK, "%s: %s", name, d5_last_error());
    if (original)
        fprintf(list, "%s\t%s\n", path, original);
    else
        fprintf(list, "%s\n", path);
}

/* A network built in C with a symbolic batch dimension and inferred shapes. */
static d5_network *built_network(void)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_network_create("built", &net), D5_OK);
    d5_tensor_desc x;
    const int64_t xs[] = {-1, 4}, ws[] = {4, 2};
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 2, ws, &x), D5_OK);
    d5_tensor w;
    cr_assert_eq(d5_tensor_alloc(&x, &w), D5_OK);
    for (int i = 0; i < 8; i++) ((float *)w.data)[i] = (float)i - 3.5f;
    x.shape[0] = xs[0];
    x.shape[1] = xs[1];
    const char *params[] = {"batch", NULL};
    cr_assert_eq(d5_network_add_input(net, "x", &x, params), D5_OK);
    cr_assert_eq(d5_network_add_initializer_take(net, "w", &w), D5_OK);
    const char *in1[] = {"x", "w"}, *out1[] = {"h"}, *in2[] = {"h"}, *out2[] = {"y"};
    cr_assert_eq(d5_network_add_node(net, NULL, "MatMul", NULL, in1, 2, out1, 1, NULL, NULL),
                 D5_OK);
    cr_assert_eq(d5_network_add_node(net, "act", "Relu", "", in2, 1, out2, 1, NULL, NULL), D5_OK);
    cr_assert_eq(d5_network_add_output(net, "y", NULL), D5_OK);
    return net;
}

Test(onnx_save, onnx_checker, .timeout = D5_TIMEOUT(600))
{
    char *dir = tmpdir_make();
    char list_path[512];
    snprintf(list_path, sizeof list_path, "%s/list.txt", dir);
    FILE *list = fopen(list_path, "w");
    cr_assert(list);
    size_t inferred = 0, saved = 0;
    const char *folders[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};
    for (int f = 0; f < 4; f++) {
        size_t n = 0;
        char **paths = testdata_models(folders[f], &n);
        for (size_t i = 0; i < n; i++) {
            d5_network *net = NULL;
            if (d5_onnx_load(paths[i], &net) != D5_OK) continue;
            char name[300];
            const char *test = strstr(paths[i], "/test_");
            snprintf(name, sizeof name, "%s_%.*s", folders[f],
                     (int)(strlen(test + 1) - strlen("/model.onnx")), test + 1);
            save_listed(net, dir, name, paths[i], list);
            saved++;
            /* With d5's inferred descriptors written as value_info. */
            if (d5_network_infer_shapes(net) == D5_OK) {
                strcat(name, "_inferred");
                save_listed(net, dir, name, paths[i], list);
                inferred++;
            }
            d5_network_free(net);
        }
        paths_free(paths);
    }
    /* Its output's type is known once shapes are inferred (before, the file
     * lacks it, which the checker refuses). */
    d5_network *net = built_network();
    cr_assert_eq(d5_network_bind_dim(net, "batch", 8), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_infer_shapes(net), D5_OK, "%s", d5_last_error());
    save_listed(net, dir, "built_inferred", NULL, list);
    d5_network_free(net);
    fclose(list);
    cr_log_info("%zu models saved, %zu with inferred shapes", saved, inferred);

    int rc = python_check(list_path);
    if (rc == -2) cr_skip_test("no python3 with the onnx package");
    cr_expect_eq(rc, 0, "onnx.checker rejected exported models (listed above)");
    rmtree(dir);
    free(dir);
}

/* The built network's file says what it should (the checker's view is in
 * onnx_checker): d5 reads back the symbolic dimension and the output's shape. */
Test(onnx_save, built_network_dim_params)
{
    d5_network *net = built_network(), *back = NULL;
    void *buf = NULL;
    size_t n = 0;
    cr_assert_eq(d5_onnx_save_buffer(net, &buf, &n), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_onnx_load_buffer(buf, n, NULL, "built", &back), D5_OK, "%s", d5_last_error());
    int32_t v;
    d5_value_info info;
    cr_assert_eq(d5_network_find_value(back, "x", &v), D5_OK);
    d5_network_value_at(back, v, &info);
    cr_expect_str_eq(info.dim_params[0], "batch");
    cr_expect_eq(info.desc.shape[0], -1);
    cr_expect_eq(info.desc.shape[1], 4);
    char why[256] = "";
    cr_expect_eq(net_diff(net, back, why, sizeof why), 0, "%s", why);
    d5_free(buf);
    d5_network_free(back);

    /* With the batch bound and shapes inferred, the output's descriptor and
     * the intermediate value's are in the file. */
    cr_assert_eq(d5_network_bind_dim(net, "batch", 8), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_infer_shapes(net), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_onnx_save_buffer(net, &buf, &n), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_onnx_load_buffer(buf, n, NULL, "built", &back), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_network_find_value(back, "y", &v), D5_OK);
    d5_network_value_at(back, v, &info);
    cr_expect_eq(info.desc.dtype, D5_F32);
    cr_expect_eq(info.desc.ndim, 2);
    cr_expect_eq(info.desc.shape[0], 8);
    cr_expect_eq(info.desc.shape[1], 2);
    d5_free(buf);
    d5_network_free(net);
    d5_network_free(back);
}

/* Every allocation failure while saving is D5_ERR_NOMEM and leaks nothing. */
Test(onnx_save, out_of_memory)
{
    d5_network *net = NULL;
    cr_assert_eq(d5_onnx_load(FIXTURES "/models/attrs.onnx", &net), D5_OK);
    int done = 0;
    for (long budget = 0; budget < 500 && !done; budget++) {
        void *buf = NULL;
        size_t n = 0;
        failing_alloc_install(budget);
        d5_status s = d5_onnx_save_buffer(net, &buf, &n);
        if (s == D5_OK) {
            d5_free(buf);
            done = 1;
        } else {
            cr_expect_eq(s, D5_ERR_NOMEM, "budget %ld: %s", budget, d5_last_error());
        }
        cr_expect_eq(failing_alloc_live(), 0, "budget %ld: leaks", budget);
        failing_alloc_remove();
    }
    cr_expect(done);
    d5_network_free(net);
}
