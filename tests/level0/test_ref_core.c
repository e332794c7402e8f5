#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

Test(gemm, forward_with_transposes_alpha_beta_and_bias)
{
    /* A' = A^T (2x3 from 3x2), B = 3x2, C = [1, 2] broadcast over rows. */
    d5_tensor a = tf32(2, SHAPE(3, 2), VALS(1, 4, 2, 5, 3, 6));
    d5_tensor b = tf32(2, SHAPE(3, 2), VALS(1, 0, 0, 1, 1, 1));
    d5_tensor c = tf32(1, SHAPE(2), VALS(1, 2));
    d5_attr items[] = {attr_int("transA", 1), attr_float("alpha", 2), attr_float("beta", 0.5)};
    d5_attrs attrs = {items, 3};
    d5_tensor in[3] = {a, b, c}, y;
    run_op("Gemm", "ref", in, 3, &attrs, &y, 1);
    /* A^T B = [[1+3, 2+3], [4+6, 5+6]] = [[4, 5], [10, 11]]; 2x + 0.5 C */
    expect_values(&y, VALS(8.5, 11, 20.5, 23), 4, 1e-6);
    d5_tensor_free(&y);
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    d5_tensor_free(&c);
}

Test(gemm, gradient)
{
    d5_tensor_desc in[3];
    in[0] = op_fdesc(2, SHAPE(4, 3));
    in[1] = op_fdesc(2, SHAPE(5, 4));
    in[2] = op_fdesc(1, SHAPE(5));
    d5_attr items[] = {attr_int("transA", 1), attr_int("transB", 1), attr_float("alpha", 0.7),
                       attr_float("beta", 1.3)};
    d5_attrs attrs = {items, 4};
    expect_gradient("Gemm", in, 3, NULL, &attrs, 1);
}

Test(relu, forward_and_gradient)
{
    d5_tensor x = tf32(1, SHAPE(4), VALS(-1, 0, 2, -3));
    expect_op_values("Relu", &x, 1, NULL, VALS(0, 0, 2, 0), 4, 0);
    d5_tensor_free(&x);
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 4));
    expect_gradient("Relu", &d, 1, NULL, NULL, 1);
}

Test(add, broadcast_forward_and_gradient)
{
    d5_tensor a = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)),
              b = tf32(1, SHAPE(3), VALS(10, 20, 30)), y;
    d5_tensor in[2] = {a, b};
    expect_op_values("Add", in, 2, NULL, VALS(11, 22, 33, 14, 25, 36), 6, 0);
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    d5_tensor_desc d[2];
    d[0] = op_fdesc(3, SHAPE(2, 1, 4));
    d[1] = op_fdesc(2, SHAPE(3, 1));
    expect_gradient("Add", d, 2, NULL, NULL, 1);
    d[1] = op_fdesc(2, SHAPE(3, 2));
    d5_tensor x = tf32(3, SHAPE(2, 1, 4), NULL), z = tf32(2, SHAPE(3, 2), NULL);
    d5_tensor in2[2] = {x, z};
    cr_assert_eq(try_op("Add", "ref", in2, 2, NULL, &y, 1), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "Add: shapes [2,1,4] and [3,2] do not broadcast"), "%s",
              d5_last_error());
    d5_tensor_free(&x);
    d5_tensor_free(&z);
}

/* A custom float64 operator y = x^2 whose backward can be made wrong. */
static int wrong_factor;
static d5_status sq_create(const d5_op_create_args *args, void **state)
{
    const d5_tensor *in = args->inputs;
    d5_tensor_desc *out = args->outputs;
    out[0] = in[0].desc;
    *state = NULL;
    return D5_OK;
}
static d5_status sq_forward(void *st, const d5_op_call *call)
{
    const d5_tensor *in = call->inputs;
    d5_tensor *out = call->outputs;
    (void)st;
    const double *x = in[0].data;
    double *y = out[0].data;
    for (int64_t i = 0; i < d5_tensor_desc_numel(&in[0].desc); i++) y[i] = x[i] * x[i];
    return D5_OK;
}
static d5_status sq_backward(void *st, const d5_op_call *call)
{
    const d5_tensor *gout = call->grad_outputs;
    const d5_tensor *in = call->inputs;
    d5_tensor *gin = call->grad_inputs;
    (void)st;
    const double *x = in[0].data, *g = gout[0].data;
    double *gx = gin[0].data;
    for (int64_t i = 0; i < d5_tensor_desc_numel(&in[0].desc); i++)
        gx[i] = (wrong_factor ? 1.0 : 2.0) * x[i] * g[i];
    return D5_OK;
}

Test(validate, a_wrong_gradient_is_caught)
{
    /* clang-format off */
    d5_op_desc sq = {
        .abi_version = D5_OP_ABI_VERSION, .flags = D5_OP_F64 | D5_OP_HAS_BACKWARD, .name = "Square",
        .backend = "test", .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
        .create = sq_create, .forward = sq_forward, .backward = sq_backward};
    /* clang-format on */
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F64, 1, SHAPE(8), &d), D5_OK);
    d5_gradient_check g;
    wrong_factor = 0;
    cr_assert_eq(d5_validate_gradient(&sq, &d, 1, NULL, NULL, 1, NULL, &g), D5_OK);
    cr_assert(g.passed);
    cr_assert_eq(g.checked, 8);
    wrong_factor = 1;
    cr_assert_eq(d5_validate_gradient(&sq, &d, 1, NULL, NULL, 1, NULL, &g), D5_OK);
    cr_assert_not(g.passed);
    cr_assert(fabs(g.analytic - g.numeric / 2) < 1e-6, "the worst element is reported");
    sq.backward = NULL;
    cr_assert_eq(d5_validate_gradient(&sq, &d, 1, NULL, NULL, 1, NULL, &g), D5_ERR_UNSUPPORTED);
}

/* At 2^20 outputs, with inputs drawn from the seed that also draws the output
 * gradients w (as `d5 test-operator` gave them), L = sum <w, y> of Identity is
 * about 3.5e5: differencing two values of L lost L's rounding (4e-5 error on a
 * gradient of 0.01, step 1e-6) and a correct gradient failed. The check sums
 * the changes of the outputs instead. */
Test(validate, the_gradient_check_holds_at_a_million_outputs)
{
    const d5_op_desc *identity;
    cr_assert_eq(d5_op_find("Identity", "ref", &identity), D5_OK);
    d5_tensor_desc d = op_fdesc(1, SHAPE(1 << 20));
    d5_tensor x;
    cr_assert_eq(d5_tensor_alloc(&d, &x), D5_OK);
    d5_rng rng;
    d5_rng_seed(&rng, 1);
    d5_tensor_fill_uniform(&x, &rng, -1, 1);
    d5_gradient_params p = d5_gradient_default_params();
    p.seed = 1;
    p.max_elements = 256;
    d5_gradient_check g;
    cr_assert_eq(d5_validate_gradient(identity, &d, 1, &x, NULL, 1, &p, &g), D5_OK, "%s",
                 d5_last_error());
    cr_assert(g.passed, "element %lld: %.9g against %.9g (error %.3g > %.3g)",
              (long long)g.worst_index, g.analytic, g.numeric, g.error, g.tol);
    cr_assert_geq(g.checked, 250);
    d5_tensor_free(&x);
}

/* A floating-point input that decides the output's shape (Resize's scales)
 * is seen at create when it is one of the check's constants, and is left out
 * of the gradient check. */
Test(validate, constant_float_inputs_are_seen_at_create)
{
    const d5_op_desc *resize;
    cr_assert_eq(d5_op_find("Resize", "ref", &resize), D5_OK);
    d5_tensor x = tf32(4, SHAPE(1, 1, 2, 2), VALS(1, 2, 3, 4));
    d5_tensor scales = tf32(1, SHAPE(4), VALS(1, 1, 2, 2));
    d5_tensor in[3];
    memset(in, 0, sizeof in);
    in[0] = x;
    in[2] = scales;
    d5_tensor_desc d[3] = {x.desc, {0}, scales.desc};
    d5_attr a = {.name = "mode", .type = D5_ATTR_STRING, .s = "nearest"};
    d5_attrs attrs = {&a, 1};
    d5_forward_check r;
    d5_check_params p = d5_check_default_params();
    cr_assert_neq(d5_validate_forward(resize, resize, d, 3, in, &attrs, 1, &p, &r), D5_OK);
    cr_assert(strstr(d5_last_error(), "scales"), "%s", d5_last_error());
    p.constants = 1u << 2;
    cr_assert_eq(d5_validate_forward(resize, resize, d, 3, in, &attrs, 1, &p, &r), D5_OK, "%s",
                 d5_last_error());
    cr_assert(r.passed);
    cr_assert_eq(r.out[0].n, 16);
    d5_tensor_free(&x);
    d5_tensor_free(&scales);
}

Test(validate, forward_check_compares_backends)
{
    const d5_op_desc *gemm;
    cr_assert_eq(d5_op_find("Gemm", "ref", &gemm), D5_OK);
    d5_tensor_desc in[2];
    in[0] = op_fdesc(2, SHAPE(8, 16));
    in[1] = op_fdesc(2, SHAPE(16, 4));
    d5_forward_check r;
    cr_assert_eq(d5_validate_forward(gemm, gemm, in, 2, NULL, NULL, 1, NULL, &r), D5_OK);
    cr_assert(r.passed);
    cr_assert_eq(r.out[0].linf, 0);
    cr_assert_eq(r.out[0].n, 32);
}

/* max_elements spreads the check evenly over a large input. */
Test(validate, max_elements_bounds_the_check)
{
    const d5_op_desc *relu;
    cr_assert_eq(d5_op_find("Relu", "ref", &relu), D5_OK);
    d5_tensor_desc d = op_fdesc(1, SHAPE(10000));
    d5_gradient_params p = d5_gradient_default_params();
    p.max_elements = 100;
    d5_gradient_check g;
    cr_assert_eq(d5_validate_gradient(relu, &d, 1, NULL, NULL, 1, &p, &g), D5_OK);
    cr_assert(g.passed);
    cr_assert_leq(g.checked + g.skipped, 100);
    cr_assert_geq(g.checked + g.skipped, 90);
}

/* float32 Relu checked with a 1e-2 step: inputs within a step of 0 are kinks
 * and skipped, so a correct operator passes on every seed (a loose kink test
 * once failed dnnl's Relu at an input of -0.002). */
Test(validate, float32_kinks_are_skipped)
{
    const d5_op_desc *relu;
    if (d5_op_find("Relu", "dnnl", &relu) != D5_OK) cr_skip_test("no dnnl Relu");
    d5_tensor_desc d = op_fdesc(2, SHAPE(4, 64));
    for (uint64_t seed = 1; seed <= 20; seed++) {
        d5_gradient_params p = d5_gradient_default_params();
        p.seed = seed;
        d5_gradient_check g;
        cr_assert_eq(d5_validate_gradient(relu, &d, 1, NULL, NULL, 1, &p, &g), D5_OK);
        cr_assert(g.passed, "seed %llu: element %lld analytic %g numeric %g",
                  (unsigned long long)seed, (long long)g.worst_index, g.analytic, g.numeric);
    }
}

/* The relative error is measured against the tensor's scale where the
 * reference is 0: no 1e29 for a difference of 1e-7. */
Test(validate, relative_error_of_a_zero_reference)
{
    d5_tensor got = tf32(1, SHAPE(2), (float[]){1e-7f, 1.0f});
    d5_tensor want = tf32(1, SHAPE(2), (float[]){0.0f, 1.0f});
    d5_compare c;
    cr_assert_eq(d5_compare_tensors(&got, &want, &c), D5_OK);
    cr_assert(c.max_rel > 0.09 && c.max_rel < 0.11, "max_rel %g", c.max_rel);
    d5_tensor_free(&got);
    d5_tensor_free(&want);
}
