/* The dnnl backend in lower precisions, the convolutions: Conv and FusedConv
 * on bfloat16 tensors (forward and backward) and float32 ones under the
 * compute precision bf16; float16 (computed or cleanly declined, Conv, Gemm
 * and MatMul); and what d5_dnnl_precision_support says of this machine and of
 * oneDNN held to a lower instruction set. The bounds are those of
 * lowp_support.h. */
#define _GNU_SOURCE
#include "lowp_support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* ---- Conv ----------------------------------------------------------------------------------- */

/* A 2-d convolution in double: X (N, C, H, W), W (M, C/g, kh, kw), strides,
 * symmetric pads, groups; bias of M or NULL. */
typedef struct conv2d {
    int64_t n, c, h, w, m, kh, kw, stride, pad, group, oh, ow;
} conv2d;

static conv2d conv_geometry(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k,
                            int64_t stride, int64_t pad, int64_t group)
{
    conv2d g = {n, c, h, w, m, k, k, stride, pad, group, 0, 0};
    g.oh = (h + 2 * pad - k) / stride + 1;
    g.ow = (w + 2 * pad - k) / stride + 1;
    return g;
}

/* The taps of output element `at` (N, M, OH, OW order): the indices xi[t]
 * into X and wi[t] into W of each product it sums, padding left out.
 * Returns their number; xi and wi have room for C/g * kh * kw. */
static int64_t conv_taps(const conv2d *g, int64_t at, int64_t *xi, int64_t *wi)
{
    int64_t cg = g->c / g->group, mg = g->m / g->group;
    int64_t j = at % g->ow, i = at / g->ow % g->oh, o = at / (g->ow * g->oh) % g->m,
            b = at / (g->ow * g->oh * g->m), grp = o / mg, n = 0;
    for (int64_t ci = 0; ci < cg; ci++)
        for (int64_t u = 0; u < g->kh; u++)
            for (int64_t v = 0; v < g->kw; v++) {
                int64_t yy = i * g->stride - g->pad + u, xx = j * g->stride - g->pad + v;
                if (yy < 0 || yy >= g->h || xx < 0 || xx >= g->w) continue;
                xi[n] = ((b * g->c + grp * cg + ci) * g->h + yy) * g->w + xx;
                wi[n++] = ((o * cg + ci) * g->kh + u) * g->kw + v;
            }
    return n;
}

static int64_t *tap_buffer(const conv2d *g)
{
    int64_t *t = malloc((size_t)(g->c / g->group * g->kh * g->kw) * sizeof *t);
    cr_assert_not_null(t);
    return t;
}

static ref_out conv_ref(const conv2d *g, const float *x, const float *wt, const float *bias)
{
    int64_t *xi = tap_buffer(g), *wi = tap_buffer(g), total = g->n * g->m * g->oh * g->ow;
    ref_out r = ref_alloc(total);
    for (int64_t at = 0; at < total; at++) {
        int64_t o = at / (g->ow * g->oh) % g->m, n = conv_taps(g, at, xi, wi);
        double s = bias ? bias[o] : 0, sabs = bias ? fabs(bias[o]) : 0;
        for (int64_t t = 0; t < n; t++) {
            double p = (double)x[xi[t]] * wt[wi[t]];
            s += p;
            sabs += fabs(p);
        }
        r.y[at] = s;
        r.tol[at] = sabs;
    }
    free(xi);
    free(wi);
    return r;
}

/* dX, dW and dB of the convolution in double from dY. */
static void conv_grad_ref(const conv2d *g, const float *x, const float *wt, const float *dy,
                          ref_out *dx, ref_out *dw, ref_out *db)
{
    int64_t *xi = tap_buffer(g), *wi = tap_buffer(g), total = g->n * g->m * g->oh * g->ow;
    *dx = ref_alloc(g->n * g->c * g->h * g->w);
    *dw = ref_alloc(g->m * (g->c / g->group) * g->kh * g->kw);
    *db = ref_alloc(g->m);
    for (int64_t at = 0; at < total; at++) {
        int64_t o = at / (g->ow * g->oh) % g->m, n = conv_taps(g, at, xi, wi);
        double d = dy[at];
        db->y[o] += d;
        db->tol[o] += fabs(d);
        for (int64_t t = 0; t < n; t++) {
            dx->y[xi[t]] += d * wt[wi[t]];
            dx->tol[xi[t]] += fabs(d * wt[wi[t]]);
            dw->y[wi[t]] += d * x[xi[t]];
            dw->tol[wi[t]] += fabs(d * x[xi[t]]);
        }
    }
    free(xi);
    free(wi);
}

/* A bfloat16 Conv (the bias bf16 or f32) against double, forward and backward. */
static void conv_case(const conv2d *g, int32_t bias_type)
{
    float *xv, *wv, *bv, *dyv;
    d5_tensor in[3] = {
        random_tensor(D5_BF16, 4, SHAPE(g->n, g->c, g->h, g->w), 31u, 0, &xv),
        random_tensor(D5_BF16, 4, SHAPE(g->m, g->c / g->group, g->kh, g->kw), 37u, 0, &wv),
        random_tensor(bias_type, 1, SHAPE(g->m), 41u, 1, &bv)};
    d5_attr items[] = {attr_ints("strides", SHAPE(g->stride, g->stride), 2),
                       attr_ints("pads", SHAPE(g->pad, g->pad, g->pad, g->pad), 4),
                       attr_int("group", g->group)};
    d5_attrs attrs = {items, 3};
    d5_op *op = lowp_create("Conv", in, 3, &attrs);
    d5_tensor y, gin[3];
    lowp_forward(op, in, D5_BF16, &y);
    ref_out r = conv_ref(g, xv, wv, bv);
    int64_t taps = g->c / g->group * g->kh * g->kw;
    ref_bound(&r, BF16_OUT, K_SUM(taps + 1));
    expect_close(&y, &r, "Y");
    d5_tensor dy = random_tensor(D5_BF16, 4, SHAPE(g->n, g->m, g->oh, g->ow), 43u, 0, &dyv);
    lowp_backward(op, &dy, in, 3, &y, gin);
    ref_out dx, dw, db;
    conv_grad_ref(g, xv, wv, dyv, &dx, &dw, &db);
    ref_bound(&dx, BF16_OUT, K_SUM(g->m * g->kh * g->kw));
    ref_bound(&dw, BF16_OUT, K_SUM(g->n * g->oh * g->ow));
    ref_bound(&db, bias_type == D5_BF16 ? BF16_OUT : 0, K_SUM(g->n * g->oh * g->ow));
    expect_close(&gin[0], &dx, "dX");
    expect_close(&gin[1], &dw, "dW");
    expect_close(&gin[2], &db, "dB");
    d5_op_impl impl;
    d5_op_impl_get(op, &impl);
    cr_assert_str_eq(impl.precision, "bf16");
    cr_assert_neq(impl.backward_data[0], 0);
    ref_free(&r);
    ref_free(&dx);
    ref_free(&dw);
    ref_free(&db);
    lowp_free_run(op, in, gin, 3, &y, &dy);
    free(xv);
    free(wv);
    free(bv);
    free(dyv);
}

Test(dnnl_lowp, conv_bf16_forward_backward_matches_double)
{
    need_bf16_tensors();
    conv2d a = conv_geometry(2, 16, 9, 8, 32, 3, 1, 1, 1);
    conv_case(&a, D5_BF16);
    conv_case(&a, D5_F32); /* a float32 bias */
    conv2d b = conv_geometry(2, 8, 11, 10, 12, 3, 2, 0, 2);
    conv_case(&b, D5_BF16);
    conv2d c = conv_geometry(3, 1, 12, 12, 4, 5, 1, 2, 1); /* one input channel */
    conv_case(&c, D5_BF16);
}

/* FusedConv in bfloat16: Y = relu(Conv(X, W) + Z). */
Test(dnnl_lowp, fusedconv_bf16_adds_z_and_rectifies)
{
    need_bf16_tensors();
    conv2d g = conv_geometry(2, 16, 6, 6, 16, 3, 1, 1, 1);
    float *xv, *wv, *zv;
    d5_tensor in[4] = {random_tensor(D5_BF16, 4, SHAPE(2, 16, 6, 6), 51u, 0, &xv),
                       random_tensor(D5_BF16, 4, SHAPE(16, 16, 3, 3), 53u, 0, &wv),
                       {0},
                       random_tensor(D5_BF16, 4, SHAPE(2, 16, 6, 6), 57u, 0, &zv)};
    d5_attr items[] = {attr_ints("pads", SHAPE(1, 1, 1, 1), 4), attr_string("activation", "Relu")};
    d5_attrs attrs = {items, 2};
    d5_tensor y;
    run_op("FusedConv", "dnnl", in, 4, &attrs, &y, 1);
    ref_out r = conv_ref(&g, xv, wv, NULL);
    for (int64_t i = 0; i < r.n; i++) {
        r.tol[i] += fabs(zv[i]);
        r.y[i] += zv[i];
        if (r.y[i] < 0) r.y[i] = 0;
    }
    ref_bound(&r, BF16_OUT, K_SUM(16 * 9 + 1));
    expect_close(&y, &r, "Y");
    ref_free(&r);
    for (int i = 0; i < 4; i++) d5_tensor_free(&in[i]);
    d5_tensor_free(&y);
    free(xv);
    free(wv);
    free(zv);
}

/* Float32 tensors under the compute precision bf16: the implementation changes
 * from oneDNN's float32 kernel to a bfloat16 one, forward and backward, and the
 * results are those of the rounded operands. */
Test(dnnl_lowp, conv_compute_precision_changes_the_implementation)
{
    need_dnnl();
    d5_precision_class cls;
    char text[256];
    need_bf16(&cls, text, sizeof text);
    conv2d g = conv_geometry(2, 16, 8, 8, 16, 3, 1, 1, 1);
    float *xv, *wv, *xr, *wr, *dyv;
    d5_tensor in[2] = {random_tensor(D5_F32, 4, SHAPE(2, 16, 8, 8), 61u, 0, &xv),
                       random_tensor(D5_F32, 4, SHAPE(16, 16, 3, 3), 67u, 0, &wv)};
    d5_tensor rounded[2] = {random_tensor(D5_F32, 4, SHAPE(2, 16, 8, 8), 61u, 1, &xr),
                            random_tensor(D5_F32, 4, SHAPE(16, 16, 3, 3), 67u, 1, &wr)};
    d5_attr pads = attr_ints("pads", SHAPE(1, 1, 1, 1), 4);
    d5_attr items[] = {pads, attr_string(D5_ATTR_PRECISION, "bf16")};
    d5_attrs strict = {items, 1}, lowered = {items, 2};
    const d5_op_desc *desc;
    d5_op *op32, *op16;
    cr_assert_eq(d5_op_find("Conv", "dnnl", &desc), D5_OK);
    cr_assert_eq(d5_op_create(desc, in, 2, &strict, 1, &op32), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_create(desc, in, 2, &lowered, 1, &op16), D5_OK, "%s", d5_last_error());
    d5_op_impl i32, i16;
    d5_op_impl_get(op32, &i32);
    d5_op_impl_get(op16, &i16);
    cr_assert_str_eq(i32.precision, "f32");
    cr_assert_str_eq(i16.precision, "bf16", "%s", i16.note);
    cr_assert_str_neq(i32.forward, i16.forward);
    cr_assert(strstr(i16.forward, "bf16"), "%s", i16.forward);
    cr_assert_eq(i16.support, cls, "%s vs %s", d5_precision_class_name(i16.support), text);
    d5_tensor y32, y16;
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op16, 0), &y16), D5_OK);
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op32, 0), &y32), D5_OK);
    cr_assert_eq(y16.desc.dtype, D5_F32);
    cr_assert_eq(d5_op_forward(op16, in, &y16), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_forward(op32, in, &y32), D5_OK, "%s", d5_last_error());
    ref_out r = conv_ref(&g, xr, wr, NULL);
    ref_bound(&r, 0, K_SUM(16 * 9));
    expect_close(&y16, &r, "Y against the rounded operands");
    ref_free(&r);
    r = conv_ref(&g, xv, wv, NULL);
    ref_bound(&r, 0, K_SUM(16 * 9));
    expect_close(&y32, &r, "float32 Y");
    ref_free(&r);
    /* Backward: bfloat16 kernels too, gradients from the rounded operands. */
    d5_tensor dy = random_tensor(D5_F32, 4, SHAPE(2, 16, 8, 8), 71u, 1, &dyv), gin[2];
    lowp_backward(op16, &dy, in, 2, &y16, gin);
    d5_op_impl_get(op16, &i16);
    cr_assert(strstr(i16.backward_data, "bf16"), "%s", i16.backward_data);
    cr_assert(strstr(i16.backward_weights, "bf16"), "%s", i16.backward_weights);
    ref_out dx, dw, db;
    conv_grad_ref(&g, xr, wr, dyv, &dx, &dw, &db);
    ref_bound(&dx, 0, K_SUM(16 * 9));
    ref_bound(&dw, 0, K_SUM(2 * 64));
    expect_close(&gin[0], &dx, "dX");
    expect_close(&gin[1], &dw, "dW");
    ref_free(&dx);
    ref_free(&dw);
    ref_free(&db);
    d5_op_free(op32);
    d5_op_free(op16);
    for (int i = 0; i < 2; i++) {
        d5_tensor_free(&in[i]);
        d5_tensor_free(&rounded[i]);
        d5_tensor_free(&gin[i]);
    }
    d5_tensor_free(&y32);
    d5_tensor_free(&y16);
    d5_tensor_free(&dy);
    free(xv);
    free(wv);
    free(xr);
    free(wr);
    free(dyv);
}

/* A float32 convolution with one input channel stays float32 under the
 * compute precision bf16 (there its bfloat16 kernels and conversions are
 * slower): the kernels and the results of the operator without the precision,
 * bit for bit, and a note that says why. */
Test(dnnl_lowp, conv_few_input_channels_stay_float32_under_bf16)
{
    need_dnnl();
    d5_precision_class cls;
    char text[256];
    need_bf16(&cls, text, sizeof text);
    float *xv, *wv, *bv, *dyv;
    d5_tensor in[3] = {random_tensor(D5_F32, 4, SHAPE(2, 1, 12, 12), 81u, 0, &xv),
                       random_tensor(D5_F32, 4, SHAPE(6, 1, 5, 5), 83u, 0, &wv),
                       random_tensor(D5_F32, 1, SHAPE(6), 89u, 0, &bv)};
    d5_attr items[] = {attr_ints("pads", SHAPE(2, 2, 2, 2), 4),
                       attr_string(D5_ATTR_PRECISION, "bf16")};
    d5_attrs strict = {items, 1}, lowered = {items, 2};
    d5_op *op32 = lowp_create("Conv", in, 3, &strict), *op16 = lowp_create("Conv", in, 3, &lowered);
    d5_tensor y32, y16, g32[3], g16[3];
    lowp_forward(op32, in, D5_F32, &y32);
    lowp_forward(op16, in, D5_F32, &y16);
    cr_assert_eq(memcmp(y32.data, y16.data, (size_t)2 * 6 * 12 * 12 * sizeof(float)), 0);
    d5_tensor dy = random_tensor(D5_F32, 4, SHAPE(2, 6, 12, 12), 97u, 0, &dyv);
    lowp_backward(op32, &dy, in, 3, &y32, g32);
    lowp_backward(op16, &dy, in, 3, &y16, g16);
    const size_t bytes[3] = {2 * 144 * sizeof(float), 6 * 25 * sizeof(float), 6 * sizeof(float)};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(memcmp(g32[i].data, g16[i].data, bytes[i]), 0, "gradient of input %d", i);
    d5_op_impl i32, i16;
    d5_op_impl_get(op32, &i32);
    d5_op_impl_get(op16, &i16);
    cr_assert_str_eq(i16.precision, "f32", "%s", i16.note);
    cr_assert_str_eq(i16.requested, "bf16");
    cr_assert_eq(i16.support, D5_PRECISION_NATIVE);
    cr_assert_str_eq(i16.forward, i32.forward);
    cr_assert_str_eq(i16.backward_weights, i32.backward_weights);
    cr_assert(strstr(i16.note, "bf16 asked; float32: with at most 4 input channels the bfloat16 "
                               "convolution and its conversions are slower than float32"),
              "%s", i16.note);
    d5_op_free(op32);
    for (int i = 0; i < 3; i++) d5_tensor_free(&g32[i]);
    d5_tensor_free(&y32);
    lowp_free_run(op16, in, g16, 3, &y16, &dy);
    free(xv);
    free(wv);
    free(bv);
    free(dyv);
}

/* Float32 tensors under bf16, weights not known at create (training): the
 * backward pass converts dY once for both gradients where their primitives
 * read the same layout, and every call's gradients follow that call's dY,
 * whether the data gradient is asked for or not. */
Test(dnnl_lowp, conv_bf16_gradients_follow_each_dy)
{
    need_dnnl();
    d5_precision_class cls;
    char text[256];
    need_bf16(&cls, text, sizeof text);
    conv2d g = conv_geometry(2, 16, 8, 8, 16, 3, 1, 1, 1);
    float *xr, *wr;
    d5_tensor in[2] = {random_tensor(D5_F32, 4, SHAPE(2, 16, 8, 8), 61u, 1, &xr),
                       random_tensor(D5_F32, 4, SHAPE(16, 16, 3, 3), 67u, 1, &wr)};
    d5_attr items[] = {attr_ints("pads", SHAPE(1, 1, 1, 1), 4),
                       attr_string(D5_ATTR_PRECISION, "bf16")};
    d5_attrs attrs = {items, 2};
    const d5_tensor_desc descs[2] = {in[0].desc, in[1].desc};
    const d5_op_desc *desc;
    d5_op *op;
    cr_assert_eq(d5_op_find("Conv", "dnnl", &desc), D5_OK);
    cr_assert_eq(d5_op_create_desc(desc, descs, 2, &attrs, 1, &op), D5_OK, "%s", d5_last_error());
    d5_tensor y, dx, dw;
    lowp_forward(op, in, D5_F32, &y);
    cr_assert_eq(d5_tensor_alloc(&in[0].desc, &dx), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&in[1].desc, &dw), D5_OK);
    const int want_dx[4] = {1, 0, 1, 0};
    for (uint32_t k = 0; k < 4; k++) {
        float *dyv;
        d5_tensor dy = random_tensor(D5_F32, 4, SHAPE(2, 16, 8, 8), 101u + 7u * k, 1, &dyv);
        d5_tensor gin[2] = {dx, dw};
        if (!want_dx[k]) gin[0].data = NULL;
        cr_assert_eq(d5_op_backward(op, &dy, in, &y, gin), D5_OK, "%s", d5_last_error());
        ref_out rdx, rdw, rdb;
        conv_grad_ref(&g, xr, wr, dyv, &rdx, &rdw, &rdb);
        ref_bound(&rdx, 0, K_SUM(16 * 9));
        ref_bound(&rdw, 0, K_SUM(2 * 64));
        if (want_dx[k]) expect_close(&dx, &rdx, "dX");
        expect_close(&dw, &rdw, "dW");
        ref_free(&rdx);
        ref_free(&rdw);
        ref_free(&rdb);
        d5_tensor_free(&dy);
        free(dyv);
    }
    d5_op_impl impl;
    d5_op_impl_get(op, &impl);
    cr_assert(strstr(impl.backward_data, "bf16"), "%s", impl.backward_data);
    cr_assert(strstr(impl.backward_weights, "bf16"), "%s", impl.backward_weights);
    d5_op_free(op);
    for (int i = 0; i < 2; i++) d5_tensor_free(&in[i]);
    d5_tensor_free(&y);
    d5_tensor_free(&dx);
    d5_tensor_free(&dw);
    free(xr);
    free(wr);
}

/* ---- float16 --------------------------------------------------------------------------------- */

/* Float16 tensors: computed correctly, or declined with D5_ERR_UNSUPPORTED and
 * a message that says oneDNN has no kernel here (2.6 has none on CPUs). */
Test(dnnl_lowp, f16_is_computed_or_cleanly_unsupported)
{
    need_dnnl();
    d5_precision_class cls;
    char text[256];
    cr_assert_eq(d5_dnnl_precision_support("f16", &cls, text, sizeof text), D5_OK);
    d5_tensor_desc x, w, a, b;
    cr_assert_eq(d5_tensor_desc_make(D5_F16, 4, SHAPE(1, 16, 6, 6), &x), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F16, 4, SHAPE(16, 16, 3, 3), &w), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F16, 2, SHAPE(8, 16), &a), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F16, 2, SHAPE(16, 8), &b), D5_OK);
    struct {
        const char *op, *what;
        d5_tensor_desc in[2];
    } cases[] = {{"Conv", "float16 convolution", {x, w}},
                 {"Gemm", "float16 matrix multiplication", {a, b}},
                 {"MatMul", "float16 matrix multiplication", {a, b}}};
    for (size_t i = 0; i < 3; i++) {
        const d5_op_desc *desc;
        d5_op *op = NULL;
        cr_assert_eq(d5_op_find(cases[i].op, "dnnl", &desc), D5_OK);
        d5_status s = d5_op_create_desc(desc, cases[i].in, 2, NULL, 1, &op);
        if (cls == D5_PRECISION_UNSUPPORTED) {
            cr_assert_eq(s, D5_ERR_UNSUPPORTED, "%s: %s", cases[i].op, d5_status_name(s));
            const char *e = d5_last_error();
            cr_assert(strstr(e, cases[i].what), "%s", e);
            cr_assert(strstr(e, "has no CPU implementation on this machine"), "%s", e);
            cr_assert_null(op);
        } else {
            cr_assert_eq(s, D5_OK, "%s: %s", cases[i].op, d5_last_error());
            d5_op_impl impl;
            d5_op_impl_get(op, &impl);
            cr_assert_str_eq(impl.precision, "f16");
            d5_op_free(op);
        }
    }
    /* Float32 tensors asking for f16 stay float32 where it is missing, and say why. */
    d5_tensor_desc xf, wf;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 4, SHAPE(1, 16, 6, 6), &xf), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 4, SHAPE(16, 16, 3, 3), &wf), D5_OK);
    d5_attr items[] = {attr_string(D5_ATTR_PRECISION, "f16")};
    d5_attrs attrs = {items, 1};
    const d5_op_desc *conv;
    d5_op *op = NULL;
    cr_assert_eq(d5_op_find("Conv", "dnnl", &conv), D5_OK);
    cr_assert_eq(d5_op_create_desc(conv, (d5_tensor_desc[]){xf, wf}, 2, &attrs, 1, &op), D5_OK,
                 "%s", d5_last_error());
    d5_op_impl impl;
    d5_op_impl_get(op, &impl);
    if (cls == D5_PRECISION_UNSUPPORTED) {
        cr_assert_str_eq(impl.precision, "f32");
        cr_assert(strstr(impl.note, "f16 asked; float16 convolution: oneDNN"), "%s", impl.note);
    } else {
        cr_assert_str_eq(impl.precision, "f16");
    }
    d5_op_free(op);
}

/* ---- What oneDNN does with each precision here ---------------------------------------------- */

Test(dnnl_lowp, precision_support_classifies_this_machine)
{
    need_dnnl();
    d5_precision_class cls;
    char text[256];
    cr_assert_eq(d5_dnnl_precision_support("f32", &cls, text, sizeof text), D5_OK);
    cr_assert_eq(cls, D5_PRECISION_NATIVE, "%s", text);
    cr_assert(strncmp(text, "native: ", 8) == 0, "%s", text);
    cr_assert_eq(d5_dnnl_precision_support("bf16", &cls, text, sizeof text), D5_OK);
    cr_assert(strncmp(text, d5_precision_class_name(cls), strlen(d5_precision_class_name(cls))) ==
                  0,
              "%s", text);
    /* A machine with AVX512_BF16 runs it natively (the CPU's own flags decide). */
    if (__builtin_cpu_supports("avx512bf16")) cr_assert_eq(cls, D5_PRECISION_NATIVE, "%s", text);
    cr_assert_eq(d5_dnnl_precision_support("int8", &cls, text, sizeof text), D5_OK);
    cr_assert_neq(cls, D5_PRECISION_UNSUPPORTED, "%s", text);
    cr_assert_eq(d5_dnnl_precision_support("f16", &cls, text, sizeof text), D5_OK);
    if (cls == D5_PRECISION_UNSUPPORTED)
        cr_assert(strstr(text, "has no float16 matrix multiplication"), "%s", text);
    cr_assert_eq(d5_dnnl_precision_support("fp8", &cls, text, sizeof text), D5_ERR_INVALID);
    cr_assert_eq(d5_dnnl_precision_support(NULL, &cls, text, sizeof text), D5_ERR_INVALID);
    cr_assert_str_eq(d5_precision_class_name(D5_PRECISION_EMULATED), "emulated");
    cr_assert_str_eq(d5_precision_class_name(42), "unknown");
}

/* oneDNN limited to plain AVX-512 (ONEDNN_MAX_CPU_ISA, read at its first use in
 * this process) computes bfloat16 by emulation, and says so. */
Test(dnnl_lowp, bf16_on_plain_avx512_is_emulated)
{
    need_dnnl();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq"))
        cr_skip_test("this CPU has no AVX-512 core");
    setenv("ONEDNN_MAX_CPU_ISA", "AVX512_CORE", 1);
    d5_precision_class cls;
    char text[256];
    cr_assert_eq(d5_dnnl_precision_support("bf16", &cls, text, sizeof text), D5_OK);
    cr_assert_eq(cls, D5_PRECISION_EMULATED, "%s", text);
    cr_assert(strstr(text, "avx512_core,"), "%s", text);
    d5_tensor_desc a, b;
    cr_assert_eq(d5_tensor_desc_make(D5_BF16, 2, SHAPE(8, 16), &a), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_BF16, 2, SHAPE(16, 8), &b), D5_OK);
    const d5_op_desc *desc;
    d5_op *op = NULL;
    cr_assert_eq(d5_op_find("MatMul", "dnnl", &desc), D5_OK);
    cr_assert_eq(d5_op_create_desc(desc, (d5_tensor_desc[]){a, b}, 2, NULL, 1, &op), D5_OK, "%s",
                 d5_last_error());
    d5_op_impl impl;
    d5_op_impl_get(op, &impl);
    cr_assert_eq(impl.support, D5_PRECISION_EMULATED);
    cr_assert_str_eq(impl.isa, "avx512_core");
    d5_op_free(op);
}

/* Below AVX-512 oneDNN 2.6 has no bfloat16 at all: bfloat16 tensors are
 * declined, and float32 ones under the compute precision bf16 stay float32
 * with the reason. */
Test(dnnl_lowp, bf16_below_avx512_stays_float32)
{
    need_dnnl();
    if (!__builtin_cpu_supports("avx2")) cr_skip_test("this CPU has no AVX2");
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
    d5_precision_class cls;
    char text[256];
    cr_assert_eq(d5_dnnl_precision_support("bf16", &cls, text, sizeof text), D5_OK);
    cr_assert_eq(cls, D5_PRECISION_UNSUPPORTED, "%s", text);
    d5_tensor_desc x, w;
    cr_assert_eq(d5_tensor_desc_make(D5_BF16, 4, SHAPE(1, 8, 6, 6), &x), D5_OK);
    cr_assert_eq(d5_tensor_desc_make(D5_BF16, 4, SHAPE(8, 8, 3, 3), &w), D5_OK);
    const d5_op_desc *conv;
    d5_op *op = NULL;
    cr_assert_eq(d5_op_find("Conv", "dnnl", &conv), D5_OK);
    cr_assert_eq(d5_op_create_desc(conv, (d5_tensor_desc[]){x, w}, 2, NULL, 1, &op),
                 D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "bfloat16 convolution: oneDNN"), "%s", d5_last_error());
    x.dtype = w.dtype = D5_F32;
    d5_attr items[] = {attr_string(D5_ATTR_PRECISION, "bf16")};
    d5_attrs attrs = {items, 1};
    cr_assert_eq(d5_op_create_desc(conv, (d5_tensor_desc[]){x, w}, 2, &attrs, 1, &op), D5_OK, "%s",
                 d5_last_error());
    d5_op_impl impl;
    d5_op_impl_get(op, &impl);
    cr_assert_str_eq(impl.precision, "f32");
    cr_assert_str_eq(impl.isa, "avx2");
    cr_assert(strstr(impl.note, "bf16 asked; bfloat16 convolution: oneDNN") &&
                  strstr(impl.note, "(avx2)"),
              "%s", impl.note);
    d5_op_free(op);
}
