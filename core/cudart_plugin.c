/* The cudart plugin's entry: see cudart_plugin.h and plugin.h. */
#include "cudart_plugin.h"
#include "plugin.h"

void d5__cuda_query(d5_machine_info *m); /* machine_cuda.c */

D5_API const void *d5_plugin_cudart(uint32_t abi);

const void *d5_plugin_cudart(uint32_t abi)
{
    static const d5__cudart_plugin table = {
        .query = d5__cuda_query,
        .clock_create = d5__cuda_clock_create,
        .clock_free = d5__cuda_clock_free,
        .clock_record = d5__cuda_clock_record,
        .clock_elapsed_ns = d5__cuda_clock_elapsed_ns,
        .clock_release = d5__cuda_clock_release,
    };
    return abi == D5__PLUGIN_ABI ? &table : NULL;
}
