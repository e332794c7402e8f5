/* The machine's description: CPU, caches, memory, OpenBLAS and CUDA devices. */
#define _GNU_SOURCE
#include "d5/machine.h"
#include "internal.h"
#include "peak_kernels.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

void d5__cuda_query(d5_machine_info *m); /* machine_cuda.c or machine_cuda_none.c */

/* Copies the value of a "key : value" line of /proc/cpuinfo. */
static int cpuinfo_value(const char *line, const char *key, char *out, size_t size)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0) return 0;
    const char *c = strchr(line + n, ':');
    if (!c) return 0;
    c++;
    while (*c == ' ' || *c == '\t') c++;
    snprintf(out, size, "%s", c);
    out[strcspn(out, "\n")] = '\0';
    return 1;
}

static void read_cpuinfo(d5_machine_info *m)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[8192], val[64];
    /* Physical cores: distinct (physical id, core id) pairs. */
    int pairs[1024][2], npairs = 0, phys = -1;
    while (fgets(line, sizeof line, f)) {
        if (!m->cpu_model[0]) cpuinfo_value(line, "model name", m->cpu_model, sizeof m->cpu_model);
        if (!m->cpu_vendor[0])
            cpuinfo_value(line, "vendor_id", m->cpu_vendor, sizeof m->cpu_vendor);
        if (cpuinfo_value(line, "physical id", val, sizeof val)) phys = atoi(val);
        if (cpuinfo_value(line, "core id", val, sizeof val)) {
            int core = atoi(val), seen = 0;
            for (int i = 0; i < npairs; i++) seen |= pairs[i][0] == phys && pairs[i][1] == core;
            if (!seen && npairs < 1024) {
                pairs[npairs][0] = phys;
                pairs[npairs][1] = core;
                npairs++;
            }
        }
        if (!m->isa[0] && strncmp(line, "flags", 5) == 0) {
            static const char *const isa[] = {"avx512f", "avx2", "fma", "avx", "sse4_2"};
            for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++) {
                char pat[32];
                snprintf(pat, sizeof pat, " %s", isa[i]);
                const char *hit = strstr(line, pat);
                if (hit && (hit[strlen(pat)] == ' ' || hit[strlen(pat)] == '\n')) {
                    size_t used = strlen(m->isa);
                    snprintf(m->isa + used, sizeof m->isa - used, "%s%s", used ? " " : "", isa[i]);
                }
            }
        }
    }
    fclose(f);
    m->physical_cores = npairs ? npairs : m->logical_cpus;
}

static int read_sys(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(out, (int)size, f) != NULL;
    fclose(f);
    if (ok) out[strcspn(out, "\n")] = '\0';
    return ok;
}

/* Caches of cpu0 from sysfs; "shared_cpu_list" like "0-3,8" gives the sharing count. */
static void read_caches(d5_machine_info *m)
{
    for (int i = 0; i < 16 && m->ncaches < D5_MACHINE_MAX_CACHES; i++) {
        char path[128], buf[256];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (!read_sys(path, buf, sizeof buf)) break;
        d5_cache_info *c = &m->caches[m->ncaches];
        memset(c, 0, sizeof *c);
        c->level = atoi(buf);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (read_sys(path, buf, sizeof buf)) snprintf(c->type, sizeof c->type, "%.15s", buf);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (read_sys(path, buf, sizeof buf)) {
            char *end;
            unsigned long long v = strtoull(buf, &end, 10);
            if (*end == 'K')
                v <<= 10;
            else if (*end == 'M')
                v <<= 20;
            else if (*end == 'G')
                v <<= 30;
            c->size_bytes = v;
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list",
                 i);
        c->shared_by = 1;
        if (read_sys(path, buf, sizeof buf)) {
            int count = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int a, b;
                if (sscanf(tok, "%d-%d", &a, &b) == 2)
                    count += b - a + 1;
                else
                    count += 1;
            }
            if (count > 0) c->shared_by = count;
        }
        m->ncaches++;
    }
}

static void read_meminfo(d5_machine_info *m)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return;
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) m->memory_bytes = kb * 1024;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) m->memory_available_bytes = kb * 1024;
    }
    fclose(f);
}

d5_status d5_machine_query(d5_machine_info *out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_machine_query: NULL argument");
    d5_machine_info *m = out;
    memset(m, 0, sizeof *m);
    gethostname(m->hostname, sizeof m->hostname - 1);
    struct utsname u;
    if (uname(&u) == 0) snprintf(m->kernel, sizeof m->kernel, "%.60s %.60s", u.sysname, u.release);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->logical_cpus = n > 0 ? (int)n : 1;
    read_cpuinfo(m);
    d5__cpu_lowp_names(d5__cpu_lowp(), m->isa_lowp, sizeof m->isa_lowp);
    if (!m->cpu_model[0]) snprintf(m->cpu_model, sizeof m->cpu_model, "unknown");
    read_caches(m);
    read_meminfo(m);
    const d5__tsc_info *tsc = d5__tsc();
    m->invariant_tsc = tsc->usable;
    m->tsc_ghz = tsc->usable ? tsc->ghz : 0;
    d5_blas_info blas;
    d5_blas_info_get(&blas);
    snprintf(m->openblas_config, sizeof m->openblas_config, "%s", blas.config);
    snprintf(m->openblas_core, sizeof m->openblas_core, "%s", blas.core);
    m->openblas_threads = blas.threads;
    d5__cuda_query(m);
    return D5_OK;
}
