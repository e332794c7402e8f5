/* The system sampler: a thread that reads the kernel's counters (and NVML's)
 * at a fixed rate and keeps every sample, and the energy over the run. */
#define _GNU_SOURCE
#include "sysmon_internal.h"

#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

d5_sysmon_params d5_sysmon_default_params(void)
{
    return (d5_sysmon_params){.hz = 10, .sys_root = "/sys", .nvml_library = "libnvidia-ml.so.1"};
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Keeps the first problem met while sampling (a file that stopped being
 * readable), for system.json. */
static void warn(d5_sysmon *m, const char *fmt, ...) D5_PRINTF(2, 3);
static void warn(d5_sysmon *m, const char *fmt, ...)
{
    if (m->warning[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->warning, sizeof m->warning, fmt, ap);
    va_end(ap);
}

/* The whole block devices: the names in <sys_root>/block; none when it cannot
 * be listed (the parser's name rule then decides). */
static d5_status list_whole_disks(d5_sysmon *m)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/block", m->sys_root);
    DIR *d = opendir(dir);
    if (!d) return D5_OK;
    size_t cap = 0;
    struct dirent *e;
    d5_status s = D5_OK;
    while (s == D5_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (m->nwhole == cap) {
            size_t c = cap ? 2 * cap : 16;
            char **g = d5_realloc(m->whole, cap * sizeof *g, c * sizeof *g, "block device list");
            if (!g) {
                s = D5_ERR_NOMEM;
                break;
            }
            m->whole = g;
            cap = c;
        }
        m->whole[m->nwhole] = d5_strdup(e->d_name, "block device name");
        if (!m->whole[m->nwhole])
            s = D5_ERR_NOMEM;
        else
            m->nwhole++;
    }
    closedir(d);
    /* An empty or unreadable list: the name rule. */
    if (s == D5_OK && m->nwhole == 0) {
        d5_free(m->whole);
        m->whole = NULL;
    }
    return s;
}

/* Reads every counter into c. A file that cannot be read leaves its bit
 * unset; on the first reading, /proc/stat must be readable. */
static d5_status read_counters(d5_sysmon *m, d5_sysmon_counters *c, int first)
{
    c->have = 0;
    c->mono_ns = d5__mono_ns();
    static const char *const path[5] = {"/proc/stat", "/proc/meminfo", "/proc/diskstats",
                                        "/proc/net/dev", "/proc/self/statm"};
    for (int i = 0; i < 5; i++) {
        d5_status s = d5__text_read(path[i], &m->fd[i], &m->text);
        if (s == D5_OK) {
            switch (i) {
            case 0: s = d5_sysmon_parse_stat(m->text.p, c); break;
            case 1: s = d5_sysmon_parse_meminfo(m->text.p, c); break;
            case 2:
                s = d5_sysmon_parse_diskstats(m->text.p, (const char *const *)m->whole, m->nwhole,
                                              c);
                break;
            case 3: s = d5_sysmon_parse_net_dev(m->text.p, c); break;
            default: s = d5_sysmon_parse_statm(m->text.p, m->page_size, c); break;
            }
        }
        if (s == D5_ERR_NOMEM || (s != D5_OK && first && i == 0)) return s;
        if (s != D5_OK) warn(m, "%s", d5_last_error());
    }
    struct statvfs fs;
    if (statvfs("/", &fs) == 0) {
        c->fs_used_bytes = (uint64_t)(fs.f_blocks - fs.f_bfree) * fs.f_frsize;
        c->fs_available_bytes = (uint64_t)fs.f_bavail * fs.f_frsize;
        c->have |= D5_SYSMON_HAVE_FS;
    }
    return D5_OK;
}

/* The sampler's buffers and the sampler itself. */
static void free_buffers(d5_sysmon *m)
{
    d5_free(m->prev);
    d5_free(m->cur);
    d5_free(m->sys_root);
    d5_free(m->nvml_library);
    d5_free(m);
}

d5_status d5_sysmon_create(const d5_sysmon_params *params, d5_sysmon **out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_sysmon_create: out is NULL");
    *out = NULL;
    d5_sysmon_params p = params ? *params : d5_sysmon_default_params();
    if (!(p.hz > 0 && p.hz <= 1000))
        return d5_error(D5_ERR_INVALID, "system sampler: rate %g Hz is outside (0, 1000]", p.hz);
    if (!p.sys_root) p.sys_root = "/sys";
    if (!p.nvml_library) p.nvml_library = "libnvidia-ml.so.1";
    d5_sysmon *m = d5_calloc(1, sizeof *m, "system sampler");
    if (!m) return D5_ERR_NOMEM;
    m->hz = p.hz;
    for (int i = 0; i < 5; i++) m->fd[i] = -1;
    m->period_ns = (uint64_t)(1e9 / p.hz);
    m->prev = d5_calloc(1, sizeof *m->prev, "system counters");
    m->cur = d5_calloc(1, sizeof *m->cur, "system counters");
    m->sys_root = d5_strdup(p.sys_root, "system sampler");
    m->nvml_library = d5_strdup(p.nvml_library, "system sampler");
    pthread_condattr_t ca;
    int sync_ok = pthread_condattr_init(&ca) == 0;
    if (sync_ok) {
        sync_ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
                  pthread_cond_init(&m->cond, &ca) == 0;
        pthread_condattr_destroy(&ca);
    }
    if (sync_ok && pthread_mutex_init(&m->lock, NULL) != 0) {
        pthread_cond_destroy(&m->cond);
        sync_ok = 0;
    }
    if (!sync_ok || !m->prev || !m->cur || !m->sys_root || !m->nvml_library) {
        if (sync_ok) {
            pthread_cond_destroy(&m->cond);
            pthread_mutex_destroy(&m->lock);
        }
        free_buffers(m);
        return sync_ok ? D5_ERR_NOMEM
                       : d5_error(D5_ERR_NOMEM, "system sampler: cannot create its lock");
    }
    long page = sysconf(_SC_PAGESIZE);
    m->page_size = page > 0 ? (uint64_t)page : 4096;
    d5_status s = list_whole_disks(m);
    if (s != D5_OK) {
        m->state = D5__SYSMON_STOPPED;
        d5_sysmon_free(m);
        return s;
    }
    d5__rapl_find(&m->rapl, m->sys_root);
    d5__nvml_open(m->nvml_library, &m->nvml, m->gpu_reason, sizeof m->gpu_reason);
    m->ngpu = d5__nvml_count(m->nvml);
    *out = m;
    return D5_OK;
}

/* Adds the blocks of sample i when it starts a new one. */
static d5_status reserve(d5_sysmon *m, size_t i)
{
    size_t b = i / D5__SYSMON_BLOCK;
    if (b < m->nblk) return D5_OK;
    d5_sysmon_sample *blk = d5_calloc(D5__SYSMON_BLOCK, sizeof *blk, "system samples");
    double *core = d5_calloc(D5__SYSMON_BLOCK * (size_t)(m->ncpu ? m->ncpu : 1), sizeof *core,
                             "system samples");
    d5_sysmon_gpu_sample *gpu = d5_calloc(D5__SYSMON_BLOCK * (size_t)(m->ngpu ? m->ngpu : 1),
                                          sizeof *gpu, "system samples");
    d5_status s = blk && core && gpu ? D5_OK : D5_ERR_NOMEM;
    pthread_mutex_lock(&m->lock);
    if (s == D5_OK && m->nblk == m->blk_cap) {
        size_t cap = m->blk_cap ? 2 * m->blk_cap : 16;
        d5_sysmon_sample **t1 =
            d5_realloc(m->blk, m->blk_cap * sizeof *t1, cap * sizeof *t1, "system samples");
        if (t1) m->blk = t1;
        double **t2 = t1 ? d5_realloc(m->core_blk, m->blk_cap * sizeof *t2, cap * sizeof *t2,
                                      "system samples")
                         : NULL;
        if (t2) m->core_blk = t2;
        d5_sysmon_gpu_sample **t3 =
            t2 ? d5_realloc(m->gpu_blk, m->blk_cap * sizeof *t3, cap * sizeof *t3, "system samples")
               : NULL;
        if (t3) m->gpu_blk = t3;
        /* The tables that grew keep their old entries: the next try reuses them. */
        if (t3)
            m->blk_cap = cap;
        else
            s = D5_ERR_NOMEM;
    }
    if (s == D5_OK) {
        m->blk[m->nblk] = blk;
        m->core_blk[m->nblk] = core;
        m->gpu_blk[m->nblk] = gpu;
        m->nblk++;
    }
    pthread_mutex_unlock(&m->lock);
    if (s != D5_OK) {
        d5_free(blk);
        d5_free(core);
        d5_free(gpu);
    }
    return s;
}

/* One sample: a reading, the energy counters, the GPUs, the rates since the
 * previous reading. Runs on the sampler's thread. */
static d5_status take_sample(d5_sysmon *m)
{
    size_t i = m->n;
    d5_status s = reserve(m, i);
    if (s == D5_OK) s = read_counters(m, m->cur, 0);
    if (s != D5_OK) return s;
    if (m->rapl.available) d5__rapl_update(&m->rapl);
    size_t b = i / D5__SYSMON_BLOCK, k = i % D5__SYSMON_BLOCK;
    d5_sysmon_sample *x = &m->blk[b][k];
    double *core = m->core_blk[b] + k * (size_t)m->ncpu;
    d5_sysmon_gpu_sample *gpu = m->gpu_blk[b] + k * (size_t)m->ngpu;
    /* The rates write one value per core of this reading: through a scratch
     * array, as cores may have come online since the start. */
    double all[D5_SYSMON_MAX_CPUS];
    d5_sysmon_rates(m->prev, m->cur, x, all);
    for (int32_t c = 0; c < m->ncpu; c++) core[c] = c < m->cur->ncpu ? all[c] : NAN;
    x->core_percent = core;
    if (m->nvml) d5__nvml_sample(m->nvml, gpu);
    x->gpu = gpu;
    x->time_s = (double)(m->cur->mono_ns - m->origin_mono_ns) * 1e-9;
    x->unix_ns = m->origin_unix_ns + (m->cur->mono_ns - m->origin_mono_ns);
    int net = m->have_net0 && (m->cur->have & D5_SYSMON_HAVE_NET);
    x->net_rx_bytes = net && m->cur->net_rx_bytes >= m->net_rx0
                          ? (double)(m->cur->net_rx_bytes - m->net_rx0)
                          : NAN;
    x->net_tx_bytes = net && m->cur->net_tx_bytes >= m->net_tx0
                          ? (double)(m->cur->net_tx_bytes - m->net_tx0)
                          : NAN;
    d5_sysmon_counters *t = m->prev;
    m->prev = m->cur;
    m->cur = t;
    pthread_mutex_lock(&m->lock);
    m->n++;
    pthread_mutex_unlock(&m->lock);
    return D5_OK;
}

static void *sampler_main(void *arg)
{
    d5_sysmon *m = arg;
    uint64_t next = m->origin_mono_ns + m->period_ns;
    d5_status s = D5_OK;
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        uint64_t now = d5__mono_ns();
        if (now < next) {
            struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
            pthread_cond_timedwait(&m->cond, &m->lock, &ts);
            continue;
        }
        pthread_mutex_unlock(&m->lock);
        s = take_sample(m);
        /* A period missed (the machine was busy) is skipped, not caught up. */
        now = d5__mono_ns();
        next += m->period_ns;
        if (next <= now) next += ((now - next) / m->period_ns + 1) * m->period_ns;
        pthread_mutex_lock(&m->lock);
        if (s != D5_OK) break;
    }
    pthread_mutex_unlock(&m->lock);
    /* The last stretch, when long enough to measure a rate. */
    if (s == D5_OK && d5__mono_ns() - m->prev->mono_ns >= m->period_ns / 5)
        s = take_sample(m);
    else if (m->rapl.available)
        d5__rapl_update(&m->rapl);
    if (m->nvml) d5__nvml_energy_end(m->nvml, &m->gpu_energy);
    m->end_mono_ns = d5__mono_ns();
    if (s != D5_OK) {
        m->thread_status = s;
        d5__say(m->thread_error, sizeof m->thread_error, "system sampler: %s", d5_last_error());
    }
    m->thread_cpu_s = thread_cpu_s();
    return NULL;
}

d5_status d5_sysmon_start(d5_sysmon *m)
{
    if (!m) return d5_error(D5_ERR_INVALID, "d5_sysmon_start: NULL sampler");
    if (m->state != D5__SYSMON_CREATED)
        return d5_error(D5_ERR_STATE, "system sampler: started already (a sampler runs once)");
    double c0 = thread_cpu_s();
    m->origin_unix_ns = d5__wall_ns();
    d5_status s = read_counters(m, m->prev, 1);
    if (s != D5_OK) return s;
    m->origin_mono_ns = m->prev->mono_ns;
    m->ncpu = m->prev->ncpu;
    m->have_net0 = (m->prev->have & D5_SYSMON_HAVE_NET) != 0;
    m->net_rx0 = m->prev->net_rx_bytes;
    m->net_tx0 = m->prev->net_tx_bytes;
    if (m->rapl.available) d5__rapl_begin(&m->rapl);
    if (m->nvml) d5__nvml_energy_begin(m->nvml);
    m->start_cpu_s = thread_cpu_s() - c0;
    /* Signals go to the caller's threads, not to the sampler. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&m->thread, NULL, sampler_main, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return d5_error(D5_ERR_IO, "system sampler: cannot start its thread: %s", strerror(rc));
    m->state = D5__SYSMON_RUNNING;
    return D5_OK;
}

d5_status d5_sysmon_begin(double hz, d5_sysmon **out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_sysmon_begin: NULL output");
    *out = NULL;
    if (hz <= 0) return D5_OK;
    d5_sysmon_params p = d5_sysmon_default_params();
    p.hz = hz;
    d5_sysmon *m = NULL;
    d5_status s = d5_sysmon_create(&p, &m);
    if (s == D5_OK) s = d5_sysmon_start(m);
    if (s == D5_OK)
        *out = m;
    else
        d5_sysmon_free(m);
    return s;
}

d5_status d5_sysmon_stop(d5_sysmon *m)
{
    if (!m) return d5_error(D5_ERR_INVALID, "d5_sysmon_stop: NULL sampler");
    if (m->state != D5__SYSMON_RUNNING)
        return d5_error(D5_ERR_STATE, "system sampler: not running");
    pthread_mutex_lock(&m->lock);
    m->stop = 1;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    m->state = D5__SYSMON_STOPPED;
    if (m->thread_status != D5_OK) return d5_error(m->thread_status, "%s", m->thread_error);
    return D5_OK;
}

void d5_sysmon_free(d5_sysmon *m)
{
    if (!m) return;
    if (m->state == D5__SYSMON_RUNNING) {
        d5_status ignored = d5_sysmon_stop(m); /* freeing: the samples go anyway */
        (void)ignored;
    }
    for (size_t b = 0; b < m->nblk; b++) {
        d5_free(m->blk[b]);
        d5_free(m->core_blk[b]);
        d5_free(m->gpu_blk[b]);
    }
    d5_free(m->blk);
    d5_free(m->core_blk);
    d5_free(m->gpu_blk);
    for (size_t i = 0; i < m->nwhole; i++) d5_free(m->whole[i]);
    d5_free(m->whole);
    d5__text_free(&m->text);
    for (int i = 0; i < 5; i++)
        if (m->fd[i] >= 0) close(m->fd[i]);
    d5__nvml_close(m->nvml);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    free_buffers(m);
}

double d5_sysmon_hz(const d5_sysmon *m)
{
    return m ? m->hz : 0;
}

int32_t d5_sysmon_cores(const d5_sysmon *m)
{
    return m ? m->ncpu : 0;
}

int32_t d5_sysmon_gpu_count(const d5_sysmon *m)
{
    return m ? m->ngpu : 0;
}

const char *d5_sysmon_gpu_unavailable(const d5_sysmon *m)
{
    return !m ? "no sampler" : m->nvml ? NULL : m->gpu_reason;
}

const char *d5_sysmon_gpu_name(const d5_sysmon *m, int32_t i)
{
    return m ? d5__nvml_name(m->nvml, i) : "";
}

uint64_t d5_sysmon_origin_unix_ns(const d5_sysmon *m)
{
    return m ? m->origin_unix_ns : 0;
}

uint64_t d5_sysmon_origin_mono_ns(const d5_sysmon *m)
{
    return m ? m->origin_mono_ns : 0;
}

size_t d5_sysmon_sample_count(const d5_sysmon *m)
{
    if (!m) return 0;
    d5_sysmon *w = (d5_sysmon *)m;
    pthread_mutex_lock(&w->lock);
    size_t n = w->n;
    pthread_mutex_unlock(&w->lock);
    return n;
}

d5_status d5_sysmon_sample_get(const d5_sysmon *m, size_t i, d5_sysmon_sample *out)
{
    if (!m || !out) return d5_error(D5_ERR_INVALID, "d5_sysmon_sample_get: NULL argument");
    d5_sysmon *w = (d5_sysmon *)m;
    pthread_mutex_lock(&w->lock);
    size_t n = w->n;
    if (i < n) *out = w->blk[i / D5__SYSMON_BLOCK][i % D5__SYSMON_BLOCK];
    pthread_mutex_unlock(&w->lock);
    if (i >= n)
        return d5_error(D5_ERR_RANGE, "system sampler: sample %zu asked for, %zu taken", i, n);
    return D5_OK;
}

static d5_status stopped(const d5_sysmon *m, const char *what)
{
    if (!m) return d5_error(D5_ERR_INVALID, "%s: NULL sampler", what);
    if (m->state != D5__SYSMON_STOPPED)
        return d5_error(D5_ERR_STATE, "%s: the sampler %s", what,
                        m->state == D5__SYSMON_RUNNING ? "still runs (stop it first)"
                                                       : "was never started");
    return D5_OK;
}

d5_status d5_sysmon_overhead_get(const d5_sysmon *m, d5_sysmon_overhead *out)
{
    d5_status s = stopped(m, "d5_sysmon_overhead_get");
    if (s != D5_OK) return s;
    if (!out) return d5_error(D5_ERR_INVALID, "d5_sysmon_overhead_get: out is NULL");
    out->thread_cpu_s = m->thread_cpu_s + m->start_cpu_s;
    out->wall_s = (double)(m->end_mono_ns - m->origin_mono_ns) * 1e-9;
    out->fraction = out->wall_s > 0 ? out->thread_cpu_s / out->wall_s : NAN;
    out->per_sample_us = m->n ? 1e6 * out->thread_cpu_s / (double)m->n : NAN;
    return D5_OK;
}

d5_status d5_sysmon_set_work(d5_sysmon *m, double count, const char *unit)
{
    if (!m || !unit) return d5_error(D5_ERR_INVALID, "d5_sysmon_set_work: NULL argument");
    if (!(count > 0) || !isfinite(count))
        return d5_error(D5_ERR_INVALID, "system sampler: work count %g is not positive", count);
    size_t n = strlen(unit);
    int ok = n > 0 && n < sizeof m->unit;
    for (size_t i = 0; ok && i < n; i++) ok = unit[i] > 0x20 && unit[i] < 0x7f;
    if (!ok)
        return d5_error(D5_ERR_INVALID,
                        "system sampler: work unit '%.40s' is not 1 to 31 printable characters "
                        "without spaces",
                        unit);
    m->work = count;
    memcpy(m->unit, unit, n + 1);
    return D5_OK;
}

d5_status d5_sysmon_energy_get(const d5_sysmon *m, d5_sysmon_energy *out)
{
    d5_status s = stopped(m, "d5_sysmon_energy_get");
    if (s != D5_OK) return s;
    if (!out) return d5_error(D5_ERR_INVALID, "d5_sysmon_energy_get: out is NULL");
    memset(out, 0, sizeof *out);
    out->seconds = (double)(m->end_mono_ns - m->origin_mono_ns) * 1e-9;
    if (m->rapl.available) {
        out->cpu.available = 1;
        out->cpu.devices = m->rapl.nzones;
        for (int32_t i = 0; i < m->rapl.nzones; i++) out->cpu.joules += m->rapl.zone[i].joules;
    } else {
        d5__say(out->cpu.reason, sizeof out->cpu.reason, "%s", m->rapl.reason);
    }
    if (m->nvml)
        out->gpu = m->gpu_energy;
    else
        d5__say(out->gpu.reason, sizeof out->gpu.reason, "%s", m->gpu_reason);
    out->work = m->work;
    memcpy(out->unit, m->unit, sizeof out->unit);
    return D5_OK;
}
