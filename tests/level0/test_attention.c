/* Attention (ONNX opset 23) on ref and dnnl: outputs against PyTorch
 * (attention_reference.h, written by make_attention_reference.py from the
 * operator page's equations, and checked there against ONNX's own reference
 * implementation), gradients against central finite differences, dnnl
 * against ref on larger shapes, and the errors of bad nodes. */
#include "attention_reference.h"
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

TestSuite(attention, .timeout = 120);

#define NCASES ((int)(sizeof attention_cases / sizeof attention_cases[0]))

/* A tensor of `dtype` holding the n values v. */
static d5_tensor tensor(d5_dtype dtype, int32_t ndim, const int64_t *shape, const double *v)
{
    d5_tensor_desc d;
    d5_tensor t;
    cr_assert_eq(d5_tensor_desc_make(dtype, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&d); i++) {
        if (dtype == D5_F64)
            ((double *)t.data)[i] = v[i];
        else if (dtype == D5_F32)
            ((float *)t.data)[i] = (float)v[i];
        else
            ((unsigned char *)t.data)[i] = v[i] != 0;
    }
    return t;
}

typedef struct attrs_buf {
    d5_attr items[6];
    d5_attrs attrs;
} attrs_buf;

static const d5_attrs *case_attrs(const attention_case *c, attrs_buf *b)
{
    int32_t n = 0;
    if (c->rank == 3) {
        b->items[n++] = attr_int("q_num_heads", c->q_heads);
        b->items[n++] = attr_int("kv_num_heads", c->kv_heads);
    }
    if (c->causal) b->items[n++] = attr_int("is_causal", 1);
    if (c->scale != 0) b->items[n++] = attr_float("scale", c->scale);
    if (c->softcap != 0) b->items[n++] = attr_float("softcap", c->softcap);
    if (c->nout > 3) b->items[n++] = attr_int("qk_matmul_output_mode", c->qk_mode);
    b->attrs = (d5_attrs){b->items, n};
    return &b->attrs;
}

/* The case's inputs in `dtype`; returns how many. */
static int32_t case_inputs(const attention_case *c, d5_dtype dtype, d5_tensor *in)
{
    memset(in, 0, 6 * sizeof *in);
    in[0] = tensor(dtype, c->rank, c->q, c->Q);
    in[1] = tensor(dtype, c->rank, c->k, c->K);
    in[2] = tensor(dtype, c->rank, c->v, c->V);
    int32_t nin = 3;
    if (c->M) {
        in[3] = tensor(c->mask_bool ? D5_BOOL : dtype, c->mask_ndim, c->mask, c->M);
        nin = 4;
    }
    if (c->PK) {
        in[4] = tensor(dtype, 4, c->past_k, c->PK);
        in[5] = tensor(dtype, 4, c->past_v, c->PV);
        nin = 6;
    }
    return nin;
}

/* Output k of the case against want: equal infinities, else within tol. */
static void expect_output(const attention_case *c, const d5_tensor *got, int k, const double *want,
                          double tol, const char *backend)
{
    for (int64_t i = 0; i < d5_tensor_desc_numel(&got->desc); i++) {
        double g = got->desc.dtype == D5_F64 ? ((const double *)got->data)[i]
                                             : ((const float *)got->data)[i];
        if (isinf(want[i]))
            cr_assert(g == want[i], "%s (%s) output %d element %lld: got %g, want %g", c->name,
                      backend, k, (long long)i, g, want[i]);
        else
            cr_assert(fabs(g - want[i]) <= tol * (1 + fabs(want[i])),
                      "%s (%s) output %d element %lld: got %.9g, want %.9g", c->name, backend, k,
                      (long long)i, g, want[i]);
    }
}

static void check_case(const attention_case *c, const char *backend, d5_dtype dtype, double tol)
{
    d5_tensor in[6], out[4];
    int32_t nin = case_inputs(c, dtype, in);
    attrs_buf ab;
    run_op("Attention", backend, in, nin, case_attrs(c, &ab), out, c->nout);
    const double *want[4] = {c->Y, c->PRK, c->PRV, c->QK};
    for (int k = 0; k < c->nout; k++) {
        cr_assert_not_null(want[k]);
        expect_output(c, &out[k], k, want[k], tol, backend);
    }
    op_free_all(out, c->nout);
    op_free_all(in, nin);
}

Test(attention, ref_computes_what_torch_computes_in_float64)
{
    for (int i = 0; i < NCASES; i++) check_case(&attention_cases[i], "ref", D5_F64, 1e-12);
}

Test(attention, ref_computes_what_torch_computes_in_float32)
{
    for (int i = 0; i < NCASES; i++) check_case(&attention_cases[i], "ref", D5_F32, 2e-6);
}

/* The tiled kernel takes every case without a past or extra outputs; it
 * declines the others, which the executor then runs on ref. */
Test(attention, dnnl_computes_what_torch_computes)
{
    need_dnnl();
    int ran = 0;
    for (int i = 0; i < NCASES; i++) {
        const attention_case *c = &attention_cases[i];
        if (c->PK || c->nout > 1) {
            d5_tensor in[6], out[4];
            int32_t nin = case_inputs(c, D5_F32, in);
            attrs_buf ab;
            d5_status s = try_op("Attention", "dnnl", in, nin, case_attrs(c, &ab), out, c->nout);
            cr_expect_eq(s, D5_ERR_UNSUPPORTED, "%s: %s", c->name, d5_status_name(s));
            op_free_all(in, nin);
            continue;
        }
        check_case(c, "dnnl", D5_F32, 2e-6);
        ran++;
    }
    cr_assert_geq(ran, 5);
}

/* ---- dnnl against ref where the kernel tiles: several query blocks of 64,
 * key blocks, a mask broadcast along heads, causal rows, grouped heads. ---- */

static void dnnl_like_ref(int32_t nin, const d5_tensor_desc *d, const d5_attrs *attrs,
                          const unsigned char *mask)
{
    need_dnnl();
    d5_rng rng;
    d5_rng_seed(&rng, 11);
    d5_tensor in[4], a, b;
    for (int32_t i = 0; i < nin; i++) {
        cr_assert_eq(d5_tensor_alloc(&d[i], &in[i]), D5_OK);
        if (d[i].dtype == D5_BOOL && mask)
            memcpy(in[i].data, mask, (size_t)d5_tensor_desc_numel(&d[i]));
        else
            d5_tensor_fill_uniform(&in[i], &rng, -2, 2);
    }
    run_op("Attention", "dnnl", in, nin, attrs, &a, 1);
    run_op("Attention", "ref", in, nin, attrs, &b, 1);
    const float *x = a.data, *y = b.data;
    for (int64_t i = 0; i < d5_tensor_desc_numel(&a.desc); i++)
        cr_assert(fabsf(x[i] - y[i]) <= 2e-5f * (1 + fabsf(y[i])), "element %lld: dnnl %g, ref %g",
                  (long long)i, x[i], y[i]);
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    op_free_all(in, nin);
}

Test(attention, dnnl_tiles_like_ref_with_a_float_mask)
{
    d5_tensor_desc d[4] = {op_fdesc(4, SHAPE(2, 3, 150, 16)), op_fdesc(4, SHAPE(2, 3, 200, 16)),
                           op_fdesc(4, SHAPE(2, 3, 200, 8)), op_fdesc(4, SHAPE(2, 1, 150, 200))};
    dnnl_like_ref(4, d, NULL, NULL);
}

Test(attention, dnnl_tiles_like_ref_causal_grouped_3d)
{
    d5_tensor_desc d[3] = {op_fdesc(3, SHAPE(1, 130, 4 * 8)), op_fdesc(3, SHAPE(1, 130, 2 * 8)),
                           op_fdesc(3, SHAPE(1, 130, 2 * 8))};
    d5_attr at[3] = {attr_int("q_num_heads", 4), attr_int("kv_num_heads", 2),
                     attr_int("is_causal", 1)};
    d5_attrs attrs = {at, 3};
    dnnl_like_ref(3, d, &attrs, NULL);
}

Test(attention, dnnl_tiles_like_ref_with_a_bool_mask_and_softcap)
{
    static unsigned char mask[70 * 90];
    for (int i = 0; i < 70 * 90; i++) mask[i] = (i * 7) % 5 != 0 || i % 90 == 0;
    for (int j = 0; j < 90; j++) mask[3 * 90 + j] = 0; /* query 3 sees nothing: zeros */
    d5_tensor_desc d[4] = {op_fdesc(4, SHAPE(1, 2, 70, 16)), op_fdesc(4, SHAPE(1, 2, 90, 16)),
                           op_fdesc(4, SHAPE(1, 2, 90, 16))};
    cr_assert_eq(d5_tensor_desc_make(D5_BOOL, 2, SHAPE(70, 90), &d[3]), D5_OK);
    d5_attr at[2] = {attr_float("softcap", 3.0), attr_float("scale", 0.5)};
    d5_attrs attrs = {at, 2};
    dnnl_like_ref(4, d, &attrs, mask);
}

/* More keys than one block holds (2048): the running maximum and sum carry
 * across blocks; the first rows see keys of the second block only. */
Test(attention, dnnl_tiles_like_ref_across_key_blocks)
{
    enum { Q = 70, T = 2100 };
    static unsigned char mask[Q * T];
    for (int i = 0; i < Q; i++)
        for (int j = 0; j < T; j++) mask[i * T + j] = i < 5 ? j >= 2048 : (i + j) % 3 != 0;
    d5_tensor_desc d[4] = {op_fdesc(4, SHAPE(1, 2, Q, 16)), op_fdesc(4, SHAPE(1, 2, T, 16)),
                           op_fdesc(4, SHAPE(1, 2, T, 8))};
    cr_assert_eq(d5_tensor_desc_make(D5_BOOL, 2, SHAPE(Q, T), &d[3]), D5_OK);
    dnnl_like_ref(4, d, NULL, mask);
}

/* ---- Gradients against finite differences ---- */

static void gradient(const char *label, int32_t nin, const d5_tensor_desc *d,
                     const d5_tensor *given, const d5_attr *at, int32_t nat, int32_t nout)
{
    d5_attrs attrs = {at, nat};
    expect_gradient_of(label, "Attention", d, nin, given, &attrs, nout);
}

Test(attention, gradient_with_a_float_mask_and_causal)
{
    d5_tensor_desc d[4] = {op_fdesc(4, SHAPE(1, 2, 3, 4)), op_fdesc(4, SHAPE(1, 2, 3, 4)),
                           op_fdesc(4, SHAPE(1, 2, 3, 5)), op_fdesc(4, SHAPE(1, 2, 3, 3))};
    d5_tensor given[4] = {{.data = NULL}};
    d5_attr at[1] = {attr_int("is_causal", 1)};
    gradient("float mask, causal", 4, d, given, at, 1, 1);
}

Test(attention, gradient_through_the_past_present_and_scores)
{
    d5_tensor_desc d[6] = {op_fdesc(3, SHAPE(1, 2, 2 * 4)), op_fdesc(3, SHAPE(1, 2, 4)),
                           op_fdesc(3, SHAPE(1, 2, 3)),     {.dtype = D5_DTYPE_INVALID},
                           op_fdesc(4, SHAPE(1, 1, 2, 4)),  op_fdesc(4, SHAPE(1, 1, 2, 3))};
    d5_tensor given[6] = {{.data = NULL}};
    for (int64_t mode = 0; mode < 4; mode++) {
        d5_attr at[5] = {attr_int("q_num_heads", 2), attr_int("kv_num_heads", 1),
                         /* mode 2's scores carry the causal -inf: no loss */
                         attr_int("is_causal", mode != 2), attr_float("softcap", 1.2),
                         attr_int("qk_matmul_output_mode", mode)};
        char label[64];
        snprintf(label, sizeof label, "past, present, qk mode %lld", (long long)mode);
        gradient(label, 6, d, given, at, 5, 4);
    }
}

Test(attention, gradient_with_a_bool_mask)
{
    static const unsigned char m[12] = {1, 0, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1};
    d5_tensor_desc d[4] = {op_fdesc(4, SHAPE(2, 1, 3, 4)), op_fdesc(4, SHAPE(2, 1, 4, 4)),
                           op_fdesc(4, SHAPE(2, 1, 4, 2))};
    cr_assert_eq(d5_tensor_desc_make(D5_BOOL, 2, SHAPE(3, 4), &d[3]), D5_OK);
    d5_tensor given[4] = {{.data = NULL}};
    cr_assert_eq(d5_tensor_alloc(&d[3], &given[3]), D5_OK);
    memcpy(given[3].data, m, sizeof m);
    d5_attr at[1] = {attr_float("scale", 0.8)};
    gradient("bool mask", 4, d, given, at, 1, 1);
    d5_tensor_free(&given[3]);
}

/* ---- Bad nodes ---- */

static void expect_error(int32_t nin, const d5_tensor_desc *d, const d5_attr *at, int32_t nat,
                         d5_status want, const char *text)
{
    d5_tensor in[7];
    memset(in, 0, sizeof in);
    for (int32_t i = 0; i < nin; i++) in[i].desc = d[i];
    d5_attrs attrs = {at, nat};
    op_expect_fails("Attention", in, nin, &attrs, 1, want, text);
}

Test(attention, rejects_bad_nodes)
{
    d5_tensor_desc q3 = op_fdesc(3, SHAPE(1, 4, 12)), q4 = op_fdesc(4, SHAPE(1, 3, 4, 8));
    d5_tensor_desc three[3] = {q3, q3, q3};
    expect_error(3, three, NULL, 0, D5_ERR_INVALID, "q_num_heads and kv_num_heads");
    d5_attr heads5[2] = {attr_int("q_num_heads", 5), attr_int("kv_num_heads", 5)};
    expect_error(3, three, heads5, 2, D5_ERR_SHAPE, "which 5 heads do not divide");
    d5_tensor_desc gqa[3] = {q4, op_fdesc(4, SHAPE(1, 2, 4, 8)), op_fdesc(4, SHAPE(1, 2, 4, 8))};
    expect_error(3, gqa, NULL, 0, D5_ERR_SHAPE, "the key heads must divide the query heads");
    d5_tensor_desc size[3] = {q4, op_fdesc(4, SHAPE(1, 3, 4, 6)), q4};
    expect_error(3, size, NULL, 0, D5_ERR_SHAPE, "K has shape [1,3,4,6]");
    d5_tensor_desc mask[4] = {q4, q4, q4, op_fdesc(2, SHAPE(2, 4))};
    expect_error(4, mask, NULL, 0, D5_ERR_SHAPE, "attn_mask has shape [2,4]");
    d5_tensor_desc longer[4] = {q4, q4, q4, op_fdesc(2, SHAPE(4, 5))};
    expect_error(4, longer, NULL, 0, D5_ERR_SHAPE, "the last at most 4");
    d5_tensor_desc past[5] = {
        q4, q4, q4, {.dtype = D5_DTYPE_INVALID}, op_fdesc(4, SHAPE(1, 3, 2, 8))};
    expect_error(5, past, NULL, 0, D5_ERR_INVALID, "only past_key is given");
    d5_tensor_desc ints[3] = {q4, q4, q4};
    ints[1].dtype = D5_I32;
    expect_error(3, ints, NULL, 0, D5_ERR_UNSUPPORTED, "input 1");
    d5_attr mode[1] = {attr_int("qk_matmul_output_mode", 4)};
    d5_tensor_desc ok[3] = {q4, q4, q4};
    expect_error(3, ok, mode, 1, D5_ERR_INVALID, "qk_matmul_output_mode is 4");
    d5_attr window[1] = {attr_int("left_window_size", -2)};
    expect_error(3, ok, window, 1, D5_ERR_INVALID, "left_window_size is -2");
}
