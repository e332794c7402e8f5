/* The system sampler's kernel files: parsers of the text of /proc/stat,
 * /proc/meminfo, /proc/diskstats, /proc/net/dev and /proc/self/statm, and the
 * rates between two readings. The parsers take text, so that known input can
 * be fed to them. */
#define _GNU_SOURCE
#include "sysmon_internal.h"

#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

d5_status d5__text_read(const char *path, int *fd, d5__text *b)
{
    /* Kept open between readings: the kernel writes the text anew from offset 0. */
    if (*fd < 0) *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return d5_error(D5_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    size_t n = 0;
    int e = 0;
    if (lseek(*fd, 0, SEEK_SET) != 0) e = errno;
    while (!e) {
        if (b->cap - n < 4096) {
            size_t cap = b->cap ? 2 * b->cap : 16384;
            char *p = d5_realloc(b->p, b->cap, cap, "kernel file text");
            if (!p) return D5_ERR_NOMEM;
            b->p = p;
            b->cap = cap;
        }
        ssize_t got = read(*fd, b->p + n, b->cap - n - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) e = errno;
        if (got <= 0) break;
        n += (size_t)got;
    }
    if (e) {
        close(*fd);
        *fd = -1; /* opened again next time */
        return d5_error(D5_ERR_IO, "cannot read '%s': %s", path, strerror(e));
    }
    b->p[n] = '\0';
    return D5_OK;
}

void d5__say(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

void d5__text_free(d5__text *b)
{
    d5_free(b->p);
    b->p = NULL;
    b->cap = 0;
}

/* The next line of *s (without its newline) as [*line, *end); 0 at the end. */
static int next_line(const char **s, const char **line, const char **end)
{
    if (!**s) return 0;
    *line = *s;
    const char *nl = strchr(*s, '\n');
    *end = nl ? nl : *s + strlen(*s);
    *s = nl ? nl + 1 : *end;
    return 1;
}

/* Reads up to `max` unsigned decimal numbers separated by blanks from
 * [p, end); returns how many, or -1 when something else is in the way. */
static int numbers(const char *p, const char *end, uint64_t *v, int max)
{
    int k = 0;
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p >= end || k == max) return k;
        if (!isdigit((unsigned char)*p)) return -1;
        uint64_t x = 0;
        while (p < end && isdigit((unsigned char)*p)) x = x * 10 + (uint64_t)(*p++ - '0');
        if (p < end && *p != ' ' && *p != '\t') return -1;
        v[k++] = x;
    }
}

/* One CPU line's fields after its name: at least user, nice, system, idle. */
static int cpu_ticks(const char *p, const char *end, d5_sysmon_cpu_ticks *t)
{
    uint64_t v[8] = {0};
    int k = numbers(p, end, v, 8);
    if (k < 4) return 0;
    t->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
    t->busy = t->total - v[3] - v[4];
    t->idle = v[3];
    return 1;
}

/* The core number of a "cpuN" line, -1 for the "cpu" line, -2 for no CPU line. */
static long cpu_number(const char *line, const char *end, const char **rest)
{
    if (end - line < 4 || strncmp(line, "cpu", 3) != 0) return -2;
    if (line[3] == ' ' || line[3] == '\t') {
        *rest = line + 3;
        return -1;
    }
    long n = 0;
    const char *p = line + 3;
    if (!isdigit((unsigned char)*p)) return -2;
    while (p < end && isdigit((unsigned char)*p) && n < 100000000) n = n * 10 + (*p++ - '0');
    *rest = p;
    return n;
}

static int line_is(const char *line, const char *end, const char *key, const char **rest)
{
    size_t k = strlen(key);
    if ((size_t)(end - line) <= k || strncmp(line, key, k) != 0 ||
        (line[k] != ' ' && line[k] != '\t'))
        return 0;
    *rest = line + k;
    return 1;
}

d5_status d5_sysmon_parse_stat(const char *text, d5_sysmon_counters *c)
{
    if (!text || !c) return d5_error(D5_ERR_INVALID, "d5_sysmon_parse_stat: NULL argument");
    d5_sysmon_cpu_ticks all = {0, 0, 0};
    int have_all = 0, have_ctxt = 0, have_running = 0;
    long ncpu = 0;
    uint64_t ctxt = 0, running = 0;
    const char *s = text, *line, *end, *rest;
    int lineno = 0;
    /* First pass: check everything, find the totals. */
    while (next_line(&s, &line, &end)) {
        lineno++;
        long cpu = cpu_number(line, end, &rest);
        uint64_t v;
        d5_sysmon_cpu_ticks t;
        if (cpu >= -1) {
            if (!cpu_ticks(rest, end, &t))
                return d5_error(D5_ERR_FORMAT,
                                "/proc/stat line %d: a CPU line with fewer than 4 tick counts "
                                "or a field that is not a number",
                                lineno);
            if (cpu == -1) {
                all = t;
                have_all = 1;
            } else if (cpu < D5_SYSMON_MAX_CPUS && cpu + 1 > ncpu) {
                ncpu = cpu + 1;
            }
        } else if (line_is(line, end, "ctxt", &rest)) {
            if (numbers(rest, end, &v, 1) != 1)
                return d5_error(D5_ERR_FORMAT, "/proc/stat line %d: 'ctxt' without a count",
                                lineno);
            ctxt = v;
            have_ctxt = 1;
        } else if (line_is(line, end, "procs_running", &rest)) {
            if (numbers(rest, end, &v, 1) != 1)
                return d5_error(D5_ERR_FORMAT,
                                "/proc/stat line %d: 'procs_running' without a count", lineno);
            running = v;
            have_running = 1;
        }
    }
    if (!have_all || !have_ctxt || !have_running)
        return d5_error(D5_ERR_FORMAT, "/proc/stat: no '%s' line",
                        !have_all    ? "cpu"
                        : !have_ctxt ? "ctxt"
                                     : "procs_running");
    /* Second pass: the cores. */
    memset(c->core, 0, (size_t)ncpu * sizeof c->core[0]);
    s = text;
    while (next_line(&s, &line, &end)) {
        long cpu = cpu_number(line, end, &rest);
        if (cpu >= 0 && cpu < ncpu) cpu_ticks(rest, end, &c->core[cpu]);
    }
    c->cpu = all;
    c->ncpu = (int32_t)ncpu;
    c->context_switches = ctxt;
    c->procs_running = running > INT32_MAX ? INT32_MAX : (int32_t)running;
    c->have |= D5_SYSMON_HAVE_STAT;
    return D5_OK;
}

d5_status d5_sysmon_parse_meminfo(const char *text, d5_sysmon_counters *c)
{
    if (!text || !c) return d5_error(D5_ERR_INVALID, "d5_sysmon_parse_meminfo: NULL argument");
    static const char *const keys[] = {
        "MemTotal:", "MemFree:", "MemAvailable:", "Buffers:", "Cached:", "SReclaimable:"};
    enum { NKEYS = sizeof keys / sizeof keys[0] };
    uint64_t val[NKEYS] = {0};
    int have[NKEYS] = {0};
    const char *s = text, *line, *end, *rest;
    int lineno = 0;
    while (next_line(&s, &line, &end)) {
        lineno++;
        for (int k = 0; k < NKEYS; k++) {
            if (!line_is(line, end, keys[k], &rest)) continue;
            uint64_t v;
            const char *unit = rest;
            while (unit < end && (*unit == ' ' || *unit == '\t')) unit++;
            while (unit < end && isdigit((unsigned char)*unit)) unit++;
            if (numbers(rest, unit, &v, 1) != 1 || end - unit != 3 || strncmp(unit, " kB", 3))
                return d5_error(D5_ERR_FORMAT, "/proc/meminfo line %d: '%s' is not 'N kB'", lineno,
                                keys[k]);
            val[k] = v * 1024;
            have[k] = 1;
        }
    }
    /* SReclaimable is older than MemAvailable's kernels, but optional here. */
    for (int k = 0; k < NKEYS - 1; k++)
        if (!have[k])
            return d5_error(D5_ERR_FORMAT, "/proc/meminfo: no '%s' line%s", keys[k],
                            k == 2 ? " (kernels before 3.14 do not have it)" : "");
    c->mem_total = val[0];
    c->mem_free = val[1];
    c->mem_available = val[2];
    c->mem_buffers = val[3];
    c->mem_cached = val[4];
    c->mem_sreclaimable = val[5];
    c->have |= D5_SYSMON_HAVE_MEMINFO;
    return D5_OK;
}

/* The name field of a /proc/diskstats line: [*name, *name_end), and the rest. */
static int disk_name(const char *line, const char *end, const char **name, const char **name_end)
{
    uint64_t v[2];
    const char *p = line;
    int k = 0;
    while (k < 2) { /* major and minor */
        while (p < end && *p == ' ') p++;
        const char *q = p;
        while (q < end && isdigit((unsigned char)*q)) q++;
        if (q == p || numbers(p, q, &v[k], 1) != 1) return 0;
        p = q;
        k++;
    }
    while (p < end && *p == ' ') p++;
    *name = p;
    while (p < end && *p != ' ' && *p != '\t') p++;
    *name_end = p;
    return *name_end > *name;
}

/* Devices stacked on others: their traffic is also their disks'. */
static int stacked(const char *n, size_t len)
{
    static const char *const prefix[] = {"loop", "ram", "zram", "dm-", "md"};
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++) {
        size_t k = strlen(prefix[i]);
        if (len > k && strncmp(n, prefix[i], k) == 0 &&
            (prefix[i][k - 1] == '-' || isdigit((unsigned char)n[k])))
            return 1;
    }
    return 0;
}

/* Whether `n` is `d` followed by digits, or by 'p' and digits. */
static int partition_of(const char *n, size_t nl, const char *d, size_t dl)
{
    if (nl <= dl || strncmp(n, d, dl) != 0) return 0;
    size_t i = dl;
    if (n[i] == 'p' && isdigit((unsigned char)d[dl - 1])) i++;
    if (i == nl) return 0;
    for (; i < nl; i++)
        if (!isdigit((unsigned char)n[i])) return 0;
    return 1;
}

static int is_partition(const char *text, const char *n, size_t nl)
{
    const char *s = text, *line, *end, *d, *de;
    while (next_line(&s, &line, &end))
        if (disk_name(line, end, &d, &de) && partition_of(n, nl, d, (size_t)(de - d))) return 1;
    return 0;
}

static int listed(const char *const *whole, size_t n_whole, const char *n, size_t nl)
{
    for (size_t i = 0; i < n_whole; i++)
        if (whole[i] && strlen(whole[i]) == nl && strncmp(whole[i], n, nl) == 0) return 1;
    return 0;
}

d5_status d5_sysmon_parse_diskstats(const char *text, const char *const *whole, size_t n_whole,
                                    d5_sysmon_counters *c)
{
    if (!text || !c) return d5_error(D5_ERR_INVALID, "d5_sysmon_parse_diskstats: NULL argument");
    uint64_t rd = 0, wr = 0;
    int32_t disks = 0;
    const char *s = text, *line, *end, *n, *ne;
    int lineno = 0;
    while (next_line(&s, &line, &end)) {
        lineno++;
        if (line == end) continue;
        uint64_t v[11];
        if (!disk_name(line, end, &n, &ne) || numbers(ne, end, v, 11) < 7)
            return d5_error(D5_ERR_FORMAT,
                            "/proc/diskstats line %d: not 'major minor name' and at least 7 "
                            "counts",
                            lineno);
        size_t nl = (size_t)(ne - n);
        if (stacked(n, nl)) continue;
        if (whole ? !listed(whole, n_whole, n, nl) : is_partition(text, n, nl)) continue;
        rd += v[2] * 512;
        wr += v[6] * 512;
        disks++;
    }
    c->disk_read_bytes = rd;
    c->disk_write_bytes = wr;
    c->disks = disks;
    c->have |= D5_SYSMON_HAVE_DISKSTATS;
    return D5_OK;
}

d5_status d5_sysmon_parse_net_dev(const char *text, d5_sysmon_counters *c)
{
    if (!text || !c) return d5_error(D5_ERR_INVALID, "d5_sysmon_parse_net_dev: NULL argument");
    uint64_t rx = 0, tx = 0;
    int32_t count = 0;
    const char *s = text, *line, *end;
    int lineno = 0;
    while (next_line(&s, &line, &end)) {
        lineno++;
        const char *colon = memchr(line, ':', (size_t)(end - line));
        if (lineno <= 2) {
            if (colon == NULL && memchr(line, '|', (size_t)(end - line))) continue;
            if (colon == NULL)
                return d5_error(D5_ERR_FORMAT, "/proc/net/dev line %d: not a header line", lineno);
        }
        if (line == end) continue;
        if (!colon)
            return d5_error(D5_ERR_FORMAT, "/proc/net/dev line %d: no 'interface:'", lineno);
        const char *name = line;
        while (name < colon && *name == ' ') name++;
        uint64_t v[16];
        if (numbers(colon + 1, end, v, 16) < 9)
            return d5_error(D5_ERR_FORMAT,
                            "/proc/net/dev line %d: fewer than 9 counts after the interface",
                            lineno);
        if (colon - name == 2 && strncmp(name, "lo", 2) == 0) continue;
        rx += v[0];
        tx += v[8];
        count++;
    }
    c->net_rx_bytes = rx;
    c->net_tx_bytes = tx;
    c->interfaces = count;
    c->have |= D5_SYSMON_HAVE_NET;
    return D5_OK;
}

d5_status d5_sysmon_parse_statm(const char *text, uint64_t page_size, d5_sysmon_counters *c)
{
    if (!text || !c) return d5_error(D5_ERR_INVALID, "d5_sysmon_parse_statm: NULL argument");
    uint64_t v[7];
    const char *end = strchr(text, '\n');
    if (!end) end = text + strlen(text);
    if (numbers(text, end, v, 7) < 2)
        return d5_error(D5_ERR_FORMAT, "/proc/self/statm: not a line of page counts");
    c->rss_bytes = v[1] * page_size;
    c->have |= D5_SYSMON_HAVE_RSS;
    return D5_OK;
}

/* The busy share of the ticks between a and b. iowait (idle time waiting
 * for I/O) may go backwards (proc(5)), and the total with it: busy, idle and
 * iowait advance each on its own, a step back counting as none. NaN when no
 * tick was counted. */
static uint64_t advance(uint64_t a, uint64_t b)
{
    return b > a ? b - a : 0;
}

static double percent(d5_sysmon_cpu_ticks a, d5_sysmon_cpu_ticks b)
{
    uint64_t busy = advance(a.busy, b.busy), idle = advance(a.idle, b.idle);
    uint64_t iowait = advance(a.total - a.busy - a.idle, b.total - b.busy - b.idle);
    if (busy + idle + iowait == 0) return NAN;
    return 100.0 * (double)busy / (double)(busy + idle + iowait);
}

static double rate(uint64_t a, uint64_t b, double dt)
{
    return b >= a && dt > 0 ? (double)(b - a) / dt : NAN;
}

void d5_sysmon_rates(const d5_sysmon_counters *a, const d5_sysmon_counters *b,
                     d5_sysmon_sample *out, double *core_percent)
{
    double dt = b->mono_ns > a->mono_ns ? (double)(b->mono_ns - a->mono_ns) * 1e-9 : 0;
    uint32_t both = a->have & b->have;
    out->interval_s = dt;
    out->mono_ns = b->mono_ns;
    int stat = (both & D5_SYSMON_HAVE_STAT) != 0;
    out->cpu_percent = stat ? percent(a->cpu, b->cpu) : NAN;
    for (int32_t i = 0; core_percent && i < b->ncpu; i++)
        core_percent[i] =
            stat && i < a->ncpu && a->core[i].total ? percent(a->core[i], b->core[i]) : NAN;
    out->context_switches_per_s = stat ? rate(a->context_switches, b->context_switches, dt) : NAN;
    out->run_queue = b->have & D5_SYSMON_HAVE_STAT ? (double)b->procs_running : NAN;
    out->rss_bytes = b->have & D5_SYSMON_HAVE_RSS ? (double)b->rss_bytes : NAN;
    if (b->have & D5_SYSMON_HAVE_MEMINFO) {
        uint64_t cache = b->mem_buffers + b->mem_cached + b->mem_sreclaimable;
        uint64_t used = b->mem_total - b->mem_free;
        if (b->mem_total >= b->mem_free && used >= cache) used -= cache;
        out->memory_used_bytes = b->mem_total >= b->mem_free ? (double)used : NAN;
        out->memory_available_bytes = (double)b->mem_available;
        out->memory_total_bytes = (double)b->mem_total;
    } else {
        out->memory_used_bytes = out->memory_available_bytes = out->memory_total_bytes = NAN;
    }
    int disk = (both & D5_SYSMON_HAVE_DISKSTATS) != 0;
    out->disk_read_bytes_per_s = disk ? rate(a->disk_read_bytes, b->disk_read_bytes, dt) : NAN;
    out->disk_write_bytes_per_s = disk ? rate(a->disk_write_bytes, b->disk_write_bytes, dt) : NAN;
    int net = (both & D5_SYSMON_HAVE_NET) != 0;
    out->net_rx_bytes_per_s = net ? rate(a->net_rx_bytes, b->net_rx_bytes, dt) : NAN;
    out->net_tx_bytes_per_s = net ? rate(a->net_tx_bytes, b->net_tx_bytes, dt) : NAN;
    int fs = (b->have & D5_SYSMON_HAVE_FS) != 0;
    out->fs_used_bytes = fs ? (double)b->fs_used_bytes : NAN;
    out->fs_available_bytes = fs ? (double)b->fs_available_bytes : NAN;
}
