/* The dnnl BatchNormalization with X and dX, Y and dY in oneDNN's blocked
 * layout (D5_ATTR_BLOCKED): forward and every gradient against the same
 * operator on ONNX's plain layout, the data converted by the loops below
 * (nChw16c with AVX-512, nChw8c otherwise), and the shapes it declines. The
 * plain operator is checked against ref on the same data. */
#define _GNU_SOURCE /* setenv */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define N  3
#define H  5
#define W  7
#define HW (H * W)

/* Channels a block, by the rule of dnnl_util.c: oneDNN's AVX-512 core kernels
 * (F, BW, VL, DQ) unless ONEDNN_MAX_CPU_ISA holds it below them. */
static int64_t channel_block(void)
{
    const char *isa = getenv("ONEDNN_MAX_CPU_ISA");
    if (isa && *isa && strncasecmp(isa, "AVX512", 6) != 0 && strcasecmp(isa, "ALL") != 0) return 8;
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    return avx512 ? 16 : 8;
}

/* Element (n, c, s) of an N x C x HW tensor in each layout. */
static int64_t plain_at(int64_t c_all, int64_t n, int64_t c, int64_t s)
{
    return (n * c_all + c) * HW + s;
}

static int64_t blocked_at(int64_t c_all, int64_t blk, int64_t n, int64_t c, int64_t s)
{
    return ((n * (c_all / blk) + c / blk) * HW + s) * blk + c % blk;
}

/* dst = src converted to (to_blocked) or from the blocked layout. */
static void convert(const float *src, float *dst, int64_t c_all, int64_t blk, int to_blocked)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < c_all; c++)
            for (int64_t s = 0; s < HW; s++) {
                int64_t p = plain_at(c_all, n, c, s), b = blocked_at(c_all, blk, n, c, s);
                if (to_blocked)
                    dst[b] = src[p];
                else
                    dst[p] = src[b];
            }
}

/* A copy of t (an N x C x H x W tensor) in the blocked layout, or in the plain
 * one from blocked; the caller frees it. */
static d5_tensor converted(const d5_tensor *t, int64_t blk, int to_blocked)
{
    d5_tensor r;
    cr_assert_eq(d5_tensor_alloc(&t->desc, &r), D5_OK);
    convert(t->data, r.data, t->desc.shape[1], blk, to_blocked);
    return r;
}

/* |got - want| <= tol * max |want| over the tensor (and 1e-30). */
static void expect_close(const d5_tensor *got, const d5_tensor *want, double tol, const char *what)
{
    int64_t n = d5_tensor_desc_numel(&want->desc);
    const float *g = got->data, *w = want->data;
    double scale = 1e-30;
    for (int64_t e = 0; e < n; e++) scale = fmax(scale, fabs(w[e]));
    for (int64_t e = 0; e < n; e++)
        cr_assert(isfinite(g[e]) && fabs(g[e] - w[e]) <= tol * scale,
                  "%s: element %lld is %.9g, expected %.9g (max |value| %g)", what, (long long)e,
                  g[e], w[e], scale);
}

typedef struct run {
    d5_tensor y[3], g[5];
} run;

static void run_free(run *r, int32_t nout)
{
    for (int32_t k = 0; k < nout; k++) d5_tensor_free(&r->y[k]);
    for (int32_t i = 0; i < 5; i++) d5_tensor_free(&r->g[i]);
}

/* Forward and backward of BatchNormalization on `backend` with the blocked
 * bits `blocked` (0: none); x and dy are given in the plain layout and
 * converted here where blocked, and Y and dX are converted back. */
static void bn_run(const char *backend, int64_t blocked, int training, int32_t nout,
                   const d5_tensor *in, const d5_tensor *gout, int64_t blk, run *r)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("BatchNormalization", backend, &desc), D5_OK);
    d5_attr a[] = {attr_int("training_mode", training), attr_float("momentum", 0.8),
                   attr_int(D5_ATTR_BLOCKED, blocked)};
    d5_attrs attrs = {a, blocked ? 3 : 2};
    d5_tensor_desc descs[5];
    for (int32_t i = 0; i < 5; i++) descs[i] = in[i].desc;
    d5_op *op = NULL;
    cr_assert_eq(d5_op_create_desc(desc, descs, 5, &attrs, nout, &op), D5_OK, "%s",
                 d5_last_error());
    d5_tensor xin[5], gy[3];
    memcpy(xin, in, sizeof xin);
    memcpy(gy, gout, (size_t)nout * sizeof *gy);
    if (blocked & D5_BLOCKED_X) xin[0] = converted(&in[0], blk, 1);
    if (blocked & D5_BLOCKED_Y) gy[0] = converted(&gout[0], blk, 1);
    for (int32_t k = 0; k < nout; k++)
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, k), &r->y[k]), D5_OK);
    for (int32_t i = 0; i < 5; i++) cr_assert_eq(d5_tensor_alloc(&in[i].desc, &r->g[i]), D5_OK);
    cr_assert_eq(d5_op_forward(op, xin, r->y), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_backward(op, gy, xin, r->y, r->g), D5_OK, "%s", d5_last_error());
    if (blocked & D5_BLOCKED_Y) {
        d5_tensor t = converted(&r->y[0], blk, 0);
        d5_tensor_free(&r->y[0]);
        r->y[0] = t;
    }
    if (blocked & D5_BLOCKED_X) {
        d5_tensor t = converted(&r->g[0], blk, 0);
        d5_tensor_free(&r->g[0]);
        r->g[0] = t;
        d5_tensor_free(&xin[0]);
    }
    if (blocked & D5_BLOCKED_Y) d5_tensor_free(&gy[0]);
    d5_op_free(op);
}

static const char *const names[5] = {"X", "scale", "B", "input_mean", "input_var"};

/* For each of X, Y and both blocked: the outputs and all five gradients
 * equal the plain operator's, which equals ref's. */
static void same_as_plain(int64_t channels, int training)
{
    need_dnnl();
    int64_t blk = channel_block();
    int32_t nout = training ? 3 : 1;
    d5_tensor in[5], gout[3];
    in[0] = tf32(4, SHAPE(N, channels, H, W), NULL);
    for (int32_t i = 1; i < 5; i++) in[i] = tf32(1, &channels, NULL);
    d5_rng rng;
    d5_rng_seed(&rng, 21 + (uint64_t)channels + (uint64_t)training);
    d5_tensor_fill_uniform(&in[0], &rng, -2, 3);
    for (int32_t i = 1; i < 4; i++) d5_tensor_fill_uniform(&in[i], &rng, -1, 1);
    d5_tensor_fill_uniform(&in[4], &rng, 0.2, 1.2);
    gout[0] = tf32(4, SHAPE(N, channels, H, W), NULL);
    d5_tensor_fill_uniform(&gout[0], &rng, -1, 1);
    for (int32_t k = 1; k < nout; k++) {
        gout[k] = tf32(1, &channels, NULL);
        d5_tensor_fill_uniform(&gout[k], &rng, -1, 1);
    }
    run plain, ref;
    bn_run("dnnl", 0, training, nout, in, gout, blk, &plain);
    bn_run("ref", 0, training, nout, in, gout, blk, &ref);
    char what[96];
    for (int32_t k = 0; k < nout; k++) {
        snprintf(what, sizeof what, "plain C=%lld output %d", (long long)channels, k);
        expect_close(&plain.y[k], &ref.y[k], 1e-4, what);
    }
    for (int32_t i = 0; i < 5; i++) {
        snprintf(what, sizeof what, "plain C=%lld d%s", (long long)channels, names[i]);
        expect_close(&plain.g[i], &ref.g[i], 1e-4, what);
    }
    const int64_t modes[] = {D5_BLOCKED_X, D5_BLOCKED_Y, D5_BLOCKED_X | D5_BLOCKED_Y};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        run got;
        bn_run("dnnl", modes[m], training, nout, in, gout, blk, &got);
        for (int32_t k = 0; k < nout; k++) {
            snprintf(what, sizeof what, "blocked %lld, C=%lld, training %d: output %d",
                     (long long)modes[m], (long long)channels, training, k);
            expect_close(&got.y[k], &plain.y[k], 1e-5, what);
        }
        for (int32_t i = 0; i < 5; i++) {
            snprintf(what, sizeof what, "blocked %lld, C=%lld, training %d: d%s",
                     (long long)modes[m], (long long)channels, training, names[i]);
            expect_close(&got.g[i], &plain.g[i], 1e-5, what);
        }
        run_free(&got, nout);
    }
    run_free(&plain, nout);
    run_free(&ref, nout);
    for (int32_t i = 0; i < 5; i++) d5_tensor_free(&in[i]);
    for (int32_t k = 0; k < nout; k++) d5_tensor_free(&gout[k]);
}

Test(dnnl_bn_blocked, inference_matches_plain)
{
    same_as_plain(16, 0);
    same_as_plain(32, 0);
}

Test(dnnl_bn_blocked, training_matches_plain)
{
    same_as_plain(16, 1);
    same_as_plain(32, 1);
}

/* oneDNN held to AVX2 (read at its first use in this process): blocks of 8. */
Test(dnnl_bn_blocked, training_matches_plain_in_blocks_of_8)
{
    need_dnnl();
    if (!__builtin_cpu_supports("avx2")) cr_skip_test("this CPU has no AVX2");
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
    cr_assert_eq(channel_block(), 8);
    same_as_plain(16, 0);
    same_as_plain(16, 1);
    same_as_plain(32, 1);
}

static void declined(const d5_tensor_desc *x, int64_t blocked, const char *text)
{
    need_dnnl();
    int64_t c = x->shape[1];
    d5_tensor_desc in[5] = {*x};
    for (int32_t i = 1; i < 5; i++) cr_assert_eq(d5_tensor_desc_make(D5_F32, 1, &c, &in[i]), D5_OK);
    d5_attr a[] = {attr_int("training_mode", 1), attr_int(D5_ATTR_BLOCKED, blocked)};
    d5_attrs attrs = {a, 2};
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("BatchNormalization", "dnnl", &desc), D5_OK);
    d5_op *op = NULL;
    d5_status s = d5_op_create_desc(desc, in, 5, &attrs, 1, &op);
    cr_assert_eq(s, D5_ERR_UNSUPPORTED, "got %s (%s)", d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "'%s' lacks '%s'", d5_last_error(), text);
    cr_assert(strstr(d5_last_error(), "BatchNormalization"), "%s", d5_last_error());
}

Test(dnnl_bn_blocked, declines_what_the_layout_cannot_hold)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(N, 6, H, W));
    declined(&x, D5_BLOCKED_X, "channels in multiples of");
    declined(&x, D5_BLOCKED_Y, "channels in multiples of");
    x = op_fdesc(3, SHAPE(N, 16, HW));
    declined(&x, D5_BLOCKED_X, "4-d X");
    x = op_fdesc(4, SHAPE(N, 16, H, W));
    declined(&x, D5_BLOCKED_Z, "only X");
}
