/* The system sampler's reports: system.csv, system.json, MLflow's system
 * metrics in a run log, counter tracks for a trace, and a console line. */
#define _GNU_SOURCE
#include "sysmon_internal.h"

#include "internal.h"
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- The columns of system.csv ---- */

typedef enum col_kind {
    COL_TIME,
    COL_CPU,
    COL_CORE,
    COL_RUNQ,
    COL_CTXT,
    COL_RSS,
    COL_MEM_USED,
    COL_MEM_AVAIL,
    COL_DISK_R,
    COL_DISK_W,
    COL_NET_RX,
    COL_NET_TX,
    COL_GPU_UTIL,
    COL_GPU_MEM,
    COL_GPU_POWER
} col_kind;

typedef struct column {
    char name[48];
    col_kind kind;
    int32_t index;   /* the core or GPU */
    const char *fmt; /* printf format of a value */
} column;

static double col_value(const column *c, const d5_sysmon_sample *s)
{
    switch (c->kind) {
    case COL_TIME: return s->time_s;
    case COL_CPU: return s->cpu_percent;
    case COL_CORE: return s->core_percent[c->index];
    case COL_RUNQ: return s->run_queue;
    case COL_CTXT: return s->context_switches_per_s;
    case COL_RSS: return s->rss_bytes;
    case COL_MEM_USED: return s->memory_used_bytes;
    case COL_MEM_AVAIL: return s->memory_available_bytes;
    case COL_DISK_R: return s->disk_read_bytes_per_s;
    case COL_DISK_W: return s->disk_write_bytes_per_s;
    case COL_NET_RX: return s->net_rx_bytes_per_s;
    case COL_NET_TX: return s->net_tx_bytes_per_s;
    case COL_GPU_UTIL: return s->gpu[c->index].util_percent;
    case COL_GPU_MEM: return s->gpu[c->index].memory_used_bytes;
    case COL_GPU_POWER: return s->gpu[c->index].power_w;
    }
    return NAN;
}

/* The columns in their order; *n of them, d5_free the array. */
static column *columns(const d5_sysmon *m, size_t *n)
{
    size_t total = 12 + (size_t)m->ncpu + 3 * (size_t)m->ngpu;
    column *c = d5_calloc(total, sizeof *c, "system report columns");
    if (!c) return NULL;
    size_t k = 0;
#define COL(kind_, idx_, fmt_, ...)                                                                \
    do {                                                                                           \
        c[k].kind = kind_;                                                                         \
        c[k].index = idx_;                                                                         \
        c[k].fmt = fmt_;                                                                           \
        snprintf(c[k].name, sizeof c[k].name, __VA_ARGS__);                                        \
        k++;                                                                                       \
    } while (0)
    COL(COL_TIME, 0, "%.6f", "time_s");
    COL(COL_CPU, 0, "%.2f", "cpu_percent");
    for (int32_t i = 0; i < m->ncpu; i++) COL(COL_CORE, i, "%.2f", "cpu%d_percent", (int)i);
    COL(COL_RUNQ, 0, "%.0f", "run_queue");
    COL(COL_CTXT, 0, "%.1f", "context_switches_per_s");
    COL(COL_RSS, 0, "%.0f", "rss_bytes");
    COL(COL_MEM_USED, 0, "%.0f", "memory_used_bytes");
    COL(COL_MEM_AVAIL, 0, "%.0f", "memory_available_bytes");
    COL(COL_DISK_R, 0, "%.1f", "disk_read_bytes_per_s");
    COL(COL_DISK_W, 0, "%.1f", "disk_write_bytes_per_s");
    COL(COL_NET_RX, 0, "%.1f", "net_rx_bytes_per_s");
    COL(COL_NET_TX, 0, "%.1f", "net_tx_bytes_per_s");
    for (int32_t i = 0; i < m->ngpu; i++) {
        COL(COL_GPU_UTIL, i, "%.0f", "gpu%d_util_percent", (int)i);
        COL(COL_GPU_MEM, i, "%.0f", "gpu%d_memory_used_bytes", (int)i);
        COL(COL_GPU_POWER, i, "%.3f", "gpu%d_power_w", (int)i);
    }
#undef COL
    *n = k;
    return c;
}

static const d5_sysmon_sample *sample_at(const d5_sysmon *m, size_t i)
{
    return &m->blk[i / D5__SYSMON_BLOCK][i % D5__SYSMON_BLOCK];
}

static d5_status check_stopped(const d5_sysmon *m, const void *arg, const char *what)
{
    if (!m || !arg) return d5_error(D5_ERR_INVALID, "%s: NULL argument", what);
    if (m->state != D5__SYSMON_STOPPED)
        return d5_error(D5_ERR_STATE, "%s: the sampler %s", what,
                        m->state == D5__SYSMON_RUNNING ? "still runs (stop it first)"
                                                       : "was never started");
    return D5_OK;
}

d5_status d5_sysmon_write_csv(const d5_sysmon *m, const char *path)
{
    d5_status s = check_stopped(m, path, "d5_sysmon_write_csv");
    if (s != D5_OK) return s;
    size_t nc;
    column *c = columns(m, &nc);
    if (!c) return D5_ERR_NOMEM;
    d5_afile af;
    s = d5_afile_open(&af, path);
    if (s != D5_OK) {
        d5_free(c);
        return s;
    }
    for (size_t j = 0; j < nc; j++) fprintf(af.f, "%s%s", j ? "," : "", c[j].name);
    fputc('\n', af.f);
    for (size_t i = 0; i < m->n; i++) {
        const d5_sysmon_sample *x = sample_at(m, i);
        for (size_t j = 0; j < nc; j++) {
            double v = col_value(&c[j], x);
            if (j) fputc(',', af.f);
            if (isfinite(v)) fprintf(af.f, c[j].fmt, v);
        }
        fputc('\n', af.f);
    }
    d5_free(c);
    return d5_afile_commit(&af);
}

/* ---- system.json ---- */

static json_t *number(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *summary(const d5_sysmon *m)
{
    size_t nc;
    column *c = columns(m, &nc);
    json_t *o = c ? json_object() : NULL;
    int ok = o != NULL;
    for (size_t j = 1; ok && j < nc; j++) { /* every column but time_s */
        double sum = 0, max = -INFINITY;
        size_t k = 0;
        for (size_t i = 0; i < m->n; i++) {
            double v = col_value(&c[j], sample_at(m, i));
            if (!isfinite(v)) continue;
            sum += v;
            max = v > max ? v : max;
            k++;
        }
        json_t *e = json_object();
        int filled = e && d5__json_set(e, "mean", number(k ? sum / (double)k : NAN)) &&
                     d5__json_set(e, "max", number(k ? max : NAN));
        if (!filled) json_decref(e);
        ok = filled && d5__json_set(o, c[j].name, e);
    }
    d5_free(c);
    if (!ok) json_decref(o);
    return ok ? o : NULL;
}

static json_t *energy_part(const d5_sysmon_energy_part *p, const char *source, double seconds,
                           double work)
{
    json_t *o = json_object();
    if (!o) return NULL;
    int ok = d5__json_set(o, "available", json_boolean(p->available));
    if (!p->available) {
        ok = ok && d5__json_set(o, "reason", json_string(p->reason));
    } else {
        ok = ok && d5__json_set(o, "source", json_string(source)) &&
             d5__json_set(o, "joules", json_real(p->joules)) &&
             d5__json_set(o, "watts", number(seconds > 0 ? p->joules / seconds : NAN)) &&
             d5__json_set(o, "devices", json_integer(p->devices));
        if (work > 0) ok = ok && d5__json_set(o, "joules_per_unit", json_real(p->joules / work));
    }
    if (!ok) json_decref(o);
    return ok ? o : NULL;
}

static json_t *energy(const d5_sysmon *m)
{
    d5_sysmon_energy e;
    if (d5_sysmon_energy_get(m, &e) != D5_OK) return NULL;
    json_t *o = json_object();
    int ok = o && d5__json_set(o, "seconds", json_real(e.seconds));
    if (ok && e.work > 0)
        ok = d5__json_set(o, "work", json_pack("{s:f, s:s}", "count", e.work, "unit", e.unit));
    ok = ok &&
         d5__json_set(o, "cpu",
                      energy_part(&e.cpu, "powercap RAPL package zones", e.seconds, e.work)) &&
         d5__json_set(o, "gpu",
                      energy_part(&e.gpu, "NVML total energy consumption", e.seconds, e.work));
    if (!ok) json_decref(o);
    return ok ? o : NULL;
}

static json_t *gpus(const d5_sysmon *m)
{
    if (!m->nvml) return json_pack("{s:b, s:s}", "available", 0, "reason", m->gpu_reason);
    json_t *names = json_array();
    for (int32_t i = 0; names && i < m->ngpu; i++)
        if (json_array_append_new(names, json_string(d5__nvml_name(m->nvml, i))) != 0) {
            json_decref(names);
            names = NULL;
        }
    return names
               ? json_pack("{s:b, s:i, s:o}", "available", 1, "count", (int)m->ngpu, "names", names)
               : NULL;
}

d5_status d5_sysmon_write_json(const d5_sysmon *m, const char *path)
{
    d5_status s = check_stopped(m, path, "d5_sysmon_write_json");
    if (s != D5_OK) return s;
    d5_sysmon_overhead ov;
    s = d5_sysmon_overhead_get(m, &ov);
    if (s != D5_OK) return s;
    json_t *doc = json_object();
    int ok = doc && d5__json_set(doc, "schema_version", json_integer(D5_SYSMON_SCHEMA_VERSION)) &&
             d5__json_set(doc, "context", d5__json_context()) &&
             d5__json_set(doc, "origin_unix_ns", json_integer((json_int_t)m->origin_unix_ns)) &&
             d5__json_set(doc, "hz", json_real(m->hz)) &&
             d5__json_set(doc, "samples", json_integer((json_int_t)m->n)) &&
             d5__json_set(doc, "duration_s", json_real(ov.wall_s)) &&
             d5__json_set(doc, "cores", json_integer(m->ncpu)) && d5__json_set(doc, "gpu", gpus(m));
    if (ok) {
        json_t *o = json_object();
        ok = o && d5__json_set(o, "thread_cpu_s", json_real(ov.thread_cpu_s)) &&
             d5__json_set(o, "wall_s", json_real(ov.wall_s)) &&
             d5__json_set(o, "fraction", number(ov.fraction)) &&
             d5__json_set(o, "per_sample_us", number(ov.per_sample_us));
        if (ok)
            ok = d5__json_set(doc, "overhead", o);
        else
            json_decref(o);
    }
    ok = ok && d5__json_set(doc, "summary", summary(m)) && d5__json_set(doc, "energy", energy(m));
    if (ok && m->warning[0]) ok = d5__json_set(doc, "warning", json_string(m->warning));
    if (!ok) {
        json_decref(doc);
        return d5_error(D5_ERR_NOMEM, "out of memory building '%s'", path);
    }
    return d5__json_write(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
}

/* ---- MLflow's system metrics ---- */

static d5_status metric(d5_runlog *log, const char *key, double v, int64_t step, int64_t ms)
{
    return isfinite(v) ? d5_runlog_metric(log, key, v, step, ms) : D5_OK;
}

d5_status d5_sysmon_to_runlog(const d5_sysmon *m, d5_runlog *log)
{
    d5_status s = check_stopped(m, log, "d5_sysmon_to_runlog");
    for (size_t i = 0; s == D5_OK && i < m->n; i++) {
        const d5_sysmon_sample *x = sample_at(m, i);
        int64_t step = (int64_t)i, ms = (int64_t)(x->unix_ns / 1000000u);
        double fs_total = x->fs_used_bytes + x->fs_available_bytes;
        struct {
            const char *key;
            double v;
        } v[] = {
            {"system/cpu_utilization_percentage", x->cpu_percent},
            {"system/system_memory_usage_megabytes", x->memory_used_bytes / 1e6},
            {"system/system_memory_usage_percentage",
             100 * x->memory_used_bytes / x->memory_total_bytes},
            {"system/disk_usage_megabytes", x->fs_used_bytes / 1e6},
            {"system/disk_available_megabytes", x->fs_available_bytes / 1e6},
            {"system/disk_usage_percentage", 100 * x->fs_used_bytes / fs_total},
            {"system/network_receive_megabytes", x->net_rx_bytes / 1e6},
            {"system/network_transmit_megabytes", x->net_tx_bytes / 1e6},
            {"system/process_memory_rss_megabytes", x->rss_bytes / 1e6},
        };
        for (size_t k = 0; s == D5_OK && k < sizeof v / sizeof v[0]; k++)
            s = metric(log, v[k].key, v[k].v, step, ms);
        for (int32_t g = 0; s == D5_OK && g < m->ngpu; g++) {
            const d5_sysmon_gpu_sample *u = &x->gpu[g];
            char key[96];
#define GPU_METRIC(suffix, value)                                                                  \
    if (s == D5_OK) {                                                                              \
        snprintf(key, sizeof key, "system/gpu_%d_%s", (int)g, suffix);                             \
        s = metric(log, key, value, step, ms);                                                     \
    }
            GPU_METRIC("utilization_percentage", u->util_percent);
            GPU_METRIC("memory_usage_megabytes", u->memory_used_bytes / 1e6);
            GPU_METRIC("memory_usage_percentage",
                       100 * u->memory_used_bytes / u->memory_total_bytes);
            GPU_METRIC("power_usage_watts", u->power_w);
            GPU_METRIC("power_usage_percentage", 100 * u->power_w / u->power_limit_w);
#undef GPU_METRIC
        }
    }
    return s;
}

/* ---- Counter tracks ---- */

/* The counter and series of each column (formats of the core or GPU number). */
static const struct {
    const char *name, *series;
} track_of[] = {
    [COL_TIME] = {"time", "s"},
    [COL_CPU] = {"CPU %%", "total"},
    [COL_CORE] = {"CPU %%", "cpu%d"},
    [COL_RUNQ] = {"run queue", "procs_running"},
    [COL_CTXT] = {"context switches /s", "ctxt"},
    [COL_RSS] = {"memory bytes", "rss"},
    [COL_MEM_USED] = {"memory bytes", "used"},
    [COL_MEM_AVAIL] = {"memory bytes", "available"},
    [COL_DISK_R] = {"disk bytes/s", "read"},
    [COL_DISK_W] = {"disk bytes/s", "write"},
    [COL_NET_RX] = {"network bytes/s", "rx"},
    [COL_NET_TX] = {"network bytes/s", "tx"},
    [COL_GPU_UTIL] = {"gpu%d %%", "util"},
    [COL_GPU_MEM] = {"gpu%d memory bytes", "used"},
    [COL_GPU_POWER] = {"gpu%d W", "power"},
};
_Static_assert(sizeof track_of / sizeof track_of[0] == COL_GPU_POWER + 1,
               "one counter track per column kind");

void d5_sysmon_counter_tracks_free(d5_counter_track *tracks, size_t n)
{
    if (!tracks) return;
    for (size_t i = 0; i < n; i++) {
        d5_free((char *)tracks[i].name);
        d5_free((char *)tracks[i].series);
        d5_free((double *)tracks[i].t_ns);
        d5_free((double *)tracks[i].value);
    }
    d5_free(tracks);
}

d5_status d5_sysmon_counter_tracks(const d5_sysmon *m, const d5_timer *t, d5_counter_track **tracks,
                                   size_t *n)
{
    d5_status s = check_stopped(m, t, "d5_sysmon_counter_tracks");
    if (s != D5_OK) return s;
    if (!tracks || !n) return d5_error(D5_ERR_INVALID, "d5_sysmon_counter_tracks: NULL argument");
    size_t nc;
    column *c = columns(m, &nc);
    d5_counter_track *tr = c ? d5_calloc(nc, sizeof *tr, "counter tracks") : NULL;
    if (!tr) {
        d5_free(c);
        return D5_ERR_NOMEM;
    }
    /* The sampler's start on the timer's time line, from one look at both clocks. */
    double base = d5_timer_now_ns(t) - (double)(d5__mono_ns() - m->origin_mono_ns);
    size_t k = 0;
    for (size_t j = 1; s == D5_OK && j < nc; j++) {
        if (c[j].kind == COL_TIME) continue;
        char name[48], series[48];
        snprintf(name, sizeof name, track_of[c[j].kind].name, (int)c[j].index);
        snprintf(series, sizeof series, track_of[c[j].kind].series, (int)c[j].index);
        d5_counter_track *x = &tr[k++];
        x->name = d5_strdup(name, "counter track");
        x->series = d5_strdup(series, "counter track");
        double *ts = d5_alloc((m->n ? m->n : 1) * sizeof *ts, "counter track");
        double *vs = d5_alloc((m->n ? m->n : 1) * sizeof *vs, "counter track");
        x->t_ns = ts;
        x->value = vs;
        if (!x->name || !x->series || !ts || !vs) {
            s = D5_ERR_NOMEM;
            break;
        }
        size_t p = 0;
        for (size_t q = 0; q < m->n; q++) {
            const d5_sysmon_sample *smp = sample_at(m, q);
            double v = col_value(&c[j], smp);
            if (!isfinite(v)) continue;
            ts[p] = base + (double)(smp->mono_ns - m->origin_mono_ns);
            vs[p++] = v;
        }
        x->n = p;
    }
    d5_free(c);
    if (s != D5_OK) {
        d5_sysmon_counter_tracks_free(tr, k);
        return s;
    }
    *tracks = tr;
    *n = k;
    return D5_OK;
}

/* ---- The console line ---- */

/* "0.412 J per inference" or "123 J". */
static void joules_text(const d5_sysmon_energy *e, const d5_sysmon_energy_part *p, char *buf,
                        size_t size)
{
    if (e->work > 0)
        snprintf(buf, size, "%.4g J per %s", p->joules / e->work, e->unit);
    else
        snprintf(buf, size, "%.4g J", p->joules);
}

d5_status d5_sysmon_summary_get(const d5_sysmon *m, d5_sysmon_summary *out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_sysmon_summary_get: out is NULL");
    d5_status s = check_stopped(m, out, "d5_sysmon_summary_get");
    if (s != D5_OK) return s;
    double sum = 0, max = -INFINITY, rss = -INFINITY, gsum = 0;
    size_t k = 0, gk = 0;
    for (size_t i = 0; i < m->n; i++) {
        const d5_sysmon_sample *x = sample_at(m, i);
        if (isfinite(x->cpu_percent)) {
            sum += x->cpu_percent;
            max = x->cpu_percent > max ? x->cpu_percent : max;
            k++;
        }
        if (isfinite(x->rss_bytes) && x->rss_bytes > rss) rss = x->rss_bytes;
        for (int32_t g = 0; g < m->ngpu; g++)
            if (isfinite(x->gpu[g].util_percent)) {
                gsum += x->gpu[g].util_percent;
                gk++;
            }
    }
    out->samples = m->n;
    out->cpu_percent_mean = k ? sum / (double)k : NAN;
    out->cpu_percent_max = k ? max : NAN;
    out->peak_rss_bytes = isfinite(rss) ? rss : NAN;
    out->gpu_util_percent_mean = gk ? gsum / (double)gk : NAN;
    return D5_OK;
}

void d5_sysmon_summary_line(const d5_sysmon *m, char *buf, size_t size)
{
    if (!buf || size == 0) return;
    d5_sysmon_summary sm;
    if (d5_sysmon_summary_get(m, &sm) != D5_OK) {
        snprintf(buf, size, "system report unavailable: %s", d5_last_error());
        return;
    }
    size_t at = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (at < size) {                                                                           \
            int w_ = snprintf(buf + at, size - at, __VA_ARGS__);                                   \
            at += w_ > 0 ? (size_t)w_ : 0;                                                         \
        }                                                                                          \
    } while (0)
    if (isfinite(sm.cpu_percent_mean))
        ADD("CPU %.1f%% mean (max %.1f%%)", sm.cpu_percent_mean, sm.cpu_percent_max);
    else
        ADD("CPU unmeasured (%zu samples)", sm.samples);
    char t[64];
    d5_format_bytes(sm.peak_rss_bytes, t, sizeof t);
    if (isfinite(sm.peak_rss_bytes)) ADD(", peak RSS %s", t);
    if (isfinite(sm.gpu_util_percent_mean)) ADD(", GPU %.0f%% mean", sm.gpu_util_percent_mean);
    d5_sysmon_energy e;
    if (d5_sysmon_energy_get(m, &e) != D5_OK) {
        ADD(", energy unavailable: %s", d5_last_error());
    } else if (!e.cpu.available && !e.gpu.available) {
        ADD(", energy unavailable: %s", e.cpu.reason);
    } else {
        char a[64], b[64];
        if (e.cpu.available) joules_text(&e, &e.cpu, a, sizeof a);
        if (e.gpu.available) joules_text(&e, &e.gpu, b, sizeof b);
        if (e.cpu.available && e.gpu.available)
            ADD(", energy %s (CPU packages) + %s (GPUs)", a, b);
        else if (e.cpu.available && m->ngpu)
            ADD(", energy %s (CPU packages; GPU energy unavailable: %s)", a, e.gpu.reason);
        else if (e.cpu.available)
            ADD(", energy %s (CPU packages)", a);
        else
            ADD(", energy %s (GPUs; CPU package energy unavailable: %s)", b, e.cpu.reason);
    }
#undef ADD
}
