/* A run log: what an experiment tracker records of one run (its parameters,
 * tags and metric series), collected while the run goes on and written at its
 * end as an MLflow run (d5_runlog_write_mlflow) or a W&B offline run
 * (d5_runlog_write_wandb).
 *
 * Parameters are the run's resolved configuration, tags describe where it ran
 * (commit, host, versions), metrics are series of (value, step, wall-clock
 * time). Setting a parameter or tag again replaces its value; metrics append.
 * The log copies every string it is given.
 */
#ifndef D5_RUNLOG_H
#define D5_RUNLOG_H

#include "d5/core.h"
#include "d5/timer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct d5_runlog d5_runlog;

typedef enum d5_runlog_kind {
    D5_RUNLOG_PARAM = 0,
    D5_RUNLOG_TAG = 1,
    D5_RUNLOG_METRIC = 2,
} d5_runlog_kind;

/* One record. Parameters and tags use `text`; metrics use value, step and
 * timestamp_ms (milliseconds since the Unix epoch). */
typedef struct d5_runlog_entry {
    const char *key;
    const char *text;
    double value;
    int64_t step;
    int64_t timestamp_ms;
} d5_runlog_entry;

/* A new, empty log of a run called `name` (not empty), started now. */
D5_API D5_NODISCARD d5_status d5_runlog_create(const char *name, d5_runlog **out);
D5_API void d5_runlog_free(d5_runlog *log);

/* Keys are not empty and hold no '/' at either end, no "..", no control
 * characters, no ':' and no '\\' (they become file names); D5_ERR_INVALID names
 * the key otherwise. */
D5_API D5_NODISCARD d5_status d5_runlog_param(d5_runlog *log, const char *key, const char *value);
D5_API D5_NODISCARD d5_status d5_runlog_tag(d5_runlog *log, const char *key, const char *value);
/* A metric value; non-finite values are D5_ERR_INVALID (trackers reject them).
 * timestamp_ms < 0 means now. */
D5_API D5_NODISCARD d5_status d5_runlog_metric(d5_runlog *log, const char *key, double value,
                                               int64_t step, int64_t timestamp_ms);
/* Marks the run ended now, failed or not (a log never finished ends when it
 * is written, as finished). */
D5_API void d5_runlog_finish(d5_runlog *log, int failed);

D5_API const char *d5_runlog_name(const d5_runlog *log);
/* Start and end in milliseconds since the Unix epoch; end is -1 while running. */
D5_API int64_t d5_runlog_start_ms(const d5_runlog *log);
D5_API int64_t d5_runlog_end_ms(const d5_runlog *log);
D5_API int d5_runlog_failed(const d5_runlog *log);
/* The records of one kind in the order they were first given (borrowed until
 * the log changes or is freed). */
D5_API const d5_runlog_entry *d5_runlog_entries(const d5_runlog *log, d5_runlog_kind kind,
                                                size_t *n);
/* The value of a parameter or tag, NULL when there is none. */
D5_API const char *d5_runlog_lookup(const d5_runlog *log, d5_runlog_kind kind, const char *key);

/* Every sample of the region timer `t` as metric "<prefix><key>" (seconds,
 * step = the sample's index, timestamp = when the region started), and the
 * statistics of each key as metrics "<prefix><key>.median_s", ".ci_low_s",
 * ".ci_high_s", ".mean_s", ".p95_s" and ".count" at step 0, stamped now.
 * CUDA-event samples go under the prefix with "_gpu" before its last '/'
 * ("time/" -> "time_gpu/"). Characters a tracker does not allow in names
 * become '_'. Synchronises the timer first; D5_ERR_INVALID for a NULL
 * argument; the timer's errors otherwise. */
D5_API D5_NODISCARD d5_status d5_runlog_add_timer(d5_runlog *log, d5_timer *t, const char *prefix);

/* Writes the log as an MLflow run in the file-store layout that `mlflow ui
 * --backend-store-uri DIR` lists (core/report_mlflow.c describes it), under
 * `mlruns_dir` (created if missing), in the experiment named `experiment`
 * (NULL: "Default", id 0; a new name takes the next free numeric id). Every
 * parameter and tag is a file holding its value, every metric key a file of
 * lines "<timestamp ms> <value> <step>"; keys with '/' become folders;
 * characters MLflow does not allow in names become '_'. The tags
 * mlflow.runName (the log's name), mlflow.user ($USER), mlflow.source.name
 * ("d5"), mlflow.source.type ("LOCAL"), mlflow.source.git.commit and
 * d5.version are added where the log has none. The run starts at the log's
 * start or its earliest metric, whichever is first; its status is FINISHED,
 * or FAILED after d5_runlog_finish(log, 1). The run folder appears whole (it
 * is built beside its final name, then renamed). `run_id` (33 bytes or more;
 * may be NULL) receives the run's 32-hex-digit id. D5_ERR_INVALID: a NULL
 * argument, a short run_id buffer, two keys of one kind that become the same
 * name, or a name that would be both a file and a folder ("loss" and
 * "loss/train"); D5_ERR_IO naming the path that cannot be written. */
D5_API D5_NODISCARD d5_status d5_runlog_write_mlflow(const d5_runlog *log, const char *mlruns_dir,
                                                     const char *experiment, char *run_id,
                                                     size_t run_id_size);

/* Writes the log as a Weights & Biases offline run, the directory that
 * `wandb sync` uploads: DIR/offline-run-YYYYMMDD_HHMMSS-ID/ (the run's start,
 * local time) holding run-ID.wandb (W&B's record file: run record with the
 * project, the log's name and the config, one history record per step with
 * _step, _runtime and _timestamp, the summary, the exit code) and files/
 * (config.yaml, wandb-summary.json). The config holds the parameters (numbers
 * and true/false as JSON values, the rest as strings) and the tags as one
 * object "d5_tags"; the summary holds each metric's last logged value; the exit
 * code is 1 for a failed run. The entity is left to `wandb sync` (the user's
 * default, or --entity). DIR is created if needed; the run directory appears
 * whole. run_id (9 bytes or more; may be NULL) receives the 8-character id.
 * D5_ERR_INVALID: a NULL argument, a short run_id buffer, a project name W&B
 * refuses (empty, over 128 bytes, or holding / \ # ? % :), text that is not
 * UTF-8, a negative step, a metric named _step, _runtime, _timestamp or _wandb,
 * a parameter named _wandb or d5_tags; D5_ERR_IO naming the path that cannot
 * be written. */
D5_API D5_NODISCARD d5_status d5_runlog_write_wandb(const d5_runlog *log, const char *dir,
                                                    const char *project, char *run_id,
                                                    size_t run_id_size);

#ifdef __cplusplus
}
#endif
#endif
