/* The cores this process may use: the affinity mask, the cgroup CPU quota and
 * the ranks of a parallel job that share the node. */
#define _GNU_SOURCE
#include "d5/threads.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Reads the first line of a small file into buf; 0 when it cannot. */
static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    return ok;
}

/* cgroup v2: "max 100000" or "QUOTA PERIOD" in cpu.max, for this process's
 * group and each of its parents; the smallest quota wins. */
static double quota_v2(void)
{
    char line[512], group[512];
    /* The v2 entry is "0::/path"; a v1-only system has none. */
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    group[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(group, sizeof group, "%s", line + 3);
            group[strcspn(group, "\n")] = '\0';
            break;
        }
    }
    fclose(f);
    if (!group[0]) return 0;
    double best = 0;
    for (;;) {
        char path[600], v[64];
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max", strcmp(group, "/") ? group : "");
        long long quota, period;
        if (read_line(path, v, sizeof v) && sscanf(v, "%lld %lld", &quota, &period) == 2 &&
            quota > 0 && period > 0) {
            double q = (double)quota / (double)period;
            if (best == 0 || q < best) best = q;
        }
        char *slash = strrchr(group, '/');
        if (!slash || slash == group) break;
        *slash = '\0';
    }
    return best;
}

/* cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us at the usual mount points. */
static double quota_v1(void)
{
    static const char *const dirs[] = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[128], v[64];
        long long quota = -1, period = 0;
        snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dirs[i]);
        if (read_line(path, v, sizeof v)) quota = atoll(v);
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dirs[i]);
        if (read_line(path, v, sizeof v)) period = atoll(v);
        if (quota > 0 && period > 0) return (double)quota / (double)period;
    }
    return 0;
}

/* Processes of this job on this node, from the launcher's environment. */
static int32_t local_ranks(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "PMIX_LOCAL_SIZE", "PMI_LOCAL_SIZE",
                                       "SLURM_STEP_TASKS_PER_NODE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (!v || !*v) continue;
        /* Slurm writes "2(x4)" or "2,1": the first count is this node's
         * when the tasks are spread evenly, which is the common case. */
        char *end;
        long n = strtol(v, &end, 10);
        if (end != v && n > 0 && n < 1 << 20) return (int32_t)n;
    }
    return 1;
}

d5_status d5_cores_query(d5_cores *out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_cores_query: NULL argument");
    memset(out, 0, sizeof *out);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    out->online = online > 0 ? (int32_t)online : 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    out->affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : out->online;
    if (out->affinity < 1) out->affinity = out->online;
    out->quota = quota_v2();
    if (out->quota == 0) out->quota = quota_v1();
    out->local_ranks = local_ranks();

    int32_t n = out->online;
    snprintf(out->limited_by, sizeof out->limited_by, "online CPUs");
    if (out->affinity < n) {
        n = out->affinity;
        snprintf(out->limited_by, sizeof out->limited_by, "affinity mask");
    }
    if (out->quota > 0 && (int32_t)ceil(out->quota - 1e-9) < n) {
        n = (int32_t)ceil(out->quota - 1e-9);
        if (n < 1) n = 1;
        snprintf(out->limited_by, sizeof out->limited_by, "cgroup quota");
    }
    /* A launcher that binds each rank gives it a mask of its own share; one
     * that does not leaves every rank the whole node, to be divided. */
    if (out->local_ranks > 1 && out->affinity == out->online) {
        int32_t share = n / out->local_ranks;
        n = share > 0 ? share : 1;
        snprintf(out->limited_by, sizeof out->limited_by, "ranks per node");
    }
    out->usable = n;
    return D5_OK;
}
