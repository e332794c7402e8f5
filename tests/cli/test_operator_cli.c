#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

static char *cache;
static void setup(void)
{
    cache = tmpdir_make();
    setenv("XDG_CACHE_HOME", cache, 1);
}
static void teardown(void)
{
    rmtree(cache);
    free(cache);
}
TestSuite(operator_cli, .init = setup, .fini = teardown, .timeout = D5_TIMEOUT(300));

Test(operator_cli, gemm_on_every_backend_validated_with_json)
{
    char *dir = tmpdir_make(), *json, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/gemm.json", dir), 0);
    int rc = RUN(&out, &err, "test-operator", "Gemm", "--sizes", "M=64,N=32,K=48,a_t=T,b_t=N",
                 "--validate", "--gradient", "--max-time", "0.05", "--no-peak", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "M=64,N=32,K=48,a_t=T,b_t=N"), "%s", out);
    cr_assert(strstr(out, " ref "), "%s", out);
    cr_assert(strstr(out, " blas "), "%s", out);
    json_error_t jerr;
    json_t *doc = json_load_file(json, 0, &jerr);
    cr_assert_not_null(doc, "%s", jerr.text);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(doc, "context"), "operator")), "Gemm");
    json_t *b = json_object_get(doc, "benchmarks");
    cr_assert_geq(json_array_size(b), 8); /* 4 aggregates per backend, at least ref and blas */
    int found_blas_median = 0;
    size_t i;
    json_t *e;
    json_array_foreach(b, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        if (strstr(name, "/blas_median")) {
            found_blas_median = 1;
            cr_assert(json_number_value(json_object_get(e, "GFLOP/s")) > 0);
            cr_assert(json_number_value(json_object_get(e, "error_linf")) < 1e-3);
        }
    }
    cr_assert(found_blas_median);
    json_decref(doc);
    free(out);
    free(err);
    free(json);
    rmtree(dir);
    free(dir);
}

Test(operator_cli, bad_requests_exit_with_a_reason)
{
    char *out, *err;
    cr_assert_eq(RUN(&out, &err, "test-operator", "NoSuchOp", "--backend", "ref"), 3);
    cr_assert(strstr(err, "NoSuchOp"), "%s", err);
    free(out), free(err);
    cr_assert_eq(
        RUN(&out, &err, "test-operator", "Gemm", "--sizes", "M=4,N=x,K=2", "--backend", "ref"), 3);
    cr_assert(strstr(err, "N=x is not a size"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "test-operator", "Gemm", "--sizes", "/nonexistent/sizes.csv"), 3);
    cr_assert(strstr(err, "/nonexistent/sizes.csv"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "test-operator", "Relu", "--sizes", "deepbench-train"), 3);
    cr_assert(strstr(err, "DeepBench has sizes for Gemm, MatMul and Conv"), "%s", err);
    free(out), free(err);
    cr_assert_eq(
        RUN(&out, &err, "test-operator", "Gemm", "--backend", "custom:/nonexistent/lib.so:X"), 3);
    cr_assert(strstr(err, "cannot load operator library '/nonexistent/lib.so'"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "test-operator"), 2);
    cr_assert(strstr(err, "missing OP"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "test-operator", "x", "--list"), 0);
    cr_assert(strstr(out, "Conv") && strstr(out, "blas"), "%s", out);
    free(out), free(err);
}

Test(operator_cli, deepbench_sizes_load)
{
    char *out, *err;
    int rc = RUN(&out, &err, "test-operator", "Conv", "--sizes", "deepbench-train", "--backend",
                 "blas", "--limit", "1", "--max-time", "0.01", "--no-peak");
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    cr_assert(strstr(out, "W=700,H=161,C=1,N=4,K=32,S=20,R=5"), "%s", out);
    free(out), free(err);
}

Test(operator_cli, custom_operators_compile_load_and_fail_safely)
{
    char *dir = tmpdir_make(), *lib, *bad, *spec, *out, *err;
    cr_assert_geq(asprintf(&lib, "%s/libmedian.so", dir), 0);
    cr_assert_geq(asprintf(&bad, "%s/libbad.so", dir), 0);
    cr_assert_eq(RUN(&out, &err, "compile-op", D5_SOURCE_DIR "/examples/ops/median_pool.c",
                     "--name", "MedianPool", "-D", "KERNEL=3", "-o", lib),
                 0, "%s\n%s", out, err);
    cr_assert(strstr(out, "MedianPool (custom)"), "%s", out);
    free(out), free(err);
    /* A second build of the same sources comes from the cache. */
    cr_assert_eq(RUN(&out, &err, "compile-op", D5_SOURCE_DIR "/examples/ops/median_pool.c",
                     "--name", "MedianPool", "-D", "KERNEL=3"),
                 0);
    cr_assert(strstr(out, "(cached)"), "%s", out);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "compile-op", D5_SOURCE_DIR "/examples/ops/scaled_relu.cpp",
                     "--name", "ScaledRelu"),
                 0, "%s\n%s", out, err);
    free(out), free(err);
    cr_assert_geq(asprintf(&spec, "custom:%s:MedianPool", lib), 0);
    cr_assert_eq(RUN(&out, &err, "test-operator", "MedianPool", "--backend", spec, "--sizes",
                     "shape=2x3x9x9", "--max-time", "0.05", "--no-peak"),
                 0, "%s\n%s", out, err);
    cr_assert(strstr(out, "custom:MedianPool") && strstr(out, " ok"), "%s", out);
    free(out), free(err);
    free(spec);
    /* Wrong operator name in a good library. */
    cr_assert_eq(RUN(&out, &err, "compile-op", D5_SOURCE_DIR "/examples/ops/median_pool.c",
                     "--name", "Nope"),
                 3);
    cr_assert(strstr(err, "no operator 'Nope' (it has: MedianPool)"), "%s", err);
    free(out), free(err);
    /* A crash and a hang are rows of the table; the run exits 1. */
    cr_assert_eq(RUN(&out, &err, "compile-op", D5_SOURCE_DIR "/tests/level0/ops/misbehaving.c",
                     "--name", "Crash", "-o", bad),
                 0, "%s", err);
    free(out), free(err);
    char *both;
    cr_assert_geq(asprintf(&both, "custom:%s:Crash,custom:%s:Hang", bad, bad), 0);
    cr_assert_eq(RUN(&out, &err, "test-operator", "Crash", "--backend", both, "--sizes", "shape=8",
                     "--timeout", "2", "--no-peak"),
                 1);
    /* A signal, or under AddressSanitizer its report and exit status 1. */
    cr_assert(strstr(out, "crashed: "), "%s", out);
    cr_assert(strstr(out, "timed out after 2 s"), "%s", out);
    free(out), free(err);
    free(both);
    /* A timed-out operator's grandchild does not outlive it. */
    char *pidfile, *fork_hang;
    cr_assert_geq(asprintf(&pidfile, "%s/grandchild.pid", dir), 0);
    cr_assert_geq(asprintf(&fork_hang, "custom:%s:ForkHang", bad), 0);
    setenv("D5_TEST_PIDFILE", pidfile, 1);
    cr_assert_eq(RUN(&out, &err, "test-operator", "ForkHang", "--backend", fork_hang, "--sizes",
                     "shape=8", "--timeout", "2", "--no-peak"),
                 1);
    unsetenv("D5_TEST_PIDFILE");
    cr_assert(strstr(out, "timed out after 2 s"), "%s", out);
    char *text = slurp(pidfile, NULL);
    cr_assert_not_null(text, "the operator did not run");
    long grandchild = strtol(text, NULL, 10);
    cr_assert_gt(grandchild, 0);
    int gone = 0;
    for (int i = 0; i < 40 && !gone; i++) {
        char stat_path[64], *st;
        snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", grandchild);
        st = slurp(stat_path, NULL);
        /* Gone, or a zombie waiting for init to reap it. */
        gone = !st || strstr(st, ") Z ") != NULL;
        free(st);
        if (!gone) usleep(50000);
    }
    cr_assert(gone, "grandchild %ld still runs", grandchild);
    free(text);
    free(pidfile);
    free(fork_hang);
    free(out), free(err);
    /* Compiler errors are shown verbatim. */
    char *src;
    cr_assert_geq(asprintf(&src, "%s/broken.c", dir), 0);
    FILE *f = fopen(src, "w");
    fputs("int x = ;\n", f);
    fclose(f);
    cr_assert_eq(RUN(&out, &err, "compile-op", src, "--name", "X"), 3);
    cr_assert(strstr(err, "broken.c:1:"), "%s", err);
    free(out), free(err);
    free(src);
    free(lib);
    free(bad);
    rmtree(dir);
    free(dir);
}
