/* The region timer as a table, CSV, JSON and a JSONL history. */
#include "d5/report.h"
#include "internal.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const d5_timer_clock all_clocks[] = {D5_TIMER_CPU, D5_TIMER_CUDA};
#define NCLOCKS (sizeof all_clocks / sizeof all_clocks[0])

/* Calls fn for every (key, clock) with samples. */
typedef d5_status (*row_fn)(void *ctx, d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                            const d5_timer_series *ser, const d5_stats *st);

static d5_status for_each_row(d5_timer *t, row_fn fn, void *ctx)
{
    d5_status s = d5_timer_sync(t);
    for (d5_timer_id id = 0; s == D5_OK && id < d5_timer_key_count(t); id++) {
        for (size_t c = 0; s == D5_OK && c < NCLOCKS; c++) {
            if (!d5_timer_has_clock(t, all_clocks[c])) continue;
            d5_timer_series ser;
            s = d5_timer_series_get(t, id, all_clocks[c], &ser);
            if (s != D5_OK || ser.n == 0) continue;
            d5_stats st;
            s = d5_stats_compute(ser.duration_ns, ser.n, &st);
            if (s == D5_OK) s = fn(ctx, t, id, all_clocks[c], &ser, &st);
        }
    }
    return s;
}

typedef struct table_ctx {
    FILE *f;
    int width;
} table_ctx;

static d5_status key_width(void *ctx, d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                           const d5_timer_series *ser, const d5_stats *st)
{
    (void)clock;
    (void)ser;
    (void)st;
    table_ctx *c = ctx;
    int w = (int)strlen(d5_timer_key_name(t, id));
    if (w > c->width) c->width = w;
    return D5_OK;
}

static double total_of(const d5_timer_series *ser)
{
    double sum = 0;
    for (size_t i = 0; i < ser->n; i++) sum += ser->duration_ns[i];
    return sum;
}

static d5_status table_row(void *ctx, d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                           const d5_timer_series *ser, const d5_stats *st)
{
    table_ctx *c = ctx;
    char med[24], lo[24], hi[24], v[7][24], ci[64];
    d5_format_duration(st->median, med, sizeof med);
    d5_format_duration(st->ci_low, lo, sizeof lo);
    d5_format_duration(st->ci_high, hi, sizeof hi);
    snprintf(ci, sizeof ci, "[%s, %s]", lo, hi);
    double vals[7] = {st->mean, st->stdev, st->min, st->p5, st->p95, st->max, total_of(ser)};
    for (int i = 0; i < 7; i++) d5_format_duration(vals[i], v[i], sizeof v[i]);
    fprintf(c->f, "%-*s  %-10s %7zu  %10s %-24s %10s %10s %10s %10s %10s %10s %10s\n", c->width,
            d5_timer_key_name(t, id), d5_timer_clock_name(t, clock), st->n, med, ci, v[0], v[1],
            v[2], v[3], v[4], v[5], v[6]);
    return D5_OK;
}

d5_status d5_report_table(FILE *f, d5_timer *t)
{
    if (!f || !t) return d5_error(D5_ERR_INVALID, "d5_report_table: NULL argument");
    table_ctx c = {f, 3};
    d5_status s = for_each_row(t, key_width, &c);
    if (s != D5_OK) return s;
    fprintf(f, "%-*s  %-10s %7s  %10s %-24s %10s %10s %10s %10s %10s %10s %10s\n", c.width, "key",
            "clock", "n", "median", "95% CI of median", "mean", "stdev", "min", "p5", "p95", "max",
            "total");
    s = for_each_row(t, table_row, &c);
    if (s == D5_OK && ferror(f)) s = d5_error(D5_ERR_IO, "cannot write the timer table");
    return s;
}

/* ---- CSV ---- */

static d5_status csv_row(void *ctx, d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                         const d5_timer_series *ser, const d5_stats *st)
{
    FILE *f = ctx;
    d5_csv_field(f, d5_timer_key_name(t, id));
    fprintf(
        f,
        ",%s,%zu,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
        d5_timer_clock_name(t, clock), st->n, st->min, st->p5, st->q1, st->median, st->ci_low,
        st->ci_high, st->q3, st->p95, st->max, st->mean, st->stdev, st->iqr, total_of(ser));
    return D5_OK;
}

static d5_status csv_samples_row(void *ctx, d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                                 const d5_timer_series *ser, const d5_stats *st)
{
    (void)st;
    FILE *f = ctx;
    for (size_t i = 0; i < ser->n; i++) {
        d5_csv_field(f, d5_timer_key_name(t, id));
        fprintf(f, ",%s,%zu,%.17g,%.17g\n", d5_timer_clock_name(t, clock), i, ser->start_ns[i],
                ser->duration_ns[i]);
    }
    return D5_OK;
}

static d5_status write_csv(d5_timer *t, const char *path, const char *header, row_fn fn)
{
    if (!t || !path) return d5_error(D5_ERR_INVALID, "timer CSV: NULL argument");
    d5_afile af;
    d5_status s = d5_afile_open(&af, path);
    if (s != D5_OK) return s;
    fputs(header, af.f);
    s = for_each_row(t, fn, af.f);
    if (s != D5_OK) {
        d5_afile_abort(&af);
        return s;
    }
    return d5_afile_commit(&af);
}

d5_status d5_report_csv(d5_timer *t, const char *path)
{
    return write_csv(t, path,
                     "key,clock,n,min_ns,p5_ns,q1_ns,median_ns,ci_low_ns,ci_high_ns,q3_ns,p95_ns,"
                     "max_ns,mean_ns,stdev_ns,iqr_ns,total_ns\n",
                     csv_row);
}

d5_status d5_report_csv_samples(d5_timer *t, const char *path)
{
    return write_csv(t, path, "key,clock,index,start_ns,duration_ns\n", csv_samples_row);
}

/* ---- JSON ---- */

static d5_status json_row(void *ctx, d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                          const d5_timer_series *ser, const d5_stats *st)
{
    json_t *keys = ctx, *o = json_object(), *samples = json_object();
    int ok = o && samples && d5__json_set(o, "key", json_string(d5_timer_key_name(t, id))) &&
             d5__json_set(o, "clock", json_string(d5_timer_clock_name(t, clock))) &&
             d5__json_set(o, "unit", json_string("ns")) &&
             d5__json_set(o, "total", json_real(total_of(ser))) &&
             d5__json_set(o, "stats", d5__json_stats(st)) &&
             d5__json_set(samples, "start_ns", d5__json_array(ser->start_ns, ser->n)) &&
             d5__json_set(samples, "duration_ns", d5__json_array(ser->duration_ns, ser->n)) &&
             json_object_set(o, "samples", samples) == 0 && json_array_append(keys, o) == 0;
    json_decref(samples);
    json_decref(o);
    return ok ? D5_OK : d5_error(D5_ERR_NOMEM, "out of memory building the timer JSON");
}

static json_t *timer_json_head(d5_timer *t)
{
    json_t *o = json_object();
    int ok =
        o && d5__json_set(o, "name", json_string(d5_timer_name(t))) &&
        d5__json_set(o, "origin_unix_ns", json_integer((json_int_t)d5_timer_origin_unix_ns(t))) &&
        d5__json_set(o, "cpu_clock", json_string(d5_timer_clock_name(t, D5_TIMER_CPU))) &&
        d5__json_set(o, "cuda_events", json_boolean(d5_timer_has_clock(t, D5_TIMER_CUDA)));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

d5_status d5_report_json(d5_timer *t, const char *path)
{
    if (!t || !path) return d5_error(D5_ERR_INVALID, "d5_report_json: NULL argument");
    json_t *doc = json_object(), *keys = json_array();
    if (!doc || !keys) {
        json_decref(doc);
        json_decref(keys);
        return d5_error(D5_ERR_NOMEM, "out of memory building '%s'", path);
    }
    d5_status s = for_each_row(t, json_row, keys);
    int ok = s == D5_OK && d5__json_set(doc, "context", d5__json_context()) &&
             d5__json_set(doc, "timer", timer_json_head(t)) &&
             json_object_set(doc, "keys", keys) == 0;
    json_decref(keys);
    if (s != D5_OK) {
        json_decref(doc);
        return s;
    }
    if (!ok) {
        json_decref(doc);
        return d5_error(D5_ERR_NOMEM, "out of memory building '%s'", path);
    }
    return d5__json_write(doc, path, JSON_INDENT(1));
}

/* ---- JSONL history ---- */

typedef struct jsonl_ctx {
    FILE *f;
    double origin_ms;
    int pass; /* 0: samples, 1: summaries */
} jsonl_ctx;

static int put_line(FILE *f, json_t *o)
{
    int ok =
        o && json_dumpf(o, f, JSON_COMPACT | JSON_REAL_PRECISION(12)) == 0 && fputc('\n', f) != EOF;
    json_decref(o);
    return ok;
}

static d5_status jsonl_row(void *ctx, d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                           const d5_timer_series *ser, const d5_stats *st)
{
    jsonl_ctx *c = ctx;
    const char *key = d5_timer_key_name(t, id), *cl = d5_timer_clock_name(t, clock);
    int ok = 1;
    if (c->pass == 0) {
        for (size_t i = 0; ok && i < ser->n; i++)
            ok =
                put_line(c->f, json_pack("{s:s, s:s, s:s, s:I, s:f, s:f, s:f}", "type", "sample",
                                         "key", key, "clock", cl, "step", (json_int_t)i, "start_ns",
                                         ser->start_ns[i], "duration_ns", ser->duration_ns[i],
                                         "timestamp_ms", c->origin_ms + ser->start_ns[i] * 1e-6));
    } else {
        ok = put_line(c->f, json_pack("{s:s, s:s, s:s, s:s, s:o}", "type", "summary", "key", key,
                                      "clock", cl, "unit", "ns", "stats", d5__json_stats(st)));
    }
    return ok ? D5_OK : d5_error(D5_ERR_IO, "cannot write the JSONL history");
}

d5_status d5_report_jsonl(d5_timer *t, const char *path)
{
    if (!t || !path) return d5_error(D5_ERR_INVALID, "d5_report_jsonl: NULL argument");
    d5_afile af;
    d5_status s = d5_afile_open(&af, path);
    if (s != D5_OK) return s;
    jsonl_ctx c = {af.f, (double)d5_timer_origin_unix_ns(t) * 1e-6, 0};
    json_t *head = json_pack("{s:s, s:s, s:o, s:o, s:i}", "type", "run", "name", d5_timer_name(t),
                             "context", d5__json_context(), "timer", timer_json_head(t),
                             "schema_version", D5_REPORT_SCHEMA_VERSION);
    if (!put_line(af.f, head)) s = d5_error(D5_ERR_IO, "cannot write '%s'", path);
    if (s == D5_OK) s = for_each_row(t, jsonl_row, &c);
    c.pass = 1;
    if (s == D5_OK) s = for_each_row(t, jsonl_row, &c);
    if (s != D5_OK) {
        d5_afile_abort(&af);
        return s;
    }
    return d5_afile_commit(&af);
}
