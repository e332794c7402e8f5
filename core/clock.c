/* Clocks: CLOCK_MONOTONIC, and the invariant time-stamp counter calibrated
 * against it. */
#define _GNU_SOURCE
#include "d5/timer.h"
#include "internal.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

uint64_t d5__mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t d5_monotonic_ns(void)
{
    return d5__mono_ns();
}

uint64_t d5__wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static d5__tsc_info tsc_info;
static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;

/* Invariant TSC: CPUID 0x80000007 EDX bit 8. Hypervisors often hide that bit
 * while the kernel knows the TSC is constant and nonstop, so its flags count too. */
static int tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8))) return 1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
            break;
        }
    }
    fclose(f);
    return ok;
#else
    return 0;
#endif
}

/* One (ticks, ns) point whose two TSC reads bracket the clock_gettime call most
 * tightly among a few tries. */
static void tsc_point(uint64_t *ticks, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        uint64_t t0 = d5__ticks(), m = d5__mono_ns(), t1 = d5__ticks();
        if (t1 - t0 < best) {
            best = t1 - t0;
            *ticks = t0 + (t1 - t0) / 2;
            *ns = m;
        }
    }
}

static void tsc_calibrate(void)
{
    tsc_info.usable = D5__HAVE_TSC && tsc_invariant();
    if (!tsc_info.usable) {
        tsc_info.ns_per_tick = 1.0;
        tsc_info.ghz = 1.0;
        return;
    }
    uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
    tsc_point(&t0, &n0);
    /* 20 ms between the two points: the error of each point (tens of ns)
     * becomes a few parts per million of the rate. */
    do {
        tsc_point(&t1, &n1);
    } while (n1 - n0 < 20000000u);
    tsc_info.ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
    tsc_info.ghz = 1.0 / tsc_info.ns_per_tick;
}

const d5__tsc_info *d5__tsc(void)
{
    pthread_once(&tsc_once, tsc_calibrate);
    return &tsc_info;
}
