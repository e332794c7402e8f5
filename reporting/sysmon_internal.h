/* The system sampler's parts (sysmon*.c): the sampler, the RAPL and NVML
 * readers, and the text of kernel files. Not installed. */
#ifndef D5_CORE_SYSMON_INTERNAL_H
#define D5_CORE_SYSMON_INTERNAL_H

#include "d5/sysmon.h"

#include <pthread.h>

/* ---- Kernel files (sysmon_proc.c) ---- */

/* A growable buffer for the text of one file. */
typedef struct d5__text {
    char *p;
    size_t cap;
} d5__text;
/* Reads the whole file into b->p (NUL-terminated) through *fd, opened on
 * the first call (-1: not yet) and kept open; D5_ERR_IO with the path and the
 * system's reason (the file is closed, to be opened again). */
d5_status d5__text_read(const char *path, int *fd, d5__text *b);
void d5__text_free(d5__text *b);
/* snprintf for reasons and messages, which may be cut at `size`. */
void d5__say(char *buf, size_t size, const char *fmt, ...) D5_PRINTF(3, 4);

/* ---- CPU package energy: powercap RAPL (sysmon_rapl.c) ---- */

#define D5__RAPL_MAX_ZONES 16

typedef struct d5__rapl_zone {
    char dir[512];  /* <sys_root>/class/powercap/intel-rapl:N */
    char name[64];  /* "package-0" */
    uint64_t range; /* max_energy_range_uj */
    uint64_t last;  /* the last energy_uj read */
    double joules;  /* accumulated since the first read */
} d5__rapl_zone;

typedef struct d5__rapl {
    int available;
    char reason[384];
    int32_t nzones;
    d5__rapl_zone zone[D5__RAPL_MAX_ZONES];
} d5__rapl;

/* Finds the package zones under sys_root; without them, `available` is 0 and
 * `reason` says why. */
void d5__rapl_find(d5__rapl *r, const char *sys_root);
/* The first reading of every zone (an unreadable counter makes RAPL unavailable). */
void d5__rapl_begin(d5__rapl *r);
/* Adds the energy since the previous reading, across a wrap-around. */
void d5__rapl_update(d5__rapl *r);

/* ---- GPUs: NVML loaded at run time (sysmon_nvml.c) ---- */

typedef struct d5__nvml d5__nvml;
/* Loads `library` and initialises NVML; on failure *out is NULL and `reason`
 * says why ("libnvidia-ml.so.1 cannot be loaded: ..."). */
void d5__nvml_open(const char *library, d5__nvml **out, char *reason, size_t size);
void d5__nvml_close(d5__nvml *g);
int32_t d5__nvml_count(const d5__nvml *g);
const char *d5__nvml_name(const d5__nvml *g, int32_t i);
/* One sample of every GPU (count entries; NaN where NVML says no). */
void d5__nvml_sample(d5__nvml *g, d5_sysmon_gpu_sample *out);
/* The total energy counters at the start, and the energy since then at the
 * end (unavailable with the reason when a counter cannot be read). */
void d5__nvml_energy_begin(d5__nvml *g);
void d5__nvml_energy_end(d5__nvml *g, d5_sysmon_energy_part *out);

/* ---- The sampler (sysmon.c) ---- */

/* Samples are stored in blocks that never move, so that the arrays a sample
 * points to stay valid while more are added. */
#define D5__SYSMON_BLOCK 256

enum { D5__SYSMON_CREATED, D5__SYSMON_RUNNING, D5__SYSMON_STOPPED };

struct d5_sysmon {
    double hz;
    uint64_t period_ns;
    char *sys_root;
    char *nvml_library;
    int state;
    pthread_t thread;
    pthread_mutex_t lock; /* guards n, the block tables and stop */
    pthread_cond_t cond;  /* wakes the thread to stop */
    int stop;
    uint64_t origin_mono_ns, origin_unix_ns, end_mono_ns;
    int32_t ncpu, ngpu;
    d5_sysmon_sample **blk;
    double **core_blk;
    d5_sysmon_gpu_sample **gpu_blk;
    size_t nblk, blk_cap, n;
    d5_sysmon_counters *prev, *cur;
    uint64_t net_rx0, net_tx0; /* at the start */
    int have_net0;
    d5__text text;
    int fd[5];    /* /proc/stat, meminfo, diskstats, net/dev, self/statm; -1: closed */
    char **whole; /* /sys/block names; NULL: the name rule */
    size_t nwhole;
    uint64_t page_size;
    d5__rapl rapl;
    d5__nvml *nvml;
    char gpu_reason[384];
    d5_sysmon_energy_part gpu_energy;
    double start_cpu_s;  /* the first reading, on the caller's thread */
    double thread_cpu_s; /* the sampler thread */
    double work;
    char unit[32];
    d5_status thread_status;
    char thread_error[512];
    char warning[512]; /* the first file that could not be read while sampling */
};

#endif
