/* The CUDA-event clock: events come from a pool, are recorded on a stream
 * without synchronising, and are read only when results are asked for. */
#include "cuda_clock.h"

#include <cuda_runtime_api.h>
#include <string.h>

struct d5__cuda_clock {
    cudaStream_t stream;
    cudaEvent_t ref;
    cudaEvent_t *events;
    uint32_t *free_list; /* indices of events ready for reuse */
    uint32_t count, cap, nfree;
};

static d5_status cuda_fail(cudaError_t e, const char *what)
{
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
        return d5_error(D5_ERR_NODEVICE, "no CUDA device: %s failed: %s (error %d)", what,
                        cudaGetErrorString(e), (int)e);
    return d5_error(D5_ERR_BACKEND, "%s failed: %s (error %d)", what, cudaGetErrorString(e),
                    (int)e);
}

d5_status d5__cuda_clock_create(void *stream, d5__cuda_clock **out)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        d5_status s = cuda_fail(e, "cudaGetDeviceCount");
        if (s == D5_ERR_BACKEND)
            s = d5_error(D5_ERR_NODEVICE,
                         "no CUDA device: cudaGetDeviceCount failed: %s (error %d)",
                         cudaGetErrorString(e), (int)e);
        return s;
    }
    if (n == 0) return d5_error(D5_ERR_NODEVICE, "no CUDA device: cudaGetDeviceCount found none");
    d5__cuda_clock *c = d5_calloc(1, sizeof *c, "CUDA clock");
    if (!c) return D5_ERR_NOMEM;
    c->stream = (cudaStream_t)stream;
    e = cudaEventCreate(&c->ref);
    if (e != cudaSuccess) {
        d5_free(c);
        return cuda_fail(e, "cudaEventCreate");
    }
    e = cudaEventRecord(c->ref, c->stream);
    if (e != cudaSuccess) {
        cudaEventDestroy(c->ref);
        d5_free(c);
        return cuda_fail(e, "cudaEventRecord");
    }
    *out = c;
    return D5_OK;
}

void d5__cuda_clock_free(d5__cuda_clock *c)
{
    if (!c) return;
    for (uint32_t i = 0; i < c->count; i++) cudaEventDestroy(c->events[i]);
    cudaEventDestroy(c->ref);
    d5_free(c->events);
    d5_free(c->free_list);
    d5_free(c);
}

static d5_status grow(d5__cuda_clock *c)
{
    uint32_t cap = c->cap ? c->cap * 2 : 256;
    cudaEvent_t *ev = d5_realloc(c->events, c->cap * sizeof *ev, cap * sizeof *ev, "CUDA events");
    if (!ev) return D5_ERR_NOMEM;
    c->events = ev;
    uint32_t *fl =
        d5_realloc(c->free_list, c->cap * sizeof *fl, cap * sizeof *fl, "CUDA event free list");
    if (!fl) return D5_ERR_NOMEM;
    c->free_list = fl;
    c->cap = cap;
    return D5_OK;
}

d5_status d5__cuda_clock_record(d5__cuda_clock *c, uint32_t *event)
{
    uint32_t i;
    if (c->nfree > 0) {
        i = c->free_list[--c->nfree];
    } else {
        if (c->count == c->cap) {
            d5_status s = grow(c);
            if (s != D5_OK) return s;
        }
        cudaError_t e = cudaEventCreate(&c->events[c->count]);
        if (e != cudaSuccess) return cuda_fail(e, "cudaEventCreate");
        i = c->count++;
    }
    cudaError_t e = cudaEventRecord(c->events[i], c->stream);
    if (e != cudaSuccess) {
        c->free_list[c->nfree++] = i;
        return cuda_fail(e, "cudaEventRecord");
    }
    *event = i;
    return D5_OK;
}

static cudaEvent_t event_of(d5__cuda_clock *c, uint32_t i)
{
    return i == D5__CUDA_REF ? c->ref : c->events[i];
}

d5_status d5__cuda_clock_elapsed_ns(d5__cuda_clock *c, uint32_t from, uint32_t to, double *ns)
{
    cudaError_t e = cudaEventSynchronize(event_of(c, to));
    if (e != cudaSuccess) return cuda_fail(e, "cudaEventSynchronize");
    float ms = 0;
    e = cudaEventElapsedTime(&ms, event_of(c, from), event_of(c, to));
    if (e != cudaSuccess) return cuda_fail(e, "cudaEventElapsedTime");
    *ns = (double)ms * 1e6;
    return D5_OK;
}

void d5__cuda_clock_release(d5__cuda_clock *c, uint32_t event)
{
    if (event != D5__CUDA_REF && c->nfree < c->cap) c->free_list[c->nfree++] = event;
}
