/* The table of the cuda plugin (libd5_cuda.so, built from cuda/ with the CUDA
 * runtime, cuBLAS and cuDNN). d5's operator library loads it the first time
 * the cuda backend is asked for (cuda_plugin.c): its probe, one of its
 * operator tables, or device memory (device.h). Nothing here is a CUDA type. */
#ifndef D5_LEVEL0_CUDA_PLUGIN_H
#define D5_LEVEL0_CUDA_PLUGIN_H

#include "d5/precision.h"

#define D5__CUDA_PLUGIN "cuda"

typedef struct d5__cuda_plugin {
    /* The operator tables of cuda/ops_cuda.def, in its order. */
    const d5_op_desc *const *ops;
    size_t nops;
    /* 1 when a CUDA device answers, else 0 with the reason in `why`. */
    int (*probe)(char *why, size_t why_size);
    /* The functions of device.h. */
    d5_status (*tensor_alloc)(const d5_tensor_desc *d, d5_tensor *dev);
    d5_status (*tensor_upload)(const d5_tensor *host, d5_tensor *dev);
    d5_status (*tensor_download)(const d5_tensor *dev, d5_tensor *host);
    void (*tensor_free)(d5_tensor *dev);
    d5_status (*sync)(void);
    /* The backend's device memory, for the executor (d5_backend_memory). */
    const d5_device_memory *memory;
    /* d5_gpu_peaks_measure (d5/precision.h), its size already checked. */
    d5_status (*peaks)(int32_t size, double max_time_s, d5_gpu_peaks *out);
} d5__cuda_plugin;

/* The table of the cuda operator `name` (a D5_PLUGIN_OP row of ops.def):
 * the plugin's when it loads, else one whose create says why it cannot
 * (registry.c calls it). */
const d5_op_desc *d5__cuda_plugin_op(const char *name);

#endif
