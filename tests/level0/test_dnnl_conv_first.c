/* The dnnl backend's C kernels for small-channel 2-d Conv (conv_first.c,
 * conv_wgrad.c): the forward, weight and bias gradients against the ref
 * backend's Conv, the kernels of every instruction set this CPU runs against
 * sums computed here in double, run-to-run bit identity, and the geometries
 * left to oneDNN. */
#include "op_support.h"

#ifdef D5_TEST_DNNL
#include "../../level0_operators/dnnl/conv_wgrad.h"
#endif

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* A Conv: X (n, c, h, w), W (m, c, kh, kw), pads (top, left, bottom, right). */
typedef struct conv_case {
    int64_t n, c, m, h, w, kh, kw;
    int64_t pads[4]; /* ONNX's order: top, left, bottom, right */
    int bias;
} conv_case;

/* 1 and 3 (and 2, 4) input channels; 5x5 pad 2, 3x3 pad 1, 7x7 pad 3, a
 * 1x11 kernel (two passes over a kernel row), asymmetric pads and no pad;
 * widths under, between and over whole vectors; batch 1 to 5. */
static const conv_case cases[] = {
    {5, 1, 6, 28, 28, 5, 5, {2, 2, 2, 2}, 1},  {5, 1, 6, 28, 28, 5, 5, {2, 2, 2, 2}, 0},
    {1, 3, 16, 13, 13, 3, 3, {1, 1, 1, 1}, 0}, {5, 3, 7, 30, 30, 7, 7, {3, 3, 3, 3}, 1},
    {1, 1, 9, 13, 30, 3, 5, {1, 2, 0, 3}, 1},  {2, 4, 17, 9, 40, 1, 11, {0, 5, 0, 5}, 0},
    {3, 2, 5, 6, 7, 5, 3, {0, 0, 0, 0}, 1},
};
#define NCASES (sizeof cases / sizeof cases[0])

static void fill(d5_tensor *t, uint64_t seed)
{
    d5_rng rng;
    d5_rng_seed(&rng, seed);
    float *v = t->data;
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t->desc); i++)
        v[i] = (float)(2.0 * d5_rng_uniform(&rng) - 1.0);
}

/* X, W, B and dY of a case, random. */
static void make_inputs(const conv_case *k, d5_tensor in[3], d5_tensor *gy)
{
    in[0] = tf32(4, SHAPE(k->n, k->c, k->h, k->w), NULL);
    in[1] = tf32(4, SHAPE(k->m, k->c, k->kh, k->kw), NULL);
    in[2] = tf32(1, SHAPE(k->m), NULL);
    int64_t oh = k->h + k->pads[0] + k->pads[2] - k->kh + 1;
    int64_t ow = k->w + k->pads[1] + k->pads[3] - k->kw + 1;
    *gy = tf32(4, SHAPE(k->n, k->m, oh, ow), NULL);
    for (int i = 0; i < 3; i++) fill(&in[i], 11 + (uint64_t)i);
    fill(gy, 17);
}

static void free_all(d5_tensor *t, int n)
{
    for (int i = 0; i < n; i++) d5_tensor_free(&t[i]);
}

/* Y, and the gradients of X (when want_x), W and B, of `backend`'s Conv;
 * `impl` gets what the instance reports after backward. */
static void run_conv(const char *backend, const conv_case *k, const d5_tensor in[3],
                     const d5_tensor *gy, int want_x, d5_tensor *y, d5_tensor g[3],
                     d5_op_impl *impl)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("Conv", backend, &desc), D5_OK, "%s", d5_last_error());
    d5_attr items[] = {attr_ints("pads", k->pads, 4)};
    d5_attrs attrs = {items, 1};
    int32_t nin = k->bias ? 3 : 2;
    d5_tensor_desc descs[3] = {in[0].desc, in[1].desc, in[2].desc};
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(desc, descs, nin, &attrs, 1, &op), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), y), D5_OK);
    cr_assert_eq(d5_op_forward(op, in, y), D5_OK, "%s", d5_last_error());
    for (int i = 0; i < 3; i++) {
        g[i] = (d5_tensor){.desc = in[i].desc};
        if ((i > 0 || want_x) && i < nin) cr_assert_eq(d5_tensor_alloc(&in[i].desc, &g[i]), D5_OK);
    }
    cr_assert_eq(d5_op_backward(op, gy, in, y, g), D5_OK, "%s", d5_last_error());
    if (impl) d5_op_impl_get(op, impl);
    d5_op_free(op);
}

/* max |got - want| <= 1e-5 max |want|: float32 rounding of sums. */
static void expect_close_f(const float *got, const float *want, int64_t n, const char *what,
                           size_t ci)
{
    double big = 0, worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(want[i]));
    for (int64_t i = 0; i < n; i++)
        if (fabs((double)got[i] - want[i]) > worst) {
            worst = fabs((double)got[i] - want[i]);
            at = i;
        }
    cr_assert(worst <= 1e-5 * big,
              "case %zu %s: |got - want| %.3g at %lld (got %.9g want %.9g), max %g", ci, what,
              worst, (long long)at, (double)got[at], (double)want[at], big);
}

Test(dnnl_conv_first, forward_and_gradients_match_ref)
{
    need_dnnl();
    for (size_t ci = 0; ci < NCASES; ci++) {
        const conv_case *k = &cases[ci];
        d5_tensor in[3], gy, y, ry, g[3], rg[3];
        make_inputs(k, in, &gy);
        d5_op_impl impl;
        int want_x = ci % 2 == 0; /* the gradient of X (oneDNN's) in every other case */
        run_conv("dnnl", k, in, &gy, want_x, &y, g, &impl);
        run_conv("ref", k, in, &gy, want_x, &ry, rg, NULL);
        cr_expect_str_eq(impl.forward, "d5:conv_first", "case %zu", ci);
        cr_expect_str_eq(impl.backward_weights, "d5:conv_wgrad", "case %zu", ci);
        expect_close_f(y.data, ry.data, d5_tensor_desc_numel(&y.desc), "Y", ci);
        expect_close_f(g[1].data, rg[1].data, d5_tensor_desc_numel(&g[1].desc), "dW", ci);
        if (k->bias) expect_close_f(g[2].data, rg[2].data, k->m, "dB", ci);
        if (want_x)
            expect_close_f(g[0].data, rg[0].data, d5_tensor_desc_numel(&g[0].desc), "dX", ci);
        free_all(in, 3);
        free_all(g, 3);
        free_all(rg, 3);
        d5_tensor_free(&gy);
        d5_tensor_free(&y);
        d5_tensor_free(&ry);
    }
}

static int same_bits(const d5_tensor *a, const d5_tensor *b)
{
    return memcmp(a->data, b->data, (size_t)d5_tensor_desc_numel(&a->desc) * sizeof(float)) == 0;
}

/* With a given number of threads every run gives the same bits; the forward
 * gives them with any number of threads. */
Test(dnnl_conv_first, results_repeat_bit_for_bit)
{
    need_dnnl();
    const conv_case *k = &cases[3];
    d5_tensor in[3], gy, y[3], g[3][3];
    make_inputs(k, in, &gy);
    int32_t threads[3] = {2, 2, 3};
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(d5_threads_set(threads[r]), D5_OK);
        run_conv("dnnl", k, in, &gy, 0, &y[r], g[r], NULL);
    }
    cr_expect(same_bits(&y[0], &y[1]) && same_bits(&y[0], &y[2]), "Y differs between runs");
    cr_expect(same_bits(&g[0][1], &g[1][1]), "dW differs between two runs on 2 threads");
    cr_expect(same_bits(&g[0][2], &g[1][2]), "dB differs between two runs on 2 threads");
    for (int r = 0; r < 3; r++) {
        free_all(g[r], 3);
        d5_tensor_free(&y[r]);
    }
    free_all(in, 3);
    d5_tensor_free(&gy);
}

/* Y of a case from `backend`'s `op` (Conv, or FusedConv with ReLU), in ONNX's
 * layout or, with blocked set, written by oneDNN in nChw16c and converted
 * back here; `impl` gets the forward's implementation. */
static void forward_op(const char *backend, const char *op_type, const conv_case *k,
                       const d5_tensor in[3], int blocked, d5_tensor *y, d5_op_impl *impl)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find(op_type, backend, &desc), D5_OK, "%s", d5_last_error());
    int fused = strcmp(op_type, "FusedConv") == 0;
    d5_attr items[] = {attr_ints("pads", k->pads, 4),
                       fused ? attr_string("activation", "Relu") : attr_int("group", 1),
                       attr_int(D5_ATTR_BLOCKED, D5_BLOCKED_Y)};
    d5_attrs attrs = {items, blocked ? 3 : 2};
    d5_tensor_desc descs[3] = {in[0].desc, in[1].desc, in[2].desc};
    d5_op *op;
    cr_assert_eq(d5_op_create_desc(desc, descs, k->bias ? 3 : 2, &attrs, 1, &op), D5_OK, "%s",
                 d5_last_error());
    d5_op_impl_get(op, impl);
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), y), D5_OK);
    d5_tensor out = *y;
    if (blocked) cr_assert_eq(d5_tensor_alloc(&y->desc, &out), D5_OK);
    cr_assert_eq(d5_op_forward(op, in, &out), D5_OK, "%s", d5_last_error());
    d5_op_free(op);
    if (!blocked) return;
    const int64_t *s = y->desc.shape, hw = s[2] * s[3];
    const float *b = out.data;
    float *x = y->data;
    for (int64_t n = 0; n < s[0]; n++)
        for (int64_t c = 0; c < s[1]; c++)
            for (int64_t i = 0; i < hw; i++)
                x[(n * s[1] + c) * hw + i] = b[((n * (s[1] / 16) + c / 16) * hw + i) * 16 + c % 16];
    d5_tensor_free(&out);
}

/* A ReLU's output: no value below +0, some clamped, the ref backend's
 * FusedConv within float32 rounding. */
static void check_relu(const conv_case *k, const d5_tensor in[3], const d5_tensor *y, size_t ci)
{
    d5_tensor yr;
    d5_op_impl impl;
    forward_op("ref", "FusedConv", k, in, 0, &yr, &impl);
    int64_t n = d5_tensor_desc_numel(&y->desc), clamped = 0;
    const float *v = y->data;
    for (int64_t i = 0; i < n; i++) {
        cr_assert(v[i] >= 0 && !signbit(v[i]), "case %zu: Y[%lld] = %g after ReLU", ci,
                  (long long)i, v[i]);
        clamped += v[i] == 0;
    }
    cr_expect(clamped > 0 && clamped < n, "case %zu: %lld of %lld sums were clamped", ci,
              (long long)clamped, (long long)n);
    expect_close_f(y->data, yr.data, n, "Y against ref", ci);
    d5_tensor_free(&yr);
}

/* Where oneDNN runs its jit:avx512_core kernel, the C forward of `op_type`
 * gives its bits, with and without a bias: a network computes the same values
 * whether the executor keeps a first layer's output in oneDNN's blocked layout
 * or not. FusedConv with ReLU (what the optimiser makes of Conv + Relu) writes
 * +0 for a negative sum, as oneDNN's post-op does. */
static void check_against_onednn(const char *op_type)
{
    need_dnnl();
    const conv_case same[] = {{2, 3, 16, 32, 32, 3, 3, {1, 1, 1, 1}, 0},
                              {3, 1, 32, 28, 28, 5, 5, {2, 2, 2, 2}, 1}};
    for (size_t ci = 0; ci < sizeof same / sizeof same[0]; ci++) {
        d5_tensor in[3], gy, y, yb;
        make_inputs(&same[ci], in, &gy);
        d5_op_impl impl, impl_b;
        forward_op("dnnl", op_type, &same[ci], in, 0, &y, &impl);
        forward_op("dnnl", op_type, &same[ci], in, 1, &yb, &impl_b);
        cr_expect_str_eq(impl.forward, "d5:conv_first", "%s, case %zu", op_type, ci);
        if (strcmp(op_type, "FusedConv") == 0) check_relu(&same[ci], in, &y, ci);
        if (strcmp(impl_b.forward, "jit:avx512_core") == 0)
            cr_expect(same_bits(&y, &yb), "%s, case %zu: Y differs from oneDNN's", op_type, ci);
        else
            cr_log_info("oneDNN runs %s here: its bits are not compared", impl_b.forward);
        free_all(in, 3);
        d5_tensor_free(&gy);
        d5_tensor_free(&y);
        d5_tensor_free(&yb);
    }
}

Test(dnnl_conv_first, forward_equals_onednn_bit_for_bit)
{
    check_against_onednn("Conv");
}

Test(dnnl_conv_first, fused_relu_equals_onednn_and_ref)
{
    check_against_onednn("FusedConv");
}

/* Strides, dilations, groups and five input channels stay with oneDNN. */
Test(dnnl_conv_first, other_geometries_stay_with_onednn)
{
    need_dnnl();
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("Conv", "dnnl", &desc), D5_OK);
    struct {
        int64_t x[4], w[4];
        d5_attr attr;
    } other[] = {
        {{1, 1, 12, 12}, {4, 1, 3, 3}, attr_ints("strides", SHAPE(2, 2), 2)},
        {{1, 1, 12, 12}, {4, 1, 3, 3}, attr_ints("dilations", SHAPE(1, 2), 2)},
        {{1, 2, 12, 12}, {4, 1, 3, 3}, attr_int("group", 2)},
        {{1, 5, 12, 12}, {4, 5, 3, 3}, attr_ints("pads", SHAPE(1, 1, 1, 1), 4)},
    };
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        d5_tensor_desc d[2];
        cr_assert_eq(d5_tensor_desc_make(D5_F32, 4, other[i].x, &d[0]), D5_OK);
        cr_assert_eq(d5_tensor_desc_make(D5_F32, 4, other[i].w, &d[1]), D5_OK);
        d5_attrs attrs = {&other[i].attr, 1};
        d5_op *op;
        cr_assert_eq(d5_op_create_desc(desc, d, 2, &attrs, 1, &op), D5_OK, "%s", d5_last_error());
        d5_op_impl impl;
        d5_op_impl_get(op, &impl);
        cr_expect(strncmp(impl.forward, "d5:", 3) != 0, "case %zu runs %s", i, impl.forward);
        d5_op_free(op);
    }
}

#ifdef D5_TEST_DNNL
/* The geometry d5__conv_geometry gives for a case. */
static d5_conv_geometry geometry(const conv_case *k)
{
    d5_conv_geometry g = {.has_bias = k->bias,
                          .n = 2,
                          .batch = k->n,
                          .in_channels = k->c,
                          .out_channels = k->m,
                          .group = 1};
    const int64_t in[2] = {k->h, k->w}, kernel[2] = {k->kh, k->kw};
    for (int i = 0; i < 2; i++) {
        g.in[i] = in[i];
        g.kernel[i] = kernel[i];
        g.strides[i] = g.dilations[i] = 1;
        g.pads_begin[i] = k->pads[i];
        g.pads_end[i] = k->pads[2 + i];
        g.out[i] = in[i] + k->pads[i] + k->pads[2 + i] - kernel[i] + 1;
    }
    g.in_size = g.in[0] * g.in[1];
    g.out_size = g.out[0] * g.out[1];
    g.kernel_size = g.kernel[0] * g.kernel[1];
    return g;
}

/* Y, dW and dB of a case in double, straight from the definitions. */
static void reference(const conv_case *k, const d5_tensor in[3], const d5_tensor *gy, double *y,
                      double *dw, double *db)
{
    const float *x = in[0].data, *w = in[1].data, *b = in[2].data, *d = gy->data;
    const int64_t oh = gy->desc.shape[2], ow = gy->desc.shape[3];
    memset(dw, 0, (size_t)(k->m * k->c * k->kh * k->kw) * sizeof *dw);
    memset(db, 0, (size_t)k->m * sizeof *db);
    for (int64_t n = 0; n < k->n; n++)
        for (int64_t m = 0; m < k->m; m++)
            for (int64_t r = 0; r < oh; r++)
                for (int64_t q = 0; q < ow; q++) {
                    int64_t o = ((n * k->m + m) * oh + r) * ow + q;
                    double s = k->bias ? b[m] : 0;
                    db[m] += d[o];
                    for (int64_t c = 0; c < k->c; c++)
                        for (int64_t i = 0; i < k->kh; i++)
                            for (int64_t j = 0; j < k->kw; j++) {
                                int64_t ir = r + i - k->pads[0], iq = q + j - k->pads[1];
                                if (ir < 0 || ir >= k->h || iq < 0 || iq >= k->w) continue;
                                double xv = x[((n * k->c + c) * k->h + ir) * k->w + iq];
                                int64_t wi = ((m * k->c + c) * k->kh + i) * k->kw + j;
                                s += xv * w[wi];
                                dw[wi] += xv * d[o];
                            }
                    y[o] = s;
                }
}

static void expect_close_d(const float *got, const double *want, int64_t n, const char *what,
                           const char *isa, size_t ci)
{
    double big = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(want[i]));
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(got[i] - want[i]));
    cr_assert(worst <= 1e-5 * big, "%s, case %zu, %s: max |got - want| %.3g, max |want| %g", isa,
              ci, what, worst, big);
}

/* Each instruction set's kernels (generic C everywhere; AVX2 and AVX-512
 * where this CPU has them), compiled into this test from the backend's
 * sources (on one thread where the test is built without OpenMP). */
Test(dnnl_conv_first, every_instruction_set_matches_double_sums)
{
    const char *isas[] = {"generic", "avx2", "avx512"};
    int ran = 0;
    for (size_t ci = 0; ci < NCASES; ci++) {
        const conv_case *k = &cases[ci];
        d5_tensor in[3], gy;
        make_inputs(k, in, &gy);
        d5_conv_geometry g = geometry(k);
        cr_assert(d5__conv_wgrad_fits(&g), "case %zu", ci);
        int64_t ny = d5_tensor_desc_numel(&gy.desc), nw = d5_tensor_desc_numel(&in[1].desc);
        double *want = d5_alloc((size_t)(ny + nw + k->m) * sizeof(double), "test");
        cr_assert(want);
        reference(k, in, &gy, want, want + ny, want + ny + nw);
        d5_tensor y = tf32(4, gy.desc.shape, NULL), dw = tf32(4, in[1].desc.shape, NULL);
        d5_tensor db = tf32(1, SHAPE(k->m), NULL);
        for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
            const d5_conv_kernels *kern = d5__conv_kernels_named(isas[i]);
            if (!kern) continue;
            ran++;
            cr_assert_str_eq(kern->isa, isas[i]);
            cr_assert_eq(d5__conv_first_run(kern, &g, in[0].data, in[1].data,
                                            k->bias ? in[2].data : NULL, 0, y.data),
                         D5_OK);
            d5_conv_wgrad wg;
            cr_assert_eq(d5__conv_wgrad_init(&wg, &g, kern), D5_OK);
            cr_assert_eq(d5__conv_wgrad_run(&wg, in[0].data, gy.data, dw.data, db.data), D5_OK);
            d5__conv_wgrad_free(&wg);
            expect_close_d(y.data, want, ny, "Y", isas[i], ci);
            /* With ReLU: the same sums, then +0 for those not above 0. */
            d5_tensor yr = tf32(4, gy.desc.shape, NULL);
            cr_assert_eq(d5__conv_first_run(kern, &g, in[0].data, in[1].data,
                                            k->bias ? in[2].data : NULL, 1, yr.data),
                         D5_OK);
            const float *a = y.data, *r = yr.data;
            for (int64_t e = 0; e < ny; e++) {
                float keep = a[e] > 0 ? a[e] : 0.0f;
                cr_assert(memcmp(&keep, &r[e], sizeof keep) == 0,
                          "%s, case %zu: ReLU of %g gives %g", isas[i], ci, a[e], r[e]);
            }
            d5_tensor_free(&yr);
            expect_close_d(dw.data, want + ny, nw, "dW", isas[i], ci);
            expect_close_d(db.data, want + ny + nw, k->m, "dB", isas[i], ci);
        }
        d5_free(want);
        free_all(in, 3);
        d5_tensor_free(&gy);
        d5_tensor_free(&y);
        d5_tensor_free(&dw);
        d5_tensor_free(&db);
    }
    cr_assert_geq(ran, (int)NCASES, "the generic kernels at least");
}
#endif
