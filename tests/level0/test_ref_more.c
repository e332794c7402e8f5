/* The reference operators of ref/ops_more.def: element-wise math (Sin ...
 * Atanh, Floor, Ceil, Round, Sign, Reciprocal, Softsign, HardSwish, Mish, Selu,
 * ThresholdedRelu, Shrink, PRelu, Mod, IsNaN, IsInf), Max and Min, the
 * reductions ReduceMax ... ReduceLogSumExp, ArgMax and ArgMin, And, Or, Xor,
 * Tile, Size, InstanceNormalization, CumSum, Hardmax, CastLike, Trilu,
 * GatherElements, ScatterElements, OneHot, DepthToSpace, SpaceToDepth and
 * NegativeLogLikelihoodLoss.
 *
 * Expected values were computed offline with Debian's python3 (numpy 1.24,
 * torch 1.13) in float64 and pasted: the math functions with numpy (np.sin,
 * np.round, np.fmod, np.mod, ...), HardSwish and Mish with
 * torch.nn.functional, Selu, PRelu, Shrink and ThresholdedRelu with np.where
 * on the defining formula, the reductions
 * with numpy over the axes (torch.logsumexp for ReduceLogSumExp), ArgMax and
 * ArgMin with np.argmax/np.argmin (on the flipped axis for
 * select_last_index), Tile with np.tile, InstanceNormalization with
 * torch.nn.functional.instance_norm, CumSum with np.cumsum (minus x for
 * exclusive, on the flipped axis for reverse), Hardmax with np.eye[np.argmax],
 * Trilu with np.triu/np.tril, GatherElements with torch.gather,
 * ScatterElements with a Python loop (checked against torch.scatter for
 * "none"), OneHot with np.arange == indices, DepthToSpace and SpaceToDepth
 * with the reshape/transpose of the ONNX specification (CRD checked against
 * torch.nn.functional.pixel_shuffle), NegativeLogLikelihoodLoss with
 * torch.nn.functional.nll_loss. Gradients are checked against finite
 * differences (expect_gradient). */
#include "more_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* ---- element-wise functions without attributes -------------------------------------- */

enum { X, XU, XA, XR };
static const double unary_inputs[4][8] = {
    {-2.5, -1.2, -0.5, 0.0, 0.3, 0.5, 1.5, 2.5},                 /* X */
    {-0.9, -0.5, -0.1, 0.0, 0.2, 0.5, 0.7, 0.95},                /* XU: inside (-1, 1) */
    {1.0, 1.2, 1.5, 2.0, 3.0, 5.5, 10.0, 100.0},                 /* XA: Acosh's domain */
    {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999999999999994, -1.7} /* XR: halves */
};

static const struct {
    const char *op;
    int input;
    double want[8];
} unary_cases[] = {
    /* numpy, float64 */
    {"Sin",
     X,
     {-0.5984721441039565, -0.9320390859672263, -0.479425538604203, 0.0, 0.29552020666133955,
      0.479425538604203, 0.9974949866040544, 0.5984721441039565}},
    {"Cos",
     X,
     {-0.8011436155469337, 0.3623577544766736, 0.8775825618903728, 1.0, 0.955336489125606,
      0.8775825618903728, 0.0707372016677029, -0.8011436155469337}},
    {"Tan",
     X,
     {0.7470222972386603, -2.5721516221263188, -0.5463024898437905, 0.0, 0.30933624960962325,
      0.5463024898437905, 14.101419947171719, -0.7470222972386603}},
    {"Asin",
     XU,
     {-1.1197695149986342, -0.5235987755982989, -0.1001674211615598, 0.0, 0.2013579207903308,
      0.5235987755982989, 0.775397496610753, 1.253235897503375}},
    {"Acos",
     XU,
     {2.6905658417935308, 2.0943951023931957, 1.6709637479564565, 1.5707963267948966,
      1.369438406004566, 1.0471975511965979, 0.7953988301841436, 0.3175604292915215}},
    {"Atan",
     X,
     {-1.1902899496825317, -0.8760580505981934, -0.4636476090008061, 0.0, 0.2914567944778671,
      0.4636476090008061, 0.982793723247329, 1.1902899496825317}},
    {"Sinh",
     X,
     {-6.0502044810397875, -1.5094613554121725, -0.5210953054937474, 0.0, 0.3045202934471426,
      0.5210953054937474, 2.1292794550948173, 6.0502044810397875}},
    {"Cosh",
     X,
     {6.132289479663686, 1.8106555673243747, 1.1276259652063807, 1.0, 1.0453385141288605,
      1.1276259652063807, 2.352409615243247, 6.132289479663686}},
    {"Asinh",
     X,
     {-1.6472311463710958, -1.015973134179692, -0.48121182505960347, 0.0, 0.29567304756342244,
      0.48121182505960347, 1.1947632172871094, 1.6472311463710958}},
    {"Acosh",
     XA,
     {0.0, 0.6223625037147786, 0.9624236501192069, 1.3169578969248166, 1.762747174039086,
      2.3895264345742184, 2.993222846126381, 5.298292365610484}},
    {"Atanh",
     XU,
     {-1.4722194895832204, -0.5493061443340548, -0.10033534773107558, 0.0, 0.2027325540540822,
      0.5493061443340548, 0.8673005276940531, 1.8317808230648227}},
    {"Floor", XR, {-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 0.0, -2.0}},
    {"Ceil", XR, {-2.0, -1.0, -0.0, 1.0, 2.0, 3.0, 1.0, -1.0}},
    {"Round", XR, {-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 0.0, -2.0}},
    {"Sign", X, {-1.0, -1.0, -1.0, 0.0, 1.0, 1.0, 1.0, 1.0}},
    {"Reciprocal",
     X,
     {-0.4, -0.8333333333333334, -2.0, INFINITY, 3.3333333333333335, 2.0, 0.6666666666666666, 0.4}},
    {"Softsign",
     X,
     {-0.7142857142857143, -0.5454545454545454, -0.3333333333333333, 0.0, 0.23076923076923075,
      0.3333333333333333, 0.6, 0.7142857142857143}},
    /* torch.nn.functional.hardswish and mish; Selu with np.where on its formula
     * and ONNX's default alpha and gamma (torch.selu's have more digits) */
    {"HardSwish",
     X,
     {-0.20833333333333334, -0.36000000000000004, -0.20833333333333334, 0.0, 0.16499999999999998,
      0.2916666666666667, 1.125, 2.2916666666666665}},
    {"Mish",
     X,
     {-0.19681620390653332, -0.3088357963148626, -0.22074377465173, 0.0, 0.20800137234811503,
      0.37524521130489513, 1.4033782663958028, 2.471392304557881}},
    {"Selu",
     X,
     {-1.6137857639177853, -1.2285699992578836, -0.6917581899652425, 0.0, 0.31521030664443966,
      0.5253505110740662, 1.5760515332221985, 2.626752555370331}},
};

Test(unary, values_float64)
{
    for (size_t k = 0; k < sizeof unary_cases / sizeof unary_cases[0]; k++) {
        d5_tensor x = f64(2, SHAPE(2, 4), unary_inputs[unary_cases[k].input]);
        check(unary_cases[k].op, &x, 1, NULL, D5_F64, 2, SHAPE(2, 4), unary_cases[k].want);
    }
}

Test(unary, values_float32)
{
    /* The same numbers through float32 (inputs exact in float32 where chosen so). */
    d5_tensor x = tmake(D5_F32, 1, SHAPE(4), DV(-2.5, -0.5, 0.5, 2.5));
    check("Sinh", &x, 1, NULL, D5_F32, 1, SHAPE(4),
          DV(-6.0502044810397875, -0.5210953054937474, 0.5210953054937474, 6.0502044810397875));
    d5_tensor r = tmake(D5_F32, 1, SHAPE(4), DV(-2.5, -1.5, 0.5, 2.5));
    check("Round", &r, 1, NULL, D5_F32, 1, SHAPE(4), DV(-2, -2, 0, 2));
}

Test(unary, special_values)
{
    d5_tensor x = f64(1, SHAPE(4), DV(NAN, INFINITY, -INFINITY, -0.0));
    check("Floor", &x, 1, NULL, D5_F64, 1, SHAPE(4), DV(NAN, INFINITY, -INFINITY, 0));
    d5_tensor y = f64(1, SHAPE(3), DV(NAN, -INFINITY, 2.0));
    check("Sign", &y, 1, NULL, D5_F64, 1, SHAPE(3), DV(NAN, -1, 1));
    d5_tensor z = f64(1, SHAPE(3), DV(2.0, -1.0, 0.0));
    check("Asin", &z, 1, NULL, D5_F64, 1, SHAPE(3), DV(NAN, -1.5707963267948966, 0));
    /* Sign takes integers too. */
    d5_tensor i = tmake(D5_I32, 1, SHAPE(3), DV(-5, 0, 7));
    check("Sign", &i, 1, NULL, D5_I32, 1, SHAPE(3), DV(-1, 0, 1));
}

Test(unary, gradients)
{
    static const char *const ops[] = {
        "Sin",  "Cos",   "Tan",  "Atan",     "Sinh",       "Cosh",      "Asinh", "Floor",
        "Ceil", "Round", "Sign", "Softsign", "Reciprocal", "HardSwish", "Mish",  "Selu"};
    d5_tensor_desc d = op_fdesc(2, SHAPE(3, 4));
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        expect_gradient(ops[k], &d, 1, NULL, NULL, 1);
    /* The inverse functions on their domains, away from the poles of the
     * derivative; HardSwish across its three pieces. */
    d5_tensor u = f64(2, SHAPE(2, 4), unary_inputs[XU]);
    expect_gradient("Asin", &u.desc, 1, &u, NULL, 1);
    expect_gradient("Acos", &u.desc, 1, &u, NULL, 1);
    expect_gradient("Atanh", &u.desc, 1, &u, NULL, 1);
    d5_tensor a = f64(2, SHAPE(2, 4), DV(1.1, 1.2, 1.5, 2.0, 3.0, 5.5, 10.0, 100.0));
    expect_gradient("Acosh", &a.desc, 1, &a, NULL, 1);
    d5_tensor h = f64(2, SHAPE(2, 4), DV(-5, -3.5, -2, -0.4, 0.7, 2.9, 3.2, 8));
    expect_gradient("HardSwish", &h.desc, 1, &h, NULL, 1);
    d5_tensor_free(&u);
    d5_tensor_free(&a);
    d5_tensor_free(&h);
}

Test(unary, errors)
{
    d5_tensor i = tmake(D5_I64, 1, SHAPE(2), DV(1, 2));
    check_fails("Sin", &i, 1, NULL, D5_ERR_UNSUPPORTED,
                "Sin: input 0 has data type int64, expected float32, float64, float16 or "
                "bfloat16");
    d5_tensor b = tmake(D5_BOOL, 1, SHAPE(2), DV(1, 0));
    check_fails("Sign", &b, 1, NULL, D5_ERR_INVALID, "Sign: input 0 is bool");
}

/* ---- element-wise functions with attributes ------------------------------------------- */

Test(activations, attributes)
{
    const double *x = unary_inputs[X];
    /* np.where(x > 0.4, x, 0) */
    d5_tensor t1 = f64(1, SHAPE(8), x);
    check("ThresholdedRelu", &t1, 1, ATTRS(attr_float("alpha", 0.4)), D5_F64, 1, SHAPE(8),
          DV(0, 0, 0, 0, 0, 0.5, 1.5, 2.5));
    /* The default alpha is 1: only 1.5 and 2.5 pass. */
    d5_tensor t1b = f64(1, SHAPE(8), x);
    check("ThresholdedRelu", &t1b, 1, NULL, D5_F64, 1, SHAPE(8), DV(0, 0, 0, 0, 0, 0, 1.5, 2.5));
    /* 0.5 * torch.nn.functional.elu(x, alpha=2) */
    d5_tensor t2 = f64(1, SHAPE(8), x);
    check("Selu", &t2, 1, ATTRS(attr_float("alpha", 2.0), attr_float("gamma", 0.5)), D5_F64, 1,
          SHAPE(8),
          DV(-0.9179150013761012, -0.6988057880877978, -0.3934693402873666, 0.0, 0.15, 0.25, 0.75,
             1.25));
    /* np.where(x < -1, x + 0.3, np.where(x > 1, x - 0.3, 0)) */
    d5_tensor t3 = f64(1, SHAPE(8), x);
    check("Shrink", &t3, 1, ATTRS(attr_float("lambd", 1.0), attr_float("bias", 0.3)), D5_F64, 1,
          SHAPE(8), DV(-2.2, -0.8999999999999999, 0, 0, 0, 0, 1.2, 2.2));
    /* Shrink on int32 with the defaults lambd 0.5, bias 0. */
    d5_tensor t4 = tmake(D5_I32, 1, SHAPE(5), DV(-3, -1, 0, 1, 3));
    check("Shrink", &t4, 1, NULL, D5_I32, 1, SHAPE(5), DV(-3, -1, 0, 1, 3));
}

Test(activations, gradients)
{
    d5_tensor_desc d = op_fdesc(2, SHAPE(3, 4));
    expect_gradient("ThresholdedRelu", &d, 1, NULL, ATTRS(attr_float("alpha", 0.1)), 1);
    expect_gradient("Selu", &d, 1, NULL, ATTRS(attr_float("alpha", 2.0), attr_float("gamma", 0.5)),
                    1);
    expect_gradient("Shrink", &d, 1, NULL, ATTRS(attr_float("lambd", 0.3), attr_float("bias", 0.1)),
                    1);
}

/* ---- PRelu -------------------------------------------------------------------------- */

Test(prelu, per_channel_slope)
{
    /* x [2,2,2], slope [2,1] broadcast from the right: np.where(x < 0, x * slope, x) */
    d5_tensor in[2] = {f64(3, SHAPE(2, 2, 2), DV(-1.5, 2.0, 0.5, -0.25, -3.0, -1.0, 1.0, 4.0)),
                       f64(2, SHAPE(2, 1), DV(0.1, 0.5))};
    check("PRelu", in, 2, NULL, D5_F64, 3, SHAPE(2, 2, 2),
          DV(-0.15000000000000002, 2.0, 0.5, -0.125, -0.30000000000000004, -0.1, 1.0, 4.0));
    d5_tensor_desc d[2] = {op_fdesc(4, SHAPE(2, 3, 2, 2)), op_fdesc(3, SHAPE(3, 1, 1))};
    expect_gradient("PRelu", d, 2, NULL, NULL, 1);
    d5_tensor_desc d2[2] = {op_fdesc(2, SHAPE(3, 4)), op_fdesc(1, SHAPE(1))};
    expect_gradient("PRelu", d2, 2, NULL, NULL, 1);
    /* Opset 6: a 1-d slope of C values applies along axis 1,
     * np.where(x < 0, x * slope.reshape(1, 3, 1), x). */
    d5_tensor in2[2] = {
        f64(3, SHAPE(2, 3, 2), DV(-1, 2, -0.5, -4, 3, -2, 0.5, -1.5, -3, 1, -0.25, 2.5)),
        f64(1, SHAPE(3), DV(0.1, 0.2, 0.3))};
    check("PRelu", in2, 2, ATTRS(OPSET(6)), D5_F64, 3, SHAPE(2, 3, 2),
          DV(-0.1, 2.0, -0.1, -0.8, 3.0, -0.6, 0.5, -0.15000000000000002, -0.6000000000000001, 1.0,
             -0.075, 2.5));
    d5_tensor_desc d3[2] = {op_fdesc(3, SHAPE(2, 3, 2)), op_fdesc(1, SHAPE(3))};
    expect_gradient("PRelu", d3, 2, NULL, ATTRS(OPSET(6)), 1);
}

Test(prelu, errors)
{
    /* The slope may not widen X. */
    d5_tensor in[2] = {f64(2, SHAPE(2, 3), NULL), f64(3, SHAPE(2, 2, 3), NULL)};
    check_fails("PRelu", in, 2, NULL, D5_ERR_SHAPE,
                "PRelu: slope [2,2,3] does not broadcast to X [2,3] without changing X's shape");
    d5_tensor in2[2] = {f64(2, SHAPE(2, 3), NULL), f64(1, SHAPE(2), NULL)};
    check_fails("PRelu", in2, 2, NULL, D5_ERR_SHAPE, "do not broadcast");
    d5_tensor in3[2] = {f64(1, SHAPE(2), NULL), tmake(D5_F32, 1, SHAPE(2), NULL)};
    check_fails("PRelu", in3, 2, NULL, D5_ERR_INVALID,
                "PRelu: slope has data type float32 but X has float64");
}

/* ---- Max, Min --------------------------------------------------------------------------- */

Test(maxmin, broadcast_values)
{
    /* np.maximum(np.maximum(a [2,3], b [3]), c [2,1]) and likewise np.minimum */
    const double a[] = {0.5, -1.0, 2.0, 3.0, 0.25, -0.75}, b[] = {1.0, -2.0, 1.5}, c[] = {0.0, 2.5};
    d5_tensor in[3] = {tmake(D5_F32, 2, SHAPE(2, 3), a), tmake(D5_F32, 1, SHAPE(3), b),
                       tmake(D5_F32, 2, SHAPE(2, 1), c)};
    check("Max", in, 3, NULL, D5_F32, 2, SHAPE(2, 3), DV(1.0, 0.0, 2.0, 3.0, 2.5, 2.5));
    d5_tensor in2[3] = {tmake(D5_F32, 2, SHAPE(2, 3), a), tmake(D5_F32, 1, SHAPE(3), b),
                        tmake(D5_F32, 2, SHAPE(2, 1), c)};
    check("Min", in2, 3, NULL, D5_F32, 2, SHAPE(2, 3), DV(0.0, -2.0, 0.0, 1.0, -2.0, -0.75));
    d5_tensor in3[2] = {tmake(D5_I32, 2, SHAPE(2, 2), DV(7, -3, 2, 9)),
                        tmake(D5_I32, 1, SHAPE(2), DV(4, 5))};
    check("Min", in3, 2, NULL, D5_I32, 2, SHAPE(2, 2), DV(4, -3, 2, 5));
    /* One input is a copy; NaN wins as in np.maximum. */
    d5_tensor one = f64(1, SHAPE(2), DV(1, -1));
    check("Max", &one, 1, NULL, D5_F64, 1, SHAPE(2), DV(1, -1));
    d5_tensor in4[2] = {f64(1, SHAPE(3), DV(NAN, 1, 2)), f64(1, SHAPE(3), DV(0, NAN, 1))};
    check("Min", in4, 2, NULL, D5_F64, 1, SHAPE(3), DV(NAN, NAN, 1));
}

Test(maxmin, gradient_goes_to_the_selected_input)
{
    /* Max([1, 5, 2], [3, 2, 2]): the second element comes from input 0, the
     * first from input 1, the tie (third) from input 0, the first one. */
    d5_tensor in[2] = {f64(1, SHAPE(3), DV(1, 5, 2)), f64(1, SHAPE(3), DV(3, 2, 2))};
    d5_tensor g = f64(1, SHAPE(3), DV(10, 20, 30)), y, gin[2];
    cr_assert_eq(run_known("Max", in, 2, NULL, &y, &g, gin), D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 1, SHAPE(3), DV(3, 5, 2), 0, "Max");
    expect_tensor(&gin[0], D5_F64, 1, SHAPE(3), DV(0, 20, 30), 0, "Max dA");
    expect_tensor(&gin[1], D5_F64, 1, SHAPE(3), DV(10, 0, 0), 0, "Max dB");
    op_free_all(gin, 2);
    d5_tensor_free(&y);
    d5_tensor_free(&g);
    op_free_all(in, 2);
    d5_tensor_desc d[3] = {op_fdesc(2, SHAPE(2, 3)), op_fdesc(1, SHAPE(3)),
                           op_fdesc(2, SHAPE(2, 1))};
    expect_gradient("Max", d, 3, NULL, NULL, 1);
    expect_gradient("Min", d, 3, NULL, NULL, 1);
}

Test(maxmin, errors)
{
    d5_tensor in[2] = {f64(1, SHAPE(2), NULL), tmake(D5_F32, 1, SHAPE(2), NULL)};
    check_fails("Max", in, 2, NULL, D5_ERR_INVALID,
                "Max: input 1 has data type float32, input 0 float64");
    d5_tensor in2[2] = {f64(1, SHAPE(2), NULL), f64(1, SHAPE(3), NULL)};
    check_fails("Min", in2, 2, NULL, D5_ERR_SHAPE, "Min: shapes [2] and [3] do not broadcast");
    d5_tensor b = tmake(D5_BOOL, 1, SHAPE(2), NULL);
    check_fails("Max", &b, 1, NULL, D5_ERR_INVALID, "Max: input 0 is bool");
}

/* ---- Mod ----------------------------------------------------------------------------------- */

Test(mod, integer_and_float)
{
    const double a[] = {-7, -3, 4, 5, 9, -8}, b[] = {3, -2, -3, 2, -4, 5};
    /* np.mod: the divisor's sign */
    d5_tensor in[2] = {tmake(D5_I64, 1, SHAPE(6), a), tmake(D5_I64, 1, SHAPE(6), b)};
    check("Mod", in, 2, NULL, D5_I64, 1, SHAPE(6), DV(2, -1, -2, 1, -3, 2));
    /* np.fmod: the dividend's sign */
    d5_tensor in2[2] = {tmake(D5_I64, 1, SHAPE(6), a), tmake(D5_I64, 1, SHAPE(6), b)};
    check("Mod", in2, 2, ATTRS(attr_int("fmod", 1)), D5_I64, 1, SHAPE(6), DV(-1, -1, 1, 1, 1, -3));
    d5_tensor in3[2] = {f64(1, SHAPE(4), DV(-7.5, 5.25, 4.0, -0.5)),
                        f64(1, SHAPE(4), DV(2.0, -1.5, 2.5, 0.3))};
    check("Mod", in3, 2, ATTRS(attr_int("fmod", 1)), D5_F64, 1, SHAPE(4),
          DV(-1.5, 0.75, 1.5, -0.2));
    /* np.mod(int32 [2,2], int32 [1]) */
    d5_tensor in4[2] = {tmake(D5_I32, 2, SHAPE(2, 2), DV(5, -5, 7, -7)),
                        tmake(D5_I32, 1, SHAPE(1), DV(3))};
    check("Mod", in4, 2, NULL, D5_I32, 2, SHAPE(2, 2), DV(2, 1, 1, 2));
    /* dY/dA = 1, dY/dB = -trunc(A / B), away from the jumps. */
    d5_tensor g[2] = {f64(1, SHAPE(4), DV(-7.5, 5.25, 4.0, -0.5)),
                      f64(1, SHAPE(4), DV(2.0, -1.5, 2.5, 0.3))};
    d5_tensor_desc d[2] = {g[0].desc, g[1].desc};
    expect_gradient("Mod", d, 2, g, ATTRS(attr_int("fmod", 1)), 1);
    op_free_all(g, 2);
}

Test(mod, errors)
{
    d5_tensor in[2] = {f64(1, SHAPE(2), NULL), f64(1, SHAPE(2), NULL)};
    check_fails("Mod", in, 2, NULL, D5_ERR_INVALID,
                "Mod: inputs are float64, which need fmod = 1 (fmod = 0 is for integers)");
    d5_tensor in2[2] = {tmake(D5_I32, 1, SHAPE(3), DV(1, 2, 3)),
                        tmake(D5_I32, 1, SHAPE(3), DV(1, 0, 1))};
    check_fails("Mod", in2, 2, NULL, D5_ERR_NUMERIC,
                "Mod: integer division by zero (element 1 of B is 0)");
    d5_tensor in3[2] = {tmake(D5_I32, 1, SHAPE(3), NULL), tmake(D5_I64, 1, SHAPE(3), NULL)};
    check_fails("Mod", in3, 2, NULL, D5_ERR_INVALID, "Mod: A has data type int32 but B has int64");
    d5_tensor in4[2] = {tmake(D5_I32, 1, SHAPE(3), NULL), tmake(D5_I32, 1, SHAPE(3), DV(1, 1, 1))};
    check_fails("Mod", in4, 2, ATTRS(attr_int("fmod", 2)), D5_ERR_INVALID,
                "Mod: attribute fmod is 2, expected 0 or 1");
}

/* ---- And, Or, Xor, IsNaN, IsInf ----------------------------------------------------------------
 */

Test(logical, broadcast_truth_tables)
{
    static const char *const ops[] = {"And", "Or", "Xor"};
    /* a [2,3] op b [3] with numpy's &, |, ^ */
    static const double want[3][6] = {{1, 0, 0, 0, 0, 0}, {1, 0, 1, 1, 1, 0}, {0, 0, 1, 1, 1, 0}};
    for (int k = 0; k < 3; k++) {
        d5_tensor in[2] = {tmake(D5_BOOL, 2, SHAPE(2, 3), DV(1, 0, 1, 0, 1, 0)),
                           tmake(D5_BOOL, 1, SHAPE(3), DV(1, 0, 0))};
        check(ops[k], in, 2, NULL, D5_BOOL, 2, SHAPE(2, 3), want[k]);
    }
    d5_tensor in[2] = {tmake(D5_BOOL, 1, SHAPE(2), NULL), tmake(D5_I32, 1, SHAPE(2), NULL)};
    check_fails("Xor", in, 2, NULL, D5_ERR_INVALID,
                "Xor: input 1 has data type int32, expected bool");
}

Test(classify, isnan_isinf)
{
    const double x[] = {NAN, INFINITY, -INFINITY, 0.0, 1.5};
    d5_tensor t1 = f64(1, SHAPE(5), x);
    check("IsNaN", &t1, 1, NULL, D5_BOOL, 1, SHAPE(5), DV(1, 0, 0, 0, 0));
    d5_tensor t2 = tmake(D5_F32, 1, SHAPE(5), x);
    check("IsInf", &t2, 1, NULL, D5_BOOL, 1, SHAPE(5), DV(0, 1, 1, 0, 0));
    d5_tensor t3 = f64(1, SHAPE(5), x);
    check("IsInf", &t3, 1, ATTRS(attr_int("detect_negative", 0)), D5_BOOL, 1, SHAPE(5),
          DV(0, 1, 0, 0, 0));
    d5_tensor t4 = f64(1, SHAPE(5), x);
    check("IsInf", &t4, 1, ATTRS(attr_int("detect_positive", 0)), D5_BOOL, 1, SHAPE(5),
          DV(0, 0, 1, 0, 0));
    d5_tensor t5 = tmake(D5_I32, 1, SHAPE(2), NULL);
    check_fails("IsNaN", &t5, 1, NULL, D5_ERR_UNSUPPORTED, "IsNaN: input 0 has data type int32");
}

/* ---- the reductions ----------------------------------------------------------------------- */

/* A [2,3,2]; P = |A| + 0.1 for ReduceLogSum. */
static const double red_a[12] = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5, 1.25, 3.0, -2.0, 0.5, 0.1, -0.3};
static const double red_p[12] = {0.6, 1.1, 2.1, 0.35, 0.85, 1.6, 1.35, 3.1, 2.1, 0.6, 0.2, 0.4};

/* numpy over axis 1 (keepdims 0, [2,2]), axes (0, 2) (keepdims 1, [1,3,1]) and all. */
static const struct {
    const char *op;
    const double *x;
    double axis1[4], axes02[3], all;
} red_cases[] = {
    {"ReduceMax", red_a, {2.0, 1.5, 1.25, 3.0}, {3.0, 2.0, 1.5}, 3.0},
    {"ReduceMin", red_a, {-0.75, -1.0, -2.0, -0.3}, {-1.0, -2.0, -0.75}, -2.0},
    {"ReduceProd",
     red_a,
     {-0.75, -0.375, -0.25, -0.44999999999999996},
     {-1.875, -0.5, 0.03375},
     0.031640625},
    {"ReduceL1", red_a, {3.25, 2.75, 3.35, 3.8}, {5.75, 4.75, 2.65}, 13.15},
    {"ReduceL2",
     red_a,
     {2.1937410968480306, 1.8200274723201295, 2.360614326822575, 3.056141357987225},
     {3.43693177121688, 2.883140648667699, 1.7066048165876013},
     4.799739576268696},
    {"ReduceSumSquare", red_a, {4.8125, 3.3125, 5.5725, 9.34}, {11.8125, 8.3125, 2.9125}, 23.0375},
    {"ReduceLogSum",
     red_p,
     {1.2669476034873246, 1.1151415906193203, 1.2947271675944003, 1.4109869737102623},
     {1.8164520818184267, 1.6389967146756448, 1.1151415906193203},
     2.66374994220563},
    {"ReduceLogSumExp",
     red_a,
     {2.2523590102358226, 1.813780863337258, 1.5541047125588336, 3.11240698033275},
     {3.2422985814846896, 2.3472848140824207, 1.9169291947834022},
     3.7576977902617767},
};

Test(reduce, values_per_opset)
{
    for (size_t k = 0; k < sizeof red_cases / sizeof red_cases[0]; k++) {
        /* Opset 13: axes as the attribute. */
        d5_tensor x = f64(3, SHAPE(2, 3, 2), red_cases[k].x);
        check(red_cases[k].op, &x, 1,
              ATTRS(OPSET(13), attr_ints("axes", IVALS(1), 1), attr_int("keepdims", 0)), D5_F64, 2,
              SHAPE(2, 2), red_cases[k].axis1);
        /* Opset 18: axes as input 1 (a negative one among them). */
        d5_tensor in[2] = {f64(3, SHAPE(2, 3, 2), red_cases[k].x), ti64(1, SHAPE(2), IVALS(0, -1))};
        check(red_cases[k].op, in, 2, ATTRS(OPSET(18)), D5_F64, 3, SHAPE(1, 3, 1),
              red_cases[k].axes02);
        /* No opset given (either form) and no axes: every axis. */
        d5_tensor all = f64(3, SHAPE(2, 3, 2), red_cases[k].x);
        check(red_cases[k].op, &all, 1, ATTRS(attr_int("keepdims", 0)), D5_F64, 0, NULL,
              &red_cases[k].all);
        /* No opset given: the attribute form too. */
        d5_tensor x2 = f64(3, SHAPE(2, 3, 2), red_cases[k].x);
        check(red_cases[k].op, &x2, 1,
              ATTRS(attr_ints("axes", IVALS(-2), 1), attr_int("keepdims", 0)), D5_F64, 2,
              SHAPE(2, 2), red_cases[k].axis1);
    }
}

Test(reduce, empty_axes_empty_sets_and_integers)
{
    /* noop_with_empty_axes: each element is reduced alone, sqrt(x^2) = |x|. */
    d5_tensor x = f64(3, SHAPE(2, 3, 2), red_a);
    check("ReduceL2", &x, 1, ATTRS(attr_int("noop_with_empty_axes", 1)), D5_F64, 3, SHAPE(2, 3, 2),
          DV(0.5, 1.0, 2.0, 0.25, 0.75, 1.5, 1.25, 3.0, 2.0, 0.5, 0.1, 0.3));
    /* An empty axes input without noop reduces everything. */
    d5_tensor in[2] = {f64(2, SHAPE(2, 2), DV(1, 2, 3, 4)), ti64(1, SHAPE(0), NULL)};
    check("ReduceProd", in, 2, ATTRS(attr_int("keepdims", 0)), D5_F64, 0, NULL, DV(24));
    /* Reducing an empty axis gives the identity of each reduction. */
    d5_tensor e1[2] = {f64(2, SHAPE(2, 0), NULL), ti64(1, SHAPE(1), IVALS(1))};
    check("ReduceMax", e1, 2, NULL, D5_F64, 2, SHAPE(2, 1), DV(-INFINITY, -INFINITY));
    d5_tensor e2[2] = {f64(2, SHAPE(2, 0), NULL), ti64(1, SHAPE(1), IVALS(1))};
    check("ReduceProd", e2, 2, ATTRS(attr_int("keepdims", 0)), D5_F64, 1, SHAPE(2), DV(1, 1));
    /* Integers: np.max(axis=1); sqrt truncated as astype(int32) does. */
    d5_tensor i1 = tmake(D5_I64, 2, SHAPE(2, 3), DV(3, -7, 5, -1, -2, -9));
    check("ReduceMax", &i1, 1, ATTRS(OPSET(13), attr_ints("axes", IVALS(1), 1)), D5_I64, 2,
          SHAPE(2, 1), DV(5, -1));
    d5_tensor i2[2] = {tmake(D5_I32, 2, SHAPE(2, 2), DV(3, 4, 1, 1)), ti64(1, SHAPE(1), IVALS(1))};
    check("ReduceL2", i2, 2, ATTRS(attr_int("keepdims", 0)), D5_I32, 1, SHAPE(2), DV(5, 1));
}

Test(reduce, gradients)
{
    d5_tensor axes = ti64(1, SHAPE(1), IVALS(1));
    d5_tensor_desc d[2] = {op_fdesc(3, SHAPE(2, 3, 2)), axes.desc};
    d5_tensor given[2] = {{.data = NULL}, axes};
    for (size_t k = 0; k < sizeof red_cases / sizeof red_cases[0]; k++)
        if (red_cases[k].x == red_a) expect_gradient(red_cases[k].op, d, 2, given, NULL, 1);
    /* ReduceLogSum needs positive sums; all axes, opset 13 attribute style. */
    d5_tensor p = f64(3, SHAPE(2, 3, 2), red_p);
    expect_gradient("ReduceLogSum", &p.desc, 1, &p, ATTRS(OPSET(13)), 1);
    /* ReduceProd with one zero in a set, and with two. */
    d5_tensor z[2] = {f64(3, SHAPE(2, 3, 2), DV(0.5, 2, 0, 3, -1, 1.5, 0, 2, 0, 0, 1, 1)), axes};
    d5_tensor_desc dz[2] = {z[0].desc, axes.desc};
    expect_gradient("ReduceProd", dz, 2, z, NULL, 1);
    d5_tensor_free(&z[0]);
    d5_tensor_free(&p);
    d5_tensor_free(&axes);
}

Test(reduce, errors)
{
    d5_tensor x = f64(2, SHAPE(2, 3), NULL);
    check_fails("ReduceMax", &x, 1, ATTRS(OPSET(18), attr_ints("axes", IVALS(1), 1)),
                D5_ERR_INVALID, "ReduceMax: opset 18 takes axes as input 1, not as an attribute");
    d5_tensor in[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(1), IVALS(1))};
    check_fails("ReduceL1", in, 2, ATTRS(OPSET(17)), D5_ERR_INVALID,
                "ReduceL1: opset 17 takes 1 input (axes is an attribute), got 2");
    d5_tensor x2 = f64(2, SHAPE(2, 3), NULL);
    check_fails("ReduceLogSum", &x2, 1, ATTRS(OPSET(13), attr_int("noop_with_empty_axes", 1)),
                D5_ERR_INVALID, "ReduceLogSum: noop_with_empty_axes is an attribute of opset 18");
    d5_tensor in2[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(1, -1))};
    check_fails("ReduceProd", in2, 2, NULL, D5_ERR_INVALID,
                "ReduceProd: axis -1 appears twice in axes");
    d5_tensor in3[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(1), IVALS(2))};
    check_fails("ReduceLogSumExp", in3, 2, NULL, D5_ERR_INVALID,
                "ReduceLogSumExp: axis 2 is outside [-2, 1]");
    d5_tensor in4[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(1), IVALS(1))};
    cr_assert_eq(create_unknown("ReduceMin", in4, 2, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "ReduceMin: input 1 (axes) must be a constant"), "%s",
              d5_last_error());
    op_free_all(in4, 2);
    d5_tensor b = tmake(D5_BOOL, 1, SHAPE(2), NULL);
    check_fails("ReduceSumSquare", &b, 1, NULL, D5_ERR_UNSUPPORTED,
                "ReduceSumSquare: input 0 has data type bool");
}
