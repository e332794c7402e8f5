/* d5 train's outputs after a run: the run log's parameters and metrics, CSV files,
 * the results folder. */
#define _POSIX_C_SOURCE 200809L
#include "train_out.h"

#include "results_folder.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- The run log ---- */

/* The wall-clock end of sample i of a timer key, in ms since the Unix epoch;
 * -1 (now) when the key does not have exactly n samples. */
static int64_t region_end_ms(d5_timer *t, d5_timer_id id, size_t n, size_t i)
{
    d5_timer_series ser;
    if (!t || d5_timer_series_get(t, id, D5_TIMER_CPU, &ser) != D5_OK || ser.n != n) return -1;
    double origin_ms = (double)d5_timer_origin_unix_ns(t) * 1e-6;
    return (int64_t)(origin_ms + (ser.start_ns[i] + ser.duration_ns[i]) * 1e-6);
}

/* The epoch (1-based) of every step, from the epochs' batch counts. */
static int32_t epoch_of(const d5_train_result *r, int64_t step0)
{
    int64_t end = 0;
    for (int32_t e = 0; e < r->nepochs; e++) {
        end += r->epochs[e].batches;
        if (step0 < end) return r->epochs[e].epoch;
    }
    /* A step of an epoch that stopped before its end (a target reached). */
    return r->nepochs > 0 ? r->epochs[r->nepochs - 1].epoch : 1;
}

static d5_status metric(d5_runlog *log, const char *key, double v, int64_t step, int64_t ts)
{
    return isfinite(v) ? d5_runlog_metric(log, key, v, step, ts) : D5_OK;
}

d5_status train_out_metrics(d5_runlog *log, const d5_train_result *r, d5_timer *t,
                            int64_t global_batch)
{
    d5_status s = D5_OK;
    for (int64_t i = 0; s == D5_OK && i < r->nlosses; i++) {
        int64_t ts = region_end_ms(t, D5_KEY_ID_BATCH, (size_t)r->nlosses, (size_t)i);
        double sec = r->step_seconds ? r->step_seconds[i] : NAN;
        s = metric(log, "train/loss", r->losses[i], i + 1, ts);
        if (s == D5_OK && r->lrs) s = metric(log, "train/lr", r->lrs[i], i + 1, ts);
        if (s == D5_OK) s = metric(log, "train/step_time_s", sec, i + 1, ts);
        if (s == D5_OK && sec > 0)
            s = metric(log, "train/samples_per_s", (double)global_batch / sec, i + 1, ts);
    }
    for (int32_t e = 0; s == D5_OK && e < r->nepochs; e++) {
        const d5_epoch_stats *st = &r->epochs[e];
        int64_t ts = region_end_ms(t, D5_KEY_ID_EPOCH, (size_t)r->nepochs, (size_t)e);
        const struct {
            const char *key;
            double v;
        } m[] = {{"epoch/train_loss", st->train_loss},
                 {"epoch/train_accuracy", st->train_accuracy},
                 {"epoch/test_loss", st->test_loss},
                 {"epoch/test_accuracy", st->test_accuracy},
                 {"epoch/seconds", st->seconds},
                 {"epoch/samples_per_s", st->samples_per_s},
                 {"epoch/batches_per_s", st->batches_per_s},
                 {"epoch/loader_samples_per_s", st->io_samples_per_s}};
        for (size_t k = 0; s == D5_OK && k < sizeof m / sizeof m[0]; k++)
            s = metric(log, m[k].key, m[k].v, st->epoch, ts);
    }
    if (s == D5_OK) s = metric(log, "final/test_accuracy", r->final_test_accuracy, 0, -1);
    if (s == D5_OK && r->time_to_accuracy_s >= 0)
        s = metric(log, "final/time_to_accuracy_s", r->time_to_accuracy_s, 0, -1);
    if (s == D5_OK && t) s = d5_runlog_add_timer(log, t, "time/");
    return s;
}

static d5_status param_number(d5_runlog *log, const char *key, double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.15g", v);
    return d5_runlog_param(log, key, buf);
}

/* The resolved configuration as parameters, beside the options (which
 * cli_runlog_context adds): the sampler and backends in effect, batch sizes,
 * ranks, data, every hyperparameter of the optimizer and the schedule. */
d5_status train_out_log_params(d5_runlog *log, const train_run_params *p)
{
    d5_status s = d5_runlog_param(log, "sampler", p->sampler);
    if (s == D5_OK) s = d5_runlog_param(log, "backend", p->backend);
    if (s == D5_OK) s = d5_runlog_param(log, "augment.resolved", p->augment);
    const d5_optimizer_params *o = p->opt ? d5_optimizer_get_params(p->opt) : NULL;
    const d5_schedule *sc = &p->tp->schedule;
    static const char *const schedules[] = {"constant", "step", "exponential", "cosine"};
    if (s == D5_OK)
        s = d5_runlog_param(log, "schedule.kind",
                            sc->kind >= 0 && sc->kind < 4 ? schedules[sc->kind] : "unknown");
    const struct {
        const char *key;
        double v;
    } n[] = {{"batch.local", (double)p->local_batch},
             {"batch.global", (double)p->global_batch},
             {"ranks", (double)p->jb->size},
             {"workers", (double)p->jb->workers},
             {"steps_per_epoch", (double)p->jb->epoch_steps},
             {"dataset.train_samples", p->train ? (double)d5_dataset_size(p->train) : 0},
             {"dataset.test_samples", p->test ? (double)d5_dataset_size(p->test) : 0},
             {"model.parameters", (double)d5_network_param_elements(p->net)},
             {"schedule.gamma", sc->gamma},
             {"schedule.step_size", (double)sc->step_size},
             {"schedule.total", (double)sc->total},
             {"schedule.lr_min", sc->lr_min},
             {"schedule.warmup", (double)sc->warmup},
             {"optimizer.lr", o ? o->lr : NAN},
             {"optimizer.momentum", o ? o->momentum : NAN},
             {"optimizer.beta1", o ? o->beta1 : NAN},
             {"optimizer.beta2", o ? o->beta2 : NAN},
             {"optimizer.eps", o ? o->eps : NAN},
             {"optimizer.alpha", o ? o->alpha : NAN},
             {"optimizer.weight_decay", o ? o->weight_decay : NAN},
             {"optimizer.initial_accumulator", o ? o->initial_accumulator : NAN},
             {"optimizer.accelegrad_d", o ? o->accelegrad_d : NAN},
             {"optimizer.accelegrad_g", o ? o->accelegrad_g : NAN}};
    for (size_t i = 0; s == D5_OK && i < sizeof n / sizeof n[0]; i++)
        s = param_number(log, n[i].key, n[i].v);
    if (s == D5_OK && p->train) s = d5_runlog_param(log, "dataset.name", d5_dataset_name(p->train));
    return s;
}

/* What only the run knows: the backends that ran, the threads, the stop. */
d5_status train_out_log_results(d5_runlog *log, const d5_train_result *r, const char *stop)
{
    char buf[512] = "";
    size_t used = 0;
    for (int32_t k = 0; k < r->nbackends && used < sizeof buf; k++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s %d", k ? ", " : "",
                                 r->backends[k].backend, (int)r->backends[k].nodes);
    d5_status s = d5_runlog_param(log, "backends_used", r->nbackends ? buf : "none");
    if (s == D5_OK) s = param_number(log, "threads.min", r->threads_min);
    if (s == D5_OK) s = param_number(log, "threads.max", r->threads_max);
    if (s == D5_OK) s = param_number(log, "batchnorm.training", r->batchnorm_training);
    if (s == D5_OK) s = param_number(log, "batchnorm.frozen", r->batchnorm_frozen);
    if (s == D5_OK && r->loss_scaling) {
        s = param_number(log, "loss_scale.skipped_steps", (double)r->skipped_steps);
        if (s == D5_OK) s = param_number(log, "loss_scale.final", r->loss_scale);
    }
    if (s == D5_OK) s = d5_runlog_tag(log, "d5.stop", stop);
    if (s == D5_OK) s = d5_runlog_tag(log, "d5.contention", r->contention.reason);
    return s;
}

/* ---- CSV files ---- */

/* A document built in memory (open_memstream on *buf, *len: both are set by
 * fclose), then written atomically. */
static d5_status write_buffer(FILE *f, char **buf, size_t *len, const char *path)
{
    d5_status s = fclose(f) == 0 ? d5_file_write_atomic(path, *buf, *len)
                                 : d5_error(D5_ERR_NOMEM, "%s: out of memory", path);
    free(*buf);
    return s;
}

d5_status train_out_epochs_csv(const d5_train_result *r, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return d5_error(D5_ERR_NOMEM, "%s: out of memory for the CSV", path);
    fprintf(f, "epoch,batches,samples,train_loss,train_accuracy,test_loss,test_accuracy,"
               "seconds,samples_per_s,batches_per_s,loader_samples_per_s\n");
    for (int32_t i = 0; i < r->nepochs; i++) {
        const d5_epoch_stats *e = &r->epochs[i];
        fprintf(f, "%d,%lld,%lld,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", (int)e->epoch,
                (long long)e->batches, (long long)e->samples, e->train_loss, e->train_accuracy,
                e->test_loss, e->test_accuracy, e->seconds, e->samples_per_s, e->batches_per_s,
                e->io_samples_per_s);
    }
    return write_buffer(f, &buf, &len, path);
}

d5_status train_out_steps_csv(const d5_train_result *r, int64_t global_batch, const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return d5_error(D5_ERR_NOMEM, "%s: out of memory for the CSV", path);
    fprintf(f, "step,epoch,loss,lr,seconds,samples_per_second\n");
    for (int64_t i = 0; i < r->nlosses; i++) {
        double sec = r->step_seconds ? r->step_seconds[i] : NAN;
        fprintf(f, "%lld,%d,%.9g,%.9g,%.9g,%.9g\n", (long long)(i + 1), (int)epoch_of(r, i),
                (double)r->losses[i], r->lrs ? r->lrs[i] : NAN, sec,
                sec > 0 ? (double)global_batch / sec : NAN);
    }
    return write_buffer(f, &buf, &len, path);
}

/* ---- The results folder ---- */

static d5_status out_summary(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return d5_file_write_atomic(path, o->summary ? o->summary : "", o->summary_len);
}
static d5_status out_json(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return cli_json_write(o->spec, NULL, json_incref(o->doc), path);
}
static d5_status out_epochs(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return train_out_epochs_csv(o->res, path);
}
static d5_status out_steps(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return train_out_steps_csv(o->res, o->global_batch, path);
}
static d5_status out_regions(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return d5_report_csv(o->timer, path);
}
static d5_status out_trace(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    if (!o->trace) return train_reports_trace(o->reports, o->timer, path);
    if (rename(o->trace, path) != 0)
        return d5_error(D5_ERR_IO, "cannot move '%s' to '%s': %s", o->trace, path, strerror(errno));
    return D5_OK;
}

static d5_status out_system_csv(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return o->reports->sys ? d5_sysmon_write_csv(o->reports->sys, path) : D5_OK;
}
static d5_status out_system_json(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return o->reports->sys ? d5_sysmon_write_json(o->reports->sys, path) : D5_OK;
}
static d5_status out_memory_json(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return o->reports->mem ? d5_memory_profile_write_json(o->reports->mem, path) : D5_OK;
}
static d5_status out_memory_timeline(const void *ctx, const char *path)
{
    const train_out *o = ctx;
    return o->reports->mem ? d5_memory_profile_write_timeline(o->reports->mem, path) : D5_OK;
}

/* The files of the folder, in the order they are written. A writer that has
 * nothing to write this run (a report not asked for) returns D5_OK and
 * leaves no file; the listing shows the files that are there. */
static const cli_folder_file outputs[] = {
    {"summary.txt", out_summary},     {"train.json", out_json},
    {"epochs.csv", out_epochs},       {"steps.csv", out_steps},
    {"regions.csv", out_regions},     {"trace.json", out_trace},
    {"system.csv", out_system_csv},   {"system.json", out_system_json},
    {"memory.json", out_memory_json}, {"memory_timeline.csv", out_memory_timeline},
};
#define NOUTPUTS (sizeof outputs / sizeof outputs[0])

d5_status train_out_folder(const char *dir, const train_out *o)
{
    return cli_folder_write(dir, outputs, NOUTPUTS, o);
}

void train_out_print_files(FILE *f, const char *dir)
{
    cli_folder_print(f, dir, outputs, NOUTPUTS);
}
