/* The kernels of the measured peaks (core/peak.c): one function per
 * instruction, each compiled for its own target so that d5 still runs on a
 * CPU without it, chosen at run time from CPUID. Not installed. */
#ifndef D5_CORE_PEAK_KERNELS_H
#define D5_CORE_PEAK_KERNELS_H

#include "d5/machine.h"

#include <stddef.h>
#include <stdint.h>

/* Runs `iters` iterations of independent instruction chains and returns a
 * checksum, so that the work cannot be optimised away. The low-precision
 * kernels multiply ones by ones: their checksum is the number of
 * multiply-adds done, exactly while it stays below 2^24. */
typedef float (*d5__peak_fn)(uint32_t iters, float seed);

typedef struct d5__peak_kernel {
    d5__peak_fn fn;          /* NULL: not available (see `reason`) */
    uint32_t iters;          /* per timed round: about a millisecond */
    double ops_per_iter;     /* 2 per multiply-add */
    const char *isa;         /* "avx512_vnni" */
    const char *instruction; /* "vpdpbusd zmm" */
    char reason[192];        /* why fn is NULL */
} d5__peak_kernel;

/* The low-precision extensions that CPUID reports and the OS has enabled
 * (XCR0), bit k for D5__CPU_* below. */
enum {
    D5__CPU_AVX512_BF16 = 1u << 0,
    D5__CPU_AVX512_FP16 = 1u << 1,
    D5__CPU_AVX512_VNNI = 1u << 2,
    D5__CPU_AVX_VNNI = 1u << 3,
    D5__CPU_AMX_TILE = 1u << 4,
    D5__CPU_AMX_BF16 = 1u << 5,
    D5__CPU_AMX_INT8 = 1u << 6
};
uint32_t d5__cpu_lowp(void);
/* Their names, space-separated ("avx512_bf16 amx_tile ..."), into buf. */
void d5__cpu_lowp_names(uint32_t features, char *buf, size_t size);

/* The kernel of `kind` on this CPU. For AMX it asks Linux for the tile data
 * state first (once per process); a refusal leaves fn NULL with the reason. */
void d5__peak_kernel_get(d5_peak_kind kind, d5__peak_kernel *out);

/* AMX (peak_amx.c): the tile kernels, and the request to Linux. */
float d5__amx_bf16(uint32_t iters, float seed);
float d5__amx_int8(uint32_t iters, float seed);
#define D5__AMX_BF16_OPS (4.0 * 16 * 16 * 32 * 2)
#define D5__AMX_INT8_OPS (4.0 * 16 * 16 * 64 * 2)
/* 1 when the process may use the tile data; else 0 with the reason. */
int d5__amx_permit(char *why, size_t size);

#endif
