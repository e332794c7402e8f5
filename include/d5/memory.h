/* d5 memory report: what d5's heap and an executor's memory plan hold while
 * one inference or one training step runs, per operator and phase, with the
 * peak, where it occurs and the blocks live at that moment.
 *
 *     d5_memory_profile p;
 *     d5_status s = d5_executor_record_memory(ex, 0, NULL, "resnet20", &p);
 *     if (s == D5_OK) s = d5_memory_profile_print(stdout, &p, 10);
 *     if (s == D5_OK) s = d5_memory_profile_write_dir(&p, "out");
 *     d5_memory_profile_free(&p);
 *
 * This header is libd5core's: heap accounting and the profile as plain data.
 * - Heap accounting. Every block allocated through d5's allocator
 *   (d5_alloc, d5_calloc, d5_realloc, d5_strdup, and the hooks that
 *   d5_allocator_get returns, which d5_tensor_alloc and the executor's arena
 *   use) is counted while accounting is on: live and peak bytes, and
 *   optionally one event per allocation and free. Off, it costs one relaxed
 *   atomic load per allocation and free. It is process-wide and thread safe:
 *   operators allocate from OpenMP threads.
 * - The profile (d5_memory_profile): what a recording saw, per row, block and
 *   point of the timeline.
 * The profile is made and written elsewhere, each part by its library:
 * - the recorder (d5/executor.h, libd5network: d5_memory_recorder_create,
 *   d5_executor_record_memory) watches one run of an executor: the planned
 *   values becoming live and dead as nodes run (offsets and lifetimes of the
 *   memory plan, see d5_memory_plan) and the heap blocks each node
 *   allocates, and turns them into a profile;
 * - training (d5/training.h, libd5training: d5_trainer_record_memory) records
 *   one step of a d5_trainer, forward, backward and optimizer;
 * - its reports (d5/report.h, libd5reporting: d5_memory_profile_print,
 *   d5_memory_profile_write_dir, the trace's counter tracks).
 *
 * "Planned" bytes are the values the memory plan places in the executor's
 * arena (allocated once, at create); "heap" bytes are allocations made while
 * the recording runs (workspaces, scratch buffers, state created lazily).
 * Memory that backends allocate outside d5's allocator (oneDNN's and
 * OpenBLAS's own buffers) is not seen.
 */
#ifndef D5_MEMORY_H
#define D5_MEMORY_H

#include "d5/core.h"
#include "d5/timer.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Heap accounting (core) --------------------------------------------------------- */

/* Totals since d5_memory_track_begin. They keep their values after
 * d5_memory_track_end, until the next begin: allocations made while
 * accounting is off change nothing. */
typedef struct d5_memory_counters {
    int64_t live_bytes;      /* allocated since begin and not freed yet */
    int64_t peak_bytes;      /* the most live_bytes has been */
    int64_t allocated_bytes; /* all allocations since begin */
    int64_t freed_bytes;     /* frees of blocks allocated since begin */
    int64_t allocations, frees;
    /* Frees of blocks allocated before begin: not counted in the above. */
    int64_t foreign_frees;
    /* Allocations that could not be accounted (no memory for the
     * bookkeeping): neither they nor their frees are counted. */
    int64_t untracked;
} d5_memory_counters;

typedef struct d5_memory_track_params {
    /* 1: keep one d5_memory_event per allocation and free, returned by
     * d5_memory_track_end. Default 0: counters only. */
    int32_t log;
    /* Timestamps on this timer's time line (d5_timer_now_ns: ns since its
     * creation), so that they line up with its regions; borrowed until
     * d5_memory_track_end. NULL: CLOCK_MONOTONIC, ns since begin. */
    const struct d5_timer *clock;
    /* Events kept at most (default 1 << 20); later ones are counted in
     * d5_memory_log.dropped. */
    size_t max_events;
} d5_memory_track_params;

D5_API d5_memory_track_params d5_memory_track_default_params(void);

/* One allocation (delta_bytes > 0) or free (< 0) through d5's allocator. */
typedef struct d5_memory_event {
    double t_ns;         /* on the accounting clock (d5_memory_now_ns) */
    int64_t delta_bytes; /* the size asked for, negated for a free */
    int64_t live_bytes;  /* live heap bytes after it (counted from begin) */
    uint64_t block;      /* 1, 2, ... per allocation since begin; its free has the same */
    int32_t scope;       /* d5_memory_scope_get() when it happened */
    int32_t reserved;
    /* `what` of d5_alloc ("Conv weight gradient"), truncated; "allocator
     * hook" for blocks from d5_allocator_get's functions. A free repeats the
     * label of its allocation. */
    char label[48];
} d5_memory_event;

/* What one accounting period recorded. Free with d5_memory_log_free. */
typedef struct d5_memory_log {
    d5_memory_event *events; /* n events in the order they happened; owned */
    size_t n;
    size_t dropped; /* events not kept (max_events reached, or no memory) */
    d5_memory_counters counters;
    double begin_ns, end_ns; /* on the accounting clock */
} d5_memory_log;

/* Turns accounting on: counters start from zero, and with p->log every
 * allocation and free is logged. p may be NULL (the defaults). D5_ERR_STATE
 * when accounting is on already (one period at a time, process-wide);
 * D5_ERR_NOMEM for the bookkeeping. Thread safe. */
D5_API D5_NODISCARD d5_status d5_memory_track_begin(const d5_memory_track_params *p);
/* Turns accounting off and hands the period's events to *out (may be NULL:
 * they are dropped). D5_ERR_STATE when accounting is off. Thread safe; an
 * allocation racing with it is counted or not, never half. */
D5_API D5_NODISCARD d5_status d5_memory_track_end(d5_memory_log *out);
D5_API void d5_memory_log_free(d5_memory_log *log);
/* 1 while accounting is on. */
D5_API int d5_memory_tracking(void);
/* The counters (lock-free; exact once the allocating threads are done). */
D5_API void d5_memory_counters_get(d5_memory_counters *out);
/* The accounting clock now, ns: the timer's time line, or CLOCK_MONOTONIC
 * since begin; 0 while accounting is off. */
D5_API double d5_memory_now_ns(void);
/* Tags the allocations and frees that follow, on every thread, with `scope`
 * (the recorder sets the node that runs); returns the previous tag. A
 * process-wide value: allocations of other threads while a node runs count
 * for that node. */
D5_API int32_t d5_memory_scope_set(int32_t scope);
D5_API int32_t d5_memory_scope_get(void);

/* ---- The profile: plain data -------------------------------------------------------- */

typedef enum d5_memory_phase {
    D5_MEMORY_FORWARD = 0,
    D5_MEMORY_BACKWARD = 1,
    D5_MEMORY_OPTIMIZER = 2,
    D5_MEMORY_OTHER = 3 /* outside every node: feeding, fetching, hooks */
} d5_memory_phase;

/* "forward", "backward", "optimizer", "other"; "unknown" otherwise. */
D5_API const char *d5_memory_phase_name(int32_t phase);

/* One node in one phase, or a section (the optimizer, "outside nodes"). */
typedef struct d5_memory_row {
    char *name;    /* node name, or the section's name; owned by the profile */
    char *op_type; /* "" for a section; owned */
    char *backend; /* "" for a section; owned */
    int32_t phase; /* a d5_memory_phase */
    int32_t node;  /* index in the executor's schedule; -1 for a section */
    /* Planned values whose life begins here: the node's outputs, or in the
     * backward phase the gradients (and scratch gradients) it writes. */
    int64_t planned_bytes;
    /* Heap, through d5's allocator, while it ran (any thread). */
    int64_t heap_allocated_bytes, heap_freed_bytes;
    int64_t heap_allocations, heap_frees;
    /* The most heap it held at once beyond what was live when it began. */
    int64_t heap_peak_bytes;
    int64_t actual_bytes;    /* planned_bytes + heap_peak_bytes */
    int64_t live_peak_bytes; /* the most bytes live (planned + heap) while it ran */
    double start_ms;         /* first entry, ms since the recording began; -1: never ran */
    double duration_ms;      /* time inside it */
} d5_memory_row;

typedef enum d5_memory_block_kind {
    D5_MEMORY_VALUE = 0,    /* a planned value (a node's output) */
    D5_MEMORY_GRADIENT = 1, /* a planned gradient */
    D5_MEMORY_SCRATCH = 2,  /* a planned scratch gradient, added into the gradient */
    D5_MEMORY_HEAP = 3      /* a heap block */
} d5_memory_block_kind;

/* "value", "gradient", "scratch", "heap"; "unknown" otherwise. */
D5_API const char *d5_memory_block_kind_name(int32_t kind);

/* A block that was live during the recording. */
typedef struct d5_memory_block {
    char *label;          /* value name ("conv1_out"), or the heap block's label; owned */
    int32_t kind;         /* a d5_memory_block_kind */
    int32_t row;          /* the row that made it; -1: none */
    int64_t bytes;        /* planned: rounded to the plan's 64-byte alignment */
    double since_ms;      /* when it became live */
    double until_ms;      /* when it died; -1: live at the end */
    int32_t live_at_peak; /* 1 when live at the peak */
    int32_t reserved;
} d5_memory_block;

/* One allocation or free, planned or heap: a row of memory_timeline.csv. */
typedef struct d5_memory_point {
    double time_ms;        /* since the recording began */
    int64_t live_bytes;    /* planned_bytes + heap_bytes after it */
    int64_t planned_bytes; /* planned values live after it */
    int64_t heap_bytes;    /* heap live after it (counted from the recording's start) */
    int64_t delta_bytes;   /* > 0 becomes live, < 0 dies */
    int64_t block;         /* index in blocks */
} d5_memory_point;

/* What a recording saw. Every pointer is owned: d5_memory_profile_free. */
typedef struct d5_memory_profile {
    char *name;         /* what was recorded ("lenet inference", "training step 2") */
    char clock[16];     /* "timer" (a timer's time line) or "monotonic" */
    double origin_ns;   /* when the recording began, on that clock */
    double duration_ms; /* how long it lasted */
    int32_t runs;       /* executor runs seen; the first is the one recorded */
    /* The executor's memory plan (d5_memory_plan). */
    int64_t arena_bytes, unshared_bytes, param_bytes, constant_bytes;
    /* The peak of planned + heap bytes: its size, when, in which row (-1:
     * none), and its two parts. */
    int64_t peak_bytes;
    double peak_ms;
    int32_t peak_row;
    int32_t reserved;
    int64_t peak_planned_bytes, peak_heap_bytes;
    int64_t planned_peak_bytes; /* the most planned bytes live at once */
    int64_t heap_peak_bytes;    /* the most heap bytes live at once */
    d5_memory_counters heap;    /* the heap accounting's totals */
    size_t dropped_events;      /* heap events not logged: the timeline is incomplete */
    d5_memory_row *rows;
    int32_t nrows;
    d5_memory_block *blocks;
    int64_t nblocks;
    d5_memory_point *timeline;
    int64_t npoints;
} d5_memory_profile;

/* Frees what the profile owns and zeroes it; NULL or a zeroed profile is a
 * no-op. */
D5_API void d5_memory_profile_free(d5_memory_profile *p);
#ifdef __cplusplus
}
#endif
#endif
