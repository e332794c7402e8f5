/* Device memory for callers of CUDA operators (tables with D5_OP_CUDA): copies
 * of host tensors on the device and back, used by the validator and by d5's
 * operator runner. Internal to d5: the functions are exported only so that
 * d5's command-line tool, linked against the shared library, can use them;
 * they are not part of the public API.
 *
 * A device tensor is a d5_tensor with device D5_DEVICE_CUDA whose data was
 * allocated here; free it with d5__cuda_tensor_free. The copies are
 * synchronous: a download waits for all work queued on the default stream,
 * where the cuda backend runs. Without the cuda backend (d5 built without the
 * CUDA toolkit or cuDNN) every function returns D5_ERR_UNSUPPORTED. */
#ifndef D5_LEVEL0_DEVICE_H
#define D5_LEVEL0_DEVICE_H

#include "d5/operator.h"

/* A new device tensor of descriptor `d`, zeroed. */
D5_API d5_status d5__cuda_tensor_alloc(const d5_tensor_desc *d, d5_tensor *dev);
/* A new device tensor holding a copy of the host tensor `host`. A host tensor
 * without data (an omitted optional input) gives one without data. */
D5_API d5_status d5__cuda_tensor_upload(const d5_tensor *host, d5_tensor *dev);
/* Copies a device tensor into a host tensor of the same descriptor. */
D5_API d5_status d5__cuda_tensor_download(const d5_tensor *dev, d5_tensor *host);
/* Frees a device tensor and clears its data; NULL or empty is a no-op. */
D5_API void d5__cuda_tensor_free(d5_tensor *dev);
/* Waits for all work on the current device. */
D5_API d5_status d5__cuda_sync(void);

/* The device memory of device backend `backend` for d5_backend_memory
 * (registry.c), which has checked that the backend is available;
 * D5_ERR_UNSUPPORTED for a backend without one. */
d5_status d5__device_memory_of(const char *backend, const d5_device_memory **out);

#endif
