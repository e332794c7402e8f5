/* JSON building blocks: the context block, statistics, atomic dumps. */
#define _GNU_SOURCE
#include "json.h"
#include "d5/machine.h"
#include "d5/report.h"
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int d5__json_set(json_t *obj, const char *key, json_t *value)
{
    return value && json_object_set_new(obj, key, value) == 0;
}

json_t *d5__json_array(const double *x, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_real(x[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *d5__json_stats(const d5_stats *s)
{
    json_t *o = json_object();
    if (!o) return NULL;
    int ok =
        d5__json_set(o, "n", json_integer((json_int_t)s->n)) &&
        d5__json_set(o, "min", json_real(s->min)) && d5__json_set(o, "p5", json_real(s->p5)) &&
        d5__json_set(o, "q1", json_real(s->q1)) &&
        d5__json_set(o, "median", json_real(s->median)) &&
        d5__json_set(o, "ci_low", json_real(s->ci_low)) &&
        d5__json_set(o, "ci_high", json_real(s->ci_high)) &&
        d5__json_set(o, "ci_level", json_real(s->ci_level)) &&
        d5__json_set(o, "ci_coverage", json_real(s->ci_coverage)) &&
        d5__json_set(o, "ci_rank_lo", json_integer((json_int_t)s->ci_rank_lo)) &&
        d5__json_set(o, "ci_rank_hi", json_integer((json_int_t)s->ci_rank_hi)) &&
        d5__json_set(o, "q3", json_real(s->q3)) && d5__json_set(o, "p95", json_real(s->p95)) &&
        d5__json_set(o, "max", json_real(s->max)) && d5__json_set(o, "mean", json_real(s->mean)) &&
        d5__json_set(o, "stdev", json_real(s->stdev)) && d5__json_set(o, "iqr", json_real(s->iqr));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *iso_date(void)
{
    char buf[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
    return json_string(buf);
}

/* 1 unless every CPU runs the "performance" governor (or there is no cpufreq). */
static int cpu_scaling_enabled(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "r");
    if (!f) return 0;
    char buf[64] = "";
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    return ok && strncmp(buf, "performance", 11) != 0;
}

json_t *d5__json_context(void)
{
    d5_machine_info m;
    d5_build_info b;
    if (d5_machine_query(&m) != D5_OK) return NULL;
    d5_build_info_get(&b);
    json_t *ctx = json_object(), *caches = json_array(), *load = json_array(), *d5 = json_object(),
           *libs = json_object();
    int ok = ctx && caches && load && d5 && libs;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    for (int i = 0; ok && i < m.ncaches; i++) {
        json_t *c = json_object();
        ok = c && d5__json_set(c, "type", json_string(m.caches[i].type)) &&
             d5__json_set(c, "level", json_integer(m.caches[i].level)) &&
             d5__json_set(c, "size", json_integer((json_int_t)m.caches[i].size_bytes)) &&
             d5__json_set(c, "num_sharing", json_integer(m.caches[i].shared_by)) &&
             json_array_append_new(caches, c) == 0;
    }
    double avg[3] = {0, 0, 0};
    int navg = getloadavg(avg, 3);
    for (int i = 0; ok && i < navg; i++) ok = json_array_append_new(load, json_real(avg[i])) == 0;
    ok = ok && d5__json_set(libs, "jansson", json_string(b.jansson)) &&
         d5__json_set(libs, "zlib", json_string(b.zlib)) &&
         d5__json_set(libs, "openblas", json_string(b.openblas)) &&
         d5__json_set(libs, "cuda_toolkit", json_string(b.cuda_toolkit));
    ok = ok && d5__json_set(d5, "version", json_string(b.version)) &&
         d5__json_set(d5, "git_commit", json_string(b.git_commit)) &&
         d5__json_set(d5, "compiler", json_string(b.compiler)) &&
         d5__json_set(d5, "build_type", json_string(b.build_type)) &&
         d5__json_set(d5, "flags", json_string(b.flags)) &&
         d5__json_set(d5, "system", json_string(b.system)) &&
         d5__json_set(d5, "cuda", json_boolean(b.cuda)) &&
         d5__json_set(d5, "schema_version", json_integer(D5_REPORT_SCHEMA_VERSION)) &&
         json_object_set(d5, "libraries", libs) == 0;
    ok = ok && d5__json_set(ctx, "date", iso_date()) &&
         d5__json_set(ctx, "host_name", json_string(m.hostname)) &&
         d5__json_set(ctx, "executable", json_string(exe)) &&
         d5__json_set(ctx, "num_cpus", json_integer(m.logical_cpus)) &&
         d5__json_set(ctx, "mhz_per_cpu", json_integer((json_int_t)(m.tsc_ghz * 1000 + 0.5))) &&
         d5__json_set(ctx, "cpu_scaling_enabled", json_boolean(cpu_scaling_enabled())) &&
         d5__json_set(ctx, "cpu_model", json_string(m.cpu_model)) &&
         json_object_set(ctx, "caches", caches) == 0 &&
         json_object_set(ctx, "load_avg", load) == 0 &&
         d5__json_set(ctx, "library_build_type",
                      json_string(strcmp(b.build_type, "Debug") == 0 ? "debug" : "release")) &&
         d5__json_set(ctx, "json_schema_version", json_integer(1)) &&
         json_object_set(ctx, "d5", d5) == 0;
    json_decref(caches);
    json_decref(load);
    json_decref(d5);
    json_decref(libs);
    if (!ok) {
        json_decref(ctx);
        return NULL;
    }
    return ctx;
}

d5_status d5__json_write(json_t *doc, const char *path, size_t flags)
{
    if (!doc) return d5_error(D5_ERR_NOMEM, "out of memory building the JSON for '%s'", path);
    d5_afile af;
    d5_status s = d5_afile_open(&af, path);
    if (s == D5_OK) {
        if (json_dumpf(doc, af.f, flags | JSON_REAL_PRECISION(12)) != 0 ||
            fputc('\n', af.f) == EOF) {
            s = d5_error(D5_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
            d5_afile_abort(&af);
        } else {
            s = d5_afile_commit(&af);
        }
    }
    json_decref(doc);
    return s;
}

char *d5_report_context_text(void)
{
    json_t *ctx = d5__json_context();
    char *text = ctx ? json_dumps(ctx, JSON_COMPACT) : NULL;
    json_decref(ctx);
    char *out = text ? d5_strdup(text, "context block") : NULL;
    free(text);
    return out;
}
