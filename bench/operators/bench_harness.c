/* bench/operators/harness: what d5's operator harness adds to the operator it
 * measures. The same sgemm (DeepBench's 1760x128x1760, float32) is timed two
 * ways in one run, on the same buffers:
 *   bare  - a plain loop calling cblas_sgemm, each call timed with clock_gettime;
 *   d5    - the blas backend's Gemm through d5_op_forward, timed by d5_measure_run
 *           exactly as `d5 test-operator` does.
 * The two alternate in blocks so that drift hits both alike; medians, CIs, their
 * ratio and a Mann-Whitney U test are printed. Deep500 claims < 1% overhead.
 *
 *     d5-bench-harness [--m 1760 --n 128 --k 1760] [--blocks 10] [--reps 50]
 */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include "d5/timer.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct ctx {
    d5_op *op;
    d5_tensor in[2], out;
} ctx;

static d5_status d5_once(void *arg)
{
    ctx *c = arg;
    return d5_op_forward(c->op, c->in, &c->out);
}

int main(int argc, char **argv)
{
    cli_wait_policy_restart(argv); /* d5's OpenMP wait policy, as the d5 tool has it */
    int m = 1760, n = 128, k = 1760, blocks = 10, reps = 50;
    const cli_opt opts[] = {
        {"m", CLI_INT, &m, "M", "rows of A and C (default 1760)", 1, 100000},
        {"n", CLI_INT, &n, "N", "columns of B and C (default 128)", 1, 100000},
        {"k", CLI_INT, &k, "K", "inner dimension (default 1760)", 1, 100000},
        {"blocks", CLI_INT, &blocks, "B", "alternating blocks per side (default 10)", 1, 1000},
        {"reps", CLI_INT, &reps, "R", "calls per block (default 50)", 1, 100000},
    };
    const cli_spec spec = {
        CLI_SPEC("bench-harness", "[--m M --n N --k K] [--blocks B] [--reps R]",
                 "Overhead of d5's operator harness over a bare cblas_sgemm loop.", opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    cli_echo(stdout, &spec);

    const d5_op_desc *gemm;
    d5_status s = d5_op_find("Gemm", "blas", &gemm);
    d5_tensor_desc d[2];
    ctx c;
    memset(&c, 0, sizeof c);
    if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 2, (const int64_t[]){m, k}, &d[0]);
    if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 2, (const int64_t[]){k, n}, &d[1]);
    if (s == D5_OK) s = d5_op_create_desc(gemm, d, 2, NULL, 0, &c.op);
    if (s == D5_OK) s = d5_tensor_alloc(&d[0], &c.in[0]);
    if (s == D5_OK) s = d5_tensor_alloc(&d[1], &c.in[1]);
    if (s == D5_OK) s = d5_tensor_alloc(d5_op_output_desc(c.op, 0), &c.out);
    if (s != D5_OK) return cli_fail("bench-harness", s);
    d5_rng rng;
    d5_rng_seed(&rng, 1);
    d5_tensor_fill_uniform(&c.in[0], &rng, -1, 1);
    d5_tensor_fill_uniform(&c.in[1], &rng, -1, 1);
    const float *a = c.in[0].data, *b = c.in[1].data;
    float *y = c.out.data;

    double *bare = malloc(sizeof(double) * (size_t)(blocks * reps)), *ours = NULL;
    size_t nb = 0, no = 0, cap = (size_t)(blocks * reps) * 2;
    ours = malloc(sizeof(double) * cap);
    for (int w = 0; w < 5; w++) /* warm-up of both paths */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, y,
                    n);
    for (int blk = 0; blk < blocks && s == D5_OK; blk++) {
        for (int r = 0; r < reps; r++) {
            double t0 = (double)d5_monotonic_ns();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f,
                        y, n);
            bare[nb++] = (double)d5_monotonic_ns() - t0;
        }
        d5_measure_params mp = d5_measure_default_params();
        mp.warmup = 1;
        mp.min_reps = mp.max_reps = (uint32_t)reps;
        mp.max_time_s = 1e6;
        d5_measurement meas;
        s = d5_measure_run(d5_once, &c, &mp, &meas);
        if (s == D5_OK) {
            for (size_t i = 0; i < meas.n && no < cap; i++) ours[no++] = meas.samples[i];
            d5_measurement_free(&meas);
        }
    }
    d5_stats sb, so;
    d5_mwu u;
    if (s == D5_OK) s = d5_stats_compute(bare, nb, &sb);
    if (s == D5_OK) s = d5_stats_compute(ours, no, &so);
    if (s == D5_OK) s = d5_mann_whitney(ours, no, bare, nb, &u);
    if (s != D5_OK) return cli_fail("bench-harness", s);
    double flops = 2.0 * m * n * k;
    printf("%-34s %12s  %-28s %6s %9s\n", "sgemm MxNxK", "median", "95% CI", "n", "GFLOP/s");
    printf("%-34s %9.1f us  [%.1f, %.1f] us %12zu %9.1f\n", "bare cblas_sgemm loop",
           sb.median * 1e-3, sb.ci_low * 1e-3, sb.ci_high * 1e-3, sb.n, flops / sb.median);
    printf("%-34s %9.1f us  [%.1f, %.1f] us %12zu %9.1f\n", "d5 Gemm (blas) via d5_measure_run",
           so.median * 1e-3, so.ci_low * 1e-3, so.ci_high * 1e-3, so.n, flops / so.median);
    printf("\nd5 / bare median ratio: %.4f (Mann-Whitney U p = %.3g; %d x %d x %d)\n",
           so.median / sb.median, u.p_value, m, n, k);
    free(bare);
    free(ours);
    d5_tensor_free(&c.in[0]);
    d5_tensor_free(&c.in[1]);
    d5_tensor_free(&c.out);
    d5_op_free(c.op);
    return D5_EXIT_OK;
}
