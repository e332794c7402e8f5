/* The run log and its MLflow writer: the records kept, the keys refused, and
 * the run directory read back file by file as MLflow's FileStore reads it
 * (meta.yaml fields, params/ and tags/ files holding their values, metric
 * files of "<timestamp ms> <value> <step>" lines, nested keys as folders). */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(runlog, .init = test_dir_make, .fini = test_dir_remove);

static d5_runlog *new_log(const char *name)
{
    d5_runlog *log = NULL;
    cr_assert_eq(d5_runlog_create(name, &log), D5_OK);
    return log;
}

/* Logs the parameters of `kv` (key, value, key, value, ..., NULL); each must be
 * accepted. */
static void log_params(d5_runlog *log, const char *const *kv)
{
    for (; *kv; kv += 2)
        cr_assert_eq(d5_runlog_param(log, kv[0], kv[1]), D5_OK, "param '%s': %s", kv[0],
                     d5_last_error());
}

Test(runlog, records_in_order_values_replaced_metrics_appended)
{
    d5_runlog *log = new_log("run");
    log_params(log, (const char *const[]){"lr", "0.1", "batch", "64", "lr", "0.2", NULL});
    cr_assert_eq(d5_runlog_tag(log, "host", "h"), D5_OK);
    cr_assert_eq(d5_runlog_metric(log, "loss", 2.5, 1, 1000), D5_OK);
    cr_assert_eq(d5_runlog_metric(log, "loss", 1.5, 2, 2000), D5_OK);
    size_t n;
    const d5_runlog_entry *p = d5_runlog_entries(log, D5_RUNLOG_PARAM, &n);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(p[0].key, "lr");
    cr_assert_str_eq(p[0].text, "0.2");
    cr_assert_str_eq(p[1].key, "batch");
    cr_assert_str_eq(d5_runlog_lookup(log, D5_RUNLOG_TAG, "host"), "h");
    cr_assert_null(d5_runlog_lookup(log, D5_RUNLOG_TAG, "nope"));
    cr_assert_null(d5_runlog_lookup(log, D5_RUNLOG_METRIC, "loss"));
    const d5_runlog_entry *m = d5_runlog_entries(log, D5_RUNLOG_METRIC, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(m[1].value, 1.5);
    cr_assert_eq(m[1].step, 2);
    cr_assert_eq(m[1].timestamp_ms, 2000);
    /* A negative timestamp is now. */
    int64_t before = d5_runlog_start_ms(log);
    cr_assert_eq(d5_runlog_metric(log, "acc", 0.5, 0, -1), D5_OK);
    m = d5_runlog_entries(log, D5_RUNLOG_METRIC, &n);
    cr_assert_geq(m[2].timestamp_ms, before);
    cr_assert_eq(d5_runlog_end_ms(log), -1);
    d5_runlog_finish(log, 1);
    cr_assert_geq(d5_runlog_end_ms(log), before);
    cr_assert_eq(d5_runlog_failed(log), 1);
    cr_assert_str_eq(d5_runlog_name(log), "run");
    d5_runlog_free(log);
    d5_runlog_free(NULL);
}

Test(runlog, bad_keys_and_values_are_refused_by_name)
{
    d5_runlog *log = NULL;
    cr_assert_eq(d5_runlog_create("", &log), D5_ERR_INVALID);
    cr_assert_null(log);
    log = new_log("run");
    const char *bad[] = {"", "/a", "a/", "a/../b", "a:b", "a\\b", "a\nb"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(d5_runlog_param(log, bad[i], "v"), D5_ERR_INVALID, "key '%s'", bad[i]);
        cr_assert_eq(d5_runlog_metric(log, bad[i], 1, 0, 0), D5_ERR_INVALID, "key '%s'", bad[i]);
    }
    cr_assert(strstr(d5_last_error(), "metric"), "%s", d5_last_error());
    cr_assert_eq(d5_runlog_metric(log, "loss", NAN, 3, 0), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "loss") && strstr(d5_last_error(), "3"), "%s",
              d5_last_error());
    cr_assert_eq(d5_runlog_metric(log, "loss", INFINITY, 3, 0), D5_ERR_INVALID);
    cr_assert_eq(d5_runlog_tag(log, "t", NULL), D5_ERR_INVALID);
    size_t n = 1;
    d5_runlog_entries(log, D5_RUNLOG_METRIC, &n);
    cr_assert_eq(n, 0, "nothing was recorded");
    d5_runlog_free(log);
}

Test(runlog, timer_samples_become_metrics_with_steps_and_times)
{
    d5_timer *t = forward_timer();
    d5_runlog *log = new_log("run");
    cr_assert_eq(d5_runlog_add_timer(log, t, "time/"), D5_OK);
    size_t n;
    const d5_runlog_entry *m = d5_runlog_entries(log, D5_RUNLOG_METRIC, &n);
    cr_assert_eq(n, 3 + 6, "three samples and six statistics");
    double origin_ms = (double)d5_timer_origin_unix_ns(t) * 1e-6;
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(m[i].key, "time/FORWARD");
        cr_assert_eq(m[i].step, i);
        /* Samples are rounded to the clock's tick: equal within 1 ns. */
        cr_assert(fabs(m[i].value - 1.5e-6 * (i + 1)) < 1.01e-9, "%g", m[i].value);
        cr_assert(llabs(m[i].timestamp_ms - (int64_t)(origin_ms + 0.01 * (i + 1))) <= 1);
    }
    cr_assert_str_eq(m[3].key, "time/FORWARD.median_s");
    cr_assert(fabs(m[3].value - 3e-6) < 1.01e-9);
    cr_assert_str_eq(m[8].key, "time/FORWARD.count");
    cr_assert_eq(m[8].value, 3);
    cr_assert_eq(d5_runlog_add_timer(log, NULL, "x"), D5_ERR_INVALID);
    d5_runlog_free(log);
    d5_timer_free(t);
}

/* ---- The MLflow run read back ---- */

static char *read_at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *read_at(const char *fmt, ...)
{
    char *path;
    va_list ap;
    va_start(ap, fmt);
    cr_assert_geq(vasprintf(&path, fmt, ap), 0);
    va_end(ap);
    char *text = slurp(path, NULL);
    free(path);
    return text;
}

/* The value of "key: value" in a flat YAML map (quotes removed), or NULL. */
static char *yaml_value(const char *yaml, const char *key)
{
    size_t k = strlen(key);
    for (const char *line = yaml; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, k) != 0 || line[k] != ':' || line[k + 1] != ' ') continue;
        const char *v = line + k + 2, *end = strchr(v, '\n');
        size_t n = end ? (size_t)(end - v) : strlen(v);
        if (n >= 2 && v[0] == '\'' && v[n - 1] == '\'') v++, n -= 2;
        return strndup(v, n);
    }
    return NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every file under `root`, as paths relative to it, sorted, one a line. */
static void list_files(const char *root, const char *rel, char **acc, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    cr_assert_not_null(d, "%s", path);
    struct dirent *e;
    char *names[256];
    int n = 0;
    while ((e = readdir(d)) && n < 256)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        char sub[4096], full[8192];
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat st;
        cr_assert_eq(stat(full, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            size_t add = strlen(sub) + 2;
            *acc = realloc(*acc, *len + add + 1);
            *len += (size_t)sprintf(*acc + *len, "%s/\n", sub);
            list_files(root, sub, acc, len);
        } else {
            *acc = realloc(*acc, *len + strlen(sub) + 2);
            *len += (size_t)sprintf(*acc + *len, "%s\n", sub);
        }
        free(names[i]);
    }
}

/* The lines "<ts> <value> <step>" of a metric file: exactly three fields,
 * integers where MLflow reads int(). Returns the count. */
static int parse_metric(const char *text, int64_t *ts, double *v, int64_t *step, int max)
{
    int n = 0;
    for (const char *line = text; *line && n < max; n++) {
        const char *end = strchr(line, '\n');
        cr_assert_not_null(end, "every line ends with a line break");
        char buf[256];
        snprintf(buf, sizeof buf, "%.*s", (int)(end - line), line);
        long long a, c;
        int used = 0;
        cr_assert_eq(sscanf(buf, "%lld %lf %lld%n", &a, &v[n], &c, &used), 3, "'%s'", buf);
        cr_assert_eq(used, (int)strlen(buf), "three fields only: '%s'", buf);
        cr_assert_eq(strchr(buf, '.') && strchr(buf, '.') < strchr(buf, ' '), 0, "'%s'", buf);
        ts[n] = a;
        step[n] = c;
        line = end + 1;
    }
    return n;
}

Test(runlog, mlflow_run_reads_back_file_by_file)
{
    d5_runlog *log = new_log("lenet on mnist");
    log_params(log, (const char *const[]){"lr", "0.05", "optimizer.beta1", "0.9", "note#1",
                                          "odd name", NULL});
    cr_assert_eq(d5_runlog_tag(log, "mlflow.source.git.commit", "abc123"), D5_OK);
    cr_assert_eq(d5_runlog_tag(log, "host", "it's here"), D5_OK);
    /* A loss curve and an accuracy per epoch, logged interleaved. */
    const double loss[4] = {2.25, 1.125, 0.5625, 1e-300};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(d5_runlog_metric(log, "train/loss", loss[i], i + 1, 1700000000000 + i), D5_OK);
        if (i % 2 == 1)
            cr_assert_eq(d5_runlog_metric(log, "epoch/test_accuracy", 0.25 * i, i / 2 + 1,
                                          1700000000100 + i),
                         D5_OK);
    }
    d5_runlog_finish(log, 0);
    char *root;
    cr_assert_geq(asprintf(&root, "%s/mlruns", test_dir), 0);
    char id[33];
    cr_assert_eq(d5_runlog_write_mlflow(log, root, "d5 tests", id, sizeof id), D5_OK);
    cr_assert_eq(strlen(id), 32);
    for (int i = 0; i < 32; i++) cr_assert(strchr("0123456789abcdef", id[i]), "%s", id);

    /* Every file of the layout, and nothing else. */
    char *files = NULL;
    size_t len = 0;
    list_files(root, "", &files, &len);
    char want[4096];
    snprintf(want, sizeof want,
             "1/\n1/%s/\n1/%s/artifacts/\n1/%s/meta.yaml\n1/%s/metrics/\n"
             "1/%s/metrics/epoch/\n1/%s/metrics/epoch/test_accuracy\n1/%s/metrics/train/\n"
             "1/%s/metrics/train/loss\n1/%s/params/\n1/%s/params/lr\n1/%s/params/note_1\n"
             "1/%s/params/optimizer.beta1\n1/%s/tags/\n1/%s/tags/d5.version\n1/%s/tags/host\n"
             "1/%s/tags/mlflow.runName\n1/%s/tags/mlflow.source.git.commit\n"
             "1/%s/tags/mlflow.source.name\n1/%s/tags/mlflow.source.type\n"
             "1/%s/tags/mlflow.user\n1/meta.yaml\n",
             id, id, id, id, id, id, id, id, id, id, id, id, id, id, id, id, id, id, id, id);
    cr_assert_str_eq(files, want);
    free(files);

    /* The experiment. */
    char *exp = read_at("%s/1/meta.yaml", root);
    char *v = yaml_value(exp, "name");
    cr_assert_str_eq(v, "d5 tests");
    free(v);
    cr_assert_str_eq((v = yaml_value(exp, "experiment_id")), "1");
    free(v);
    cr_assert_str_eq((v = yaml_value(exp, "lifecycle_stage")), "active");
    free(v);
    v = yaml_value(exp, "artifact_location");
    cr_assert(v && strncmp(v, "file:///", 8) == 0, "%s", v);
    free(v);
    free(exp);

    /* The run: every field of MLflow's RunInfo. */
    char *run = read_at("%s/1/%s/meta.yaml", root, id);
    const char *fields[] = {"artifact_uri",    "end_time",    "entry_point_name", "experiment_id",
                            "lifecycle_stage", "run_id",      "run_name",         "run_uuid",
                            "source_name",     "source_type", "source_version",   "start_time",
                            "status",          "tags",        "user_id",          "deleted_time"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        v = yaml_value(run, fields[i]);
        cr_assert_not_null(v, "meta.yaml lacks %s:\n%s", fields[i], run);
        free(v);
    }
    cr_assert_str_eq((v = yaml_value(run, "run_id")), id);
    free(v);
    cr_assert_str_eq((v = yaml_value(run, "run_uuid")), id);
    free(v);
    cr_assert_str_eq((v = yaml_value(run, "run_name")), "lenet on mnist");
    free(v);
    cr_assert_str_eq((v = yaml_value(run, "experiment_id")), "1");
    free(v);
    cr_assert_str_eq((v = yaml_value(run, "status")), "3"); /* FINISHED */
    free(v);
    cr_assert_str_eq((v = yaml_value(run, "source_type")), "4"); /* LOCAL */
    free(v);
    cr_assert_str_eq((v = yaml_value(run, "tags")), "[]");
    free(v);
    v = yaml_value(run, "artifact_uri");
    char suffix[64];
    snprintf(suffix, sizeof suffix, "/1/%s/artifacts", id);
    cr_assert(v && strncmp(v, "file:///", 8) == 0 &&
                  strcmp(v + strlen(v) - strlen(suffix), suffix) == 0,
              "%s", v);
    free(v);
    /* The run starts at its first metric when that is earlier than the log. */
    v = yaml_value(run, "start_time");
    cr_assert_str_eq(v, "1700000000000");
    free(v);
    v = yaml_value(run, "end_time");
    cr_assert_eq(strtoll(v, NULL, 10), d5_runlog_end_ms(log));
    free(v);
    free(run);

    /* Parameters and tags: the value, no line break. */
    char *t = read_at("%s/1/%s/params/lr", root, id);
    cr_assert_str_eq(t, "0.05");
    free(t);
    cr_assert_str_eq((t = read_at("%s/1/%s/params/note_1", root, id)), "odd name");
    free(t);
    cr_assert_str_eq((t = read_at("%s/1/%s/tags/mlflow.runName", root, id)), "lenet on mnist");
    free(t);
    cr_assert_str_eq((t = read_at("%s/1/%s/tags/mlflow.source.git.commit", root, id)), "abc123");
    free(t);
    cr_assert_str_eq((t = read_at("%s/1/%s/tags/mlflow.source.type", root, id)), "LOCAL");
    free(t);
    cr_assert_str_eq((t = read_at("%s/1/%s/tags/host", root, id)), "it's here");
    free(t);
    t = read_at("%s/1/%s/tags/mlflow.user", root, id);
    cr_assert(t && *t);
    free(t);

    /* Metrics: each series in the order logged, values exact. */
    int64_t ts[8], step[8];
    double val[8];
    t = read_at("%s/1/%s/metrics/train/loss", root, id);
    cr_assert_eq(parse_metric(t, ts, val, step, 8), 4);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(val[i], loss[i], "%.17g", val[i]);
        cr_assert_eq(step[i], i + 1);
        cr_assert_eq(ts[i], 1700000000000 + i);
    }
    free(t);
    t = read_at("%s/1/%s/metrics/epoch/test_accuracy", root, id);
    cr_assert_eq(parse_metric(t, ts, val, step, 8), 2);
    cr_assert_eq(val[0], 0.25);
    cr_assert_eq(step[0], 1);
    cr_assert_eq(val[1], 0.75);
    cr_assert_eq(step[1], 2);
    free(t);

    /* A second run of the experiment takes the same experiment id; a failed
     * run is FAILED (4). */
    d5_runlog *log2 = new_log("second");
    d5_runlog_finish(log2, 1);
    char id2[33];
    cr_assert_eq(d5_runlog_write_mlflow(log2, root, "d5 tests", id2, sizeof id2), D5_OK);
    cr_assert_str_neq(id, id2);
    run = read_at("%s/1/%s/meta.yaml", root, id2);
    cr_assert_not_null(run);
    cr_assert_str_eq((v = yaml_value(run, "status")), "4");
    free(v);
    free(run);
    d5_runlog_free(log2);
    d5_runlog_free(log);
    free(root);
}

Test(runlog, mlflow_names_that_collide_are_refused_and_nothing_is_left)
{
    char *root;
    cr_assert_geq(asprintf(&root, "%s/mlruns", test_dir), 0);
    d5_runlog *log = new_log("run");
    cr_assert_eq(d5_runlog_metric(log, "loss", 1, 0, 0), D5_OK);
    cr_assert_eq(d5_runlog_metric(log, "loss/train", 1, 0, 0), D5_OK);
    cr_assert_eq(d5_runlog_write_mlflow(log, root, NULL, NULL, 0), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'loss'") && strstr(d5_last_error(), "'loss/train'"), "%s",
              d5_last_error());
    d5_runlog_free(log);
    log = new_log("run");
    log_params(log, (const char *const[]){"a#b", "1", "a%b", "2", NULL});
    cr_assert_eq(d5_runlog_write_mlflow(log, root, NULL, NULL, 0), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "a_b"), "%s", d5_last_error());
    /* The Default experiment (0) exists; no run folder, finished or not. */
    char *files = NULL;
    size_t len = 0;
    list_files(root, "", &files, &len);
    cr_assert_str_eq(files, "0/\n0/meta.yaml\n");
    free(files);
    char id[8];
    cr_assert_eq(d5_runlog_write_mlflow(log, root, NULL, id, sizeof id), D5_ERR_INVALID);
    cr_assert_eq(d5_runlog_write_mlflow(log, "/proc/d5-no", NULL, NULL, 0), D5_ERR_IO);
    cr_assert(strstr(d5_last_error(), "/proc/d5-no"), "%s", d5_last_error());
    d5_runlog_free(log);
    free(root);
}
