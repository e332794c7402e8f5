/* One reporter interface over the results (d5_results), in the manner of
 * google/benchmark's BenchmarkReporter: the context, each run, the finish.
 * The built-in reporters: a console table, JSON, CSV, an MLflow run and a
 * W&B offline run; the timer's regions convert into results. */
#include "d5/report.h"
#include "d5/runlog.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct d5_reporter {
    const d5_reporter_ops *ops;
    void *self;
};

d5_status d5_reporter_create(const d5_reporter_ops *ops, void *self, d5_reporter **out)
{
    if (!ops || !out) return d5_error(D5_ERR_INVALID, "d5_reporter_create: NULL argument");
    *out = NULL;
    d5_reporter *rep = d5_calloc(1, sizeof *rep, "reporter");
    if (!rep) {
        if (ops->free) ops->free(self);
        return D5_ERR_NOMEM;
    }
    rep->ops = ops;
    rep->self = self;
    *out = rep;
    return D5_OK;
}

void d5_reporter_free(d5_reporter *rep)
{
    if (!rep) return;
    if (rep->ops->free) rep->ops->free(rep->self);
    d5_free(rep);
}

const char *d5_reporter_name(const d5_reporter *rep)
{
    return rep && rep->ops->name ? rep->ops->name : "";
}

d5_status d5_reporter_report(d5_reporter *rep, const d5_results *r)
{
    if (!rep || !r) return d5_error(D5_ERR_INVALID, "d5_reporter_report: NULL argument");
    const d5_reporter_ops *ops = rep->ops;
    d5_status s = ops->context ? ops->context(rep->self, r) : D5_OK;
    for (size_t i = 0; s == D5_OK && ops->run && i < d5_results_count(r); i++)
        s = ops->run(rep->self, r, i);
    if (s == D5_OK && ops->finish) s = ops->finish(rep->self, r);
    return s;
}

d5_status d5_reporters_report(d5_reporter *const *reps, size_t n, const d5_results *r)
{
    if ((n && !reps) || !r) return d5_error(D5_ERR_INVALID, "d5_reporters_report: NULL argument");
    d5_status s = D5_OK;
    for (size_t i = 0; s == D5_OK && i < n; i++) s = d5_reporter_report(reps[i], r);
    return s;
}

/* ---- Console, JSON, CSV: the results' own writers, at the finish -------------------- */

static d5_status console_finish(void *self, const d5_results *r)
{
    return d5_results_print((FILE *)self, r);
}

static const d5_reporter_ops console_ops = {.name = "console", .finish = console_finish};

d5_status d5_reporter_console(FILE *f, d5_reporter **out)
{
    if (!f || !out) return d5_error(D5_ERR_INVALID, "d5_reporter_console: NULL argument");
    return d5_reporter_create(&console_ops, f, out);
}

static d5_status json_finish(void *self, const d5_results *r)
{
    return d5_results_write_json(r, (const char *)self);
}

static d5_status csv_finish(void *self, const d5_results *r)
{
    return d5_results_write_csv(r, (const char *)self);
}

static const d5_reporter_ops json_ops = {.name = "json", .finish = json_finish, .free = d5_free};
static const d5_reporter_ops csv_ops = {.name = "csv", .finish = csv_finish, .free = d5_free};

static d5_status path_reporter(const d5_reporter_ops *ops, const char *path, d5_reporter **out)
{
    if (!path || !out) return d5_error(D5_ERR_INVALID, "d5_reporter_%s: NULL argument", ops->name);
    char *copy = d5_strdup(path, "reporter path");
    if (!copy) return D5_ERR_NOMEM;
    return d5_reporter_create(ops, copy, out);
}

d5_status d5_reporter_json(const char *path, d5_reporter **out)
{
    return path_reporter(&json_ops, path, out);
}

d5_status d5_reporter_csv(const char *path, d5_reporter **out)
{
    return path_reporter(&csv_ops, path, out);
}

/* ---- MLflow and W&B: a run log of the results --------------------------------------- */

typedef struct tracker {
    int wandb; /* else MLflow */
    d5_tracker_params p;
    char *dir, *name, *project, *prefix; /* the copies p points to */
    d5_runlog *log;
} tracker;

static void tracker_free(void *self)
{
    tracker *t = self;
    if (!t) return;
    d5_runlog_free(t->log);
    d5_free(t->dir);
    d5_free(t->name);
    d5_free(t->project);
    d5_free(t->prefix);
    d5_free(t);
}

static d5_status tracker_context(void *self, const d5_results *r)
{
    (void)r;
    tracker *t = self;
    d5_runlog_free(t->log);
    t->log = NULL;
    d5_status s = d5_runlog_create(t->p.run_name, &t->log);
    if (s == D5_OK && t->p.before) s = t->p.before(t->p.user, t->log);
    return s;
}

/* Each benchmark's median, CI and sample count as metrics PREFIX<name>/...
 * (characters a tracker's file store refuses become '_'). */
static d5_status tracker_run(void *self, const d5_results *r, size_t i)
{
    tracker *t = self;
    const double *v;
    size_t n;
    d5_stats st;
    const char *name = d5_results_name(r, i);
    if (!name || d5_results_samples(r, i, &v, &n, &st) != D5_OK) return D5_OK; /* a failed case */
    char key[512];
    snprintf(key, sizeof key, "%s%s", t->p.metric_prefix, name);
    for (char *c = key; *c; c++)
        if (*c == ':' || *c == '\\' || (unsigned char)*c < 0x20 || (c[0] == '.' && c[1] == '.'))
            *c = '_';
    const struct {
        const char *suffix;
        double value;
    } m[] = {
        {"median", st.median}, {"ci_low", st.ci_low}, {"ci_high", st.ci_high}, {"n", (double)n}};
    d5_status s = D5_OK;
    for (size_t k = 0; s == D5_OK && k < sizeof m / sizeof m[0]; k++) {
        char full[600];
        snprintf(full, sizeof full, "%s/%s", key, m[k].suffix);
        if (isfinite(m[k].value)) s = d5_runlog_metric(t->log, full, m[k].value, 0, -1);
    }
    return s;
}

static d5_status tracker_finish(void *self, const d5_results *r)
{
    (void)r;
    tracker *t = self;
    d5_status s = t->p.after ? t->p.after(t->p.user, t->log) : D5_OK;
    if (s != D5_OK) return s;
    d5_runlog_finish(t->log, 0);
    char id[33];
    if (t->wandb) {
        s = d5_runlog_write_wandb(t->log, t->p.dir, t->p.project, id, sizeof id);
        if (s == D5_OK && t->p.say)
            fprintf(t->p.say, "W&B offline run %s written under %s\n", id, t->p.dir);
    } else {
        s = d5_runlog_write_mlflow(t->log, t->p.dir, t->p.project, id, sizeof id);
        if (s == D5_OK && t->p.say)
            fprintf(t->p.say, "mlflow run %s written under %s\n", id, t->p.dir);
    }
    return s;
}

static const d5_reporter_ops mlflow_ops = {.name = "mlflow",
                                           .context = tracker_context,
                                           .run = tracker_run,
                                           .finish = tracker_finish,
                                           .free = tracker_free};
static const d5_reporter_ops wandb_ops = {.name = "wandb",
                                          .context = tracker_context,
                                          .run = tracker_run,
                                          .finish = tracker_finish,
                                          .free = tracker_free};

static d5_status tracker_reporter(int wandb, const d5_tracker_params *p, d5_reporter **out)
{
    const char *what = wandb ? "d5_reporter_wandb" : "d5_reporter_mlflow";
    if (!p || !p->dir || !out) return d5_error(D5_ERR_INVALID, "%s: NULL argument", what);
    tracker *t = d5_calloc(1, sizeof *t, "tracker reporter");
    if (!t) return D5_ERR_NOMEM;
    t->wandb = wandb;
    t->p = *p;
    const char *name = p->run_name ? p->run_name : "d5";
    const char *project = p->project ? p->project : wandb ? "d5" : "Default";
    t->dir = d5_strdup(p->dir, "reporter path");
    t->name = d5_strdup(name, "run name");
    t->project = d5_strdup(project, "project name");
    t->prefix = d5_strdup(p->metric_prefix ? p->metric_prefix : "bench/", "metric prefix");
    if (!t->dir || !t->name || !t->project || !t->prefix) {
        tracker_free(t);
        return D5_ERR_NOMEM;
    }
    t->p.dir = t->dir;
    t->p.run_name = t->name;
    t->p.project = t->project;
    t->p.metric_prefix = t->prefix;
    return d5_reporter_create(wandb ? &wandb_ops : &mlflow_ops, t, out);
}

d5_tracker_params d5_tracker_default_params(void)
{
    d5_tracker_params p;
    memset(&p, 0, sizeof p);
    return p;
}

d5_status d5_reporter_mlflow(const d5_tracker_params *p, d5_reporter **out)
{
    return tracker_reporter(0, p, out);
}

d5_status d5_reporter_wandb(const d5_tracker_params *p, d5_reporter **out)
{
    return tracker_reporter(1, p, out);
}

/* ---- Timer regions as results ------------------------------------------------------ */

d5_status d5_results_add_timer(d5_results *r, d5_timer *t, const char *prefix)
{
    if (!r || !t) return d5_error(D5_ERR_INVALID, "d5_results_add_timer: NULL argument");
    static const d5_timer_clock clocks[] = {D5_TIMER_CPU, D5_TIMER_CUDA};
    d5_status s = d5_timer_sync(t);
    for (d5_timer_id id = 0; s == D5_OK && id < d5_timer_key_count(t); id++) {
        for (size_t c = 0; s == D5_OK && c < sizeof clocks / sizeof clocks[0]; c++) {
            if (!d5_timer_has_clock(t, clocks[c])) continue;
            d5_timer_series ser;
            s = d5_timer_series_get(t, id, clocks[c], &ser);
            if (s != D5_OK || ser.n == 0) continue;
            d5_measurement m;
            memset(&m, 0, sizeof m);
            m.samples = (double *)ser.duration_ns; /* copied by d5_results_add */
            m.n = ser.n;
            m.stop = D5_STOP_MAX_REPS;
            s = d5_stats_compute(ser.duration_ns, ser.n, &m.stats);
            for (size_t i = 0; s == D5_OK && i < ser.n; i++)
                m.elapsed_s += ser.duration_ns[i] * 1e-9;
            char name[600];
            snprintf(name, sizeof name, "%s%s%s", prefix ? prefix : "", d5_timer_key_name(t, id),
                     clocks[c] == D5_TIMER_CUDA ? "/cuda" : "");
            if (s == D5_OK) s = d5_results_add(r, name, &m, "ns", NULL);
        }
    }
    return s;
}
