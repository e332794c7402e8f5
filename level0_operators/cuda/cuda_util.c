/* Plumbing shared by the cuda operators; see cuda_util.h. */
#include "cuda_util.h"

#include "d5/precision.h"

#include <limits.h>
#include <string.h>
#include <stdio.h>

int d5__cuda_probe(char *why, size_t why_size); /* available.c */

d5_status d5__cuda_check(cudaError_t e, const char *op, const char *what)
{
    if (e == cudaSuccess) return D5_OK;
    d5_status s = D5_ERR_BACKEND;
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) s = D5_ERR_NODEVICE;
    if (e == cudaErrorMemoryAllocation) s = D5_ERR_NOMEM;
    return d5_error(s, "%s (cuda): %s failed: %s (CUDA error %d)", op, what, cudaGetErrorString(e),
                    (int)e);
}

d5_status d5__cublas_check(cublasStatus_t st, const char *op, const char *what)
{
    if (st == CUBLAS_STATUS_SUCCESS) return D5_OK;
    d5_status s = st == CUBLAS_STATUS_ALLOC_FAILED    ? D5_ERR_NOMEM
                  : st == CUBLAS_STATUS_NOT_SUPPORTED ? D5_ERR_UNSUPPORTED
                                                      : D5_ERR_BACKEND;
    return d5_error(s, "%s (cuda): %s failed: %s (cuBLAS status %d)", op, what,
                    cublasGetStatusString(st), (int)st);
}

d5_status d5__cudnn_check(cudnnStatus_t st, const char *op, const char *what)
{
    if (st == CUDNN_STATUS_SUCCESS) return D5_OK;
    /* cuDNN 9 groups its codes by thousands: 3xxx are the NOT_SUPPORTED family. */
    int code = (int)st;
    d5_status s = code == (int)CUDNN_STATUS_ALLOC_FAILED ? D5_ERR_NOMEM
                  : code / 1000 == 3                     ? D5_ERR_UNSUPPORTED
                                                         : D5_ERR_BACKEND;
    return d5_error(s, "%s (cuda): %s failed: %s (cuDNN status %d)", op, what,
                    cudnnGetErrorString(st), code);
}

d5_status d5__cuda_need_device(const char *op)
{
    char why[256];
    if (d5__cuda_probe(why, sizeof why)) return D5_OK;
    return d5_error(D5_ERR_NODEVICE, "%s (cuda): %s", op, why);
}

d5_status d5__cublas_create(cublasHandle_t *h, const char *op)
{
    *h = NULL;
    d5_status s = d5__cuda_need_device(op);
    if (s == D5_OK) s = d5__cublas_check(cublasCreate(h), op, "cublasCreate");
    if (s != D5_OK) *h = NULL;
    return s;
}

void d5__cublas_free(cublasHandle_t h)
{
    if (h) (void)cublasDestroy(h);
}

d5_status d5__cudnn_create(cudnnHandle_t *h, const char *op)
{
    *h = NULL;
    d5_status s = d5__cuda_need_device(op);
    if (s == D5_OK) s = d5__cudnn_check(cudnnCreate(h), op, "cudnnCreate");
    if (s != D5_OK) *h = NULL;
    return s;
}

void d5__cudnn_free(cudnnHandle_t h)
{
    if (h) (void)cudnnDestroy(h);
}

d5_status d5__cuda_malloc(void **p, size_t bytes, const char *op, const char *what)
{
    *p = NULL;
    if (bytes < sizeof(float)) bytes = sizeof(float);
    cudaError_t e = cudaMalloc(p, bytes);
    if (e != cudaSuccess) {
        *p = NULL;
        char call[160];
        snprintf(call, sizeof call, "cudaMalloc of %zu bytes for the %s", bytes, what);
        return d5__cuda_check(e, op, call);
    }
    return D5_OK;
}

void d5__cuda_free(void *p)
{
    if (p) (void)cudaFree(p);
}

d5_status d5__cuda_fill(float **p, int64_t n, float v, const char *op, const char *what)
{
    *p = NULL;
    float *host = d5_alloc((size_t)(n > 0 ? n : 1) * sizeof *host, what);
    if (!host) return D5_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) host[i] = v;
    void *dev = NULL;
    d5_status s = d5__cuda_malloc(&dev, (size_t)n * sizeof *host, op, what);
    if (s == D5_OK && n > 0)
        s = d5__cuda_check(cudaMemcpy(dev, host, (size_t)n * sizeof *host, cudaMemcpyHostToDevice),
                           op, "cudaMemcpy to the device");
    d5_free(host);
    if (s != D5_OK) {
        d5__cuda_free(dev);
        return s;
    }
    *p = dev;
    return D5_OK;
}

d5_status d5__cuda_zero(void *p, int64_t n, const char *op)
{
    return d5__cuda_check(cudaMemsetAsync(p, 0, (size_t)n * sizeof(float), 0), op,
                          "cudaMemsetAsync");
}

d5_status d5__cuda_zero_grads(const char *op, const d5_op_call *call)
{
    d5_status s = D5_OK;
    for (int32_t i = 0; i < call->ninputs && s == D5_OK; i++)
        if (call->grad_inputs[i].data)
            s = d5__cuda_zero(call->grad_inputs[i].data,
                              d5_tensor_desc_numel(&call->inputs[i].desc), op);
    return s;
}

d5_status d5__cuda_backward_one(const char *op, const d5_op_call *call, int64_t n, int *run)
{
    void *dx = call->grad_inputs[0].data;
    d5_status s = d5__cuda_call_on_device(op, call);
    *run = 0;
    if (s != D5_OK || !dx) return s;
    if (!call->grad_outputs[0].data) return d5__cuda_zero(dx, n, op); /* none flows in */
    *run = 1;
    return D5_OK;
}

d5_status d5__cuda_created(d5_status s, void *obj, void (*destroy)(void *), void **state)
{
    if (s != D5_OK)
        destroy(obj);
    else
        *state = obj;
    return s;
}

d5_status d5__cuda_need_f32(const char *op, const d5_tensor *in, int32_t nin, int32_t i)
{
    if (i >= nin || in[i].desc.dtype == D5_DTYPE_INVALID)
        return d5_error(D5_ERR_INVALID, "%s (cuda): input %d is required", op, (int)i);
    if (in[i].desc.dtype != D5_F32)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (cuda): input %d is %s; the cuda backend runs float32 only", op, (int)i,
                        d5_dtype_name((d5_dtype)in[i].desc.dtype));
    return D5_OK;
}

d5_status d5__cuda_inputs_f32(const char *op, const d5_tensor *in, int32_t nin, int32_t required,
                              int32_t optional)
{
    d5_status s = D5_OK;
    for (int32_t i = 0; i < required && s == D5_OK; i++) s = d5__cuda_need_f32(op, in, nin, i);
    for (int32_t i = required; i < required + optional && i < nin && s == D5_OK; i++)
        if (in[i].desc.dtype != D5_DTYPE_INVALID) s = d5__cuda_need_f32(op, in, nin, i);
    return s;
}

d5_status d5__cuda_on_device(const char *op, const char *what, const d5_tensor *t, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (t[i].data && t[i].device != D5_DEVICE_CUDA)
            return d5_error(D5_ERR_INVALID,
                            "%s (cuda): %s %d is in host memory; the cuda backend works on "
                            "device memory (copy it to the device first)",
                            op, what, (int)i);
    return D5_OK;
}

d5_status d5__cuda_call_on_device(const char *op, const d5_op_call *call)
{
    d5_status s = D5_OK;
    if (call->grad_outputs)
        s = d5__cuda_on_device(op, "output gradient", call->grad_outputs, call->noutputs);
    if (s == D5_OK) s = d5__cuda_on_device(op, "input", call->inputs, call->ninputs);
    if (s == D5_OK) s = d5__cuda_on_device(op, "output", call->outputs, call->noutputs);
    if (s == D5_OK && call->grad_inputs)
        s = d5__cuda_on_device(op, "input gradient", call->grad_inputs, call->ninputs);
    return s;
}

d5_status d5__cuda_int(int64_t v, const char *op, const char *what, int *out)
{
    if (v < 0 || v > INT_MAX)
        return d5_error(D5_ERR_UNSUPPORTED,
                        "%s (cuda): %s is %lld, outside the int range of cuBLAS and cuDNN", op,
                        what, (long long)v);
    *out = (int)v;
    return D5_OK;
}

/* The int arguments of a row-major sgemm; leading dimensions at least 1. */
typedef struct gemm_ints {
    int m, n, k, lda, ldb, ldc, batch;
} gemm_ints;

static d5_status gemm_args(const char *op, int64_t m, int64_t n, int64_t k, int64_t lda,
                           int64_t ldb, int64_t ldc, int64_t batch, gemm_ints *g)
{
    const int64_t v[7] = {m, n, k, lda > 1 ? lda : 1, ldb > 1 ? ldb : 1, ldc > 1 ? ldc : 1, batch};
    int *o[7] = {&g->m, &g->n, &g->k, &g->lda, &g->ldb, &g->ldc, &g->batch};
    static const char *const names[7] = {"M", "N", "K", "lda", "ldb", "ldc", "the batch"};
    for (int i = 0; i < 7; i++) {
        d5_status s = d5__cuda_int(v[i], op, names[i], o[i]);
        if (s != D5_OK) return s;
    }
    return D5_OK;
}

d5_status d5__cuda_sgemm(cublasHandle_t h, const char *op, int ta, int tb, int64_t m, int64_t n,
                         int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                         int64_t ldb, float beta, float *c, int64_t ldc)
{
    gemm_ints g;
    d5_status s = gemm_args(op, m, n, k, lda, ldb, ldc, 1, &g);
    if (s != D5_OK || m == 0 || n == 0) return s;
    return d5__cublas_check(cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        ta ? CUBLAS_OP_T : CUBLAS_OP_N, g.n, g.m, g.k, &alpha, b,
                                        g.ldb, a, g.lda, &beta, c, g.ldc),
                            op, "cublasSgemm");
}

d5_status d5__cuda_sgemm_batched(cublasHandle_t h, const char *op, int ta, int tb, int64_t m,
                                 int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                                 int64_t stride_a, const float *b, int64_t ldb, int64_t stride_b,
                                 float beta, float *c, int64_t ldc, int64_t stride_c, int64_t batch)
{
    gemm_ints g;
    d5_status s = gemm_args(op, m, n, k, lda, ldb, ldc, batch, &g);
    if (s != D5_OK || m == 0 || n == 0 || batch == 0) return s;
    return d5__cublas_check(cublasSgemmStridedBatched(
                                h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                g.n, g.m, g.k, &alpha, b, g.ldb, (long long)stride_b, a, g.lda,
                                (long long)stride_a, &beta, c, g.ldc, (long long)stride_c, g.batch),
                            op, "cublasSgemmStridedBatched");
}

d5_status d5__cudnn_tensor(cudnnTensorDescriptor_t *d, int32_t ndim, const int64_t *shape,
                           const char *op)
{
    *d = NULL;
    if (ndim > D5_MAX_DIMS)
        return d5_error(D5_ERR_UNSUPPORTED, "%s (cuda): %d dimensions, cuDNN takes at most %d", op,
                        (int)ndim, D5_MAX_DIMS);
    int dims[D5_MAX_DIMS], strides[D5_MAX_DIMS], nd = ndim < 4 ? 4 : ndim;
    int64_t numel = 1;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < nd && s == D5_OK; i++) {
        int64_t v = i < ndim ? shape[i] : 1;
        int total = 0;
        s = d5__cuda_int(v, op, "a dimension", &dims[i]);
        if (s == D5_OK && v == 0)
            s = d5_error(D5_ERR_UNSUPPORTED, "%s (cuda): empty tensors are not supported", op);
        numel *= s == D5_OK ? v : 1; /* both at most INT32_MAX: no overflow */
        if (s == D5_OK) s = d5__cuda_int(numel, op, "the number of elements", &total);
    }
    if (s != D5_OK) return s;
    strides[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) strides[i] = strides[i + 1] * dims[i + 1];
    s = d5__cudnn_check(cudnnCreateTensorDescriptor(d), op, "cudnnCreateTensorDescriptor");
    if (s != D5_OK) {
        *d = NULL;
        return s;
    }
    s = d5__cudnn_check(cudnnSetTensorNdDescriptor(*d, CUDNN_DATA_FLOAT, nd, dims, strides), op,
                        "cudnnSetTensorNdDescriptor");
    if (s != D5_OK) {
        cudnnDestroyTensorDescriptor(*d);
        *d = NULL;
    }
    return s;
}

void d5__cudnn_tensor_free(cudnnTensorDescriptor_t d)
{
    if (d) (void)cudnnDestroyTensorDescriptor(d);
}

d5_status d5__cuda_precision(const d5_attrs *attrs, const char *op, int *tf32)
{
    const char *want = NULL;
    *tf32 = 0;
    d5_status s = d5_attrs_string(attrs, D5_ATTR_PRECISION, NULL, &want);
    if (s != D5_OK || !want || strcmp(want, "f32") == 0) return s;
    if (strcmp(want, "tf32") == 0) {
        *tf32 = 1;
        return D5_OK;
    }
    return d5_error(D5_ERR_UNSUPPORTED,
                    "%s (cuda): compute precision '%.16s' is not supported (f32 or tf32)", op,
                    want);
}
