/* d5 train --out (the results folder), --mlflow (the run read back), and the
 * context block and schema version of every command's --json. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(train_out, .timeout = D5_TIMEOUT(300));

static json_t *load(const char *path)
{
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    cr_assert_not_null(doc, "%s: %s", path, e.text);
    return doc;
}

/* The names in a folder (no "." entries), sorted, comma-separated. */
static char *names_in(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    char *v[64];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) v[n++] = strdup(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(v[j], v[i]) < 0) {
                char *t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
    char *out = calloc(1, 4096);
    for (int i = 0; i < n; i++) {
        strcat(out, i ? "," : "");
        strcat(out, v[i]);
        free(v[i]);
    }
    return out;
}

/* The one run folder under an MLflow experiment folder. */
static char *only_run(const char *exp)
{
    char *names = names_in(exp), *comma = strchr(names, ',');
    cr_assert_not_null(comma, "%s", names);
    *comma = '\0';
    cr_assert_eq(strlen(names), 32, "the run id: %s", names);
    cr_assert_str_eq(comma + 1, "meta.yaml");
    char *run = path_join(exp, names);
    free(names);
    return run;
}

/* A metric file's lines "<ts> <value> <step>": the values and steps. */
static int metric_lines(const char *path, double *v, long long *step, int max)
{
    char *text = slurp(path, NULL);
    cr_assert_not_null(text, "%s", path);
    int n = 0;
    for (char *line = text; *line && n < max; n++) {
        long long ts;
        int used = 0;
        cr_assert_eq(sscanf(line, "%lld %lf %lld%n", &ts, &v[n], &step[n], &used), 3, "%s", line);
        cr_assert_eq(line[used], '\n', "three fields: %s", line);
        cr_assert_gt(ts, 1000000000000ll, "milliseconds since the epoch");
        line += used + 1;
    }
    free(text);
    return n;
}

Test(train_out, folder_and_mlflow_run_hold_the_same_run)
{
    char *dir = tmpdir_make(), *out, *err;
    char *folder = path_join(dir, "run"), *mlruns = path_join(dir, "mlruns");
    char *wandb = path_join(dir, "wandb");
    char *json_path = path_join(dir, "train-json.json");
    int rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--batch", "16", "--max-batches",
                 "6", "--threads", "1", "--lr", "0.02", "--warmup", "4", "--out", folder,
                 "--mlflow", mlruns, "--wandb", wandb, "--json", json_path);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    char want[4200];
    snprintf(want, sizeof want,
             "results in %s/: summary.txt train.json epochs.csv steps.csv "
             "regions.csv trace.json system.csv system.json memory.json memory_timeline.csv",
             folder);
    cr_assert(strstr(out, want), "%s", out);
    char *names = names_in(folder);
    cr_assert_str_eq(names, "epochs.csv,memory.json,memory_timeline.csv,regions.csv,steps.csv,"
                            "summary.txt,system.csv,system.json,trace.json,train.json");
    free(names);

    /* The system report and the memory report of step 2 (--memory-step's
     * default), also in what was printed. */
    cr_assert(strstr(out, "\nsystem: CPU ") && strstr(out, "memory of training step 2"), "%s", out);
    char *p0 = path_join(folder, "system.csv"), *t0 = slurp(p0, NULL);
    cr_assert(t0 && strncmp(t0, "time_s,cpu_percent,cpu0_percent,", 32) == 0, "%s", t0);
    free(t0);
    free(p0);
    p0 = path_join(folder, "memory.json");
    json_t *mem = load(p0);
    free(p0);
    json_t *peak = json_object_get(mem, "peak");
    cr_assert_gt(json_integer_value(json_object_get(peak, "bytes")), 0);
    cr_assert_gt(json_array_size(json_object_get(mem, "operators")), 0);

    /* --json holds every figure of the system line and of the memory report
     * that were printed. */
    json_t *js = load(json_path), *sys = json_object_get(js, "system");
    const char *line0 = strstr(out, "\nsystem: ") + 9, *line1 = strchr(line0, '\n');
    cr_assert_not_null(sys, "no system block in --json");
    cr_assert_eq(strlen(json_string_value(json_object_get(sys, "line"))), (size_t)(line1 - line0));
    cr_assert(strncmp(json_string_value(json_object_get(sys, "line")), line0,
                      (size_t)(line1 - line0)) == 0,
              "%s", json_string_value(json_object_get(sys, "line")));
    char figure[128];
    snprintf(figure, sizeof figure, "CPU %.1f%% mean (max %.1f%%)",
             json_number_value(json_object_get(sys, "cpu_percent_mean")),
             json_number_value(json_object_get(sys, "cpu_percent_max")));
    cr_assert(strncmp(line0, figure, strlen(figure)) == 0, "'%s' vs %.80s", figure, line0);
    d5_format_bytes(json_number_value(json_object_get(sys, "peak_rss_bytes")), figure,
                    sizeof figure);
    cr_assert(strstr(line0, figure) && strstr(line0, figure) < line1, "peak RSS %s: %.200s", figure,
              line0);
    json_t *ecpu = json_object_get(sys, "energy_cpu");
    if (json_is_true(json_object_get(ecpu, "available")))
        cr_assert(json_number_value(json_object_get(ecpu, "joules_per_step")) > 0);
    else
        cr_assert(strstr(line0, json_string_value(json_object_get(ecpu, "reason"))),
                  "the reason printed: %.300s", line0);
    cr_assert_not_null(json_object_get(sys, "energy_gpu"));
    json_t *jmem = json_object_get(js, "memory");
    cr_assert_eq(json_integer_value(json_object_get(jmem, "step")), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(jmem, "peak"), "bytes")),
                 json_integer_value(json_object_get(peak, "bytes")));
    double b = (double)json_integer_value(json_object_get(json_object_get(jmem, "peak"), "bytes"));
    int u = 0;
    for (; b >= 1024 && u < 4; u++) b /= 1024; /* as the memory report prints bytes */
    snprintf(figure, sizeof figure, u ? "%.2f %s" : "%.0f %s", b,
             (const char *[]){"B", "KiB", "MiB", "GiB", "TiB"}[u]);
    char printed[160];
    snprintf(printed, sizeof printed, "memory peak %s (planned ", figure);
    cr_assert(strstr(out, printed), "'%s' not printed", printed);
    size_t nops = json_array_size(json_object_get(jmem, "operators"));
    cr_assert(nops > 0 && nops <= json_array_size(json_object_get(mem, "operators")), "%zu", nops);
    cr_assert_not_null(json_object_get(json_object_get(js, "threads"), "cores"));
    json_decref(js);
    free(json_path);
    json_decref(mem);
    p0 = path_join(folder, "memory_timeline.csv");
    t0 = slurp(p0, NULL);
    cr_assert(t0 && strncmp(t0, "time_ms,live_bytes,delta_bytes,label\n", 37) == 0, "%s", t0);
    cr_assert_gt(count_lines(t0), 4, "%s", t0);
    free(t0);
    free(p0);

    /* summary.txt: what was printed, the configuration first. */
    char *p = path_join(folder, "summary.txt"), *text = slurp(p, NULL);
    cr_assert(text && strncmp(text, "# d5 train", 10) == 0, "%s", text);
    cr_assert(strstr(text, "train loss") && strstr(text, "regions") && strstr(text, "OPTIMIZER"),
              "%s", text);
    free(text);
    free(p);

    /* train.json: the --json document with its context. */
    p = path_join(folder, "train.json");
    json_t *doc = load(p);
    free(p);
    cr_assert_eq(json_integer_value(json_object_get(doc, "schema_version")), 1);
    json_t *ctx = json_object_get(doc, "context");
    cr_assert_eq(json_integer_value(json_object_get(ctx, "schema_version")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(ctx, "command")), "d5 train");
    cr_assert_not_null(json_object_get(json_object_get(ctx, "d5"), "git_commit"));
    json_t *opts = json_object_get(json_object_get(ctx, "configuration"), "options");
    cr_assert_eq(json_integer_value(json_object_get(opts, "batch")), 16);
    cr_assert_str_eq(json_string_value(json_object_get(opts, "optimizer")), "momentum");
    json_t *losses = json_object_get(doc, "losses"), *lrs = json_object_get(doc, "lrs");
    cr_assert_eq(json_array_size(losses), 6);

    /* steps.csv: a row per step, its loss that of train.json, its learning
     * rate the warm-up's lr (k + 1) / 4 and then lr, samples/s = 16 / seconds. */
    p = path_join(folder, "steps.csv");
    text = slurp(p, NULL);
    free(p);
    cr_assert(strncmp(text, "step,epoch,loss,lr,seconds,samples_per_second\n", 46) == 0, "%s",
              text);
    cr_assert_eq(count_lines(text), 7, "%s", text);
    double step_loss[6];
    char *line = strchr(text, '\n') + 1;
    for (int k = 0; k < 6; k++) {
        int step, epoch;
        double loss, lr, sec, sps;
        cr_assert_eq(sscanf(line, "%d,%d,%lf,%lf,%lf,%lf", &step, &epoch, &loss, &lr, &sec, &sps),
                     6, "%s", line);
        cr_assert_eq(step, k + 1);
        cr_assert_eq(epoch, 1);
        double jl = json_real_value(json_array_get(losses, (size_t)k));
        cr_assert(fabs(loss - jl) <= 1e-7 * fabs(jl), "%g %g", loss, jl);
        double want_lr = k < 4 ? 0.02 * (k + 1) / 4 : 0.02;
        cr_assert(fabs(lr - want_lr) < 1e-12, "step %d: lr %g, expected %g", k + 1, lr, want_lr);
        cr_assert(fabs(json_real_value(json_array_get(lrs, (size_t)k)) - want_lr) < 1e-12);
        cr_assert_gt(sec, 0);
        cr_assert(fabs(sps - 16 / sec) <= 1e-6 * sps, "%g %g", sps, 16 / sec);
        step_loss[k] = loss;
        line = strchr(line, '\n') + 1;
    }
    free(text);

    /* epochs.csv, regions.csv, trace.json. */
    p = path_join(folder, "epochs.csv");
    text = slurp(p, NULL);
    cr_assert_eq(count_lines(text), 2, "%s", text);
    cr_assert(strncmp(text, "epoch,batches,samples,train_loss", 32) == 0, "%s", text);
    cr_assert(strstr(text, "\n1,6,96,"), "%s", text);
    free(text);
    free(p);
    p = path_join(folder, "regions.csv");
    text = slurp(p, NULL);
    cr_assert(strncmp(text, "key,clock,n,", 12) == 0, "%s", text);
    cr_assert(strstr(text, "\nBATCH,") && strstr(text, "\nOPTIMIZER,"), "%s", text);
    free(text);
    free(p);
    p = path_join(folder, "trace.json");
    json_t *trace = load(p);
    free(p);
    size_t batches = 0, counters = 0, i;
    json_t *ev;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, ev)
    {
        const char *name = json_string_value(json_object_get(ev, "name"));
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        batches += name && strcmp(name, "BATCH") == 0;
        counters += ph && strcmp(ph, "C") == 0;
    }
    cr_assert_eq(batches, 6);
    cr_assert_gt(counters, 0, "the system and memory counter tracks");
    json_decref(trace);

    /* The MLflow run: parameters with every option's value, tags, and the
     * same loss curve as steps.csv. */
    char *exp = path_join(mlruns, "1"), *run = only_run(exp);
    char *meta = slurp(strcat(strcpy(want, exp), "/meta.yaml"), NULL);
    cr_assert(strstr(meta, "name: 'd5 train'"), "%s", meta);
    free(meta);
    const char *params[][2] = {{"batch", "16"},           {"lr", "0.02"},          {"warmup", "4"},
                               {"optimizer", "momentum"}, {"sampler", "shuffled"}, {"epochs", "1"},
                               {"checkpoint", "none"},    {"batch.global", "16"},  {"ranks", "1"}};
    for (size_t k = 0; k < sizeof params / sizeof params[0]; k++) {
        snprintf(want, sizeof want, "%s/params/%s", run, params[k][0]);
        text = slurp(want, NULL);
        cr_assert_not_null(text, "%s", want);
        cr_assert_str_eq(text, params[k][1], "parameter %s", params[k][0]);
        free(text);
    }
    const char *tags[] = {"mlflow.runName",     "mlflow.user", "mlflow.source.git.commit",
                          "mlflow.source.name", "d5.version",  "d5.compiler",
                          "lib.openblas",       "host"};
    for (size_t k = 0; k < sizeof tags / sizeof tags[0]; k++) {
        snprintf(want, sizeof want, "%s/tags/%s", run, tags[k]);
        text = slurp(want, NULL);
        cr_assert(text && *text, "tag %s", tags[k]);
        free(text);
    }
    snprintf(want, sizeof want, "%s/tags/mlflow.runName", run);
    text = slurp(want, NULL);
    cr_assert_str_eq(text, "lenet on synthetic");
    free(text);
    double v[16];
    long long st[16];
    snprintf(want, sizeof want, "%s/metrics/train/loss", run);
    cr_assert_eq(metric_lines(want, v, st, 16), 6);
    for (int k = 0; k < 6; k++) {
        cr_assert_eq(st[k], k + 1);
        cr_assert(fabs(v[k] - step_loss[k]) <= 1e-7 * fabs(step_loss[k]));
    }
    snprintf(want, sizeof want, "%s/metrics/train/lr", run);
    cr_assert_eq(metric_lines(want, v, st, 16), 6);
    cr_assert(fabs(v[0] - 0.005) < 1e-12 && fabs(v[5] - 0.02) < 1e-12, "%g %g", v[0], v[5]);
    snprintf(want, sizeof want, "%s/metrics/time/BATCH", run);
    cr_assert_eq(metric_lines(want, v, st, 16), 6);
    snprintf(want, sizeof want, "%s/metrics/epoch/train_accuracy", run);
    cr_assert_eq(metric_lines(want, v, st, 16), 1);
    cr_assert_eq(st[0], 1);
    cr_assert(v[0] >= 0 && v[0] <= 1);
    /* The sampler's series under MLflow's own system metric names. */
    snprintf(want, sizeof want, "%s/metrics/system/cpu_utilization_percentage", run);
    int nsys = metric_lines(want, v, st, 16);
    cr_assert_gt(nsys, 0);
    cr_assert(v[0] >= 0 && v[0] <= 100, "%g", v[0]);

    /* The W&B offline run: one run folder holding its .wandb file. */
    char *wnames = names_in(wandb);
    cr_assert(strncmp(wnames, "offline-run-", 12) == 0 && !strchr(wnames, ','), "%s", wnames);
    snprintf(want, sizeof want, "%s/%s/run-%s.wandb", wandb, wnames, strrchr(wnames, '-') + 1);
    size_t wlen = 0;
    char *wfile = slurp(want, &wlen);
    cr_assert(wfile && wlen > 7 && memcmp(wfile, ":W&B", 4) == 0, "%s", want);
    free(wfile);
    free(wnames);
    free(wandb);

    /* A second run into the same folder is refused; the folder stays. */
    free(out);
    free(err);
    rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--max-batches", "1", "--out", folder);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "already exists"), "%s", err);
    names = names_in(folder);
    cr_assert_str_eq(names, "epochs.csv,memory.json,memory_timeline.csv,regions.csv,steps.csv,"
                            "summary.txt,system.csv,system.json,trace.json,train.json");
    free(names);

    /* Without the sampler and the memory report, their files are absent. */
    free(out);
    free(err);
    char *bare = path_join(dir, "bare");
    rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--max-batches", "3", "--system-hz",
             "0", "--memory-step", "0", "--out", bare);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    names = names_in(bare);
    cr_assert_str_eq(names, "epochs.csv,regions.csv,steps.csv,summary.txt,trace.json,train.json");
    cr_assert_null(strstr(out, "\nsystem: "), "%s", out);
    free(names);
    free(bare);
    json_decref(doc);
    free(exp);
    free(run);
    free(folder);
    free(mlruns);
    run_done(out, err, dir);
}

/* The context every --json document carries. */
static void check_context(const char *path, const char *command, int with_options)
{
    json_t *doc = load(path);
    cr_assert_eq(json_integer_value(json_object_get(doc, "schema_version")), 1, "%s", path);
    json_t *ctx = json_object_get(doc, "context");
    cr_assert(json_is_object(ctx), "%s", path);
    cr_assert_eq(json_integer_value(json_object_get(ctx, "schema_version")), 1, "%s", path);
    cr_assert_str_eq(json_string_value(json_object_get(ctx, "command")), command);
    cr_assert(json_is_string(json_object_get(ctx, "date")), "%s", path);
    cr_assert(json_is_string(json_object_get(ctx, "host_name")), "%s", path);
    json_t *d5 = json_object_get(ctx, "d5");
    cr_assert(json_is_string(json_object_get(d5, "version")), "%s", path);
    cr_assert(json_is_string(json_object_get(d5, "git_commit")), "%s", path);
    cr_assert(json_is_string(json_object_get(d5, "compiler")), "%s", path);
    json_t *m = json_object_get(ctx, "machine");
    cr_assert(json_integer_value(json_object_get(m, "logical_cpus")) >= 1, "%s", path);
    json_t *conf = json_object_get(ctx, "configuration");
    json_t *args = json_object_get(conf, "arguments");
    cr_assert(json_array_size(args) >= 2, "%s", path);
    cr_assert_str_eq(json_string_value(json_array_get(args, 1)), command + 3);
    if (with_options) cr_assert(json_is_object(json_object_get(conf, "options")), "%s", path);
    json_decref(doc);
}

/* A stand-in for `d5 train --distributed` under the launcher of d5 scaling:
 * it writes the "distributed" object that d5 scaling reads. */
static const char fake_train[] =
    "#!/bin/sh\n"
    "json=\n"
    "while [ $# -gt 0 ]; do [ \"$1\" = --json ] && json=$2; shift; done\n"
    "echo '{\"distributed\": {\"scheme\": \"dsgd\", \"comm\": \"mpi\", \"ranks\": 1, "
    "\"workers\": 1, \"servers\": 0, \"global_batch\": 64, \"local_batch\": 64, "
    "\"oversubscribed\": false, \"steps\": 10, \"samples_per_second\": 1000, "
    "\"step_time_s\": {\"median\": 0.064, \"ci_low\": 0.06, \"ci_high\": 0.07}}}' > \"$json\"\n";

Test(train_out, every_json_has_context_and_schema_version)
{
    char *dir = tmpdir_make(), *out, *err;
    char *model = path_join(dir, "lenet.onnx"), *json = path_join(dir, "out.json");
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "--batch", "2", "-o", model), 0, "%s", err);
    free(out);
    free(err);
    char node[] = "/usr/share/libonnx-testdata/data/node/test_abs";
    struct stat st;
    const char *const *cases[] = {
        (const char *const[]){"d5 machine", "machine", "--no-measure", "--json", json, NULL},
        (const char *const[]){"d5 summary", "summary", model, "--json", json, NULL},
        (const char *const[]){"d5 run", "run", model, "--time", "0.05", "--no-overhead", "--json",
                              json, NULL},
        (const char *const[]){"d5 test-operator", "test-operator", "Relu", "--backend", "ref",
                              "--max-time", "0.05", "--json", json, NULL},
        (const char *const[]){"d5 train", "train", "--dataset", "synthetic", "--batch", "16",
                              "--max-batches", "2", "--json", json, NULL},
        (const char *const[]){"d5 allreduce", "allreduce", "-b", "8", "-e", "64", "--time", "0.05",
                              "--json", json, NULL},
        (const char *const[]){"d5 onnx-test", "onnx-test", node, "--json", json, NULL},
    };
    int options[] = {1, 1, 0, 1, 1, 0, 1};
    /* d5 allreduce starts MPI: as the MPI tests run it (tests/CMakeLists.txt),
     * with Open MPI's allocations kept until exit suppressed under ASan. */
    const char *asan = getenv("ASAN_OPTIONS");
    char *opts;
    cr_assert_geq(asprintf(&opts, "%s%sfast_unwind_on_malloc=0:malloc_context_size=30",
                           asan ? asan : "", asan && *asan ? ":" : ""),
                  0);
    setenv("ASAN_OPTIONS", opts, 1);
    free(opts);
    setenv("LSAN_OPTIONS",
           "suppressions=" D5_SOURCE_DIR "/tests/level3/lsan.supp:print_suppressions=0", 1);
    setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *const *c = cases[k];
        if (strcmp(c[0], "d5 onnx-test") == 0 && stat(node, &st) != 0) continue;
        unlink(json);
        int rc = run_d5(&out, &err, c + 1);
        cr_assert(rc == 0, "%s: exit %d: %s", c[0], rc, err);
        check_context(json, c[0], options[k]);
        free(out);
        free(err);
    }
    /* d5 scaling around a stand-in for d5 train (no MPI needed). */
    char *fake_dir = path_join(dir, "fake"), *fake = path_join(fake_dir, "d5");
    cr_assert_eq(mkdir(fake_dir, 0777), 0);
    FILE *f = fopen(fake, "w");
    cr_assert_not_null(f);
    fputs(fake_train, f);
    fclose(f);
    cr_assert_eq(chmod(fake, 0755), 0);
    unlink(json);
    int rc = RUN(&out, &err, "scaling", "--ranks", "1", "--mode", "strong", "--launcher",
                 "env RANKS={n}", "--json", json, "--", fake, "train", "--distributed", "dsgd");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    check_context(json, "d5 scaling", 1);
    /* The scaling document's own context entries stay beside core's. */
    json_t *doc = load(json);
    json_t *ctx = json_object_get(doc, "context");
    cr_assert_str_eq(json_string_value(json_object_get(ctx, "mode")), "strong");
    cr_assert_eq(json_array_size(json_object_get(doc, "series")), 1);
    json_decref(doc);
    /* Nothing but the documents is left beside them. */
    char *names = names_in(dir);
    cr_assert_str_eq(names, "fake,lenet.onnx,out.json");
    free(names);
    free(fake);
    free(fake_dir);
    free(model);
    free(json);
    run_done(out, err, dir);
}
