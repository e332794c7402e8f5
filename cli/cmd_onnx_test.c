/* d5 onnx-test: runs ONNX backend conformance test folders. */
#define _POSIX_C_SOURCE 200809L
#include "output_options.h"
#include "netload.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct list {
    char **items;
    size_t n, cap;
} list;

static int push(list *l, const char *s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        char **p = realloc(l->items, cap * sizeof *p);
        if (!p) return 0;
        l->items = p;
        l->cap = cap;
    }
    return (l->items[l->n++] = strdup(s)) != NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_model(const char *dir)
{
    char path[4096];
    struct stat st;
    int n = snprintf(path, sizeof path, "%s/model.onnx", dir);
    return n > 0 && (size_t)n < sizeof path && stat(path, &st) == 0;
}

/* A test folder, or a folder of test folders (sorted). */
static d5_status expand(const char *dir, list *out)
{
    if (has_model(dir)) return push(out, dir) ? D5_OK : D5_ERR_NOMEM;
    DIR *d = opendir(dir);
    if (!d)
        return d5_error(D5_ERR_IO, "%s: %s", dir,
                        errno == ENOTDIR ? "not a test folder (no model.onnx) nor a folder of them"
                                         : strerror(errno));
    list found = {0};
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof path) continue;
        if (has_model(path) && !push(&found, path)) break;
    }
    closedir(d);
    if (found.n == 0) {
        free(found.items);
        return d5_error(D5_ERR_IO, "%s: no test folder (with a model.onnx) inside", dir);
    }
    qsort(found.items, found.n, sizeof *found.items, by_name);
    d5_status s = D5_OK;
    for (size_t i = 0; i < found.n; i++) {
        if (s == D5_OK && !push(out, found.items[i])) s = D5_ERR_NOMEM;
        free(found.items[i]);
    }
    free(found.items);
    return s;
}

static const char *base(const char *path)
{
    const char *b = strrchr(path, '/');
    return b && b[1] ? b + 1 : path;
}

int cmd_onnx_test(int argc, char **argv)
{
    cli_outputs outs = {0};
    const char *backend = NULL, *filter = NULL, **dirs = NULL;
    const char *optimize = NULL;
    int ndirs = 0, quiet = 0, threads = 0;
    double rtol = 1e-3, atol = 1e-7;
    char backend_help[160];
    snprintf(backend_help, sizeof backend_help,
             "executor backends in order of preference (default %s; ref alone checks the "
             "reference operators)",
             d5_backend_default_list());
    const cli_opt opts[] = {
        {"backend", CLI_STRING, &backend, "LIST", backend_help, 0, 0},
        {"filter", CLI_STRING, &filter, "TEXT", "run only tests whose name contains TEXT", 0, 0},
        {"rtol", CLI_DOUBLE, &rtol, "X", "relative tolerance (default 1e-3, ONNX's)", 0, 1},
        {"atol", CLI_DOUBLE, &atol, "X", "absolute tolerance (default 1e-7, ONNX's)", 0, 1},
        CLI_OUTPUT_JSON_AS(&outs, "write every outcome as JSON to FILE"),
        {"quiet", CLI_FLAG, &quiet, NULL, "print failures and the summary only", 0, 0},
        {"threads", CLI_INT, &threads, "N", CLI_THREADS_HELP, 0, 4096},
        {"optimize", CLI_STRING, &optimize, "none|basic|all",
         "graph optimisation passes before compiling each model (default all)", 0, 0},
    };
    const cli_spec spec = {
        CLI_SPEC(
            "onnx-test",
            "DIR... [--backend LIST] [--filter TEXT] [--rtol X] [--atol X] [--json FILE] "
            "[--quiet]\n"
            "       [--threads N] [--optimize LEVEL]",
            "Runs ONNX backend conformance tests: each DIR is a test folder (model.onnx and\n"
            "test_data_set_N/ with input_K.pb and output_K.pb) or a folder of them, such as\n"
            "/usr/share/libonnx-testdata/data/node. One line per test: pass, FAIL with the\n"
            "worst element, or skip with the operator or feature d5 does not support. Then one\n"
            "line per data type ('float16: N passed, N failed, N skipped'; a test counts under\n"
            "every type of its graph's inputs and outputs), and last 'N passed, N failed, N\n"
            "skipped'. Exit 1 if any test failed.",
            opts),
        .positional = "DIR", .pos_list = &dirs, .pos_count = &ndirs};
    int rc = cli_parse(&spec, argc, argv);
    if (rc < 0) rc = cli_check_backends("onnx-test", "backend", backend, 1);
    d5_optimize_level level = D5_OPTIMIZE_ALL;
    if (rc < 0) rc = netload_optimize_level("onnx-test", optimize, 0, &level);
    if (rc < 0 && !cli_outputs_check("onnx-test", &outs)) rc = D5_EXIT_INPUT;
    if (rc < 0) {
        /* Conformance measures nothing: the count is set without the echo. */
        d5_status ts = d5_threads_set(threads);
        if (ts != D5_OK) rc = cli_fail("onnx-test", ts);
    }
    if (rc >= 0) {
        free(dirs);
        return rc;
    }
    if (!quiet) {
        cli_echo(stdout, &spec);
        for (int i = 0; i < ndirs; i++) printf("#   %-14s = %s\n", "DIR", dirs[i]);
    }
    list tests = {0};
    d5_status s = D5_OK;
    for (int i = 0; i < ndirs && s == D5_OK; i++) s = expand(dirs[i], &tests);
    free(dirs);
    json_t *root = json_object(), *arr = json_array();
    json_object_set_new(root, "tests", arr);
    int passed = 0, failed = 0, skipped = 0;
    /* Per data type: a test counts under every type of its graph's inputs and outputs. */
    int by_dtype[D5_DTYPE_COUNT][3];
    memset(by_dtype, 0, sizeof by_dtype);
    d5_onnx_test_params p = d5_onnx_test_default_params();
    p.backend = backend;
    p.rtol = rtol;
    p.atol = atol;
    p.optimize = level;
    int tty = isatty(2);
    for (size_t i = 0; i < tests.n && s == D5_OK; i++) {
        const char *name = base(tests.items[i]);
        if (filter && !strstr(name, filter)) continue;
        if (tty) fprintf(stderr, "\r[%zu/%zu] %-60.60s\r", i + 1, tests.n, name);
        d5_onnx_test_result r;
        s = d5_onnx_test_run(tests.items[i], &p, &r);
        if (s != D5_OK) break;
        if (tty) fprintf(stderr, "\r%-80s\r", "");
        const char *word = r.outcome == D5_ONNX_TEST_PASS   ? "pass"
                           : r.outcome == D5_ONNX_TEST_FAIL ? "FAIL"
                                                            : "skip";
        passed += r.outcome == D5_ONNX_TEST_PASS;
        failed += r.outcome == D5_ONNX_TEST_FAIL;
        skipped += r.outcome == D5_ONNX_TEST_SKIP;
        if (!quiet || r.outcome == D5_ONNX_TEST_FAIL) {
            if (r.outcome == D5_ONNX_TEST_PASS)
                printf("pass  %s\n", name);
            else if (strlen(r.detail) > 200) /* the whole text is in --json */
                printf("%s  %s: %.200s...\n", word, name, r.detail);
            else
                printf("%s  %s: %s\n", word, name, r.detail);
        }
        json_t *types = json_array();
        for (int d = 1; d < D5_DTYPE_COUNT; d++)
            if (r.dtypes & (1u << d)) {
                by_dtype[d][r.outcome]++;
                json_array_append_new(types, json_string(d5_dtype_name((d5_dtype)d)));
            }
        json_array_append_new(arr,
                              json_pack("{s:s, s:s, s:s, s:s, s:i, s:f, s:f, s:o}", "name", name,
                                        "path", tests.items[i], "outcome", word, "detail",
                                        r.outcome == D5_ONNX_TEST_PASS ? "" : r.detail, "datasets",
                                        r.datasets, "max_abs_err", r.max_abs_err, "max_rel_err",
                                        r.max_rel_err, "dtypes", types));
    }
    for (size_t i = 0; i < tests.n; i++) free(tests.items[i]);
    free(tests.items);
    if (s != D5_OK) {
        json_decref(root);
        return cli_fail("onnx-test", s);
    }
    json_t *per = json_object();
    for (int d = 1; d < D5_DTYPE_COUNT; d++) {
        const int *c = by_dtype[d];
        if (c[0] + c[1] + c[2] == 0) continue;
        const char *dname = d5_dtype_name((d5_dtype)d);
        printf("%s: %d passed, %d failed, %d skipped\n", dname, c[D5_ONNX_TEST_PASS],
               c[D5_ONNX_TEST_FAIL], c[D5_ONNX_TEST_SKIP]);
        json_object_set_new(per, dname,
                            json_pack("{s:i, s:i, s:i}", "passed", c[D5_ONNX_TEST_PASS], "failed",
                                      c[D5_ONNX_TEST_FAIL], "skipped", c[D5_ONNX_TEST_SKIP]));
    }
    json_object_set_new(root, "by_dtype", per);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    json_object_set_new(root, "passed", json_integer(passed));
    json_object_set_new(root, "failed", json_integer(failed));
    json_object_set_new(root, "skipped", json_integer(skipped));
    json_object_set_new(root, "backend_requested",
                        json_string(backend ? backend : d5_backend_default_list()));
    if (outs.json && (s = cli_json_write(&spec, NULL, root, outs.json)) != D5_OK)
        return cli_fail("onnx-test", s);
    if (!outs.json) json_decref(root);
    return failed ? D5_EXIT_CHECK : D5_EXIT_OK;
}
