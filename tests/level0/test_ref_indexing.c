/* The indexing, normalization and loss operators of ref/ops_more.def: ArgMax,
 * ArgMin, CumSum, Hardmax, Tile, Size, InstanceNormalization, CastLike, Trilu,
 * GatherElements, ScatterElements, OneHot, DepthToSpace, SpaceToDepth and
 * NegativeLogLikelihoodLoss; see test_ref_more.c for how the expected values
 * were computed. */
#include "more_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* ---- ArgMax, ArgMin ------------------------------------------------------------------------- */

/* [3,4] with ties in every row. */
static const double arg_x[12] = {2, 5, 5, -1, 3, 3, 0.5, 3, -4, -4, -6, 0};

Test(argmax, axes_keepdims_ties)
{
    d5_tensor t1 = f64(2, SHAPE(3, 4), arg_x);
    check("ArgMax", &t1, 1, NULL, D5_I64, 2, SHAPE(1, 4), DV(1, 0, 0, 1));
    d5_tensor t2 = f64(2, SHAPE(3, 4), arg_x);
    check("ArgMax", &t2, 1, ATTRS(attr_int("axis", 1), attr_int("keepdims", 0)), D5_I64, 1,
          SHAPE(3), DV(1, 0, 3));
    d5_tensor t3 = f64(2, SHAPE(3, 4), arg_x);
    check("ArgMin", &t3, 1, ATTRS(attr_int("axis", -1)), D5_I64, 2, SHAPE(3, 1), DV(3, 2, 2));
    d5_tensor t4 = f64(2, SHAPE(3, 4), arg_x);
    check("ArgMax", &t4, 1, ATTRS(attr_int("axis", 1), attr_int("select_last_index", 1)), D5_I64, 2,
          SHAPE(3, 1), DV(2, 3, 3));
    d5_tensor t5 = tmake(D5_I32, 2, SHAPE(3, 4), arg_x);
    check("ArgMin", &t5, 1, ATTRS(attr_int("axis", 1), attr_int("select_last_index", 1)), D5_I64, 2,
          SHAPE(3, 1), DV(3, 2, 2));
    /* np.argmax([1, nan, 3, nan]) is 1: the first NaN. */
    d5_tensor t6 = f64(1, SHAPE(4), DV(1, NAN, 3, NAN));
    check("ArgMax", &t6, 1, ATTRS(attr_int("keepdims", 0)), D5_I64, 0, NULL, DV(1));
}

Test(argmax, errors)
{
    d5_tensor e = f64(2, SHAPE(2, 0), NULL);
    check_fails("ArgMax", &e, 1, ATTRS(attr_int("axis", 1)), D5_ERR_SHAPE,
                "ArgMax: axis 1 of the input is empty");
    d5_tensor x = f64(2, SHAPE(2, 2), NULL);
    check_fails("ArgMin", &x, 1, ATTRS(attr_int("axis", -3)), D5_ERR_INVALID,
                "ArgMin: axis -3 is outside [-2, 1]");
    d5_tensor b = tmake(D5_BOOL, 1, SHAPE(2), NULL);
    check_fails("ArgMax", &b, 1, NULL, D5_ERR_INVALID, "ArgMax: input 0 is bool");
}

/* ---- CumSum ---------------------------------------------------------------------------------- */

Test(cumsum, exclusive_reverse_axes)
{
    /* x = [[1, 2, 3], [4, 5, 6]]; for each axis, (exclusive, reverse) in
     * (0,0), (0,1), (1,0), (1,1). */
    static const double want[2][4][6] = {
        {{1, 2, 3, 5, 7, 9}, {5, 7, 9, 4, 5, 6}, {0, 0, 0, 1, 2, 3}, {4, 5, 6, 0, 0, 0}},
        {{1, 3, 6, 4, 9, 15}, {6, 5, 3, 15, 11, 6}, {0, 1, 3, 0, 4, 9}, {5, 3, 0, 11, 6, 0}}};
    for (int axis = 0; axis < 2; axis++)
        for (int k = 0; k < 4; k++) {
            d5_tensor in[2] = {f64(2, SHAPE(2, 3), DV(1, 2, 3, 4, 5, 6)),
                               tmake(D5_I32, 0, NULL, DV(axis == 0 ? 0 : -1))};
            check("CumSum", in, 2, ATTRS(attr_int("exclusive", k / 2), attr_int("reverse", k % 2)),
                  D5_F64, 2, SHAPE(2, 3), want[axis][k]);
        }
    d5_tensor in[2] = {tmake(D5_I64, 1, SHAPE(4), DV(5, -2, 7, 1)), ti64(1, SHAPE(1), IVALS(0))};
    check("CumSum", in, 2, NULL, D5_I64, 1, SHAPE(4), DV(5, 3, 10, 11));
}

Test(cumsum, gradients_and_errors)
{
    d5_tensor axis = ti64(0, NULL, IVALS(1));
    d5_tensor_desc d[2] = {op_fdesc(3, SHAPE(2, 4, 3)), axis.desc};
    d5_tensor given[2] = {{.data = NULL}, axis};
    for (int k = 0; k < 4; k++)
        expect_gradient("CumSum", d, 2, given,
                        ATTRS(attr_int("exclusive", k / 2), attr_int("reverse", k % 2)), 1);
    d5_tensor_free(&axis);
    d5_tensor in[2] = {f64(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(0, 0))};
    check_fails("CumSum", in, 2, NULL, D5_ERR_INVALID,
                "CumSum: input 1 (axis) has 2 values, at most 1");
    d5_tensor in2[2] = {f64(1, SHAPE(3), NULL), ti64(0, NULL, IVALS(1))};
    check_fails("CumSum", in2, 2, NULL, D5_ERR_INVALID, "CumSum: axis 1 is outside [-1, 0]");
    d5_tensor in3[2] = {f64(1, SHAPE(3), NULL), ti64(0, NULL, IVALS(0))};
    cr_assert_eq(create_unknown("CumSum", in3, 2, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "CumSum: input 1 (axis) must be a constant"), "%s",
              d5_last_error());
    op_free_all(in3, 2);
}

/* ---- Hardmax -------------------------------------------------------------------------------- */

Test(hardmax, opset13_and_coerced)
{
    const double x[] = {1, 3, 3, 0, -1, 2, 5, 4, 6, 7, 7, 1}; /* [2,2,3] */
    d5_tensor t1 = f64(3, SHAPE(2, 2, 3), x);
    check("Hardmax", &t1, 1, ATTRS(OPSET(13)), D5_F64, 3, SHAPE(2, 2, 3),
          DV(0, 1, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0));
    d5_tensor t2 = f64(3, SHAPE(2, 2, 3), x);
    check("Hardmax", &t2, 1, ATTRS(attr_int("axis", 1)), D5_F64, 3, SHAPE(2, 2, 3),
          DV(1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0));
    /* Opset 11: axis 1 (the default) sees the input as [2, 6]. */
    d5_tensor t3 = tmake(D5_F32, 3, SHAPE(2, 2, 3), x);
    check("Hardmax", &t3, 1, ATTRS(OPSET(11)), D5_F32, 3, SHAPE(2, 2, 3),
          DV(0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0));
    d5_tensor i = tmake(D5_I32, 1, SHAPE(2), NULL);
    check_fails("Hardmax", &i, 1, NULL, D5_ERR_UNSUPPORTED, "Hardmax: input 0 has data type int32");
}

/* ---- Tile, Size ------------------------------------------------------------------------------ */

Test(tile, values_gradient_errors)
{
    /* np.tile(x, (2, 1)) and np.tile([[7], [8]], (1, 3)) */
    d5_tensor in[2] = {tmake(D5_F32, 2, SHAPE(2, 3), DV(1, 2, 3, 4, 5, 6)),
                       ti64(1, SHAPE(2), IVALS(2, 1))};
    check("Tile", in, 2, NULL, D5_F32, 2, SHAPE(4, 3), DV(1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6));
    d5_tensor in2[2] = {tmake(D5_I64, 2, SHAPE(2, 1), DV(7, 8)), ti64(1, SHAPE(2), IVALS(1, 3))};
    check("Tile", in2, 2, NULL, D5_I64, 2, SHAPE(2, 3), DV(7, 7, 7, 8, 8, 8));
    d5_tensor reps = ti64(1, SHAPE(3), IVALS(2, 1, 3));
    expect_gradient_given("Tile", 3, SHAPE(2, 3, 2), &reps, NULL, 1);
    d5_tensor_free(&reps);
    d5_tensor in3[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(1, -1))};
    check_fails("Tile", in3, 2, NULL, D5_ERR_INVALID, "Tile: repeats[1] is -1, expected >= 0");
    d5_tensor in4[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(3), IVALS(1, 1, 1))};
    check_fails("Tile", in4, 2, NULL, D5_ERR_INVALID,
                "Tile: input 1 (repeats) has 3 values in 1 dims, expected a 1-d tensor of 2");
    d5_tensor in5[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(1, 1))};
    cr_assert_eq(create_unknown("Tile", in5, 2, NULL), D5_ERR_UNSUPPORTED);
    op_free_all(in5, 2);
}

Test(size, reads_only_the_descriptor)
{
    /* float16, which the ref backend cannot convert: Size never reads it. */
    d5_tensor_desc hd;
    cr_assert_eq(d5_tensor_desc_make(D5_F16, 3, SHAPE(3, 4, 5), &hd), D5_OK);
    d5_tensor h;
    cr_assert_eq(d5_tensor_alloc(&hd, &h), D5_OK);
    check("Size", &h, 1, NULL, D5_I64, 0, NULL, DV(60));
    d5_tensor e = f64(2, SHAPE(0, 3), NULL);
    check("Size", &e, 1, NULL, D5_I64, 0, NULL, DV(0));
    d5_tensor s = tmake(D5_BOOL, 0, NULL, DV(1));
    check("Size", &s, 1, NULL, D5_I64, 0, NULL, DV(1));
}

/* ---- InstanceNormalization ----------------------------------------------------------------- */

static const double in_x[16] = {0.5,  -1.0, 2.0, 0.25, -0.75, 1.5, 1.25, 3.0,
                                -2.0, 0.5,  0.1, -0.3, 4.0,   4.5, -1.0, 0.0};

Test(instancenorm, values_and_gradients)
{
    /* torch.nn.functional.instance_norm(x [2,2,2,2], weight=[1.5, -0.5],
     * bias=[0.25, 1.0], eps=1e-5 (the default) and 0.5) */
    d5_tensor in[3] = {f64(4, SHAPE(2, 2, 2, 2), in_x), f64(1, SHAPE(2), DV(1.5, -0.5)),
                       f64(1, SHAPE(2), DV(0.25, 1.0))};
    check("InstanceNormalization", in, 3, NULL, D5_F64, 4, SHAPE(2, 2, 2, 2),
          DV(0.33793117048865046, -1.7724169212389604, 2.4482792622162615, -0.013793511465951369,
             1.7492665460639671, 0.906341681742004, 0.9999999999999999, 0.34439177219402856,
             -2.230822589882856, 1.7069910448518364, 1.0769408632942854, 0.4468906817367347,
             0.5587023687304209, 0.4548676319611082, 1.597049736423548, 1.3893802628849226));
    d5_tensor in2[3] = {f64(4, SHAPE(2, 2, 2, 2), in_x), f64(1, SHAPE(2), DV(1.5, -0.5)),
                        f64(1, SHAPE(2), DV(0.25, 1.0))};
    check("InstanceNormalization", in2, 3, ATTRS(attr_float("epsilon", 0.5)), D5_F64, 4,
          SHAPE(2, 2, 2, 2),
          DV(0.3232797953119047, -1.4354352921738085, 2.081994882797618, 0.03016061406428583,
             1.6620847108818944, 0.9172394111397631, 1.0, 0.4206758779783424, -1.7417923545519773,
             1.4197828114035422, 0.913930784850659, 0.40807875829777596, 0.5765848408212898,
             0.47695774454394624, 1.5728558035947255, 1.3736016110400384));
    d5_tensor_desc d[3] = {op_fdesc(3, SHAPE(2, 3, 5)), op_fdesc(1, SHAPE(3)),
                           op_fdesc(1, SHAPE(3))};
    expect_gradient("InstanceNormalization", d, 3, NULL, NULL, 1);
    d5_tensor_desc d4[3] = {op_fdesc(4, SHAPE(1, 2, 2, 3)), op_fdesc(1, SHAPE(2)),
                            op_fdesc(1, SHAPE(2))};
    expect_gradient("InstanceNormalization", d4, 3, NULL, ATTRS(attr_float("epsilon", 0.01)), 1);
}

Test(instancenorm, errors)
{
    d5_tensor in[3] = {f64(3, SHAPE(2, 3, 4), NULL), f64(1, SHAPE(2), NULL),
                       f64(1, SHAPE(3), NULL)};
    check_fails("InstanceNormalization", in, 3, NULL, D5_ERR_SHAPE,
                "InstanceNormalization: scale has shape [2], expected [3] (one per channel)");
    d5_tensor in2[3] = {f64(1, SHAPE(3), NULL), f64(1, SHAPE(3), NULL), f64(1, SHAPE(3), NULL)};
    check_fails("InstanceNormalization", in2, 3, NULL, D5_ERR_SHAPE,
                "InstanceNormalization: input has 1 dims, expected (N, C, D1, ...)");
    d5_tensor in3[3] = {f64(3, SHAPE(2, 3, 4), NULL), f64(1, SHAPE(3), NULL),
                        tmake(D5_F32, 1, SHAPE(3), NULL)};
    check_fails("InstanceNormalization", in3, 3, NULL, D5_ERR_INVALID,
                "InstanceNormalization: B has data type float32 but input has float64");
}

/* ---- CastLike ------------------------------------------------------------------------------- */

Test(castlike, takes_the_target_type)
{
    /* numpy astype: truncation toward zero */
    d5_tensor in[2] = {tmake(D5_F32, 1, SHAPE(3), DV(1.75, -2.5, 300.25)),
                       tmake(D5_I32, 1, SHAPE(1), NULL)};
    check("CastLike", in, 2, NULL, D5_I32, 1, SHAPE(3), DV(1, -2, 300));
    d5_tensor in2[2] = {tmake(D5_I64, 2, SHAPE(1, 2), DV(-3, 9)), f64(0, NULL, NULL)};
    check("CastLike", in2, 2, NULL, D5_F64, 2, SHAPE(1, 2), DV(-3, 9));
    d5_tensor in3[2] = {f64(1, SHAPE(3), DV(0, -0.5, NAN)), tmake(D5_BOOL, 1, SHAPE(2), NULL)};
    check("CastLike", in3, 2, NULL, D5_BOOL, 1, SHAPE(3), DV(0, 1, 1));
    /* Between float types the gradient passes through; the target gets none. */
    d5_tensor_desc d[2] = {op_fdesc(2, SHAPE(2, 3)), op_fdesc(1, SHAPE(1))};
    d[1].dtype = D5_F64;
    expect_gradient("CastLike", d, 2, NULL, NULL, 1);
    d5_tensor_desc hd;
    cr_assert_eq(d5_tensor_desc_make(D5_F16, 1, SHAPE(2), &hd), D5_OK);
    d5_tensor h;
    cr_assert_eq(d5_tensor_alloc(&hd, &h), D5_OK);
    /* float16 is a target like any other (tests/level0/test_ref_cast.c). */
    d5_tensor in4[2] = {f64(1, SHAPE(2), DV(1, -2)), h}, y;
    cr_assert_eq(run_known("CastLike", in4, 2, NULL, &y, NULL, NULL), D5_OK, "%s", d5_last_error());
    cr_expect(y.desc.dtype == D5_F16 && ((uint16_t *)y.data)[0] == 0x3C00 &&
              ((uint16_t *)y.data)[1] == 0xC000);
    d5_tensor_free(&y);
    d5_tensor_free(&in4[0]);
    d5_tensor_free(&in4[1]);
}

/* ---- Trilu -------------------------------------------------------------------------------------
 */

Test(trilu, upper_lower_k)
{
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = i + 1; /* np.arange(1, 13).reshape(3, 4) */
    d5_tensor t1 = f64(2, SHAPE(3, 4), x);
    check("Trilu", &t1, 1, NULL, D5_F64, 2, SHAPE(3, 4), DV(1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12));
    d5_tensor t2[2] = {f64(2, SHAPE(3, 4), x), ti64(0, NULL, IVALS(1))};
    check("Trilu", t2, 2, NULL, D5_F64, 2, SHAPE(3, 4), DV(0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12));
    d5_tensor t3[2] = {tmake(D5_I64, 2, SHAPE(3, 4), x), ti64(1, SHAPE(1), IVALS(-1))};
    check("Trilu", t3, 2, ATTRS(attr_int("upper", 0)), D5_I64, 2, SHAPE(3, 4),
          DV(0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0));
    d5_tensor t4 = f64(2, SHAPE(3, 4), x);
    check("Trilu", &t4, 1, ATTRS(attr_int("upper", 0)), D5_F64, 2, SHAPE(3, 4),
          DV(1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0));
    d5_tensor t5 = f64(3, SHAPE(2, 2, 2), x);
    check("Trilu", &t5, 1, NULL, D5_F64, 3, SHAPE(2, 2, 2), DV(1, 2, 0, 4, 5, 6, 0, 8));
    d5_tensor k = ti64(0, NULL, IVALS(-1));
    expect_gradient_given("Trilu", 3, SHAPE(2, 3, 4), &k, ATTRS(attr_int("upper", 0)), 1);
    d5_tensor_free(&k);
    d5_tensor v = f64(1, SHAPE(4), NULL);
    check_fails("Trilu", &v, 1, NULL, D5_ERR_SHAPE, "Trilu: input has 1 dims, expected at least 2");
    d5_tensor t6[2] = {f64(2, SHAPE(2, 2), NULL), ti64(0, NULL, IVALS(0))};
    cr_assert_eq(create_unknown("Trilu", t6, 2, NULL), D5_ERR_UNSUPPORTED);
    op_free_all(t6, 2);
}

/* ---- GatherElements, ScatterElements -------------------------------------------------------- */

static const double ge_data[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}; /* [3,3] */

Test(gatherelements, values_gradient_errors)
{
    /* torch.gather(data, 0, [[2, 0], [2, 1]]): -1 is 2; indices smaller than data. */
    d5_tensor in[2] = {f64(2, SHAPE(3, 3), ge_data), ti64(2, SHAPE(2, 2), IVALS(2, 0, -1, 1))};
    check("GatherElements", in, 2, NULL, D5_F64, 2, SHAPE(2, 2), DV(7, 2, 7, 5));
    /* torch.gather(data, 1, [[1, 1, 0], [2, 0, 2]]), int32 indices and data */
    d5_tensor in2[2] = {tmake(D5_I32, 2, SHAPE(3, 3), ge_data),
                        tmake(D5_I32, 2, SHAPE(2, 3), DV(1, 1, 0, 2, -3, 2))};
    check("GatherElements", in2, 2, ATTRS(attr_int("axis", 1)), D5_I32, 2, SHAPE(2, 3),
          DV(2, 2, 1, 6, 4, 6));
    /* Repeated indices add up in the gradient. */
    d5_tensor idx = ti64(3, SHAPE(2, 2, 3), IVALS(0, 1, 1, 1, 1, 0, 3, 3, 2, 0, -1, 1));
    expect_gradient_given("GatherElements", 3, SHAPE(2, 4, 3), &idx, ATTRS(attr_int("axis", 1)), 1);
    d5_tensor_free(&idx);
    d5_tensor in3[2] = {f64(2, SHAPE(3, 3), ge_data), ti64(2, SHAPE(1, 2), IVALS(0, 3))};
    check_fails("GatherElements", in3, 2, NULL, D5_ERR_RANGE,
                "GatherElements: indices[1] is 3, outside [-3, 2] for axis 0");
    d5_tensor in4[2] = {f64(2, SHAPE(3, 3), ge_data), ti64(1, SHAPE(2), IVALS(0, 1))};
    check_fails("GatherElements", in4, 2, NULL, D5_ERR_SHAPE,
                "GatherElements: indices [2] and data [3,3] differ in rank");
    d5_tensor in5[2] = {f64(2, SHAPE(3, 3), ge_data), ti64(2, SHAPE(1, 4), IVALS(0, 1, 2, 0))};
    check_fails("GatherElements", in5, 2, NULL, D5_ERR_SHAPE,
                "indices [1,4] is larger than data [3,3] in dimension 1 (only axis 0 may differ)");
}

Test(scatterelements, reductions)
{
    /* data = arange(9).reshape(3, 3), indices [[1, 0, 2], [0, 2, 1]] along
     * axis 0, updates [[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]] */
    static const char *const red[] = {"none", "add", "mul", "max", "min"};
    static const double want[5][9] = {{4.5, 2.5, 2, 1.5, 4, 6.5, 6, 5.5, 3.5},
                                      {4.5, 3.5, 2, 4.5, 4, 11.5, 6, 12.5, 11.5},
                                      {0, 2.5, 2, 4.5, 4, 32.5, 6, 38.5, 28},
                                      {4.5, 2.5, 2, 3, 4, 6.5, 6, 7, 8},
                                      {0, 1, 2, 1.5, 4, 5, 6, 5.5, 3.5}};
    for (int k = 0; k < 5; k++) {
        d5_tensor in[3] = {f64(2, SHAPE(3, 3), DV(0, 1, 2, 3, 4, 5, 6, 7, 8)),
                           ti64(2, SHAPE(2, 3), IVALS(1, 0, 2, 0, 2, 1)),
                           f64(2, SHAPE(2, 3), DV(1.5, 2.5, 3.5, 4.5, 5.5, 6.5))};
        check("ScatterElements", in, 3, ATTRS(attr_string("reduction", red[k])), D5_F64, 2,
              SHAPE(3, 3), want[k]);
    }
    /* torch.scatter_add along axis 1 with a repeated (and a negative) index */
    d5_tensor in[3] = {f64(2, SHAPE(1, 5), DV(1, 2, 3, 4, 5)),
                       ti64(2, SHAPE(1, 3), IVALS(1, 3, -4)),
                       f64(2, SHAPE(1, 3), DV(1.1, 2.1, 3.1))};
    check("ScatterElements", in, 3, ATTRS(attr_int("axis", 1), attr_string("reduction", "add")),
          D5_F64, 2, SHAPE(1, 5), DV(1, 6.2, 3, 6.1, 5));
}

Test(scatterelements, gradients_and_errors)
{
    /* Index 2 of row 0 is written twice: for "none" the later update wins. */
    d5_tensor idx = ti64(2, SHAPE(2, 3), IVALS(2, 0, 2, 1, 3, 1));
    d5_tensor_desc d[3] = {op_fdesc(2, SHAPE(2, 4)), idx.desc, op_fdesc(2, SHAPE(2, 3))};
    d5_tensor given[3] = {{.data = NULL}, idx, {.data = NULL}};
    expect_gradient("ScatterElements", d, 3, given, ATTRS(attr_int("axis", -1)), 1);
    expect_gradient("ScatterElements", d, 3, given,
                    ATTRS(attr_int("axis", 1), attr_string("reduction", "add")), 1);
    d5_tensor_free(&idx);
    /* Only the update that won gets a gradient. */
    d5_tensor in[3] = {f64(1, SHAPE(3), DV(0, 0, 0)), ti64(1, SHAPE(2), IVALS(1, 1)),
                       f64(1, SHAPE(2), DV(5, 6))};
    d5_tensor g = f64(1, SHAPE(3), DV(10, 20, 30)), y, gin[3];
    cr_assert_eq(run_known("ScatterElements", in, 3, NULL, &y, &g, gin), D5_OK, "%s",
                 d5_last_error());
    expect_tensor(&y, D5_F64, 1, SHAPE(3), DV(0, 6, 0), 0, "scatter");
    expect_tensor(&gin[0], D5_F64, 1, SHAPE(3), DV(10, 0, 30), 0, "scatter d data");
    expect_tensor(&gin[2], D5_F64, 1, SHAPE(2), DV(0, 20), 0, "scatter d updates");
    op_free_all(gin, 3);
    d5_tensor_free(&y);
    cr_assert_eq(
        run_known("ScatterElements", in, 3, ATTRS(attr_string("reduction", "mul")), &y, &g, gin),
        D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "no gradient for reduction 'mul'"), "%s", d5_last_error());
    op_free_all(gin, 3);
    d5_tensor_free(&y);
    d5_tensor_free(&g);
    op_free_all(in, 3);
    d5_tensor in2[3] = {f64(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(1, 1)),
                        f64(1, SHAPE(3), NULL)};
    check_fails("ScatterElements", in2, 3, NULL, D5_ERR_SHAPE,
                "ScatterElements: updates [3] and indices [2] differ in shape");
    d5_tensor in3[3] = {f64(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(1, 1)),
                        f64(1, SHAPE(2), NULL)};
    check_fails("ScatterElements", in3, 3, ATTRS(attr_string("reduction", "sum")), D5_ERR_INVALID,
                "ScatterElements: reduction 'sum' is not none, add, mul, max or min");
    d5_tensor in4[3] = {f64(1, SHAPE(3), NULL), ti64(1, SHAPE(2), IVALS(1, -4)),
                        f64(1, SHAPE(2), NULL)};
    check_fails("ScatterElements", in4, 3, NULL, D5_ERR_RANGE,
                "ScatterElements: indices[1] is -4, outside [-3, 2] for axis 0");
}

/* ---- OneHot --------------------------------------------------------------------------------- */

Test(onehot, axes_values_depth)
{
    /* indices [[0, 3], [-1, 5]], depth 4: -1 is class 3, 5 is out of range. */
    const int64_t ind[] = {0, 3, -1, 5};
    d5_tensor in[3] = {ti64(2, SHAPE(2, 2), ind), ti64(0, NULL, IVALS(4)),
                       tmake(D5_F32, 1, SHAPE(2), DV(0, 1))};
    check("OneHot", in, 3, NULL, D5_F32, 3, SHAPE(2, 2, 4),
          DV(1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0));
    d5_tensor in2[3] = {ti64(2, SHAPE(2, 2), ind), tmake(D5_I32, 1, SHAPE(1), DV(4)),
                        ti64(1, SHAPE(2), IVALS(-2, 5))};
    check("OneHot", in2, 3, ATTRS(attr_int("axis", 0)), D5_I64, 3, SHAPE(4, 2, 2),
          DV(5, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, 5, 5, -2));
    /* A float depth and float indices, known at create; axis 1 = -2. */
    d5_tensor in3[3] = {tmake(D5_F32, 2, SHAPE(2, 2), DV(0, 3, -1, 5)),
                        tmake(D5_F32, 0, NULL, DV(4.0)), f64(1, SHAPE(2), DV(0, 1))};
    d5_tensor y;
    cr_assert_eq(run_known("OneHot", in3, 3, ATTRS(attr_int("axis", -2)), &y, NULL, NULL), D5_OK,
                 "%s", d5_last_error());
    expect_tensor(&y, D5_F64, 3, SHAPE(2, 4, 2), DV(1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0),
                  0, "OneHot");
    d5_tensor_free(&y);
    op_free_all(in3, 3);
}

Test(onehot, errors)
{
    d5_tensor in[3] = {ti64(1, SHAPE(2), IVALS(0, 1)), ti64(0, NULL, IVALS(3)),
                       f64(1, SHAPE(2), NULL)};
    cr_assert_eq(create_unknown("OneHot", in, 3, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "OneHot: input 1 (depth) must be a constant"), "%s",
              d5_last_error());
    op_free_all(in, 3);
    d5_tensor in2[3] = {ti64(1, SHAPE(2), IVALS(0, 1)), ti64(0, NULL, IVALS(0)),
                        f64(1, SHAPE(2), NULL)};
    check_fails("OneHot", in2, 3, NULL, D5_ERR_INVALID,
                "OneHot: input 1 (depth) is 0, expected >= 1");
    d5_tensor in3[3] = {ti64(1, SHAPE(2), IVALS(0, 1)), ti64(0, NULL, IVALS(3)),
                        f64(1, SHAPE(3), NULL)};
    check_fails("OneHot", in3, 3, NULL, D5_ERR_SHAPE,
                "OneHot: input 2 (values) has 3 elements, expected 2 (off, on)");
    d5_tensor in4[3] = {ti64(1, SHAPE(2), IVALS(0, 1)), ti64(0, NULL, IVALS(3)),
                        f64(1, SHAPE(2), NULL)};
    check_fails("OneHot", in4, 3, ATTRS(attr_int("axis", 2)), D5_ERR_INVALID,
                "OneHot: axis 2 is outside [-2, 1]");
}

/* ---- DepthToSpace, SpaceToDepth ----------------------------------------------------------------
 */

Test(depthspace, rearrangements)
{
    double x[32];
    for (int i = 0; i < 32; i++) x[i] = i;
    /* x = arange(16).reshape(1, 8, 1, 2), blocksize 2, by the specification's
     * reshape and transpose */
    d5_tensor t1 = f64(4, SHAPE(1, 8, 1, 2), x);
    check("DepthToSpace", &t1, 1, ATTRS(attr_int("blocksize", 2)), D5_F64, 4, SHAPE(1, 2, 2, 4),
          DV(0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15));
    d5_tensor t2 = tmake(D5_I32, 4, SHAPE(1, 8, 1, 2), x);
    check("DepthToSpace", &t2, 1, ATTRS(attr_int("blocksize", 2), attr_string("mode", "CRD")),
          D5_I32, 4, SHAPE(1, 2, 2, 4), DV(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15));
    /* x = arange(32).reshape(1, 2, 4, 4) */
    d5_tensor t3 = f64(4, SHAPE(1, 2, 4, 4), x);
    check("SpaceToDepth", &t3, 1, ATTRS(attr_int("blocksize", 2)), D5_F64, 4, SHAPE(1, 8, 2, 2),
          DV(0, 2, 8, 10, 16, 18, 24, 26, 1, 3, 9, 11, 17, 19, 25, 27, 4, 6, 12, 14, 20, 22, 28, 30,
             5, 7, 13, 15, 21, 23, 29, 31));
    d5_tensor_desc d = op_fdesc(4, SHAPE(2, 8, 2, 3));
    expect_gradient("DepthToSpace", &d, 1, NULL, ATTRS(attr_int("blocksize", 2)), 1);
    expect_gradient("DepthToSpace", &d, 1, NULL,
                    ATTRS(attr_int("blocksize", 2), attr_string("mode", "CRD")), 1);
    d5_tensor_desc d2 = op_fdesc(4, SHAPE(2, 2, 4, 6));
    expect_gradient("SpaceToDepth", &d2, 1, NULL, ATTRS(attr_int("blocksize", 2)), 1);
}

Test(depthspace, errors)
{
    d5_tensor t1 = f64(4, SHAPE(1, 6, 2, 2), NULL);
    check_fails("DepthToSpace", &t1, 1, ATTRS(attr_int("blocksize", 2)), D5_ERR_SHAPE,
                "DepthToSpace: 6 channels are not a multiple of blocksize^2 = 4");
    d5_tensor t2 = f64(4, SHAPE(1, 4, 2, 2), NULL);
    check_fails("DepthToSpace", &t2, 1, NULL, D5_ERR_INVALID,
                "DepthToSpace: attribute blocksize is required");
    d5_tensor t3 = f64(4, SHAPE(1, 4, 2, 2), NULL);
    check_fails("DepthToSpace", &t3, 1, ATTRS(attr_int("blocksize", 2), attr_string("mode", "RCD")),
                D5_ERR_INVALID, "DepthToSpace: mode 'RCD' is not DCR or CRD");
    d5_tensor t4 = f64(4, SHAPE(1, 1, 4, 3), NULL);
    check_fails("SpaceToDepth", &t4, 1, ATTRS(attr_int("blocksize", 2)), D5_ERR_SHAPE,
                "SpaceToDepth: height 4 and width 3 must be multiples of blocksize 2");
    d5_tensor t5 = f64(3, SHAPE(1, 4, 4), NULL);
    check_fails("SpaceToDepth", &t5, 1, ATTRS(attr_int("blocksize", 2)), D5_ERR_SHAPE,
                "SpaceToDepth: input has 3 dims, expected 4 (N, C, H, W)");
}

/* ---- NegativeLogLikelihoodLoss ------------------------------------------------------------- */

/* input [2,3,2] (N = 2, C = 3, one extra dimension of 2), target [[2, 0], [1, 1]] */
static const double nll_x[12] = {-0.5, -1.2, -2.0, -0.1, -1.0, -3.0,
                                 -0.7, -0.2, -0.4, -2.5, -1.5, -0.9};

static void nll_inputs(d5_tensor *in, int weighted)
{
    in[0] = f64(3, SHAPE(2, 3, 2), nll_x);
    in[1] = ti64(2, SHAPE(2, 2), IVALS(2, 0, 1, 1));
    if (weighted) in[2] = f64(1, SHAPE(3), DV(0.5, 2.0, 1.5));
}

Test(nllloss, reductions_weights_ignore_index)
{
    /* torch.nn.functional.nll_loss(input, target, weight=[0.5, 2, 1.5], reduction=...) */
    d5_tensor in[3];
    nll_inputs(in, 1);
    check("NegativeLogLikelihoodLoss", in, 3, ATTRS(attr_string("reduction", "none")), D5_F64, 2,
          SHAPE(2, 2), DV(1.5, 0.6, 0.8, 5.0));
    nll_inputs(in, 1);
    check("NegativeLogLikelihoodLoss", in, 3, ATTRS(attr_string("reduction", "sum")), D5_F64, 0,
          NULL, DV(7.9));
    nll_inputs(in, 1);
    check("NegativeLogLikelihoodLoss", in, 3, NULL, D5_F64, 0, NULL, DV(1.3166666666666667));
    /* ... without weights, ignore_index=1 */
    nll_inputs(in, 0);
    check("NegativeLogLikelihoodLoss", in, 2,
          ATTRS(attr_int("ignore_index", 1), attr_string("reduction", "none")), D5_F64, 2,
          SHAPE(2, 2), DV(1.0, 1.2, 0.0, 0.0));
    nll_inputs(in, 0);
    check("NegativeLogLikelihoodLoss", in, 2, ATTRS(attr_int("ignore_index", 1)), D5_F64, 0, NULL,
          DV(1.1));
}

Test(nllloss, gradients_and_errors)
{
    d5_tensor in[3];
    nll_inputs(in, 1);
    d5_tensor_desc d[3] = {in[0].desc, in[1].desc, in[2].desc};
    d5_tensor given[3] = {{.data = NULL}, in[1], {.data = NULL}};
    expect_gradient("NegativeLogLikelihoodLoss", d, 3, given, NULL, 1);
    expect_gradient("NegativeLogLikelihoodLoss", d, 3, given,
                    ATTRS(attr_string("reduction", "none"), attr_int("ignore_index", 0)), 1);
    expect_gradient("NegativeLogLikelihoodLoss", d, 3, given,
                    ATTRS(attr_string("reduction", "sum"), attr_int("ignore_index", 2)), 1);
    expect_gradient("NegativeLogLikelihoodLoss", d, 2, given, ATTRS(attr_int("ignore_index", 1)),
                    1);
    op_free_all(in, 3);
    d5_tensor in2[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(0, 3))};
    check_fails("NegativeLogLikelihoodLoss", in2, 2, NULL, D5_ERR_RANGE,
                "NegativeLogLikelihoodLoss: target 3 at position 1 is outside [0, 3)");
    d5_tensor in3[2] = {f64(3, SHAPE(2, 3, 4), NULL), ti64(2, SHAPE(2, 3), NULL)};
    check_fails("NegativeLogLikelihoodLoss", in3, 2, NULL, D5_ERR_SHAPE,
                "NegativeLogLikelihoodLoss: target [2,3] does not match input [2,3,4]");
    d5_tensor in4[3] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(0, 1)),
                        f64(1, SHAPE(2), NULL)};
    check_fails("NegativeLogLikelihoodLoss", in4, 3, NULL, D5_ERR_SHAPE,
                "NegativeLogLikelihoodLoss: weight has shape [2], expected [3] (one per class)");
    d5_tensor in5[3] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(0, 1)),
                        f64(1, SHAPE(3), NULL)};
    check_fails("NegativeLogLikelihoodLoss", in5, 3, ATTRS(attr_string("reduction", "avg")),
                D5_ERR_INVALID,
                "NegativeLogLikelihoodLoss: reduction 'avg' is not none, sum or mean");
}

/* ---- PRelu before opset 7 ------------------------------------------------------------ */

Test(prelu, one_slope_per_channel_before_opset_7)
{
    /* PRelu-6 (ONNX's pytorch-converted test_PReLU_*_multiparam): a slope of C values acts
     * along axis 1. numpy: x = (arange(12).reshape(2, 3, 2) - 6) / 2;
     * np.where(x < 0, x * slope[None, :, None], x). */
    d5_tensor in[2] = {
        f64(3, SHAPE(2, 3, 2), DV(-3, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5)),
        f64(1, SHAPE(3), DV(0.1, -2, 0.5))};
    check("PRelu", in, 2, ATTRS(OPSET(6)), D5_F64, 3, SHAPE(2, 3, 2),
          DV(-0.3, -0.25, 4, 3, -0.5, -0.25, 0, 0.5, 1, 1.5, 2, 2.5));
    /* From opset 7 the same slope broadcasts from the right, which [2,3,2] does not allow. */
    d5_tensor in2[2] = {f64(3, SHAPE(2, 3, 2), NULL), f64(1, SHAPE(3), NULL)};
    check_fails("PRelu", in2, 2, ATTRS(OPSET(7)), D5_ERR_SHAPE, "do not broadcast");
    d5_tensor_desc d[2] = {op_fdesc(4, SHAPE(2, 3, 2, 2)), op_fdesc(1, SHAPE(3))};
    expect_gradient("PRelu", d, 2, NULL, ATTRS(OPSET(6)), 1);
}
