/* CUDA-event clock used by the region timer. Only core/cuda_clock.c sees CUDA
 * types; without the toolkit, core/cuda_clock_none.c reports it unsupported. */
#ifndef D5_CORE_CUDA_CLOCK_H
#define D5_CORE_CUDA_CLOCK_H

#include "d5/core.h"

#include <stdint.h>

typedef struct d5__cuda_clock d5__cuda_clock;

/* The clock's reference event, recorded at creation. */
#define D5__CUDA_REF UINT32_MAX

/* Creates the clock on `stream` (a cudaStream_t, NULL for the default stream)
 * and records its reference event. D5_ERR_NODEVICE with the CUDA runtime's
 * reason when no device is usable; D5_ERR_UNSUPPORTED without the toolkit. */
d5_status d5__cuda_clock_create(void *stream, d5__cuda_clock **out);
void d5__cuda_clock_free(d5__cuda_clock *c);
/* Records an event on the stream, from a pool; no synchronisation. */
d5_status d5__cuda_clock_record(d5__cuda_clock *c, uint32_t *event);
/* Waits for `to` and returns the time from `from` to `to` in ns. */
d5_status d5__cuda_clock_elapsed_ns(d5__cuda_clock *c, uint32_t from, uint32_t to, double *ns);
/* Returns an event to the pool once its time has been read. */
void d5__cuda_clock_release(d5__cuda_clock *c, uint32_t event);

#endif
