/* bench/gpu: the bare cuBLAS loop that `d5 test-operator Gemm --backend cuda`
 * is measured against. One float32 product C = A B of M x K by K x N, row
 * major as d5's Gemm computes it (cuBLAS's column-major sgemm of the
 * transposed problem, CUBLAS_DEFAULT_MATH: no TF32, as the cuda backend), on
 * device buffers filled once; after warm-up runs, each repetition is timed
 * alone with two CUDA events on the default stream, and the median with its
 * 95% interval (d5's statistics) is printed in nanoseconds, with TFLOP/s:
 *
 *     d5-bench-cublas-gemm M N K [--reps R] [--json FILE]
 *
 * Exit status: 0 measured, 1 no CUDA device or a CUDA error, 2 bad usage. */
#include "d5/stats.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP 5

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 1;
    fprintf(stderr, "d5-bench-cublas-gemm: %s failed: %s (CUDA error %d)\n", what,
            cudaGetErrorString(e), (int)e);
    return 0;
}

static int cublas_ok(cublasStatus_t st, const char *what)
{
    if (st == CUBLAS_STATUS_SUCCESS) return 1;
    fprintf(stderr, "d5-bench-cublas-gemm: %s failed: %s\n", what, cublasGetStatusString(st));
    return 0;
}

static int parse(const char *s, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 1 || v > 65536) return 0;
    *out = v;
    return 1;
}

int main(int argc, char **argv)
{
    long m = 0, n = 0, k = 0, reps = 50;
    const char *json = NULL;
    int bad = argc < 4 || !parse(argv[1], &m) || !parse(argv[2], &n) || !parse(argv[3], &k);
    for (int i = 4; !bad && i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc && parse(argv[i + 1], &reps))
            i++;
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: d5-bench-cublas-gemm M N K [--reps R] [--json FILE] (sizes 1 to "
                        "65536, R 1 to 65536)\n");
        return 2;
    }
    int devices = 0;
    if (!cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount")) return 1;
    float *a = NULL, *b = NULL, *c = NULL;
    cublasHandle_t h = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    double *t = calloc((size_t)reps, sizeof *t);
    int ok = t && cuda_ok(cudaMalloc((void **)&a, (size_t)m * (size_t)k * 4), "cudaMalloc A") &&
             cuda_ok(cudaMalloc((void **)&b, (size_t)k * (size_t)n * 4), "cudaMalloc B") &&
             cuda_ok(cudaMalloc((void **)&c, (size_t)m * (size_t)n * 4), "cudaMalloc C") &&
             cuda_ok(cudaMemset(a, 0, (size_t)m * (size_t)k * 4), "cudaMemset") &&
             cuda_ok(cudaMemset(b, 0, (size_t)k * (size_t)n * 4), "cudaMemset") &&
             cublas_ok(cublasCreate(&h), "cublasCreate") &&
             cuda_ok(cudaEventCreate(&start), "cudaEventCreate") &&
             cuda_ok(cudaEventCreate(&stop), "cudaEventCreate");
    const float one = 1.0f, zero = 0.0f;
    for (long r = 0; ok && r < WARMUP + reps; r++) {
        ok = cuda_ok(cudaEventRecord(start, 0), "cudaEventRecord") &&
             /* Row major C = A B is column major C^T = B^T A^T. */
             cublas_ok(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                                   (int)n, a, (int)k, &zero, c, (int)n),
                       "cublasSgemm") &&
             cuda_ok(cudaEventRecord(stop, 0), "cudaEventRecord") &&
             cuda_ok(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0;
        if (ok) ok = cuda_ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        if (ok && r >= WARMUP) t[r - WARMUP] = (double)ms * 1e6;
    }
    d5_stats st;
    if (ok && d5_stats_compute(t, (size_t)reps, &st) != D5_OK) ok = 0;
    if (ok) {
        double flops = 2.0 * (double)m * (double)n * (double)k;
        printf("cublasSgemm %ldx%ldx%ld: median %.0f ns [%.0f, %.0f] over %ld reps, %.2f TFLOP/s\n",
               m, n, k, st.median, st.ci_low, st.ci_high, reps, flops / st.median * 1e-3);
        FILE *f = json ? fopen(json, "w") : NULL;
        if (json && !f) {
            fprintf(stderr, "d5-bench-cublas-gemm: cannot write %s\n", json);
            ok = 0;
        }
        if (f) {
            fprintf(f,
                    "{\"m\": %ld, \"n\": %ld, \"k\": %ld, \"reps\": %ld, \"median_ns\": %.1f, "
                    "\"ci_low_ns\": %.1f, \"ci_high_ns\": %.1f, \"tflops\": %.3f}\n",
                    m, n, k, reps, st.median, st.ci_low, st.ci_high, flops / st.median * 1e-3);
            fclose(f);
        }
    }
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (h) cublasDestroy(h);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    free(t);
    return ok ? 0 : 1;
}
