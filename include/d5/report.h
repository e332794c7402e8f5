/* d5 reporters (libd5reporting, the library above core that holds the
 * foreign formats: jansson, zlib, protobuf-c): the region timer and benchmark
 * results as a printed table, JSON, CSV, Chrome trace events, an MLflow run
 * directory and a JSONL history; the build information every report carries;
 * the reports of the machine (d5/machine.h) and of memory profiles
 * (d5/memory.h). The run logs (d5/runlog.h), the comparison of result sets
 * (d5/compare.h) and the system monitor (d5/sysmon.h) are this library's too.
 *
 * Every file is written atomically (a temporary file beside it, then a
 * rename), so a reader never sees half a report. JSON documents carry a
 * "context" block (schema version, date, host, d5 build) as Google Benchmark's
 * output does.
 */
#ifndef D5_REPORT_H
#define D5_REPORT_H

#include "d5/core.h"
#include "d5/machine.h"
#include "d5/memory.h"
#include "d5/runlog.h"
#include "d5/stats.h"
#include "d5/timer.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the JSON layouts written here; bumped on incompatible changes. */
#define D5_REPORT_SCHEMA_VERSION 1

/* ---- Version and build information ---------------------------------------- */

typedef struct d5_build_info {
    const char *version;      /* "0.1.0" */
    const char *git_commit;   /* "abc123def456" or "...-dirty" or "unknown" */
    const char *compiler;     /* "GNU 12.2.0" */
    const char *build_type;   /* "Release" */
    const char *flags;        /* C flags the library was compiled with */
    const char *system;       /* "Linux x86_64" */
    int cuda;                 /* 1 when built with the CUDA toolkit */
    const char *cuda_toolkit; /* toolkit version or "" */
    char jansson[16];         /* library versions seen at run time */
    char zlib[16];
    char openblas[128];
} d5_build_info;

/* Fills `out`; every string is static or stored in the struct. The library
 * versions are those of the process: jansson and zlib (which this library
 * links) and OpenBLAS when it is loaded (d5_blas_info_get), else "". */
D5_API void d5_build_info_get(d5_build_info *out);

/* ---- Formats ---------------------------------------------------------------------- */

/* The "context" block every d5 JSON document carries (schema version, date,
 * host, d5 build), as the text of one JSON object; the caller frees it with
 * d5_free. NULL when out of memory. */
D5_API char *d5_report_context_text(void);
/* Writes "812 ns", "12.4 us", "3.05 ms", "1.20 s" (3 significant digits). */
D5_API void d5_format_duration(double ns, char *buf, size_t size);
/* Writes "812 B", "12.4 KiB", "3.1 MiB" (powers of 1024, up to TiB). */
D5_API void d5_format_bytes(double bytes, char *buf, size_t size);
/* Writes s as one CSV field (RFC 4180): as it is, or in double quotes with
 * quotes doubled where it holds a comma, a quote or a line break. Every CSV
 * file d5 writes quotes its text this way. */
D5_API void d5_csv_field(FILE *f, const char *s);

/* ---- The region timer ---------------------------------------------------------- */

/* One row per key with samples: key, clock, n, median [95% CI], mean, stdev,
 * min, p5, p95, max, IQR and total, with units. Keys without samples are left out. */
D5_API D5_NODISCARD d5_status d5_report_table(FILE *f, d5_timer *t);
/* {"context": {...}, "timer": {...}, "keys": [{"key", "clock", "stats": {...},
 * "samples": {"start_ns": [...], "duration_ns": [...]}}]} */
D5_API D5_NODISCARD d5_status d5_report_json(d5_timer *t, const char *path);
/* Header "key,clock,n,min_ns,p5_ns,q1_ns,median_ns,ci_low_ns,ci_high_ns,q3_ns,p95_ns,
 * max_ns,mean_ns,stdev_ns,iqr_ns,total_ns" and one row per key and clock. */
D5_API D5_NODISCARD d5_status d5_report_csv(d5_timer *t, const char *path);
/* Every sample: "key,clock,index,start_ns,duration_ns". */
D5_API D5_NODISCARD d5_status d5_report_csv_samples(d5_timer *t, const char *path);
/* Chrome trace event format (JSON object form): one complete ("X") event per
 * region, process and thread names as metadata events; CUDA-event regions on
 * a thread of their own. Opens in ui.perfetto.dev and chrome://tracing. */
D5_API D5_NODISCARD d5_status d5_report_trace(d5_timer *t, const char *path);
/* The events that d5_report_trace writes, as the text of one JSON array, for
 * traces of several processes on one time line (d5_comm_trace_merge): the
 * process is `pid`, named `process_name` (NULL: the timer's name), and every
 * region starts `offset_ns` later than on the timer's own time line (the
 * timer's origin as seen from a common origin). *out (NUL-terminated, *len
 * bytes without the NUL) is the caller's: free it with d5_free. D5_ERR_INVALID
 * for a NULL argument or an offset that is not finite. */
D5_API D5_NODISCARD d5_status d5_report_trace_events(d5_timer *t, int32_t pid,
                                                     const char *process_name, double offset_ns,
                                                     char **out, size_t *len);
/* Writes one trace file of the format of d5_report_trace from n arrays of
 * events rendered by d5_report_trace_events (parts[i], lens[i] bytes; they are
 * parsed, so a part that is not a JSON array is D5_ERR_FORMAT naming it, and
 * nothing is written). origin_unix_ns is the wall-clock time of the common
 * origin, recorded as in d5_report_trace. */
D5_API D5_NODISCARD d5_status d5_report_trace_combine(const char *path, const char *const *parts,
                                                      const size_t *lens, size_t n,
                                                      uint64_t origin_unix_ns);
/* A series of values over time, drawn as a counter track beside the timer's
 * regions: the system sampler's CPU, memory and traffic
 * (d5_sysmon_counter_tracks), a memory timeline, any measured quantity.
 * Tracks that share `name` are series of one counter. Every array is
 * borrowed for the call. */
typedef struct d5_counter_track {
    const char *name;    /* the counter ("CPU %", "memory bytes"); not empty */
    const char *series;  /* the series within it ("total", "rss"); not empty */
    size_t n;            /* points */
    const double *t_ns;  /* times on the timer's clock, ns from its origin (as
                            d5_timer_now_ns and the regions' start_ns) */
    const double *value; /* values; NaN or infinite points are left out */
} d5_counter_track;
/* Writes what d5_report_trace writes plus one counter ("ph":"C") event per
 * point of each track, on the timer's process and time line. D5_ERR_INVALID
 * names the track that has no name or series, NULL arrays for n > 0, or a time
 * that is not finite; nothing is written then. */
D5_API D5_NODISCARD d5_status d5_report_trace_counters(d5_timer *t, const d5_counter_track *tracks,
                                                       size_t n, const char *path);
/* One JSON object per line: first {"type":"run", "name", "context", "params"},
 * then {"type":"sample", "key", "clock", "step", "start_ns", "duration_ns",
 * "timestamp_ms"} for every sample, last {"type":"summary", "key", "clock",
 * "stats"} per key. scripts/wandb_replay.py sends it to Weights & Biases. */
D5_API D5_NODISCARD d5_status d5_report_jsonl(d5_timer *t, const char *path);

/* An MLflow run in the file-store layout that `mlflow ui --backend-store-uri
 * DIR` lists: DIR/<experiment id>/meta.yaml, DIR/<experiment id>/<run id>/
 * {meta.yaml, metrics/<key>, params/<name>, tags/<name>}. Every sample becomes
 * a metric line "<timestamp ms> <duration s> <step>" under "time/<key>" (and
 * "time_gpu/<key>" for CUDA events); the statistics become metrics
 * "<key>.median_s" etc. The run directory appears whole (built beside it, then
 * renamed). */
typedef struct d5_mlflow_params {
    const char *experiment;    /* name; created if new; default "Default" (id 0) */
    const char *run_name;      /* default: the timer's name */
    const char *const *params; /* name/value pairs: params[2i], params[2i+1] */
    size_t nparams;
} d5_mlflow_params;

/* Writes the run; `run_id` (33 bytes or more, may be NULL) receives its id. */
D5_API D5_NODISCARD d5_status d5_report_mlflow(d5_timer *t, const char *mlruns_dir,
                                               const d5_mlflow_params *p, char *run_id,
                                               size_t run_id_size);

/* ---- Benchmark results ------------------------------------------------------------ */

/* A list of measured benchmarks, written as Google Benchmark-compatible JSON
 * (context + benchmarks; aggregates mean, median, stddev, cv per benchmark and
 * the d5 statistics in the median entry), CSV, and a printed table. */
typedef struct d5_results d5_results;

D5_API D5_NODISCARD d5_status d5_results_create(d5_results **out);
D5_API void d5_results_free(d5_results *r);
/* Adds a context entry (a string or a number) to the JSON context block. */
D5_API D5_NODISCARD d5_status d5_results_context(d5_results *r, const char *key, const char *value);
D5_API D5_NODISCARD d5_status d5_results_context_number(d5_results *r, const char *key,
                                                        double value);
/* Adds a benchmark named `name` ("family/case") whose samples are in `unit`
 * ("ns" for times). The samples and statistics are copied. `index` (may be
 * NULL) receives its position for counters. */
D5_API D5_NODISCARD d5_status d5_results_add(d5_results *r, const char *name,
                                             const d5_measurement *m, const char *unit,
                                             size_t *index);
/* Attaches a derived value (GFLOP/s, bytes/s, ratio) to a benchmark. */
D5_API D5_NODISCARD d5_status d5_results_counter(d5_results *r, size_t index, const char *name,
                                                 double value, const char *unit);
/* Marks a benchmark as failed with a reason; writers show it and go on. */
D5_API D5_NODISCARD d5_status d5_results_add_error(d5_results *r, const char *name,
                                                   const char *reason);
D5_API size_t d5_results_count(const d5_results *r);
/* The name of benchmark `index`, NULL past the end (borrowed). */
D5_API const char *d5_results_name(const d5_results *r, size_t index);
/* Finds a benchmark by name; D5_ERR_NOTFOUND if there is none. */
D5_API D5_NODISCARD d5_status d5_results_find(const d5_results *r, const char *name, size_t *index);
/* The samples of a benchmark (borrowed until the results are freed) and its
 * statistics; D5_ERR_STATE for a failed benchmark. */
D5_API D5_NODISCARD d5_status d5_results_samples(const d5_results *r, size_t index,
                                                 const double **samples, size_t *n,
                                                 d5_stats *stats);

D5_API D5_NODISCARD d5_status d5_results_write_json(const d5_results *r, const char *path);
/* "name,unit,n,median,ci_low,ci_high,mean,stdev,min,p5,p95,max,stop,error" and
 * one column per counter name. */
D5_API D5_NODISCARD d5_status d5_results_write_csv(const d5_results *r, const char *path);
/* Every sample: "name,unit,index,value". */
D5_API D5_NODISCARD d5_status d5_results_write_samples_csv(const d5_results *r, const char *path);
/* An aligned table: name, median [CI], n, stop, counters. */
D5_API D5_NODISCARD d5_status d5_results_print(FILE *f, const d5_results *r);

/* Adds one benchmark per key of `t` with samples, per clock: its durations in
 * ns under the name PREFIX + key (+ "/cuda" for CUDA events; prefix may be
 * NULL), so that the timer's regions go through the reporters below. The
 * timer is synchronised first. The timer's and d5_results_add's errors. */
D5_API D5_NODISCARD d5_status d5_results_add_timer(d5_results *r, d5_timer *t, const char *prefix);

/* ---- Reporters: one interface over the results ------------------------------------ */

/* A reporter writes d5_results in one format, in the manner of google/benchmark's
 * BenchmarkReporter: d5_reporter_report calls `context` once, before any run
 * (the results' context block), `run` for every benchmark in order (failed
 * ones included: d5_results_samples says which), then `finish`, where a
 * reporter that needs every run (an aligned table, a file written atomically,
 * a tracker's run) writes. Any callback may be NULL; the first error stops the
 * report and is returned. A reporter is used from one thread at a time. */
typedef struct d5_reporter_ops {
    const char *name; /* "console", "json", "csv", "mlflow", "wandb", ... */
    d5_status (*context)(void *self, const d5_results *r);
    d5_status (*run)(void *self, const d5_results *r, size_t index);
    d5_status (*finish)(void *self, const d5_results *r);
    void (*free)(void *self); /* frees `self` with the reporter; may be NULL */
} d5_reporter_ops;

typedef struct d5_reporter d5_reporter;

/* A reporter over `ops` (borrowed: static in practice) and its state `self`,
 * which the reporter owns from here on (ops->free frees it, also when this
 * fails). D5_ERR_INVALID, D5_ERR_NOMEM. */
D5_API D5_NODISCARD d5_status d5_reporter_create(const d5_reporter_ops *ops, void *self,
                                                 d5_reporter **out);
D5_API void d5_reporter_free(d5_reporter *rep);
/* ops->name, "" when none. */
D5_API const char *d5_reporter_name(const d5_reporter *rep);
/* context, every run, finish, as above. */
D5_API D5_NODISCARD d5_status d5_reporter_report(d5_reporter *rep, const d5_results *r);
/* Each of the n reporters in turn; the first error stops them. */
D5_API D5_NODISCARD d5_status d5_reporters_report(d5_reporter *const *reps, size_t n,
                                                  const d5_results *r);

/* The table of d5_results_print on `f` (borrowed until the reporter is freed). */
D5_API D5_NODISCARD d5_status d5_reporter_console(FILE *f, d5_reporter **out);
/* d5_results_write_json to `path` (copied). */
D5_API D5_NODISCARD d5_status d5_reporter_json(const char *path, d5_reporter **out);
/* d5_results_write_csv to `path` (copied). */
D5_API D5_NODISCARD d5_status d5_reporter_csv(const char *path, d5_reporter **out);

/* An experiment tracker's run (d5/runlog.h) of the results: at the context a
 * run log named run_name and the `before` hook (the caller's parameters and
 * tags), for each benchmark the metrics PREFIX<name>/median, /ci_low,
 * /ci_high and /n (characters a tracker's file store refuses become '_'), at
 * the finish the `after` hook, then the run written. */
typedef struct d5_tracker_params {
    const char *dir;           /* MLflow: the mlruns folder; W&B: the offline runs' folder */
    const char *project;       /* MLflow experiment (default "Default"), W&B project ("d5") */
    const char *run_name;      /* the run log's name (default "d5") */
    const char *metric_prefix; /* default "bench/" */
    d5_status (*before)(void *user, d5_runlog *log); /* may be NULL */
    d5_status (*after)(void *user, d5_runlog *log);  /* may be NULL */
    void *user;                                      /* borrowed until the reporter is freed */
    FILE *say; /* "mlflow run ID written under DIR"; NULL: nothing */
} d5_tracker_params;

D5_API d5_tracker_params d5_tracker_default_params(void);
/* d5_runlog_write_mlflow under p->dir; the strings are copied. */
D5_API D5_NODISCARD d5_status d5_reporter_mlflow(const d5_tracker_params *p, d5_reporter **out);
/* d5_runlog_write_wandb under p->dir; the strings are copied. */
D5_API D5_NODISCARD d5_status d5_reporter_wandb(const d5_tracker_params *p, d5_reporter **out);

/* ---- The machine (d5/machine.h) ------------------------------------------------- */

/* Prints the description and, when `peaks` is not NULL, the measured peaks as
 * aligned "name : value" lines. */
D5_API D5_NODISCARD d5_status d5_machine_print(FILE *f, const d5_machine_info *m,
                                               const d5_machine_peaks *peaks);
/* Writes {"context": {...}, "machine": {...}, "peaks": {...}} atomically; peaks may be NULL. */
D5_API D5_NODISCARD d5_status d5_machine_write_json(const d5_machine_info *m,
                                                    const d5_machine_peaks *peaks,
                                                    const char *path);

/* ---- Memory profiles (d5/memory.h) ---------------------------------------------- */

/* memory.json: {"context", "name", "clock", "origin_ns", "duration_ms",
 * "runs", "plan": {arena, unshared, param, constant bytes}, "peak": {"bytes",
 * "time_ms", "phase", "node", "op_type", "backend", "planned_bytes",
 * "heap_bytes"}, "planned_peak_bytes", "heap": {counters, "peak_bytes",
 * "dropped_events"}, "operators": [one per row, fields as d5_memory_row],
 * "live_at_peak": [{"label", "kind", "bytes", "node", "phase", "since_ms"}]}.
 * Written atomically; D5_ERR_IO names the path. */
D5_API D5_NODISCARD d5_status d5_memory_profile_write_json(const d5_memory_profile *p,
                                                           const char *path);
/* memory_timeline.csv: header "time_ms,live_bytes,delta_bytes,label", one row
 * per point; label "KIND:LABEL" ("value:conv1_out", "heap:Conv weight
 * gradient"). Written atomically. */
D5_API D5_NODISCARD d5_status d5_memory_profile_write_timeline(const d5_memory_profile *p,
                                                               const char *path);
/* DIR/memory.json and DIR/memory_timeline.csv; DIR is created if missing. */
D5_API D5_NODISCARD d5_status d5_memory_profile_write_dir(const d5_memory_profile *p,
                                                          const char *dir);
/* The peak and where, the plan, then the `top` rows with the most actual
 * bytes (all rows when top <= 0): planned, heap allocated and freed, heap
 * peak, actual, live peak. */
D5_API D5_NODISCARD d5_status d5_memory_profile_print(FILE *f, const d5_memory_profile *p,
                                                      int32_t top);
/* Counter tracks for d5_report_trace_counters: the counter "memory bytes"
 * with the series "total", "planned" and "heap", a point at the start and one
 * per timeline point, at times on the recording's clock (origin_ns +
 * time_ms). Line them up with a timer's regions by recording with that timer
 * as the clock. out[0..2] point into *storage, which the caller frees with
 * d5_free. D5_ERR_NOMEM. */
D5_API D5_NODISCARD d5_status d5_memory_profile_counter_tracks(const d5_memory_profile *p,
                                                               d5_counter_track out[3],
                                                               double **storage);

/* Adds to `timer` one region per node row that ran (key: the node's name,
 * "NAME/backward" in the backward phase, cut to D5_TIMER_KEY_MAX bytes), at
 * its start and for its duration, so that a trace shows the nodes beside the
 * counter tracks. The profile must have been recorded with `timer` as its
 * clock (D5_ERR_INVALID otherwise); the timer's errors. */
D5_API D5_NODISCARD d5_status d5_memory_profile_add_regions(const d5_memory_profile *p,
                                                            struct d5_timer *timer);
/* d5_report_trace_counters(timer, the three tracks above, path): the timer's
 * regions with the memory counter tracks. */
D5_API D5_NODISCARD d5_status d5_memory_profile_write_trace(const d5_memory_profile *p,
                                                            struct d5_timer *timer,
                                                            const char *path);

#ifdef __cplusplus
}
#endif
#endif
