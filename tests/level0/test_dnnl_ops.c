/* The dnnl backend's activations, pooling and batch normalization against the
 * ref backend: forward and backward on random inputs, and the combinations the
 * backend refuses. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* How inputs are drawn: uniform in [-1, 1], inputs whose bit is set in
 * `positive` in [0.2, 1.2] (variances, logarithms), both scaled by `range`
 * when it is set, and with zeros > 0 every zeros-th element of input 0
 * exactly 0 (the kinks of Relu, Abs, ...). */
typedef struct draw {
    uint32_t positive;
    int zeros;
    uint64_t seed;
    double range;
} draw;

static void fill(d5_tensor *x, const d5_tensor_desc *in, int32_t nin, draw how)
{
    d5_rng rng;
    d5_rng_seed(&rng, how.seed ? how.seed : 7);
    for (int32_t i = 0; i < nin; i++) {
        cr_assert_eq(d5_tensor_alloc(&in[i], &x[i]), D5_OK);
        int pos = (how.positive >> i) & 1;
        double r = how.range > 0 ? how.range : 1;
        d5_tensor_fill_uniform(&x[i], &rng, r * (pos ? 0.2 : -1.0), r * (pos ? 1.2 : 1.0));
        if (i == 0 && how.zeros > 0) {
            int64_t n = d5_tensor_desc_numel(&in[0]);
            for (int64_t k = 0; k < n; k += how.zeros) ((float *)x[0].data)[k] = 0.f;
        }
    }
}

/* Checks forward (every output) and backward (every input) of the dnnl
 * backend against ref, with `nout` outputs. */
static void same_as_ref_n(const char *name, const d5_tensor_desc *in, int32_t nin,
                          const d5_attrs *attrs, int32_t nout, draw how)
{
    need_dnnl();
    const d5_op_desc *cand, *ref;
    cr_assert_eq(d5_op_find(name, "dnnl", &cand), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_find(name, "ref", &ref), D5_OK);
    d5_tensor x[8];
    memset(x, 0, sizeof x);
    fill(x, in, nin, how);
    d5_check_params p = d5_check_default_params();
    d5_forward_check r;
    cr_assert_eq(d5_validate_forward(cand, ref, in, nin, x, attrs, nout, &p, &r), D5_OK, "%s: %s",
                 name, d5_last_error());
    for (int32_t k = 0; k < r.noutputs; k++)
        cr_assert(r.out[k].linf <= r.tol[k] && !r.out[k].nonfinite,
                  "%s forward, output %d: linf %.3g > %.3g at %lld (got %g want %g)", name, k,
                  r.out[k].linf, r.tol[k], (long long)r.out[k].worst, r.out[k].got, r.out[k].want);
    cr_assert(r.passed, "%s forward", name);
    cr_assert_eq(d5_validate_backward(cand, ref, in, nin, x, attrs, nout, &p, &r), D5_OK, "%s: %s",
                 name, d5_last_error());
    for (int32_t i = 0; i < nin; i++)
        cr_assert(r.out[i].linf <= r.tol[i] && !r.out[i].nonfinite,
                  "%s gradient of input %d: linf %.3g > %.3g at %lld (got %g want %g)", name, i,
                  r.out[i].linf, r.tol[i], (long long)r.out[i].worst, r.out[i].got, r.out[i].want);
    cr_assert(r.passed, "%s backward", name);
    for (int32_t i = 0; i < nin; i++) d5_tensor_free(&x[i]);
}

static void same_as_ref(const char *name, const d5_tensor_desc *in, int32_t nin,
                        const d5_attrs *attrs)
{
    same_as_ref_n(name, in, nin, attrs, 1, (draw){0});
}

/* Asserts that creating `name` on dnnl fails with `want` and a message
 * holding `text` and the operator's name. */
static void refused(const char *name, const d5_tensor_desc *in, int32_t nin, const d5_attrs *attrs,
                    int32_t nout, d5_status want, const char *text)
{
    need_dnnl();
    const d5_op_desc *d;
    cr_assert_eq(d5_op_find(name, "dnnl", &d), D5_OK);
    d5_op *op = NULL;
    d5_status s = d5_op_create_desc(d, in, nin, attrs, nout, &op);
    cr_assert_eq(s, want, "%s: got %s (%s)", name, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "%s: '%s' lacks '%s'", name, d5_last_error(), text);
    cr_assert(strstr(d5_last_error(), name), "%s: '%s' does not name it", name, d5_last_error());
}

/* ---- Activations ----------------------------------------------------------------- */

static const char *const eltwise_names[] = {"Relu",     "LeakyRelu", "Elu", "Sigmoid", "Tanh",
                                            "Softplus", "Exp",       "Log", "Sqrt",    "Abs"};
#define NELTWISE (sizeof eltwise_names / sizeof eltwise_names[0])

static int needs_positive(const char *name)
{
    return strcmp(name, "Log") == 0 || strcmp(name, "Sqrt") == 0;
}

Test(dnnl_ops, activations_every_rank)
{
    const d5_tensor_desc shapes[] = {op_fdesc(0, NULL),
                                     op_fdesc(1, SHAPE(37)),
                                     op_fdesc(2, SHAPE(5, 9)),
                                     op_fdesc(4, SHAPE(2, 3, 5, 7)),
                                     op_fdesc(6, SHAPE(2, 1, 3, 2, 2, 3)),
                                     op_fdesc(8, SHAPE(1, 2, 1, 3, 1, 2, 2, 1))};
    for (size_t k = 0; k < NELTWISE; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            same_as_ref_n(eltwise_names[k], &shapes[s], 1, NULL, 1,
                          (draw){.positive = needs_positive(eltwise_names[k]) ? 1u : 0u});
}

Test(dnnl_ops, activations_large_tensor)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(4, 16, 17, 19));
    for (size_t k = 0; k < NELTWISE; k++)
        same_as_ref_n(eltwise_names[k], &x, 1, NULL, 1,
                      (draw){.positive = needs_positive(eltwise_names[k]) ? 1u : 0u});
}

Test(dnnl_ops, activations_wide_range)
{
    d5_tensor_desc x = op_fdesc(2, SHAPE(16, 65));
    for (size_t k = 0; k < NELTWISE; k++)
        same_as_ref_n(eltwise_names[k], &x, 1, NULL, 1,
                      (draw){.positive = needs_positive(eltwise_names[k]) ? 1u : 0u, .range = 15});
}

Test(dnnl_ops, log_and_sqrt_of_negatives_are_nan_as_in_ref)
{
    d5_tensor_desc x = op_fdesc(2, SHAPE(8, 33));
    same_as_ref("Log", &x, 1, NULL);
    same_as_ref("Sqrt", &x, 1, NULL);
}

Test(dnnl_ops, activations_with_alpha)
{
    d5_tensor_desc x = op_fdesc(3, SHAPE(3, 4, 11));
    const double alphas[] = {0.2, 1.0, -0.3, 2.5};
    for (size_t i = 0; i < sizeof alphas / sizeof alphas[0]; i++) {
        d5_attr a[] = {attr_float("alpha", alphas[i])};
        d5_attrs attrs = {a, 1};
        same_as_ref("LeakyRelu", &x, 1, &attrs);
        same_as_ref("Elu", &x, 1, &attrs);
    }
}

Test(dnnl_ops, gradients_at_zero_follow_ref)
{
    d5_tensor_desc x = op_fdesc(2, SHAPE(6, 13));
    const char *names[] = {"Relu", "LeakyRelu", "Elu", "Abs"};
    for (size_t k = 0; k < 4; k++) same_as_ref_n(names[k], &x, 1, NULL, 1, (draw){.zeros = 3});
    d5_attr a[] = {attr_float("alpha", 0.5)};
    d5_attrs attrs = {a, 1};
    same_as_ref_n("LeakyRelu", &x, 1, &attrs, 1, (draw){.zeros = 2});
    same_as_ref_n("Elu", &x, 1, &attrs, 1, (draw){.zeros = 2});
}

/* ---- Pooling --------------------------------------------------------------------- */

static void both_pools(const d5_tensor_desc *x, const d5_attr *items, int32_t n)
{
    d5_attr a[16];
    memcpy(a, items, (size_t)n * sizeof *a);
    d5_attrs attrs = {a, n};
    same_as_ref("MaxPool", x, 1, &attrs);
    for (int include = 0; include <= 1; include++) {
        a[n] = attr_int("count_include_pad", include);
        d5_attrs avg = {a, n + 1};
        same_as_ref("AveragePool", x, 1, &avg);
    }
}

Test(dnnl_ops, pool_2d_strides_pads)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(2, 3, 9, 8));
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(3, 3), 2), attr_ints("strides", SHAPE(2, 2), 2),
                   attr_ints("pads", SHAPE(1, 1, 1, 1), 4)};
    both_pools(&x, a, 3);
    d5_attr b[] = {attr_ints("kernel_shape", SHAPE(2, 3), 2), attr_ints("strides", SHAPE(1, 2), 2),
                   attr_ints("pads", SHAPE(1, 0, 0, 2), 4)};
    both_pools(&x, b, 3);
    d5_attr c[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2)};
    both_pools(&x, c, 1);
}

Test(dnnl_ops, pool_1d_dilations)
{
    d5_tensor_desc x = op_fdesc(3, SHAPE(2, 4, 20));
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(3), 1), attr_ints("dilations", SHAPE(2), 1),
                   attr_ints("strides", SHAPE(2), 1), attr_ints("pads", SHAPE(2, 1), 2)};
    both_pools(&x, a, 4);
    d5_attr b[] = {attr_ints("kernel_shape", SHAPE(4), 1), attr_ints("dilations", SHAPE(3), 1)};
    both_pools(&x, b, 2);
}

Test(dnnl_ops, pool_3d)
{
    d5_tensor_desc x = op_fdesc(5, SHAPE(1, 3, 6, 7, 5));
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(2, 3, 2), 3),
                   attr_ints("strides", SHAPE(2, 1, 2), 3),
                   attr_ints("pads", SHAPE(0, 1, 1, 1, 1, 0), 6)};
    both_pools(&x, a, 3);
    d5_attr b[] = {attr_ints("kernel_shape", SHAPE(2, 2, 2), 3),
                   attr_ints("dilations", SHAPE(2, 1, 2), 3)};
    both_pools(&x, b, 2);
}

Test(dnnl_ops, pool_auto_pad)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(1, 2, 7, 8));
    const char *modes[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
    for (int m = 0; m < 3; m++) {
        d5_attr a[] = {attr_ints("kernel_shape", SHAPE(2, 3), 2),
                       attr_ints("strides", SHAPE(2, 2), 2), attr_string("auto_pad", modes[m])};
        both_pools(&x, a, 3);
        d5_attr c[] = {attr_ints("kernel_shape", SHAPE(4, 2), 2), attr_string("auto_pad", modes[m]),
                       attr_int("ceil_mode", 1)};
        both_pools(&x, c, 3);
    }
}

/* ceil_mode where it adds a window: MaxPool and AveragePool excluding padding. */
Test(dnnl_ops, pool_ceil_mode)
{
    d5_tensor_desc x1 = op_fdesc(3, SHAPE(2, 3, 8));
    d5_tensor_desc x2 = op_fdesc(4, SHAPE(1, 2, 10, 9));
    d5_tensor_desc x3 = op_fdesc(5, SHAPE(1, 2, 5, 6, 7));
    d5_attr a1[] = {attr_ints("kernel_shape", SHAPE(3), 1), attr_ints("strides", SHAPE(2), 1),
                    attr_int("ceil_mode", 1)};
    d5_attr a2[] = {attr_ints("kernel_shape", SHAPE(3, 2), 2), attr_ints("strides", SHAPE(2, 2), 2),
                    attr_ints("pads", SHAPE(1, 0, 1, 0), 4), attr_ints("dilations", SHAPE(1, 2), 2),
                    attr_int("ceil_mode", 1)};
    d5_attr a3[] = {attr_ints("kernel_shape", SHAPE(2, 2, 3), 3),
                    attr_ints("strides", SHAPE(2, 3, 2), 3), attr_int("ceil_mode", 1)};
    struct {
        const d5_tensor_desc *x;
        d5_attr *a;
        int32_t n;
    } cases[] = {{&x1, a1, 3}, {&x2, a2, 5}, {&x3, a3, 3}};
    for (int k = 0; k < 3; k++) {
        d5_attr a[8];
        memcpy(a, cases[k].a, (size_t)cases[k].n * sizeof *a);
        d5_attrs attrs = {a, cases[k].n};
        same_as_ref("MaxPool", cases[k].x, 1, &attrs);
        a[cases[k].n] = attr_int("count_include_pad", 0);
        d5_attrs avg = {a, cases[k].n + 1};
        same_as_ref("AveragePool", cases[k].x, 1, &avg);
    }
    /* ceil_mode that adds no window: count_include_pad=1 is exact too. */
    d5_tensor_desc x = op_fdesc(4, SHAPE(2, 2, 9, 8));
    d5_attr b[] = {attr_ints("kernel_shape", SHAPE(3, 3), 2), attr_ints("strides", SHAPE(2, 2), 2),
                   attr_ints("pads", SHAPE(1, 1, 1, 0), 4), attr_int("ceil_mode", 1)};
    both_pools(&x, b, 4);
}

Test(dnnl_ops, pool_global_window_and_stride_beyond_kernel)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(3, 5, 6, 6));
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(6, 6), 2)};
    both_pools(&x, a, 1);
    d5_attr b[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2), attr_ints("strides", SHAPE(3, 3), 2),
                   attr_ints("pads", SHAPE(1, 1, 1, 1), 4)};
    both_pools(&x, b, 3);
}

/* Windows entirely inside the padding: an average counting padding is 0 there. */
Test(dnnl_ops, averagepool_include_pad_windows_in_padding)
{
    d5_tensor_desc x = op_fdesc(3, SHAPE(2, 3, 3));
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(2), 1), attr_ints("pads", SHAPE(3, 2), 2),
                   attr_int("count_include_pad", 1)};
    d5_attrs attrs = {a, 3};
    same_as_ref("AveragePool", &x, 1, &attrs);
    d5_tensor_desc x2 = op_fdesc(4, SHAPE(1, 9, 4, 3));
    d5_attr b[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2), attr_ints("strides", SHAPE(2, 3), 2),
                   attr_ints("pads", SHAPE(2, 3, 2, 3), 4), attr_int("count_include_pad", 1)};
    d5_attrs battrs = {b, 4};
    same_as_ref("AveragePool", &x2, 1, &battrs);
}

/* Small MaxPools run forward in C, larger ones on oneDNN (pool.c's
 * C_FORWARD_MAX_WORK, 2^20 window positions): one of each, the large one with
 * 2 x 16 x 72 x 72 outputs of 9 positions (1.49 M). */
Test(dnnl_ops, maxpool_c_and_onednn_forward)
{
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(3, 3), 2),
                   attr_ints("pads", SHAPE(1, 1, 1, 1), 4)};
    d5_attrs attrs = {a, 2};
    d5_tensor_desc small = op_fdesc(4, SHAPE(2, 3, 10, 9)),
                   large = op_fdesc(4, SHAPE(2, 16, 72, 72));
    same_as_ref("MaxPool", &small, 1, &attrs);
    same_as_ref("MaxPool", &large, 1, &attrs);
    /* Windows inside the input without padding, odd sizes leaving the last
     * row and column out, a kernel taller than wide. */
    d5_attr b[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2), attr_ints("strides", SHAPE(2, 2), 2)};
    d5_attrs battrs = {b, 2};
    d5_tensor_desc odd = op_fdesc(4, SHAPE(3, 2, 7, 9));
    same_as_ref("MaxPool", &odd, 1, &battrs);
    d5_attr c[] = {attr_ints("kernel_shape", SHAPE(3, 2), 2), attr_ints("strides", SHAPE(2, 3), 2)};
    d5_attrs cattrs = {c, 2};
    d5_tensor_desc wide = op_fdesc(4, SHAPE(2, 3, 9, 11));
    same_as_ref("MaxPool", &wide, 1, &cattrs);
}

Test(dnnl_ops, maxpool_storage_order_without_indices)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(1, 2, 6, 5));
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2), attr_int("storage_order", 1)};
    d5_attrs attrs = {a, 2};
    same_as_ref("MaxPool", &x, 1, &attrs);
}

/* ---- BatchNormalization ------------------------------------------------------------- */

static void bn(const d5_tensor_desc *x, int training, int32_t nout, const d5_attr *extra,
               int32_t nextra)
{
    int64_t c = x->shape[1];
    d5_tensor_desc in[5] = {*x, op_fdesc(1, &c), op_fdesc(1, &c), op_fdesc(1, &c), op_fdesc(1, &c)};
    d5_attr a[8];
    a[0] = attr_int("training_mode", training);
    if (nextra) memcpy(a + 1, extra, (size_t)nextra * sizeof *a);
    d5_attrs attrs = {a, 1 + nextra};
    same_as_ref_n("BatchNormalization", in, 5, &attrs, nout, (draw){.positive = 1u << 4});
}

Test(dnnl_ops, batchnorm_inference)
{
    d5_tensor_desc shapes[] = {op_fdesc(2, SHAPE(7, 5)), op_fdesc(3, SHAPE(3, 4, 9)),
                               op_fdesc(4, SHAPE(2, 3, 5, 6)), op_fdesc(5, SHAPE(2, 3, 2, 3, 4)),
                               op_fdesc(6, SHAPE(2, 3, 2, 1, 3, 2))};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) bn(&shapes[k], 0, 1, NULL, 0);
    d5_attr eps[] = {attr_float("epsilon", 1e-2)};
    bn(&shapes[2], 0, 1, eps, 1);
}

Test(dnnl_ops, batchnorm_training)
{
    d5_tensor_desc shapes[] = {op_fdesc(2, SHAPE(9, 4)), op_fdesc(3, SHAPE(3, 4, 9)),
                               op_fdesc(4, SHAPE(2, 3, 5, 6)), op_fdesc(5, SHAPE(2, 3, 2, 3, 4)),
                               op_fdesc(7, SHAPE(2, 3, 2, 1, 3, 2, 2))};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int32_t nout = 1; nout <= 3; nout++) bn(&shapes[k], 1, nout, NULL, 0);
    d5_attr more[] = {attr_float("momentum", 0.7), attr_float("epsilon", 1e-3)};
    bn(&shapes[2], 1, 3, more, 2);
}

/* Backward depends only on its arguments: a forward on other inputs in between
 * does not change it (MaxPool's workspace and the batch statistics are
 * recomputed from the X that backward is given). */
static void backward_after_other_forward(const char *name, const d5_tensor_desc *in, int32_t nin,
                                         const d5_attrs *attrs, int32_t nout, uint32_t positive)
{
    need_dnnl();
    const d5_op_desc *dd, *rd;
    cr_assert_eq(d5_op_find(name, "dnnl", &dd), D5_OK);
    cr_assert_eq(d5_op_find(name, "ref", &rd), D5_OK);
    d5_op *a, *b;
    cr_assert_eq(d5_op_create_desc(dd, in, nin, attrs, nout, &a), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_create_desc(rd, in, nin, attrs, nout, &b), D5_OK, "%s", d5_last_error());
    d5_tensor x1[8], x2[8], y[4], y2[4], yb[4], w[4], ga[8], gb[8];
    fill(x1, in, nin, (draw){.positive = positive, .seed = 11});
    fill(x2, in, nin, (draw){.positive = positive, .seed = 12});
    d5_rng rng;
    d5_rng_seed(&rng, 13);
    for (int32_t k = 0; k < nout; k++) {
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(a, k), &y[k]), D5_OK);
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(a, k), &y2[k]), D5_OK);
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(b, k), &yb[k]), D5_OK);
        cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(a, k), &w[k]), D5_OK);
        d5_tensor_fill_uniform(&w[k], &rng, -1, 1);
    }
    for (int32_t i = 0; i < nin; i++) {
        cr_assert_eq(d5_tensor_alloc(&in[i], &ga[i]), D5_OK);
        cr_assert_eq(d5_tensor_alloc(&in[i], &gb[i]), D5_OK);
    }
    /* A first backward on x2 builds the backward primitives. */
    cr_assert_eq(d5_op_forward(a, x2, y2), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_backward(a, w, x2, y2, ga), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_forward(a, x1, y), D5_OK);
    cr_assert_eq(d5_op_forward(a, x2, y2), D5_OK); /* the last forward saw x2 */
    cr_assert_eq(d5_op_backward(a, w, x1, y, ga), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_forward(b, x1, yb), D5_OK);
    cr_assert_eq(d5_op_backward(b, w, x1, yb, gb), D5_OK, "%s", d5_last_error());
    for (int32_t i = 0; i < nin; i++) {
        d5_compare c;
        cr_assert_eq(d5_compare_tensors(&ga[i], &gb[i], &c), D5_OK);
        double scale = 0;
        for (int64_t e = 0; e < d5_tensor_desc_numel(&in[i]); e++) {
            double v = ((const float *)gb[i].data)[e];
            scale = v > scale ? v : -v > scale ? -v : scale;
        }
        cr_assert(c.linf <= 1e-4 + 1e-4 * scale && !c.nonfinite,
                  "%s gradient of input %d: linf %g (max %g)", name, i, c.linf, scale);
    }
    for (int32_t i = 0; i < nin; i++) {
        d5_tensor_free(&x1[i]);
        d5_tensor_free(&x2[i]);
        d5_tensor_free(&ga[i]);
        d5_tensor_free(&gb[i]);
    }
    for (int32_t k = 0; k < nout; k++) {
        d5_tensor_free(&y[k]);
        d5_tensor_free(&y2[k]);
        d5_tensor_free(&yb[k]);
        d5_tensor_free(&w[k]);
    }
    d5_op_free(a);
    d5_op_free(b);
}

Test(dnnl_ops, backward_is_a_function_of_its_arguments)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(2, 3, 8, 8));
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(3, 3), 2), attr_ints("strides", SHAPE(2, 2), 2),
                   attr_ints("pads", SHAPE(1, 1, 1, 1), 4)};
    d5_attrs attrs = {a, 3};
    backward_after_other_forward("MaxPool", &x, 1, &attrs, 1, 0);
    d5_tensor_desc in[5] = {x, op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(3)),
                            op_fdesc(1, SHAPE(3))};
    d5_attr t[] = {attr_int("training_mode", 1)};
    d5_attrs ta = {t, 1};
    backward_after_other_forward("BatchNormalization", in, 5, &ta, 3, 1u << 4);
}

/* ---- Refusals ---------------------------------------------------------------------- */

Test(dnnl_ops, float64_is_refused)
{
    d5_tensor_desc x;
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 4, SHAPE(1, 2, 4, 4), &x), D5_OK);
    for (size_t k = 0; k < NELTWISE; k++)
        refused(eltwise_names[k], &x, 1, NULL, 1, D5_ERR_UNSUPPORTED, "float32 only");
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2)};
    d5_attrs attrs = {a, 1};
    refused("MaxPool", &x, 1, &attrs, 1, D5_ERR_UNSUPPORTED, "float32 only");
    refused("AveragePool", &x, 1, &attrs, 1, D5_ERR_UNSUPPORTED, "float32 only");
    d5_tensor_desc in[5] = {x, op_fdesc(1, SHAPE(2)), op_fdesc(1, SHAPE(2)), op_fdesc(1, SHAPE(2)),
                            op_fdesc(1, SHAPE(2))};
    refused("BatchNormalization", in, 5, NULL, 1, D5_ERR_UNSUPPORTED, "float32 only");
    in[0] = op_fdesc(4, SHAPE(1, 2, 4, 4));
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 1, SHAPE(2), &in[3]), D5_OK);
    refused("BatchNormalization", in, 5, NULL, 1, D5_ERR_UNSUPPORTED, "float32 only");
}

Test(dnnl_ops, pooling_combinations_onednn_cannot_express_are_refused)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(1, 2, 8, 8));
    d5_attr k[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2)};
    d5_attrs ka = {k, 1};
    refused("MaxPool", &x, 1, &ka, 2, D5_ERR_UNSUPPORTED, "Indices");
    /* A ceil_mode window past the end padding, counting padding. */
    d5_attr c[] = {attr_ints("kernel_shape", SHAPE(3, 3), 2), attr_ints("strides", SHAPE(2, 2), 2),
                   attr_int("ceil_mode", 1), attr_int("count_include_pad", 1)};
    d5_attrs ca = {c, 4};
    refused("AveragePool", &x, 1, &ca, 1, D5_ERR_UNSUPPORTED, "count_include_pad=1 with ceil_mode");
    /* The same excluding padding is exact. */
    c[3] = attr_int("count_include_pad", 0);
    same_as_ref("AveragePool", &x, 1, &ca);
    /* A dilation larger than the input, excluding padding. */
    d5_tensor_desc x1 = op_fdesc(3, SHAPE(1, 2, 3));
    d5_attr d[] = {attr_ints("kernel_shape", SHAPE(2), 1), attr_ints("dilations", SHAPE(4), 1),
                   attr_ints("pads", SHAPE(0, 2), 2)};
    d5_attrs da = {d, 3};
    refused("AveragePool", &x1, 1, &da, 1, D5_ERR_UNSUPPORTED, "dilation");
    same_as_ref("MaxPool", &x1, 1, &da);
    /* Four spatial axes. */
    d5_tensor_desc x4 = op_fdesc(6, SHAPE(1, 1, 3, 3, 3, 3));
    d5_attr k4[] = {attr_ints("kernel_shape", SHAPE(2, 2, 2, 2), 4)};
    d5_attrs k4a = {k4, 1};
    refused("MaxPool", &x4, 1, &k4a, 1, D5_ERR_UNSUPPORTED, "spatial axes");
    refused("AveragePool", &x4, 1, &k4a, 1, D5_ERR_UNSUPPORTED, "spatial axes");
}

Test(dnnl_ops, bad_arguments_name_the_operator)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(1, 2, 4, 4));
    refused("MaxPool", &x, 1, NULL, 1, D5_ERR_INVALID, "kernel_shape");
    d5_attr k[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2), attr_int("storage_order", 2)};
    d5_attrs ka = {k, 2};
    refused("MaxPool", &x, 1, &ka, 1, D5_ERR_INVALID, "storage_order");
    d5_attr p[] = {attr_ints("kernel_shape", SHAPE(2, 2), 2),
                   attr_ints("pads", SHAPE(2, 0, 0, 0), 4)};
    d5_attrs pa = {p, 2};
    refused("MaxPool", &x, 1, &pa, 1, D5_ERR_INVALID, "covers only padding");
    d5_tensor_desc in[5] = {x, op_fdesc(1, SHAPE(2)), op_fdesc(1, SHAPE(3)), op_fdesc(1, SHAPE(2)),
                            op_fdesc(1, SHAPE(2))};
    refused("BatchNormalization", in, 5, NULL, 1, D5_ERR_SHAPE, "one value per channel");
    in[2] = op_fdesc(1, SHAPE(2));
    refused("BatchNormalization", in, 5, NULL, 3, D5_ERR_INVALID, "training_mode=1");
}

Test(dnnl_ops, larger_sizes_with_channel_tails)
{
    d5_tensor_desc x = op_fdesc(4, SHAPE(2, 20, 33, 31));
    d5_attr a[] = {attr_ints("kernel_shape", SHAPE(3, 3), 2), attr_ints("strides", SHAPE(2, 2), 2),
                   attr_ints("pads", SHAPE(1, 1, 1, 1), 4)};
    both_pools(&x, a, 3);
    d5_attr c[] = {attr_ints("kernel_shape", SHAPE(3, 2), 2), attr_ints("strides", SHAPE(2, 2), 2),
                   attr_int("ceil_mode", 1)};
    d5_attr ce[4];
    memcpy(ce, c, sizeof c);
    d5_attrs ca = {ce, 3};
    same_as_ref("MaxPool", &x, 1, &ca);
    ce[3] = attr_int("count_include_pad", 0);
    ca.count = 4;
    same_as_ref("AveragePool", &x, 1, &ca);
    d5_tensor_desc x5 = op_fdesc(5, SHAPE(2, 16, 6, 7, 8));
    d5_attr b[] = {attr_ints("kernel_shape", SHAPE(2, 3, 2), 3),
                   attr_ints("strides", SHAPE(1, 2, 2), 3),
                   attr_ints("pads", SHAPE(0, 1, 0, 1, 1, 1), 6)};
    both_pools(&x5, b, 3);
    bn(&x, 0, 1, NULL, 0);
    bn(&x, 1, 3, NULL, 0);
    bn(&x5, 1, 3, NULL, 0);
}

/* ---- Binary arithmetic -------------------------------------------------------------- */

static void forward_as_ref(const char *name, const d5_tensor_desc *in, draw how)
{
    need_dnnl();
    const d5_op_desc *cand, *ref;
    cr_assert_eq(d5_op_find(name, "dnnl", &cand), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_op_find(name, "ref", &ref), D5_OK);
    d5_tensor x[2];
    fill(x, in, 2, how);
    d5_check_params p = d5_check_default_params();
    d5_forward_check r;
    cr_assert_eq(d5_validate_forward(cand, ref, in, 2, x, NULL, 1, &p, &r), D5_OK, "%s: %s", name,
                 d5_last_error());
    cr_assert(r.passed, "%s forward: linf %.3g", name, r.out[0].linf);
    d5_tensor_free(&x[0]);
    d5_tensor_free(&x[1]);
}

Test(dnnl_ops, binary_same_shape_and_broadcast)
{
    const int64_t full[] = {4, 3, 5, 6}, row[] = {6}, chan[] = {3, 1, 1}, one[] = {1};
    d5_tensor_desc same[2] = {op_fdesc(4, full), op_fdesc(4, full)};
    d5_tensor_desc bias[2] = {op_fdesc(4, full), op_fdesc(1, row)};
    d5_tensor_desc per_channel[2] = {op_fdesc(4, full), op_fdesc(3, chan)};
    d5_tensor_desc scalar_first[2] = {op_fdesc(1, one), op_fdesc(4, full)};
    const char *ab[] = {"Add", "Sub"};
    for (int k = 0; k < 2; k++) {
        same_as_ref(ab[k], same, 2, NULL);
        same_as_ref(ab[k], bias, 2, NULL);
        same_as_ref(ab[k], per_channel, 2, NULL);
    }
    same_as_ref("Add", scalar_first, 2, NULL); /* swapped: the first operand broadcasts */
    const char *md[] = {"Mul", "Div"};
    for (int k = 0; k < 2; k++) {
        forward_as_ref(md[k], same, (draw){.positive = 2});
        forward_as_ref(md[k], per_channel, (draw){.positive = 2});
    }
    forward_as_ref("Mul", scalar_first, (draw){0});
    refused("Sub", scalar_first, 2, NULL, 1, D5_ERR_UNSUPPORTED, "first operand");
}

/* ---- Softmax without denormals ------------------------------------------------------- */

/* A row masked as attention masks it (-1e4, the lowest float) and entries
 * whose exponent underflows: their probabilities are exactly 0, and none is
 * a denormal, which would slow the MatMul that reads them a hundredfold on
 * Intel cores. The others are ref's. */
Test(dnnl_ops, softmax_gives_zero_not_denormals)
{
    need_dnnl();
    const int64_t shape[] = {2, 8};
    const float v[16] = {0.5f, -1e4f,  -3.4e38f, -86.0f, -87.5f, -90.0f, -100.0f, 1.0f,
                         0.0f, -20.0f, -40.0f,   -60.0f, -80.0f, -85.0f, -87.0f,  -88.0f};
    d5_tensor x = tf32(2, shape, v), y, want;
    run_op("Softmax", "dnnl", &x, 1, NULL, &y, 1);
    run_op("Softmax", "ref", &x, 1, NULL, &want, 1);
    const float *p = y.data, *q = want.data;
    for (int i = 0; i < 16; i++) {
        cr_expect(p[i] == 0.0f || p[i] >= FLT_MIN, "probability %d is %g, a denormal", i, p[i]);
        cr_expect(fabsf(p[i] - q[i]) <= 1e-6f * (1 + q[i]), "probability %d: %g, ref %g", i, p[i],
                  q[i]);
    }
    for (int i = 1; i <= 6; i++) cr_expect_eq(p[i], 0.0f, "probability %d is %g, not 0", i, p[i]);
    d5_tensor_free(&x);
    d5_tensor_free(&y);
    d5_tensor_free(&want);
}

/* ---- SoftmaxCrossEntropyLoss -------------------------------------------------------- */

/* A label outside [0, C) that is not ignore_index is an error naming it;
 * weights and the log_prob output are declined (ref runs them). */
Test(dnnl_ops, softmax_cross_entropy_refuses_bad_labels_and_declines_weights)
{
    need_dnnl();
    const int64_t xs[] = {2, 3}, ls[] = {2}, ws[] = {3};
    const float xv[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, wv[3] = {1, 1, 1};
    const int64_t bad[2] = {1, 3}, good[2] = {2, 0};
    d5_tensor in[3] = {tf32(2, xs, xv), ti64(1, ls, bad), tf32(1, ws, wv)}, out[2];
    cr_assert_eq(try_op("SoftmaxCrossEntropyLoss", "dnnl", in, 2, NULL, out, 1), D5_ERR_RANGE);
    cr_assert(strstr(d5_last_error(), "label 3 at position 1 is outside [0, 3)"), "%s",
              d5_last_error());
    memcpy(in[1].data, good, sizeof good);
    cr_assert_eq(try_op("SoftmaxCrossEntropyLoss", "dnnl", in, 3, NULL, out, 1),
                 D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "weights"), "%s", d5_last_error());
    cr_assert_eq(try_op("SoftmaxCrossEntropyLoss", "dnnl", in, 2, NULL, out, 2),
                 D5_ERR_UNSUPPORTED);
    run_op("SoftmaxCrossEntropyLoss", "dnnl", in, 2, NULL, out, 1);
    /* (log(e^.1 + e^.2 + e^.3) - .3 + log(e^.4 + e^.5 + e^.6) - .4) / 2 */
    const double want =
        (log(exp(0.1) + exp(0.2) + exp(0.3)) - 0.3 + log(exp(0.4) + exp(0.5) + exp(0.6)) - 0.4) / 2;
    cr_expect(fabs(((float *)out[0].data)[0] - want) < 1e-6, "loss %g, expected %g",
              ((float *)out[0].data)[0], want);
    d5_tensor_free(&out[0]);
    for (int i = 0; i < 3; i++) d5_tensor_free(&in[i]);
}
