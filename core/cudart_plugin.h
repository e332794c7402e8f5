/* The table of the cudart plugin (libd5_cudart.so, built from cuda_clock.c,
 * machine_cuda.c and cudart_plugin.c with the CUDA runtime): the CUDA-event
 * clock of the region timer and the query of CUDA devices. d5's core loads it
 * on demand (cuda_load.c) and never sees a CUDA type. */
#ifndef D5_CORE_CUDART_PLUGIN_H
#define D5_CORE_CUDART_PLUGIN_H

#include "cuda_clock.h"
#include "d5/machine.h"

#define D5__CUDART_PLUGIN "cudart"

typedef struct d5__cudart_plugin {
    /* Fills the CUDA fields of `m`: devices, or why there are none. */
    void (*query)(d5_machine_info *m);
    /* The functions of cuda_clock.h. */
    d5_status (*clock_create)(void *stream, d5__cuda_clock **out);
    void (*clock_free)(d5__cuda_clock *c);
    d5_status (*clock_record)(d5__cuda_clock *c, uint32_t *event);
    d5_status (*clock_elapsed_ns)(d5__cuda_clock *c, uint32_t from, uint32_t to, double *ns);
    void (*clock_release)(d5__cuda_clock *c, uint32_t event);
} d5__cudart_plugin;

#endif
