/* An MLflow run directory in the file-store layout, from a run log; the
 * region timer as metrics of a run log.
 *
 * The layout is that of MLflow's FileStore (mlflow/store/tracking/
 * file_store.py), which `mlflow ui --backend-store-uri DIR` reads:
 *
 *   DIR/<experiment id>/meta.yaml           the experiment: name, id, artifact location
 *   DIR/<experiment id>/<run id>/meta.yaml  the run: ids, name, status, times, user
 *   .../<run id>/params/<key>               the value, no line break
 *   .../<run id>/tags/<key>                 the value, no line break
 *   .../<run id>/metrics/<key>              "<timestamp ms> <value> <step>" per line
 *   .../<run id>/artifacts/                 empty
 *
 * A key with '/' is a path: its folders are created. The store reads a run
 * only when every file name is a valid MLflow name (letters, digits, '_', '-',
 * '.', ' ' and '/', and a path that normalises to itself), so keys are made
 * valid here. */
#define _GNU_SOURCE
#include "d5/report.h"
#include "d5/runlog.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* MLflow's RunStatus and SourceType values (mlflow/protos/service.proto). */
enum { MLFLOW_FINISHED = 3, MLFLOW_FAILED = 4, MLFLOW_SOURCE_LOCAL = 4 };

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

/* "<prefix><key><suffix>" as a valid MLflow name: characters other than
 * letters, digits, '_', '-', '.', ' ' and '/' become '_', and so does a '/'
 * at either end or after another '/', and the second '.' of "..", so that the
 * name is a relative path that normalises to itself. */
static void mlflow_name(char *out, size_t size, const char *prefix, const char *key,
                        const char *suffix)
{
    snprintf(out, size, "%s%s%s", prefix, key, suffix);
    size_t n = strlen(out);
    for (size_t i = 0; i < n; i++) {
        char c = out[i];
        int ok = c == '_' || c == '-' || c == '.' || c == '/' || c == ' ' ||
                 (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!ok) out[i] = '_';
        if (out[i] == '/' && (i == 0 || i + 1 == n || out[i - 1] == '/')) out[i] = '_';
        if (out[i] == '.' && i > 0 && out[i - 1] == '.') out[i] = '_';
    }
    /* A path segment "." alone: "./a", "a/./b", "a/." */
    for (size_t i = 0; i < n; i++)
        if (out[i] == '.' && (i == 0 || out[i - 1] == '/') && (i + 1 == n || out[i + 1] == '/'))
            out[i] = '_';
}

/* ---- The region timer into a run log ---- */

d5_status d5_runlog_add_timer(d5_runlog *log, d5_timer *t, const char *prefix)
{
    if (!log || !t || !prefix)
        return d5_error(D5_ERR_INVALID, "d5_runlog_add_timer: NULL argument");
    /* CUDA events go beside the CPU clock's metrics: "time/" -> "time_gpu/". */
    char gpu_prefix[256];
    size_t plen = strlen(prefix);
    if (plen + 6 >= sizeof gpu_prefix)
        return d5_error(D5_ERR_INVALID, "d5_runlog_add_timer: prefix '%s' is too long", prefix);
    int slash = plen > 0 && prefix[plen - 1] == '/';
    snprintf(gpu_prefix, sizeof gpu_prefix, "%.*s%sgpu/", (int)(plen - (size_t)slash), prefix,
             plen > (size_t)slash ? "_" : "");
    const struct {
        d5_timer_clock clock;
        const char *prefix;
    } lanes[] = {{D5_TIMER_CPU, prefix}, {D5_TIMER_CUDA, gpu_prefix}};
    d5_status s = d5_timer_sync(t);
    double origin_ms = (double)d5_timer_origin_unix_ns(t) * 1e-6;
    int64_t end_ms = (int64_t)(d5__wall_ns() / 1000000u);
    for (size_t l = 0; s == D5_OK && l < 2; l++) {
        if (!d5_timer_has_clock(t, lanes[l].clock)) continue;
        for (d5_timer_id id = 0; s == D5_OK && id < d5_timer_key_count(t); id++) {
            d5_timer_series ser;
            s = d5_timer_series_get(t, id, lanes[l].clock, &ser);
            if (s != D5_OK || ser.n == 0) continue;
            char name[512];
            const char *key = d5_timer_key_name(t, id);
            mlflow_name(name, sizeof name, lanes[l].prefix, key, "");
            for (size_t i = 0; s == D5_OK && i < ser.n; i++)
                s = d5_runlog_metric(log, name, ser.duration_ns[i] * 1e-9, (int64_t)i,
                                     (int64_t)(origin_ms + ser.start_ns[i] * 1e-6));
            d5_stats st;
            memset(&st, 0, sizeof st);
            if (s == D5_OK) s = d5_stats_compute(ser.duration_ns, ser.n, &st);
            const struct {
                const char *suffix;
                double v;
            } summary[] = {{".median_s", st.median * 1e-9},   {".ci_low_s", st.ci_low * 1e-9},
                           {".ci_high_s", st.ci_high * 1e-9}, {".mean_s", st.mean * 1e-9},
                           {".p95_s", st.p95 * 1e-9},         {".count", (double)st.n}};
            for (size_t k = 0; s == D5_OK && k < sizeof summary / sizeof summary[0]; k++) {
                mlflow_name(name, sizeof name, lanes[l].prefix, key, summary[k].suffix);
                s = d5_runlog_metric(log, name, summary[k].v, 0, end_ms);
            }
        }
    }
    return s;
}

/* ---- Writing a run ---- */

static d5_status write_text(const char *dir, const char *name, const char *text)
{
    char *p = d5_path_join(dir, name);
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
    char *dir = d5_path_join(root, id);
    if (!dir) return D5_ERR_NOMEM;
    d5_status s = d5_mkdirs(dir);
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

/* Removes a directory tree that this writer built (files and subdirectories). */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char *p = d5_path_join(path, e->d_name);
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

/* The distinct names of one kind of record, as written: names[i] is the
 * MLflow name of the record at index first[i]. */
typedef struct names {
    char **v;
    size_t n;
} names;

static void names_free(names *nm)
{
    for (size_t i = 0; i < nm->n; i++) d5_free(nm->v[i]);
    d5_free(nm->v);
    nm->v = NULL;
    nm->n = 0;
}

/* Sorting metric records by name, then by the order they were logged. */
typedef struct keyed {
    const char *name;
    size_t index;
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* One file of the run: folders of a nested name are created. The staging
 * folder appears whole by a rename, so files inside it are written plainly. */
static d5_status write_file(const char *dir, const char *name, const char *text, size_t len)
{
    char *path = d5_path_join(dir, name);
    if (!path) return D5_ERR_NOMEM;
    d5_status s = D5_OK;
    char *slash = strrchr(path, '/');
    if (slash && slash > path + strlen(dir)) {
        *slash = '\0';
        s = d5_mkdirs(path);
        *slash = '/';
    }
    FILE *f = s == D5_OK ? fopen(path, "w") : NULL;
    if (s == D5_OK && !f) s = d5_error(D5_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    if (f) {
        int bad = len && fwrite(text, 1, len, f) != len;
        bad |= fclose(f) != 0;
        if (bad) s = d5_error(D5_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    d5_free(path);
    return s;
}

/* Names of one kind that collide: the same MLflow name for two keys, or a
 * name that is a folder of another ("loss" and "loss/train"). `names` holds
 * the sorted MLflow names, `keys` the log's keys in the same order. */
static d5_status check_collisions(const char *kind, char *const *nm, const char *const *keys,
                                  size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            size_t a = strlen(nm[i]);
            int prefix = strncmp(nm[i], nm[j], a) == 0;
            if (!prefix) break; /* sorted: no later name starts with nm[i] either */
            if (nm[j][a] == '/')
                return d5_error(D5_ERR_INVALID,
                                "MLflow run: %s '%s' is also a folder of %s '%s'; one name "
                                "cannot be both a file and a folder",
                                kind, keys[i], kind, keys[j]);
            if (nm[j][a] == '\0' && strcmp(keys[i], keys[j]) != 0)
                return d5_error(D5_ERR_INVALID,
                                "MLflow run: %s keys '%s' and '%s' both become the name '%s'", kind,
                                keys[i], keys[j], nm[i]);
        }
    }
    return D5_OK;
}

/* The parameters or tags of the log (with `extra`, name/value pairs used when
 * the log has no such key) into folder `dir`. */
static d5_status write_texts(const d5_runlog *log, d5_runlog_kind kind, const char *dir,
                             const char *const (*extra)[2], size_t nextra)
{
    size_t n;
    const d5_runlog_entry *e = d5_runlog_entries(log, kind, &n);
    size_t total = n + nextra;
    keyed *k = d5_calloc(total + 1, sizeof *k, "MLflow names");
    char **nm = d5_calloc(total + 1, sizeof *nm, "MLflow names");
    const char **keys = d5_calloc(total + 1, sizeof *keys, "MLflow names");
    const char **values = d5_calloc(total + 1, sizeof *values, "MLflow names");
    d5_status s = k && nm && keys && values ? D5_OK : D5_ERR_NOMEM;
    size_t m = 0;
    for (size_t i = 0; s == D5_OK && i < total; i++) {
        const char *key = i < n ? e[i].key : extra[i - n][0];
        if (i >= n && d5_runlog_lookup(log, kind, key)) continue;
        char name[512];
        mlflow_name(name, sizeof name, "", key, "");
        k[m].name = nm[m] = d5_strdup(name, "MLflow name");
        k[m].index = m;
        keys[m] = key;
        values[m] = i < n ? e[i].text : extra[i - n][1];
        if (!nm[m]) s = D5_ERR_NOMEM;
        m++;
    }
    if (s == D5_OK) qsort(k, m, sizeof *k, keyed_cmp);
    char **sorted = s == D5_OK ? d5_calloc(m + 1, sizeof *sorted, "MLflow names") : NULL;
    const char **skeys = sorted ? d5_calloc(m + 1, sizeof *skeys, "MLflow names") : NULL;
    if (s == D5_OK && !skeys) s = D5_ERR_NOMEM;
    for (size_t i = 0; s == D5_OK && i < m; i++) {
        sorted[i] = (char *)k[i].name;
        skeys[i] = keys[k[i].index];
    }
    if (s == D5_OK)
        s = check_collisions(kind == D5_RUNLOG_PARAM ? "parameter" : "tag", sorted, skeys, m);
    for (size_t i = 0; s == D5_OK && i < m; i++)
        s = write_file(dir, nm[i], values[i], strlen(values[i]));
    for (size_t i = 0; nm && i < m; i++) d5_free(nm[i]);
    d5_free(sorted);
    d5_free(skeys);
    d5_free(k);
    d5_free(nm);
    d5_free(keys);
    d5_free(values);
    return s;
}

/* Every metric series into `dir`, one file per key; the earliest timestamp
 * into *first_ms. */
static d5_status write_metrics(const d5_runlog *log, const char *dir, int64_t *first_ms)
{
    size_t n;
    const d5_runlog_entry *e = d5_runlog_entries(log, D5_RUNLOG_METRIC, &n);
    keyed *k = d5_calloc(n + 1, sizeof *k, "MLflow metrics");
    names nm = {d5_calloc(n + 1, sizeof(char *), "MLflow metrics"), 0};
    if (!k || !nm.v) {
        d5_free(k);
        d5_free(nm.v);
        return D5_ERR_NOMEM;
    }
    /* Each key's MLflow name, made once per distinct key (keys repeat). */
    d5_status s = D5_OK;
    const char *last_key = NULL, *last_name = NULL;
    for (size_t i = 0; s == D5_OK && i < n; i++) {
        if (!last_key || strcmp(last_key, e[i].key) != 0) {
            char name[512];
            mlflow_name(name, sizeof name, "", e[i].key, "");
            nm.v[nm.n] = d5_strdup(name, "MLflow name");
            if (!nm.v[nm.n]) s = D5_ERR_NOMEM;
            last_name = nm.v[nm.n++];
            last_key = e[i].key;
        }
        k[i].name = last_name;
        k[i].index = i;
        if (e[i].timestamp_ms < *first_ms) *first_ms = e[i].timestamp_ms;
    }
    if (s == D5_OK) qsort(k, n, sizeof *k, keyed_cmp);
    /* The distinct names in order, with a key of each, for the collision check. */
    char **dn = s == D5_OK ? d5_calloc(n + 1, sizeof *dn, "MLflow metrics") : NULL;
    const char **dk = dn ? d5_calloc(n + 1, sizeof *dk, "MLflow metrics") : NULL;
    if (s == D5_OK && !dk) s = D5_ERR_NOMEM;
    size_t nd = 0;
    for (size_t i = 0; s == D5_OK && i < n; i++) {
        if (nd && strcmp(dn[nd - 1], k[i].name) == 0) {
            if (strcmp(dk[nd - 1], e[k[i].index].key) != 0)
                s = d5_error(D5_ERR_INVALID,
                             "MLflow run: metric keys '%s' and '%s' both become the name '%s'",
                             dk[nd - 1], e[k[i].index].key, dn[nd - 1]);
            continue;
        }
        dn[nd] = (char *)k[i].name;
        dk[nd++] = e[k[i].index].key;
    }
    if (s == D5_OK) s = check_collisions("metric", dn, dk, nd);
    char *buf = NULL;
    size_t len = 0;
    for (size_t i = 0; s == D5_OK && i < n;) {
        FILE *f = open_memstream(&buf, &len);
        if (!f) {
            s = d5_error(D5_ERR_NOMEM, "out of memory for MLflow metric '%s'", k[i].name);
            break;
        }
        size_t j = i;
        for (; j < n && strcmp(k[j].name, k[i].name) == 0; j++) {
            const d5_runlog_entry *m = &e[k[j].index];
            fprintf(f, "%lld %.17g %lld\n", (long long)m->timestamp_ms, m->value,
                    (long long)m->step);
        }
        if (fclose(f) != 0)
            s = d5_error(D5_ERR_NOMEM, "out of memory for MLflow metric '%s'", k[i].name);
        if (s == D5_OK) s = write_file(dir, k[i].name, buf, len);
        free(buf);
        buf = NULL;
        i = j;
    }
    d5_free(dn);
    d5_free(dk);
    d5_free(k);
    names_free(&nm);
    return s;
}

/* The run's meta.yaml, as MLflow's FileStore writes it. */
static d5_status write_run_meta(const d5_runlog *log, const char *staging, const char *exp_dir,
                                const char *exp_id, const char *id, int64_t start_ms,
                                int64_t end_ms, const char *user)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return d5_error(D5_ERR_NOMEM, "out of memory writing the MLflow run's meta.yaml");
    char *abs = realpath(exp_dir, NULL);
    fprintf(m,
            "artifact_uri: file://%s/%s/artifacts\ndeleted_time: null\nend_time: %lld\n"
            "entry_point_name: ''\nexperiment_id: '%s'\nlifecycle_stage: active\nrun_id: %s\n"
            "run_name: ",
            abs ? abs : exp_dir, id, (long long)end_ms, exp_id, id);
    yaml_quoted(m, d5_runlog_name(log));
    fprintf(m,
            "\nrun_uuid: %s\nsource_name: ''\nsource_type: %d\nsource_version: ''\n"
            "start_time: %lld\nstatus: %d\ntags: []\nuser_id: ",
            id, MLFLOW_SOURCE_LOCAL, (long long)start_ms,
            d5_runlog_failed(log) ? MLFLOW_FAILED : MLFLOW_FINISHED);
    yaml_quoted(m, user);
    fputc('\n', m);
    free(abs);
    d5_status s = fclose(m) == 0 ? write_file(staging, "meta.yaml", buf, len)
                                 : d5_error(D5_ERR_NOMEM, "out of memory writing run meta");
    free(buf);
    return s;
}

d5_status d5_runlog_write_mlflow(const d5_runlog *log, const char *mlruns_dir,
                                 const char *experiment, char *run_id, size_t run_id_size)
{
    if (!log || !mlruns_dir)
        return d5_error(D5_ERR_INVALID, "d5_runlog_write_mlflow: NULL argument");
    if (run_id && run_id_size < 33)
        return d5_error(D5_ERR_INVALID, "MLflow run id buffer needs 33 bytes, got %zu",
                        run_id_size);
    if (!experiment || !*experiment) experiment = "Default";
    d5_status s = d5_mkdirs(mlruns_dir);
    char exp_id[32];
    if (s == D5_OK) s = find_or_create_experiment(mlruns_dir, experiment, exp_id);
    if (s != D5_OK) return s;

    char id[33], staging_name[64];
    new_run_id(id);
    snprintf(staging_name, sizeof staging_name, ".%s.partial", id);
    char *exp_dir = d5_path_join(mlruns_dir, exp_id);
    char *staging = exp_dir ? d5_path_join(exp_dir, staging_name) : NULL;
    char *final = staging ? d5_path_join(exp_dir, id) : NULL;
    char *sub[4] = {NULL, NULL, NULL, NULL};
    static const char *const subdirs[4] = {"metrics", "params", "tags", "artifacts"};
    if (!final) s = D5_ERR_NOMEM;
    for (int i = 0; s == D5_OK && i < 4; i++) {
        sub[i] = d5_path_join(staging, subdirs[i]);
        s = sub[i] ? d5_mkdirs(sub[i]) : D5_ERR_NOMEM;
    }
    int64_t start_ms = d5_runlog_start_ms(log), end_ms = d5_runlog_end_ms(log);
    if (end_ms < 0) end_ms = (int64_t)(d5__wall_ns() / 1000000u);
    /* A run starts no later than its first metric (a timer's origin, say). */
    if (s == D5_OK) s = write_metrics(log, sub[0], &start_ms);
    if (s == D5_OK) s = write_texts(log, D5_RUNLOG_PARAM, sub[1], NULL, 0);
    d5_build_info b;
    d5_build_info_get(&b);
    /* The user as MLflow finds it (Python's getpass.getuser): the environment,
     * then the password database. */
    const char *user = NULL;
    static const char *const vars[] = {"LOGNAME", "USER", "LNAME", "USERNAME"};
    for (size_t i = 0; !user && i < 4; i++)
        if (getenv(vars[i]) && *getenv(vars[i])) user = getenv(vars[i]);
    struct passwd *pw = user ? NULL : getpwuid(geteuid());
    if (!user) user = pw && pw->pw_name ? pw->pw_name : "unknown";
    if (d5_runlog_lookup(log, D5_RUNLOG_TAG, "mlflow.user"))
        user = d5_runlog_lookup(log, D5_RUNLOG_TAG, "mlflow.user");
    /* MLflow's system tags, where the log does not set them. */
    const char *const defaults[][2] = {{"mlflow.runName", d5_runlog_name(log)},
                                       {"mlflow.user", user},
                                       {"mlflow.source.name", "d5"},
                                       {"mlflow.source.type", "LOCAL"},
                                       {"mlflow.source.git.commit", b.git_commit},
                                       {"d5.version", b.version}};
    if (s == D5_OK)
        s = write_texts(log, D5_RUNLOG_TAG, sub[2], defaults, sizeof defaults / sizeof defaults[0]);
    if (s == D5_OK) s = write_run_meta(log, staging, exp_dir, exp_id, id, start_ms, end_ms, user);
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

/* ---- The region timer as a run ---- */

d5_status d5_report_mlflow(d5_timer *t, const char *mlruns_dir, const d5_mlflow_params *p,
                           char *run_id, size_t run_id_size)
{
    if (!t || !mlruns_dir) return d5_error(D5_ERR_INVALID, "d5_report_mlflow: NULL argument");
    if (run_id && run_id_size < 33)
        return d5_error(D5_ERR_INVALID, "MLflow run id buffer needs 33 bytes, got %zu",
                        run_id_size);
    const char *run_name = p && p->run_name ? p->run_name : d5_timer_name(t);
    d5_runlog *log = NULL;
    d5_status s = d5_runlog_create(run_name && *run_name ? run_name : "d5", &log);
    for (size_t i = 0; s == D5_OK && p && i < p->nparams; i++) {
        char name[256];
        mlflow_name(name, sizeof name, "", p->params[2 * i], "");
        s = d5_runlog_param(log, name, p->params[2 * i + 1] ? p->params[2 * i + 1] : "");
    }
    d5_build_info b;
    d5_build_info_get(&b);
    if (s == D5_OK) s = d5_runlog_tag(log, "d5.git_commit", b.git_commit);
    if (s == D5_OK) s = d5_runlog_tag(log, "d5.cpu_clock", d5_timer_clock_name(t, D5_TIMER_CPU));
    if (s == D5_OK) s = d5_runlog_add_timer(log, t, "time/");
    if (s == D5_OK) {
        d5_runlog_finish(log, 0);
        s = d5_runlog_write_mlflow(log, mlruns_dir, p ? p->experiment : NULL, run_id, run_id_size);
    }
    d5_runlog_free(log);
    return s;
}
