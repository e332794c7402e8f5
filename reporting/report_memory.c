/* The memory profile's reporters: memory.json, memory_timeline.csv, the
 * printed table and the counter tracks of a trace. */
#include "d5/report.h"
#include "internal.h"
#include "json.h"

#include <string.h>

static const char *str(const char *s)
{
    return s ? s : "";
}

static json_t *json_row(const d5_memory_row *r)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}",
                     "name", str(r->name), "op_type", str(r->op_type), "backend", str(r->backend),
                     "phase", d5_memory_phase_name(r->phase), "node", (int)r->node, "planned_bytes",
                     (json_int_t)r->planned_bytes, "heap_allocated_bytes",
                     (json_int_t)r->heap_allocated_bytes, "heap_freed_bytes",
                     (json_int_t)r->heap_freed_bytes, "heap_allocations",
                     (json_int_t)r->heap_allocations, "heap_frees", (json_int_t)r->heap_frees,
                     "heap_peak_bytes", (json_int_t)r->heap_peak_bytes, "actual_bytes",
                     (json_int_t)r->actual_bytes, "live_peak_bytes", (json_int_t)r->live_peak_bytes,
                     "start_ms", r->start_ms, "duration_ms", r->duration_ms);
}

static const d5_memory_row *row_at(const d5_memory_profile *p, int32_t i)
{
    return i >= 0 && i < p->nrows ? &p->rows[i] : NULL;
}

/* The peak: its size and parts, and the row it happened in (null fields when
 * none). */
static json_t *json_peak(const d5_memory_profile *p)
{
    const d5_memory_row *r = row_at(p, p->peak_row);
    json_t *o = json_pack("{s:I, s:f, s:I, s:I}", "bytes", (json_int_t)p->peak_bytes, "time_ms",
                          p->peak_ms, "planned_bytes", (json_int_t)p->peak_planned_bytes,
                          "heap_bytes", (json_int_t)p->peak_heap_bytes);
    if (!o) return NULL;
    int ok =
        d5__json_set(o, "phase", r ? json_string(d5_memory_phase_name(r->phase)) : json_null()) &&
        d5__json_set(o, "row", r ? json_string(str(r->name)) : json_null()) &&
        d5__json_set(o, "node", r && r->node >= 0 ? json_string(str(r->name)) : json_null()) &&
        d5__json_set(o, "op_type",
                     r && r->node >= 0 ? json_string(str(r->op_type)) : json_null()) &&
        d5__json_set(o, "backend", r && r->node >= 0 ? json_string(str(r->backend)) : json_null());
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_heap(const d5_memory_profile *p)
{
    const d5_memory_counters *c = &p->heap;
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "peak_bytes",
                     (json_int_t)p->heap_peak_bytes, "allocated_bytes",
                     (json_int_t)c->allocated_bytes, "freed_bytes", (json_int_t)c->freed_bytes,
                     "allocations", (json_int_t)c->allocations, "frees", (json_int_t)c->frees,
                     "live_bytes_at_end", (json_int_t)c->live_bytes, "foreign_frees",
                     (json_int_t)c->foreign_frees, "untracked", (json_int_t)c->untracked,
                     "dropped_events", (json_int_t)p->dropped_events);
}

static json_t *json_live_at_peak(const d5_memory_profile *p)
{
    json_t *a = json_array();
    for (int64_t i = 0; a && i < p->nblocks; i++) {
        const d5_memory_block *b = &p->blocks[i];
        if (!b->live_at_peak) continue;
        const d5_memory_row *r = row_at(p, b->row);
        json_t *o = json_pack("{s:s, s:s, s:I, s:f}", "label", str(b->label), "kind",
                              d5_memory_block_kind_name(b->kind), "bytes", (json_int_t)b->bytes,
                              "since_ms", b->since_ms);
        int ok = o && d5__json_set(o, "node", r ? json_string(str(r->name)) : json_null()) &&
                 d5__json_set(o, "phase",
                              r ? json_string(d5_memory_phase_name(r->phase)) : json_null()) &&
                 json_array_append_new(a, o) == 0;
        if (!ok) {
            json_decref(o);
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

d5_status d5_memory_profile_write_json(const d5_memory_profile *p, const char *path)
{
    if (!p || !path) return d5_error(D5_ERR_INVALID, "d5_memory_profile_write_json: NULL argument");
    json_t *doc = json_object(), *ops = json_array();
    int ok =
        doc && ops && d5__json_set(doc, "context", d5__json_context()) &&
        d5__json_set(doc, "name", json_string(str(p->name))) &&
        d5__json_set(doc, "clock", json_string(p->clock)) &&
        d5__json_set(doc, "origin_ns", json_real(p->origin_ns)) &&
        d5__json_set(doc, "duration_ms", json_real(p->duration_ms)) &&
        d5__json_set(doc, "runs", json_integer(p->runs)) &&
        d5__json_set(doc, "plan",
                     json_pack("{s:I, s:I, s:I, s:I}", "arena_bytes", (json_int_t)p->arena_bytes,
                               "unshared_bytes", (json_int_t)p->unshared_bytes, "param_bytes",
                               (json_int_t)p->param_bytes, "constant_bytes",
                               (json_int_t)p->constant_bytes)) &&
        d5__json_set(doc, "peak", json_peak(p)) &&
        d5__json_set(doc, "planned_peak_bytes", json_integer(p->planned_peak_bytes)) &&
        d5__json_set(doc, "heap", json_heap(p));
    for (int32_t i = 0; ok && i < p->nrows; i++) {
        json_t *r = json_row(&p->rows[i]);
        ok = r && json_array_append_new(ops, r) == 0;
    }
    ok = ok && json_object_set(doc, "operators", ops) == 0 &&
         d5__json_set(doc, "live_at_peak", json_live_at_peak(p));
    json_decref(ops);
    if (!ok) {
        json_decref(doc);
        return d5_error(D5_ERR_NOMEM, "out of memory building the memory report '%s'", path);
    }
    return d5__json_write(doc, path, JSON_INDENT(1));
}

d5_status d5_memory_profile_write_timeline(const d5_memory_profile *p, const char *path)
{
    if (!p || !path)
        return d5_error(D5_ERR_INVALID, "d5_memory_profile_write_timeline: NULL argument");
    d5_afile af;
    d5_status s = d5_afile_open(&af, path);
    if (s != D5_OK) return s;
    fprintf(af.f, "time_ms,live_bytes,delta_bytes,label\n");
    char label[1024];
    for (int64_t i = 0; i < p->npoints; i++) {
        const d5_memory_point *pt = &p->timeline[i];
        const d5_memory_block *b =
            pt->block >= 0 && pt->block < p->nblocks ? &p->blocks[pt->block] : NULL;
        snprintf(label, sizeof label, "%s:%s", d5_memory_block_kind_name(b ? b->kind : -1),
                 b ? str(b->label) : "");
        fprintf(af.f, "%.6f,%lld,%lld,", pt->time_ms, (long long)pt->live_bytes,
                (long long)pt->delta_bytes);
        d5_csv_field(af.f, label);
        fputc('\n', af.f);
    }
    return d5_afile_commit(&af);
}

d5_status d5_memory_profile_write_dir(const d5_memory_profile *p, const char *dir)
{
    if (!p || !dir) return d5_error(D5_ERR_INVALID, "d5_memory_profile_write_dir: NULL argument");
    d5_status s = d5_mkdirs(dir);
    char *json = s == D5_OK ? d5_path_join(dir, "memory.json") : NULL;
    char *csv = s == D5_OK ? d5_path_join(dir, "memory_timeline.csv") : NULL;
    if (s == D5_OK && (!json || !csv)) s = D5_ERR_NOMEM;
    if (s == D5_OK) s = d5_memory_profile_write_json(p, json);
    if (s == D5_OK) s = d5_memory_profile_write_timeline(p, csv);
    d5_free(json);
    d5_free(csv);
    return s;
}

/* "1.42 MiB" */
static void bytes_str(double b, char *buf, size_t size)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0, neg = b < 0;
    if (neg) b = -b;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%s%.2f %s" : "%s%.0f %s", neg ? "-" : "", b, unit[u]);
}

/* "forward, node conv3 (Conv, dnnl)" or "optimizer (momentum)". */
static void where_str(const d5_memory_row *r, char *buf, size_t size)
{
    if (!r)
        snprintf(buf, size, "before any node");
    else if (r->node >= 0)
        snprintf(buf, size, "%s, node %s (%s, %s)", d5_memory_phase_name(r->phase), str(r->name),
                 str(r->op_type), str(r->backend));
    else
        snprintf(buf, size, "%s, %s", d5_memory_phase_name(r->phase), str(r->name));
}

d5_status d5_memory_profile_print(FILE *f, const d5_memory_profile *p, int32_t top)
{
    if (!f || !p) return d5_error(D5_ERR_INVALID, "d5_memory_profile_print: NULL argument");
    char a[32], b[32], c[32], d[32], e[32], g[32], where[512];
    bytes_str((double)p->peak_bytes, a, sizeof a);
    bytes_str((double)p->peak_planned_bytes, b, sizeof b);
    bytes_str((double)p->peak_heap_bytes, c, sizeof c);
    where_str(row_at(p, p->peak_row), where, sizeof where);
    fprintf(f, "memory peak %s (planned %s + heap %s) at %.3f ms: %s\n", a, b, c, p->peak_ms,
            where);
    bytes_str((double)p->arena_bytes, a, sizeof a);
    bytes_str((double)p->planned_peak_bytes, b, sizeof b);
    bytes_str((double)p->unshared_bytes, c, sizeof c);
    bytes_str((double)p->param_bytes, d, sizeof d);
    fprintf(f,
            "            plan: arena %s (values live at once: at most %s; %s without reuse), "
            "parameters %s\n",
            a, b, c, d);
    bytes_str((double)p->heap.allocated_bytes, a, sizeof a);
    bytes_str((double)p->heap_peak_bytes, b, sizeof b);
    fprintf(f, "            heap: %lld allocation%s, %s, peak %s, %lld free%s%s\n",
            (long long)p->heap.allocations, p->heap.allocations == 1 ? "" : "s", a, b,
            (long long)p->heap.frees, p->heap.frees == 1 ? "" : "s",
            p->dropped_events ? " (events dropped: the timeline is incomplete)" : "");
    if (p->runs > 1)
        fprintf(f, "            %d executor runs seen; the first is the one recorded\n",
                (int)p->runs);
    int32_t *order = d5_alloc(((size_t)p->nrows + 1) * sizeof *order, "memory table");
    if (!order) return D5_ERR_NOMEM;
    int32_t n = 0;
    for (int32_t i = 0; i < p->nrows; i++)
        if (p->rows[i].start_ms >= 0) order[n++] = i;
    /* Insertion sort by actual bytes, largest first; ties in schedule order. */
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i;
             j > 0 && p->rows[order[j - 1]].actual_bytes < p->rows[order[j]].actual_bytes; j--) {
            int32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int32_t shown = top > 0 && top < n ? top : n;
    fprintf(f, "\nper operator memory (top %d of %d by actual = planned + heap peak):\n",
            (int)shown, (int)n);
    fprintf(f, "  %-36s %-14s %-9s %11s %11s %11s %11s %11s %11s\n", "node", "operator", "phase",
            "planned", "heap alloc", "heap freed", "heap peak", "actual", "live peak");
    for (int32_t k = 0; k < shown; k++) {
        const d5_memory_row *r = &p->rows[order[k]];
        bytes_str((double)r->planned_bytes, a, sizeof a);
        bytes_str((double)r->heap_allocated_bytes, b, sizeof b);
        bytes_str((double)r->heap_freed_bytes, c, sizeof c);
        bytes_str((double)r->heap_peak_bytes, d, sizeof d);
        bytes_str((double)r->actual_bytes, e, sizeof e);
        bytes_str((double)r->live_peak_bytes, g, sizeof g);
        fprintf(f, "  %-36.36s %-14.14s %-9s %11s %11s %11s %11s %11s %11s\n", str(r->name),
                r->node >= 0 ? str(r->op_type) : "-", d5_memory_phase_name(r->phase), a, b, c, d, e,
                g);
    }
    d5_free(order);
    return D5_OK;
}

d5_status d5_memory_profile_counter_tracks(const d5_memory_profile *p, d5_counter_track out[3],
                                           double **storage)
{
    if (!p || !out || !storage)
        return d5_error(D5_ERR_INVALID, "d5_memory_profile_counter_tracks: NULL argument");
    size_t n = (size_t)p->npoints + 1;
    double *x = d5_alloc(4 * n * sizeof *x, "memory counter tracks");
    if (!x) return D5_ERR_NOMEM;
    double *t = x, *total = x + n, *planned = x + 2 * n, *heap = x + 3 * n;
    t[0] = p->origin_ns;
    total[0] = planned[0] = heap[0] = 0;
    for (size_t i = 1; i < n; i++) {
        const d5_memory_point *pt = &p->timeline[i - 1];
        t[i] = p->origin_ns + pt->time_ms * 1e6;
        total[i] = (double)pt->live_bytes;
        planned[i] = (double)pt->planned_bytes;
        heap[i] = (double)pt->heap_bytes;
    }
    static const char *const series[] = {"total", "planned", "heap"};
    for (int k = 0; k < 3; k++)
        out[k] = (d5_counter_track){"memory bytes", series[k], n, t, x + (size_t)(k + 1) * n};
    *storage = x;
    return D5_OK;
}

d5_status d5_memory_profile_add_regions(const d5_memory_profile *p, d5_timer *timer)
{
    if (!p || !timer)
        return d5_error(D5_ERR_INVALID, "d5_memory_profile_add_regions: NULL argument");
    if (strcmp(p->clock, "timer") != 0)
        return d5_error(D5_ERR_INVALID,
                        "d5_memory_profile_add_regions: the profile '%s' was recorded on the %s "
                        "clock; record it with the timer as its clock",
                        str(p->name), p->clock);
    char key[D5_TIMER_KEY_MAX + 1];
    d5_status s = D5_OK;
    for (int32_t i = 0; s == D5_OK && i < p->nrows; i++) {
        const d5_memory_row *r = &p->rows[i];
        if (r->node < 0 || r->start_ms < 0) continue;
        snprintf(key, sizeof key, "%s%s", str(r->name),
                 r->phase == D5_MEMORY_BACKWARD ? "/backward" : "");
        s = d5_timer_add(timer, key, p->origin_ns + r->start_ms * 1e6, r->duration_ms * 1e6);
    }
    return s;
}

d5_status d5_memory_profile_write_trace(const d5_memory_profile *p, d5_timer *timer,
                                        const char *path)
{
    d5_counter_track tracks[3];
    double *storage = NULL;
    d5_status s = d5_memory_profile_counter_tracks(p, tracks, &storage);
    if (s == D5_OK) s = d5_report_trace_counters(timer, tracks, 3, path);
    d5_free(storage);
    return s;
}
