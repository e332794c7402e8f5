/* An MLflow run directory in the file-store layout. */
#define _GNU_SOURCE
#include "d5/report.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A 32-hex-digit run id from the urandom device (time and pid as fallback). */
static void new_run_id(char id[33])
{
    unsigned char b[16];
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    if (got != sizeof b) {
        uint64_t x = d5__wall_ns() ^ ((uint64_t)getpid() << 32), y = d5__mono_ns();
        memcpy(b, &x, 8);
        memcpy(b + 8, &y, 8);
    }
    for (int i = 0; i < 16; i++) snprintf(id + 2 * i, 3, "%02x", b[i]);
}

/* Quotes a YAML scalar in single quotes (a quote is doubled). */
static void yaml_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

static d5_status write_text(const char *dir, const char *name, const char *text)
{
    char *p = d5__path_join(dir, name);
    if (!p) return D5_ERR_NOMEM;
    d5_status s = d5_file_write_atomic(p, text, strlen(text));
    d5_free(p);
    return s;
}

/* Reads "name: value" from an experiment's meta.yaml. */
static int experiment_name(const char *meta, char *out, size_t size)
{
    FILE *f = fopen(meta, "r");
    if (!f) return 0;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "name: ", 6) == 0) {
            char *v = line + 6;
            v[strcspn(v, "\n")] = '\0';
            size_t n = strlen(v);
            if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) {
                v[n - 1] = '\0';
                v++;
            }
            snprintf(out, size, "%.*s", (int)(size - 1), v);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* Finds the experiment called `name` under root, or creates it with the next
 * free numeric id ("0" is "Default"). */
static d5_status find_or_create_experiment(const char *root, const char *name, char id[32])
{
    DIR *d = opendir(root);
    if (!d)
        return d5_error(D5_ERR_IO, "cannot read MLflow directory '%s': %s", root, strerror(errno));
    long next = 1;
    int found = 0, zero_taken = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        char *end;
        long v = strtol(e->d_name, &end, 10);
        if (*end || e->d_name[0] == '\0' || e->d_name[0] == '.') continue;
        char meta[4096], got[512];
        snprintf(meta, sizeof meta, "%s/%s/meta.yaml", root, e->d_name);
        if (experiment_name(meta, got, sizeof got) && strcmp(got, name) == 0) {
            snprintf(id, 32, "%.31s", e->d_name);
            found = 1;
        } else if (v >= next) {
            next = v + 1;
        }
        zero_taken |= v == 0;
    }
    closedir(d);
    if (found) return D5_OK;
    /* MLflow's own default experiment is "0"; others take the next free id. */
    snprintf(id, 32, "%ld", strcmp(name, "Default") == 0 && !zero_taken ? 0L : next);
    char *dir = d5__path_join(root, id);
    if (!dir) return D5_ERR_NOMEM;
    d5_status s = d5__mkdirs(dir);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = s == D5_OK ? open_memstream(&buf, &len) : NULL;
    if (s == D5_OK && !m) s = d5_error(D5_ERR_NOMEM, "out of memory writing experiment meta");
    if (m) {
        char *abs = realpath(dir, NULL);
        uint64_t now_ms = d5__wall_ns() / 1000000u;
        fprintf(m,
                "artifact_location: file://%s\ncreation_time: %llu\nexperiment_id: '%s'\n"
                "last_update_time: %llu\nlifecycle_stage: active\nname: ",
                abs ? abs : dir, (unsigned long long)now_ms, id, (unsigned long long)now_ms);
        yaml_quoted(m, name);
        fputc('\n', m);
        free(abs);
        fclose(m);
        s = write_text(dir, "meta.yaml", buf);
        free(buf);
    }
    d5_free(dir);
    return s;
}

/* Metric names: MLflow allows letters, digits, _ - . / and space. */
static void metric_name(char *out, size_t size, const char *prefix, const char *key,
                        const char *suffix)
{
    snprintf(out, size, "%s%s%s", prefix, key, suffix);
    for (char *c = out; *c; c++)
        if (!(*c == '_' || *c == '-' || *c == '.' || *c == '/' || *c == ' ' ||
              (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
            *c = '_';
}

static d5_status write_metrics(d5_timer *t, const char *metrics_dir, uint64_t end_ms)
{
    static const struct {
        d5_timer_clock clock;
        const char *prefix;
    } lanes[] = {{D5_TIMER_CPU, "time/"}, {D5_TIMER_CUDA, "time_gpu/"}};
    double origin_ms = (double)d5_timer_origin_unix_ns(t) * 1e-6;
    d5_status s = D5_OK;
    for (size_t l = 0; s == D5_OK && l < 2; l++) {
        if (!d5_timer_has_clock(t, lanes[l].clock)) continue;
        for (d5_timer_id id = 0; s == D5_OK && id < d5_timer_key_count(t); id++) {
            d5_timer_series ser;
            s = d5_timer_series_get(t, id, lanes[l].clock, &ser);
            if (s != D5_OK || ser.n == 0) continue;
            char name[256];
            metric_name(name, sizeof name, lanes[l].prefix, d5_timer_key_name(t, id), "");
            char *path = d5__path_join(metrics_dir, name);
            char *dir = path ? d5_strdup(path, "path") : NULL;
            if (!dir) {
                d5_free(path);
                return D5_ERR_NOMEM;
            }
            *strrchr(dir, '/') = '\0';
            s = d5__mkdirs(dir);
            d5_free(dir);
            d5__afile af;
            if (s == D5_OK) s = d5__afile_open(&af, path);
            if (s == D5_OK) {
                for (size_t i = 0; i < ser.n; i++)
                    fprintf(af.f, "%llu %.17g %zu\n",
                            (unsigned long long)(origin_ms + ser.start_ns[i] * 1e-6),
                            ser.duration_ns[i] * 1e-9, i);
                s = d5__afile_commit(&af);
            }
            d5_free(path);
            d5_stats st;
            if (s == D5_OK) s = d5_stats_compute(ser.duration_ns, ser.n, &st);
            const struct {
                const char *suffix;
                double v;
            } summary[] = {{".median_s", st.median * 1e-9},   {".ci_low_s", st.ci_low * 1e-9},
                           {".ci_high_s", st.ci_high * 1e-9}, {".mean_s", st.mean * 1e-9},
                           {".p95_s", st.p95 * 1e-9},         {".count", (double)st.n}};
            for (size_t k = 0; s == D5_OK && k < sizeof summary / sizeof summary[0]; k++) {
                char line[128];
                metric_name(name, sizeof name, lanes[l].prefix, d5_timer_key_name(t, id),
                            summary[k].suffix);
                snprintf(line, sizeof line, "%llu %.17g 0\n", (unsigned long long)end_ms,
                         summary[k].v);
                char *p = d5__path_join(metrics_dir, name);
                if (!p) return D5_ERR_NOMEM;
                s = d5_file_write_atomic(p, line, strlen(line));
                d5_free(p);
            }
        }
    }
    return s;
}

/* Removes a directory tree that this writer built (files and subdirectories). */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char *p = d5__path_join(path, e->d_name);
            if (!p) break;
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(p);
            else
                unlink(p);
            d5_free(p);
        }
        closedir(d);
    }
    rmdir(path);
}

d5_status d5_report_mlflow(d5_timer *t, const char *mlruns_dir, const d5_mlflow_params *p,
                           char *run_id, size_t run_id_size)
{
    if (!t || !mlruns_dir) return d5_error(D5_ERR_INVALID, "d5_report_mlflow: NULL argument");
    if (run_id && run_id_size < 33)
        return d5_error(D5_ERR_INVALID, "MLflow run id buffer needs 33 bytes, got %zu",
                        run_id_size);
    const char *experiment = p && p->experiment ? p->experiment : "Default";
    const char *run_name = p && p->run_name ? p->run_name : d5_timer_name(t);
    d5_status s = d5_timer_sync(t);
    if (s == D5_OK) s = d5__mkdirs(mlruns_dir);
    char exp_id[32];
    if (s == D5_OK) s = find_or_create_experiment(mlruns_dir, experiment, exp_id);
    if (s != D5_OK) return s;

    char id[33], staging_name[64];
    new_run_id(id);
    snprintf(staging_name, sizeof staging_name, ".%s.partial", id);
    char *exp_dir = d5__path_join(mlruns_dir, exp_id);
    char *staging = exp_dir ? d5__path_join(exp_dir, staging_name) : NULL;
    char *final = exp_dir ? d5__path_join(exp_dir, id) : NULL;
    char *sub[4] = {NULL, NULL, NULL, NULL};
    static const char *const subdirs[4] = {"metrics", "params", "tags", "artifacts"};
    if (!final) s = D5_ERR_NOMEM;
    for (int i = 0; s == D5_OK && i < 4; i++) {
        sub[i] = d5__path_join(staging, subdirs[i]);
        s = sub[i] ? d5__mkdirs(sub[i]) : D5_ERR_NOMEM;
    }
    uint64_t start_ms = d5_timer_origin_unix_ns(t) / 1000000u, end_ms = d5__wall_ns() / 1000000u;
    if (s == D5_OK) s = write_metrics(t, sub[0], end_ms);
    for (size_t i = 0; s == D5_OK && p && i < p->nparams; i++) {
        char name[256];
        metric_name(name, sizeof name, "", p->params[2 * i], "");
        s = write_text(sub[1], name, p->params[2 * i + 1]);
    }
    d5_build_info b;
    d5_build_info_get(&b);
    const char *user = getenv("USER") ? getenv("USER") : "unknown";
    const char *tags[][2] = {{"mlflow.runName", run_name},
                             {"mlflow.source.name", "d5"},
                             {"mlflow.source.type", "LOCAL"},
                             {"mlflow.user", user},
                             {"d5.version", b.version},
                             {"d5.git_commit", b.git_commit},
                             {"d5.cpu_clock", d5_timer_clock_name(t, D5_TIMER_CPU)}};
    for (size_t i = 0; s == D5_OK && i < sizeof tags / sizeof tags[0]; i++)
        s = write_text(sub[2], tags[i][0], tags[i][1]);
    if (s == D5_OK) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (!m) s = d5_error(D5_ERR_NOMEM, "out of memory writing run meta");
        if (m) {
            char *abs = realpath(exp_dir, NULL);
            fprintf(m,
                    "artifact_uri: file://%s/%s/artifacts\nend_time: %llu\nentry_point_name: ''\n"
                    "experiment_id: '%s'\nlifecycle_stage: active\nrun_id: %s\nrun_name: ",
                    abs ? abs : exp_dir, id, (unsigned long long)end_ms, exp_id, id);
            yaml_quoted(m, run_name);
            fprintf(m,
                    "\nrun_uuid: %s\nsource_name: ''\nsource_type: 4\nsource_version: ''\n"
                    "start_time: %llu\nstatus: 3\ntags: []\nuser_id: ",
                    id, (unsigned long long)start_ms);
            yaml_quoted(m, user);
            fputc('\n', m);
            free(abs);
            fclose(m);
            s = write_text(staging, "meta.yaml", buf);
            free(buf);
        }
    }
    if (s == D5_OK && rename(staging, final) != 0)
        s = d5_error(D5_ERR_IO, "cannot move MLflow run into '%s': %s", final, strerror(errno));
    if (s != D5_OK && staging) remove_tree(staging);
    if (s == D5_OK && run_id) snprintf(run_id, run_id_size, "%s", id);
    for (int i = 0; i < 4; i++) d5_free(sub[i]);
    d5_free(exp_dir);
    d5_free(staging);
    d5_free(final);
    return s;
}
