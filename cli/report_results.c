/* d5 report: the benchmarks of a results.json (d5 bench, d5 test-operator
 * --json, Google Benchmark's JSON) with their samples, from the JSON's "d5"
 * blocks or from samples.csv beside it. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Nanoseconds per unit of a time_unit; 0 for anything else. */
static double unit_ns(const char *u)
{
    if (!u || strcmp(u, "ns") == 0) return 1;
    if (strcmp(u, "us") == 0) return 1e3;
    if (strcmp(u, "ms") == 0) return 1e6;
    if (strcmp(u, "s") == 0) return 1e9;
    return 0;
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static d5_status push_sample(report_bench *b, double v)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        double *g = realloc(b->samples, cap * sizeof *g);
        if (!g) return d5_error(D5_ERR_NOMEM, "out of memory for the samples of '%s'", b->name);
        b->samples = g;
        b->cap = cap;
    }
    b->samples[b->n++] = v;
    return D5_OK;
}

/* OP/SIZE/BACKEND with '=' in SIZE and none in OP. */
static d5_status split_operator(report_bench *b)
{
    const char *a = strchr(b->name, '/');
    const char *c = a ? strchr(a + 1, '/') : NULL;
    if (!a || !c || a == b->name || !c[1] || memchr(b->name, '=', (size_t)(a - b->name)) ||
        !memchr(a + 1, '=', (size_t)(c - a - 1)))
        return D5_OK;
    b->op = strndup(b->name, (size_t)(a - b->name));
    b->size = strndup(a + 1, (size_t)(c - a - 1));
    b->backend = strdup(c + 1);
    if (!b->op || !b->size || !b->backend) return d5_error(D5_ERR_NOMEM, "out of memory");
    return D5_OK;
}

static d5_status find(report_results *r, const char *name, report_bench **out)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->b[i].name, name) == 0) {
            *out = &r->b[i];
            return D5_OK;
        }
    report_bench *g = realloc(r->b, (r->n + 1) * sizeof *g);
    if (!g) return d5_error(D5_ERR_NOMEM, "out of memory");
    r->b = g;
    report_bench *b = &r->b[r->n];
    memset(b, 0, sizeof *b);
    b->median = b->ci_low = b->ci_high = b->p5 = b->q1 = b->q3 = b->p95 = NAN;
    b->gflops = b->gbs = b->flops = NAN;
    b->name = strdup(name);
    r->n++;
    if (!b->name) return d5_error(D5_ERR_NOMEM, "out of memory");
    *out = b;
    return split_operator(b);
}

/* The median entry: statistics, counters and (newer files) the samples. */
static d5_status read_median(const char *path, size_t i, const json_t *e, double scale,
                             report_bench *b, int *json_samples)
{
    b->median = num(e, "real_time") * scale;
    b->gflops = num(e, "GFLOP/s");
    b->gbs = num(e, "GB/s");
    b->flops = num(e, "flops");
    const json_t *d5 = json_object_get(e, "d5");
    const json_t *st = json_object_get(d5, "stats");
    if (json_is_object(st)) {
        b->ci_low = num(st, "ci_low") * scale;
        b->ci_high = num(st, "ci_high") * scale;
        b->p5 = num(st, "p5") * scale;
        b->q1 = num(st, "q1") * scale;
        b->q3 = num(st, "q3") * scale;
        b->p95 = num(st, "p95") * scale;
    }
    const json_t *samples = json_object_get(d5, "samples");
    if (!samples) return D5_OK;
    if (!json_is_array(samples))
        return d5_error(D5_ERR_FORMAT, "%s: benchmarks[%zu] ('%s'): d5.samples is not an array",
                        path, i, b->name);
    b->n = 0;
    for (size_t k = 0; k < json_array_size(samples); k++) {
        const json_t *v = json_array_get(samples, k);
        if (!json_is_number(v))
            return d5_error(D5_ERR_FORMAT,
                            "%s: benchmarks[%zu] ('%s'): d5.samples[%zu] is not a "
                            "number",
                            path, i, b->name, k);
        d5_status s = push_sample(b, json_number_value(v) * scale);
        if (s != D5_OK) return s;
    }
    *json_samples = 1;
    return D5_OK;
}

static d5_status read_entry(const char *path, size_t i, const json_t *e, report_results *r,
                            int *json_samples)
{
    if (!json_is_object(e))
        return d5_error(D5_ERR_FORMAT, "%s: benchmarks[%zu] is not an object", path, i);
    const json_t *rn = json_object_get(e, "run_name"), *nm = json_object_get(e, "name");
    const char *name = json_is_string(rn) ? json_string_value(rn) : json_string_value(nm);
    if (!name || !*name)
        return d5_error(D5_ERR_FORMAT, "%s: benchmarks[%zu] has no name (a string)", path, i);
    report_bench *b = NULL;
    d5_status s = find(r, name, &b);
    if (s != D5_OK) return s;
    if (json_is_true(json_object_get(e, "error_occurred"))) {
        const char *why = json_string_value(json_object_get(e, "error_message"));
        free(b->error);
        b->error = strdup(why ? why : "failed");
        return b->error ? D5_OK : d5_error(D5_ERR_NOMEM, "out of memory");
    }
    const char *unit = json_string_value(json_object_get(e, "time_unit"));
    double scale = unit_ns(unit);
    const char *type = json_string_value(json_object_get(e, "run_type"));
    const char *agg = json_string_value(json_object_get(e, "aggregate_name"));
    int median = type && strcmp(type, "aggregate") == 0 && agg && strcmp(agg, "median") == 0;
    int iteration = !type || strcmp(type, "iteration") == 0;
    if (!median && !iteration) return D5_OK; /* mean, stddev, cv */
    if (scale == 0) {
        /* Not a time: no timing plot for it. */
        free(b->op);
        b->op = NULL;
        return D5_OK;
    }
    if (!json_is_number(json_object_get(e, "real_time")))
        return d5_error(D5_ERR_FORMAT, "%s: benchmarks[%zu] ('%s'): real_time is not a number",
                        path, i, name);
    if (median) return read_median(path, i, e, scale, b, json_samples);
    /* Google Benchmark's repetitions: one iteration entry per sample. */
    return push_sample(b, num(e, "real_time") * scale);
}

/* samples.csv: name,unit,index,value for every benchmark. */
static d5_status read_samples_csv(const report_src *src, report_results *r)
{
    char *path = report_path(src, "samples.csv");
    if (!path) return d5_error(D5_ERR_NOMEM, "out of memory");
    report_csv c;
    d5_status s = report_csv_read(path, &c);
    free(path);
    if (s != D5_OK) return s;
    static const char *const need[] = {"name", "unit", "value"};
    long col[3];
    s = report_csv_require(&c, need, 3, col);
    for (size_t i = 0; s == D5_OK && i < c.rows; i++) {
        const char *name = report_csv_cell(&c, i, (size_t)col[0]);
        double scale = unit_ns(report_csv_cell(&c, i, (size_t)col[1])), v;
        s = report_csv_number(&c, i, (size_t)col[2], 0, &v);
        if (s != D5_OK || scale == 0) continue;
        for (size_t k = 0; k < r->n; k++)
            if (strcmp(r->b[k].name, name) == 0) {
                s = push_sample(&r->b[k], v * scale);
                break;
            }
    }
    report_csv_free(&c);
    return s;
}

d5_status report_results_read(const report_src *src, report_results *out)
{
    memset(out, 0, sizeof *out);
    if (!report_has(src, "results.json"))
        return d5_error(D5_ERR_NOTFOUND, "no results.json in %s", src->dir);
    char *path = report_path(src, "results.json");
    if (!path) return d5_error(D5_ERR_NOMEM, "out of memory");
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    d5_status s = D5_OK;
    if (!root) s = d5_error(D5_ERR_FORMAT, "%s: line %d: %s", path, err.line, err.text);
    const json_t *list = json_object_get(root, "benchmarks");
    if (s == D5_OK && !json_is_array(list))
        s = d5_error(D5_ERR_FORMAT,
                     "%s: no 'benchmarks' array (expected the results.json of d5 bench, "
                     "d5 test-operator --json or Google Benchmark's JSON)",
                     path);
    int json_samples = 0;
    for (size_t i = 0; s == D5_OK && i < json_array_size(list); i++)
        s = read_entry(path, i, json_array_get(list, i), out, &json_samples);
    json_decref(root);
    free(path);
    int iterations = 0;
    for (size_t i = 0; s == D5_OK && i < out->n; i++) iterations |= out->b[i].n > 0;
    if (s == D5_OK && (json_samples || iterations))
        out->samples_from = 1;
    else if (s == D5_OK && report_has(src, "samples.csv")) {
        s = read_samples_csv(src, out);
        out->samples_from = 2;
    }
    if (s != D5_OK) report_results_free(out);
    return s;
}

void report_results_free(report_results *r)
{
    for (size_t i = 0; i < r->n; i++) {
        report_bench *b = &r->b[i];
        free(b->name);
        free(b->op);
        free(b->size);
        free(b->backend);
        free(b->samples);
        free(b->error);
    }
    free(r->b);
    memset(r, 0, sizeof *r);
}

/* ---- Operator sizes ---- */

/* The integer value of KEY in "K1=V1,K2=V2" (0 when absent, -1 when not an
 * integer); `known` lists every key the label may hold. Returns 0 when the
 * label holds a key outside `known`. */
static int size_keys(const char *size, const char *const *known, size_t nk, long long *vals)
{
    for (size_t k = 0; k < nk; k++) vals[k] = 0;
    const char *p = size;
    while (*p) {
        const char *eq = strchr(p, '='), *comma = strchr(p, ',');
        if (!comma) comma = p + strlen(p);
        if (!eq || eq > comma) return 0;
        size_t k = 0;
        while (k < nk && (strlen(known[k]) != (size_t)(eq - p) ||
                          strncmp(known[k], p, (size_t)(eq - p)) != 0))
            k++;
        if (k == nk) return 0;
        char *end;
        long long v = strtoll(eq + 1, &end, 10);
        vals[k] = (end == comma && end > eq + 1 && v >= 0) ? v : -1;
        if (vals[k] < 0 && (comma - eq - 1) == 1 && strchr("NnTt01", eq[1]))
            vals[k] = strchr("Tt1", eq[1]) ? 1 : 0; /* a_t, b_t */
        p = *comma ? comma + 1 : comma;
    }
    return 1;
}

int report_operator_bytes(const char *op, const char *size, double *bytes)
{
    if (strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0) {
        static const char *const k[] = {"M", "N", "K", "a_t", "b_t"};
        long long v[5];
        if (!size_keys(size, k, 5, v) || v[0] <= 0 || v[1] <= 0 || v[2] <= 0 || v[3] < 0 ||
            v[4] < 0)
            return 0;
        double m = (double)v[0], n = (double)v[1], kk = (double)v[2];
        *bytes = 4.0 * (m * kk + kk * n + m * n);
        return 1;
    }
    if (strcmp(op, "Conv") == 0) {
        static const char *const k[] = {"W", "H",     "C",     "N",       "K",      "S",
                                        "R", "pad_w", "pad_h", "wstride", "hstride"};
        long long v[11];
        if (!size_keys(size, k, 11, v)) return 0;
        for (int i = 0; i < 11; i++)
            if (v[i] < 0 || (i < 7 && v[i] == 0)) return 0; /* W..R are required */
        long long sw = v[9] ? v[9] : 1, sh = v[10] ? v[10] : 1;
        long long q = (v[0] + 2 * v[7] - v[5]) / sw + 1, p = (v[1] + 2 * v[8] - v[6]) / sh + 1;
        if (v[0] + 2 * v[7] < v[5] || v[1] + 2 * v[8] < v[6]) return 0;
        double n = (double)v[3], c = (double)v[2], kk = (double)v[4];
        *bytes = 4.0 * (n * c * (double)v[1] * (double)v[0] + kk * c * (double)v[6] * (double)v[5] +
                        n * kk * (double)p * (double)q);
        return 1;
    }
    return 0;
}

void report_case_label(const char *op, const char *size, char *buf, size_t len)
{
    if (strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0) {
        static const char *const k[] = {"M", "N", "K", "a_t", "b_t"};
        long long v[5];
        if (size_keys(size, k, 5, v) && v[0] > 0 && v[1] > 0 && v[2] > 0) {
            snprintf(buf, len, "%s M×N×K\n%lld×%lld×%lld%s%s", op, v[0], v[1], v[2],
                     v[3] > 0 ? " Aᵀ" : "", v[4] > 0 ? " Bᵀ" : "");
            return;
        }
    }
    if (strcmp(op, "Conv") == 0) {
        static const char *const k[] = {"W", "H",     "C",     "N",       "K",      "S",
                                        "R", "pad_w", "pad_h", "wstride", "hstride"};
        long long v[11];
        if (size_keys(size, k, 11, v) && v[0] > 0 && v[1] > 0) {
            char extra[64] = "";
            size_t used = 0;
            if (v[9] > 1 || v[10] > 1)
                used += (size_t)snprintf(extra, sizeof extra, " stride %lld", v[10] ? v[10] : 1);
            if (v[7] > 0 || v[8] > 0)
                snprintf(extra + used, sizeof extra - used, " pad %lld", v[8]);
            snprintf(buf, len, "Conv N%lld C%lld %lld×%lld\nK%lld %lld×%lld%s", v[3], v[2], v[1],
                     v[0], v[4], v[6], v[5], extra);
            return;
        }
    }
    snprintf(buf, len, "%s\n%.32s%s", op, size, strlen(size) > 32 ? "…" : "");
}
