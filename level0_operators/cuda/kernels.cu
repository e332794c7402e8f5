/* The cuda backend's own kernels: see kernels.h. Grid-stride loops of 256
 * threads; LayerNormalization one block per row, with the mean and the
 * variance reduced in two passes over the row (shared memory, warp
 * shuffles), so that rows of any length work. */
#include "kernels.h"

#include <cuda_runtime.h>
#include <math.h>

#define THREADS 256

static unsigned grid_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b < 1) b = 1;
    if (b > (1 << 20)) b = 1 << 20;
    return (unsigned)b;
}

/* A grid-stride loop over i < n: each thread starts at its index in the
 * grid and steps by the grid's size. */
#define GRID_LOOP(i, n)                                                                            \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)blockDim.x * gridDim.x)

static int launched(void)
{
    return (int)cudaGetLastError();
}

/* The offset of linear index i of the space in operand k. */
__device__ static int64_t offset_of(const d5__cuk_space &sp, int k, int64_t i)
{
    int64_t off = 0;
    for (int d = sp.rank - 1; d >= 0; d--) {
        int64_t q = i / sp.dims[d];
        off += (i - q * sp.dims[d]) * sp.stride[k][d];
        i = q;
    }
    return off;
}

__device__ static int64_t total(const d5__cuk_space &sp)
{
    int64_t n = 1;
    for (int d = 0; d < sp.rank; d++) n *= sp.dims[d];
    return n;
}

__global__ void unary_kernel(int op, const float *x, float *y, int64_t n)
{
    GRID_LOOP(i, n) {
        float v = x[i], r;
        switch (op) {
        case D5__CUK_ERF: r = erff(v); break;
        case D5__CUK_SQRT: r = sqrtf(v); break;
        case D5__CUK_EXP: r = expf(v); break;
        case D5__CUK_NEG: r = -v; break;
        case D5__CUK_RECIPROCAL: r = 1.0f / v; break;
        case D5__CUK_GELU: r = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); break;
        default:
            r = 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
            break;
        }
        y[i] = r;
    }
}

__global__ void binary_kernel(int op, const float *a, const float *b, float *y, d5__cuk_space sp)
{
    int64_t n = total(sp);
    GRID_LOOP(i, n) {
        float u = a[offset_of(sp, 0, i)], v = b[offset_of(sp, 1, i)], r;
        switch (op) {
        case D5__CUK_ADD: r = u + v; break;
        case D5__CUK_SUB: r = u - v; break;
        case D5__CUK_MUL: r = u * v; break;
        case D5__CUK_DIV: r = u / v; break;
        default: r = powf(u, v); break;
        }
        y[i] = r;
    }
}

__global__ void where_kernel(const unsigned char *c, const float *a, const float *b, float *y,
                             d5__cuk_space sp)
{
    int64_t n = total(sp);
    GRID_LOOP(i, n)
        y[i] = c[offset_of(sp, 0, i)] ? a[offset_of(sp, 1, i)] : b[offset_of(sp, 2, i)];
}

__global__ void copy_kernel(const float *x, float *y, d5__cuk_space sp)
{
    int64_t n = total(sp);
    GRID_LOOP(i, n)
        y[offset_of(sp, 1, i)] = x[offset_of(sp, 0, i)];
}

/* The sum of v over the block (every thread gets it). */
__device__ static float block_sum(float v, float *shared)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? shared[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) shared[0] = v;
    }
    __syncthreads();
    v = shared[0];
    __syncthreads();
    return v;
}

__global__ void layernorm_kernel(const float *x, const float *scale, const float *bias, float *y,
                                 int64_t cols, float eps)
{
    __shared__ float shared[32];
    const float *row = x + blockIdx.x * cols;
    float *out = y + blockIdx.x * cols;
    float s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += row[j];
    float mean = block_sum(s, shared) / (float)cols;
    float q = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        float d = row[j] - mean;
        q += d * d;
    }
    float inv = rsqrtf(block_sum(q, shared) / (float)cols + eps);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        out[j] = (row[j] - mean) * inv * scale[j] + (bias ? bias[j] : 0.0f);
}

/* Gather's element i of y[o, j, r]: its offset in data[o, idx[j], r], or -1
 * for an index outside [0, axis_dim) (below 0 counting from axis_dim). */
__device__ static int64_t gather_offset(const int64_t *idx, int64_t i, int64_t nidx, int64_t inner,
                                        int64_t axis_dim)
{
    int64_t r = i % inner, t = i / inner, j = t % nidx, o = t / nidx;
    int64_t k = idx[j];
    if (k < 0) k += axis_dim;
    return k >= 0 && k < axis_dim ? (o * axis_dim + k) * inner + r : -1;
}

__global__ void gather_kernel(const float *data, const int64_t *idx, float *y, int64_t outer,
                              int64_t nidx, int64_t inner, int64_t axis_dim)
{
    int64_t n = outer * nidx * inner;
    GRID_LOOP(i, n) {
        int64_t at = gather_offset(idx, i, nidx, inner, axis_dim);
        y[i] = at >= 0 ? data[at] : 0.0f;
    }
}

__global__ void add_kernel(float *y, const float *x, int64_t n)
{
    GRID_LOOP(i, n)
        y[i] += x[i];
}

__global__ void fill_kernel(float *y, float v, int64_t n)
{
    GRID_LOOP(i, n)
        y[i] = v;
}

__global__ void unary_backward_kernel(int op, const float *x, const float *y, const float *dy,
                                      float *dx, int64_t n)
{
    GRID_LOOP(i, n) {
        float v = x[i], d;
        switch (op) {
        case D5__CUK_ERF: d = 1.12837916709551257f * expf(-v * v); break;
        case D5__CUK_SQRT: d = 0.5f / y[i]; break;
        case D5__CUK_EXP: d = y[i]; break;
        case D5__CUK_NEG: d = -1.0f; break;
        case D5__CUK_RECIPROCAL: d = -y[i] * y[i]; break;
        case D5__CUK_GELU:
            d = 0.5f * (1.0f + erff(v * 0.70710678118654752f)) +
                v * 0.39894228040143268f * expf(-0.5f * v * v);
            break;
        default: {
            float c = 0.79788456080286536f, t = tanhf(c * (v + 0.044715f * v * v * v));
            d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * c * (1.0f + 0.134145f * v * v);
            break;
        }
        }
        dx[i] = dy[i] * d;
    }
}

__global__ void binary_backward_kernel(int op, const float *a, const float *b, const float *dy,
                                       float *da, float *db, d5__cuk_space sp)
{
    int64_t n = total(sp);
    GRID_LOOP(i, n) {
        int64_t ia = offset_of(sp, 0, i), ib = offset_of(sp, 1, i);
        float g = dy[i], u = a[ia], v = b[ib], ga, gb;
        switch (op) {
        case D5__CUK_ADD: ga = g, gb = g; break;
        case D5__CUK_SUB: ga = g, gb = -g; break;
        case D5__CUK_MUL: ga = g * v, gb = g * u; break;
        default: ga = g / v, gb = -g * u / (v * v); break; /* DIV */
        }
        if (da) atomicAdd(da + ia, ga);
        if (db) atomicAdd(db + ib, gb);
    }
}

__global__ void gather_backward_kernel(const float *dy, const int64_t *idx, float *dx, int64_t outer,
                                       int64_t nidx, int64_t inner, int64_t axis_dim)
{
    int64_t n = outer * nidx * inner;
    GRID_LOOP(i, n) {
        int64_t at = gather_offset(idx, i, nidx, inner, axis_dim);
        if (at >= 0) atomicAdd(dx + at, dy[i]);
    }
}

static int64_t count(const d5__cuk_space *sp)
{
    int64_t n = 1;
    for (int d = 0; d < sp->rank; d++) n *= sp->dims[d];
    return n;
}

extern "C" int d5__cuk_unary(int op, const float *x, float *y, int64_t n)
{
    if (n <= 0) return 0;
    unary_kernel<<<grid_for(n), THREADS>>>(op, x, y, n);
    return launched();
}

extern "C" int d5__cuk_binary(int op, const float *a, const float *b, float *y,
                              const d5__cuk_space *sp)
{
    int64_t n = count(sp);
    if (n <= 0) return 0;
    binary_kernel<<<grid_for(n), THREADS>>>(op, a, b, y, *sp);
    return launched();
}

extern "C" int d5__cuk_where(const unsigned char *cond, const float *a, const float *b, float *y,
                             const d5__cuk_space *sp)
{
    int64_t n = count(sp);
    if (n <= 0) return 0;
    where_kernel<<<grid_for(n), THREADS>>>(cond, a, b, y, *sp);
    return launched();
}

extern "C" int d5__cuk_copy(const float *x, float *y, const d5__cuk_space *sp)
{
    int64_t n = count(sp);
    if (n <= 0) return 0;
    copy_kernel<<<grid_for(n), THREADS>>>(x, y, *sp);
    return launched();
}

extern "C" int d5__cuk_layernorm(const float *x, const float *scale, const float *bias, float *y,
                                 int64_t rows, int64_t cols, float eps)
{
    if (rows <= 0 || cols <= 0) return 0;
    if (rows > 0x7fffffff) return (int)cudaErrorInvalidValue;
    layernorm_kernel<<<(unsigned)rows, THREADS>>>(x, scale, bias, y, cols, eps);
    return launched();
}

extern "C" int d5__cuk_gather(const float *data, const int64_t *idx, float *y, int64_t outer,
                              int64_t nidx, int64_t inner, int64_t axis_dim)
{
    int64_t n = outer * nidx * inner;
    if (n <= 0) return 0;
    gather_kernel<<<grid_for(n), THREADS>>>(data, idx, y, outer, nidx, inner, axis_dim);
    return launched();
}

extern "C" int d5__cuk_add(float *y, const float *x, int64_t n)
{
    if (n <= 0) return 0;
    add_kernel<<<grid_for(n), THREADS>>>(y, x, n);
    return launched();
}

extern "C" int d5__cuk_fill(float *y, float v, int64_t n)
{
    if (n <= 0) return 0;
    fill_kernel<<<grid_for(n), THREADS>>>(y, v, n);
    return launched();
}

extern "C" int d5__cuk_unary_backward(int op, const float *x, const float *y, const float *dy,
                                      float *dx, int64_t n)
{
    if (n <= 0) return 0;
    unary_backward_kernel<<<grid_for(n), THREADS>>>(op, x, y, dy, dx, n);
    return launched();
}

extern "C" int d5__cuk_binary_backward(int op, const float *a, const float *b, const float *dy,
                                       float *da, float *db, const d5__cuk_space *sp)
{
    int64_t n = count(sp);
    if (n <= 0) return 0;
    binary_backward_kernel<<<grid_for(n), THREADS>>>(op, a, b, dy, da, db, *sp);
    return launched();
}

extern "C" int d5__cuk_gather_backward(const float *dy, const int64_t *idx, float *dx,
                                       int64_t outer, int64_t nidx, int64_t inner,
                                       int64_t axis_dim)
{
    int64_t n = outer * nidx * inner;
    if (n <= 0) return 0;
    gather_backward_kernel<<<grid_for(n), THREADS>>>(dy, idx, dx, outer, nidx, inner, axis_dim);
    return launched();
}
