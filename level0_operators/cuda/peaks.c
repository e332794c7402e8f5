/* The GPU's peaks (d5_gpu_peaks_measure, d5/precision.h): square products of
 * `size` on cuBLAS in each precision its tensor cores take, and the device
 * memory bandwidth of a device-to-device copy.
 *
 *   FP32  cublasSgemm, CUBLAS_DEFAULT_MATH (FMA, no TF32)
 *   TF32  cublasGemmEx on float32, CUBLAS_COMPUTE_32F_FAST_TF32
 *   BF16  cublasGemmEx, bfloat16 in and out, float32 accumulation
 *   FP16  cublasGemmEx, float16 in and out, float32 accumulation
 *   FP8   cublasLtMatmul, E4M3 in, bfloat16 out, float32 accumulation, A
 *         transposed (the layout cuBLASLt's FP8 kernels take)
 *   INT8  cublasGemmEx, int8 in, int32 out and accumulation, A transposed
 *
 * The operands hold seeded random values of their type (zeros would run
 * faster than real data). Each product is run three times unmeasured, then
 * timed alone with two CUDA events on the default stream until max_time_s
 * has passed (at least five times); the median and the best give 2 size^3 /
 * time. The copy counts the bytes read and written. A precision the device
 * or library refuses is left unmeasured with the reason. */
#include "d5/precision.h"
#include "cuda_util.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One timing loop: `run` enqueues the work once. */
typedef d5_status (*run_fn)(void *ctx);

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static d5_status time_loop(run_fn run, void *ctx, double max_time_s, double *median, double *best)
{
    enum { WARMUP = 3, MIN_REPS = 5, MAX_REPS = 1000 };
    static double t[MAX_REPS];
    cudaEvent_t a = NULL, b = NULL;
    d5_status s = d5__cuda_check(cudaEventCreate(&a), "GPU peaks", "cudaEventCreate");
    if (s == D5_OK) s = d5__cuda_check(cudaEventCreate(&b), "GPU peaks", "cudaEventCreate");
    for (int i = 0; s == D5_OK && i < WARMUP; i++) s = run(ctx);
    if (s == D5_OK) s = d5__cuda_check(cudaDeviceSynchronize(), "GPU peaks", "warm-up");
    double spent = 0;
    int n = 0;
    while (s == D5_OK && n < MAX_REPS && (n < MIN_REPS || spent < max_time_s)) {
        float ms = 0;
        s = d5__cuda_check(cudaEventRecord(a, 0), "GPU peaks", "cudaEventRecord");
        if (s == D5_OK) s = run(ctx);
        if (s == D5_OK) s = d5__cuda_check(cudaEventRecord(b, 0), "GPU peaks", "cudaEventRecord");
        if (s == D5_OK)
            s = d5__cuda_check(cudaEventSynchronize(b), "GPU peaks", "cudaEventSynchronize");
        if (s == D5_OK)
            s = d5__cuda_check(cudaEventElapsedTime(&ms, a, b), "GPU peaks",
                               "cudaEventElapsedTime");
        if (s == D5_OK) {
            t[n++] = (double)ms * 1e-3;
            spent += (double)ms * 1e-3;
        }
    }
    if (a) cudaEventDestroy(a);
    if (b) cudaEventDestroy(b);
    if (s != D5_OK) return s;
    qsort(t, (size_t)n, sizeof t[0], cmp);
    *best = t[0];
    *median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    return D5_OK;
}

/* The scaling factors alpha 1 and beta 0, float and (INT8) int32. */
static const float F_ONE = 1.0f, F_ZERO = 0.0f;
static const int32_t I_ONE = 1, I_ZERO = 0;

/* Each kind's product: the bytes of an element of A and B and of C, and for
 * the kinds that cublasGemmEx runs, A's operation, the types of A and B and
 * of C, the compute type and the scaling factors. FP32 is cublasSgemm, FP8
 * cublasLtMatmul (fp8_setup). */
typedef struct kind_info {
    size_t in, out;
    cublasOperation_t ta;
    cudaDataType_t ab, c;
    cublasComputeType_t compute;
    const void *one, *zero;
} kind_info;

static const kind_info KINDS[D5_GPU_PEAK_KINDS] = {
    [D5_GPU_PEAK_FP32] = {.in = 4, .out = 4},
    [D5_GPU_PEAK_TF32] = {4, 4, CUBLAS_OP_N, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32,
                          &F_ONE, &F_ZERO},
    [D5_GPU_PEAK_BF16] = {2, 2, CUBLAS_OP_N, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, &F_ONE,
                          &F_ZERO},
    [D5_GPU_PEAK_FP16] = {2, 2, CUBLAS_OP_N, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, &F_ONE,
                          &F_ZERO},
    [D5_GPU_PEAK_FP8] = {.in = 1, .out = 2}, /* E4M3 in, bfloat16 out */
    [D5_GPU_PEAK_INT8] = {1, 4, CUBLAS_OP_T, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, &I_ONE,
                          &I_ZERO},
};

typedef struct gemm {
    int kind;
    int n;
    cublasHandle_t h;
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    void *a, *b, *c, *ws;
    size_t ws_size;
    float *scales; /* FP8: the scale of A and of B on the device */
} gemm;

static d5_status run_gemm(void *ctx)
{
    gemm *g = ctx;
    const kind_info *t = &KINDS[g->kind];
    int n = g->n;
    cublasStatus_t st;
    switch (g->kind) {
    case D5_GPU_PEAK_FP32:
        st = cublasSgemm(g->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &F_ONE, g->a, n, g->b, n, &F_ZERO,
                         g->c, n);
        break;
    case D5_GPU_PEAK_FP8:
        st = cublasLtMatmul(g->lt, g->op, &F_ONE, g->a, g->la, g->b, g->lb, &F_ZERO, g->c, g->lc,
                            g->c, g->lc, &g->algo, g->ws, g->ws_size, 0);
        break;
    default: /* TF32, BF16, FP16, INT8 */
        st = cublasGemmEx(g->h, t->ta, CUBLAS_OP_N, n, n, n, t->one, g->a, t->ab, n, g->b, t->ab, n,
                          t->zero, g->c, t->c, n, t->compute, CUBLAS_GEMM_DEFAULT);
        break;
    }
    return d5__cublas_check(st, "GPU peaks", d5_gpu_peak_name(g->kind));
}

/* Seeded values of the kind's type in [-1, 1] (int8: [-64, 63]; FP8 E4M3:
 * any finite byte), uploaded to `dev`. */
static d5_status fill(int kind, void *dev, size_t count, uint64_t seed)
{
    size_t in = KINDS[kind].in;
    unsigned char *h = d5_alloc(count * in, "GPU peak operands");
    if (!h) return D5_ERR_NOMEM;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < count; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        float v = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        switch (kind) {
        case D5_GPU_PEAK_FP32:
        case D5_GPU_PEAK_TF32: memcpy(h + 4 * i, &v, 4); break;
        case D5_GPU_PEAK_BF16: {
            uint16_t b = d5_bf16_from_f32(v);
            memcpy(h + 2 * i, &b, 2);
            break;
        }
        case D5_GPU_PEAK_FP16: {
            uint16_t b = d5_f16_from_f32(v);
            memcpy(h + 2 * i, &b, 2);
            break;
        }
        case D5_GPU_PEAK_INT8: h[i] = (unsigned char)(int8_t)(v * 64.0f); break;
        default: h[i] = (unsigned char)(x & 0x77); break; /* E4M3 without NaN (0x7F) */
        }
    }
    d5_status s = d5__cuda_check(cudaMemcpy(dev, h, count * in, cudaMemcpyHostToDevice),
                                 "GPU peaks", "cudaMemcpy of the operands");
    d5_free(h);
    return s;
}

/* cuBLASLt's FP8 product: D (bf16, n x n) = A^T B with A and B E4M3. */
static d5_status fp8_setup(gemm *g)
{
    int64_t n = g->n;
    cublasOperation_t t = CUBLAS_OP_T;
    const char *const OP = "GPU peaks";
    d5_status s = d5__cublas_check(cublasLtCreate(&g->lt), OP, "cublasLtCreate");
    if (s == D5_OK)
        s = d5__cublas_check(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), OP,
                             "cublasLtMatmulDescCreate");
    if (s == D5_OK)
        s = d5__cublas_check(
            cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), OP,
            "TRANSA");
    if (s == D5_OK) s = d5__cuda_malloc((void **)&g->scales, 2 * sizeof(float), OP, "scales");
    if (s == D5_OK) {
        const float ones[2] = {1.0f, 1.0f};
        s = d5__cuda_check(cudaMemcpy(g->scales, ones, sizeof ones, cudaMemcpyHostToDevice), OP,
                           "cudaMemcpy of the scales");
    }
    const float *sa = g->scales, *sb = g->scales ? g->scales + 1 : NULL;
    if (s == D5_OK)
        s = d5__cublas_check(cublasLtMatmulDescSetAttribute(
                                 g->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa),
                             OP, "A_SCALE_POINTER");
    if (s == D5_OK)
        s = d5__cublas_check(cublasLtMatmulDescSetAttribute(
                                 g->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb),
                             OP, "B_SCALE_POINTER");
    if (s == D5_OK)
        s = d5__cublas_check(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_8F_E4M3, n, n, n), OP,
                             "layout A");
    if (s == D5_OK)
        s = d5__cublas_check(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_8F_E4M3, n, n, n), OP,
                             "layout B");
    if (s == D5_OK)
        s = d5__cublas_check(cublasLtMatrixLayoutCreate(&g->lc, CUDA_R_16BF, n, n, n), OP,
                             "layout C");
    g->ws_size = 32u << 20;
    if (s == D5_OK) s = d5__cuda_malloc(&g->ws, g->ws_size, OP, "workspace");
    cublasLtMatmulPreference_t pref = NULL;
    if (s == D5_OK) s = d5__cublas_check(cublasLtMatmulPreferenceCreate(&pref), OP, "preference");
    if (s == D5_OK)
        s = d5__cublas_check(
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &g->ws_size, sizeof g->ws_size),
            OP, "workspace preference");
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    if (s == D5_OK)
        s = d5__cublas_check(cublasLtMatmulAlgoGetHeuristic(g->lt, g->op, g->la, g->lb, g->lc,
                                                            g->lc, pref, 1, &r, &found),
                             OP, "cublasLtMatmulAlgoGetHeuristic");
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (s == D5_OK && found < 1)
        s = d5_error(D5_ERR_UNSUPPORTED, "cuBLASLt has no FP8 kernel for this device");
    if (s == D5_OK) g->algo = r.algo;
    return s;
}

static void gemm_free(gemm *g)
{
    if (g->op) cublasLtMatmulDescDestroy(g->op);
    if (g->la) cublasLtMatrixLayoutDestroy(g->la);
    if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
    if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
    if (g->lt) cublasLtDestroy(g->lt);
    d5__cuda_free(g->a);
    d5__cuda_free(g->b);
    d5__cuda_free(g->c);
    d5__cuda_free(g->ws);
    d5__cuda_free(g->scales);
    d5__cublas_free(g->h);
}

static d5_status measure_gemm(int kind, int n, double max_time_s, d5_gpu_peak *out)
{
    gemm g;
    memset(&g, 0, sizeof g);
    g.kind = kind;
    g.n = n;
    size_t in = KINDS[kind].in, outb = KINDS[kind].out, count = (size_t)n * (size_t)n;
    const char *const OP = "GPU peaks";
    d5_status s = d5__cublas_create(&g.h, OP);
    if (s == D5_OK) s = d5__cuda_malloc(&g.a, count * in, OP, "A");
    if (s == D5_OK) s = d5__cuda_malloc(&g.b, count * in, OP, "B");
    if (s == D5_OK) s = d5__cuda_malloc(&g.c, count * outb, OP, "C");
    if (s == D5_OK) s = fill(kind, g.a, count, 1);
    if (s == D5_OK) s = fill(kind, g.b, count, 2);
    if (s == D5_OK && kind == D5_GPU_PEAK_FP8) s = fp8_setup(&g);
    double median = 0, best = 0;
    if (s == D5_OK) s = time_loop(run_gemm, &g, max_time_s, &median, &best);
    gemm_free(&g);
    out->size = n;
    if (s != D5_OK) {
        snprintf(out->note, sizeof out->note, "not measured: %s", d5_last_error());
        return s == D5_ERR_NOMEM ? s : D5_OK; /* a precision refused is a row, not a failure */
    }
    double ops = 2.0 * (double)n * (double)n * (double)n;
    out->measured = 1;
    out->median = ops / median;
    out->best = ops / best;
    return D5_OK;
}

typedef struct copy {
    void *src, *dst;
    size_t bytes;
} copy;

static d5_status run_copy(void *ctx)
{
    const copy *c = ctx;
    return d5__cuda_check(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, 0),
                          "GPU peaks", "cudaMemcpyAsync device to device");
}

d5_status d5__cuda_peaks(int32_t size, double max_time_s, d5_gpu_peaks *out)
{
    memset(out, 0, sizeof *out);
    d5_status s = d5__cuda_need_device("GPU peaks");
    if (s != D5_OK) return s;
    struct cudaDeviceProp p;
    s = d5__cuda_check(cudaGetDeviceProperties(&p, 0), "GPU peaks", "cudaGetDeviceProperties");
    if (s != D5_OK) return s;
    snprintf(out->device, sizeof out->device, "%s", p.name);
    for (int k = 0; k < D5_GPU_PEAK_KINDS && s == D5_OK; k++)
        s = measure_gemm(k, size, max_time_s, &out->peak[k]);
    /* The copy: 1 GiB, or a quarter of the device's memory if that is less. */
    copy c = {NULL, NULL, (size_t)1 << 30};
    if (c.bytes > p.totalGlobalMem / 4) c.bytes = p.totalGlobalMem / 4;
    if (s == D5_OK) s = d5__cuda_malloc(&c.src, c.bytes, "GPU peaks", "copy source");
    if (s == D5_OK) s = d5__cuda_malloc(&c.dst, c.bytes, "GPU peaks", "copy destination");
    if (s == D5_OK) s = d5__cuda_check(cudaMemset(c.src, 1, c.bytes), "GPU peaks", "cudaMemset");
    double median = 0, best = 0;
    if (s == D5_OK) s = time_loop(run_copy, &c, max_time_s, &median, &best);
    if (s == D5_OK) {
        out->copy_bytes = c.bytes;
        out->bandwidth_median = 2.0 * (double)c.bytes / median;
        out->bandwidth_best = 2.0 * (double)c.bytes / best;
    }
    d5__cuda_free(c.src);
    d5__cuda_free(c.dst);
    return s;
}
