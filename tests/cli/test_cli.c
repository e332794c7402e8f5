#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

static void expect_usage(const char *needle, const char *const *args)
{
    char *out, *err;
    int rc = run_d5(&out, &err, args);
    cr_assert_eq(rc, 2, "exit %d, stderr: %s", rc, err);
    cr_assert(strstr(err, needle), "stderr lacks '%s': %s", needle, err);
    free(out);
    free(err);
}

Test(cli, help_lists_every_command)
{
    char *out, *err;
    cr_assert_eq(RUN(&out, &err, "--help"), 0);
    cr_assert(strstr(out, "bench") && strstr(out, "machine") && strstr(out, "version"));
    free(out);
    free(err);
    cr_assert_eq(RUN(&out, &err, "machine", "--help"), 0);
    cr_assert(strstr(out, "usage: d5 machine"));
    cr_assert(strstr(out, "--json FILE"));
    cr_assert(strstr(out, "exit status"));
    free(out);
    free(err);
    cr_assert_eq(run_d5(&out, &err, (const char *const[]){NULL}), 2);
    cr_assert(strstr(err, "usage: d5 COMMAND"));
    free(out);
    free(err);
}

Test(cli, usage_errors_exit_2_and_say_what_is_wrong)
{
    expect_usage("unknown command 'frobnicate'", (const char *const[]){"frobnicate", NULL});
    expect_usage("unknown option '--bogus'", (const char *const[]){"machine", "--bogus", NULL});
    expect_usage("--threads expects an integer, got 'abc'",
                 (const char *const[]){"machine", "--threads", "abc", NULL});
    expect_usage("--threads -1 is outside 0..4096",
                 (const char *const[]){"machine", "--threads=-1", NULL});
    expect_usage("--time needs a value", (const char *const[]){"machine", "--time", NULL});
    expect_usage("--time expects a number, got '1s'",
                 (const char *const[]){"machine", "--time", "1s", NULL});
    expect_usage("--no-measure takes no value",
                 (const char *const[]){"machine", "--no-measure=yes", NULL});
    expect_usage("unexpected argument 'extra'", (const char *const[]){"version", "extra", NULL});
}

Test(cli, version_names_the_build)
{
    char *out, *err;
    cr_assert_eq(RUN(&out, &err, "version"), 0);
    cr_assert(strstr(out, d5_version()));
    cr_assert(strstr(out, "commit"));
    cr_assert(strstr(out, "openblas"));
    free(out);
    free(err);
}

Test(cli, machine_json_and_bad_output_path)
{
    char *dir = tmpdir_make(), *p, *out, *err;
    cr_assert_geq(asprintf(&p, "%s/m.json", dir), 0);
    cr_assert_eq(RUN(&out, &err, "machine", "--no-measure", "--json", p), 0, "%s", err);
    cr_assert(strstr(out, "# d5 machine"), "configuration echoed");
    cr_assert(strstr(out, "cpu"));
    free(out);
    free(err);
    json_t *doc = json_read(p);
    cr_assert(json_is_integer(json_object_get(json_object_get(doc, "machine"), "logical_cpus")));
    cr_assert(json_is_null(json_object_get(doc, "peaks")));
    json_decref(doc);
    cr_assert_eq(RUN(&out, &err, "machine", "--no-measure", "--json", "/nonexistent-d5/m.json"), 3);
    cr_assert(strstr(err, "/nonexistent-d5/m.json"), "%s", err);
    free(p);
    run_done(out, err, dir);
}

Test(cli, bench_writes_a_complete_results_folder, .timeout = D5_TIMEOUT(240))
{
    char *dir = tmpdir_make(), *res, *out, *err;
    cr_assert_geq(asprintf(&res, "%s/run1", dir), 0);
    cr_assert_eq(RUN(&out, &err, "bench", "--quick", "--out", res), 0, "%s", err);
    cr_assert(strstr(out, "timer/pair/tsc/string-key") || strstr(out, "timer/pair/monotonic"));
    cr_assert(strstr(err, "[1/7]"), "progress lines: %s", err);
    free(out);
    free(err);
    const char *files[] = {"summary.txt",   "results.json", "results.csv", "samples.csv",
                           "history.jsonl", "machine.json", "trace.json",  "sections.csv",
                           "system.csv",    "system.json",  "memory.json", "memory_timeline.csv"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", res, files[i]);
        struct stat st;
        cr_assert_eq(stat(path, &st), 0, "missing %s", path);
        cr_assert_gt(st.st_size, 0);
    }
    json_t *doc = json_read_in(res, "results.json");
    cr_assert_geq(json_array_size(json_object_get(doc, "benchmarks")), 4);
    json_decref(doc);
    /* The memory report of one ResNet-20 inference: its peak is the counter
     * memory_peak_bytes of the network's benchmark. */
    doc = json_read_in(res, "memory.json");
    json_int_t peak = json_integer_value(json_object_get(json_object_get(doc, "peak"), "bytes"));
    cr_assert_gt(peak, 0);
    json_decref(doc);
    char path[4096];
    snprintf(path, sizeof path, "%s/results.csv", res);
    char *csv = slurp(path, NULL);
    char want[64];
    snprintf(want, sizeof want, ",%lld", (long long)peak);
    char *row = strstr(csv, "network/resnet20/batch32/inference");
    cr_assert(row && strstr(row, want), "peak %lld not in the ResNet-20 row: %s", (long long)peak,
              row ? row : csv);
    free(csv);
    doc = json_read_in(res, "trace.json");
    json_decref(doc);
    /* An existing folder is never overwritten. */
    cr_assert_eq(RUN(&out, &err, "bench", "--quick", "--out", res), 2);
    cr_assert(strstr(err, "already exists"));
    free(res);
    run_done(out, err, dir);
}
