/* CUDA devices, through the CUDA runtime. */
#include "d5/machine.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

void d5__cuda_query(d5_machine_info *m);

void d5__cuda_query(d5_machine_info *m)
{
    m->cuda_built = 1;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(m->cuda_status, sizeof m->cuda_status,
                 "no CUDA device: cudaGetDeviceCount failed: %s (error %d)", cudaGetErrorString(e),
                 (int)e);
        return;
    }
    if (n == 0) {
        snprintf(m->cuda_status, sizeof m->cuda_status, "no CUDA device: none found");
        return;
    }
    if (n > D5_MACHINE_MAX_CUDA) n = D5_MACHINE_MAX_CUDA;
    for (int i = 0; i < n; i++) {
        d5_cuda_device_info *d = &m->cuda[i];
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        snprintf(d->name, sizeof d->name, "%.127s", p.name);
        d->major = p.major;
        d->minor = p.minor;
        d->memory_bytes = p.totalGlobalMem;
        d->multiprocessors = p.multiProcessorCount;
        int khz = 0;
        if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, i) == cudaSuccess)
            d->clock_mhz = khz / 1000.0;
        m->cuda_device_count++;
    }
    snprintf(m->cuda_status, sizeof m->cuda_status, "%d CUDA device%s", m->cuda_device_count,
             m->cuda_device_count == 1 ? "" : "s");
}
