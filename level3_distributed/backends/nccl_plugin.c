/* The nccl plugin's entry (libd5_nccl.so, core/plugin.h): the table of the
 * nccl backend (nccl.c), built with the CUDA runtime and NCCL. */
#include "../../core/plugin.h"
#include "../comm_internal.h"

extern const d5__comm_ops d5__nccl_plugin_ops; /* nccl.c */

D5_API const void *d5_plugin_nccl(uint32_t abi);

const void *d5_plugin_nccl(uint32_t abi)
{
    return abi == D5__PLUGIN_ABI ? &d5__nccl_plugin_ops : NULL;
}
