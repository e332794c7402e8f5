/* CPU package energy from the powercap RAPL interface: the package zones
 * <sys>/class/powercap/intel-rapl:N (Intel, and AMD's Zen under the same
 * names), read at every sample so that a counter wrapping around at
 * max_energy_range_uj is corrected. Sub-zones (core, uncore, dram) and the
 * platform zone (psys) are left out: they are parts of a package or hold it. */
#define _GNU_SOURCE
#include "sysmon_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads a file of one line into buf (newline removed); 0 and errno on failure. */
static int read_line(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n;
    do n = read(fd, buf, size - 1);
    while (n < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        return 0;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 1;
}

/* Reads an unsigned count from <dir>/<file>; on failure fills the reason. */
static int read_count(const char *dir, const char *file, uint64_t *v, char *reason, size_t size)
{
    char path[600], buf[64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (!read_line(path, buf, sizeof buf)) {
        int e = errno;
        d5__say(reason, size, "cannot read %s: %s%s", path, strerror(e),
                e == EACCES ? " (the kernel lets only root read RAPL energy counters since the "
                              "CVE-2020-8694 fix)"
                            : "");
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (errno || end == buf || *end || !isdigit((unsigned char)buf[0])) {
        d5__say(reason, size, "%s holds '%.20s', not a count of microjoules", path, buf);
        return 0;
    }
    *v = (uint64_t)x;
    return 1;
}

/* The N of a top-level zone name "intel-rapl:N"; -1 for anything else. */
static long zone_number(const char *name)
{
    const char *prefix = "intel-rapl:";
    size_t k = strlen(prefix);
    if (strncmp(name, prefix, k) != 0 || !isdigit((unsigned char)name[k])) return -1;
    char *end;
    long n = strtol(name + k, &end, 10);
    return *end ? -1 : n;
}

static int by_dir(const void *a, const void *b)
{
    const d5__rapl_zone *x = a, *y = b;
    long p = zone_number(strrchr(x->dir, '/') + 1), q = zone_number(strrchr(y->dir, '/') + 1);
    return (p > q) - (p < q);
}

void d5__rapl_find(d5__rapl *r, const char *sys_root)
{
    memset(r, 0, sizeof *r);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/class/powercap", sys_root);
    struct stat st;
    if (stat(dir, &st) != 0) {
        int e = errno;
        if (e == ENOENT)
            d5__say(r->reason, sizeof r->reason,
                    "%s does not exist (no RAPL interface exposed to this machine)", dir);
        else
            d5__say(r->reason, sizeof r->reason, "cannot read %s: %s", dir, strerror(e));
        return;
    }
    DIR *d = opendir(dir);
    if (!d) {
        d5__say(r->reason, sizeof r->reason, "cannot list %s: %s", dir, strerror(errno));
        return;
    }
    int top = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && r->nzones < D5__RAPL_MAX_ZONES) {
        if (zone_number(e->d_name) < 0) continue;
        top++;
        d5__rapl_zone *z = &r->zone[r->nzones];
        char path[600];
        d5__say(z->dir, sizeof z->dir, "%s/%s", dir, e->d_name);
        snprintf(path, sizeof path, "%s/name", z->dir);
        if (!read_line(path, z->name, sizeof z->name) || strncmp(z->name, "package", 7) != 0)
            continue;
        if (!read_count(z->dir, "max_energy_range_uj", &z->range, r->reason, sizeof r->reason)) {
            closedir(d);
            r->nzones = 0;
            return;
        }
        r->nzones++;
    }
    closedir(d);
    if (r->nzones == 0) {
        if (top == 0)
            d5__say(r->reason, sizeof r->reason,
                    "%s holds no intel-rapl:N zone (no RAPL driver loaded: intel_rapl_msr)", dir);
        else
            d5__say(r->reason, sizeof r->reason,
                    "%s: none of its %d intel-rapl:N zones is a CPU package", dir, top);
        return;
    }
    qsort(r->zone, (size_t)r->nzones, sizeof r->zone[0], by_dir);
    r->available = 1;
}

void d5__rapl_begin(d5__rapl *r)
{
    for (int32_t i = 0; r->available && i < r->nzones; i++) {
        r->zone[i].joules = 0;
        if (!read_count(r->zone[i].dir, "energy_uj", &r->zone[i].last, r->reason, sizeof r->reason))
            r->available = 0;
    }
}

void d5__rapl_update(d5__rapl *r)
{
    for (int32_t i = 0; r->available && i < r->nzones; i++) {
        d5__rapl_zone *z = &r->zone[i];
        uint64_t v;
        if (!read_count(z->dir, "energy_uj", &v, r->reason, sizeof r->reason)) {
            r->available = 0;
            return;
        }
        /* One wrap at most between two reads: two would take a package using
         * more than max_energy_range_uj (typically 262 kJ) in one period. */
        uint64_t delta = v >= z->last ? v - z->last : v + (z->range - z->last);
        z->joules += (double)delta * 1e-6;
        z->last = v;
    }
}
