/* Internal helpers shared by the files of reporting/. Not installed. */
#ifndef D5_REPORTING_INTERNAL_H
#define D5_REPORTING_INTERNAL_H

#include "d5/core.h"
#include "d5/timer.h"

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds: the clock of d5's timers. */
static inline uint64_t d5__mono_ns(void)
{
    return d5_monotonic_ns();
}

/* CLOCK_REALTIME in nanoseconds since the Unix epoch (clock.c). */
uint64_t d5__wall_ns(void);

#endif
