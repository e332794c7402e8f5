/* d5 train's system report and memory report: the sampler around the run,
 * the recorded step, and what they add to the printed report, the run log,
 * the trace and the results folder. */
#include "train_out.h"

#include <string.h>

d5_status train_reports_start(train_reports *r)
{
    if (r->system_hz <= 0) return D5_OK;
    d5_sysmon_params p = d5_sysmon_default_params();
    p.hz = r->system_hz;
    d5_status s = d5_sysmon_create(&p, &r->sys);
    if (s == D5_OK) s = d5_sysmon_start(r->sys);
    if (s != D5_OK) {
        d5_sysmon_free(r->sys);
        r->sys = NULL;
    }
    return s;
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

void train_reports_free(train_reports *r)
{
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
