#define _GNU_SOURCE
#include "support.h"

#include <cblas.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A timer with known samples: FORWARD 1.5, 3, 4.5 us starting at 10, 20, 30 us;
 * a key with a comma and quotes. Added samples are rounded to the clock's tick,
 * so values are compared to within 1 ns. */
static d5_timer *known_timer(void)
{
    d5_timer *t = forward_timer();
    cr_assert_eq(d5_timer_add(t, "odd, \"key\"", 0, 500), D5_OK);
    return t;
}

static char *path_in(const char *name)
{
    return path_join(test_dir, name);
}

/* The JSON document in `path`, asserting that it parses. Free with json_decref. */
static json_t *load_json(const char *path)
{
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    cr_assert_not_null(doc, "%s: %s", path, err.text);
    return doc;
}

/* Only the expected files: no temporary file is left behind. */
static int files_in(const char *d)
{
    DIR *h = opendir(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(h)))
        if (e->d_name[0] != '.') n++;
    closedir(h);
    return n;
}

/* Writes the known timer through `report` to test_dir/name and returns the
 * file's text (free it). */
static char *report_text(d5_status (*report)(d5_timer *, const char *), const char *name)
{
    d5_timer *t = known_timer();
    char *p = path_in(name);
    cr_assert_eq(report(t, p), D5_OK, "%s: %s", name, d5_last_error());
    char *text = slurp(p, NULL);
    cr_assert_not_null(text, "%s", name);
    free(p);
    d5_timer_free(t);
    return text;
}

/* As report_text, the text parsed as JSON (free with json_decref). */
static json_t *report_json(d5_status (*report)(d5_timer *, const char *), const char *name)
{
    char *text = report_text(report, name);
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    cr_assert_not_null(doc, "%s: %s", name, err.text);
    free(text);
    return doc;
}

TestSuite(report, .init = test_dir_make, .fini = test_dir_remove);

Test(report, format_duration_picks_units)
{
    static const struct {
        double ns;
        const char *want;
    } cases[] = {{812, "812 ns"},
                 {12400, "12.4 us"},
                 {3.05e6, "3.05 ms"},
                 {1.2e9, "1.20 s"},
                 {0, "0.00 ns"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char b[32];
        d5_format_duration(cases[i].ns, b, sizeof b);
        cr_assert_str_eq(b, cases[i].want, "%g ns", cases[i].ns);
    }
}

Test(report, format_bytes_in_powers_of_1024)
{
    const struct {
        double bytes;
        const char *want;
    } cases[] = {{0, "0 B"},
                 {812, "812 B"},
                 {1023, "1023 B"},
                 {1024, "1.0 KiB"},
                 {12.4 * 1024, "12.4 KiB"},
                 {3.1 * 1024 * 1024, "3.1 MiB"},
                 {1536.0 * 1024 * 1024 * 1024, "1.5 TiB"},
                 {2048.0 * 1024 * 1024 * 1024 * 1024, "2048.0 TiB"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char b[32];
        d5_format_bytes(cases[i].bytes, b, sizeof b);
        cr_assert_str_eq(b, cases[i].want, "%g bytes", cases[i].bytes);
    }
}

Test(report, table_has_one_row_per_key_with_samples)
{
    d5_timer *t = known_timer();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(d5_report_table(f, t), D5_OK);
    fclose(f);
    cr_assert_eq(count_lines(buf), 3, "%s", buf); /* header, FORWARD, odd key */
    cr_assert(strstr(buf, "median"));
    char *row = strstr(buf, "FORWARD");
    cr_assert_not_null(row);
    cr_assert(strstr(row, "3.00 us"), "%s", buf); /* median */
    cr_assert(strstr(row, "[1.50 us, 4.50 us]")); /* CI of n = 3 is [min, max] */
    cr_assert(strstr(row, "9.00 us"));            /* total */
    cr_assert_null(strstr(buf, "EPOCH"));         /* no samples, no row */
    free(buf);
    d5_timer_free(t);
}

Test(report, json_reads_back)
{
    json_t *doc = report_json(d5_report_json, "timer.json");
    json_t *ctx = json_object_get(doc, "context");
    cr_assert_eq(json_integer_value(json_object_get(ctx, "json_schema_version")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ctx, "d5"), "version")),
                     d5_version());
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "timer"), "name")),
                     "unit-test");
    json_t *keys = json_object_get(doc, "keys");
    cr_assert_eq(json_array_size(keys), 2);
    json_t *fw = json_array_get(keys, 0);
    cr_assert_str_eq(json_string_value(json_object_get(fw, "key")), "FORWARD");
    json_t *stats = json_object_get(fw, "stats");
    cr_assert(fabs(json_real_value(json_object_get(stats, "median")) - 3000) < 1);
    cr_assert_eq(json_integer_value(json_object_get(stats, "n")), 3);
    json_t *dur = json_object_get(json_object_get(fw, "samples"), "duration_ns");
    cr_assert_eq(json_array_size(dur), 3);
    cr_assert(fabs(json_real_value(json_array_get(dur, 2)) - 4500) < 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(keys, 1), "key")),
                     "odd, \"key\"");
    json_decref(doc);
    cr_assert_eq(files_in(test_dir), 1);
}

Test(report, csv_parses)
{
    char *csv = report_text(d5_report_csv, "timer.csv");
    cr_assert_eq(count_lines(csv), 3);
    cr_assert(strncmp(csv, "key,clock,n,min_ns,p5_ns,q1_ns,median_ns,ci_low_ns,ci_high_ns,", 62) ==
              0);
    char *row = strstr(csv, "\nFORWARD,"); /* quoted only where it must be */
    cr_assert_not_null(row);
    char clock[32];
    unsigned n;
    double mn, p5, q1, med;
    cr_assert_eq(
        sscanf(row, "\nFORWARD,%31[^,],%u,%lf,%lf,%lf,%lf", clock, &n, &mn, &p5, &q1, &med), 6);
    cr_assert_eq(n, 3);
    cr_assert(fabs(med - 3000) < 1 && fabs(mn - 1500) < 1);
    cr_assert(strstr(csv, "\"odd, \"\"key\"\"\","), "%s", csv); /* RFC 4180 quoting */
    char *samples = report_text(d5_report_csv_samples, "samples.csv");
    cr_assert_eq(count_lines(samples), 1 + 4);
    cr_assert(strstr(samples, "key,clock,index,start_ns,duration_ns\n"));
    free(csv);
    free(samples);
}

Test(report, chrome_trace_events_are_valid)
{
    json_t *doc = report_json(d5_report_trace, "trace.json");
    json_t *ev = json_object_get(doc, "traceEvents");
    cr_assert(json_is_array(ev));
    int complete = 0, process_name = 0, thread_name = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        cr_assert_not_null(ph);
        cr_assert(json_is_integer(json_object_get(e, "pid")));
        cr_assert(json_is_integer(json_object_get(e, "tid")));
        if (strcmp(ph, "M") == 0) {
            const char *name = json_string_value(json_object_get(e, "name"));
            process_name += strcmp(name, "process_name") == 0;
            thread_name += strcmp(name, "thread_name") == 0;
            cr_assert(json_is_string(json_object_get(json_object_get(e, "args"), "name")));
        } else {
            cr_assert_str_eq(ph, "X");
            cr_assert(json_is_number(json_object_get(e, "ts")));
            cr_assert(json_is_number(json_object_get(e, "dur")));
            if (strcmp(json_string_value(json_object_get(e, "name")), "FORWARD") == 0) {
                int idx =
                    (int)json_integer_value(json_object_get(json_object_get(e, "args"), "index"));
                /* microseconds: sample idx started at 10 (idx + 1) us and lasted 1.5 (idx + 1) us
                 */
                cr_assert(fabs(json_number_value(json_object_get(e, "ts")) - 10.0 * (idx + 1)) <
                          1e-3);
                cr_assert(fabs(json_number_value(json_object_get(e, "dur")) - 1.5 * (idx + 1)) <
                          1e-3);
            }
            complete++;
        }
    }
    cr_assert_eq(complete, 4);
    cr_assert_eq(process_name, 1);
    cr_assert_eq(thread_name, 1);
    json_decref(doc);
}

/* Two processes' events on one time line: the second one's timer started
 * 5 us after the common origin. */
Test(report, trace_events_of_two_processes_combine_into_one_file)
{
    d5_timer *t = known_timer();
    char *part[2];
    size_t len[2];
    cr_assert_eq(d5_report_trace_events(t, 0, "rank 0 (a)", 0, &part[0], &len[0]), D5_OK);
    cr_assert_eq(d5_report_trace_events(t, 1, NULL, 5000, &part[1], &len[1]), D5_OK);
    cr_assert_eq(strlen(part[1]), len[1]);
    cr_assert_eq(part[0][0], '[');
    char *p = path_in("merged.json");
    const char *const parts[2] = {part[0], part[1]};
    cr_assert_eq(d5_report_trace_combine(p, parts, len, 2, 123), D5_OK);
    json_t *doc = load_json(p);
    cr_assert_eq(
        json_integer_value(json_object_get(json_object_get(doc, "otherData"), "origin_unix_ns")),
        123);
    json_t *ev = json_object_get(doc, "traceEvents"), *e;
    size_t i;
    int complete[2] = {0, 0}, named[2] = {0, 0};
    json_array_foreach(ev, i, e)
    {
        int pid = (int)json_integer_value(json_object_get(e, "pid"));
        cr_assert(pid == 0 || pid == 1, "pid %d", pid);
        const char *name = json_string_value(json_object_get(e, "name"));
        if (strcmp(name, "process_name") == 0) {
            const char *pname =
                json_string_value(json_object_get(json_object_get(e, "args"), "name"));
            cr_assert_str_eq(pname, pid ? "unit-test" : "rank 0 (a)");
            named[pid]++;
        }
        if (strcmp(name, "FORWARD") == 0) {
            int idx = (int)json_integer_value(json_object_get(json_object_get(e, "args"), "index"));
            double ts = json_number_value(json_object_get(e, "ts"));
            cr_assert(fabs(ts - 10.0 * (idx + 1) - 5.0 * pid) < 1e-3, "pid %d: ts %g", pid, ts);
            complete[pid]++;
        }
    }
    cr_assert(complete[0] == 3 && complete[1] == 3 && named[0] == 1 && named[1] == 1);
    json_decref(doc);

    /* A part that is not an array of events: nothing is written. */
    char *bad = path_in("bad.json");
    const char *const bad_parts[2] = {part[0], "{\"x\": 1}"};
    size_t bad_len[2] = {len[0], 8};
    cr_assert_eq(d5_report_trace_combine(bad, bad_parts, bad_len, 2, 0), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "part 1"), "%s", d5_last_error());
    bad_len[1] = 3;
    cr_assert_eq(d5_report_trace_combine(bad, bad_parts, bad_len, 2, 0), D5_ERR_FORMAT);
    cr_assert_eq(access(bad, F_OK), -1);
    cr_assert_eq(d5_report_trace_events(t, 0, NULL, NAN, &part[0], &len[0]), D5_ERR_INVALID);
    d5_free(part[0]);
    d5_free(part[1]);
    free(bad);
    free(p);
    d5_timer_free(t);
}

Test(report, jsonl_history)
{
    char *text = report_text(d5_report_jsonl, "history.jsonl");
    cr_assert_eq(count_lines(text), 1 + 4 + 2);
    int samples = 0, summaries = 0, line = 0;
    for (char *s = strtok(text, "\n"); s; s = strtok(NULL, "\n"), line++) {
        json_error_t err;
        json_t *o = json_loads(s, 0, &err);
        cr_assert_not_null(o, "line %d: %s", line, err.text);
        const char *type = json_string_value(json_object_get(o, "type"));
        if (line == 0) {
            cr_assert_str_eq(type, "run");
            cr_assert(json_is_object(json_object_get(o, "context")));
        } else if (strcmp(type, "sample") == 0) {
            samples++;
            cr_assert(json_is_integer(json_object_get(o, "step")));
            cr_assert(json_is_number(json_object_get(o, "duration_ns")));
            cr_assert(json_number_value(json_object_get(o, "timestamp_ms")) > 1e12);
        } else {
            cr_assert_str_eq(type, "summary");
            summaries++;
        }
        json_decref(o);
    }
    cr_assert_eq(samples, 4);
    cr_assert_eq(summaries, 2);
    free(text);
}

static char *read_text(const char *fmt, const char *a, const char *b, const char *c)
{
    char path[4096];
    snprintf(path, sizeof path, fmt, a, b, c);
    return slurp(path, NULL);
}

Test(report, mlflow_run_directory_layout)
{
    d5_timer *t = known_timer();
    char *root = path_in("mlruns");
    const char *params[] = {"batch", "64", "model", "lenet"};
    d5_mlflow_params mp = {"timing", "run-a", params, 2};
    char id1[33], id2[33], id0[33];
    cr_assert_eq(d5_report_mlflow(t, root, &mp, id1, sizeof id1), D5_OK);
    mp.run_name = "run-b";
    cr_assert_eq(d5_report_mlflow(t, root, &mp, id2, sizeof id2), D5_OK);
    cr_assert_eq(d5_report_mlflow(t, root, NULL, id0, sizeof id0), D5_OK);
    cr_assert_eq(strlen(id1), 32);
    cr_assert_str_neq(id1, id2);

    /* "Default" is experiment 0, the named experiment the next free id, reused. */
    char *meta0 = read_text("%s/0/meta.yaml%s%s", root, "", "");
    cr_assert_not_null(meta0);
    cr_assert(strstr(meta0, "name: 'Default'"));
    char *meta1 = read_text("%s/1/meta.yaml%s%s", root, "", "");
    cr_assert(strstr(meta1, "name: 'timing'"));
    cr_assert(strstr(meta1, "experiment_id: '1'"));
    cr_assert(strstr(meta1, "lifecycle_stage: active"));

    char *run = read_text("%s/1/%s/meta.yaml%s", root, id1, "");
    cr_assert_not_null(run);
    char want[64];
    snprintf(want, sizeof want, "run_id: %s\n", id1);
    cr_assert(strstr(run, want));
    cr_assert(strstr(run, "run_name: 'run-a'"));
    cr_assert(strstr(run, "status: 3"));
    cr_assert(strstr(run, "experiment_id: '1'"));

    char *metric = read_text("%s/1/%s/metrics/time/FORWARD%s", root, id1, "");
    cr_assert_not_null(metric);
    cr_assert_eq(count_lines(metric), 3);
    unsigned long long ts;
    double v;
    int step;
    char *line = metric;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(sscanf(line, "%llu %lf %d", &ts, &v, &step), 3);
        cr_assert_eq(step, i);
        cr_assert(fabs(v - 1.5e-6 * (i + 1)) < 1e-9, "value %g", v);
        cr_assert_gt(ts, 1000000000000ull); /* milliseconds since the epoch */
        line = strchr(line, '\n') + 1;
    }
    char *median = read_text("%s/1/%s/metrics/time/FORWARD.median_s%s", root, id1, "");
    cr_assert_not_null(median);
    cr_assert_eq(sscanf(median, "%llu %lf %d", &ts, &v, &step), 3);
    cr_assert(fabs(v - 3e-6) < 1e-9);
    char *param = read_text("%s/1/%s/params/batch%s", root, id1, "");
    cr_assert_str_eq(param, "64");
    char *tag = read_text("%s/1/%s/tags/mlflow.runName%s", root, id1, "");
    cr_assert_str_eq(tag, "run-a");
    /* MLflow's system tags: the commit d5 was built from, a local source. */
    d5_build_info b;
    d5_build_info_get(&b);
    char *commit = read_text("%s/1/%s/tags/mlflow.source.git.commit%s", root, id1, "");
    cr_assert_str_eq(commit, b.git_commit);
    free(commit);
    char *stype = read_text("%s/1/%s/tags/mlflow.source.type%s", root, id1, "");
    cr_assert_str_eq(stype, "LOCAL");
    free(stype);
    /* The run starts no later than its first sample (the timer's regions). */
    unsigned long long start = 0;
    const char *st = strstr(run, "\nstart_time: ");
    cr_assert_not_null(st);
    cr_assert_eq(sscanf(st, "\nstart_time: %llu", &start), 1);
    cr_assert_leq(start, (unsigned long long)(d5_timer_origin_unix_ns(t) / 1000000u + 1));
    /* The odd key's name is made safe for a metric name. */
    char *odd = read_text("%s/1/%s/metrics/time/odd_ _key_%s", root, id1, "");
    cr_assert_not_null(odd);
    /* Three entries: the meta.yaml of the experiment and two runs; no staging left. */
    char exp1[4096];
    snprintf(exp1, sizeof exp1, "%s/1", root);
    cr_assert_eq(files_in(exp1), 3);
    free(meta0);
    free(meta1);
    free(run);
    free(metric);
    free(median);
    free(param);
    free(tag);
    free(odd);
    free(root);
    d5_timer_free(t);
}

Test(report, unwritable_paths_name_the_file)
{
    d5_timer *t = known_timer();
    cr_assert_eq(d5_report_json(t, "/nonexistent-d5-dir/x.json"), D5_ERR_IO);
    cr_assert(strstr(d5_last_error(), "/nonexistent-d5-dir/x.json"), "%s", d5_last_error());
    cr_assert_eq(d5_report_csv(t, "/nonexistent-d5-dir/x.csv"), D5_ERR_IO);
    cr_assert_eq(d5_report_trace(t, "/nonexistent-d5-dir/t.json"), D5_ERR_IO);
    cr_assert_eq(d5_report_mlflow(t, "/proc/d5-no", NULL, NULL, 0), D5_ERR_IO);
    d5_timer_free(t);
}

Test(report, an_existing_file_is_replaced_whole)
{
    d5_timer *t = known_timer();
    char *p = path_in("timer.csv");
    FILE *f = fopen(p, "w");
    fputs("old content that is much longer than nothing at all\n", f);
    fclose(f);
    cr_assert_eq(d5_report_csv(t, p), D5_OK);
    char *csv = slurp(p, NULL);
    cr_assert_null(strstr(csv, "old content"));
    cr_assert_eq(files_in(test_dir), 1);
    free(csv);
    free(p);
    d5_timer_free(t);
}

Test(version, build_information_is_complete)
{
    d5_build_info b;
    d5_build_info_get(&b);
    cr_assert_str_eq(b.version, d5_version());
    cr_assert(strlen(b.git_commit) > 0);
    cr_assert(strlen(b.compiler) > 0);
    cr_assert(strlen(b.jansson) > 0);
    cr_assert(strlen(b.zlib) > 0);
    /* The OpenBLAS loaded in the process (the test links it). */
    cr_assert_str_eq(b.openblas, openblas_get_config());
    cr_assert(strstr(b.openblas, "OpenBLAS"));
}
