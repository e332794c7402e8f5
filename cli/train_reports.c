/* d5 train's system report and memory report: the sampler around the run,
 * the recorded step, and what they add to the printed report, the run log,
 * the trace and the results folder. */
#include "train_out.h"

#include <math.h>
#include <string.h>

d5_status train_reports_start(train_reports *r)
{
    return d5_sysmon_begin(r->system_hz, &r->sys);
}

d5_status train_reports_stop(train_reports *r, const d5_train_result *res)
{
    d5_status s = D5_OK;
    if (r->sys) {
        s = d5_sysmon_stop(r->sys);
        if (s == D5_OK && res->nlosses > 0)
            s = d5_sysmon_set_work(r->sys, (double)res->nlosses, "step");
    }
    if (s == D5_OK && r->trainer && r->memory_step > 0) {
        if (res->nlosses >= r->memory_step)
            s = d5_trainer_memory_profile(r->trainer, &r->mem);
        else
            fprintf(stderr,
                    "d5 train: no memory report: the run stopped after %lld step%s, before step "
                    "%lld (--memory-step)\n",
                    (long long)res->nlosses, res->nlosses == 1 ? "" : "s",
                    (long long)r->memory_step);
    }
    return s;
}

d5_status train_reports_attach_steps(train_reports *r, d5_trainer *t)
{
    return r && r->record_steps ? d5_step_recorder_attach(t, &r->steps) : D5_OK;
}

d5_status train_reports_take_steps(train_reports *r)
{
    if (!r || !r->steps) return D5_OK;
    d5_status s = d5_step_recorder_profile(r->steps, 1, &r->profile);
    d5_step_recorder_free(r->steps);
    r->steps = NULL;
    return s;
}

d5_status train_reports_step_file(train_reports *r, const char *model, int threads,
                                  const char *path)
{
    if (r->profile.n < 1)
        return d5_error(D5_ERR_STATE, "--step-profile %s: no steps were recorded", path);
    const char *slash = strrchr(model, '/');
    snprintf(r->profile.model, sizeof r->profile.model, "%s", slash ? slash + 1 : model);
    r->profile.threads = threads;
    return d5_step_profile_write(&r->profile, path);
}

void train_reports_free(train_reports *r)
{
    d5_step_recorder_free(r->steps);
    r->steps = NULL;
    d5_step_profile_free(&r->profile);
    d5_sysmon_free(r->sys);
    r->sys = NULL;
    r->mem = NULL; /* the trainer's */
    d5_trainer_free(r->trainer);
    r->trainer = NULL;
}

d5_status train_reports_print(FILE *f, const train_reports *r)
{
    if (r->sys) {
        char line[1024];
        d5_sysmon_summary_line(r->sys, line, sizeof line);
        fprintf(f, "\nsystem: %s\n", line);
    }
    if (!r->mem) return D5_OK;
    fprintf(f, "\nmemory of training step %lld\n", (long long)r->memory_step);
    return d5_memory_profile_print(f, r->mem, 10);
}

d5_status train_reports_log(const train_reports *r, d5_runlog *log)
{
    return r->sys ? d5_sysmon_to_runlog(r->sys, log) : D5_OK;
}

d5_status train_reports_trace(const train_reports *r, d5_timer *t, const char *path)
{
    if (!r->sys && !r->mem) return d5_report_trace(t, path);
    d5_counter_track *sys = NULL, all[64];
    size_t nsys = 0, n = 0;
    double *storage = NULL;
    d5_status s = r->sys ? d5_sysmon_counter_tracks(r->sys, t, &sys, &nsys) : D5_OK;
    for (size_t i = 0; s == D5_OK && i < nsys && n < 61; i++) all[n++] = sys[i];
    if (s == D5_OK && r->mem) {
        s = d5_memory_profile_counter_tracks(r->mem, all + n, &storage);
        n += 3;
    }
    if (s == D5_OK) s = d5_report_trace_counters(t, all, n, path);
    d5_free(storage);
    d5_sysmon_counter_tracks_free(sys, nsys);
    return s;
}

d5_status train_reports_memory_file(const train_reports *r, const char *path)
{
    if (!path || !r->mem) return D5_OK;
    d5_status s = d5_memory_profile_write_json(r->mem, path);
    char csv[4200];
    size_t n = strlen(path);
    const char *stem_end = n > 5 && strcmp(path + n - 5, ".json") == 0 ? path + n - 5 : path + n;
    snprintf(csv, sizeof csv, "%.*s_timeline.csv", (int)(stem_end - path), path);
    if (s == D5_OK) s = d5_memory_profile_write_timeline(r->mem, csv);
    if (s == D5_OK) printf("memory report written to %s and %s\n", path, csv);
    return s;
}

/* A figure that was not measured is null. */
static json_t *figure(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *energy_json(const d5_sysmon_energy *e, const d5_sysmon_energy_part *p)
{
    if (!p->available) return json_pack("{s:b, s:s}", "available", 0, "reason", p->reason);
    return json_pack("{s:b, s:f, s:o, s:i}", "available", 1, "joules", p->joules, "joules_per_step",
                     e->work > 0 ? json_real(p->joules / e->work) : json_null(), "devices",
                     (int)p->devices);
}

static json_t *system_json(const d5_sysmon *m, d5_status *s)
{
    d5_sysmon_summary sm;
    d5_sysmon_energy e;
    if ((*s = d5_sysmon_summary_get(m, &sm)) != D5_OK) return NULL;
    if ((*s = d5_sysmon_energy_get(m, &e)) != D5_OK) return NULL;
    char line[1024];
    d5_sysmon_summary_line(m, line, sizeof line);
    return json_pack("{s:s, s:f, s:I, s:o, s:o, s:o, s:o, s:f, s:o, s:o}", "line", line, "hz",
                     d5_sysmon_hz(m), "samples", (json_int_t)sm.samples, "cpu_percent_mean",
                     figure(sm.cpu_percent_mean), "cpu_percent_max", figure(sm.cpu_percent_max),
                     "peak_rss_bytes", figure(sm.peak_rss_bytes), "gpu_util_percent_mean",
                     figure(sm.gpu_util_percent_mean), "seconds", e.seconds, "energy_cpu",
                     energy_json(&e, &e.cpu), "energy_gpu", energy_json(&e, &e.gpu));
}

static json_t *memory_json(const d5_memory_profile *p, int64_t step)
{
    const d5_memory_row *peak =
        p->peak_row >= 0 && p->peak_row < p->nrows ? &p->rows[p->peak_row] : NULL;
    json_t *ops = json_array();
    for (int32_t i = 0; ops && i < p->nrows; i++) {
        const d5_memory_row *r = &p->rows[i];
        if (r->start_ms < 0) continue; /* never ran */
        json_array_append_new(
            ops,
            json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "node",
                      r->name ? r->name : "", "operator", r->op_type ? r->op_type : "", "phase",
                      d5_memory_phase_name(r->phase), "planned_bytes", (json_int_t)r->planned_bytes,
                      "heap_allocated_bytes", (json_int_t)r->heap_allocated_bytes,
                      "heap_freed_bytes", (json_int_t)r->heap_freed_bytes, "heap_peak_bytes",
                      (json_int_t)r->heap_peak_bytes, "actual_bytes", (json_int_t)r->actual_bytes,
                      "live_peak_bytes", (json_int_t)r->live_peak_bytes));
    }
    return json_pack(
        "{s:I, s:{s:I, s:f, s:I, s:I, s:o}, s:{s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I, s:I}, "
        "s:i, s:o}",
        "step", (json_int_t)step, "peak", "bytes", (json_int_t)p->peak_bytes, "time_ms", p->peak_ms,
        "planned_bytes", (json_int_t)p->peak_planned_bytes, "heap_bytes",
        (json_int_t)p->peak_heap_bytes, "row",
        peak && peak->name ? json_string(peak->name) : json_null(), "plan", "arena_bytes",
        (json_int_t)p->arena_bytes, "values_live_at_once_bytes", (json_int_t)p->planned_peak_bytes,
        "without_reuse_bytes", (json_int_t)p->unshared_bytes, "parameter_bytes",
        (json_int_t)p->param_bytes, "heap", "allocations", (json_int_t)p->heap.allocations,
        "allocated_bytes", (json_int_t)p->heap.allocated_bytes, "peak_bytes",
        (json_int_t)p->heap_peak_bytes, "frees", (json_int_t)p->heap.frees, "dropped_events",
        (json_int_t)p->dropped_events, "executor_runs", (int)p->runs, "operators", ops);
}

d5_status train_reports_json(const train_reports *r, json_t *doc)
{
    d5_status s = D5_OK;
    if (r->sys) {
        json_t *o = system_json(r->sys, &s);
        if (s != D5_OK) return s;
        if (!o || json_object_set_new(doc, "system", o) != 0)
            return d5_error(D5_ERR_NOMEM, "out of memory building the system block");
    }
    if (r->mem) {
        json_t *o = memory_json(r->mem, r->memory_step);
        if (!o || json_object_set_new(doc, "memory", o) != 0)
            return d5_error(D5_ERR_NOMEM, "out of memory building the memory block");
    }
    return D5_OK;
}
