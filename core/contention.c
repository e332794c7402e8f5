/* What competes for this process's cores: other processes' CPU time on the
 * CPUs of the affinity mask (from /proc/stat, less this process's own time),
 * steal time, and this process's involuntary context switches. */
#define _GNU_SOURCE
#include "d5/threads.h"
#include "internal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void d5_load_sample_take(d5_load_sample *out)
{
    memset(out, 0, sizeof *out);
    out->procs_running = -1;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        out->self_cpu_ns =
            (uint64_t)ru.ru_utime.tv_sec * 1000000000u + (uint64_t)ru.ru_utime.tv_usec * 1000u +
            (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u;
        out->nivcsw = ru.ru_nivcsw;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    int have_mask = sched_getaffinity(0, sizeof set, &set) == 0;
    out->wall_ns = d5__mono_ns();

    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        int cpu;
        unsigned long long v[10] = {0};
        if (strncmp(line, "cpu", 3) == 0 && line[3] >= '0' && line[3] <= '9') {
            if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
                       &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 9)
                continue;
            if (have_mask && (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set))) continue;
            /* user nice system idle iowait irq softirq steal */
            uint64_t idle = v[3] + v[4];
            uint64_t all = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
            out->busy_ticks += all - idle - v[7];
            out->steal_ticks += v[7];
            out->total_ticks += all;
            out->cpus++;
        } else if (strncmp(line, "procs_running ", 14) == 0) {
            out->procs_running = (int32_t)strtol(line + 14, NULL, 10);
        }
    }
    fclose(f);
    out->valid = out->cpus > 0;
}

void d5_contention_between(const d5_load_sample *a, const d5_load_sample *b, int32_t threads,
                           d5_contention *out)
{
    memset(out, 0, sizeof *out);
    out->threads = threads;
    out->cpus = b->cpus;
    out->procs_running = b->procs_running;
    double wall = b->wall_ns > a->wall_ns ? (double)(b->wall_ns - a->wall_ns) * 1e-9 : 0;
    out->interval_s = wall;
    if (wall <= 0) return;
    out->nivcsw_per_s = (double)(b->nivcsw - a->nivcsw) / wall;
    if (!a->valid || !b->valid || a->cpus != b->cpus) {
        snprintf(out->reason, sizeof out->reason, "/proc/stat unreadable: contention unknown");
        return;
    }
    /* /proc/stat counts in clock ticks (10 ms): below 0.2 s the figure would
     * be mostly rounding. */
    if (wall < 0.2) {
        snprintf(out->reason, sizeof out->reason,
                 "%.0f ms is too short to measure other processes' CPU time", wall * 1e3);
        return;
    }
    out->known = 1;
    static double tick_s;
    if (tick_s == 0) {
        long hz = sysconf(_SC_CLK_TCK);
        tick_s = 1.0 / (double)(hz > 0 ? hz : 100);
    }
    double busy = (double)(b->busy_ticks - a->busy_ticks) * tick_s;
    double self = (double)(b->self_cpu_ns - a->self_cpu_ns) * 1e-9;
    double others = (busy - self) / wall;
    /* The tick counts are coarse (10 ms a tick): a short interval can put
     * this process's exact time above the system's count. */
    out->others_cores = others > 0 ? others : 0;
    uint64_t total = b->total_ticks - a->total_ticks;
    out->steal_fraction = total ? (double)(b->steal_ticks - a->steal_ticks) / (double)total : 0;

    int32_t free_cores = out->cpus - (threads > 0 ? threads : 1);
    if (free_cores < 0) free_cores = 0;
    int busy_others = out->others_cores >= (double)free_cores + 0.5;
    int stolen = out->steal_fraction > 0.05;
    out->contended = busy_others || stolen;
    if (out->contended)
        snprintf(out->reason, sizeof out->reason,
                 "%.1f of %d cores busy with other processes while %d thread%s ran, %.0f%% "
                 "stolen by the hypervisor, %.0f involuntary switches/s",
                 out->others_cores, (int)out->cpus, (int)out->threads, out->threads == 1 ? "" : "s",
                 100 * out->steal_fraction, out->nivcsw_per_s);
    else
        snprintf(out->reason, sizeof out->reason,
                 "%.2f cores busy with other processes, %.1f%% stolen", out->others_cores,
                 100 * out->steal_fraction);
}
