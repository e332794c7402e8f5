/* d5 machine report: what the machine is (CPU, caches, memory, libraries, CUDA
 * devices) and what it measurably does (FP32 FMA peak on one core and on all
 * cores, memory bandwidth of a STREAM-triad-like kernel). Later levels use the
 * peaks for roofline figures and "% of peak" columns. */
#ifndef D5_MACHINE_H
#define D5_MACHINE_H

#include "d5/core.h"
#include "d5/stats.h"
#include "d5/threads.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define D5_MACHINE_MAX_CACHES 8
#define D5_MACHINE_MAX_CUDA   16

typedef struct d5_cache_info {
    int level;     /* 1, 2, 3 */
    char type[16]; /* "Data", "Instruction", "Unified" */
    uint64_t size_bytes;
    int shared_by; /* logical CPUs sharing one instance */
} d5_cache_info;

typedef struct d5_cuda_device_info {
    char name[128];
    int major, minor; /* compute capability */
    uint64_t memory_bytes;
    int multiprocessors;
    double clock_mhz;
} d5_cuda_device_info;

typedef struct d5_machine_info {
    char hostname[128];
    char kernel[128];
    char cpu_model[128];
    char cpu_vendor[32];
    char isa[64];     /* vector extensions in use: "avx512f avx2 fma" */
    int logical_cpus; /* online */
    int physical_cores;
    double tsc_ghz; /* calibrated TSC rate, 0 without an invariant TSC */
    int invariant_tsc;
    int ncaches;
    d5_cache_info caches[D5_MACHINE_MAX_CACHES];
    uint64_t memory_bytes;
    uint64_t memory_available_bytes;
    char openblas_config[128];
    char openblas_core[32];
    int openblas_threads;
    int cuda_built;        /* d5 built with the CUDA toolkit */
    int cuda_device_count; /* usable devices */
    char cuda_status[256]; /* "2 devices" or why there are none */
    d5_cuda_device_info cuda[D5_MACHINE_MAX_CUDA];
} d5_machine_info;

/* Reads the machine's description (no measurements; a few milliseconds). */
D5_API D5_NODISCARD d5_status d5_machine_query(d5_machine_info *out);

typedef struct d5_machine_measure_params {
    int threads;        /* for the all-core figures; 0 = the usable cores (d5_cores_query) */
    double max_time_s;  /* budget per measurement (default 1.0) */
    size_t triad_bytes; /* total size of the triad's three arrays; 0 = 8x the last-level cache, at
                           least 256 MiB */
} d5_machine_measure_params;

D5_API d5_machine_measure_params d5_machine_measure_default_params(void);

typedef struct d5_machine_peaks {
    const char *fma_isa; /* "avx512f", "avx2+fma" or "scalar": the kernel used */
    int threads;
    d5_stats fp32_core;         /* GFLOP/s of one core, over repetitions */
    d5_stats fp32_all;          /* GFLOP/s of all threads together */
    double flop_per_cycle_core; /* fp32_core.max / TSC GHz (0 without TSC) */
    size_t triad_bytes;
    d5_stats triad; /* GB/s, counting 3 x 8 bytes per element as STREAM does */
    /* Other processes on the cores while the peaks were measured: a contended
     * peak is low, and every "% of peak" taken against it is high. */
    d5_contention contention;
} d5_machine_peaks;

/* Measures the peaks. Takes about 3 x max_time_s. */
D5_API D5_NODISCARD d5_status d5_machine_measure(const d5_machine_measure_params *p,
                                                 d5_machine_peaks *out);

/* Prints the description and, when `peaks` is not NULL, the measured peaks as
 * aligned "name : value" lines. */
D5_API D5_NODISCARD d5_status d5_machine_print(FILE *f, const d5_machine_info *m,
                                               const d5_machine_peaks *peaks);
/* Writes {"context": {...}, "machine": {...}, "peaks": {...}} atomically; peaks may be NULL. */
D5_API D5_NODISCARD d5_status d5_machine_write_json(const d5_machine_info *m,
                                                    const d5_machine_peaks *peaks,
                                                    const char *path);

#ifdef __cplusplus
}
#endif
#endif
