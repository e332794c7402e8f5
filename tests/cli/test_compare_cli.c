/* d5 compare: exit statuses (0 no slowdown, 1 slower, 2 usage, 3 bad input),
 * the table, the JSON document, folders, time units. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})
#define DATA               D5_SOURCE_DIR "/tests/cli/data/"

/* The row of `name` in a printed table (up to its end of line), or NULL. */
static char *row_of(const char *out, const char *name)
{
    const char *p = strstr(out, name);
    while (p && p != out && p[-1] != '\n') p = strstr(p + 1, name);
    if (!p) return NULL;
    const char *nl = strchr(p, '\n');
    return strndup(p, nl ? (size_t)(nl - p) : strlen(p));
}

static void expect_row(const char *out, const char *name, const char *text)
{
    char *row = row_of(out, name);
    cr_assert_not_null(row, "no row '%s' in:\n%s", name, out);
    cr_assert(strstr(row, text), "row '%s' lacks '%s':\n%s", name, text, row);
    free(row);
}

Test(compare_cli, slower_in_b_exits_1_and_the_table_says_why)
{
    char *out, *err;
    int rc = RUN(&out, &err, "compare", DATA "gbench_a.json", DATA "gbench_b.json");
    cr_assert_eq(rc, 1, "exit %d: %s%s", rc, out, err);
    cr_assert(strstr(out, "#   threshold      = 5"), "the configuration is echoed: %s", out);
    cr_assert(strstr(out, "gbench_a.json (google-benchmark, 3 benchmarks, 2 with samples from "
                          "repetitions)"),
              "%s", out);
    static const char *const rows[][2] = {
        {"BM_Sort/1024", "10.3 us [10.1 us, 10.5 us]  13.4 us [13.2 us, 13.6 us]"},
        {"BM_Sort/1024", "1.301   0.008  slower"},
        {"BM_Copy/64", "20.1 ns [19.9 ns, 20.3 ns]  20.1 ns [19.8 ns, 20.3 ns]"},
        {"BM_Copy/64", "1.000"},
        {"BM_Copy/64", "no significant difference"},
        {"BM_Alloc/1073741824", "FAILED"},
        {"BM_Alloc/1073741824", "failed in A: allocation of 1 GiB failed"},
        {"BM_Hash/16", "only in B"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        expect_row(out, rows[i][0], rows[i][1]);
    cr_assert(strstr(out, "2 compared: 1 slower, 0 faster, 1 no significant difference; 1 failed; "
                          "1 only in B (threshold 5%, alpha 0.05)"),
              "%s", out);
    cr_assert(strstr(err, "d5 compare: 1 benchmark is significantly slower in B"), "%s", err);
    free(out);
    free(err);
    /* A threshold above the change: no verdict, exit 0. */
    rc =
        RUN(&out, &err, "compare", DATA "gbench_a.json", DATA "gbench_b.json", "--threshold", "31");
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    expect_row(out, "BM_Sort/1024", "no significant difference");
    free(out);
    free(err);
    /* alpha below the smallest p-value 5 against 5 samples can give (2/252). */
    rc = RUN(&out, &err, "compare", DATA "gbench_a.json", DATA "gbench_b.json", "--alpha=0.005");
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    expect_row(out, "BM_Sort/1024", "with 5 and 5 samples p cannot fall below 0.00794");
    free(out);
    free(err);
}

Test(compare_cli, faster_or_equal_exits_0)
{
    char *out, *err;
    int rc = RUN(&out, &err, "compare", DATA "gbench_b.json", DATA "gbench_a.json");
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    expect_row(out, "BM_Sort/1024", "0.769   0.008  faster");
    expect_row(out, "BM_Alloc/1073741824", "failed in B");
    expect_row(out, "BM_Hash/16", "only in A");
    free(out);
    free(err);
    rc = RUN(&out, &err, "compare", DATA "gbench_a.json", DATA "gbench_a.json");
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    expect_row(out, "BM_Sort/1024", "1.000   1.000  no significant difference");
    free(out);
    free(err);
}

Test(compare_cli, medians_without_samples_give_no_verdict)
{
    char *out, *err;
    /* Twice as slow, but aggregates only: no test, no verdict, exit 0. */
    int rc = RUN(&out, &err, "compare", DATA "gbench_a.json", DATA "gbench_aggregates.json");
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    expect_row(out, "BM_Sort/1024", "10.3 us [10.1 us, 10.5 us]  20.1 us ");
    expect_row(out, "BM_Sort/1024", "1.951       -  no samples: p-value unavailable (none in B)");
    cr_assert(strstr(out, "; 2 without samples"), "%s", out);
    free(out);
    free(err);
}

/* A d5 results folder stands for its results.json; the JSON document of the
 * comparison has a context and a schema version. */
Test(compare_cli, folders_and_json)
{
    char *t = tmpdir_make(), *dir_a, *dir_b, *json_a, *json_b, *out_json;
    cr_assert_geq(asprintf(&dir_a, "%s/a", t), 0);
    cr_assert_geq(asprintf(&dir_b, "%s/b", t), 0);
    cr_assert_geq(asprintf(&json_a, "%s/a/results.json", t), 0);
    cr_assert_geq(asprintf(&json_b, "%s/b/results.json", t), 0);
    cr_assert_geq(asprintf(&out_json, "%s/c.json", t), 0);
    char *out, *err;
    const char *cmd[2] = {dir_a, dir_b};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(mkdir(cmd[i], 0700), 0);
        int rc = RUN(&out, &err, "test-operator", "Relu", "--sizes", "shape=64x64", "--backend",
                     "ref", "--no-peak", "--max-time", "0.05", "--json", i ? json_b : json_a);
        cr_assert_eq(rc, 0, "%s", err);
        free(out);
        free(err);
    }
    int rc = RUN(&out, &err, "compare", dir_a, dir_b, "--json", out_json, "--threshold", "1000");
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out, err);
    cr_assert(strstr(out, "results.json (d5, 1 benchmark, 1 with samples from results.json)"), "%s",
              out);
    cr_assert(strstr(out, "1 compared: 0 slower, 0 faster, 1 no significant difference"), "%s",
              out);
    json_t *doc = json_read(out_json);
    cr_assert_eq(json_integer_value(json_object_get(doc, "schema_version")), 1);
    json_t *ctx = json_object_get(doc, "context");
    cr_assert(json_is_string(json_object_get(ctx, "host_name")));
    cr_assert_str_eq(json_string_value(json_object_get(ctx, "command")), "d5 compare");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "a"), "path")), json_a);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "b"), "format")), "d5");
    cr_assert_eq(json_real_value(json_object_get(json_object_get(doc, "params"), "threshold")), 10);
    json_t *row = json_array_get(json_object_get(doc, "benchmarks"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(row, "verdict")), "same");
    cr_assert(json_is_number(json_object_get(row, "p_value")));
    cr_assert_gt(json_integer_value(json_object_get(json_object_get(row, "a"), "n")), 0);
    json_decref(doc);
    free(out);
    free(err);
    free(dir_a);
    free(dir_b);
    free(json_a);
    free(json_b);
    free(out_json);
    rmtree(t);
    free(t);
}

static void expect_fail(int want, const char *needle, const char *const *args)
{
    char *out, *err;
    int rc = run_d5(&out, &err, args);
    cr_assert_eq(rc, want, "exit %d (want %d): %s", rc, want, err);
    cr_assert(strstr(err, needle), "stderr lacks '%s': %s", needle, err);
    free(out);
    free(err);
}

Test(compare_cli, bad_input_exits_3_and_usage_2)
{
    char *t = tmpdir_make(), *none, *nojson, *nobench, *units;
    cr_assert_geq(asprintf(&none, "%s/none.json", t), 0);
    cr_assert_geq(asprintf(&nojson, "%s/text.json", t), 0);
    cr_assert_geq(asprintf(&nobench, "%s/nobench.json", t), 0);
    cr_assert_geq(asprintf(&units, "%s/units.json", t), 0);
    FILE *f = fopen(nojson, "w");
    fputs("BM_Sort/1024   10.3 us   10.2 us   68000\n", f); /* the console format */
    fclose(f);
    f = fopen(nobench, "w");
    fputs("{\"context\": {\"date\": \"2024-05-02\"}}\n", f);
    fclose(f);
    f = fopen(units, "w");
    fputs("{\"benchmarks\": [{\"name\": \"BM_x\", \"run_type\": \"iteration\", \"real_time\": 3, "
          "\"time_unit\": \"cycles\"}]}\n",
          f);
    fclose(f);
    const char *a = DATA "gbench_a.json";
    expect_fail(3, "cannot open results file", (const char *const[]){"compare", none, a, NULL});
    expect_fail(3, "cannot open results file", (const char *const[]){"compare", a, none, NULL});
    expect_fail(3, "is not JSON", (const char *const[]){"compare", nojson, a, NULL});
    expect_fail(3, "has no \"benchmarks\" list",
                (const char *const[]){"compare", a, nobench, NULL});
    expect_fail(3, "has time_unit 'cycles'; expected ns, us, ms or s",
                (const char *const[]){"compare", a, units, NULL});
    expect_fail(3, "has no results.json", (const char *const[]){"compare", t, a, NULL});
    expect_fail(2, "missing A B", (const char *const[]){"compare", NULL});
    expect_fail(2, "expected two results files, A and B; got 3",
                (const char *const[]){"compare", a, a, a, NULL});
    expect_fail(2, "--threshold -5 is outside",
                (const char *const[]){"compare", a, a, "--threshold", "-5", NULL});
    expect_fail(2, "--alpha 1 is outside",
                (const char *const[]){"compare", a, a, "--alpha", "1", NULL});
    free(none);
    free(nojson);
    free(nobench);
    free(units);
    rmtree(t);
    free(t);
}
