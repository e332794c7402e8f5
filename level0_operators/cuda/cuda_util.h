/* The cuda backend's plumbing: status conversion for the CUDA runtime, cuBLAS
 * and cuDNN, library handles owned by each operator instance, device buffers,
 * and the checks every operator makes on its tensors. Only files in cuda/
 * include the CUDA headers.
 *
 * Every operator of the backend works on device memory (its table has the
 * D5_OP_CUDA flag): each tensor it is given must have device D5_DEVICE_CUDA.
 * Work is queued on the default stream and forward/backward return without
 * waiting for it; a caller reads results with a synchronous copy or after
 * cudaDeviceSynchronize (see device.h). Handles are per instance, so two
 * instances may run on two threads. */
#ifndef D5_CUDA_UTIL_H
#define D5_CUDA_UTIL_H

#include "d5/operator.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

/* Converts a status to a d5_status; D5_OK on success. The message names the
 * operator and the call ("Conv (cuda): cudnnConvolutionForward: ..."). The
 * CUDA runtime's no-device errors give D5_ERR_NODEVICE, allocation failures
 * D5_ERR_NOMEM, cuDNN's NOT_SUPPORTED family D5_ERR_UNSUPPORTED (so that a
 * caller falls back to another backend), anything else D5_ERR_BACKEND. */
d5_status d5__cuda_check(cudaError_t e, const char *op, const char *what);
d5_status d5__cublas_check(cublasStatus_t st, const char *op, const char *what);
d5_status d5__cudnn_check(cudnnStatus_t st, const char *op, const char *what);

/* D5_ERR_NODEVICE naming the operator when no CUDA device answers. */
d5_status d5__cuda_need_device(const char *op);
/* Library handles on the default stream; checked for a device first. Free
 * with d5__cublas_free / d5__cudnn_free (NULL is a no-op). */
d5_status d5__cublas_create(cublasHandle_t *h, const char *op);
void d5__cublas_free(cublasHandle_t h);
d5_status d5__cudnn_create(cudnnHandle_t *h, const char *op);
void d5__cudnn_free(cudnnHandle_t h);

/* Device memory of `bytes` (at least one float, so that an empty buffer is
 * not NULL). d5__cuda_free(NULL) is a no-op. */
d5_status d5__cuda_malloc(void **p, size_t bytes, const char *op, const char *what);
void d5__cuda_free(void *p);
/* `n` floats of value `v` in new device memory. */
d5_status d5__cuda_fill(float **p, int64_t n, float v, const char *op, const char *what);
/* Sets `n` floats of device memory at p to 0, queued on the default stream
 * (a gradient when none flows in). */
d5_status d5__cuda_zero(void *p, int64_t n, const char *op);
/* A backward call into which no gradient flows (dY has no data): every
 * input gradient asked for (data not NULL) is set to zeros, as many as its
 * input has elements. */
d5_status d5__cuda_zero_grads(const char *op, const d5_op_call *call);
/* The start of the backward of a one-input operator: the device check
 * (d5__cuda_call_on_device), then dX (n floats) zeroed when no gradient
 * flows in. *run is 1 when the caller is left to compute dX (the check
 * passed, dX is asked for and dY has data), 0 when the call is done. */
d5_status d5__cuda_backward_one(const char *op, const d5_op_call *call, int64_t n, int *run);

/* Input i is present and float32; D5_ERR_UNSUPPORTED names the dtype
 * otherwise ("the cuda backend runs float32 only"). */
d5_status d5__cuda_need_f32(const char *op, const d5_tensor *in, int32_t nin, int32_t i);
/* d5__cuda_need_f32 on inputs 0 to required - 1, then on each of the next
 * `optional` inputs (a bias, say) that is present in in[0..nin-1]. */
d5_status d5__cuda_inputs_f32(const char *op, const d5_tensor *in, int32_t nin, int32_t required,
                              int32_t optional);
/* Every tensor of t[0..n-1] that has data lives on a CUDA device;
 * D5_ERR_INVALID names the operator and the tensor otherwise. */
d5_status d5__cuda_on_device(const char *op, const char *what, const d5_tensor *t, int32_t n);
/* Every tensor of a call that has data lies in device memory: the output
 * gradients and input gradients too when the call has them (backward). */
d5_status d5__cuda_call_on_device(const char *op, const d5_op_call *call);
/* The compute precision the executor asked for (D5_ATTR_PRECISION): *tf32
 * is 1 for "tf32" (tensor cores on float32 operands), 0 for none or "f32";
 * D5_ERR_UNSUPPORTED for "bf16" and "f16", which the cuda backend does not
 * compute yet (the executor then falls back to another backend). */
d5_status d5__cuda_precision(const d5_attrs *attrs, const char *op, int *tf32);
/* v fits the int of the CUDA libraries' interfaces; D5_ERR_UNSUPPORTED
 * naming `what` otherwise. */
d5_status d5__cuda_int(int64_t v, const char *op, const char *what, int *out);

/* C (m x n) = alpha op(A) op(B) + beta C on row-major device matrices with
 * leading dimensions in elements (ta, tb: op transposes), as cuBLAS's
 * column-major sgemm of the transposed problem C^T = op(B)^T op(A)^T. Does
 * nothing when m or n is 0. Every size must fit an int (D5_ERR_UNSUPPORTED). */
d5_status d5__cuda_sgemm(cublasHandle_t h, const char *op, int ta, int tb, int64_t m, int64_t n,
                         int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                         int64_t ldb, float beta, float *c, int64_t ldc);
/* The same on `batch` problems whose matrices lie at fixed strides (elements;
 * a stride of 0 repeats one matrix of A or B), with cublasSgemmStridedBatched. */
d5_status d5__cuda_sgemm_batched(cublasHandle_t h, const char *op, int ta, int tb, int64_t m,
                                 int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                                 int64_t stride_a, const float *b, int64_t ldb, int64_t stride_b,
                                 float beta, float *c, int64_t ldc, int64_t stride_c,
                                 int64_t batch);

/* The plugin's implementation of ../device.h, whose functions of the same
 * names (d5__cuda_tensor_alloc for d5__cuda_dev_alloc, ...) reach these
 * through the plugin's table (../cuda_plugin.h). */
d5_status d5__cuda_dev_alloc(const d5_tensor_desc *d, d5_tensor *dev);
d5_status d5__cuda_dev_upload(const d5_tensor *host, d5_tensor *dev);
d5_status d5__cuda_dev_download(const d5_tensor *dev, d5_tensor *host);
void d5__cuda_dev_free(d5_tensor *dev);
d5_status d5__cuda_dev_sync(void);

/* The end of an operator's create: on success (s is D5_OK) *state receives
 * the instance `obj`; otherwise destroy(obj) frees it and *state is left as
 * it was. Returns s. */
d5_status d5__cuda_created(d5_status s, void *obj, void (*destroy)(void *), void **state);

/* The fields every op table of the backend shares: the ABI version, the
 * backend "cuda", D5_OP_CUDA (with the other FLAGS, 0 for none), the name
 * and the input and output counts. An op table is then
 *   {D5_CUDA_OP("Relu", D5_OP_HAS_BACKWARD, 1, 1, 1, 1), .create = ..., ...}. */
#define D5_CUDA_OP(NAME, FLAGS, MIN_IN, MAX_IN, MIN_OUT, MAX_OUT)                                  \
    .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_CUDA | (FLAGS), .name = (NAME),               \
    .backend = "cuda", .min_inputs = (MIN_IN), .max_inputs = (MAX_IN), .min_outputs = (MIN_OUT),   \
    .max_outputs = (MAX_OUT)

/* A packed float32 cuDNN tensor descriptor of the given shape; ranks below 4
 * get trailing 1s (cuDNN's descriptors take 4 to 8 dimensions). At most
 * INT32_MAX elements. Free with cudnnDestroyTensorDescriptor (NULL-safe through
 * d5__cudnn_tensor_free). */
d5_status d5__cudnn_tensor(cudnnTensorDescriptor_t *d, int32_t ndim, const int64_t *shape,
                           const char *op);
void d5__cudnn_tensor_free(cudnnTensorDescriptor_t d);

#endif
