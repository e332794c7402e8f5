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
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------- */

#define DV(...) ((const double[]){__VA_ARGS__})
/* A d5_attrs of the attributes listed, for the duration of the call. */
#define ATTRS(...)                                                                                 \
    (&(const d5_attrs){(const d5_attr[]){__VA_ARGS__},                                             \
                       (int32_t)(sizeof((const d5_attr[]){__VA_ARGS__}) / sizeof(d5_attr))})
#define OPSET(v) attr_int("__opset", v)

/* A tensor of any data type holding `values` (NULL: zeros), converted with C casts. */
static d5_tensor tmake(d5_dtype dt, int32_t ndim, const int64_t *shape, const double *values)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(dt, ndim, shape, &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    for (int64_t i = 0; values && i < d5_tensor_desc_numel(&d); i++) {
        double v = values[i];
        switch (dt) {
        case D5_F32: ((float *)t.data)[i] = (float)v; break;
        case D5_F64: ((double *)t.data)[i] = v; break;
        case D5_I64: ((int64_t *)t.data)[i] = (int64_t)v; break;
        case D5_I32: ((int32_t *)t.data)[i] = (int32_t)v; break;
        case D5_BOOL: ((uint8_t *)t.data)[i] = v != 0; break;
        default: cr_assert_fail("tmake: data type %s", d5_dtype_name(dt));
        }
    }
    return t;
}
static d5_tensor f64(int32_t ndim, const int64_t *shape, const double *values)
{
    return tmake(D5_F64, ndim, shape, values);
}

static double element(const d5_tensor *t, int64_t i)
{
    const void *p = t->data;
    switch (t->desc.dtype) {
    case D5_F32: return ((const float *)p)[i];
    case D5_F64: return ((const double *)p)[i];
    case D5_I64: return (double)((const int64_t *)p)[i];
    case D5_I32: return ((const int32_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

static void free_all(d5_tensor *t, int32_t n)
{
    for (int32_t i = 0; i < n; i++) d5_tensor_free(&t[i]);
}

/* Asserts the data type, shape and values of a tensor: |got - want| <= tol *
 * (1 + |want|), equal infinities, or both NaN. */
static void expect_tensor(const d5_tensor *y, d5_dtype dt, int32_t ndim, const int64_t *shape,
                          const double *want, double tol, const char *what)
{
    cr_assert_eq(y->desc.dtype, dt, "%s: data type %s, want %s", what, d5_dtype_name(y->desc.dtype),
                 d5_dtype_name(dt));
    cr_assert_eq(y->desc.ndim, ndim, "%s: rank %d, want %d", what, (int)y->desc.ndim, (int)ndim);
    for (int32_t i = 0; i < ndim; i++)
        cr_assert_eq(y->desc.shape[i], shape[i], "%s: dim %d is %lld, want %lld", what, (int)i,
                     (long long)y->desc.shape[i], (long long)shape[i]);
    for (int64_t i = 0; i < d5_tensor_desc_numel(&y->desc); i++) {
        double g = element(y, i);
        cr_assert(g == want[i] || fabs(g - want[i]) <= tol * (1 + fabs(want[i])) ||
                      (isnan(g) && isnan(want[i])),
                  "%s: element %lld: got %.17g, want %.17g", what, (long long)i, g, want[i]);
    }
}

/* Runs a one-output operator, checks its output, frees the inputs and output. */
static void check(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs, d5_dtype dt,
                  int32_t ndim, const int64_t *shape, const double *want)
{
    d5_tensor y;
    run_op(op, "ref", in, nin, attrs, &y, 1);
    expect_tensor(&y, dt, ndim, shape, want, dt == D5_F32 ? 1e-6 : 1e-12, op);
    d5_tensor_free(&y);
    free_all(in, nin);
}

/* Runs an operator that must fail with `status` and a message containing
 * `text`; frees the inputs. */
static void check_fails(const char *op, d5_tensor *in, int32_t nin, const d5_attrs *attrs,
                        d5_status status, const char *text)
{
    d5_tensor y;
    d5_status s = try_op(op, "ref", in, nin, attrs, &y, 1);
    cr_assert_eq(s, status, "%s: got %s (%s)", op, d5_status_name(s), d5_last_error());
    cr_assert(strstr(d5_last_error(), text), "%s: error '%s' lacks '%s'", op, d5_last_error(),
              text);
    free_all(in, nin);
}

/* Creates `op` with every input given (data and all, float ones too: known at
 * create), runs forward, and when gout is not NULL backward into gin (one
 * tensor per input, allocated here; freed by the caller). Returns the status
 * of the first step that failed. */
static d5_status run_known(const char *name, const d5_tensor *in, int32_t nin,
                           const d5_attrs *attrs, d5_tensor *y, const d5_tensor *gout,
                           d5_tensor *gin)
{
    const d5_op_desc *desc;
    d5_op *op;
    cr_assert_eq(d5_op_find(name, "ref", &desc), D5_OK);
    d5_status s = d5_op_create(desc, in, nin, attrs, 1, &op);
    if (s != D5_OK) return s;
    cr_assert_eq(d5_tensor_alloc(d5_op_output_desc(op, 0), y), D5_OK);
    s = d5_op_forward(op, in, y);
    for (int32_t i = 0; s == D5_OK && gout && i < nin; i++)
        cr_assert_eq(d5_tensor_alloc(&in[i].desc, &gin[i]), D5_OK);
    if (s == D5_OK && gout) s = d5_op_backward(op, gout, in, y, gin);
    d5_op_free(op);
    return s;
}

/* Creates `op` with no input known at create and returns the status. */
static d5_status create_unknown(const char *op, const d5_tensor *in, int32_t nin,
                                const d5_attrs *attrs)
{
    const d5_op_desc *desc;
    cr_assert_eq(d5_op_find(op, "ref", &desc), D5_OK);
    d5_tensor_desc d[8];
    for (int32_t i = 0; i < nin; i++) d[i] = in[i].desc;
    d5_op *o = NULL;
    d5_status s = d5_op_create_desc(desc, d, nin, attrs, 1, &o);
    d5_op_free(o);
    return s;
}

static d5_tensor_desc fdesc(int32_t ndim, const int64_t *shape)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, ndim, shape, &d), D5_OK);
    return d;
}

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
    d5_tensor_desc d = fdesc(2, SHAPE(3, 4));
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
                "Sin: input 0 has data type int64, expected float32 or float64");
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
    d5_tensor_desc d = fdesc(2, SHAPE(3, 4));
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
    d5_tensor_desc d[2] = {fdesc(4, SHAPE(2, 3, 2, 2)), fdesc(3, SHAPE(3, 1, 1))};
    expect_gradient("PRelu", d, 2, NULL, NULL, 1);
    d5_tensor_desc d2[2] = {fdesc(2, SHAPE(3, 4)), fdesc(1, SHAPE(1))};
    expect_gradient("PRelu", d2, 2, NULL, NULL, 1);
    /* Opset 6: a 1-d slope of C values applies along axis 1,
     * np.where(x < 0, x * slope.reshape(1, 3, 1), x). */
    d5_tensor in2[2] = {
        f64(3, SHAPE(2, 3, 2), DV(-1, 2, -0.5, -4, 3, -2, 0.5, -1.5, -3, 1, -0.25, 2.5)),
        f64(1, SHAPE(3), DV(0.1, 0.2, 0.3))};
    check("PRelu", in2, 2, ATTRS(OPSET(6)), D5_F64, 3, SHAPE(2, 3, 2),
          DV(-0.1, 2.0, -0.1, -0.8, 3.0, -0.6, 0.5, -0.15000000000000002, -0.6000000000000001, 1.0,
             -0.075, 2.5));
    d5_tensor_desc d3[2] = {fdesc(3, SHAPE(2, 3, 2)), fdesc(1, SHAPE(3))};
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
    free_all(gin, 2);
    d5_tensor_free(&y);
    d5_tensor_free(&g);
    free_all(in, 2);
    d5_tensor_desc d[3] = {fdesc(2, SHAPE(2, 3)), fdesc(1, SHAPE(3)), fdesc(2, SHAPE(2, 1))};
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
    free_all(g, 2);
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
    d5_tensor_desc d[2] = {fdesc(3, SHAPE(2, 3, 2)), axes.desc};
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
    free_all(in4, 2);
    d5_tensor b = tmake(D5_BOOL, 1, SHAPE(2), NULL);
    check_fails("ReduceSumSquare", &b, 1, NULL, D5_ERR_UNSUPPORTED,
                "ReduceSumSquare: input 0 has data type bool");
}

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
    d5_tensor_desc d[2] = {fdesc(3, SHAPE(2, 4, 3)), axis.desc};
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
    free_all(in3, 2);
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
    d5_tensor_desc d[2] = {fdesc(3, SHAPE(2, 3, 2)), reps.desc};
    d5_tensor given[2] = {{.data = NULL}, reps};
    expect_gradient("Tile", d, 2, given, NULL, 1);
    d5_tensor_free(&reps);
    d5_tensor in3[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(1, -1))};
    check_fails("Tile", in3, 2, NULL, D5_ERR_INVALID, "Tile: repeats[1] is -1, expected >= 0");
    d5_tensor in4[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(3), IVALS(1, 1, 1))};
    check_fails("Tile", in4, 2, NULL, D5_ERR_INVALID,
                "Tile: input 1 (repeats) has 3 values in 1 dims, expected a 1-d tensor of 2");
    d5_tensor in5[2] = {f64(2, SHAPE(2, 3), NULL), ti64(1, SHAPE(2), IVALS(1, 1))};
    cr_assert_eq(create_unknown("Tile", in5, 2, NULL), D5_ERR_UNSUPPORTED);
    free_all(in5, 2);
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
    d5_tensor_desc d[3] = {fdesc(3, SHAPE(2, 3, 5)), fdesc(1, SHAPE(3)), fdesc(1, SHAPE(3))};
    expect_gradient("InstanceNormalization", d, 3, NULL, NULL, 1);
    d5_tensor_desc d4[3] = {fdesc(4, SHAPE(1, 2, 2, 3)), fdesc(1, SHAPE(2)), fdesc(1, SHAPE(2))};
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
    d5_tensor_desc d[2] = {fdesc(2, SHAPE(2, 3)), fdesc(1, SHAPE(1))};
    d[1].dtype = D5_F64;
    expect_gradient("CastLike", d, 2, NULL, NULL, 1);
    d5_tensor_desc hd;
    cr_assert_eq(d5_tensor_desc_make(D5_F16, 1, SHAPE(2), &hd), D5_OK);
    d5_tensor h;
    cr_assert_eq(d5_tensor_alloc(&hd, &h), D5_OK);
    d5_tensor in4[2] = {f64(1, SHAPE(2), NULL), h};
    check_fails("CastLike", in4, 2, NULL, D5_ERR_UNSUPPORTED,
                "CastLike (ref): input 1 (target_type) has data type float16");
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
    d5_tensor_desc d[2] = {fdesc(3, SHAPE(2, 3, 4)), k.desc};
    d5_tensor given[2] = {{.data = NULL}, k};
    expect_gradient("Trilu", d, 2, given, ATTRS(attr_int("upper", 0)), 1);
    d5_tensor_free(&k);
    d5_tensor v = f64(1, SHAPE(4), NULL);
    check_fails("Trilu", &v, 1, NULL, D5_ERR_SHAPE, "Trilu: input has 1 dims, expected at least 2");
    d5_tensor t6[2] = {f64(2, SHAPE(2, 2), NULL), ti64(0, NULL, IVALS(0))};
    cr_assert_eq(create_unknown("Trilu", t6, 2, NULL), D5_ERR_UNSUPPORTED);
    free_all(t6, 2);
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
    d5_tensor_desc d[2] = {fdesc(3, SHAPE(2, 4, 3)), idx.desc};
    d5_tensor given[2] = {{.data = NULL}, idx};
    expect_gradient("GatherElements", d, 2, given, ATTRS(attr_int("axis", 1)), 1);
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
    d5_tensor_desc d[3] = {fdesc(2, SHAPE(2, 4)), idx.desc, fdesc(2, SHAPE(2, 3))};
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
    free_all(gin, 3);
    d5_tensor_free(&y);
    cr_assert_eq(
        run_known("ScatterElements", in, 3, ATTRS(attr_string("reduction", "mul")), &y, &g, gin),
        D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "no gradient for reduction 'mul'"), "%s", d5_last_error());
    free_all(gin, 3);
    d5_tensor_free(&y);
    d5_tensor_free(&g);
    free_all(in, 3);
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
    free_all(in3, 3);
}

Test(onehot, errors)
{
    d5_tensor in[3] = {ti64(1, SHAPE(2), IVALS(0, 1)), ti64(0, NULL, IVALS(3)),
                       f64(1, SHAPE(2), NULL)};
    cr_assert_eq(create_unknown("OneHot", in, 3, NULL), D5_ERR_UNSUPPORTED);
    cr_assert(strstr(d5_last_error(), "OneHot: input 1 (depth) must be a constant"), "%s",
              d5_last_error());
    free_all(in, 3);
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
    d5_tensor_desc d = fdesc(4, SHAPE(2, 8, 2, 3));
    expect_gradient("DepthToSpace", &d, 1, NULL, ATTRS(attr_int("blocksize", 2)), 1);
    expect_gradient("DepthToSpace", &d, 1, NULL,
                    ATTRS(attr_int("blocksize", 2), attr_string("mode", "CRD")), 1);
    d5_tensor_desc d2 = fdesc(4, SHAPE(2, 2, 4, 6));
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
    free_all(in, 3);
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
    d5_tensor_desc d[2] = {fdesc(4, SHAPE(2, 3, 2, 2)), fdesc(1, SHAPE(3))};
    expect_gradient("PRelu", d, 2, NULL, ATTRS(OPSET(6)), 1);
}
