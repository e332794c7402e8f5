/* Tensor descriptors and CPU tensor memory. */
#include "d5/core.h"

#include <stdio.h>
#include <string.h>

d5_status d5_tensor_desc_make(d5_dtype dtype, int32_t ndim, const int64_t *shape,
                              d5_tensor_desc *out)
{
    if (!out || (ndim > 0 && !shape))
        return d5_error(D5_ERR_INVALID, "d5_tensor_desc_make: NULL argument");
    if (ndim < 0 || ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_INVALID, "tensor has %d dimensions, expected 0..%d", (int)ndim,
                        D5_MAX_DIMS);
    if (d5_dtype_size(dtype) == 0)
        return d5_error(D5_ERR_INVALID, "tensor has invalid data type %d", (int)dtype);
    d5_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = dtype;
    d.ndim = ndim;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return d5_error(D5_ERR_INVALID, "tensor dimension %d has negative size %lld", (int)i,
                            (long long)shape[i]);
        d.shape[i] = shape[i];
    }
    *out = d;
    return D5_OK;
}

int64_t d5_tensor_desc_numel(const d5_tensor_desc *d)
{
    int64_t n = 1;
    for (int32_t i = 0; i < d->ndim; i++) n *= d->shape[i];
    return n;
}

d5_status d5_tensor_desc_bytes(const d5_tensor_desc *d, size_t *bytes)
{
    if (!d || !bytes) return d5_error(D5_ERR_INVALID, "d5_tensor_desc_bytes: NULL argument");
    if (d->ndim < 0 || d->ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_INVALID, "tensor has %d dimensions, expected 0..%d", (int)d->ndim,
                        D5_MAX_DIMS);
    size_t total = d5_dtype_size((d5_dtype)d->dtype);
    if (total == 0) return d5_error(D5_ERR_INVALID, "tensor has invalid data type %d", d->dtype);
    for (int32_t i = 0; i < d->ndim; i++) {
        if (d->shape[i] < 0)
            return d5_error(D5_ERR_INVALID, "tensor dimension %d has negative size %lld", (int)i,
                            (long long)d->shape[i]);
        size_t s = (size_t)d->shape[i];
        if (s != 0 && total > SIZE_MAX / s) {
            char buf[160];
            d5_tensor_desc_format(d, buf, sizeof buf);
            return d5_error(D5_ERR_RANGE, "tensor %s is larger than the address space", buf);
        }
        total *= s;
    }
    *bytes = total;
    return D5_OK;
}

void d5_tensor_desc_format(const d5_tensor_desc *d, char *buf, size_t size)
{
    if (!buf || size == 0) return;
    size_t used = (size_t)snprintf(buf, size, "%s[", d5_dtype_name((d5_dtype)d->dtype));
    int32_t nd = d->ndim < 0 ? 0 : (d->ndim > D5_MAX_DIMS ? D5_MAX_DIMS : d->ndim);
    for (int32_t i = 0; i < nd && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? "," : "",
                                 (long long)d->shape[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

d5_status d5_tensor_alloc(const d5_tensor_desc *d, d5_tensor *out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_tensor_alloc: NULL argument");
    size_t bytes;
    d5_status s = d5_tensor_desc_bytes(d, &bytes);
    if (s != D5_OK) return s;
    d5_allocator a = d5_allocator_get();
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = a.alloc(a.ctx, rounded ? rounded : 64, 64);
    if (!p) {
        char buf[160];
        d5_tensor_desc_format(d, buf, sizeof buf);
        return d5_error(D5_ERR_NOMEM, "cannot allocate %zu bytes for tensor %s", bytes, buf);
    }
    memset(p, 0, rounded ? rounded : 64);
    memset(out, 0, sizeof *out);
    out->desc = *d;
    out->data = p;
    out->device = D5_DEVICE_CPU;
    return D5_OK;
}

void d5_tensor_free(d5_tensor *t)
{
    if (!t || !t->data) return;
    d5_allocator a = d5_allocator_get();
    a.free(a.ctx, t->data);
    t->data = NULL;
}
