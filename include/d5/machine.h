/* d5 machine report: what the machine is (CPU, caches, memory, libraries, CUDA
 * devices) and what it measurably does (FP32 FMA peak on one core and on all
 * cores, the low-precision peaks of the instructions this CPU has: bfloat16
 * and float16 arithmetic, int8 dot products, AMX tiles; memory bandwidth of a
 * STREAM-triad-like kernel). Later levels use the peaks for roofline figures
 * and "% of peak" columns. */
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
    /* Low-precision extensions that CPUID reports and the OS has enabled:
     * "avx512_bf16 avx512_fp16 avx512_vnni avx_vnni amx_tile amx_bf16
     * amx_int8", or "" */
    char isa_lowp[128];
} d5_machine_info;

/* Reads the machine's description (no measurements; a few milliseconds). */
D5_API D5_NODISCARD d5_status d5_machine_query(d5_machine_info *out);

typedef struct d5_machine_measure_params {
    int threads;        /* for the all-core figures; 0 = the usable cores (d5_cores_query) */
    double max_time_s;  /* budget per measurement (default 1.0) */
    size_t triad_bytes; /* total size of the triad's three arrays; 0 = 8x the last-level cache, at
                           least 256 MiB */
    uint32_t lowp;      /* low-precision peaks to measure: bit k for d5_peak_kind k (default
                           D5_PEAK_ALL; 0: FP32 and bandwidth only) */
} d5_machine_measure_params;

D5_API d5_machine_measure_params d5_machine_measure_default_params(void);

/* The low-precision peaks, one kernel each. Every kernel runs independent
 * chains of one instruction on operands in registers (tiles for AMX), as the
 * FP32 peak does, and counts 2 operations per multiply-add, as a GEMM would. */
typedef enum d5_peak_kind {
    D5_PEAK_BF16_DOT = 0, /* AVX512_BF16 vdpbf16ps: bfloat16 pairs into float32 */
    D5_PEAK_F16_FMA = 1,  /* AVX512_FP16 vfmadd231ph: float16 multiply-add */
    D5_PEAK_INT8_DOT = 2, /* AVX512_VNNI (or AVX-VNNI) vpdpbusd: u8 x s8 quads into int32 */
    D5_PEAK_AMX_BF16 = 3, /* AMX tdpbf16ps: 16x32 by 32x16 bfloat16 tiles into float32 */
    D5_PEAK_AMX_INT8 = 4, /* AMX tdpbusd: 16x64 by 64x16 u8 x s8 tiles into int32 */
    D5_PEAK_KINDS = 5
} d5_peak_kind;

#define D5_PEAK_ALL ((1u << D5_PEAK_KINDS) - 1u)

typedef struct d5_peak_lowp {
    const char *name;        /* "bf16 dot", "f16 fma", "int8 dot", "amx bf16", "amx int8" */
    d5_dtype dtype;          /* of the operands: D5_BF16, D5_F16 or D5_I8 */
    const char *unit;        /* "GFLOP/s" (bf16, f16) or "GOP/s" (int8) */
    const char *isa;         /* the extension used ("avx512_vnni", "avx_vnni", ...), "" if none */
    const char *instruction; /* "vdpbf16ps zmm", ...; the strings are static */
    int32_t measured;        /* 1: core, all and ops_per_tick hold figures */
    char reason[192];        /* when not measured: "not available on this CPU (no AVX512_FP16)",
                                "AMX: not permitted by the kernel: ...", "not measured" */
    d5_stats core;           /* rate of one core, over repetitions */
    d5_stats all;            /* rate of all threads together */
    double ops_per_tick;     /* core.max / TSC GHz (0 without TSC) */
} d5_peak_lowp;

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
    d5_peak_lowp lowp[D5_PEAK_KINDS]; /* indexed by d5_peak_kind */
} d5_machine_peaks;

/* Measures the peaks. Takes about 3 x max_time_s, plus up to 2 x max_time_s for
 * each low-precision kernel this CPU has (a stable kernel stops after a few
 * milliseconds). AMX is requested from Linux (arch_prctl ARCH_REQ_XCOMP_PERM)
 * first; a refusal is a reason in the kernel's entry, not an error. */
D5_API D5_NODISCARD d5_status d5_machine_measure(const d5_machine_measure_params *p,
                                                 d5_machine_peaks *out);

/* The all-core peak that a computation in `dtype` is measured against: the
 * FP32 FMA peak for D5_F32, else the fastest measured kernel of that
 * precision (D5_BF16: bf16 dot or AMX bf16; D5_F16: f16 fma; D5_I8 and D5_U8:
 * int8 dot or AMX int8), as GFLOP/s or GOP/s. *kernel (may be NULL) gets its
 * name. 0 (and "") when none was measured. */
D5_API double d5_machine_peak_of(const d5_machine_peaks *p, d5_dtype dtype, const char **kernel);

#ifdef __cplusplus
}
#endif
#endif
