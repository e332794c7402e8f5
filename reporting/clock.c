/* The wall clock that reports date their runs by. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <time.h>

uint64_t d5__wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
