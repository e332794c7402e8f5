/* The cuda plugin's entry: see ../cuda_plugin.h and core/plugin.h. */
#include "../../core/plugin.h"
#include "../cuda_plugin.h"
#include "cuda_util.h"

int d5__cuda_probe(char *why, size_t why_size);                               /* available.c */
d5_status d5__cuda_peaks(int32_t size, double max_time_s, d5_gpu_peaks *out); /* peaks.c */
extern const d5_device_memory d5__cuda_memory;                                /* device.c */

#define D5_PLUGIN_OP(NAME, BACKEND) extern const d5_op_desc d5__op_##BACKEND##_##NAME;
#include "ops_cuda.def"
#undef D5_PLUGIN_OP

static const d5_op_desc *const ops[] = {
#define D5_PLUGIN_OP(NAME, BACKEND) &d5__op_##BACKEND##_##NAME,
#include "ops_cuda.def"
#undef D5_PLUGIN_OP
};

D5_API const void *d5_plugin_cuda(uint32_t abi);

const void *d5_plugin_cuda(uint32_t abi)
{
    static const d5__cuda_plugin table = {
        .ops = ops,
        .nops = sizeof ops / sizeof ops[0],
        .probe = d5__cuda_probe,
        .tensor_alloc = d5__cuda_dev_alloc,
        .tensor_upload = d5__cuda_dev_upload,
        .tensor_download = d5__cuda_dev_download,
        .tensor_free = d5__cuda_dev_free,
        .sync = d5__cuda_dev_sync,
        .memory = &d5__cuda_memory,
        .peaks = d5__cuda_peaks,
    };
    return abi == D5__PLUGIN_ABI ? &table : NULL;
}
