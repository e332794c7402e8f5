/* GlobalAveragePool on the dnnl backend: forward and backward against means
 * and gradients computed here in double, on ONNX's layout (1 to 3 spatial
 * axes) and with X in oneDNN's blocked layout (nChw16c or nChw8c, converted
 * here), and the inputs it declines for the ref backend. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#ifdef D5_TEST_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

/* Channels a block of the executor's blocked layout, chosen as
 * level0_operators/dnnl/dnnl_util.c chooses it. */
static int64_t channel_block(void)
{
#ifdef D5_TEST_DNNL
    return dnnl_get_effective_cpu_isa() >= dnnl_cpu_isa_avx512_core ? 16 : 8;
#else
    cr_skip_test("built without oneDNN's header");
    return 0;
#endif
}

static d5_tensor random_f32(int32_t ndim, const int64_t *shape, uint64_t seed)
{
    d5_tensor t = tf32(ndim, shape, NULL);
    d5_rng rng;
    d5_rng_seed(&rng, seed);
    float *v = t.data;
    for (int64_t i = 0; i < d5_tensor_desc_numel(&t.desc); i++)
        v[i] = (float)(4.0 * d5_rng_uniform(&rng) - 1.0); /* mean far from 0: a bias to keep */
    return t;
}

/* X is N x C x S (the spatial axes flattened, S = their product), in ONNX's
 * layout; the means and dX = dY / S, in double. */
static void expected(const float *x, const float *gy, int64_t planes, int64_t size, double *mean,
                     double *gx)
{
    for (int64_t p = 0; p < planes; p++) {
        double sum = 0;
        for (int64_t i = 0; i < size; i++) sum += x[p * size + i];
        mean[p] = sum / (double)size;
        for (int64_t i = 0; i < size; i++) gx[p * size + i] = gy[p] / (double)size;
    }
}

static void expect_close(const float *got, const double *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= 1e-6 * (1 + fabs(want[i])),
                  "%s[%lld]: %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
}

/* ONNX's N x C x H x W to the blocked N x C/B x H x W x B, and back. */
static void to_blocked(const float *x, float *b, const int64_t *s, int64_t block)
{
    int64_t hw = s[2] * s[3];
    for (int64_t n = 0; n < s[0]; n++)
        for (int64_t c = 0; c < s[1]; c++)
            for (int64_t i = 0; i < hw; i++)
                b[((n * (s[1] / block) + c / block) * hw + i) * block + c % block] =
                    x[(n * s[1] + c) * hw + i];
}

static void from_blocked(const float *b, float *x, const int64_t *s, int64_t block)
{
    int64_t hw = s[2] * s[3];
    for (int64_t n = 0; n < s[0]; n++)
        for (int64_t c = 0; c < s[1]; c++)
            for (int64_t i = 0; i < hw; i++)
                x[(n * s[1] + c) * hw + i] =
                    b[((n * (s[1] / block) + c / block) * hw + i) * block + c % block];
}

static d5_op *create(const d5_tensor_desc *x, const d5_attrs *attrs)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("GlobalAveragePool", "dnnl", &desc), D5_OK, "%s", d5_last_error());
    d5_op *op = NULL;
    d5_status s = d5_op_create_desc(desc, x, 1, attrs, 1, &op);
    cr_assert_eq(s, D5_OK, "%s: %s", d5_status_name(s), d5_last_error());
    return op;
}

/* Forward and backward on ONNX's layout, twice (a second call must not
 * depend on the first). */
static void check_plain(int32_t ndim, const int64_t *shape, uint64_t seed)
{
    need_dnnl();
    d5_tensor x = random_f32(ndim, shape, seed);
    int64_t planes = shape[0] * shape[1], size = d5_tensor_desc_numel(&x.desc) / planes;
    int64_t yshape[5] = {shape[0], shape[1], 1, 1, 1};
    d5_tensor gy = random_f32(ndim, yshape, seed + 1), y = tf32(ndim, yshape, NULL);
    d5_tensor gx = tf32(ndim, shape, NULL);
    double *mean = d5_alloc((size_t)planes * sizeof *mean, "test");
    double *want_gx = d5_alloc((size_t)(planes * size) * sizeof *want_gx, "test");
    cr_assert(mean && want_gx);
    expected(x.data, gy.data, planes, size, mean, want_gx);

    d5_op *op = create(&x.desc, NULL);
    const d5_tensor_desc *yd = d5_op_output_desc(op, 0);
    cr_assert_eq(yd->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) cr_assert_eq(yd->shape[i], yshape[i], "Y's axis %d", i);
    for (int rep = 0; rep < 2; rep++) {
        cr_assert_eq(d5_op_forward(op, &x, &y), D5_OK, "%s", d5_last_error());
        expect_close(y.data, mean, planes, "Y");
        cr_assert_eq(d5_op_backward(op, &gy, &x, &y, &gx), D5_OK, "%s", d5_last_error());
        expect_close(gx.data, want_gx, planes * size, "dX");
    }
    d5_op_free(op);
    d5_free(mean);
    d5_free(want_gx);
    d5_tensor *all[] = {&x, &gy, &y, &gx};
    for (size_t i = 0; i < 4; i++) d5_tensor_free(all[i]);
}

Test(dnnl_gap, rank3_one_spatial_axis)
{
    check_plain(3, SHAPE(3, 5, 17), 11);
}

Test(dnnl_gap, rank4_two_spatial_axes)
{
    check_plain(4, SHAPE(2, 3, 7, 9), 12);
    check_plain(4, SHAPE(32, 64, 8, 8), 13);
    check_plain(4, SHAPE(1, 16, 1, 1), 14);
}

Test(dnnl_gap, rank5_three_spatial_axes)
{
    check_plain(5, SHAPE(2, 4, 3, 5, 6), 15);
}

/* A large plane, where a float32 running sum would drift. */
Test(dnnl_gap, large_plane_sums_in_double)
{
    check_plain(4, SHAPE(1, 2, 300, 301), 16);
}

/* X (and dX) in the blocked layout, Y in ONNX's layout or blocked too (for
 * [N, C, 1, 1] both hold the same bytes). */
static void check_blocked(int64_t blocked_bits)
{
    need_dnnl();
    const int64_t block = channel_block();
    const int64_t *shape = SHAPE(3, 2 * block, 5, 7);
    d5_tensor x = random_f32(4, shape, 21);
    int64_t planes = shape[0] * shape[1], size = shape[2] * shape[3];
    d5_tensor gy = random_f32(4, SHAPE(3, 2 * block, 1, 1), 22);
    d5_tensor y = tf32(4, SHAPE(3, 2 * block, 1, 1), NULL);
    d5_tensor xb = tf32(4, shape, NULL), gxb = tf32(4, shape, NULL), gx = tf32(4, shape, NULL);
    double *mean = d5_alloc((size_t)planes * sizeof *mean, "test");
    double *want_gx = d5_alloc((size_t)(planes * size) * sizeof *want_gx, "test");
    cr_assert(mean && want_gx);
    expected(x.data, gy.data, planes, size, mean, want_gx);
    to_blocked(x.data, xb.data, shape, block);

    d5_attr a = attr_int(D5_ATTR_BLOCKED, blocked_bits);
    d5_attrs attrs = {&a, 1};
    d5_op *op = create(&x.desc, &attrs);
    cr_assert_eq(d5_op_forward(op, &xb, &y), D5_OK, "%s", d5_last_error());
    expect_close(y.data, mean, planes, "Y");
    for (int rep = 0; rep < 2; rep++) {
        memset(gxb.data, 0, (size_t)(planes * size) * sizeof(float));
        cr_assert_eq(d5_op_backward(op, &gy, &xb, &y, &gxb), D5_OK, "%s", d5_last_error());
        from_blocked(gxb.data, gx.data, shape, block);
        expect_close(gx.data, want_gx, planes * size, "dX");
    }
    d5_op_free(op);
    d5_free(mean);
    d5_free(want_gx);
    d5_tensor *all[] = {&x, &gy, &y, &xb, &gxb, &gx};
    for (size_t i = 0; i < 6; i++) d5_tensor_free(all[i]);
}

Test(dnnl_gap, blocked_x)
{
    check_blocked(D5_BLOCKED_X);
}

Test(dnnl_gap, blocked_x_and_y)
{
    check_blocked(D5_BLOCKED_X | D5_BLOCKED_Y);
}

/* The executor keeps the plain layout when the operator declines. */
Test(dnnl_gap, blocked_declined)
{
    need_dnnl();
    const int64_t block = channel_block();
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("GlobalAveragePool", "dnnl", &desc), D5_OK);
    d5_attr a = attr_int(D5_ATTR_BLOCKED, D5_BLOCKED_X);
    d5_attrs attrs = {&a, 1};
    d5_tensor_desc x;
    d5_op *op = NULL;
    x = op_fdesc(4, SHAPE(2, block + 4, 3, 3));
    cr_assert_eq(d5_op_create_desc(desc, &x, 1, &attrs, 1, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "GlobalAveragePool (dnnl)"), "%s", d5_last_error());
    cr_assert(strstr(d5_last_error(), "multiples"), "%s", d5_last_error());
    x = op_fdesc(3, SHAPE(2, block, 9));
    cr_assert_eq(d5_op_create_desc(desc, &x, 1, &attrs, 1, &op), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "GlobalAveragePool (dnnl): the blocked layout is for 2-d"),
              "%s", d5_last_error());
}

static void declined(int32_t dtype, int32_t ndim, const int64_t *shape, d5_status want,
                     const char *text)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("GlobalAveragePool", "dnnl", &desc), D5_OK);
    d5_tensor_desc x;
    d5_op *op = NULL;
    cr_assert_eq(d5_tensor_desc_make((d5_dtype)dtype, ndim, shape, &x), D5_OK);
    d5_status s = d5_op_create_desc(desc, &x, 1, NULL, 1, &op);
    cr_assert_eq(s, want, "%s: %s", d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "'%s' lacks '%s'", d5_last_error(), text);
}

Test(dnnl_gap, declines_what_ref_computes)
{
    need_dnnl();
    declined(D5_F32, 2, SHAPE(4, 3), D5_ERR_UNSUPPORTED, "GlobalAveragePool (dnnl): input 0 has 2");
    declined(D5_F32, 6, SHAPE(1, 2, 2, 2, 2, 2), D5_ERR_UNSUPPORTED, "1 to 3 spatial axes");
    declined(D5_F64, 4, SHAPE(1, 2, 3, 3), D5_ERR_UNSUPPORTED, "float32 only");
    declined(D5_F32, 4, SHAPE(1, 2, 3, 0), D5_ERR_SHAPE, "spatial axis 1 of input 0 is empty");
    /* ref takes the rank-2 input: Y = X. */
    d5_tensor x = tf32(2, SHAPE(2, 2), VALS(1, 2, 3, 4)), y;
    run_op("GlobalAveragePool", "ref", &x, 1, NULL, &y, 1);
    expect_values(&y, VALS(1, 2, 3, 4), 4, 0);
    d5_tensor_free(&x);
    d5_tensor_free(&y);
}

Test(dnnl_gap, table_entry)
{
    need_dnnl();
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find("GlobalAveragePool", "dnnl", &desc), D5_OK);
    cr_assert_str_eq(desc->name, "GlobalAveragePool");
    cr_assert_str_eq(desc->backend, "dnnl");
    cr_assert(desc->flags & D5_OP_HAS_BACKWARD);
    cr_assert_eq(desc->min_inputs, 1);
    cr_assert_eq(desc->max_inputs, 1);
    cr_assert_eq(desc->min_outputs, 1);
    cr_assert_eq(desc->max_outputs, 1);
    /* Work: one addition per input element. */
    d5_tensor_desc x = op_fdesc(4, SHAPE(2, 3, 4, 5));
    d5_op *op = create(&x, NULL);
    double flops, bytes;
    d5_op_cost(op, &flops, &bytes);
    cr_assert_float_eq(flops, 120.0, 1e-9);
    cr_assert_float_eq(bytes, 4.0 * (120 + 6), 1e-9);
    d5_op_free(op);
}
