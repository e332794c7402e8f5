/* Benchmark results: Google Benchmark-compatible JSON, CSV, samples and a table. */
#include "d5/report.h"
#include "internal.h"
#include "json.h"

#include <math.h>
#include <string.h>

typedef struct counter {
    char *name, *unit;
    double value;
} counter;

typedef struct entry {
    char *name, *unit, *error;
    d5_measurement m; /* m.samples: a copy, owned */
    counter *counters;
    size_t ncounters;
} entry;

typedef struct ctx_item {
    char *key, *text;
    double number;
} ctx_item;

struct d5_results {
    entry *e;
    size_t n, cap;
    ctx_item *ctx;
    size_t nctx;
};

d5_status d5_results_create(d5_results **out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_results_create: NULL output");
    d5_results *r = d5_calloc(1, sizeof *r, "results");
    if (!r) return D5_ERR_NOMEM;
    *out = r;
    return D5_OK;
}

void d5_results_free(d5_results *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        entry *e = &r->e[i];
        d5_free(e->name);
        d5_free(e->unit);
        d5_free(e->error);
        d5_free(e->m.samples);
        for (size_t c = 0; c < e->ncounters; c++) {
            d5_free(e->counters[c].name);
            d5_free(e->counters[c].unit);
        }
        d5_free(e->counters);
    }
    for (size_t i = 0; i < r->nctx; i++) {
        d5_free(r->ctx[i].key);
        d5_free(r->ctx[i].text);
    }
    d5_free(r->ctx);
    d5_free(r->e);
    d5_free(r);
}

static d5_status add_context(d5_results *r, const char *key, const char *text, double number)
{
    if (!r || !key) return d5_error(D5_ERR_INVALID, "d5_results_context: NULL argument");
    ctx_item *g =
        d5_realloc(r->ctx, r->nctx * sizeof *g, (r->nctx + 1) * sizeof *g, "results context");
    if (!g) return D5_ERR_NOMEM;
    r->ctx = g;
    ctx_item *c = &r->ctx[r->nctx];
    c->key = d5_strdup(key, "context key");
    c->text = text ? d5_strdup(text, "context value") : NULL;
    c->number = number;
    if (!c->key || (text && !c->text)) {
        d5_free(c->key);
        d5_free(c->text);
        return D5_ERR_NOMEM;
    }
    r->nctx++;
    return D5_OK;
}

d5_status d5_results_context(d5_results *r, const char *key, const char *value)
{
    if (!value)
        return d5_error(D5_ERR_INVALID, "d5_results_context: NULL value for '%s'", key ? key : "");
    return add_context(r, key, value, 0);
}

d5_status d5_results_context_number(d5_results *r, const char *key, double value)
{
    return add_context(r, key, NULL, value);
}

static d5_status new_entry(d5_results *r, const char *name, entry **out)
{
    if (!r || !name) return d5_error(D5_ERR_INVALID, "d5_results_add: NULL argument");
    if (d5_grow(&r->e, &r->cap, r->n + 1, sizeof *r->e, "results") != D5_OK) return D5_ERR_NOMEM;
    entry *e = &r->e[r->n];
    memset(e, 0, sizeof *e);
    e->name = d5_strdup(name, "benchmark name");
    if (!e->name) return D5_ERR_NOMEM;
    *out = e;
    return D5_OK;
}

d5_status d5_results_add(d5_results *r, const char *name, const d5_measurement *m, const char *unit,
                         size_t *index)
{
    if (!m || !m->samples || m->n == 0)
        return d5_error(D5_ERR_INVALID, "benchmark '%s' has no samples", name ? name : "");
    entry *e = NULL;
    d5_status s = new_entry(r, name, &e);
    if (s != D5_OK) return s;
    e->unit = d5_strdup(unit ? unit : "ns", "unit");
    double *samples = d5_alloc(m->n * sizeof *samples, "benchmark samples");
    if (!e->unit || !samples) {
        d5_free(e->name);
        d5_free(e->unit);
        d5_free(samples);
        return D5_ERR_NOMEM;
    }
    memcpy(samples, m->samples, m->n * sizeof *samples);
    e->m = *m;
    e->m.samples = samples;
    if (index) *index = r->n;
    r->n++;
    return D5_OK;
}

d5_status d5_results_add_error(d5_results *r, const char *name, const char *reason)
{
    entry *e = NULL;
    d5_status s = new_entry(r, name, &e);
    if (s != D5_OK) return s;
    e->error = d5_strdup(reason ? reason : "failed", "error message");
    e->unit = d5_strdup("ns", "unit");
    if (!e->error || !e->unit) {
        d5_free(e->name);
        d5_free(e->error);
        d5_free(e->unit);
        return D5_ERR_NOMEM;
    }
    r->n++;
    return D5_OK;
}

d5_status d5_results_counter(d5_results *r, size_t index, const char *name, double value,
                             const char *unit)
{
    if (!r || !name || index >= r->n)
        return d5_error(D5_ERR_INVALID, "d5_results_counter: %s",
                        (!r || !name) ? "NULL argument" : "index out of range");
    entry *e = &r->e[index];
    counter *g = d5_realloc(e->counters, e->ncounters * sizeof *g, (e->ncounters + 1) * sizeof *g,
                            "counters");
    if (!g) return D5_ERR_NOMEM;
    e->counters = g;
    counter *c = &e->counters[e->ncounters];
    c->name = d5_strdup(name, "counter name");
    c->unit = d5_strdup(unit ? unit : "", "counter unit");
    c->value = value;
    if (!c->name || !c->unit) {
        d5_free(c->name);
        d5_free(c->unit);
        return D5_ERR_NOMEM;
    }
    e->ncounters++;
    return D5_OK;
}

size_t d5_results_count(const d5_results *r)
{
    return r ? r->n : 0;
}

const char *d5_results_name(const d5_results *r, size_t index)
{
    return r && index < r->n ? r->e[index].name : NULL;
}

d5_status d5_results_find(const d5_results *r, const char *name, size_t *index)
{
    if (!r || !name || !index) return d5_error(D5_ERR_INVALID, "d5_results_find: NULL argument");
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->e[i].name, name) == 0) {
            *index = i;
            return D5_OK;
        }
    return d5_error(D5_ERR_NOTFOUND, "no benchmark named '%s' in the results", name);
}

d5_status d5_results_samples(const d5_results *r, size_t index, const double **samples, size_t *n,
                             d5_stats *stats)
{
    if (!r || index >= r->n)
        return d5_error(D5_ERR_INVALID, "d5_results_samples: %s",
                        r ? "index out of range" : "NULL results");
    const entry *e = &r->e[index];
    if (e->error) return d5_error(D5_ERR_STATE, "benchmark '%s' failed: %s", e->name, e->error);
    if (samples) *samples = e->m.samples;
    if (n) *n = e->m.n;
    if (stats) *stats = e->m.stats;
    return D5_OK;
}

/* ---- JSON ---- */

/* One Google Benchmark aggregate entry ("mean", "median", "stddev", "cv"). */
static json_t *aggregate(const entry *e, size_t family, const char *agg, double value, int time)
{
    char name[1024];
    snprintf(name, sizeof name, "%s_%s", e->name, agg);
    json_t *o = json_pack(
        "{s:s, s:I, s:i, s:s, s:s, s:I, s:i, s:s, s:s, s:I, s:f, s:f, s:s}", "name", name,
        "family_index", (json_int_t)family, "per_family_instance_index", 0, "run_name", e->name,
        "run_type", "aggregate", "repetitions", (json_int_t)e->m.n, "threads", 1, "aggregate_name",
        agg, "aggregate_unit", time ? "time" : "percentage", "iterations", (json_int_t)e->m.n,
        "real_time", value, "cpu_time", value, "time_unit", e->unit);
    for (size_t c = 0; o && c < e->ncounters; c++)
        if (!d5__json_set(o, e->counters[c].name, json_real(e->counters[c].value))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

/* What competed for the cores during one benchmark's measured runs. */
static json_t *contention_json(const entry *e)
{
    const d5_contention *c = &e->m.contention;
    return json_pack("{s:b, s:b, s:s, s:f, s:f, s:f, s:f, s:i, s:i}", "known", c->known,
                     "contended", c->contended, "detail", c->reason, "others_cores",
                     c->others_cores, "steal_fraction", c->steal_fraction, "nivcsw_per_s",
                     c->nivcsw_per_s, "nivcsw_per_rep", e->m.nivcsw_per_rep, "threads_min",
                     (int)e->m.threads_min, "threads_max", (int)e->m.threads_max);
}

static json_t *entry_json(const entry *e, size_t family, json_t *list)
{
    if (e->error) {
        json_t *o =
            json_pack("{s:s, s:I, s:i, s:s, s:s, s:b, s:s}", "name", e->name, "family_index",
                      (json_int_t)family, "per_family_instance_index", 0, "run_name", e->name,
                      "run_type", "iteration", "error_occurred", 1, "error_message", e->error);
        return o && json_array_append_new(list, o) == 0 ? list : NULL;
    }
    const d5_stats *s = &e->m.stats;
    json_t *med = aggregate(e, family, "median", s->median, 1);
    json_t *units = json_object(), *d5 = json_object();
    int ok = med && units && d5;
    for (size_t c = 0; ok && c < e->ncounters; c++)
        ok = d5__json_set(units, e->counters[c].name, json_string(e->counters[c].unit));
    ok = ok && d5__json_set(d5, "stats", d5__json_stats(s)) &&
         d5__json_set(d5, "stop", json_string(d5_stop_reason_name(e->m.stop))) &&
         d5__json_set(d5, "warmup", json_integer(e->m.warmup)) &&
         d5__json_set(d5, "elapsed_s", json_real(e->m.elapsed_s)) &&
         d5__json_set(d5, "unstable", json_boolean(e->m.stability.unstable)) &&
         d5__json_set(d5, "unstable_reason", json_string(e->m.stability.reason)) &&
         d5__json_set(d5, "modes", json_integer(e->m.stability.modes)) &&
         d5__json_set(d5, "contention", contention_json(e)) &&
         d5__json_set(d5, "samples", d5__json_array(e->m.samples, e->m.n)) &&
         json_object_set(d5, "counter_units", units) == 0 && json_object_set(med, "d5", d5) == 0;
    json_decref(units);
    json_decref(d5);
    ok = ok && json_array_append_new(list, aggregate(e, family, "mean", s->mean, 1)) == 0 &&
         json_array_append(list, med) == 0 &&
         json_array_append_new(list, aggregate(e, family, "stddev", s->stdev, 1)) == 0 &&
         json_array_append_new(
             list, aggregate(e, family, "cv", s->mean != 0 ? s->stdev / s->mean : 0, 0)) == 0;
    json_decref(med);
    return ok ? list : NULL;
}

d5_status d5_results_write_json(const d5_results *r, const char *path)
{
    if (!r || !path) return d5_error(D5_ERR_INVALID, "d5_results_write_json: NULL argument");
    json_t *ctx = d5__json_context(), *list = json_array();
    int ok = ctx && list;
    for (size_t i = 0; ok && i < r->nctx; i++)
        ok = d5__json_set(ctx, r->ctx[i].key,
                          r->ctx[i].text ? json_string(r->ctx[i].text)
                                         : json_real(r->ctx[i].number));
    for (size_t i = 0; ok && i < r->n; i++) ok = entry_json(&r->e[i], i, list) != NULL;
    if (!ok) {
        json_decref(ctx);
        json_decref(list);
        return d5_error(D5_ERR_NOMEM, "out of memory building '%s'", path);
    }
    return d5__json_write(json_pack("{s:o, s:o}", "context", ctx, "benchmarks", list), path,
                          JSON_INDENT(2));
}

/* ---- CSV ---- */

/* Counter columns: the union of counter names, in order of first appearance. */
static size_t counter_columns(const d5_results *r, const char **names, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        for (size_t c = 0; c < r->e[i].ncounters; c++) {
            size_t k = 0;
            while (k < n && strcmp(names[k], r->e[i].counters[c].name) != 0) k++;
            if (k == n && n < max) names[n++] = r->e[i].counters[c].name;
        }
    return n;
}

d5_status d5_results_write_csv(const d5_results *r, const char *path)
{
    if (!r || !path) return d5_error(D5_ERR_INVALID, "d5_results_write_csv: NULL argument");
    const char *cols[64];
    size_t ncols = counter_columns(r, cols, 64);
    d5_afile af;
    d5_status s = d5_afile_open(&af, path);
    if (s != D5_OK) return s;
    FILE *f = af.f;
    fputs("name,unit,n,median,ci_low,ci_high,mean,stdev,min,p5,p95,max,stop,error,unstable,"
          "contended,others_cores",
          f);
    for (size_t k = 0; k < ncols; k++) {
        fputc(',', f);
        d5_csv_field(f, cols[k]);
    }
    fputc('\n', f);
    for (size_t i = 0; i < r->n; i++) {
        const entry *e = &r->e[i];
        const d5_stats *st = &e->m.stats;
        d5_csv_field(f, e->name);
        fprintf(f, ",%s,", e->unit);
        if (e->error) {
            fputs("0,,,,,,,,,,,", f);
            d5_csv_field(f, e->error);
            fputs(",,,", f);
        } else {
            fprintf(f, "%zu,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%s,,%d,%d,%.4g",
                    st->n, st->median, st->ci_low, st->ci_high, st->mean, st->stdev, st->min,
                    st->p5, st->p95, st->max, d5_stop_reason_name(e->m.stop),
                    (int)e->m.stability.unstable,
                    (int)(e->m.contention.contended || e->m.threads_min < e->m.threads_max),
                    e->m.contention.others_cores);
        }
        for (size_t k = 0; k < ncols; k++) {
            fputc(',', f);
            for (size_t c = 0; c < e->ncounters; c++)
                if (strcmp(e->counters[c].name, cols[k]) == 0)
                    fprintf(f, "%.10g", e->counters[c].value);
        }
        fputc('\n', f);
    }
    return d5_afile_commit(&af);
}

d5_status d5_results_write_samples_csv(const d5_results *r, const char *path)
{
    if (!r || !path) return d5_error(D5_ERR_INVALID, "d5_results_write_samples_csv: NULL argument");
    d5_afile af;
    d5_status s = d5_afile_open(&af, path);
    if (s != D5_OK) return s;
    fputs("name,unit,index,value\n", af.f);
    for (size_t i = 0; i < r->n; i++)
        for (size_t j = 0; j < r->e[i].m.n; j++) {
            d5_csv_field(af.f, r->e[i].name);
            fprintf(af.f, ",%s,%zu,%.17g\n", r->e[i].unit, j, r->e[i].m.samples[j]);
        }
    return d5_afile_commit(&af);
}

/* ---- Table ---- */

static void format_value(double v, const char *unit, char *buf, size_t size)
{
    if (strcmp(unit, "ns") == 0)
        d5_format_duration(v, buf, size);
    else
        snprintf(buf, size, "%.4g %s", v, unit);
}

d5_status d5_results_print(FILE *f, const d5_results *r)
{
    if (!f || !r) return d5_error(D5_ERR_INVALID, "d5_results_print: NULL argument");
    int w = 9;
    for (size_t i = 0; i < r->n; i++)
        if ((int)strlen(r->e[i].name) > w) w = (int)strlen(r->e[i].name);
    fprintf(f, "%-*s  %12s  %-28s %7s  %-8s  %s\n", w, "benchmark", "median", "95% CI of median",
            "n", "stop", "counters");
    for (size_t i = 0; i < r->n; i++) {
        const entry *e = &r->e[i];
        if (e->error) {
            fprintf(f, "%-*s  %12s  %s\n", w, e->name, "FAILED", e->error);
            continue;
        }
        char med[32], lo[32], hi[32], ci[80];
        format_value(e->m.stats.median, e->unit, med, sizeof med);
        format_value(e->m.stats.ci_low, e->unit, lo, sizeof lo);
        format_value(e->m.stats.ci_high, e->unit, hi, sizeof hi);
        snprintf(ci, sizeof ci, "[%s, %s]", lo, hi);
        fprintf(f, "%-*s  %12s  %-28s %7zu  %-8s ", w, e->name, med, ci, e->m.stats.n,
                d5_stop_reason_name(e->m.stop));
        if (e->m.stability.unstable) fprintf(f, " UNSTABLE(%s)", e->m.stability.reason);
        if (e->m.contention.contended || e->m.threads_min < e->m.threads_max)
            fprintf(f, " CONTENDED(%.1f cores busy, %d-%d threads)", e->m.contention.others_cores,
                    (int)e->m.threads_min, (int)e->m.threads_max);
        for (size_t c = 0; c < e->ncounters; c++)
            fprintf(f, " %s=%.4g%s%s", e->counters[c].name, e->counters[c].value,
                    e->counters[c].unit[0] ? " " : "", e->counters[c].unit);
        fputc('\n', f);
    }
    return ferror(f) ? d5_error(D5_ERR_IO, "cannot write the results table") : D5_OK;
}
