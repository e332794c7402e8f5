/* Device memory for callers of CUDA operators: the plugin's side of
 * ../device.h (cuda_util.h). */
#include "cuda_util.h"
#include "kernels.h"

#include <string.h>

static const char *const WHAT = "device tensor";

d5_status d5__cuda_dev_alloc(const d5_tensor_desc *d, d5_tensor *dev)
{
    if (!d || !dev) return d5_error(D5_ERR_INVALID, "d5__cuda_tensor_alloc: NULL argument");
    size_t bytes;
    d5_status s = d5_tensor_desc_bytes(d, &bytes);
    if (s == D5_OK) s = d5__cuda_need_device(WHAT);
    void *p = NULL;
    if (s == D5_OK) s = d5__cuda_malloc(&p, bytes, WHAT, "tensor");
    if (s == D5_OK && bytes > 0) s = d5__cuda_check(cudaMemset(p, 0, bytes), WHAT, "cudaMemset");
    if (s != D5_OK) {
        d5__cuda_free(p);
        return s;
    }
    memset(dev, 0, sizeof *dev);
    dev->desc = *d;
    dev->data = p;
    dev->device = D5_DEVICE_CUDA;
    return D5_OK;
}

d5_status d5__cuda_dev_upload(const d5_tensor *host, d5_tensor *dev)
{
    if (!host || !dev) return d5_error(D5_ERR_INVALID, "d5__cuda_tensor_upload: NULL argument");
    if (!host->data) {
        memset(dev, 0, sizeof *dev);
        dev->desc = host->desc;
        dev->device = D5_DEVICE_CUDA;
        return D5_OK;
    }
    if (host->device != D5_DEVICE_CPU)
        return d5_error(D5_ERR_INVALID,
                        "device tensor: the tensor to upload is not in host memory");
    size_t bytes;
    d5_tensor t;
    d5_status s = d5_tensor_desc_bytes(&host->desc, &bytes);
    if (s == D5_OK) s = d5__cuda_dev_alloc(&host->desc, &t);
    if (s != D5_OK) return s;
    if (bytes > 0)
        s = d5__cuda_check(cudaMemcpy(t.data, host->data, bytes, cudaMemcpyHostToDevice), WHAT,
                           "cudaMemcpy to the device");
    if (s != D5_OK) {
        d5__cuda_dev_free(&t);
        return s;
    }
    *dev = t;
    return D5_OK;
}

d5_status d5__cuda_dev_download(const d5_tensor *dev, d5_tensor *host)
{
    if (!dev || !host || !dev->data || !host->data)
        return d5_error(D5_ERR_INVALID, "d5__cuda_tensor_download: NULL argument or tensor data");
    if (dev->device != D5_DEVICE_CUDA || host->device != D5_DEVICE_CPU)
        return d5_error(D5_ERR_INVALID,
                        "device tensor: download needs a device tensor and a host tensor");
    size_t bytes, host_bytes;
    d5_status s = d5_tensor_desc_bytes(&dev->desc, &bytes);
    if (s == D5_OK) s = d5_tensor_desc_bytes(&host->desc, &host_bytes);
    if (s != D5_OK) return s;
    if (bytes != host_bytes || dev->desc.dtype != host->desc.dtype)
        return d5_error(D5_ERR_SHAPE,
                        "device tensor: download of %zu bytes of %s into %zu bytes of %s", bytes,
                        d5_dtype_name((d5_dtype)dev->desc.dtype), host_bytes,
                        d5_dtype_name((d5_dtype)host->desc.dtype));
    if (bytes == 0) return D5_OK;
    return d5__cuda_check(cudaMemcpy(host->data, dev->data, bytes, cudaMemcpyDeviceToHost), WHAT,
                          "cudaMemcpy from the device");
}

void d5__cuda_dev_free(d5_tensor *dev)
{
    if (!dev || !dev->data) return;
    d5__cuda_free(dev->data);
    dev->data = NULL;
}

d5_status d5__cuda_dev_sync(void)
{
    return d5__cuda_check(cudaDeviceSynchronize(), "device", "cudaDeviceSynchronize");
}

/* ---- The backend's device memory (d5_device_memory) ---- */

static d5_status mem_alloc(size_t bytes, void **ptr)
{
    d5_status s = d5__cuda_need_device(WHAT);
    if (s == D5_OK) s = d5__cuda_malloc(ptr, bytes, WHAT, "arena");
    if (s == D5_OK && bytes > 0) s = d5__cuda_check(cudaMemset(*ptr, 0, bytes), WHAT, "cudaMemset");
    if (s != D5_OK) {
        d5__cuda_free(*ptr);
        *ptr = NULL;
    }
    return s;
}

static d5_status mem_to_device(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return D5_OK;
    return d5__cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), WHAT,
                          "cudaMemcpy to the device");
}

static d5_status mem_to_host(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return D5_OK;
    return d5__cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), WHAT,
                          "cudaMemcpy from the device");
}

static d5_status mem_add(float *dst, const float *src, size_t n)
{
    return d5__cuda_check((cudaError_t)d5__cuk_add(dst, src, (int64_t)n), WHAT,
                          "gradient accumulation");
}

static d5_status mem_fill(float *dst, float value, size_t n)
{
    return d5__cuda_check((cudaError_t)d5__cuk_fill(dst, value, (int64_t)n), WHAT, "fill");
}

const d5_device_memory d5__cuda_memory = {
    .name = "cuda",
    .device = D5_DEVICE_CUDA,
    .alloc = mem_alloc,
    .free = d5__cuda_free,
    .to_device = mem_to_device,
    .to_host = mem_to_host,
    .sync = d5__cuda_dev_sync,
    .add = mem_add,
    .fill = mem_fill,
};
