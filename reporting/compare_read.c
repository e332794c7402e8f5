/* Benchmark sets read from results files: d5 results JSON (with the samples
 * in each benchmark's "d5" block, or in samples.csv beside an older file) and
 * Google Benchmark JSON. */
#define _POSIX_C_SOURCE 200809L
#include "compare_set.h"
#include "internal.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXPECTED                                                                                   \
    "expected d5 results JSON (results.json of d5 bench, --json of d5 run) or Google Benchmark "   \
    "JSON (--benchmark_out_format=json)"

/* Nanoseconds per unit of Google Benchmark's time_unit; 0 for anything else. */
static double unit_scale(const char *unit)
{
    static const struct {
        const char *name;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    for (size_t i = 0; unit && i < sizeof units / sizeof units[0]; i++)
        if (strcmp(unit, units[i].name) == 0) return units[i].ns;
    return 0;
}

static const char *str_field(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The file a path names: the path itself, or a folder's results.json. */
static d5_status resolve(const char *path, char **file)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return d5_error(D5_ERR_IO, "cannot open results file '%s': %s", path, strerror(errno));
    *file =
        S_ISDIR(st.st_mode) ? d5_path_join(path, "results.json") : d5_strdup(path, "results path");
    if (!*file) return D5_ERR_NOMEM;
    if (S_ISDIR(st.st_mode) && stat(*file, &st) != 0)
        return d5_error(D5_ERR_IO, "folder '%s' has no results.json (%s): %s", path,
                        strerror(errno), EXPECTED);
    return d5_file_check_regular(*file, "results file");
}

/* An entry's aggregate name, or NULL for a repetition. Google Benchmark from
 * 1.5 writes run_type and aggregate_name; before, aggregates had a suffix. */
static const char *aggregate_of(const json_t *e, const char *name)
{
    const char *type = str_field(e, "run_type"), *agg = str_field(e, "aggregate_name");
    if (type) return strcmp(type, "aggregate") == 0 ? (agg ? agg : "") : NULL;
    if (agg) return agg;
    static const char *const suffixes[] = {"_mean", "_median", "_stddev", "_cv"};
    size_t len = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (len > k && strcmp(name + len - k, suffixes[i]) == 0) return suffixes[i] + 1;
    }
    return NULL;
}

/* The benchmark an entry belongs to: run_name, or the name less its
 * aggregate's suffix. */
static char *base_name(const json_t *e, const char *agg)
{
    const char *run = str_field(e, "run_name"), *name = str_field(e, "name");
    if (run) return d5_strdup(run, "benchmark name");
    if (!name) return NULL;
    size_t len = strlen(name), k = agg ? strlen(agg) : 0;
    if (agg && k && len > k + 1 && name[len - k - 1] == '_' && strcmp(name + len - k, agg) == 0)
        len -= k + 1;
    char *s = d5_alloc(len + 1, "benchmark name");
    if (s) {
        memcpy(s, name, len);
        s[len] = '\0';
    }
    return s;
}

/* real_time of an entry in ns, and the scale of its unit. */
static d5_status read_time(const char *file, size_t i, const char *name, const json_t *e,
                           double *ns, double *scale)
{
    const json_t *t = json_object_get(e, "real_time");
    const char *unit = str_field(e, "time_unit");
    if (!json_is_number(t))
        return d5_error(D5_ERR_FORMAT, "'%s': benchmarks[%zu] ('%s') has no number \"real_time\"",
                        file, i, name);
    if (!unit)
        return d5_error(D5_ERR_FORMAT, "'%s': benchmarks[%zu] ('%s') has no \"time_unit\"", file, i,
                        name);
    *scale = unit_scale(unit);
    if (*scale == 0)
        return d5_error(D5_ERR_FORMAT,
                        "'%s': benchmarks[%zu] ('%s') has time_unit '%s'; expected ns, us, ms or s",
                        file, i, name, unit);
    *ns = json_number_value(t) * *scale;
    if (!isfinite(*ns) || *ns < 0)
        return d5_error(D5_ERR_FORMAT, "'%s': benchmarks[%zu] ('%s') has real_time %g, not a time",
                        file, i, name, json_number_value(t));
    return D5_OK;
}

/* d5's statistics and samples in a median entry. */
static d5_status read_d5_block(const char *file, size_t i, d5__bench *b, const json_t *d5,
                               double scale)
{
    const json_t *st = json_object_get(d5, "stats"), *samples = json_object_get(d5, "samples");
    b->d5_block = 1;
    if (json_is_object(st)) {
        const json_t *lo = json_object_get(st, "ci_low"), *hi = json_object_get(st, "ci_high");
        const json_t *n = json_object_get(st, "n");
        if (json_is_number(lo) && json_is_number(hi)) {
            b->ci_low = json_number_value(lo) * scale;
            b->ci_high = json_number_value(hi) * scale;
        }
        if (json_is_integer(n) && json_integer_value(n) > 0)
            b->d5_n = (size_t)json_integer_value(n);
    }
    if (!samples) return D5_OK;
    if (!json_is_array(samples))
        return d5_error(D5_ERR_FORMAT, "'%s': benchmarks[%zu] ('%s'): d5.samples is not a list",
                        file, i, b->name);
    for (size_t k = 0; k < json_array_size(samples); k++) {
        const json_t *v = json_array_get(samples, k);
        if (!json_is_number(v))
            return d5_error(D5_ERR_FORMAT,
                            "'%s': benchmarks[%zu] ('%s'): d5.samples[%zu] is not a number", file,
                            i, b->name, k);
        d5_status s = d5__bench_push(b, json_number_value(v) * scale);
        if (s != D5_OK) return s;
    }
    if (b->d5_n && b->n != b->d5_n)
        return d5_error(D5_ERR_FORMAT, "'%s': benchmarks[%zu] ('%s') has %zu samples, n = %zu",
                        file, i, b->name, b->n, b->d5_n);
    if (b->n) b->source = "results.json";
    return D5_OK;
}

static d5_status read_entry(d5_bench_set *set, const char *file, size_t i, const json_t *e)
{
    if (!json_is_object(e))
        return d5_error(D5_ERR_FORMAT, "'%s': benchmarks[%zu] is not an object", file, i);
    const char *name = str_field(e, "name");
    const char *agg = aggregate_of(e, name ? name : "");
    char *base = base_name(e, agg);
    if (!base) {
        if (!name && !str_field(e, "run_name"))
            return d5_error(D5_ERR_FORMAT, "'%s': benchmarks[%zu] has no \"name\"", file, i);
        return D5_ERR_NOMEM;
    }
    d5__bench *b = d5__bench_set_find(set, base);
    d5_status s = D5_OK;
    int failed = json_is_true(json_object_get(e, "error_occurred"));
    int wanted = failed || !agg || strcmp(agg, "median") == 0;
    if (!b && wanted) s = d5__bench_set_new(set, base, &b);
    if (s == D5_OK && failed && !b->error) {
        const char *why = str_field(e, "error_message");
        b->error = d5_strdup(why && why[0] ? why : "error_occurred", "error message");
        if (!b->error) s = D5_ERR_NOMEM;
    }
    double ns = 0, scale = 1;
    if (s == D5_OK && wanted && !failed) s = read_time(file, i, base, e, &ns, &scale);
    if (s == D5_OK && wanted && !failed && agg) { /* the median */
        if (b->median_entry)
            s = d5_error(D5_ERR_FORMAT, "'%s': benchmarks[%zu]: a second median of '%s'", file, i,
                         base);
        b->median_entry = 1;
        b->median = ns;
        const json_t *d5 = json_object_get(e, "d5");
        if (s == D5_OK && json_is_object(d5)) s = read_d5_block(file, i, b, d5, scale);
    } else if (s == D5_OK && wanted && !failed) { /* one repetition */
        s = d5__bench_push(b, ns);
        b->source = "repetitions";
    }
    d5_free(base);
    return s;
}

/* ---- samples.csv ---- */

typedef struct csv_cursor {
    const char *p, *end;
    size_t line;
} csv_cursor;

/* One RFC 4180 field as a new string; *last is set at the end of a record.
 * NULL with *bad set for a malformed field, NULL alone when out of memory. */
static char *csv_field(csv_cursor *c, int *last, int *bad)
{
    size_t cap = 32, n = 0;
    char *s = d5_alloc(cap, "CSV field");
    if (!s) return NULL;
    int quoted = c->p < c->end && *c->p == '"';
    if (quoted) c->p++;
    for (;;) {
        if (c->p >= c->end) {
            if (quoted) *bad = 1;
            *last = 1;
            break;
        }
        char ch = *c->p++;
        if (quoted && ch == '"') {
            if (c->p < c->end && *c->p == '"') {
                c->p++;
            } else {
                quoted = 0;
                if (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r') *bad = 1;
                continue;
            }
        } else if (!quoted && (ch == ',' || ch == '\n' || ch == '\r')) {
            if (ch == '\r' && c->p < c->end && *c->p == '\n') c->p++;
            if (ch != ',') c->line++;
            *last = ch != ',';
            break;
        } else if (ch == '\n') {
            c->line++;
        }
        if (n + 2 > cap) {
            char *g = d5_realloc(s, cap, 2 * cap, "CSV field");
            if (!g) {
                d5_free(s);
                return NULL;
            }
            s = g;
            cap *= 2;
        }
        s[n++] = ch;
    }
    s[n] = '\0';
    if (*bad) {
        d5_free(s);
        return NULL;
    }
    return s;
}

/* Up to 4 fields of one record; D5_ERR_FORMAT for more or fewer. */
static d5_status csv_record(csv_cursor *c, const char *path, char *f[4])
{
    size_t line = c->line;
    int last = 0, bad = 0, k = 0;
    f[0] = f[1] = f[2] = f[3] = NULL;
    while (!last) {
        char *v = csv_field(c, &last, &bad);
        if (!v) {
            for (int j = 0; j < k; j++) d5_free(f[j]);
            return bad ? d5_error(D5_ERR_FORMAT, "'%s' line %zu: a malformed quoted field", path,
                                  line)
                       : D5_ERR_NOMEM;
        }
        if (k == 4) {
            d5_free(v);
            bad = 1;
            continue;
        }
        f[k++] = v;
    }
    if (k != 4 || bad) {
        for (int j = 0; j < k; j++) d5_free(f[j]);
        return d5_error(D5_ERR_FORMAT, "'%s' line %zu: expected 4 fields (name,unit,index,value)",
                        path, line);
    }
    return D5_OK;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = d5_alloc(cap, "samples.csv");
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *g = d5_realloc(buf, cap, 2 * cap, "samples.csv");
        if (!g) d5_free(buf);
        buf = g;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        d5_free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* One row: a sample of a benchmark that waits for samples.csv. */
static d5_status csv_row(d5_bench_set *set, const char *path, size_t line, char *f[4])
{
    d5__bench *b = d5__bench_set_find(set, f[0]);
    if (!b || strcmp(b->source, "samples.csv") != 0) return D5_OK;
    double scale = unit_scale(f[1]);
    char *end1, *end2;
    errno = 0;
    unsigned long long index = strtoull(f[2], &end1, 10);
    double v = strtod(f[3], &end2);
    if (scale == 0)
        return d5_error(D5_ERR_FORMAT, "'%s' line %zu: unit '%s'; expected ns, us, ms or s", path,
                        line, f[1]);
    if (errno || end1 == f[2] || *end1 || end2 == f[3] || *end2 || !isfinite(v))
        return d5_error(D5_ERR_FORMAT, "'%s' line %zu: index '%s' and value '%s' are not numbers",
                        path, line, f[2], f[3]);
    if (index != b->n)
        return d5_error(D5_ERR_FORMAT, "'%s' line %zu: sample %llu of '%s', expected %zu", path,
                        line, index, f[0], b->n);
    return d5__bench_push(b, v * scale);
}

static d5_status read_samples_csv(d5_bench_set *set, const char *path, const char *json_file)
{
    size_t len = 0;
    char *text = read_all(path, &len);
    if (!text) return d5_error(D5_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    csv_cursor c = {text, text + len, 1};
    char *f[4];
    d5_status s = csv_record(&c, path, f);
    if (s == D5_OK) {
        int good = strcmp(f[0], "name") == 0 && strcmp(f[1], "unit") == 0 &&
                   strcmp(f[2], "index") == 0 && strcmp(f[3], "value") == 0;
        for (int j = 0; j < 4; j++) d5_free(f[j]);
        if (!good)
            s = d5_error(D5_ERR_FORMAT, "'%s': the header is not name,unit,index,value", path);
    }
    while (s == D5_OK && c.p < c.end) {
        size_t line = c.line;
        if (*c.p == '\n' || *c.p == '\r') { /* a blank line */
            c.p++;
            c.line += c.p[-1] == '\n';
            continue;
        }
        s = csv_record(&c, path, f);
        if (s != D5_OK) break;
        s = csv_row(set, path, line, f);
        for (int j = 0; j < 4; j++) d5_free(f[j]);
    }
    d5_free(text);
    for (size_t i = 0; s == D5_OK && i < set->n; i++) {
        d5__bench *b = &set->b[i];
        if (strcmp(b->source, "samples.csv") != 0) continue;
        if (b->n == 0) {
            b->source = "";
            continue;
        }
        double stored = b->median;
        if (b->d5_n && b->n != b->d5_n)
            s = d5_error(D5_ERR_FORMAT, "'%s' has %zu samples of '%s', '%s' says n = %zu", path,
                         b->n, b->name, json_file, b->d5_n);
        if (s == D5_OK) s = d5__bench_summarise(b);
        if (s == D5_OK && !(fabs(b->median - stored) <= 1e-6 * fabs(stored)))
            s = d5_error(D5_ERR_FORMAT,
                         "'%s' does not belong to '%s': the median of the samples of '%s' is %g "
                         "ns, the JSON says %g ns",
                         path, json_file, b->name, b->median, stored);
    }
    return s;
}

/* samples.csv beside the JSON, for d5 benchmarks without samples in it. */
static d5_status samples_beside(d5_bench_set *set, const char *file)
{
    int wanted = 0;
    for (size_t i = 0; i < set->n; i++) {
        d5__bench *b = &set->b[i];
        if (b->d5_block && !b->error && b->n == 0) {
            b->source = "samples.csv";
            wanted = 1;
        }
    }
    if (!wanted) return D5_OK;
    const char *slash = strrchr(file, '/');
    char *dir = slash ? d5_alloc((size_t)(slash - file) + 2, "path") : d5_strdup(".", "path");
    if (!dir) return D5_ERR_NOMEM;
    if (slash) {
        memcpy(dir, file, (size_t)(slash - file) + 1);
        dir[slash - file + 1] = '\0';
    }
    char *csv = d5_path_join(dir, "samples.csv");
    d5_free(dir);
    if (!csv) return D5_ERR_NOMEM;
    struct stat st;
    d5_status s = D5_OK;
    if (stat(csv, &st) == 0 && S_ISREG(st.st_mode))
        s = read_samples_csv(set, csv, file);
    else
        for (size_t i = 0; i < set->n; i++)
            if (strcmp(set->b[i].source, "samples.csv") == 0) set->b[i].source = "";
    d5_free(csv);
    return s;
}

static d5_status load_json(d5_bench_set *set, const char *file)
{
    json_error_t err;
    json_t *doc = json_load_file(file, 0, &err);
    if (!doc)
        return d5_error(D5_ERR_FORMAT, "'%s' is not JSON (line %d: %s); " EXPECTED, file, err.line,
                        err.text);
    const json_t *list = json_is_object(doc) ? json_object_get(doc, "benchmarks") : NULL;
    d5_status s = D5_OK;
    if (!json_is_array(list))
        s = d5_error(D5_ERR_FORMAT, "'%s' has no \"benchmarks\" list; " EXPECTED, file);
    else if (json_array_size(list) == 0)
        s = d5_error(D5_ERR_FORMAT, "'%s': \"benchmarks\" is empty, there is nothing to compare",
                     file);
    for (size_t i = 0; s == D5_OK && i < json_array_size(list); i++)
        s = read_entry(set, file, i, json_array_get(list, i));
    json_decref(doc);
    if (s == D5_OK && set->n == 0)
        s = d5_error(D5_ERR_FORMAT, "'%s' holds no timed benchmark (only %s)", file,
                     "aggregates other than the median");
    return s;
}

d5_status d5_bench_set_load(const char *path, d5_bench_set **out)
{
    if (!path || !out) return d5_error(D5_ERR_INVALID, "d5_bench_set_load: NULL argument");
    char *file = NULL;
    d5_bench_set *set = NULL;
    d5_status s = resolve(path, &file);
    if (s == D5_OK) s = d5_bench_set_create(file, &set);
    if (s == D5_OK) s = load_json(set, file);
    int d5 = 0;
    for (size_t i = 0; s == D5_OK && i < set->n; i++) d5 |= set->b[i].d5_block;
    if (s == D5_OK && d5) s = samples_beside(set, file);
    for (size_t i = 0; s == D5_OK && i < set->n; i++)
        if (strcmp(set->b[i].source, "samples.csv") != 0) s = d5__bench_summarise(&set->b[i]);
    d5_free(file);
    if (s != D5_OK) {
        d5_bench_set_free(set);
        return s;
    }
    set->format = d5 ? "d5" : "google-benchmark";
    *out = set;
    return D5_OK;
}
