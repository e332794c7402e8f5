/* The dnnl backend's int8 operators (MatMulInteger, QLinearMatMul,
 * ConvInteger, QLinearConv, QuantizeLinear, DequantizeLinear) on random
 * uint8 and int8 data, against a direct computation of ONNX's formulas in
 * this file and, where it is built, against the ref backend: several shapes,
 * batch broadcasting, groups, pads, strides and dilations, zero points and
 * scales known at create or given at run time, and the cases the backend
 * declines. */
#include "op_support.h"
#include "support.h"
#include "d5/precision.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* need_dnnl, then a generator seeded with `seed`. */
static d5_rng need_dnnl_rng(uint64_t seed)
{
    need_dnnl();
    d5_rng rng;
    d5_rng_seed(&rng, seed);
    return rng;
}

static double get(const d5_tensor *t, int64_t i)
{
    switch (t->desc.dtype) {
    case D5_U8: return ((const uint8_t *)t->data)[i];
    case D5_I8: return ((const int8_t *)t->data)[i];
    case D5_I32: return ((const int32_t *)t->data)[i];
    case D5_F32: return ((const float *)t->data)[i];
    default: cr_assert_fail("unexpected dtype %d", t->desc.dtype); return 0;
    }
}

static void set(d5_tensor *t, int64_t i, double v)
{
    switch (t->desc.dtype) {
    case D5_U8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case D5_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case D5_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case D5_F32: ((float *)t->data)[i] = (float)v; break;
    default: cr_assert_fail("unexpected dtype %d", t->desc.dtype);
    }
}

/* A tensor of integers drawn uniformly from [lo, hi] (floats for float32). */
static d5_tensor draw(d5_dtype dt, int32_t nd, const int64_t *shape, d5_rng *rng, double lo,
                      double hi)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(dt, nd, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&d); i++) {
        double u = d5_rng_uniform(rng);
        set(&t, i, dt == D5_F32 ? lo + (hi - lo) * u : floor(lo + (hi - lo + 1) * u));
    }
    return t;
}

static d5_tensor full(d5_dtype dt, int32_t nd, const int64_t *shape, double v)
{
    d5_rng rng;
    d5_rng_seed(&rng, 1);
    return draw(dt, nd, shape, &rng, v, v);
}

static double lo_of(d5_dtype dt)
{
    return dt == D5_U8 ? 0 : -128;
}
static double hi_of(d5_dtype dt)
{
    return dt == D5_U8 ? 255 : 127;
}

/* Runs `name` on `backend`; input i is known at create when bit i of `known`
 * is set (a weight or a parameter given as an initializer). The output is
 * allocated; on failure nothing is. */
static d5_status run(const char *name, const char *backend, const d5_tensor *in, int32_t nin,
                     const d5_attrs *attrs, uint32_t known, d5_tensor *out)
{
    const d5_op_desc *desc;
    d5_status s = d5_op_find(name, backend, &desc);
    if (s != D5_OK) return s;
    d5_tensor at_create[12];
    for (int32_t i = 0; i < nin; i++) {
        at_create[i] = in[i];
        if (!((known >> i) & 1)) at_create[i].data = NULL;
    }
    d5_op *op;
    s = d5_op_create(desc, at_create, nin, attrs, 1, &op);
    if (s != D5_OK) return s;
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), out), D5_OK);
    if (strcmp(backend, "dnnl") == 0) {
        d5_op_impl impl;
        d5_op_impl_get(op, &impl);
        if (impl.reported)
            cr_assert(impl.forward[0] && strncmp(impl.forward, "ref", 3) != 0, "%s: kernel '%s'",
                      name, impl.forward);
    }
    s = d5_op_forward(op, in, out);
    d5_op_free(op);
    if (s != D5_OK) d5_tensor_free(out);
    return s;
}

/* |got - want| <= tol everywhere, and at most max_off elements differ at all:
 * the rare last-unit differences of float32 against float64 scaling. */
static void compare(const char *what, const d5_tensor *got, const double *want, double tol,
                    int64_t max_off)
{
    int64_t n = d5_tensor_desc_numel(&got->desc), off = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = get(got, i);
        cr_assert(fabs(g - want[i]) <= tol, "%s: element %lld is %.9g, expected %.9g", what,
                  (long long)i, g, want[i]);
        off += g != want[i];
    }
    cr_assert(off <= max_off, "%s: %lld of %lld elements differ (at most %lld may)", what,
              (long long)off, (long long)n, (long long)max_off);
}

/* Runs `name` on dnnl and compares with `want`; then, when the ref backend
 * has the operator, ref with the same tolerance. Returns 0 when dnnl declines
 * for want of an exact optimized oneDNN kernel on this CPU (no VNNI, or only
 * oneDNN's reference kernel): then nothing is checked. */
static int check(const char *what, const char *name, const d5_tensor *in, int32_t nin,
                 const d5_attrs *attrs, uint32_t known, const double *want, double tol,
                 int64_t max_off)
{
    d5_tensor got;
    d5_status s = run(name, "dnnl", in, nin, attrs, known, &got);
    if (s == D5_ERR_UNSUPPORTED && strstr(d5_last_error(), "d5's ref backend runs it")) {
        cr_log_info("%s: %s", what, d5_last_error());
        return 0;
    }
    cr_assert_eq(s, D5_OK, "%s: %s: %s", what, d5_status_name(s), d5_last_error());
    compare(what, &got, want, tol, max_off);
    d5_tensor_free(&got);
    const d5_op_desc *ref;
    if (d5_op_find(name, "ref", &ref) == D5_OK) {
        d5_tensor r;
        s = run(name, "ref", in, nin, attrs, known, &r);
        char ref_what[160];
        snprintf(ref_what, sizeof ref_what, "%s, ref backend", what);
        cr_assert_eq(s, D5_OK, "%s: %s", ref_what, d5_last_error());
        compare(ref_what, &r, want, tol, max_off);
        d5_tensor_free(&r);
    }
    return 1;
}

static void expect_declined(const char *what, const char *name, const d5_tensor *in, int32_t nin,
                            const d5_attrs *attrs, uint32_t known, const char *text)
{
    d5_tensor got;
    d5_status s = run(name, "dnnl", in, nin, attrs, known, &got);
    if (s == D5_OK) d5_tensor_free(&got);
    cr_assert_eq(s, D5_ERR_UNSUPPORTED, "%s: %s", what, d5_status_name(s));
    cr_assert(strstr(d5_last_error(), text), "%s: '%s' lacks '%s'", what, d5_last_error(), text);
}

static void free_all(d5_tensor *t, int n)
{
    for (int i = 0; i < n; i++) d5_tensor_free(&t[i]);
}

/* ONNX's requantization: the exact accumulator times a_scale * b_scale /
 * y_scale (formed in float32, as ONNX's reference does), rounded half to even
 * (the default rounding mode), plus the zero point, saturated. */
static double requant(double acc, float mult, double zp, d5_dtype dt)
{
    double v = nearbyint(acc * (double)mult) + zp;
    return v < lo_of(dt) ? lo_of(dt) : v > hi_of(dt) ? hi_of(dt) : v;
}

/* The tie cases of requantization: values within 1 of their zero point, so
 * that sums stay small, scales whose product is exactly 1/2 (a: 1/2, b: 1,
 * y: 1) and an odd zero point for y: every odd sum is a tie, which ONNX
 * rounds to even before it adds the zero point. */
static void narrow(d5_tensor *t, double zp, d5_rng *rng)
{
    d5_dtype dt = (d5_dtype)t->desc.dtype;
    for (int64_t k = 0; k < d5_tensor_desc_numel(&t->desc); k++) {
        double v = zp + (double)d5_rng_below(rng, 3) - 1;
        set(t, k, v < lo_of(dt) ? lo_of(dt) : v > hi_of(dt) ? hi_of(dt) : v);
    }
}

static void tie_scales(d5_tensor *sa, d5_tensor *sb, d5_tensor *sy, d5_tensor *zy)
{
    set(sa, 0, 0.5);
    for (int64_t k = 0; k < d5_tensor_desc_numel(&sb->desc); k++) set(sb, k, 1);
    set(sy, 0, 1);
    set(zy, 0, zy->desc.dtype == D5_U8 ? 101 : -3);
}

/* The first eight inputs of QLinearMatMul and QLinearConv: a of type ta
 * with a scalar scale and zero point; b of type tb with scales of rank
 * scale_nd (0 or 1; scale_n of them) and a scalar zero point, 0 when zero_b;
 * y's scalar scale and zero point (odd ones test the rounding). */
typedef struct qlinear_inputs {
    d5_dtype ta;
    int32_t na;
    const int64_t *a;
    d5_dtype tb;
    int32_t nb;
    const int64_t *b;
    int32_t scale_nd;
    int64_t scale_n;
    int zero_b;
    d5_dtype ty;
} qlinear_inputs;

static void draw_qlinear(d5_tensor *in, d5_rng *rng, const qlinear_inputs *q)
{
    in[0] = draw(q->ta, q->na, q->a, rng, lo_of(q->ta), hi_of(q->ta));
    in[1] = draw(D5_F32, 0, NULL, rng, 0.002, 0.02);
    in[2] = draw(q->ta, 0, NULL, rng, lo_of(q->ta), hi_of(q->ta));
    in[3] = draw(q->tb, q->nb, q->b, rng, lo_of(q->tb), hi_of(q->tb));
    in[4] = draw(D5_F32, q->scale_nd, &q->scale_n, rng, 0.002, 0.02);
    in[5] =
        q->zero_b ? full(q->tb, 0, NULL, 0) : draw(q->tb, 0, NULL, rng, lo_of(q->tb), hi_of(q->tb));
    in[6] = draw(D5_F32, 0, NULL, rng, 0.05, 0.5);
    in[7] = draw(q->ty, 0, NULL, rng, lo_of(q->ty), hi_of(q->ty));
}

/* Makes every requantization of draw_qlinear's inputs a tie (see narrow). */
static void qlinear_ties(d5_tensor *in, d5_rng *rng)
{
    tie_scales(&in[1], &in[4], &in[6], &in[7]);
    narrow(&in[0], get(&in[2], 0), rng);
    narrow(&in[3], get(&in[5], 0), rng);
}

/* ---- MatMulInteger and QLinearMatMul ------------------------------------------------ */

/* numpy.matmul of A and B with zero points (per tensor; zb may be per column). */
static double *matmul_acc(const d5_tensor *A, const d5_tensor *B, double za, const d5_tensor *zb,
                          const d5_tensor_desc *y)
{
    const d5_tensor_desc *a = &A->desc, *b = &B->desc;
    int64_t K = a->shape[a->ndim - 1], M = a->ndim > 1 ? a->shape[a->ndim - 2] : 1;
    int64_t N = b->ndim > 1 ? b->shape[b->ndim - 1] : 1;
    int ab = a->ndim > 2 ? a->ndim - 2 : 0, bb = b->ndim > 2 ? b->ndim - 2 : 0;
    int batch = ab > bb ? ab : bb;
    int64_t ny = d5_tensor_desc_numel(y);
    double *acc = calloc((size_t)ny, sizeof *acc);
    for (int64_t e = 0; e < ny; e++) {
        int64_t n = e % N, m = (e / N) % M, rest = e / (N * M), aoff = 0, boff = 0, as = 1, bs = 1;
        for (int i = batch - 1; i >= 0; i--) { /* the batch index, broadcast */
            int64_t ai = i - (batch - ab) >= 0 ? a->shape[i - (batch - ab)] : 1;
            int64_t bi = i - (batch - bb) >= 0 ? b->shape[i - (batch - bb)] : 1;
            int64_t yi = ai > bi ? ai : bi, idx = rest % yi;
            rest /= yi;
            aoff += (ai == 1 ? 0 : idx) * as;
            boff += (bi == 1 ? 0 : idx) * bs;
            as *= ai;
            bs *= bi;
        }
        double s = 0;
        for (int64_t k = 0; k < K; k++)
            s += (get(A, (aoff * M + m) * K + k) - za) *
                 (get(B, (boff * K + k) * N + n) -
                  (zb ? get(zb, d5_tensor_desc_numel(&zb->desc) > 1 ? n : 0) : 0));
        acc[e] = s;
    }
    return acc;
}

typedef struct mm_case {
    int32_t na, nb;
    int64_t a[4], b[4];
} mm_case;

static const mm_case mm_cases[] = {
    {2, 2, {1, 1}, {1, 1}},
    {2, 2, {7, 33}, {33, 5}},
    {2, 2, {64, 128}, {128, 96}},
    {4, 2, {2, 3, 5, 17}, {17, 9}},
    {4, 3, {2, 1, 4, 8}, {3, 8, 6}},
    {1, 2, {8}, {8, 3}},
    {2, 1, {4, 8}, {8}},
    {3, 3, {2, 6, 70}, {2, 70, 40}},
};
#define NMM (sizeof mm_cases / sizeof mm_cases[0])

static d5_tensor_desc mm_out(const mm_case *c, const d5_tensor *A, const d5_tensor *B, d5_dtype dt)
{
    /* The output shape from the ref-free rule: batch broadcast, then M, N. */
    d5_tensor_desc y;
    memset(&y, 0, sizeof y);
    y.dtype = dt;
    int ab = c->na > 2 ? c->na - 2 : 0, bb = c->nb > 2 ? c->nb - 2 : 0;
    int batch = ab > bb ? ab : bb;
    for (int i = 0; i < batch; i++) {
        int64_t ai = i - (batch - ab) >= 0 ? A->desc.shape[i - (batch - ab)] : 1;
        int64_t bi = i - (batch - bb) >= 0 ? B->desc.shape[i - (batch - bb)] : 1;
        y.shape[y.ndim++] = ai > bi ? ai : bi;
    }
    if (c->na > 1) y.shape[y.ndim++] = A->desc.shape[c->na - 2];
    if (c->nb > 1) y.shape[y.ndim++] = B->desc.shape[c->nb - 1];
    return y;
}

Test(dnnl_int8, matmulinteger)
{
    d5_rng rng = need_dnnl_rng(11);
    for (size_t i = 0; i < NMM * 4; i++) {
        const mm_case *c = &mm_cases[i % NMM];
        d5_dtype ta = i % 2 ? D5_I8 : D5_U8, tb = (i / 2) % 2 ? D5_U8 : D5_I8;
        d5_tensor in[4];
        in[0] = draw(ta, c->na, c->a, &rng, lo_of(ta), hi_of(ta));
        in[1] = draw(tb, c->nb, c->b, &rng, lo_of(tb), hi_of(tb));
        in[2] = draw(ta, 0, NULL, &rng, lo_of(ta), hi_of(ta));
        in[3] = draw(tb, 1, SHAPE(1), &rng, lo_of(tb), hi_of(tb));
        d5_tensor_desc y = mm_out(c, &in[0], &in[1], D5_I32);
        double *want = matmul_acc(&in[0], &in[1], get(&in[2], 0), &in[3], &y);
        /* Zero points and B known at create, or everything given at run time. */
        uint32_t known = (i / NMM) % 2 ? 0xe : 0;
        char what[96];
        snprintf(what, sizeof what, "MatMulInteger case %zu/%zu (%s x %s, known %x)", i % NMM, i,
                 d5_dtype_name(ta), d5_dtype_name(tb), known);
        check(what, "MatMulInteger", in, 4, NULL, known, want, 0, 0);
        /* Without zero points. */
        double *want0 = matmul_acc(&in[0], &in[1], 0, NULL, &y);
        strcat(what, " no zp");
        check(what, "MatMulInteger", in, 2, NULL, known & 3, want0, 0, 0);
        free(want);
        free(want0);
        free_all(in, 4);
    }
}

Test(dnnl_int8, matmulinteger_zero_point_per_column)
{
    d5_rng rng = need_dnnl_rng(12);
    d5_tensor in[4];
    in[0] = draw(D5_U8, 2, SHAPE(9, 40), &rng, 0, 255);
    in[1] = draw(D5_U8, 2, SHAPE(40, 6), &rng, 100, 200);
    in[2] = full(D5_U8, 0, NULL, 3);
    in[3] = draw(D5_U8, 1, SHAPE(6), &rng, 140, 160);
    d5_tensor_desc y = {.dtype = D5_I32, .ndim = 2, .shape = {9, 6}};
    double *want = matmul_acc(&in[0], &in[1], 3, &in[3], &y);
    /* B and its zero points known: B - zp fits int8 and is folded. */
    check("per-column b_zero_point, B known", "MatMulInteger", in, 4, NULL, 0xe, want, 0, 0);
    free(want);
    expect_declined("per-column b_zero_point, B at run time", "MatMulInteger", in, 4, NULL, 0xc,
                    "per column");
    d5_tensor_free(&in[2]);
    in[2] = draw(D5_U8, 1, SHAPE(9), &rng, 0, 9);
    expect_declined("per-row a_zero_point", "MatMulInteger", in, 4, NULL, 0xe, "per row");
    free_all(in, 4);
}

Test(dnnl_int8, qlinearmatmul)
{
    d5_rng rng = need_dnnl_rng(13);
    for (size_t i = 0; i < NMM * 4; i++) {
        const mm_case *c = &mm_cases[i % NMM];
        d5_dtype ta = i % 2 ? D5_I8 : D5_U8, tb = (i / 2) % 2 ? D5_U8 : D5_I8;
        d5_dtype ty = (i / 3) % 2 ? D5_I8 : D5_U8;
        int64_t n = c->nb > 1 ? c->b[c->nb - 1] : 1;
        int per_column = i % 3 == 0 && n > 1;
        d5_tensor in[8];
        const qlinear_inputs q = {ta, c->na, c->a, tb, c->nb, c->b, 1, per_column ? n : 1, 0, ty};
        draw_qlinear(in, &rng, &q);
        int ties = i % 5 == 4; /* see narrow() */
        if (ties) qlinear_ties(in, &rng);
        d5_tensor_desc y = mm_out(c, &in[0], &in[3], ty);
        double *acc = matmul_acc(&in[0], &in[3], get(&in[2], 0), &in[5], &y);
        int64_t ny = d5_tensor_desc_numel(&y), N = c->nb > 1 ? n : 1;
        for (int64_t e = 0; e < ny; e++) {
            float m = (float)get(&in[1], 0) * (float)get(&in[4], per_column ? e % N : 0) /
                      (float)get(&in[6], 0);
            acc[e] = requant(acc[e], m, get(&in[7], 0), ty);
        }
        /* Weights and parameters known at create (scales compiled into the
         * primitive), or every input given at run time. */
        uint32_t known = (i / NMM) % 2 ? 0xfe : 0;
        char what[128];
        snprintf(what, sizeof what, "QLinearMatMul case %zu (%s x %s -> %s%s, known %x)", i % NMM,
                 d5_dtype_name(ta), d5_dtype_name(tb), d5_dtype_name(ty),
                 per_column ? ", per column" : "", known);
        check(what, "QLinearMatMul", in, 8, NULL, known, acc, ties ? 0 : 1,
              ties ? 0 : 1 + ny / 1000);
        free(acc);
        free_all(in, 8);
    }
}

/* ONNX's own example (test_qlinearmatmul_2D): uint8 B with zero point 114. */
Test(dnnl_int8, qlinearmatmul_onnx_example)
{
    need_dnnl();
    static const uint8_t a[] = {208, 236, 0, 238, 3, 214, 255, 29};
    static const uint8_t b[] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
    const double want[] = {168, 115, 255, 1, 66, 151};
    d5_tensor in[8];
    in[0] = full(D5_U8, 2, SHAPE(2, 4), 0);
    memcpy(in[0].data, a, sizeof a);
    in[1] = full(D5_F32, 1, SHAPE(1), 0.0066);
    in[2] = full(D5_U8, 1, SHAPE(1), 113);
    in[3] = full(D5_U8, 2, SHAPE(4, 3), 0);
    memcpy(in[3].data, b, sizeof b);
    in[4] = full(D5_F32, 1, SHAPE(1), 0.00705);
    in[5] = full(D5_U8, 1, SHAPE(1), 114);
    in[6] = full(D5_F32, 1, SHAPE(1), 0.0107);
    in[7] = full(D5_U8, 1, SHAPE(1), 118);
    for (uint32_t known = 0; known <= 0xff; known += 0xff)
        check("ONNX example", "QLinearMatMul", in, 8, NULL, known, want, 0, 0);
    free_all(in, 8);
}

/* ---- ConvInteger and QLinearConv ---------------------------------------------------- */

typedef struct conv_case {
    int32_t n;          /* spatial dimensions */
    int64_t x[5], w[5]; /* X (N, C, spatial...), W (M, C / group, kernel...) */
    int64_t group, pads[6], strides[3], dil[3];
} conv_case;

static const conv_case conv_cases[] = {
    {2, {2, 16, 12, 12}, {32, 16, 3, 3}, 1, {1, 1, 1, 1}, {1, 1}, {1, 1}},
    {2, {2, 16, 9, 9}, {16, 4, 3, 3}, 4, {1, 1, 1, 1}, {2, 2}, {1, 1}},
    {2, {1, 32, 10, 10}, {32, 1, 3, 3}, 32, {1, 1, 1, 1}, {1, 1}, {1, 1}},
    {2, {1, 8, 15, 15}, {8, 8, 3, 3}, 1, {0, 1, 2, 1}, {1, 2}, {2, 2}},
    {2, {3, 3, 17, 17}, {16, 3, 7, 7}, 1, {3, 3, 3, 3}, {2, 2}, {1, 1}},
    {2, {1, 64, 7, 7}, {48, 64, 1, 1}, 1, {0, 0, 0, 0}, {1, 1}, {1, 1}},
    {1, {2, 8, 20}, {4, 8, 5}, 1, {2, 2}, {1}, {1}},
    {3, {1, 4, 6, 6, 6}, {8, 4, 3, 3, 3}, 1, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, {1, 1, 1}},
};
#define NCONV (sizeof conv_cases / sizeof conv_cases[0])

static int64_t conv_out(const conv_case *c, int i)
{
    int64_t dk = (c->w[2 + i] - 1) * c->dil[i] + 1;
    return (c->x[2 + i] + c->pads[i] + c->pads[c->n + i] - dk) / c->strides[i] + 1;
}

/* The convolution of (X - zx) and (W - zw[m]) with zeros for padding. */
static double *conv_acc(const conv_case *c, const d5_tensor *X, const d5_tensor *W, double zx,
                        const d5_tensor *zw, d5_tensor_desc *y)
{
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1}, st[3] = {1, 1, 1},
            dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
    memset(y, 0, sizeof *y);
    y->ndim = c->n + 2;
    y->shape[0] = c->x[0];
    y->shape[1] = c->w[0];
    for (int i = 0; i < c->n; i++) {
        in[i] = c->x[2 + i], k[i] = c->w[2 + i], st[i] = c->strides[i], dl[i] = c->dil[i];
        pb[i] = c->pads[i];
        out[i] = y->shape[2 + i] = conv_out(c, i);
    }
    int64_t N = c->x[0], C = c->x[1], M = c->w[0], cg = C / c->group, mg = M / c->group;
    int64_t ny = N * M * out[0] * out[1] * out[2];
    double *acc = calloc((size_t)ny, sizeof *acc);
    for (int64_t e = 0; e < ny; e++) {
        int64_t o2 = e % out[2], o1 = e / out[2] % out[1], o0 = e / (out[2] * out[1]) % out[0];
        int64_t m = e / (out[0] * out[1] * out[2]) % M, b = e / (out[0] * out[1] * out[2] * M);
        double zwm = zw ? get(zw, d5_tensor_desc_numel(&zw->desc) > 1 ? m : 0) : 0, s = 0;
        for (int64_t ci = 0; ci < cg; ci++)
            for (int64_t k0 = 0; k0 < k[0]; k0++)
                for (int64_t k1 = 0; k1 < k[1]; k1++)
                    for (int64_t k2 = 0; k2 < k[2]; k2++) {
                        int64_t i0 = o0 * st[0] - pb[0] + k0 * dl[0];
                        int64_t i1 = o1 * st[1] - pb[1] + k1 * dl[1];
                        int64_t i2 = o2 * st[2] - pb[2] + k2 * dl[2];
                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 || i2 >= in[2])
                            continue;
                        int64_t ch = m / mg * cg + ci;
                        double x = get(X, (((b * C + ch) * in[0] + i0) * in[1] + i1) * in[2] + i2);
                        double w = get(W, (((m * cg + ci) * k[0] + k0) * k[1] + k1) * k[2] + k2);
                        s += (x - zx) * (w - zwm);
                    }
        acc[e] = s;
    }
    return acc;
}

typedef struct conv_attrs {
    d5_attr items[4];
    d5_attrs attrs;
} conv_attrs;

static const d5_attrs *conv_attributes(conv_attrs *a, const conv_case *c)
{
    a->items[0] = attr_int("group", c->group);
    a->items[1] = attr_ints("pads", c->pads, 2 * c->n);
    a->items[2] = attr_ints("strides", c->strides, c->n);
    a->items[3] = attr_ints("dilations", c->dil, c->n);
    a->attrs = (d5_attrs){a->items, 4};
    return &a->attrs;
}

/* ONNX's example (test_convinteger_with_padding): uint8 weights of ones. */
Test(dnnl_int8, convinteger_onnx_example)
{
    need_dnnl();
    d5_tensor in[3];
    in[0] = full(D5_U8, 4, SHAPE(1, 1, 3, 3), 0);
    for (int i = 0; i < 9; i++) ((uint8_t *)in[0].data)[i] = (uint8_t)(i + 2);
    in[1] = full(D5_U8, 4, SHAPE(1, 1, 2, 2), 1);
    in[2] = full(D5_U8, 0, NULL, 1);
    const double want[] = {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9};
    d5_attr pads = attr_ints("pads", IVALS(1, 1, 1, 1), 4);
    d5_attrs attrs = {&pads, 1};
    check("ONNX example", "ConvInteger", in, 3, &attrs, 0x6, want, 0, 0);
    free_all(in, 3);
}

Test(dnnl_int8, convinteger)
{
    d5_rng rng = need_dnnl_rng(21);
    for (size_t i = 0; i < NCONV * 3; i++) {
        const conv_case *c = &conv_cases[i % NCONV];
        int way = (int)(i / NCONV); /* 0: int8 W at run time; 1: int8 W known; 2: uint8 W, zp 128 */
        d5_dtype tx = i % 2 ? D5_I8 : D5_U8, tw = way == 2 ? D5_U8 : D5_I8;
        d5_tensor in[4];
        in[0] = draw(tx, c->n + 2, c->x, &rng, lo_of(tx), hi_of(tx));
        in[1] = draw(tw, c->n + 2, c->w, &rng, lo_of(tw), hi_of(tw));
        in[2] = draw(tx, 0, NULL, &rng, lo_of(tx), hi_of(tx));
        in[3] = full(tw, 1, SHAPE(1), way == 2 ? 128 : 0);
        d5_tensor_desc y;
        double *want = conv_acc(c, &in[0], &in[1], get(&in[2], 0), &in[3], &y);
        conv_attrs a;
        uint32_t known = way == 1 ? 0xe : way == 2 ? 0xc : 0x8;
        char what[96];
        snprintf(what, sizeof what, "ConvInteger case %zu (%s x %s, known %x)", i % NCONV,
                 d5_dtype_name(tx), d5_dtype_name(tw), known);
        check(what, "ConvInteger", in, 4, conv_attributes(&a, c), known, want, 0, 0);
        free(want);
        free_all(in, 4);
    }
}

Test(dnnl_int8, convinteger_weights_zero_point)
{
    d5_rng rng = need_dnnl_rng(22);
    const conv_case *c = &conv_cases[1];
    conv_attrs a;
    d5_tensor in[4];
    in[0] = draw(D5_U8, 4, c->x, &rng, 0, 255);
    in[1] = draw(D5_U8, 4, c->w, &rng, 60, 180);
    in[2] = full(D5_U8, 0, NULL, 7);
    in[3] = draw(D5_U8, 1, SHAPE(16), &rng, 100, 140); /* per output channel */
    d5_tensor_desc y;
    double *want = conv_acc(c, &in[0], &in[1], 7, &in[3], &y);
    check("W known, w - zp fits int8", "ConvInteger", in, 4, conv_attributes(&a, c), 0xe, want, 0,
          0);
    free(want);
    expect_declined("W at run time, zero point per channel", "ConvInteger", in, 4, &a.attrs, 0xc,
                    "zero point");
    ((uint8_t *)in[1].data)[5] = 255;
    ((uint8_t *)in[3].data)[0] = 0;
    expect_declined("W known, w - zp outside int8", "ConvInteger", in, 4, &a.attrs, 0xe,
                    "outside int8");
    free_all(in, 4);
}

Test(dnnl_int8, qlinearconv)
{
    d5_rng rng = need_dnnl_rng(23);
    for (size_t i = 0; i < NCONV * 2; i++) {
        const conv_case *c = &conv_cases[i % NCONV];
        d5_dtype tx = i % 2 ? D5_I8 : D5_U8, ty = (i / 2) % 2 ? D5_I8 : D5_U8;
        int64_t M = c->w[0];
        int per_channel = i % 3 != 0, bias = i % 4 != 1;
        d5_tensor in[9];
        const qlinear_inputs q = {
            tx, c->n + 2, c->x, D5_I8, c->n + 2, c->w, per_channel, per_channel ? M : 1, 1, ty};
        draw_qlinear(in, &rng, &q);
        in[8] = draw(D5_I32, 1, SHAPE(M), &rng, -20000, 20000);
        int ties = i % 5 == 4; /* see narrow() */
        if (ties) {
            qlinear_ties(in, &rng);
            for (int64_t m = 0; m < M; m++) set(&in[8], m, (double)(m % 5) - 2);
        }
        d5_tensor_desc y;
        double *acc = conv_acc(c, &in[0], &in[3], get(&in[2], 0), NULL, &y);
        int64_t ny = d5_tensor_desc_numel(&y), per_m = ny / (y.shape[0] * M);
        for (int64_t e = 0; e < ny; e++) {
            int64_t m = e / per_m % M;
            float mult = (float)get(&in[1], 0) * (float)get(&in[4], per_channel ? m : 0) /
                         (float)get(&in[6], 0);
            acc[e] = requant(acc[e] + (bias ? get(&in[8], m) : 0), mult, get(&in[7], 0), ty);
        }
        conv_attrs a;
        /* The scales and w_zero_point known at create; W, the other zero points
         * and B known too, or given at run time. */
        uint32_t known = i % 2 ? 0x1fe : 0x72;
        char what[128];
        snprintf(what, sizeof what, "QLinearConv case %zu (%s -> %s%s%s, known %x)", i % NCONV,
                 d5_dtype_name(tx), d5_dtype_name(ty), per_channel ? ", per channel" : "",
                 bias ? ", bias" : "", known);
        check(what, "QLinearConv", in, bias ? 9 : 8, conv_attributes(&a, c), known, acc,
              ties ? 0 : 1, ties ? 0 : 1 + ny / 1000);
        if (i == 0)
            expect_declined("scales at run time", "QLinearConv", in, 9, &a.attrs, 0x1ac,
                            "known at create");
        free(acc);
        free_all(in, 9);
    }
}

/* ---- QuantizeLinear and DequantizeLinear -------------------------------------------- */

/* Per tensor (axis -2: a scalar, -3: [1]) or along `axis` of [2, 3, 4, 5]. */
static const int64_t qshape[] = {2, 3, 4, 5};
static const int qaxes[] = {-3, -2, 0, 1, 3, -1};

static int64_t channel_of(int64_t e, int axis)
{
    int64_t inner = 1;
    for (int i = 3; i > axis; i--) inner *= qshape[i];
    return e / inner % qshape[axis];
}

static d5_tensor param(d5_dtype dt, int axis, d5_rng *rng, double lo, double hi)
{
    if (axis == -2) return draw(dt, 0, NULL, rng, lo, hi);
    if (axis == -3) return draw(dt, 1, SHAPE(1), rng, lo, hi);
    return draw(dt, 1, SHAPE(qshape[axis < 0 ? axis + 4 : axis]), rng, lo, hi);
}

Test(dnnl_int8, quantizelinear)
{
    d5_rng rng = need_dnnl_rng(31);
    for (size_t i = 0; i < 3 * 6; i++) {
        int axis = qaxes[i % 6], ax = axis < 0 ? axis + 4 : axis, per = axis >= -1;
        int zp_kind = (int)(i / 6); /* 0: uint8, 1: int8, 2: none (uint8) */
        d5_dtype ty = zp_kind == 1 ? D5_I8 : D5_U8;
        d5_tensor in[3];
        in[0] = draw(D5_F32, 4, qshape, &rng, -3, 3);
        in[1] = param(D5_F32, axis, &rng, 0.004, 0.04);
        in[2] = param(ty, axis, &rng, lo_of(ty), hi_of(ty));
        int64_t n = d5_tensor_desc_numel(&in[0].desc);
        double *want = calloc((size_t)n, sizeof *want);
        for (int64_t e = 0; e < n; e++) {
            int64_t ch = per ? channel_of(e, ax) : 0;
            float s = (float)get(&in[1], ch), x = (float)get(&in[0], e);
            if (e % 3 == 0) { /* halfway cases: (k + 1/2) * s */
                x = (float)((floor(x / s) + 0.5) * s);
                set(&in[0], e, x);
            }
            double v = nearbyintf(x / s) + (zp_kind == 2 ? 0 : get(&in[2], ch));
            want[e] = v < lo_of(ty) ? lo_of(ty) : v > hi_of(ty) ? hi_of(ty) : v;
        }
        d5_attr at = attr_int("axis", axis);
        d5_attrs attrs = {&at, per ? 1 : 0};
        char what[96];
        snprintf(what, sizeof what, "QuantizeLinear axis %d, %s", axis,
                 zp_kind == 2 ? "no zero point" : d5_dtype_name(ty));
        check(what, "QuantizeLinear", in, zp_kind == 2 ? 2 : 3, &attrs, i % 2 ? 0x6 : 0, want, 0,
              0);
        free(want);
        free_all(in, 3);
    }
}

Test(dnnl_int8, dequantizelinear)
{
    d5_rng rng = need_dnnl_rng(32);
    const d5_dtype types[] = {D5_U8, D5_I8, D5_I32};
    for (size_t i = 0; i < 3 * 6; i++) {
        int axis = qaxes[i % 6], ax = axis < 0 ? axis + 4 : axis, per = axis >= -1;
        d5_dtype tx = types[i / 6];
        double lo = tx == D5_I32 ? -3e7 : lo_of(tx), hi = tx == D5_I32 ? 3e7 : hi_of(tx);
        d5_tensor in[3];
        in[0] = draw(tx, 4, qshape, &rng, lo, hi);
        in[1] = param(D5_F32, axis, &rng, 0.0001, 3);
        /* One zero point for all slices (int32: 0), repeated per axis. */
        double z = tx == D5_I32 ? 0 : floor(lo + (hi - lo) * d5_rng_uniform(&rng));
        in[2] = param(tx, axis, &rng, z, z);
        int64_t n = d5_tensor_desc_numel(&in[0].desc);
        double *want = calloc((size_t)n, sizeof *want);
        for (int64_t e = 0; e < n; e++)
            want[e] = (float)(get(&in[0], e) - z) * (float)get(&in[1], per ? channel_of(e, ax) : 0);
        d5_attr at = attr_int("axis", axis);
        d5_attrs attrs = {&at, per ? 1 : 0};
        char what[96];
        snprintf(what, sizeof what, "DequantizeLinear axis %d, %s", axis, d5_dtype_name(tx));
        check(what, "DequantizeLinear", in, 3, &attrs, i % 2 ? 0x6 : 0x4, want, 0, 0);
        if (tx != D5_I32 && per && qshape[ax] > 1) {
            set(&in[2], 1, z == 0 ? 1 : 0);
            expect_declined("a zero point per slice", "DequantizeLinear", in, 3, &attrs, 0x4,
                            "one zero point");
        }
        free(want);
        free_all(in, 3);
    }
}

/* ONNX's examples (test_quantizelinear, test_dequantizelinear): 1-d x with
 * one scale, where the default axis 1 does not exist and does not matter. */
Test(dnnl_int8, quantize_onnx_examples)
{
    need_dnnl();
    d5_tensor in[3];
    in[0] = tf32(1, SHAPE(6), VALS(0, 2, 3, 1000, -254, -1000));
    in[1] = full(D5_F32, 0, NULL, 2);
    in[2] = full(D5_U8, 0, NULL, 128);
    const double q[] = {128, 129, 130, 255, 1, 0};
    check("ONNX QuantizeLinear example", "QuantizeLinear", in, 3, NULL, 0x4, q, 0, 0);
    d5_tensor_free(&in[0]);
    in[0] = full(D5_U8, 1, SHAPE(4), 0);
    const uint8_t x[] = {0, 3, 128, 255};
    memcpy(in[0].data, x, sizeof x);
    const double dq[] = {-256, -250, 0, 254};
    check("ONNX DequantizeLinear example", "DequantizeLinear", in, 3, NULL, 0x5, dq, 0, 0);
    free_all(in, 3);
}

/* The executor's choice on ONNX's node tests: `d5 run` reports which backend
 * ran the node (inputs fed at run time, so nothing is folded). */
Test(dnnl_int8, executor_runs_node_tests_on_dnnl, .timeout = 120)
{
    need_dnnl();
    const char *dir = "/usr/share/libonnx-testdata/data/node";
    /* Products of int8 operands run on dnnl where the CPU has VNNI (AMX has
     * it too); without it dnnl declines them and ref runs. */
    d5_precision_class int8;
    cr_assert_eq(d5_dnnl_precision_support("int8", &int8, NULL, 0), D5_OK);
    const char *product = int8 == D5_PRECISION_NATIVE ? "dnnl" : "ref";
    const struct {
        const char *test, *backend;
        int inputs;
    } cases[] = {
        {"test_matmulinteger", product, 4},
        {"test_qlinearmatmul_2D", product, 8},
        {"test_qlinearmatmul_3D", product, 8},
        {"test_quantizelinear", "dnnl", 3},
        {"test_quantizelinear_axis", "dnnl", 3},
        {"test_dequantizelinear", "dnnl", 3},
        /* Declined: a zero point per axis; uint8 weights with zero point 255. */
        {"test_dequantizelinear_axis", "ref", 3},
        {"test_qlinearconv", "ref", 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char model[512], inputs[2048] = "", *out = NULL, *err = NULL;
        snprintf(model, sizeof model, "%s/%s/model.onnx", dir, cases[i].test);
        FILE *f = fopen(model, "rb");
        if (!f) cr_skip_test("%s: not installed (libonnx-testdata)", model);
        fclose(f);
        for (int k = 0; k < cases[i].inputs; k++)
            snprintf(inputs + strlen(inputs), sizeof inputs - strlen(inputs),
                     "%s%s/%s/test_data_set_0/input_%d.pb", k ? "," : "", dir, cases[i].test, k);
        const char *args[] = {"run",    model,  "--inputs",      inputs,
                              "--time", "0.02", "--no-overhead", NULL};
        int rc = run_d5(&out, &err, args);
        cr_assert_eq(rc, 0, "%s: d5 run failed: %s", cases[i].test, err);
        char want[64];
        snprintf(want, sizeof want, "backends    %s 1 node", cases[i].backend);
        cr_assert(strstr(out, want), "%s: '%s' not in:\n%s", cases[i].test, want, out);
        free(out);
        free(err);
    }
}
