/* Device memory without the cuda backend: see device.h. */
#include "device.h"
#include "d5/precision.h"

#include <string.h>

static d5_status none(void)
{
    return d5_error(D5_ERR_UNSUPPORTED,
                    "device memory: d5 was built without the cuda backend (it needs the CUDA "
                    "toolkit and cuDNN)");
}

d5_status d5__cuda_tensor_alloc(const d5_tensor_desc *d, d5_tensor *dev)
{
    (void)d;
    (void)dev;
    return none();
}

d5_status d5__cuda_tensor_upload(const d5_tensor *host, d5_tensor *dev)
{
    (void)host;
    (void)dev;
    return none();
}

d5_status d5__cuda_tensor_download(const d5_tensor *dev, d5_tensor *host)
{
    (void)dev;
    (void)host;
    return none();
}

void d5__cuda_tensor_free(d5_tensor *dev)
{
    (void)dev;
}

d5_status d5__cuda_sync(void)
{
    return none();
}

d5_status d5__device_memory_of(const char *backend, const d5_device_memory **out)
{
    *out = NULL;
    return d5_error(D5_ERR_UNSUPPORTED, "backend '%s' has no device memory in this build", backend);
}

d5_status d5_gpu_peaks_measure(int32_t size, double max_time_s, d5_gpu_peaks *out)
{
    (void)size, (void)max_time_s;
    if (out) memset(out, 0, sizeof *out);
    return d5_error(D5_ERR_UNSUPPORTED,
                    "GPU peaks: d5 was built without the cuda backend (it needs the CUDA toolkit "
                    "and cuDNN)");
}
