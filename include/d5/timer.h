/* d5 region timer: named regions timed by a CPU clock, CUDA events, or both.
 *
 *     d5_timer *t;
 *     d5_timer_create(NULL, &t);
 *     d5_timer_start(t, D5_KEY_EPOCH);
 *       d5_timer_start(t, D5_KEY_BATCH);  ...  d5_timer_end(t, D5_KEY_BATCH);
 *     d5_timer_end(t, D5_KEY_EPOCH);
 *     d5_report_table(stdout, t);
 *     d5_timer_free(t);
 *
 * Regions of different keys may nest or overlap in any order. One key cannot
 * be started twice without an end in between, nor ended when not started: such
 * calls return D5_ERR_STATE, record nothing, and leave the key as it was.
 * Every sample is kept until the timer is freed or reset.
 *
 * A timer is not thread safe: use one timer per thread.
 */
#ifndef D5_TIMER_H
#define D5_TIMER_H

#include "d5/core.h"
#include "d5/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default keys; any other string works as a key as well. */
#define D5_KEY_EPOCH    "EPOCH"
#define D5_KEY_BATCH    "BATCH"
#define D5_KEY_FORWARD  "FORWARD"
#define D5_KEY_BACKWARD "BACKWARD"
#define D5_KEY_COMM     "COMM"
#define D5_KEY_IO       "IO"
#define D5_KEY_OTHER    "OTHER"

/* Ids of the default keys, registered in this order by d5_timer_create. */
enum {
    D5_KEY_ID_EPOCH = 0,
    D5_KEY_ID_BATCH,
    D5_KEY_ID_FORWARD,
    D5_KEY_ID_BACKWARD,
    D5_KEY_ID_COMM,
    D5_KEY_ID_IO,
    D5_KEY_ID_OTHER,
    D5_KEY_ID_DEFAULT_COUNT
};

/* Longest key, in bytes without the terminating NUL. */
#define D5_TIMER_KEY_MAX 127

typedef enum d5_timer_clock {
    D5_TIMER_CPU = 1u << 0, /* host clock, see d5_cpu_clock */
    D5_TIMER_CUDA = 1u << 1 /* CUDA events recorded on a stream */
} d5_timer_clock;

typedef enum d5_cpu_clock {
    D5_CPU_CLOCK_AUTO = 0, /* the TSC when invariant, else CLOCK_MONOTONIC */
    D5_CPU_CLOCK_TSC,      /* the invariant TSC; D5_ERR_UNSUPPORTED where there is none */
    D5_CPU_CLOCK_MONOTONIC /* clock_gettime(CLOCK_MONOTONIC) */
} d5_cpu_clock;

typedef struct d5_timer_params {
    uint32_t clocks;        /* D5_TIMER_CPU and/or D5_TIMER_CUDA; default CPU */
    d5_cpu_clock cpu_clock; /* default AUTO */
    void *cuda_stream;      /* cudaStream_t for the events; NULL is the default stream */
    const char *name;       /* names the process in traces and runs; default "d5"; copied */
} d5_timer_params;

typedef struct d5_timer d5_timer;
typedef uint32_t d5_timer_id;

D5_API d5_timer_params d5_timer_default_params(void);

/* Creates a timer (params NULL for the defaults). With D5_TIMER_CUDA it
 * returns D5_ERR_UNSUPPORTED when d5 was built without the CUDA toolkit and
 * D5_ERR_NODEVICE when there is no usable CUDA device, with the reason. */
D5_API D5_NODISCARD d5_status d5_timer_create(const d5_timer_params *params, d5_timer **out);
/* Frees the timer and its samples; NULL is a no-op. */
D5_API void d5_timer_free(d5_timer *t);

/* Starts and ends the region of a key. Keys are compared by content; passing
 * the same string literal each time takes the fastest path. A key longer than
 * D5_TIMER_KEY_MAX or empty is D5_ERR_INVALID. */
D5_API D5_NODISCARD d5_status d5_timer_start(d5_timer *t, const char *key);
D5_API D5_NODISCARD d5_status d5_timer_end(d5_timer *t, const char *key);

/* Looks up (registering if new) a key and returns its id, for hot loops that
 * want to skip the name lookup. Ids are 0, 1, 2, ... in registration order. */
D5_API D5_NODISCARD d5_status d5_timer_key(d5_timer *t, const char *key, d5_timer_id *id);
D5_API D5_NODISCARD d5_status d5_timer_start_id(d5_timer *t, d5_timer_id id);
D5_API D5_NODISCARD d5_status d5_timer_end_id(d5_timer *t, d5_timer_id id);

/* Records a region measured elsewhere, e.g. by another tool: it starts at
 * `start_ns` on the timer's time line (see d5_timer_now_ns) and lasts
 * `duration_ns`. It counts as a CPU-clock sample, stored like the others in
 * clock ticks: values are rounded to the clock's resolution (below 1 ns). */
D5_API D5_NODISCARD d5_status d5_timer_add(d5_timer *t, const char *key, double start_ns,
                                           double duration_ns);
/* Nanoseconds since the timer was created, on its CPU clock. */
D5_API double d5_timer_now_ns(const d5_timer *t);
/* CLOCK_MONOTONIC in nanoseconds: the clock of d5_measure_run, for code that
 * times something without a timer (progress, budgets, deadlines). */
D5_API uint64_t d5_monotonic_ns(void);

/* Number of keys registered (the default keys included) and the name of one. */
D5_API size_t d5_timer_key_count(const d5_timer *t);
D5_API const char *d5_timer_key_name(const d5_timer *t, d5_timer_id id);
/* Samples recorded for a key by one clock. */
D5_API size_t d5_timer_count(const d5_timer *t, d5_timer_id id, d5_timer_clock clock);
/* 1 when the timer records that clock. */
D5_API int d5_timer_has_clock(const d5_timer *t, d5_timer_clock clock);
/* "tsc", "monotonic" or "cuda-event". */
D5_API const char *d5_timer_clock_name(const d5_timer *t, d5_timer_clock clock);

/* The samples of a key as start times (ns since the timer's creation) and
 * durations (ns). Pending CUDA events are synchronised first. The arrays are
 * borrowed: valid until the next start, end, add, reset or free. D5_ERR_STATE
 * when the timer does not record that clock. */
typedef struct d5_timer_series {
    const double *start_ns;
    const double *duration_ns;
    size_t n;
} d5_timer_series;
D5_API D5_NODISCARD d5_status d5_timer_series_get(d5_timer *t, d5_timer_id id, d5_timer_clock clock,
                                                  d5_timer_series *out);
/* Statistics of a key's durations (ns). D5_ERR_NOTFOUND for a key without
 * samples on that clock. */
D5_API D5_NODISCARD d5_status d5_timer_stats(d5_timer *t, const char *key, d5_timer_clock clock,
                                             d5_stats *out);
/* Waits for and converts all pending CUDA events (a no-op without them). */
D5_API D5_NODISCARD d5_status d5_timer_sync(d5_timer *t);
/* Drops every sample; keys stay registered. D5_ERR_STATE while a region is open. */
D5_API D5_NODISCARD d5_status d5_timer_reset(d5_timer *t);

/* Wall-clock time (ns since the Unix epoch) at which the timer was created,
 * and the timer's name. */
D5_API uint64_t d5_timer_origin_unix_ns(const d5_timer *t);
D5_API const char *d5_timer_name(const d5_timer *t);

#ifdef __cplusplus
}
#endif
#endif
