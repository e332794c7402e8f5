/* Whether the cuda backend can run here: a CUDA device must answer (the
 * plugin's probe; cuda_plugin.c loads the plugin first). */
#include "d5/operator.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

int d5__cuda_probe(char *why, size_t why_size);

int d5__cuda_probe(char *why, size_t why_size)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, why_size, "no CUDA device: cudaGetDeviceCount failed: %s (error %d)",
                 cudaGetErrorString(e), (int)e);
        return 0;
    }
    if (n == 0) {
        snprintf(why, why_size, "no CUDA device: none found");
        return 0;
    }
    return 1;
}
