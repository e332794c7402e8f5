/* The CUDA-event clock of a build without the CUDA toolkit. */
#include "cuda_clock.h"

d5_status d5__cuda_clock_create(void *stream, d5__cuda_clock **out)
{
    (void)stream;
    (void)out;
    return d5_error(D5_ERR_UNSUPPORTED,
                    "CUDA-event timing: this d5 was built without the CUDA toolkit");
}

void d5__cuda_clock_free(d5__cuda_clock *c)
{
    (void)c;
}

d5_status d5__cuda_clock_record(d5__cuda_clock *c, uint32_t *event)
{
    (void)c;
    (void)event;
    return d5_error(D5_ERR_UNSUPPORTED, "CUDA-event timing: built without the CUDA toolkit");
}

d5_status d5__cuda_clock_elapsed_ns(d5__cuda_clock *c, uint32_t from, uint32_t to, double *ns)
{
    (void)c;
    (void)from;
    (void)to;
    (void)ns;
    return d5_error(D5_ERR_UNSUPPORTED, "CUDA-event timing: built without the CUDA toolkit");
}

void d5__cuda_clock_release(d5__cuda_clock *c, uint32_t event)
{
    (void)c;
    (void)event;
}
