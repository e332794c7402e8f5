/* Chrome trace event format: one complete event per region. */
#include "d5/report.h"
#include "internal.h"
#include "json.h"

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

d5_status d5_report_trace(d5_timer *t, const char *path)
{
    if (!t || !path) return d5_error(D5_ERR_INVALID, "d5_report_trace: NULL argument");
    d5_status s = d5_timer_sync(t);
    if (s != D5_OK) return s;
    json_t *events = json_array();
    int pid = (int)getpid(), ok = events != NULL;
    static const struct {
        d5_timer_clock clock;
        int tid;
        const char *thread;
    } lanes[] = {{D5_TIMER_CPU, 1, "CPU"}, {D5_TIMER_CUDA, 2, "GPU (CUDA events)"}};
    ok = ok && name_event(events, "process_name", pid, 0, d5_timer_name(t));
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
                                             "ph", "X", "ts", ser.start_ns[i] * 1e-3, "dur",
                                             ser.duration_ns[i] * 1e-3, "pid", pid, "tid",
                                             lanes[l].tid, "args", "index", (json_int_t)i));
        }
        if (s != D5_OK) break;
    }
    if (s != D5_OK || !ok) {
        json_decref(events);
        return s != D5_OK ? s : d5_error(D5_ERR_NOMEM, "out of memory building trace '%s'", path);
    }
    json_t *doc = json_pack("{s:o, s:s, s:{s:s, s:I}}", "traceEvents", events, "displayTimeUnit",
                            "ns", "otherData", "generator", "d5", "origin_unix_ns",
                            (json_int_t)d5_timer_origin_unix_ns(t));
    return d5__json_write(doc, path, JSON_COMPACT);
}
