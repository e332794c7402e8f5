/* The arithmetic operators of ref/ops_extra.def: GreaterOrEqual,
 * LessOrEqual, Celu, GlobalMaxPool, BitShift, MeanVarianceNormalization,
 * Upsample, Det, HannWindow, HammingWindow, BlackmanWindow and Einsum.
 * Expected values come from numpy 1.24 (Debian's python3: the expression is
 * given beside each), from the ONNX operator documentation's examples, or by
 * hand where stated; gradients are checked against central differences in
 * float64. */
#include "extra_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* A tensor of any data type (the unsigned ones too) holding `values`,
 * converted with d5_convert. */
static d5_tensor tany(d5_dtype dt, int32_t ndim, const int64_t *shape, const double *values)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    size_t n = (size_t)d5_tensor_desc_numel(&d);
    if (values) cr_assert_eq(d5_convert(values, D5_F64, t.data, dt, n), D5_OK);
    return t;
}

/* Creates `op` with every input known and expects `status` and `text`; frees
 * the inputs. */
static void check_given_fails(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                              d5_status status, const char *text)
{
    const d5_op_desc *desc;
    d5_op *o = NULL;
    cr_assert_eq(d5_op_find(op, "ref", &desc), D5_OK);
    d5_status s = d5_op_create(desc, in, nin, attrs, 1, &o);
    d5_op_free(o);
    cr_assert_eq(s, status, "%s: %s (%s)", op, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "%s: '%s' lacks '%s'", op, d5_last_error(), text);
    op_free_all(in, nin);
}

/* ---- GreaterOrEqual, LessOrEqual ----------------------------------------------------------- */

Test(greaterorequal, broadcast_nan_types)
{
    const double a[] = {1, 2, 3, NAN};
    d5_tensor in[2] = {f64(1, SHAPE(4), a), f64(0, NULL, DV(2))};
    check("GreaterOrEqual", in, 2, NULL, D5_BOOL, 1, SHAPE(4), DV(0, 1, 1, 0));
    d5_tensor in2[2] = {f64(1, SHAPE(4), a), f64(0, NULL, DV(2))};
    check("LessOrEqual", in2, 2, NULL, D5_BOOL, 1, SHAPE(4), DV(1, 1, 0, 0));
    d5_tensor in3[2] = {tmake(D5_I32, 2, SHAPE(2, 1), DV(-1, 5)),
                        tmake(D5_I32, 1, SHAPE(3), DV(-1, 0, 5))};
    check("GreaterOrEqual", in3, 2, NULL, D5_BOOL, 2, SHAPE(2, 3), DV(1, 0, 0, 1, 1, 1));
    d5_tensor in4[2] = {tany(D5_U16, 1, SHAPE(2), DV(7, 65535)),
                        tany(D5_U16, 1, SHAPE(2), DV(7, 1))};
    check("LessOrEqual", in4, 2, NULL, D5_BOOL, 1, SHAPE(2), DV(1, 0));
    d5_tensor b[2] = {tmake(D5_BOOL, 1, SHAPE(2), NULL), tmake(D5_BOOL, 1, SHAPE(2), NULL)};
    check_fails("GreaterOrEqual", b, 2, NULL, D5_ERR_INVALID, "GreaterOrEqual: input 0 is bool");
    d5_tensor m[2] = {f64(1, SHAPE(2), NULL), tmake(D5_F32, 1, SHAPE(2), NULL)};
    check_fails("LessOrEqual", m, 2, NULL, D5_ERR_INVALID,
                "LessOrEqual: inputs have data types float64 and float32");
}

/* ---- Celu ----------------------------------------------------------------------------------- */

Test(celu, values_gradient_errors)
{
    /* x = [-3, -1, 0, 0.5, 2]: np.maximum(0, x) + np.minimum(0, a * (np.exp(x / a) - 1)) */
    const double x[] = {-3, -1, 0, 0.5, 2};
    d5_tensor t = f64(1, SHAPE(5), x);
    check("Celu", &t, 1, ATTRS(attr_float("alpha", 2.0)), D5_F64, 1, SHAPE(5),
          DV(-1.5537396797031404, -0.7869386805747332, 0, 0.5, 2));
    d5_tensor t2 = f64(1, SHAPE(5), x);
    check("Celu", &t2, 1, ATTRS(attr_float("alpha", -1.0)), D5_F64, 1, SHAPE(5),
          DV(-19.085536923187668, -1.718281828459045, 0, 0.5, 2));
    d5_tensor_desc d[1] = {op_fdesc(2, SHAPE(3, 4))};
    expect_gradient("Celu", d, 1, NULL, NULL, 1);
    expect_gradient("Celu", d, 1, NULL, ATTRS(attr_float("alpha", 0.5)), 1);
    d5_tensor z = f64(1, SHAPE(2), NULL);
    check_fails("Celu", &z, 1, ATTRS(attr_float("alpha", 0.0)), D5_ERR_INVALID,
                "Celu: attribute alpha is 0");
    d5_tensor i = tmake(D5_I32, 1, SHAPE(2), NULL);
    check_fails("Celu", &i, 1, NULL, D5_ERR_UNSUPPORTED, "Celu: input 0 has data type int32");
}

/* ---- GlobalMaxPool --------------------------------------------------------------------------- */

Test(globalmaxpool, values_nan_gradient)
{
    /* [1, 2, 2, 2]: plane 0 has its maximum 7 twice, plane 1 a NaN. */
    d5_tensor t = f64(4, SHAPE(1, 2, 2, 2), DV(1, 7, -2, 7, 0, NAN, 9, 3));
    check("GlobalMaxPool", &t, 1, NULL, D5_F64, 4, SHAPE(1, 2, 1, 1), DV(7, NAN));
    d5_tensor t3 = tmake(D5_F32, 3, SHAPE(2, 1, 3), DV(-5, -4, -6, 2, 0, 1));
    check("GlobalMaxPool", &t3, 1, NULL, D5_F32, 3, SHAPE(2, 1, 1), DV(-4, 2));
    /* The gradient goes to the first maximum only. */
    d5_tensor x = f64(3, SHAPE(1, 1, 3), DV(4, 1, 4)), g = f64(3, SHAPE(1, 1, 1), DV(2.5)), gin, y;
    cr_assert_eq(run_known("GlobalMaxPool", &x, 1, NULL, &y, &g, &gin), D5_OK, "%s",
                 d5_last_error());
    expect_tensor(&gin, D5_F64, 3, SHAPE(1, 1, 3), DV(2.5, 0, 0), 0, "GlobalMaxPool gradient");
    d5_tensor all[4] = {x, g, gin, y};
    op_free_all(all, 4);
    d5_tensor_desc d[1] = {op_fdesc(4, SHAPE(2, 3, 2, 3))};
    expect_gradient("GlobalMaxPool", d, 1, NULL, NULL, 1);
    d5_tensor v = f64(1, SHAPE(3), NULL);
    check_fails("GlobalMaxPool", &v, 1, NULL, D5_ERR_SHAPE,
                "GlobalMaxPool: input has 1 dims, expected at least 2");
}

/* ---- BitShift ------------------------------------------------------------------------------- */

Test(bitshift, directions_types_wrap)
{
    /* By hand: 255 << 1 = 510 = 254 mod 256; 16 << 4 = 256 = 0 mod 256; a
     * shift by 8 or more of a uint8 is 0. */
    d5_tensor l[2] = {tany(D5_U8, 1, SHAPE(3), DV(255, 16, 1)),
                      tany(D5_U8, 1, SHAPE(3), DV(1, 4, 8))};
    check("BitShift", l, 2, ATTRS(attr_string("direction", "LEFT")), D5_U8, 1, SHAPE(3),
          DV(254, 0, 0));
    d5_tensor r[2] = {tany(D5_U8, 1, SHAPE(3), DV(255, 16, 1)),
                      tany(D5_U8, 1, SHAPE(3), DV(1, 4, 8))};
    check("BitShift", r, 2, ATTRS(attr_string("direction", "RIGHT")), D5_U8, 1, SHAPE(3),
          DV(127, 1, 0));
    /* uint32: 0x80000001 << 1 wraps to 2; broadcast against a scalar. */
    d5_tensor w[2] = {tany(D5_U32, 1, SHAPE(2), DV(2147483649.0, 3)), tany(D5_U32, 0, NULL, DV(1))};
    d5_tensor y;
    run_op("BitShift", "ref", w, 2, ATTRS(attr_string("direction", "LEFT")), &y, 1);
    cr_assert_eq(y.desc.dtype, D5_U32);
    cr_assert_eq(((const uint32_t *)y.data)[0], 2u);
    cr_assert_eq(((const uint32_t *)y.data)[1], 6u);
    d5_tensor_free(&y);
    op_free_all(w, 2);
    /* uint64: 2^52 << 3 = 2^55, exact. */
    d5_tensor u[2] = {tany(D5_U64, 1, SHAPE(1), DV(4503599627370496.0)),
                      tany(D5_U64, 1, SHAPE(1), DV(3))};
    run_op("BitShift", "ref", u, 2, ATTRS(attr_string("direction", "LEFT")), &y, 1);
    cr_assert_eq(((const uint64_t *)y.data)[0], (uint64_t)1 << 55);
    d5_tensor_free(&y);
    op_free_all(u, 2);
    d5_tensor s[2] = {tmake(D5_I32, 1, SHAPE(1), NULL), tmake(D5_I32, 1, SHAPE(1), NULL)};
    check_fails("BitShift", s, 2, ATTRS(attr_string("direction", "LEFT")), D5_ERR_UNSUPPORTED,
                "BitShift: input 0 has data type int32");
    d5_tensor m[2] = {tany(D5_U8, 1, SHAPE(1), NULL), tany(D5_U16, 1, SHAPE(1), NULL)};
    check_fails("BitShift", m, 2, ATTRS(attr_string("direction", "LEFT")), D5_ERR_INVALID,
                "BitShift: input 1 has data type uint16, input 0 uint8");
    d5_tensor n[2] = {tany(D5_U8, 1, SHAPE(1), NULL), tany(D5_U8, 1, SHAPE(1), NULL)};
    check_fails("BitShift", n, 2, NULL, D5_ERR_INVALID,
                "BitShift: attribute direction (LEFT or RIGHT) is required");
    d5_tensor o[2] = {tany(D5_U8, 1, SHAPE(1), NULL), tany(D5_U8, 1, SHAPE(1), NULL)};
    check_fails("BitShift", o, 2, ATTRS(attr_string("direction", "left")), D5_ERR_INVALID,
                "BitShift: direction is 'left', expected LEFT or RIGHT");
}

/* ---- MeanVarianceNormalization -------------------------------------------------------------- */

Test(mvn, default_axes_given_axes_gradient)
{
    /* x = (np.arange(16).reshape(2, 2, 2, 2) ** 1.5) % 5 - 2; m = x.mean((0, 2, 3));
     * (x - m) / (np.sqrt(((x - m) ** 2).mean((0, 2, 3))) + 1e-9) */
    double x[16];
    for (int i = 0; i < 16; i++) x[i] = fmod(pow(i, 1.5), 5) - 2;
    d5_tensor t = f64(4, SHAPE(2, 2, 2, 2), x);
    check_within("MeanVarianceNormalization", &t, 1, NULL, D5_F64, 4, SHAPE(2, 2, 2, 2),
                 DV(-1.5185301265011388, -0.4853096012127329, 1.4038588330690958,
                    -1.3158614172755991, 0.31156843625564185, -1.378845831798304,
                    1.8879776565857305, 0.7948749233348794, 1.196171044292618, 0.5479109240756731,
                    0.15815596631632733, 0.013604377235757407, -1.0175874621964223,
                    -0.7361578343341907, -0.26141865121559604, 0.39958876336826105),
                 1e-12, 1e-12);
    /* axes [1] of [[1, 2, 4], [3, 3, 3]]: the constant row normalizes to 0. */
    d5_tensor t2 = tmake(D5_F32, 2, SHAPE(2, 3), DV(1, 2, 4, 3, 3, 3));
    check("MeanVarianceNormalization", &t2, 1, ATTRS(attr_ints("axes", IVALS(-1), 1)), D5_F32, 2,
          SHAPE(2, 3), DV(-1.0690449667925548, -0.2672612416981388, 1.3363062084906931, 0, 0, 0));
    d5_tensor_desc d[1] = {op_fdesc(4, SHAPE(2, 3, 2, 2))};
    expect_gradient("MeanVarianceNormalization", d, 1, NULL, NULL, 1);
    expect_gradient("MeanVarianceNormalization", d, 1, NULL,
                    ATTRS(attr_ints("axes", IVALS(1, 3), 2)), 1);
    d5_tensor s = f64(2, SHAPE(2, 2), NULL);
    check_fails("MeanVarianceNormalization", &s, 1, NULL, D5_ERR_SHAPE,
                "MeanVarianceNormalization: input has 2 dims; the default axes [0, 2, 3] need at "
                "least 4");
    d5_tensor r = f64(2, SHAPE(2, 2), NULL);
    check_fails("MeanVarianceNormalization", &r, 1, ATTRS(attr_ints("axes", IVALS(1, -1), 2)),
                D5_ERR_INVALID, "MeanVarianceNormalization: axis -1 is given twice");
    d5_tensor o = f64(4, SHAPE(1, 1, 1, 1), NULL);
    check_fails("MeanVarianceNormalization", &o, 1, ATTRS(OPSET(1)), D5_ERR_UNSUPPORTED,
                "MeanVarianceNormalization: opset 1 (across_channels, normalize_variance) is not "
                "supported");
}

/* ---- Upsample ------------------------------------------------------------------------------- */

Test(upsample, nearest_linear_opset7)
{
    /* The spec's example: scales [1, 1, 2, 3], nearest. */
    d5_tensor n[2] = {f64(4, SHAPE(1, 1, 2, 2), DV(1, 2, 3, 4)),
                      tmake(D5_F32, 1, SHAPE(4), DV(1, 1, 2, 3))};
    check_given("Upsample", n, 2, ATTRS(OPSET(9)), D5_F64, 4, SHAPE(1, 1, 4, 6),
                DV(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4));
    /* Linear, by hand: output x reads input x / 2; past the last element it
     * clamps to it. */
    d5_tensor l[2] = {f64(4, SHAPE(1, 1, 2, 2), DV(1, 2, 3, 4)),
                      tmake(D5_F32, 1, SHAPE(4), DV(1, 1, 2, 2))};
    check_given("Upsample", l, 2, ATTRS(attr_string("mode", "linear")), D5_F64, 4,
                SHAPE(1, 1, 4, 4), DV(1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4));
    /* Opset 7: scales is an attribute. */
    d5_tensor a = tmake(D5_I32, 2, SHAPE(2, 1), DV(5, 6));
    d5_attr sc = {.name = "scales", .type = D5_ATTR_FLOATS, .floats = DV(1, 2.5), .count = 2};
    check("Upsample", &a, 1, ATTRS(OPSET(7), sc), D5_I32, 2, SHAPE(2, 2), DV(5, 5, 6, 6));
}

Test(upsample, linear_matches_resize_asymmetric)
{
    /* Resize (opset 11+) with coordinate_transformation_mode asymmetric and
     * the same scales is another implementation of Upsample. */
    double x[2 * 3 * 4];
    for (int i = 0; i < 24; i++) x[i] = sin(1.7 * i) * 3;
    const double scales[] = {1, 1.5, 2.25};
    for (int mode = 0; mode < 2; mode++) {
        const char *m = mode ? "linear" : "nearest";
        d5_tensor up[2] = {f64(3, SHAPE(2, 3, 4), x), tmake(D5_F32, 1, SHAPE(3), scales)};
        d5_tensor rs[3] = {
            f64(3, SHAPE(2, 3, 4), x), {.data = NULL}, tmake(D5_F32, 1, SHAPE(3), scales)};
        d5_tensor yu, yr;
        run_given("Upsample", up, 2, ATTRS(attr_string("mode", m)), &yu, 1);
        cr_assert_eq(run_known("Resize", rs, 3,
                               ATTRS(attr_string("mode", m),
                                     attr_string("coordinate_transformation_mode", "asymmetric"),
                                     attr_string("nearest_mode", "floor")),
                               &yr, NULL, NULL),
                     D5_OK, "%s", d5_last_error());
        cr_assert_eq(yu.desc.ndim, 3);
        expect_tensor(&yu, D5_F64, 3, yr.desc.shape, yr.data, 1e-12, m);
        d5_tensor_free(&yu);
        d5_tensor_free(&yr);
        op_free_all(up, 2);
        op_free_all(rs, 3);
    }
}

Test(upsample, gradient_and_errors)
{
    d5_tensor sc = tmake(D5_F32, 1, SHAPE(3), DV(1, 2, 1.5));
    d5_tensor_desc d[2] = {op_fdesc(3, SHAPE(2, 3, 4)), sc.desc};
    d5_tensor given[2] = {{.data = NULL}, sc};
    const d5_op_desc *op;
    cr_assert_eq(d5_op_find("Upsample", "ref", &op), D5_OK);
    /* scales is float: the gradient checker leaves it unknown at create. */
    d5_gradient_check g;
    cr_assert_eq(
        d5_validate_gradient(op, d, 2, given, ATTRS(attr_string("mode", "linear")), 1, NULL, &g),
        D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "Upsample: input 1 (scales) must be a constant"), "%s",
              d5_last_error());
    /* Through run_known, which gives scales at create: backward against the
     * adjoint computed by hand for x [1, 2] scaled by 2 (linear): y = [x0,
     * (x0 + x1) / 2, x1, x1], so dx = [g0 + g1 / 2, g1 / 2 + g2 + g3]. */
    d5_tensor in[2] = {f64(1, SHAPE(2), DV(1, 2)), tmake(D5_F32, 1, SHAPE(1), DV(2))};
    d5_tensor y, gy = f64(1, SHAPE(4), DV(1, 10, 100, 1000)), gin[2];
    cr_assert_eq(run_known("Upsample", in, 2, ATTRS(attr_string("mode", "linear")), &y, &gy, gin),
                 D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 1, SHAPE(4), DV(1, 1.5, 2, 2), 0, "Upsample linear 1-d");
    expect_tensor(&gin[0], D5_F64, 1, SHAPE(2), DV(6, 1105), 0, "Upsample gradient");
    op_free_all(gin, 2);
    d5_tensor_free(&y);
    d5_tensor_free(&gy);
    op_free_all(in, 2);
    d5_tensor_free(&sc);
    d5_tensor s[2] = {f64(1, SHAPE(2), NULL), tmake(D5_F32, 1, SHAPE(1), DV(0.5))};
    check_given_fails("Upsample", s, 2, NULL, D5_ERR_INVALID,
                      "Upsample: scales[0] is 0.5, expected a value >= 1");
    d5_tensor r[2] = {f64(1, SHAPE(2), NULL), tmake(D5_F32, 1, SHAPE(2), DV(1, 1))};
    check_given_fails("Upsample", r, 2, NULL, D5_ERR_SHAPE,
                      "Upsample: scales has 2 values, expected 1 (X's rank)");
    d5_tensor c[2] = {f64(1, SHAPE(2), NULL), tmake(D5_F32, 1, SHAPE(1), DV(2))};
    check_given_fails("Upsample", c, 2, ATTRS(attr_string("mode", "cubic")), D5_ERR_INVALID,
                      "Upsample: mode is 'cubic', expected nearest or linear");
}

/* ---- Det ------------------------------------------------------------------------------------ */

Test(det, values_and_gradients)
{
    /* np.linalg.det of [[1, 2], [3, 4]], [[2, 0], [0, 3]], [[0, 1], [1, 0]] */
    d5_tensor t = f64(3, SHAPE(3, 2, 2), DV(1, 2, 3, 4, 2, 0, 0, 3, 0, 1, 1, 0));
    check_within("Det", &t, 1, NULL, D5_F64, 1, SHAPE(3), DV(-2, 6, -1), 1e-12, 1e-12);
    d5_tensor t3 = tmake(D5_F32, 2, SHAPE(3, 3), DV(2, -1, 0, -1, 2, -1, 0, -1, 2));
    check("Det", &t3, 1, NULL, D5_F32, 0, NULL, DV(4));
    d5_tensor_desc d[1] = {op_fdesc(4, SHAPE(2, 2, 3, 3))};
    expect_gradient("Det", d, 1, NULL, NULL, 1);
    /* A singular matrix: the gradient is its cofactor matrix, [[4, -2], [-2, 1]]
     * for [[1, 2], [2, 4]] (by hand), times dY = 3. */
    d5_tensor x = f64(2, SHAPE(2, 2), DV(1, 2, 2, 4)), y, g = f64(0, NULL, DV(3)), gin;
    cr_assert_eq(run_known("Det", &x, 1, NULL, &y, &g, &gin), D5_OK, "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 0, NULL, DV(0), 0, "Det singular");
    expect_tensor(&gin, D5_F64, 2, SHAPE(2, 2), DV(12, -6, -6, 3), 1e-12, "Det singular gradient");
    d5_tensor all[4] = {x, y, g, gin};
    op_free_all(all, 4);
    d5_tensor r = f64(2, SHAPE(2, 3), NULL);
    check_fails("Det", &r, 1, NULL, D5_ERR_SHAPE,
                "Det: input X is [2,3], expected [*, M, M] (square matrices)");
}

/* ---- HannWindow, HammingWindow, BlackmanWindow ---------------------------------------------- */

Test(windows, periodic_symmetric_types)
{
    /* a0 - a1 * np.cos(2 * np.pi * n / N) + a2 * np.cos(4 * np.pi * n / N),
     * n = np.arange(10), N = 10 (periodic) or 9 (symmetric). */
    static const char *const ops[] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
    static const double want[3][2][10] = {
        {{0.0, 0.09549150281252622, 0.3454915028125263, 0.6545084971874737, 0.9045084971874737, 1.0,
          0.9045084971874738, 0.6545084971874738, 0.3454915028125264, 0.09549150281252633},
         {0.0, 0.11697777844051088, 0.4131759111665348, 0.7499999999999999, 0.9698463103929542,
          0.9698463103929542, 0.7500000000000002, 0.413175911166535, 0.11697777844051105, 0.0}},
        {{0.08695652173913043, 0.17414441561143695, 0.4024052851766544, 0.684551236562476,
          0.9128121061276934, 1.0, 0.9128121061276935, 0.6845512365624761, 0.40240528517665447,
          0.17414441561143706},
         {0.08695652173913043, 0.19376231944568384, 0.46420409280422736, 0.7717391304347825,
          0.9724683703587842, 0.9724683703587842, 0.7717391304347827, 0.4642040928042276,
          0.193762319445684, 0.08695652173913043}},
        {{-1.3877787807814457e-17, 0.040212862362522, 0.2007701432625304, 0.5097871376374778,
          0.8492298567374694, 0.9999999999999999, 0.8492298567374696, 0.509787137637478,
          0.2007701432625305, 0.040212862362522084},
         {-1.3877787807814457e-17, 0.0508696326538653, 0.2580005015036621, 0.6299999999999998,
          0.9511298658424724, 0.9511298658424724, 0.6300000000000002, 0.25800050150366227,
          0.05086963265386541, -1.3877787807814457e-17}}};
    for (int o = 0; o < 3; o++)
        for (int sym = 0; sym < 2; sym++) {
            d5_tensor size = tmake(D5_I32, 0, NULL, DV(10));
            check_within(ops[o], &size, 1,
                         ATTRS(attr_int("periodic", !sym), attr_int("output_datatype", 11)), D5_F64,
                         1, SHAPE(10), want[o][sym], 1e-15, 1e-15);
        }
    d5_tensor one = ti64(0, NULL, IVALS(1));
    check("HannWindow", &one, 1, ATTRS(attr_int("periodic", 0)), D5_F32, 1, SHAPE(1), DV(1));
    d5_tensor zero = ti64(1, SHAPE(1), IVALS(0));
    check("BlackmanWindow", &zero, 1, NULL, D5_F32, 1, SHAPE(0), NULL);
    d5_tensor neg = ti64(0, NULL, IVALS(-2));
    check_fails("HammingWindow", &neg, 1, NULL, D5_ERR_INVALID,
                "HammingWindow: input 0 (size) is -2, expected >= 0");
    d5_tensor two = ti64(1, SHAPE(2), IVALS(3, 4));
    check_fails("HannWindow", &two, 1, NULL, D5_ERR_SHAPE,
                "HannWindow: input 0 (size) has 2 values, expected a scalar");
    d5_tensor u = ti64(0, NULL, IVALS(4));
    cr_assert_eq(create_unknown("BlackmanWindow", &u, 1, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "BlackmanWindow: input 0 (size) must be a constant"), "%s",
              d5_last_error());
    d5_tensor_free(&u);
}

/* ---- Einsum --------------------------------------------------------------------------------- */

/* A = np.arange(6.).reshape(2, 3) - 2.5, B = np.arange(12.).reshape(3, 4) / 3 - 1 */
static const double ein_a[6] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5};
static void ein_b(double *b)
{
    for (int i = 0; i < 12; i++) b[i] = i / 3.0 - 1;
}

Test(einsum, matmul_diagonal_sum_transpose)
{
    double b[12];
    ein_b(b);
    /* np.einsum('ij,jk->ik', A, B), and the implicit 'ij,jk' with spaces */
    const double ab[] = {1.1666666666666667, -0.33333333333333304, -1.8333333333333333,
                         -3.333333333333333, 4.166666666666666,    5.666666666666667,
                         7.166666666666667,  8.666666666666666};
    static const char *const eqs[] = {"ij,jk->ik", " ij , jk "};
    for (int k = 0; k < 2; k++) {
        d5_tensor in[2] = {f64(2, SHAPE(2, 3), ein_a), f64(2, SHAPE(3, 4), b)};
        check("Einsum", in, 2, ATTRS(attr_string("equation", eqs[k])), D5_F64, 2, SHAPE(2, 4), ab);
    }
    /* S = np.arange(9.).reshape(3, 3) * 0.5 - 1: 'ii->i' and 'ii' */
    const double s[] = {-1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3};
    d5_tensor d1 = f64(2, SHAPE(3, 3), s);
    check("Einsum", &d1, 1, ATTRS(attr_string("equation", "ii->i")), D5_F64, 1, SHAPE(3),
          DV(-1, 1, 3));
    d5_tensor d2 = f64(2, SHAPE(3, 3), s);
    check("Einsum", &d2, 1, ATTRS(attr_string("equation", "ii")), D5_F64, 0, NULL, DV(3));
    /* 'ij->' and the implicit 'ba' (output 'ab': a transpose) */
    d5_tensor d3 = f64(2, SHAPE(2, 3), ein_a);
    check("Einsum", &d3, 1, ATTRS(attr_string("equation", "ij->")), D5_F64, 0, NULL, DV(0));
    d5_tensor d4 = f64(2, SHAPE(2, 3), ein_a);
    check("Einsum", &d4, 1, ATTRS(attr_string("equation", "ba")), D5_F64, 2, SHAPE(3, 2),
          DV(-2.5, 0.5, -1.5, 1.5, -0.5, 2.5));
    /* 'iij->ij' on np.arange(18.).reshape(3, 3, 2) */
    double t18[18];
    for (int i = 0; i < 18; i++) t18[i] = i;
    d5_tensor d5t = f64(3, SHAPE(3, 3, 2), t18);
    check("Einsum", &d5t, 1, ATTRS(attr_string("equation", "iij->ij")), D5_F64, 2, SHAPE(3, 2),
          DV(0, 1, 8, 9, 16, 17));
    /* Uppercase letters sort before lowercase: the implicit 'aB' is 'aB->Ba'. */
    d5_tensor up = f64(2, SHAPE(2, 3), ein_a);
    check("Einsum", &up, 1, ATTRS(attr_string("equation", "aB")), D5_F64, 2, SHAPE(3, 2),
          DV(-2.5, 0.5, -1.5, 1.5, -0.5, 2.5));
    /* Three inputs: np.einsum('i,j,k->kji', [1, 2], [3, 4, 5], [-1, 1]) */
    d5_tensor three[3] = {tmake(D5_I32, 1, SHAPE(2), DV(1, 2)),
                          tmake(D5_I32, 1, SHAPE(3), DV(3, 4, 5)),
                          tmake(D5_I32, 1, SHAPE(2), DV(-1, 1))};
    check("Einsum", three, 3, ATTRS(attr_string("equation", "i,j,k->kji")), D5_I32, 3,
          SHAPE(2, 3, 2), DV(-3, -6, -4, -8, -5, -10, 3, 6, 4, 8, 5, 10));
}

Test(einsum, ellipsis_broadcast)
{
    /* np.einsum('...ij->...ji', np.arange(24.).reshape(2, 3, 4) * 0.25 - 2) */
    double t[24], want[24];
    for (int i = 0; i < 24; i++) t[i] = i * 0.25 - 2;
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) want[b * 12 + j * 3 + i] = t[b * 12 + i * 4 + j];
    d5_tensor x = f64(3, SHAPE(2, 3, 4), t);
    check("Einsum", &x, 1, ATTRS(attr_string("equation", "...ij->...ji")), D5_F64, 3,
          SHAPE(2, 4, 3), want);
    /* The spec's '...ii ->...i' (batch diagonal). */
    double s[12];
    for (int i = 0; i < 12; i++) s[i] = i;
    d5_tensor bd = f64(3, SHAPE(3, 2, 2), s);
    check("Einsum", &bd, 1, ATTRS(attr_string("equation", "...ii ->...i")), D5_F64, 2, SHAPE(3, 2),
          DV(0, 3, 4, 7, 8, 11));
    /* Broadcasting: P [2, 1, 3] and Q [4, 3] -> [2, 4]:
     * np.einsum('...i,...i->...', np.arange(6.).reshape(2, 1, 3) - 1, np.arange(12.).reshape(4, 3)
     * * 0.5) */
    double q[12];
    for (int i = 0; i < 12; i++) q[i] = i * 0.5;
    d5_tensor pq[2] = {f64(3, SHAPE(2, 1, 3), DV(-1, 0, 1, 2, 3, 4)), f64(2, SHAPE(4, 3), q)};
    check("Einsum", pq, 2, ATTRS(attr_string("equation", "...i,...i->...")), D5_F64, 2, SHAPE(2, 4),
          DV(1, 1, 1, 1, 5.5, 19, 32.5, 46));
    /* Implicit with an ellipsis: its dimensions come first. */
    d5_tensor im[2] = {f64(3, SHAPE(2, 1, 3), DV(-1, 0, 1, 2, 3, 4)), f64(2, SHAPE(4, 3), q)};
    check("Einsum", im, 2, ATTRS(attr_string("equation", "...i,...i")), D5_F64, 2, SHAPE(2, 4),
          DV(1, 1, 1, 1, 5.5, 19, 32.5, 46));
}

Test(einsum, gradients)
{
    d5_tensor_desc mm[2] = {op_fdesc(3, SHAPE(2, 3, 4)), op_fdesc(3, SHAPE(2, 4, 2))};
    expect_gradient("Einsum", mm, 2, NULL, ATTRS(attr_string("equation", "bij,bjk->bik")), 1);
    d5_tensor_desc dg[1] = {op_fdesc(3, SHAPE(2, 3, 3))};
    expect_gradient("Einsum", dg, 1, NULL, ATTRS(attr_string("equation", "...ii->...i")), 1);
    expect_gradient("Einsum", dg, 1, NULL, ATTRS(attr_string("equation", "bii")), 1);
    d5_tensor_desc bc[3] = {op_fdesc(3, SHAPE(2, 1, 3)), op_fdesc(2, SHAPE(4, 3)),
                            op_fdesc(1, SHAPE(3))};
    expect_gradient("Einsum", bc, 3, NULL, ATTRS(attr_string("equation", "...i,...i,i->...")), 1);
}

Test(einsum, errors)
{
    static const struct {
        const char *equation;
        d5_status status;
        const char *text;
    } cases[] = {
        {"ij,jk->ik,", D5_ERR_INVALID, "Einsum: the output of 'ij,jk->ik,' has a ','"},
        {"ij,jk->il", D5_ERR_INVALID,
         "Einsum: output letter 'l' of 'ij,jk->il' is in no input term"},
        {"ij,jk->ii", D5_ERR_INVALID, "Einsum: output letter 'i' of 'ij,jk->ii' is repeated"},
        {"ij", D5_ERR_INVALID, "Einsum: the equation 'ij' has 1 terms for 2 inputs"},
        {"i1,jk", D5_ERR_INVALID, "Einsum: input term 0 of the equation has '1'"},
        {"i..,jk", D5_ERR_INVALID, "not part of one \"...\""},
        {"ij,ik->", D5_ERR_SHAPE, "Einsum: letter 'i' has size 3 in input 1 but 2 elsewhere"},
        {"ijk,jk", D5_ERR_SHAPE, "Einsum: input 0 has 2 dims, but its term has 3 letters"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        d5_tensor in[2] = {f64(2, SHAPE(2, 3), NULL), f64(2, SHAPE(3, 4), NULL)};
        check_fails("Einsum", in, 2, ATTRS(attr_string("equation", cases[k].equation)),
                    cases[k].status, cases[k].text);
    }
    d5_tensor in[2] = {f64(2, SHAPE(2, 3), NULL), f64(2, SHAPE(3, 4), NULL)};
    check_fails("Einsum", in, 2, NULL, D5_ERR_INVALID, "Einsum: attribute equation is required");
    d5_tensor b[2] = {f64(1, SHAPE(2), NULL), f64(1, SHAPE(3), NULL)};
    check_fails("Einsum", b, 2, ATTRS(attr_string("equation", "...,...")), D5_ERR_SHAPE,
                "Einsum: the ellipsis dimensions of input 1 do not broadcast against the others "
                "(3 against 2)");
}
