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

#ifdef __cplusplus
}
#endif
#endif
