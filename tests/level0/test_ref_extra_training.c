/* The optimizers of ref/ops_extra.def (ai.onnx.preview.training): Momentum,
 * Adagrad and Adam, alone and through the executor. Expected values come
 * from the test cases of the ONNX operator documentation. */
#include "more_support.h"

#include <criterion/criterion.h>
#include <string.h>

/* ---- Momentum, Adagrad, Adam (ai.onnx.preview.training) ------------------------------------- */

/* The expected values are those of apply_momentum, apply_nesterov,
 * apply_adagrad and apply_adam of onnx.backend.test.case.node (ONNX 1.12)
 * for R = 0.5, X = [1, -2], G = [0.5, 1], V = [0.2, -0.1], H = [0.3, 2] and
 * T = 0 or 3. */
static void check_optimizer(const char *op, int64_t t, const d5_attrs *attrs, int32_t nstates,
                            const double *const *want)
{
    d5_tensor in[6] = {f64(0, NULL, DV(0.5)), ti64(0, NULL, IVALS(t)), f64(1, SHAPE(2), DV(1, -2)),
                       f64(1, SHAPE(2), DV(0.5, 1))};
    int32_t nin = 4;
    if (strcmp(op, "Adagrad") != 0) in[nin++] = f64(1, SHAPE(2), DV(0.2, -0.1));
    if (strcmp(op, "Momentum") != 0) in[nin++] = f64(1, SHAPE(2), DV(0.3, 2));
    d5_tensor y[3];
    run_op(op, "ref", in, nin, attrs, y, 1 + nstates);
    for (int32_t k = 0; k <= nstates; k++)
        expect_tensor(&y[k], D5_F64, 1, SHAPE(2), want[k], 1e-12, op);
    op_free_all(y, 1 + nstates);
    op_free_all(in, nin);
}

Test(training, momentum_adagrad_adam)
{
    const d5_attrs *mom =
        ATTRS(attr_float("alpha", 0.9), attr_float("beta", 0.1),
              attr_float("norm_coefficient", 0.01), attr_string("mode", "standard"));
    const d5_attrs *nes =
        ATTRS(attr_float("alpha", 0.9), attr_float("beta", 0.1),
              attr_float("norm_coefficient", 0.01), attr_string("mode", "nesterov"));
    const d5_attrs *ada = ATTRS(attr_float("norm_coefficient", 0.01), attr_float("epsilon", 1e-3),
                                attr_float("decay_factor", 0.2));
    const d5_attrs *adm =
        ATTRS(attr_float("norm_coefficient", 0.01), attr_float("norm_coefficient_post", 0.05),
              attr_float("alpha", 0.9), attr_float("beta", 0.99), attr_float("epsilon", 1e-3));
    check_optimizer("Momentum", 0, mom, 1,
                    (const double *const[]){DV(0.655, -2.445), DV(0.69, 0.89)});
    check_optimizer("Momentum", 3, mom, 1,
                    (const double *const[]){DV(0.8845, -2.004), DV(0.231, 0.008)});
    check_optimizer("Momentum", 3, nes, 1,
                    (const double *const[]){DV(0.64105, -2.4936), DV(0.231, 0.008)});
    check_optimizer(
        "Adagrad", 0, ada, 1,
        (const double *const[]){DV(0.6597270056381281, -2.2846220511454445), DV(0.5601, 2.9604)});
    check_optimizer(
        "Adagrad", 3, ada, 1,
        (const double *const[]){DV(0.7873293785238301, -2.1778887819659025), DV(0.5601, 2.9604)});
    check_optimizer("Adam", 0, adm, 2,
                    (const double *const[]){DV(0.7499026916405787, -1.9026921080655375),
                                            DV(0.231, 0.008), DV(0.299601, 1.989604)});
    check_optimizer("Adam", 3, adm, 2,
                    (const double *const[]){DV(0.8227500876955102, -1.9017120196071728),
                                            DV(0.231, 0.008), DV(0.299601, 1.989604)});
}

Test(training, errors)
{
    d5_tensor in[5] = {f64(0, NULL, DV(0.5)), ti64(0, NULL, IVALS(1)), f64(1, SHAPE(2), NULL),
                       f64(1, SHAPE(2), NULL), f64(1, SHAPE(3), NULL)};
    const d5_attrs *mom = ATTRS(attr_float("alpha", 0.9), attr_float("beta", 0.1),
                                attr_float("norm_coefficient", 0), attr_string("mode", "standard"));
    op_expect_fails("Momentum", in, 5, mom, 2, D5_ERR_SHAPE,
                    "Momentum: input 4 is float64 [3], but the tensor it belongs to (input 2) "
                    "float64 [2]");
    d5_tensor seven[7] = {in[0], in[1], in[2], in[3], in[2], in[3], in[2]};
    op_expect_fails("Momentum", seven, 7, mom, 2, D5_ERR_INVALID,
                    "Momentum: 7 inputs, expected R, T and 3 groups of n tensors (2 + 3 n)");
    op_expect_fails("Adagrad", seven, 5, NULL, 4, D5_ERR_INVALID,
                    "Adagrad: 4 outputs for 1 tensors, expected 2");
    d5_tensor_free(&in[4]);
    in[4] = f64(1, SHAPE(2), NULL);
    op_expect_fails("Momentum", in, 5, ATTRS(attr_float("alpha", 0.9), attr_float("beta", 0.1)), 2,
                    D5_ERR_INVALID, "Momentum: attribute norm_coefficient is required");
    op_expect_fails("Momentum", in, 5,
                    ATTRS(attr_float("alpha", 0.9), attr_float("beta", 0.1),
                          attr_float("norm_coefficient", 0), attr_string("mode", "heavy")),
                    2, D5_ERR_INVALID, "Momentum: mode is 'heavy', expected standard or nesterov");
    op_free_all(in, 5);
}

/* The executor takes Momentum from the domain ai.onnx.preview.training (as
 * ONNX models name it) to the ref operator, and no other domain. */
Test(training, preview_domain_through_the_executor)
{
    static const char *const domains[] = {"ai.onnx.preview.training", "com.example"};
    for (int k = 0; k < 2; k++) {
        d5_network *net;
        cr_assert_eq(d5_network_create("momentum", &net), D5_OK);
        cr_assert_eq(d5_network_set_opset(net, domains[k], 1), D5_OK);
        d5_tensor t = ti64(0, NULL, IVALS(3));
        cr_assert_eq(d5_network_add_initializer(net, "T", &t), D5_OK);
        d5_tensor_free(&t);
        static const char *const names[] = {"R", "X", "G", "V"};
        for (int i = 0; i < 4; i++) {
            d5_tensor_desc d;
            cr_assert_eq(d5_tensor_desc_make(D5_F64, i ? 1 : 0, SHAPE(2), &d), D5_OK);
            cr_assert_eq(d5_network_add_input(net, names[i], &d, NULL), D5_OK);
        }
        const char *inputs[] = {"R", "T", "X", "G", "V"}, *outputs[] = {"X_new", "V_new"};
        cr_assert_eq(d5_network_add_node(net, "step", "Momentum", domains[k], inputs, 5, outputs, 2,
                                         ATTRS(attr_float("alpha", 0.9), attr_float("beta", 0.1),
                                               attr_float("norm_coefficient", 0.01),
                                               attr_string("mode", "standard")),
                                         NULL),
                     D5_OK);
        for (int i = 0; i < 2; i++)
            cr_assert_eq(d5_network_add_output(net, outputs[i], NULL), D5_OK);
        d5_executor_options o = d5_executor_default_options();
        o.backend = "ref";
        d5_executor *ex = NULL;
        d5_status s = d5_executor_create(net, &o, &ex);
        if (k == 1) {
            cr_assert_eq(s, D5_ERR_UNSUPPORTED);
            cr_assert(strstr(d5_last_error(), "operator Momentum of domain 'com.example' is not "
                                              "supported"),
                      "%s", d5_last_error());
            d5_network_free(net);
            continue;
        }
        cr_assert_eq(s, D5_OK, "%s", d5_last_error());
        d5_tensor feed[4] = {f64(0, NULL, DV(0.5)), f64(1, SHAPE(2), DV(1, -2)),
                             f64(1, SHAPE(2), DV(0.5, 1)), f64(1, SHAPE(2), DV(0.2, -0.1))};
        for (int i = 0; i < 4; i++) cr_assert_eq(d5_executor_feed(ex, names[i], &feed[i]), D5_OK);
        cr_assert_eq(d5_executor_inference(ex), D5_OK, "%s", d5_last_error());
        d5_tensor x, v;
        cr_assert_eq(d5_executor_fetch(ex, "X_new", &x), D5_OK);
        cr_assert_eq(d5_executor_fetch(ex, "V_new", &v), D5_OK);
        expect_tensor(&x, D5_F64, 1, SHAPE(2), DV(0.8845, -2.004), 1e-12, "X_new");
        expect_tensor(&v, D5_F64, 1, SHAPE(2), DV(0.231, 0.008), 1e-12, "V_new");
        op_free_all(feed, 4);
        d5_executor_free(ex);
        d5_network_free(net);
    }
}
