/* d5 threads: the cores this process may use, the one thread count shared by
 * every CPU backend, and the measurement of what else competes for the cores.
 *
 * One runtime owns threads: GCC's OpenMP (libgomp). oneDNN (Debian's build)
 * runs on it, d5's own parallel loops use it, and d5 links the OpenMP build of
 * OpenBLAS where it is installed, so that one pool of workers serves all three
 * and no two pools spin against each other. Waiting workers spin briefly and
 * then block: d5's programs set GOMP_SPINCOUNT before the runtime starts (see
 * d5_threads_wait_policy_env) unless the user has set OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT.
 *
 * The thread count is process-wide state (OpenMP's), so these functions are
 * meant for the thread that drives a benchmark, between measurements; they
 * are safe to call from any thread but do not coordinate concurrent callers.
 */
#ifndef D5_THREADS_H
#define D5_THREADS_H

#include "d5/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Cores this process may use ---------------------------------------------------------- */

typedef struct d5_cores {
    int32_t online;      /* CPUs online on this machine */
    int32_t affinity;    /* CPUs in this process's affinity mask */
    double quota;        /* cgroup CPU quota in cores (cpu.max, cfs_quota); 0 when unlimited */
    int32_t local_ranks; /* processes of this parallel job on this node (from the launcher's
                            environment: Open MPI, MPICH/Hydra, PMIx, Slurm); 1 otherwise */
    int32_t usable;      /* the default thread count: the smallest of the above, the affinity
                            mask divided among the local ranks when the launcher did not bind */
    char limited_by[40]; /* what set `usable`: "online CPUs", "affinity mask", "cgroup quota",
                            "ranks per node" */
} d5_cores;

/* Reads the cores this process may use (a few system calls and small files).
 * Never fails on a machine without cgroups: missing files mean no limit. */
D5_API D5_NODISCARD d5_status d5_cores_query(d5_cores *out);

/* ---- The thread count ---------------------------------------------------------------------- */

/* Sets the threads of every CPU backend (OpenMP, and through it oneDNN and
 * d5's loops; OpenBLAS). n > 0 is fixed: d5 uses exactly n threads. n == 0 is
 * automatic: the usable cores (d5_cores_query), less the processes found
 * running at each of eight looks over 14 ms (when the affinity mask covers the
 * machine: the count is machine-wide), and from then on reduced while
 * other processes occupy some of the cores (see d5_threads_adapt); it takes
 * about 16 ms. D5_ERR_INVALID for n < 0. */
D5_API D5_NODISCARD d5_status d5_threads_set(int32_t n);

typedef struct d5_threads_info {
    int32_t requested;    /* 0: automatic */
    int32_t team;         /* threads a parallel region uses now */
    int32_t usable;       /* usable cores (d5_cores.usable) */
    int32_t adaptations;  /* times the automatic count changed */
    int openmp;           /* 1 when an OpenMP runtime is loaded */
    char openblas[16];    /* OpenBLAS's threading: "openmp", "pthreads", "serial" or "none" */
    char wait_policy[64]; /* e.g. "GOMP_SPINCOUNT=20000 (d5)", "OMP_WAIT_POLICY=active (user)" */
} d5_threads_info;

D5_API void d5_threads_info_get(d5_threads_info *out);
/* The current team size (at least 1). */
D5_API int32_t d5_threads_team(void);

/* In automatic mode, at a point where no parallel region runs (between two
 * repetitions or training steps): at most every 250 ms, measures the CPU time
 * that other processes took on this process's cores since the last check, and
 * sets the team to the cores left free (at least 1; a core counts as taken
 * from 0.6 cores of other work). Grows back only after two checks agree. Costs
 * one clock read when no check is due, about 20 us when one is. Does nothing
 * with a fixed count. Returns the team size. */
D5_API int32_t d5_threads_adapt(void);

/* Sets GOMP_SPINCOUNT=D5_THREADS_SPINCOUNT in this process's environment
 * (waiting OpenMP workers spin about a millisecond, then block) unless
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT is already set, and returns 1 when it did.
 * OpenMP reads the variable once, when it is loaded, which for a program
 * linked with d5 is before main(): a program that gets 1 must restart itself
 * (execv of /proc/self/exe) for the setting to take effect, as the d5 tool
 * does. The marker D5_WAIT_POLICY=d5 is set beside it. */
#define D5_THREADS_SPINCOUNT "20000"
D5_API int d5_threads_wait_policy_env(void);

/* ---- BLAS ---------------------------------------------------------------------------- */

/* OpenBLAS as this process has loaded it (level 0's blas backend links it;
 * core looks its functions up at run time). A program that does not load it
 * gets loaded 0, empty strings and parallel "none"; d5_threads_set sets its
 * threads when it is loaded. */
typedef struct d5_blas_info {
    int loaded;        /* 1 when OpenBLAS is in the process */
    char config[128];  /* openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." */
    char core[32];     /* openblas_get_corename(): the kernels chosen, "Haswell" */
    int32_t threads;   /* openblas_get_num_threads() */
    char parallel[16]; /* its threading: "openmp", "pthreads", "serial" or "none" */
} d5_blas_info;

D5_API void d5_blas_info_get(d5_blas_info *out);

/* ---- Contention ---------------------------------------------------------------------------- */

/* A snapshot of what ran on this process's cores. */
typedef struct d5_load_sample {
    uint64_t wall_ns;      /* CLOCK_MONOTONIC */
    uint64_t busy_ticks;   /* non-idle CPU time of the CPUs in the affinity mask, in clock ticks */
    uint64_t steal_ticks;  /* steal time of those CPUs */
    uint64_t total_ticks;  /* all time of those CPUs */
    uint64_t self_cpu_ns;  /* user + system time of this process (all threads) */
    int64_t nivcsw;        /* involuntary context switches of this process */
    int32_t cpus;          /* CPUs in the affinity mask */
    int32_t procs_running; /* runnable tasks on the machine (/proc/stat), -1 unknown */
    int valid;             /* 0 when /proc/stat could not be read */
} d5_load_sample;

/* Takes a snapshot (reads /proc/stat; about 20 us). Never fails: without
 * /proc, `valid` is 0 and only the process's own figures are set. */
D5_API void d5_load_sample_take(d5_load_sample *out);

typedef struct d5_contention {
    double interval_s;     /* between the two samples */
    double others_cores;   /* CPU time of other processes on our cores / interval, in cores */
    double steal_fraction; /* steal time / all time of our cores (virtual machines) */
    double nivcsw_per_s;   /* involuntary context switches of this process per second */
    int32_t procs_running; /* runnable tasks at the end, including ours */
    int32_t cpus;          /* cores of the affinity mask */
    int32_t threads;       /* the most threads this process used in the interval */
    int32_t known;         /* 0 without a verdict: /proc/stat unreadable, or an interval
                              under 0.2 s (its counts have a 10 ms resolution) */
    int32_t contended;     /* 1 when the rule below holds */
    char reason[160];      /* why, in words: "1.0 cores busy with other processes, ..." */
} d5_contention;

/* Contention over the interval between `a` and `b` for a process that ran up
 * to `threads` threads. The rule: contended when other processes used at
 * least 0.5 cores more than the cores this process left free
 * (cpus - threads), or when steal time exceeded 5% of the cores' time. */
D5_API void d5_contention_between(const d5_load_sample *a, const d5_load_sample *b, int32_t threads,
                                  d5_contention *out);

#ifdef __cplusplus
}
#endif
#endif
