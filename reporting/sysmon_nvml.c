/* GPUs through NVML, loaded with dlopen so that d5 neither links nor needs
 * the driver: utilisation, memory and power at every sample, and the total
 * energy counter (Volta and later) at the start and the end. The few NVML
 * declarations used are written here after NVML's documented C API. */
#define _GNU_SOURCE
#include "sysmon_internal.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef int nvml_return; /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device;
typedef struct nvml_utilization {
    unsigned int gpu, memory; /* percent of the last sample period */
} nvml_utilization;
typedef struct nvml_memory {
    unsigned long long total, free, used; /* bytes */
} nvml_memory;

struct d5__nvml {
    void *lib;
    nvml_return (*init)(void);
    nvml_return (*shutdown)(void);
    const char *(*error_string)(nvml_return);
    nvml_return (*count)(unsigned int *);
    nvml_return (*handle)(unsigned int, nvml_device *);
    nvml_return (*name)(nvml_device, char *, unsigned int);
    nvml_return (*util)(nvml_device, nvml_utilization *);
    nvml_return (*memory)(nvml_device, nvml_memory *);
    nvml_return (*power)(nvml_device, unsigned int *);        /* mW */
    nvml_return (*limit)(nvml_device, unsigned int *);        /* mW */
    nvml_return (*energy)(nvml_device, unsigned long long *); /* mJ */
    int32_t n;
    nvml_device dev[D5_SYSMON_MAX_GPUS];
    char names[D5_SYSMON_MAX_GPUS][96];
    unsigned long long energy0[D5_SYSMON_MAX_GPUS];
    int energy_ok;
    char energy_reason[384];
};

static const char *nvml_error(const d5__nvml *g, nvml_return rc)
{
    const char *s = g->error_string ? g->error_string(rc) : NULL;
    return s ? s : "unknown NVML error";
}

/* Looks a symbol up into *fn; 0 (and the reason) when it is missing. */
static int bind(d5__nvml *g, const char *symbol, void *fn, size_t fn_size, const char *library,
                char *reason, size_t size)
{
    void *sym = dlsym(g->lib, symbol);
    if (!sym) {
        d5__say(reason, size, "%s has no %s (a driver too old for d5's NVML calls)", library,
                symbol);
        return 0;
    }
    memcpy(fn, &sym, fn_size);
    return 1;
}

void d5__nvml_open(const char *library, d5__nvml **out, char *reason, size_t size)
{
    *out = NULL;
    if (!library || !*library) {
        d5__say(reason, size, "not sampled (no NVML library given)");
        return;
    }
    d5__nvml *g = d5_calloc(1, sizeof *g, "NVML state");
    if (!g) {
        d5__say(reason, size, "out of memory loading NVML");
        return;
    }
    g->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) {
        const char *e = dlerror();
        d5__say(reason, size, "%s cannot be loaded (no NVIDIA driver here): %s", library,
                e ? e : "dlopen failed");
        d5_free(g);
        return;
    }
#define BIND(field, symbol) bind(g, symbol, &g->field, sizeof g->field, library, reason, size)
    int ok = BIND(init, "nvmlInit_v2") && BIND(shutdown, "nvmlShutdown") &&
             BIND(error_string, "nvmlErrorString") && BIND(count, "nvmlDeviceGetCount_v2") &&
             BIND(handle, "nvmlDeviceGetHandleByIndex_v2") && BIND(name, "nvmlDeviceGetName") &&
             BIND(util, "nvmlDeviceGetUtilizationRates") &&
             BIND(memory, "nvmlDeviceGetMemoryInfo") && BIND(power, "nvmlDeviceGetPowerUsage") &&
             BIND(limit, "nvmlDeviceGetEnforcedPowerLimit") &&
             BIND(energy, "nvmlDeviceGetTotalEnergyConsumption");
#undef BIND
    nvml_return rc = 0;
    if (ok && (rc = g->init()) != 0) {
        d5__say(reason, size, "nvmlInit_v2 failed: %s", nvml_error(g, rc));
        ok = 0;
        g->shutdown = NULL; /* nothing to shut down */
    }
    unsigned int count = 0;
    if (ok && (rc = g->count(&count)) != 0) {
        d5__say(reason, size, "nvmlDeviceGetCount_v2 failed: %s", nvml_error(g, rc));
        ok = 0;
    }
    if (ok && count == 0) {
        d5__say(reason, size, "NVML sees no GPU");
        ok = 0;
    }
    for (unsigned int i = 0; ok && i < count && i < D5_SYSMON_MAX_GPUS; i++) {
        if ((rc = g->handle(i, &g->dev[i])) != 0) {
            d5__say(reason, size, "nvmlDeviceGetHandleByIndex_v2(%u) failed: %s", i,
                    nvml_error(g, rc));
            ok = 0;
            break;
        }
        if (g->name(g->dev[i], g->names[i], sizeof g->names[i]) != 0)
            snprintf(g->names[i], sizeof g->names[i], "GPU %u", i);
        g->n = (int32_t)i + 1;
    }
    if (!ok) {
        d5__nvml_close(g);
        return;
    }
    *out = g;
}

void d5__nvml_close(d5__nvml *g)
{
    if (!g) return;
    if (g->shutdown) g->shutdown();
    if (g->lib) dlclose(g->lib);
    d5_free(g);
}

int32_t d5__nvml_count(const d5__nvml *g)
{
    return g ? g->n : 0;
}

const char *d5__nvml_name(const d5__nvml *g, int32_t i)
{
    return g && i >= 0 && i < g->n ? g->names[i] : "";
}

void d5__nvml_sample(d5__nvml *g, d5_sysmon_gpu_sample *out)
{
    for (int32_t i = 0; i < g->n; i++) {
        nvml_utilization u;
        nvml_memory m;
        unsigned int mw;
        d5_sysmon_gpu_sample *o = &out[i];
        o->util_percent = g->util(g->dev[i], &u) == 0 ? (double)u.gpu : NAN;
        if (g->memory(g->dev[i], &m) == 0) {
            o->memory_used_bytes = (double)m.used;
            o->memory_total_bytes = (double)m.total;
        } else {
            o->memory_used_bytes = o->memory_total_bytes = NAN;
        }
        o->power_w = g->power(g->dev[i], &mw) == 0 ? mw * 1e-3 : NAN;
        o->power_limit_w = g->limit(g->dev[i], &mw) == 0 ? mw * 1e-3 : NAN;
    }
}

void d5__nvml_energy_begin(d5__nvml *g)
{
    g->energy_ok = 1;
    for (int32_t i = 0; i < g->n; i++) {
        nvml_return rc = g->energy(g->dev[i], &g->energy0[i]);
        if (rc != 0) {
            d5__say(g->energy_reason, sizeof g->energy_reason,
                    "nvmlDeviceGetTotalEnergyConsumption on GPU %d (%s): %s%s", (int)i, g->names[i],
                    nvml_error(g, rc),
                    rc == 3 ? " (the counter exists from the Volta generation on)" : "");
            g->energy_ok = 0;
            return;
        }
    }
}

void d5__nvml_energy_end(d5__nvml *g, d5_sysmon_energy_part *out)
{
    memset(out, 0, sizeof *out);
    if (!g->energy_ok) {
        d5__say(out->reason, sizeof out->reason, "%s", g->energy_reason);
        return;
    }
    double mj = 0;
    for (int32_t i = 0; i < g->n; i++) {
        unsigned long long e;
        nvml_return rc = g->energy(g->dev[i], &e);
        if (rc != 0 || e < g->energy0[i]) {
            d5__say(out->reason, sizeof out->reason,
                    "nvmlDeviceGetTotalEnergyConsumption on GPU %d (%s) at the end: %s", (int)i,
                    g->names[i], rc ? nvml_error(g, rc) : "the counter went backwards");
            return;
        }
        mj += (double)(e - g->energy0[i]);
    }
    out->available = 1;
    out->joules = mj * 1e-3;
    out->devices = g->n;
}
