/* Internal helpers shared by the files of core/. Not installed. */
#ifndef D5_CORE_INTERNAL_H
#define D5_CORE_INTERNAL_H

#include "d5/core.h"

#include <stdint.h>
#include <stdio.h>

/* ---- Clocks (clock.c) ---- */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t d5__mono_ns(void);
/* CLOCK_REALTIME in nanoseconds since the Unix epoch. */
uint64_t d5__wall_ns(void);

/* The time-stamp counter, calibrated once per process against CLOCK_MONOTONIC. */
typedef struct d5__tsc_info {
    int usable;         /* 1 when the CPU has an invariant TSC (constant and nonstop) */
    double ns_per_tick; /* from the calibration */
    double ghz;         /* ticks per nanosecond */
} d5__tsc_info;
const d5__tsc_info *d5__tsc(void);

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t d5__ticks(void)
{
    return __rdtsc();
}
#define D5__HAVE_TSC 1
#else
static inline uint64_t d5__ticks(void)
{
    return d5__mono_ns();
}
#define D5__HAVE_TSC 0
#endif

/* ---- Threads (threads.c) ---- */
/* The threads a measurement means to use: the fixed count, or the usable
 * cores in automatic mode (the team may be smaller after d5_threads_adapt). */
int32_t d5__threads_intended(void);

/* ---- BLAS (blas.c) ---- */
/* Sets OpenBLAS's threads when it is loaded; nothing otherwise. */
void d5__blas_set_threads(int32_t n);

/* ---- Statistics helpers (stats.c) ---- */
void d5__sort_doubles(double *x, size_t n);
double d5__probit(double p);

#endif
