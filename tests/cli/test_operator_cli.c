#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
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
    json_t *doc = json_read(json);
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
    free(json);
    run_done(out, err, dir);
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

/* ---- Precisions (--dtype) ---- */

/* The benchmark of `name` + "_median" in a results document, or NULL. */
static json_t *median_entry(json_t *doc, const char *name)
{
    char want[512];
    snprintf(want, sizeof want, "%s_median", name);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), want) == 0) return e;
    }
    return NULL;
}

Test(operator_cli, gemm_in_every_precision_on_ref)
{
    char *dir = tmpdir_make(), *json, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/gemm.json", dir), 0);
    int rc = RUN(&out, &err, "test-operator", "Gemm", "--sizes", "M=64,N=32,K=48,a_t=T,b_t=N",
                 "--dtype", "all", "--backend", "ref", "--validate", "--max-time", "0.05",
                 "--no-peak", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "# i8: Gemm runs as MatMulInteger"), "%s", out);
    cr_assert(strstr(out, "vs f32"), "%s", out);
    json_t *doc = json_read(json);
    const char *base = "Gemm/M=64,N=32,K=48,a_t=T,b_t=N/ref";
    cr_assert_not_null(median_entry(doc, base), "the float32 row keeps its name");
    /* bf16 and f16 within u (1 + sqrt(K)) max|ref|, with max|ref| <= K for
     * inputs in [-1, 1]; the two tolerances differ by their u (2^-8 against
     * 2^-11) and the slightly different roundings of the same draws. */
    double tol[2];
    const char *lowp[2] = {"bf16", "f16"};
    for (int p = 0; p < 2; p++) {
        char name[256];
        snprintf(name, sizeof name, "%s/%s", base, lowp[p]);
        json_t *e = median_entry(doc, name);
        cr_assert_not_null(e, "no %s in %s", name, out);
        double linf = json_number_value(json_object_get(e, "error_linf"));
        tol[p] = json_number_value(json_object_get(e, "error_tolerance"));
        double scale = tol[p] / (ldexp(1, p ? -11 : -8) * (1 + sqrt(48)));
        cr_assert(scale > 1 && scale <= 48, "%s: max|ref| %g", lowp[p], scale);
        cr_assert_leq(linf, tol[p], "%s: error %g above %g", lowp[p], linf, tol[p]);
        cr_assert_gt(linf, 0, "%s: rounded to %s, some element must differ", lowp[p], lowp[p]);
        cr_assert_gt(json_number_value(json_object_get(e, "speedup_vs_f32")), 0);
        cr_assert_gt(json_number_value(json_object_get(e, "GFLOP/s")), 0);
    }
    cr_assert(fabs(tol[1] / tol[0] - 0.125) < 0.125 * 0.05, "%g / %g", tol[1], tol[0]);
    /* int8: MatMulInteger against MatMul in float64, exactly; operations as 2 M N K. */
    char name[256];
    snprintf(name, sizeof name, "%s/i8", base);
    json_t *e = median_entry(doc, name);
    cr_assert_not_null(e, "no %s in %s", name, out);
    cr_assert_eq(json_number_value(json_object_get(e, "error_linf")), 0);
    cr_assert_eq(json_number_value(json_object_get(e, "error_tolerance")), 0);
    cr_assert_eq(json_number_value(json_object_get(e, "flops")), 2.0 * 64 * 32 * 48);
    cr_assert_gt(json_number_value(json_object_get(e, "GOP/s")), 0);
    json_decref(doc);
    free(out), free(err);
    free(json);
    rmtree(dir);
    free(dir);
}

Test(operator_cli, conv_in_int8_is_exact)
{
    char *out, *err;
    int rc = RUN(&out, &err, "test-operator", "Conv", "--dtype", "i8", "--backend", "ref",
                 "--validate", "--max-time", "0.05", "--no-peak");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "# i8: Conv runs as ConvInteger: X uint8, W int8, int32 out"), "%s", out);
    /* Both smoke sizes: validated, error 0. */
    const char *p = out;
    int rows = 0;
    while ((p = strstr(p, " ref            i8 "))) {
        const char *eol = strchr(p, '\n');
        cr_assert(eol && memmem(p, (size_t)(eol - p), " 0  ok", 6), "%.*s",
                  (int)(eol ? eol - p : 80), p);
        rows++;
        p = eol;
    }
    cr_assert_eq(rows, 2, "%s", out);
    free(out), free(err);
}

/* A backend without the precision is a row that says so; the other rows run. */
Test(operator_cli, unsupported_precision_is_a_row)
{
    char *out, *err;
    int rc = RUN(&out, &err, "test-operator", "Gemm", "--sizes", "M=16,N=8,K=8", "--dtype",
                 "f32,bf16", "--backend", "blas", "--max-time", "0.02", "--no-peak");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, " blas           f32 "), "%s", out);
    cr_assert(strstr(out, "bfloat16 unsupported: "), "%s", out);
    free(out), free(err);
    rc = RUN(&out, &err, "test-operator", "Gemm", "--sizes", "M=16,N=8,K=8", "--dtype", "bf16",
             "--backend", "blas", "--max-time", "0.02", "--no-peak");
    cr_assert_eq(rc, 1, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(err, "no backend here runs Gemm in --dtype bf16"), "%s", err);
    free(out), free(err);
}

/* A bfloat16 Gemm of its own (A [M,K] x B [K,N]): products summed in float32
 * (or, with NARROW, rounded to bfloat16 after every step, the growth the
 * tolerance allows for), the result rounded to bfloat16 and multiplied by
 * SCALE. */
static const char lowp_gemm_src[] =
    "#include <d5/operator.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "static float widen(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f;\n"
    "    memcpy(&f, &u, 4); return f; }\n"
    "static uint16_t narrow(float f) { uint32_t u; memcpy(&u, &f, 4);\n"
    "    u += 0x7fffu + ((u >> 16) & 1u); return (uint16_t)(u >> 16); }\n"
    "typedef struct dims { int64_t m, n, k; } dims;\n"
    "static d5_status create(const d5_op_create_args *args, void **state) {\n"
    "    const d5_tensor_desc *a = &args->inputs[0].desc, *b = &args->inputs[1].desc;\n"
    "    if (a->dtype != D5_BF16 || b->dtype != D5_BF16 || a->ndim != 2 || b->ndim != 2 ||\n"
    "        a->shape[1] != b->shape[0])\n"
    "        return d5_error(D5_ERR_UNSUPPORTED, \"bfloat16 A [M,K] and B [K,N] only\");\n"
    "    dims *d = malloc(sizeof *d);\n"
    "    if (!d) return D5_ERR_NOMEM;\n"
    "    d->m = a->shape[0]; d->n = b->shape[1]; d->k = a->shape[1];\n"
    "    args->outputs[0] = *a; args->outputs[0].shape[1] = d->n; *state = d; return D5_OK; }\n"
    "static d5_status forward(void *state, const d5_op_call *call) {\n"
    "    const dims *d = state;\n"
    "    const uint16_t *a = call->inputs[0].data, *b = call->inputs[1].data;\n"
    "    uint16_t *y = call->outputs[0].data;\n"
    "    for (int64_t i = 0; i < d->m; i++)\n"
    "        for (int64_t j = 0; j < d->n; j++) {\n"
    "            float acc = 0;\n"
    "            for (int64_t k = 0; k < d->k; k++) {\n"
    "                acc += widen(a[i * d->k + k]) * widen(b[k * d->n + j]);\n"
    "                if (NARROW) acc = widen(narrow(acc));\n"
    "            }\n"
    "            y[i * d->n + j] = narrow(acc * SCALE);\n"
    "        }\n"
    "    return D5_OK; }\n"
    "static void destroy(void *state) { free(state); }\n"
    "static const d5_op_desc gemm = {.abi_version = D5_OP_ABI_VERSION, .name = \"Gemm\",\n"
    "    .backend = \"custom\", .min_inputs = 2, .max_inputs = 3, .min_outputs = 1,\n"
    "    .max_outputs = 1, .create = create, .forward = forward, .destroy = destroy};\n"
    "D5_OPERATOR_EXPORT(&gemm)\n";

/* Builds the Gemm above with NARROW and SCALE and runs it in bfloat16 with
 * --validate; returns the exit status, the table in *out. */
static int run_lowp_gemm(const char *dir, const char *narrow, const char *scale, char **out)
{
    write_text(dir, "lowp_gemm.c", lowp_gemm_src);
    char *src = path_join(dir, "lowp_gemm.c"), *lib, *spec, *d1, *d2, *err;
    cr_assert_geq(asprintf(&lib, "%s/liblowp_%s_%s.so", dir, narrow, scale), 0);
    cr_assert_geq(asprintf(&d1, "NARROW=%s", narrow), 0);
    cr_assert_geq(asprintf(&d2, "SCALE=%sf", scale), 0);
    cr_assert_eq(RUN(out, &err, "compile-op", src, "--name", "Gemm", "-D", d1, "-D", d2, "-o", lib),
                 0, "%s\n%s", *out, err);
    free(*out), free(err);
    cr_assert_geq(asprintf(&spec, "custom:%s:Gemm", lib), 0);
    int rc = RUN(out, &err, "test-operator", "Gemm", "--sizes", "M=64,N=32,K=256", "--dtype",
                 "bf16", "--backend", spec, "--validate", "--max-time", "0.05", "--no-peak");
    free(err);
    free(spec), free(d1), free(d2), free(lib), free(src);
    return rc;
}

Test(operator_cli, bf16_validation_holds_what_bf16_can_do_and_fails_the_rest)
{
    char *dir = tmpdir_make(), *out;
    /* float32 sums rounded once: well inside. */
    cr_assert_eq(run_lowp_gemm(dir, "0", "1.0", &out), 0, "%s", out);
    cr_assert(strstr(out, "custom:Gemm    bf16") && strstr(out, "  ok"), "%s", out);
    free(out);
    /* Sums rounded to bfloat16 at each of the 256 steps: inside, as the tolerance promises. */
    cr_assert_eq(run_lowp_gemm(dir, "1", "1.0", &out), 0, "%s", out);
    free(out);
    /* Every result 1/8 too large: FAIL, exit 1. */
    cr_assert_eq(run_lowp_gemm(dir, "0", "1.125", &out), 1, "%s", out);
    cr_assert(strstr(out, "FAIL: output 0 element"), "%s", out);
    free(out);
    rmtree(dir);
    free(dir);
}

Test(operator_cli, typed_default_cases_run_operators_with_index_and_shape_inputs)
{
    char *out, *err;
    /* Reshape's shape and Gather's indices are int64 constants of its default cases. */
    int rc = RUN(&out, &err, "test-operator", "Reshape", "--backend", "ref", "--max-time", "0.01",
                 "--no-peak");
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    cr_assert(strstr(out, "f32[4,6,8] i64[2]={24,-1}"), "%s", out);
    free(out), free(err);
    rc = RUN(&out, &err, "test-operator", "MaxPool", "--sizes", "smoke", "--gradient", "--max-time",
             "0.01", "--no-peak");
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    cr_assert(strstr(out, "kernel_shape=[3,3]"), "%s", out);
    cr_assert(strstr(out, "match finite differences"), "%s", out);
    free(out), free(err);
    /* A case on the command line, in the same grammar. */
    rc = RUN(&out, &err, "test-operator", "Gather", "--sizes",
             "f32[10,3] i64[2,2]={0,9,-1,4} | axis=0", "--backend", "ref", "--max-time", "0.01",
             "--no-peak");
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    free(out), free(err);
}

Test(operator_cli, bad_case_specs_name_the_fault)
{
    static const struct {
        const char *spec, *says;
    } bad[] = {
        {"f32[4,6] i64[3]={6,4}", "has 3 elements but 2 values"},
        {"f32[4,6] i64[2]={}", "has 2 elements but 0 values"},
        {"q7[2]", "'q7' is no element type"},
        {"f32[4,-6]", "dims must be sizes"},
        {"f32[4] i64[1]~[3,1]", "lo <= hi"},
        {"f32[4] | axis", "is not NAME=VALUE"},
        {"f32[4]x", "unexpected 'x'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out, *err;
        int rc = RUN(&out, &err, "test-operator", "Relu", "--sizes", bad[i].spec, "--backend",
                     "ref", "--no-peak");
        cr_assert_eq(rc, 3, "%s: exit %d\n%s", bad[i].spec, rc, err);
        cr_assert(strstr(err, bad[i].says), "%s: %s", bad[i].spec, err);
        free(out), free(err);
    }
}

/* At DeepBench's sizes, weights drawn in [-1, 1] made the recurrence chaotic
 * and dnnl's LSTM "failed" against ref (0.077 against 0.272); drawn as
 * frameworks initialise them, the kernels agree. */
Test(operator_cli, recurrent_cells_validate_at_deepbench_sizes)
{
    static const char *const ops[] = {"LSTM", "GRU"};
    for (size_t i = 0; i < 2; i++) {
        char *out, *err;
        int rc =
            RUN(&out, &err, "test-operator", ops[i], "--sizes", "hidden=512,batch=16,timesteps=25",
                "--backend", "dnnl", "--validate", "--max-time", "0.01", "--no-peak");
        if (rc == 3 && strstr(err, "no dnnl backend")) { /* built without oneDNN */
            free(out), free(err);
            continue;
        }
        cr_assert_eq(rc, 0, "%s: exit %d\n%s\n%s", ops[i], rc, out, err);
        cr_assert(strstr(out, " ok"), "%s", out);
        free(out), free(err);
    }
}
