/* A stand-in for libnvidia-ml.so.1 with one GPU of known readings, loaded by
 * test_reporting_sysmon through d5_sysmon_params.nvml_library. D5_FAKE_NVML=init
 * makes nvmlInit_v2 fail as without a driver; D5_FAKE_NVML=none shows no GPU.
 * The energy counter advances 5000 mJ per read after the first. */
#include <stdlib.h>
#include <string.h>

typedef struct fake_device *device;
typedef struct {
    unsigned int gpu, memory;
} utilization;
typedef struct {
    unsigned long long total, free, used;
} memory;

/* The library is built with hidden visibility by default: export these. */
#define EXPORT __attribute__((visibility("default")))

static struct fake_device {
    int unused;
} the_gpu;
static unsigned long long energy_reads;

static int mode(const char *what)
{
    const char *m = getenv("D5_FAKE_NVML");
    return m && strcmp(m, what) == 0;
}

EXPORT int nvmlInit_v2(void);
EXPORT int nvmlShutdown(void);
EXPORT const char *nvmlErrorString(int rc);
EXPORT int nvmlDeviceGetCount_v2(unsigned int *n);
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, device *d);
EXPORT int nvmlDeviceGetName(device d, char *name, unsigned int size);
EXPORT int nvmlDeviceGetUtilizationRates(device d, utilization *u);
EXPORT int nvmlDeviceGetMemoryInfo(device d, memory *m);
EXPORT int nvmlDeviceGetPowerUsage(device d, unsigned int *mw);
EXPORT int nvmlDeviceGetEnforcedPowerLimit(device d, unsigned int *mw);
EXPORT int nvmlDeviceGetTotalEnergyConsumption(device d, unsigned long long *mj);

EXPORT int nvmlInit_v2(void)
{
    return mode("init") ? 9 : 0; /* NVML_ERROR_DRIVER_NOT_LOADED */
}
EXPORT int nvmlShutdown(void)
{
    return 0;
}
EXPORT const char *nvmlErrorString(int rc)
{
    return rc == 9 ? "Driver Not Loaded" : rc == 3 ? "Not Supported" : "Unknown Error";
}
EXPORT int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = mode("none") ? 0 : 1;
    return 0;
}
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int i, device *d)
{
    if (i != 0) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *d = &the_gpu;
    return 0;
}
EXPORT int nvmlDeviceGetName(device d, char *name, unsigned int size)
{
    (void)d;
    strncpy(name, "Fake GPU", size);
    return 0;
}
EXPORT int nvmlDeviceGetUtilizationRates(device d, utilization *u)
{
    (void)d;
    u->gpu = 37;
    u->memory = 12;
    return 0;
}
EXPORT int nvmlDeviceGetMemoryInfo(device d, memory *m)
{
    (void)d;
    m->total = 8000000000ull;
    m->used = 2000000000ull;
    m->free = m->total - m->used;
    return 0;
}
EXPORT int nvmlDeviceGetPowerUsage(device d, unsigned int *mw)
{
    (void)d;
    *mw = 150000;
    return 0;
}
EXPORT int nvmlDeviceGetEnforcedPowerLimit(device d, unsigned int *mw)
{
    (void)d;
    *mw = 300000;
    return 0;
}
EXPORT int nvmlDeviceGetTotalEnergyConsumption(device d, unsigned long long *mj)
{
    (void)d;
    *mj = 1000 + 5000 * energy_reads++;
    return 0;
}
