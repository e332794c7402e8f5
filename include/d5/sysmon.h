/* d5 system report: a background sampler of the machine while a run goes on
 * (CPU utilisation, run queue, context switches, memory, disk and network
 * traffic, GPU utilisation, memory and power), and the energy the CPU
 * packages (RAPL) and the GPUs (NVML) used over the run.
 *
 * A sampler is created, started, stopped once and then read. Its thread reads
 * /proc (and NVML, loaded with dlopen where libnvidia-ml.so.1 is found) at a
 * fixed rate; every sample is kept. What cannot be measured on a machine is
 * reported as unavailable with the reason (no GPU, no RAPL interface, a
 * counter readable by root only), never as a zero. The sampler measures its
 * own cost: the CPU time of its thread against the wall time it ran.
 *
 * Threads: d5_sysmon_start, _stop and _free belong to the thread that created
 * the sampler; d5_sysmon_sample_count and d5_sysmon_sample_get may be called
 * from any thread while the sampler runs. Everything else reads a stopped
 * sampler (D5_ERR_STATE while it runs).
 */
#ifndef D5_SYSMON_H
#define D5_SYSMON_H

#include "d5/core.h"
#include "d5/report.h"
#include "d5/runlog.h"
#include "d5/timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the layout of system.json; bumped on incompatible changes. */
#define D5_SYSMON_SCHEMA_VERSION 1
/* Per-core columns cover cores cpu0 .. cpu1023; the total covers every core. */
#define D5_SYSMON_MAX_CPUS 1024
/* GPUs sampled at most. */
#define D5_SYSMON_MAX_GPUS 16

typedef struct d5_sysmon d5_sysmon;

typedef struct d5_sysmon_params {
    double hz;                /* samples per second, in (0, 1000]; default 10 */
    const char *sys_root;     /* where sysfs is mounted (RAPL is under
                                 <sys_root>/class/powercap); default "/sys" */
    const char *nvml_library; /* the NVML library to dlopen; default "libnvidia-ml.so.1";
                                 "" leaves GPUs out ("not sampled: ...") */
} d5_sysmon_params;

D5_API d5_sysmon_params d5_sysmon_default_params(void);

/* ---- One reading of the kernel's counters, and the rates between two --------------------- */

/* Clock ticks (1/USER_HZ s) of one CPU line of /proc/stat: busy is everything
 * but idle and iowait; total is user + nice + system + idle + iowait + irq +
 * softirq + steal (guest time is already inside user and nice). The busy
 * share between two readings is of the busy, idle and iowait ticks that
 * advanced, each alone: iowait may go backwards (proc(5)). */
typedef struct d5_sysmon_cpu_ticks {
    uint64_t busy, total;
    uint64_t idle; /* idle alone; total - busy - idle is iowait, which may go backwards */
} d5_sysmon_cpu_ticks;

/* Bits of d5_sysmon_counters.have: the files a reading holds. */
enum {
    D5_SYSMON_HAVE_STAT = 1,      /* cpu, core[], ncpu, context_switches, procs_running */
    D5_SYSMON_HAVE_MEMINFO = 2,   /* mem_* */
    D5_SYSMON_HAVE_DISKSTATS = 4, /* disk_* */
    D5_SYSMON_HAVE_NET = 8,       /* net_* */
    D5_SYSMON_HAVE_RSS = 16,      /* rss_bytes */
    D5_SYSMON_HAVE_FS = 32        /* fs_* */
};

/* The cumulative counters of one reading (since boot), as the parsers below
 * fill them from the text of /proc files. About 16 KiB: keep it off small
 * stacks. */
typedef struct d5_sysmon_counters {
    uint64_t mono_ns;        /* CLOCK_MONOTONIC when read */
    uint32_t have;           /* D5_SYSMON_HAVE_* bits */
    d5_sysmon_cpu_ticks cpu; /* the "cpu" line: all cores */
    int32_t ncpu;            /* 1 + the highest N of the "cpuN" lines (at most MAX_CPUS) */
    d5_sysmon_cpu_ticks core[D5_SYSMON_MAX_CPUS]; /* by N; total 0 for a core not listed */
    uint64_t context_switches;                    /* "ctxt" */
    int32_t procs_running; /* runnable tasks now, the reading thread included */
    uint64_t mem_total, mem_free, mem_available, mem_buffers, mem_cached,
        mem_sreclaimable;                       /* bytes, from /proc/meminfo's kB */
    uint64_t disk_read_bytes, disk_write_bytes; /* whole devices: 512-byte sectors x 512 */
    int32_t disks;                              /* devices counted */
    uint64_t net_rx_bytes, net_tx_bytes;        /* every interface but lo */
    int32_t interfaces;                         /* interfaces counted */
    uint64_t rss_bytes;                         /* resident set of this process */
    uint64_t fs_used_bytes, fs_available_bytes; /* the root file system (statvfs of "/") */
} d5_sysmon_counters;

/* Parsers of the kernel's text: each fills its part of `c` and sets its bit
 * in c->have, and returns D5_ERR_FORMAT naming the file and what is missing
 * or malformed (leaving `c` untouched). */
/* /proc/stat: the "cpu" line, the "cpuN" lines, "ctxt" and "procs_running". */
D5_API D5_NODISCARD d5_status d5_sysmon_parse_stat(const char *text, d5_sysmon_counters *c);
/* /proc/meminfo: MemTotal, MemFree, MemAvailable, Buffers, Cached, SReclaimable. */
D5_API D5_NODISCARD d5_status d5_sysmon_parse_meminfo(const char *text, d5_sysmon_counters *c);
/* /proc/diskstats: sectors read and written (fields 6 and 10) of whole devices,
 * so that no byte is counted twice: partitions are left out, and so are
 * devices stacked on others (loop, ram, zram, dm-, md). `whole` lists the
 * whole devices (the names in /sys/block; n_whole of them); NULL: a name is a
 * partition when it is another listed name followed by digits, or by 'p' and
 * digits (sda1, nvme0n1p2, mmcblk0p1). */
D5_API D5_NODISCARD d5_status d5_sysmon_parse_diskstats(const char *text, const char *const *whole,
                                                        size_t n_whole, d5_sysmon_counters *c);
/* /proc/net/dev: received and transmitted bytes of every interface but lo. */
D5_API D5_NODISCARD d5_status d5_sysmon_parse_net_dev(const char *text, d5_sysmon_counters *c);
/* /proc/self/statm: resident pages (the second field) x page_size. */
D5_API D5_NODISCARD d5_status d5_sysmon_parse_statm(const char *text, uint64_t page_size,
                                                    d5_sysmon_counters *c);

/* One GPU in one sample; NaN where NVML could not say. */
typedef struct d5_sysmon_gpu_sample {
    double util_percent;       /* nvmlDeviceGetUtilizationRates .gpu */
    double memory_used_bytes;  /* nvmlDeviceGetMemoryInfo */
    double memory_total_bytes; /* the same */
    double power_w;            /* nvmlDeviceGetPowerUsage */
    double power_limit_w;      /* nvmlDeviceGetEnforcedPowerLimit */
} d5_sysmon_gpu_sample;

/* One sample. Rates are over the interval since the previous sample (the
 * first: since the sampler started). A value that could not be measured is
 * NaN (an empty CSV field). */
typedef struct d5_sysmon_sample {
    double time_s;              /* seconds since the sampler started */
    uint64_t mono_ns;           /* CLOCK_MONOTONIC */
    uint64_t unix_ns;           /* wall clock, ns since the Unix epoch */
    double interval_s;          /* since the previous sample */
    double cpu_percent;         /* all cores: 100 = every core busy */
    const double *core_percent; /* d5_sysmon_cores() values, per core; borrowed until the
                                   sampler is freed */
    double run_queue;           /* procs_running, the sampler's own thread included */
    double context_switches_per_s;
    double rss_bytes;
    double memory_used_bytes; /* MemTotal - MemFree - Buffers - Cached - SReclaimable (as psutil
                                 and MLflow count it; MemTotal - MemFree when that is negative) */
    double memory_available_bytes; /* MemAvailable */
    double memory_total_bytes;     /* MemTotal */
    double disk_read_bytes_per_s, disk_write_bytes_per_s;
    double net_rx_bytes_per_s, net_tx_bytes_per_s;
    double net_rx_bytes, net_tx_bytes;        /* since the sampler started */
    double fs_used_bytes, fs_available_bytes; /* the root file system */
    const d5_sysmon_gpu_sample *gpu;          /* d5_sysmon_gpu_count() entries; borrowed until the
                                                 sampler is freed */
} d5_sysmon_sample;

/* The rates between two readings a (earlier) and b: CPU percentages (total and
 * the b->ncpu values of core_percent: NaN for a core with no ticks in the
 * interval), context switches, disk and network bytes per second over
 * b->mono_ns - a->mono_ns, and b's levels (memory, RSS, run queue, file
 * system). Fields whose file is missing from either reading are NaN, and so
 * is a rate whose counter went backwards (a device or interface removed).
 * time_s, unix_ns, the cumulative network bytes and gpu are left for the
 * caller. */
D5_API void d5_sysmon_rates(const d5_sysmon_counters *a, const d5_sysmon_counters *b,
                            d5_sysmon_sample *out, double *core_percent);

/* ---- The sampler ---------------------------------------------------------------------------- */

/* A stopped sampler (params NULL: the defaults). Loads NVML if it can and
 * looks for the RAPL zones; their absence is no error, it is reported.
 * D5_ERR_INVALID for a rate outside (0, 1000]. Free with d5_sysmon_free. */
D5_API D5_NODISCARD d5_status d5_sysmon_create(const d5_sysmon_params *params, d5_sysmon **out);
/* Takes the first reading (D5_ERR_IO naming the file when /proc/stat cannot be
 * read) and starts the thread. Once per sampler: D5_ERR_STATE otherwise. */
D5_API D5_NODISCARD d5_status d5_sysmon_start(d5_sysmon *m);
/* Both in one: a sampler with the default parameters at `hz` samples a
 * second, started, in *out; hz <= 0: none (*out NULL, D5_OK). On failure
 * *out is NULL and nothing is left running. */
D5_API D5_NODISCARD d5_status d5_sysmon_begin(double hz, d5_sysmon **out);
/* Stops the thread: one last sample when at least a fifth of a period has
 * passed since the previous one, the energy counters read a last time.
 * D5_ERR_STATE when not running; otherwise the first error the thread met
 * (D5_ERR_NOMEM: the samples up to then are kept). */
D5_API D5_NODISCARD d5_status d5_sysmon_stop(d5_sysmon *m);
/* Stops a running sampler and frees it; NULL is a no-op. */
D5_API void d5_sysmon_free(d5_sysmon *m);

D5_API double d5_sysmon_hz(const d5_sysmon *m);
/* Per-core columns: 1 + the highest core number in /proc/stat at the start. */
D5_API int32_t d5_sysmon_cores(const d5_sysmon *m);
/* GPUs sampled (0 when unavailable), and why not: NULL when sampled, else the
 * reason ("libnvidia-ml.so.1 cannot be loaded: ..."). Valid after create. */
D5_API int32_t d5_sysmon_gpu_count(const d5_sysmon *m);
D5_API const char *d5_sysmon_gpu_unavailable(const d5_sysmon *m);
/* The name of GPU i ("NVIDIA H100 80GB HBM3"), "" when out of range. */
D5_API const char *d5_sysmon_gpu_name(const d5_sysmon *m, int32_t i);
/* Wall-clock (ns since the Unix epoch) and CLOCK_MONOTONIC times of the start. */
D5_API uint64_t d5_sysmon_origin_unix_ns(const d5_sysmon *m);
D5_API uint64_t d5_sysmon_origin_mono_ns(const d5_sysmon *m);

/* Samples taken so far. */
D5_API size_t d5_sysmon_sample_count(const d5_sysmon *m);
/* Sample i (a copy; its core_percent and gpu arrays are borrowed until the
 * sampler is freed). D5_ERR_RANGE for i >= count. */
D5_API D5_NODISCARD d5_status d5_sysmon_sample_get(const d5_sysmon *m, size_t i,
                                                   d5_sysmon_sample *out);

/* The sampler's cost: the CPU time of its thread (CLOCK_THREAD_CPUTIME_ID,
 * the first reading included) against the wall time from start to stop. */
typedef struct d5_sysmon_overhead {
    double thread_cpu_s;
    double wall_s;
    double fraction;      /* thread_cpu_s / wall_s: of one core */
    double per_sample_us; /* thread_cpu_s per sample taken */
} d5_sysmon_overhead;
D5_API D5_NODISCARD d5_status d5_sysmon_overhead_get(const d5_sysmon *m, d5_sysmon_overhead *out);

/* ---- Energy -----------------------------------------------------------------------------------
 */

/* Energy of one kind of device over the run (start to stop). */
typedef struct d5_sysmon_energy_part {
    int available;    /* 1: joules holds a measurement */
    char reason[384]; /* when not available: why ("/sys/class/powercap does not exist ...") */
    double joules;    /* summed over the devices (CPU packages, or GPUs) */
    int32_t devices;  /* packages or GPUs counted */
} d5_sysmon_energy_part;

typedef struct d5_sysmon_energy {
    double seconds;            /* start to stop */
    d5_sysmon_energy_part cpu; /* CPU packages: powercap RAPL package zones, wrap-around
                                  corrected with max_energy_range_uj */
    d5_sysmon_energy_part gpu; /* GPUs: NVML's total energy counter */
    double work;               /* what the run did, from d5_sysmon_set_work (0: not said) */
    char unit[32];             /* "step", "inference" */
} d5_sysmon_energy;

/* Says how many units of work (training steps, inferences) the sampled run
 * did, for energy per unit. `unit` is 1 to 31 printable characters without spaces; count > 0
 * and finite; D5_ERR_INVALID otherwise. May be called before or after stop. */
D5_API D5_NODISCARD d5_status d5_sysmon_set_work(d5_sysmon *m, double count, const char *unit);
D5_API D5_NODISCARD d5_status d5_sysmon_energy_get(const d5_sysmon *m, d5_sysmon_energy *out);

/* ---- Reports -------------------------------------------------------------------------------- */

/* system.csv: "time_s,cpu_percent,cpu0_percent,...,cpu<N-1>_percent,run_queue,
 * context_switches_per_s,rss_bytes,memory_used_bytes,memory_available_bytes,
 * disk_read_bytes_per_s,disk_write_bytes_per_s,net_rx_bytes_per_s,net_tx_bytes_per_s"
 * then per GPU "gpu<i>_util_percent,gpu<i>_memory_used_bytes,gpu<i>_power_w"; one
 * row per sample; NaN as an empty field. Written atomically. */
D5_API D5_NODISCARD d5_status d5_sysmon_write_csv(const d5_sysmon *m, const char *path);
/* system.json: {"schema_version", "context", "origin_unix_ns", "hz", "samples" (the
 * count), "duration_s", "cores", "gpu": {"available", "count", "names"} or
 * {"available": false, "reason"}, "overhead": {"thread_cpu_s", "wall_s", "fraction",
 * "per_sample_us"}, "summary": {column of system.csv: {"mean", "max"}}, "energy":
 * {"seconds", "work": {"count", "unit"} (when said), "cpu" and "gpu": {"available":
 * true, "source", "joules", "watts", "devices", "joules_per_unit" (with work)} or
 * {"available": false, "reason"}}}. Written atomically. */
D5_API D5_NODISCARD d5_status d5_sysmon_write_json(const d5_sysmon *m, const char *path);
/* Adds every sample to a run log as MLflow's system metrics, with step = the
 * sample's index and its wall-clock time: system/cpu_utilization_percentage,
 * system/system_memory_usage_megabytes and _percentage, system/disk_usage_megabytes,
 * system/disk_available_megabytes, system/disk_usage_percentage (the root file
 * system), system/network_receive_megabytes and system/network_transmit_megabytes
 * (since the start), system/process_memory_rss_megabytes and per GPU
 * system/gpu_<i>_utilization_percentage, _memory_usage_megabytes,
 * _memory_usage_percentage, _power_usage_watts, _power_usage_percentage
 * (megabytes are 10^6 bytes, as in MLflow). Values that are NaN are left out. */
D5_API D5_NODISCARD d5_status d5_sysmon_to_runlog(const d5_sysmon *m, d5_runlog *log);
/* The sampler's series as counter tracks on the time line of timer `t` (ns
 * from its origin), for d5_report_trace_counters: "CPU %" (series "total",
 * "cpu0", ...), "run queue", "context switches /s", "memory bytes" ("rss",
 * "used", "available"), "disk bytes/s" ("read", "write"), "network bytes/s"
 * ("rx", "tx"), and per GPU "gpu<i> %" ("util"), "gpu<i> memory bytes"
 * ("used"), "gpu<i> W" ("power"). NaN points are left out. *tracks (n of
 * them) is the caller's: free with d5_sysmon_counter_tracks_free. */
D5_API D5_NODISCARD d5_status d5_sysmon_counter_tracks(const d5_sysmon *m, const d5_timer *t,
                                                       d5_counter_track **tracks, size_t *n);
D5_API void d5_sysmon_counter_tracks_free(d5_counter_track *tracks, size_t n);
/* The figures of d5_sysmon_summary_line, for a results file: NaN where
 * nothing was measured (no CPU figure, no RSS, no GPU sampled). */
typedef struct d5_sysmon_summary {
    size_t samples;
    double cpu_percent_mean, cpu_percent_max; /* all cores together, 0..100 */
    double peak_rss_bytes;                    /* the process's resident set */
    double gpu_util_percent_mean;             /* over GPUs and samples */
} d5_sysmon_summary;
/* D5_ERR_STATE while the sampler runs or before it ran; D5_ERR_INVALID for NULL. */
D5_API D5_NODISCARD d5_status d5_sysmon_summary_get(const d5_sysmon *m, d5_sysmon_summary *out);
/* One line for a console: "CPU 63.2% mean (max 98.1%), peak RSS 85.3 MiB,
 * 0.412 J per inference (CPU packages)", or with "energy unavailable: <reason>";
 * GPU utilisation and energy when sampled. Always NUL-terminated. */
D5_API void d5_sysmon_summary_line(const d5_sysmon *m, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
