/* Chrome trace event format: one complete event per region. A timer's events
 * can also be rendered on their own, as text, and several processes' events
 * combined into one file (level 3 merges the ranks of a job this way), and
 * counter tracks (system metrics, memory) drawn beside the regions. */
#include "d5/report.h"
#include "internal.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int append(json_t *events, json_t *e)
{
    return e && json_array_append_new(events, e) == 0;
}

static int name_event(json_t *events, const char *what, int pid, int tid, const char *name)
{
    return append(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", what, "ph", "M", "pid",
                                    pid, "tid", tid, "args", "name", name));
}

/* Appends the timer's events to `events`: the process `pid` named
 * `process_name`, a thread per clock, one complete event per region, its
 * start shifted by `offset_ns`. */
static d5_status build_events(d5_timer *t, json_t *events, int pid, const char *process_name,
                              double offset_ns, const char *what)
{
    d5_status s = d5_timer_sync(t);
    if (s != D5_OK) return s;
    static const struct {
        d5_timer_clock clock;
        int tid;
        const char *thread;
    } lanes[] = {{D5_TIMER_CPU, 1, "CPU"}, {D5_TIMER_CUDA, 2, "GPU (CUDA events)"}};
    int ok = name_event(events, "process_name", pid, 0, process_name);
    for (size_t l = 0; ok && l < 2; l++) {
        if (!d5_timer_has_clock(t, lanes[l].clock)) continue;
        ok = name_event(events, "thread_name", pid, lanes[l].tid, lanes[l].thread);
        for (d5_timer_id id = 0; ok && id < d5_timer_key_count(t); id++) {
            d5_timer_series ser;
            s = d5_timer_series_get(t, id, lanes[l].clock, &ser);
            if (s != D5_OK) break;
            const char *key = d5_timer_key_name(t, id);
            /* Timestamps and durations are in microseconds. */
            for (size_t i = 0; ok && i < ser.n; i++)
                ok =
                    append(events, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:{s:I}}", "name",
                                             key, "cat", d5_timer_clock_name(t, lanes[l].clock),
                                             "ph", "X", "ts", (ser.start_ns[i] + offset_ns) * 1e-3,
                                             "dur", ser.duration_ns[i] * 1e-3, "pid", pid, "tid",
                                             lanes[l].tid, "args", "index", (json_int_t)i));
        }
        if (s != D5_OK) return s;
    }
    return ok ? D5_OK : d5_error(D5_ERR_NOMEM, "out of memory building %s", what);
}

/* Writes the trace document around `events` (stolen) atomically. */
static d5_status write_doc(json_t *events, const char *path, uint64_t origin_unix_ns)
{
    json_t *doc =
        json_pack("{s:o, s:s, s:{s:s, s:I}}", "traceEvents", events, "displayTimeUnit", "ns",
                  "otherData", "generator", "d5", "origin_unix_ns", (json_int_t)origin_unix_ns);
    return d5__json_write(doc, path, JSON_COMPACT);
}

d5_status d5_report_trace(d5_timer *t, const char *path)
{
    if (!t || !path) return d5_error(D5_ERR_INVALID, "d5_report_trace: NULL argument");
    json_t *events = json_array();
    if (!events) return d5_error(D5_ERR_NOMEM, "out of memory building trace '%s'", path);
    char what[64 + 1024];
    snprintf(what, sizeof what, "trace '%s'", path);
    d5_status s = build_events(t, events, (int)getpid(), d5_timer_name(t), 0, what);
    if (s != D5_OK) {
        json_decref(events);
        return s;
    }
    return write_doc(events, path, d5_timer_origin_unix_ns(t));
}

d5_status d5_report_trace_events(d5_timer *t, int32_t pid, const char *process_name,
                                 double offset_ns, char **out, size_t *len)
{
    if (!t || !out || !len)
        return d5_error(D5_ERR_INVALID, "d5_report_trace_events: NULL argument");
    if (!isfinite(offset_ns))
        return d5_error(D5_ERR_INVALID, "d5_report_trace_events: offset %g ns is not finite",
                        offset_ns);
    json_t *events = json_array();
    if (!events) return d5_error(D5_ERR_NOMEM, "out of memory building trace events");
    d5_status s = build_events(t, events, (int)pid, process_name ? process_name : d5_timer_name(t),
                               offset_ns, "trace events");
    char *text = s == D5_OK ? json_dumps(events, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(events);
    if (s != D5_OK) return s;
    /* jansson's memory is the C library's: the caller gets d5's. */
    char *copy = text ? d5_strdup(text, "trace events") : NULL;
    free(text);
    if (!copy) return d5_error(D5_ERR_NOMEM, "out of memory rendering trace events");
    *out = copy;
    *len = strlen(copy);
    return D5_OK;
}

d5_status d5_report_trace_combine(const char *path, const char *const *parts, const size_t *lens,
                                  size_t n, uint64_t origin_unix_ns)
{
    if (!path || (n && (!parts || !lens)))
        return d5_error(D5_ERR_INVALID, "d5_report_trace_combine: NULL argument");
    json_t *events = json_array();
    if (!events) return d5_error(D5_ERR_NOMEM, "out of memory building trace '%s'", path);
    for (size_t i = 0; i < n; i++) {
        json_error_t err;
        json_t *part = parts[i] ? json_loadb(parts[i], lens[i], 0, &err) : NULL;
        d5_status s = D5_OK;
        if (!parts[i])
            s = d5_error(D5_ERR_INVALID, "trace '%s': part %zu is NULL", path, i);
        else if (!part)
            s = d5_error(D5_ERR_FORMAT, "trace '%s': part %zu is not JSON: %s (line %d, column %d)",
                         path, i, err.text, err.line, err.column);
        else if (!json_is_array(part))
            s = d5_error(D5_ERR_FORMAT, "trace '%s': part %zu is not an array of trace events",
                         path, i);
        else if (json_array_extend(events, part) != 0)
            s = d5_error(D5_ERR_NOMEM, "out of memory building trace '%s'", path);
        json_decref(part);
        if (s != D5_OK) {
            json_decref(events);
            return s;
        }
    }
    return write_doc(events, path, origin_unix_ns);
}

/* Appends one counter event per finite point of each track. */
static d5_status counter_events(json_t *events, const d5_counter_track *tracks, size_t n, int pid,
                                const char *path)
{
    for (size_t k = 0; k < n; k++) {
        const d5_counter_track *c = &tracks[k];
        if (!c->name || !*c->name || !c->series || !*c->series)
            return d5_error(D5_ERR_INVALID, "trace '%s': counter track %zu has no %s", path, k,
                            !c->name || !*c->name ? "name" : "series");
        if (c->n && (!c->t_ns || !c->value))
            return d5_error(D5_ERR_INVALID,
                            "trace '%s': counter track '%s' (%s) has %zu points and a NULL array",
                            path, c->name, c->series, c->n);
        for (size_t i = 0; i < c->n; i++) {
            if (!isfinite(c->t_ns[i]))
                return d5_error(D5_ERR_INVALID,
                                "trace '%s': counter track '%s' (%s), point %zu: time %g ns is "
                                "not finite",
                                path, c->name, c->series, i, c->t_ns[i]);
            if (!isfinite(c->value[i])) continue;
            /* Timestamps in microseconds, as the regions'. */
            if (!append(events,
                        json_pack("{s:s, s:s, s:f, s:i, s:{s:f}}", "name", c->name, "ph", "C", "ts",
                                  c->t_ns[i] * 1e-3, "pid", pid, "args", c->series, c->value[i])))
                return d5_error(D5_ERR_NOMEM, "out of memory building trace '%s'", path);
        }
    }
    return D5_OK;
}

d5_status d5_report_trace_counters(d5_timer *t, const d5_counter_track *tracks, size_t n,
                                   const char *path)
{
    if (!t || !path || (n && !tracks))
        return d5_error(D5_ERR_INVALID, "d5_report_trace_counters: NULL argument");
    json_t *events = json_array();
    if (!events) return d5_error(D5_ERR_NOMEM, "out of memory building trace '%s'", path);
    char what[64 + 1024];
    snprintf(what, sizeof what, "trace '%s'", path);
    int pid = (int)getpid();
    d5_status s = build_events(t, events, pid, d5_timer_name(t), 0, what);
    if (s == D5_OK) s = counter_events(events, tracks, n, pid, path);
    if (s != D5_OK) {
        json_decref(events);
        return s;
    }
    return write_doc(events, path, d5_timer_origin_unix_ns(t));
}
