/* What d5 train writes after a run: the run log's metrics (for --mlflow), the
 * per-epoch and per-step CSV files, and the results folder of --out. */
#ifndef D5_CLI_TRAIN_OUT_H
#define D5_CLI_TRAIN_OUT_H

#include "cli.h"
#include "train_dist.h"

#include <jansson.h>

/* Everything a file of the results folder is made from (borrowed). A report
 * that adds files to the folder (a system sampler, a memory report) adds its
 * data here and its rows to the table in train_out.c. */
typedef struct train_out {
    const cli_spec *spec;
    const d5_train_result *res;
    d5_timer *timer;
    json_t *doc;          /* the document of --json, without its context */
    const char *summary;  /* what the run printed: summary.txt */
    size_t summary_len;   /* bytes */
    const char *trace;    /* a trace of every rank, written already: moved in; or NULL */
    int64_t global_batch; /* samples per step, all workers */
    const struct train_reports *reports; /* system.csv, system.json, memory.json,
                                            memory_timeline.csv; counter tracks */
} train_out;

/* What the run resolved beyond its options, for the run log's parameters. */
typedef struct train_run_params {
    const char *sampler, *backend, *augment;
    int64_t local_batch, global_batch;
    const job *jb;
    const d5_dataset *train, *test;
    const d5_network *net;
    const d5_trainer_params *tp;
    const d5_optimizer *opt;
} train_run_params;

/* The resolved configuration as parameters, beside the options (which
 * cli_runlog_context adds): sampler and backends in effect, batch sizes,
 * ranks, data, every hyperparameter of the optimizer and the schedule. */
d5_status train_out_log_params(d5_runlog *log, const train_run_params *p);
/* What only the run knows, after it: the backends that ran, the threads,
 * BatchNormalization nodes; the stop (`stop`, in words) as a tag. */
d5_status train_out_log_results(d5_runlog *log, const d5_train_result *r, const char *stop);

/* Per step (step = the optimizer's step number, 1-based; timestamp = the end
 * of the step's BATCH region): train/loss, train/lr, train/step_time_s,
 * train/samples_per_s; per epoch (step = the epoch, 1-based):
 * epoch/train_loss, epoch/train_accuracy, epoch/test_loss,
 * epoch/test_accuracy (where there is a test set), epoch/seconds,
 * epoch/samples_per_s, epoch/batches_per_s, epoch/loader_samples_per_s;
 * final/test_accuracy and final/time_to_accuracy_s (once reached); and the
 * timer's regions under time/ (d5_runlog_add_timer). */
d5_status train_out_metrics(d5_runlog *log, const d5_train_result *r, d5_timer *t,
                            int64_t global_batch);

/* "epoch,batches,samples,train_loss,train_accuracy,test_loss,test_accuracy,
 * seconds,samples_per_s,batches_per_s,loader_samples_per_s", one row per epoch. */
d5_status train_out_epochs_csv(const d5_train_result *r, const char *path);
/* "step,epoch,loss,lr,seconds,samples_per_second", one row per step. */
d5_status train_out_steps_csv(const d5_train_result *r, int64_t global_batch, const char *path);

/* The resolved augmentations as text ("crop 4, flip") and as the JSON of
 * the training document's config. */
void train_format_augment(const d5_augment *a, int64_t channels, char *buf, size_t size);
json_t *train_augment_json(const d5_sampler_params *sp, int64_t channels);

/* The system sampler (--system-hz) and the memory report of one step
 * (--memory-step) of d5 train, on rank 0. */
typedef struct train_reports {
    double system_hz;             /* 0: no sampler */
    int64_t memory_step;          /* 0: no memory report */
    d5_sysmon *sys;               /* running, then stopped; NULL when off */
    d5_trainer *trainer;          /* kept after the run when a step was recorded */
    const d5_memory_profile *mem; /* the trainer's, once the run is done */
    int record_steps;             /* --step-profile */
    d5_step_recorder *steps;      /* attached to the trainer while it runs */
    d5_step_profile profile;      /* the steps' medians, once the run is done */
} train_reports;

/* Starts the sampler when system_hz > 0. */
d5_status train_reports_start(train_reports *r);
/* Stops the sampler (the work: the run's steps) and takes the recorded step's
 * profile (a run that ended before that step says so on stderr). */
d5_status train_reports_stop(train_reports *r, const d5_train_result *res);
void train_reports_free(train_reports *r);
/* --step-profile: attaches the step recorder to t when asked; after the run,
 * takes the medians of its steps (the first left out) and frees it. */
d5_status train_reports_attach_steps(train_reports *r, d5_trainer *t);
d5_status train_reports_take_steps(train_reports *r);
/* Writes the profile taken, with the model's name and the threads. */
d5_status train_reports_step_file(train_reports *r, const char *model, int threads,
                                  const char *path);
/* The system line and the memory table. */
d5_status train_reports_print(FILE *f, const train_reports *r);
/* What train_reports_print prints, for the training document: sets "system"
 * (the line's figures and the line itself, energy or why none) and "memory"
 * (the recorded step's peak, plan, heap and operators) in doc, each when its
 * report ran. D5_ERR_NOMEM or a sampler's status. */
d5_status train_reports_json(const train_reports *r, json_t *doc);
/* The sampler's series as MLflow system metrics. */
d5_status train_reports_log(const train_reports *r, d5_runlog *log);
/* The timer's trace with the sampler's and the memory report's counter tracks. */
d5_status train_reports_trace(const train_reports *r, d5_timer *t, const char *path);
/* --memory FILE.json: the recorded step's FILE.json and FILE_timeline.csv. */
d5_status train_reports_memory_file(const train_reports *r, const char *path);

/* --precision (train_precision.c): the precision of the run, its loss
 * scaling parameters, and the float32 baseline trained beside a bf16 or f16
 * run from the same weights, seed and batches. */
typedef struct train_precision {
    const char *precision;           /* "f32", "bf16", "f16" */
    d5_loss_scale_params loss_scale; /* of the trainer (used when the result says so) */
    int has_baseline;                /* base holds the float32 run */
    d5_train_result base;            /* owned: d5_train_result_free */
} train_precision;

/* The lines of the run's report: what the executor made of the precision,
 * the loss scaling and its skipped steps; nothing for a float32 run without
 * loss scaling. */
void train_precision_print(FILE *f, const train_precision *p, const d5_train_result *res);
/* With a baseline: both runs' test accuracy and median step time [95% CI]
 * (first step left out), their difference and ratio. */
void train_precision_print_baseline(FILE *f, const train_precision *p, const d5_train_result *res);
/* The same as the "precision" object of the training document. */
json_t *train_precision_json(const train_precision *p, const d5_train_result *res);

/* Writes the results folder `dir` (which must not exist): every file of the
 * table, into a folder beside it that is renamed to `dir` once complete, so
 * that it appears whole; on failure nothing is left. */
d5_status train_out_folder(const char *dir, const train_out *o);
/* " summary.txt train.json ...": the files the folder holds. */
void train_out_print_files(FILE *f, const char *dir);

#endif
