/* The element-wise reference operators: binary (Sub, Mul, Div, Pow), variadic
 * (Sum, Mean), unary (LeakyRelu ... Abs), Clip, Softmax and LogSoftmax.
 * Expected values were computed with numpy (/usr/bin/python3) unless the
 * comment shows them worked by hand. */
#include "op_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* A float64 tensor, for data type mismatches. */
static d5_tensor tf64(int32_t ndim, const int64_t *shape)
{
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F64, ndim, shape, &d), D5_OK);
    d5_tensor t;
    cr_assert_eq(d5_tensor_alloc(&d, &t), D5_OK);
    return t;
}

/* Runs `name` on two inputs and checks the output against `want`. */
static void expect_binary(const char *name, const d5_tensor *a, const d5_tensor *b,
                          const float *want, int64_t n, double tol)
{
    d5_tensor in[2] = {*a, *b}, y;
    run_op(name, "ref", in, 2, NULL, &y, 1);
    expect_values(&y, want, n, tol);
    d5_tensor_free(&y);
}

/* Asserts exact equality, infinities and NaN included. */
static void expect_ieee(const d5_tensor *y, const float *want, int64_t n)
{
    cr_assert_eq(d5_tensor_desc_numel(&y->desc), n, "element count");
    const float *got = y->data;
    for (int64_t i = 0; i < n; i++)
        cr_assert(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                  "element %lld: got %g, want %g", (long long)i, got[i], want[i]);
}

/* ---- Sub, Mul, Div, Pow ------------------------------------------------------------- */

Test(binary, sub_mul_div_broadcast_forward)
{
    /* a = [[1, 2, 3], [4, 5, 6]], b = [2, 4, -8] broadcast over rows (by hand). */
    d5_tensor a = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)),
              b = tf32(1, SHAPE(3), VALS(2, 4, -8));
    expect_binary("Sub", &a, &b, VALS(-1, -2, 11, 2, 1, 14), 6, 0);
    expect_binary("Mul", &a, &b, VALS(2, 8, -24, 8, 20, -48), 6, 0);
    expect_binary("Div", &a, &b, VALS(0.5, 0.5, -0.375, 2, 1.25, -0.75), 6, 0);
    /* Broadcasting both ways: [2, 1] - [3] is [2, 3]. */
    d5_tensor c = tf32(2, SHAPE(2, 1), VALS(10, 20));
    expect_binary("Sub", &c, &b, VALS(8, 6, 18, 18, 16, 28), 6, 0);
    /* IEEE division by zero. */
    d5_tensor x = tf32(1, SHAPE(3), VALS(1, -1, 0)), z = tf32(1, SHAPE(1), VALS(0)), q;
    d5_tensor xz[2] = {x, z};
    run_op("Div", "ref", xz, 2, NULL, &q, 1);
    expect_ieee(&q, VALS(INFINITY, -INFINITY, NAN), 3);
    d5_tensor_free(&q);
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    d5_tensor_free(&c);
    d5_tensor_free(&x);
    d5_tensor_free(&z);
}

Test(binary, pow_forward_with_float_and_integer_exponents)
{
    /* numpy: np.array([[1, 2, 3], [4, 0.5, 9]]) ** np.array([2, 0.5, -1]) */
    d5_tensor a = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 0.5, 9)),
              b = tf32(1, SHAPE(3), VALS(2, 0.5, -1));
    expect_binary("Pow", &a, &b, VALS(1, 1.4142136, 0.33333333, 16, 0.70710678, 0.11111111), 6,
                  1e-6);
    /* An int64 exponent [2, 3, -1]: 1, 8, 1/3, 16, 0.125, 1/9 (by hand). */
    d5_tensor e = ti64(1, SHAPE(3), IVALS(2, 3, -1));
    expect_binary("Pow", &a, &e, VALS(1, 8, 0.33333333, 16, 0.125, 0.11111111), 6, 1e-6);
    /* Negative base with a fractional exponent is NaN; 0^0 is 1. */
    d5_tensor x = tf32(1, SHAPE(3), VALS(-8, 0, 0)), y = tf32(1, SHAPE(3), VALS(0.5, 0, 2));
    expect_binary("Pow", &x, &y, VALS(NAN, 1, 0), 3, 0);
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    d5_tensor_free(&e);
    d5_tensor_free(&x);
    d5_tensor_free(&y);
}

Test(binary, gradients)
{
    d5_tensor_desc d[2] = {op_fdesc(3, SHAPE(2, 1, 4)), op_fdesc(2, SHAPE(3, 1))};
    expect_gradient("Sub", d, 2, NULL, NULL, 1);
    expect_gradient("Mul", d, 2, NULL, NULL, 1);
    /* Divisors and bases away from 0: in (0.5, 1.5). */
    float away[24];
    for (int i = 0; i < 24; i++) away[i] = 0.5f + (float)((i * 7) % 24) / 24.0f;
    d5_tensor pos_b = tf32(2, SHAPE(3, 1), away), none = {0};
    d5_tensor given_div[2] = {none, pos_b};
    expect_gradient("Div", d, 2, given_div, NULL, 1);
    d5_tensor pos_a = tf32(3, SHAPE(2, 1, 4), away);
    d5_tensor given_pow[2] = {pos_a, none};
    expect_gradient("Pow", d, 2, given_pow, NULL, 1);
    /* The same with broadcast the other way and an integer exponent (base only). */
    d5_tensor base = tf32(2, SHAPE(2, 3), away), expo = ti64(1, SHAPE(3), IVALS(2, -1, 3));
    d5_tensor_desc d2[2] = {op_fdesc(2, SHAPE(2, 3)), expo.desc};
    d5_tensor given_int[2] = {base, expo};
    expect_gradient("Pow", d2, 2, given_int, NULL, 1);
    d5_tensor_free(&pos_a);
    d5_tensor_free(&pos_b);
    d5_tensor_free(&base);
    d5_tensor_free(&expo);
}

Test(binary, bad_inputs)
{
    d5_tensor a = tf32(2, SHAPE(2, 3), NULL), b = tf32(1, SHAPE(2), NULL);
    d5_tensor i = ti64(1, SHAPE(3), IVALS(1, 2, 3)), w = tf64(1, SHAPE(3));
    d5_tensor ab[2] = {a, b}, ai[2] = {a, i}, aw[2] = {a, w};
    op_expect_fails("Mul", ab, 2, NULL, 1, D5_ERR_SHAPE,
                    "Mul: shapes [2,3] and [2] do not broadcast (dimension 1: 3 vs 2)");
    op_expect_fails("Sub", ai, 2, NULL, 1, D5_ERR_INVALID,
                    "Sub: inputs have data types float32 and int64");
    op_expect_fails("Div", aw, 2, NULL, 1, D5_ERR_INVALID,
                    "Div: inputs have data types float32 and float64");
    op_expect_fails("Pow", ab, 2, NULL, 1, D5_ERR_SHAPE,
                    "Pow: shapes [2,3] and [2] do not broadcast");
    d5_tensor_desc bd;
    cr_assert_eq(d5_tensor_desc_make(D5_BOOL, 0, NULL, &bd), D5_OK);
    d5_tensor flag;
    cr_assert_eq(d5_tensor_alloc(&bd, &flag), D5_OK);
    d5_tensor af[2] = {a, flag};
    op_expect_fails("Pow", af, 2, NULL, 1, D5_ERR_UNSUPPORTED,
                    "Pow: input 1 has data type bool, expected a numeric data type");
    d5_tensor fa[2] = {flag, a};
    op_expect_fails("Pow", fa, 2, NULL, 1, D5_ERR_UNSUPPORTED,
                    "Pow: input 0 has data type bool, expected float32, float64, float16, "
                    "bfloat16, int32 or int64");
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    d5_tensor_free(&i);
    d5_tensor_free(&w);
    d5_tensor_free(&flag);
}

/* ---- Sum, Mean ----------------------------------------------------------------------- */

Test(variadic, sum_and_mean_forward)
{
    /* [[1, 2, 3], [4, 5, 6]] + [10, 20, 30] + [[100], [200]] (by hand). */
    d5_tensor a = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)),
              b = tf32(1, SHAPE(3), VALS(10, 20, 30)), c = tf32(2, SHAPE(2, 1), VALS(100, 200)), y;
    d5_tensor in[3] = {a, b, c};
    run_op("Sum", "ref", in, 3, NULL, &y, 1);
    cr_assert_eq(y.desc.ndim, 2);
    cr_assert(y.desc.shape[0] == 2 && y.desc.shape[1] == 3);
    expect_values(&y, VALS(111, 122, 133, 214, 225, 236), 6, 0);
    d5_tensor_free(&y);
    expect_op_values("Mean", in, 3, NULL, VALS(37, 40.666667, 44.333333, 71.333333, 75, 78.666667),
                     6, 1e-5);
    /* Broadcasting [3] and [2, 1] alone gives [2, 3]. */
    expect_op_values("Sum", in + 1, 2, NULL, VALS(110, 120, 130, 210, 220, 230), 6, 0);
    /* One input: a copy. */
    expect_op_values("Sum", in, 1, NULL, VALS(1, 2, 3, 4, 5, 6), 6, 0);
    expect_op_values("Mean", in + 1, 1, NULL, VALS(10, 20, 30), 3, 0);
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    d5_tensor_free(&c);
}

Test(variadic, gradients)
{
    d5_tensor_desc d[3] = {op_fdesc(3, SHAPE(2, 1, 4)), op_fdesc(2, SHAPE(3, 1)),
                           op_fdesc(1, SHAPE(4))};
    expect_gradient("Sum", d, 3, NULL, NULL, 1);
    expect_gradient("Mean", d, 3, NULL, NULL, 1);
    expect_gradient("Sum", d, 1, NULL, NULL, 1);
    expect_gradient("Mean", d + 1, 2, NULL, NULL, 1);
}

Test(variadic, bad_inputs)
{
    d5_tensor a = tf32(2, SHAPE(2, 3), NULL), b = tf32(1, SHAPE(4), NULL), w = tf64(1, SHAPE(3));
    d5_tensor i = ti64(1, SHAPE(3), IVALS(1, 2, 3));
    d5_tensor aab[3] = {a, a, b}, aw[2] = {a, w}, ai[2] = {a, i};
    op_expect_fails("Sum", aab, 3, NULL, 1, D5_ERR_SHAPE,
                    "Sum: shapes [2,3] and [4] do not broadcast");
    op_expect_fails("Mean", aw, 2, NULL, 1, D5_ERR_INVALID,
                    "Mean: input 1 has data type float64, input 0 float32");
    op_expect_fails("Sum", ai, 2, NULL, 1, D5_ERR_UNSUPPORTED,
                    "Sum: input 1 has data type int64, expected float32, float64, float16 or "
                    "bfloat16");
    op_expect_fails("Mean", aw, 0, NULL, 1, D5_ERR_INVALID, "takes 1..");
    d5_tensor_free(&a);
    d5_tensor_free(&b);
    d5_tensor_free(&w);
    d5_tensor_free(&i);
}

/* ---- Unary operators --------------------------------------------------------------------- */

/* Runs a unary operator on five values and checks the result. */
static void expect_unary(const char *name, const d5_attrs *attrs, const float *x, const float *want)
{
    d5_tensor t = tf32(1, SHAPE(5), x), y;
    run_op(name, "ref", &t, 1, attrs, &y, 1);
    cr_assert_eq(y.desc.dtype, D5_F32);
    expect_values(&y, want, 5, 2e-7 * 8);
    d5_tensor_free(&y);
    d5_tensor_free(&t);
}

#define XS VALS(-2, -0.5, 0, 0.5, 2)

Test(unary, forward)
{
    /* numpy on x = [-2, -0.5, 0, 0.5, 2], e.g. 1 / (1 + np.exp(-x)), np.log(np.exp(x) + 1). */
    expect_unary("LeakyRelu", NULL, XS, VALS(-0.02, -0.005, 0, 0.5, 2));
    expect_unary("Elu", NULL, XS, VALS(-0.86466472, -0.39346934, 0, 0.5, 2));
    expect_unary("Sigmoid", NULL, XS, VALS(0.11920292, 0.37754067, 0.5, 0.62245933, 0.88079708));
    expect_unary("Tanh", NULL, XS, VALS(-0.96402758, -0.46211716, 0, 0.46211716, 0.96402758));
    expect_unary("Softplus", NULL, XS,
                 VALS(0.12692801, 0.47407698, 0.69314718, 0.97407698, 2.126928));
    expect_unary("Neg", NULL, XS, VALS(2, 0.5, 0, -0.5, -2));
    expect_unary("Exp", NULL, XS, VALS(0.13533528, 0.60653066, 1, 1.6487213, 7.3890561));
    expect_unary("Abs", NULL, XS, VALS(2, 0.5, 0, 0.5, 2));
    /* numpy on x = [0.25, 1, 2, 4, 9]. */
    expect_unary("Log", NULL, VALS(0.25, 1, 2, 4, 9),
                 VALS(-1.3862944, 0, 0.69314718, 1.3862944, 2.1972246));
    expect_unary("Sqrt", NULL, VALS(0.25, 1, 2, 4, 9), VALS(0.5, 1, 1.4142136, 2, 3));
    /* Outside the domain: IEEE results, as numpy gives. */
    d5_tensor x = tf32(1, SHAPE(3), VALS(-1, 0, INFINITY)), y;
    run_op("Log", "ref", &x, 1, NULL, &y, 1);
    expect_ieee(&y, VALS(NAN, -INFINITY, INFINITY), 3);
    d5_tensor_free(&y);
    run_op("Sqrt", "ref", &x, 1, NULL, &y, 1);
    expect_ieee(&y, VALS(NAN, 0, INFINITY), 3);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    /* No overflow at the extremes. */
    expect_unary("Sigmoid", NULL, VALS(-1000, 1000, 0, 0, 0), VALS(0, 1, 0.5, 0.5, 0.5));
    expect_unary("Softplus", NULL, VALS(-1000, 1000, 0, 0, 0),
                 VALS(0, 1000, 0.69314718, 0.69314718, 0.69314718));
}

Test(unary, alpha_attributes)
{
    d5_attr leaky[] = {attr_float("alpha", 0.2)}, elu[] = {attr_float("alpha", 0.5)};
    d5_attrs la = {leaky, 1}, ea = {elu, 1};
    expect_unary("LeakyRelu", &la, XS, VALS(-0.4, -0.1, 0, 0.5, 2));
    /* numpy: np.where(x < 0, 0.5 * np.expm1(x), x) */
    expect_unary("Elu", &ea, XS, VALS(-0.43233236, -0.19673467, 0, 0.5, 2));
    expect_gradient("LeakyRelu", (d5_tensor_desc[]){op_fdesc(2, SHAPE(3, 4))}, 1, NULL, &la, 1);
    expect_gradient("Elu", (d5_tensor_desc[]){op_fdesc(2, SHAPE(3, 4))}, 1, NULL, &ea, 1);
}

Test(unary, gradients)
{
    static const char *const names[] = {"LeakyRelu", "Elu", "Sigmoid", "Tanh", "Softplus",
                                        "Neg",       "Exp", "Abs",     "Log",  "Sqrt"};
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 4));
    /* Log and Sqrt on (0.5, 1.5). */
    float pos[24];
    for (int i = 0; i < 24; i++) pos[i] = 0.5f + (float)((i * 5) % 24) / 24.0f;
    d5_tensor given = tf32(3, SHAPE(2, 3, 4), pos);
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        int positive = !strcmp(names[k], "Log") || !strcmp(names[k], "Sqrt");
        expect_gradient(names[k], &d, 1, positive ? &given : NULL, NULL, 1);
    }
    d5_tensor_free(&given);
}

Test(unary, bad_inputs)
{
    d5_tensor i = ti64(1, SHAPE(2), IVALS(1, 2)), x = tf32(1, SHAPE(2), NULL);
    op_expect_fails("Sigmoid", &i, 1, NULL, 1, D5_ERR_UNSUPPORTED,
                    "Sigmoid: input 0 has data type int64, expected float32, float64, float16 "
                    "or bfloat16");
    op_expect_fails("Log", &i, 1, NULL, 1, D5_ERR_UNSUPPORTED, "Log: input 0 has data type int64");
    d5_attr bad[] = {attr_string("alpha", "big")};
    d5_attrs attrs = {bad, 1};
    op_expect_fails("LeakyRelu", &x, 1, &attrs, 1, D5_ERR_INVALID,
                    "attribute 'alpha' is of type string, expected float");
    op_expect_fails("Elu", &x, 1, &attrs, 1, D5_ERR_INVALID, "attribute 'alpha'");
    d5_tensor_free(&i);
    d5_tensor_free(&x);
}

/* ---- Clip ----------------------------------------------------------------------------------- */

/* Clip of XS with optional bounds (NULL: omitted). */
static void expect_clip(const float *lo, const float *hi, const float *want)
{
    d5_tensor x = tf32(1, SHAPE(5), XS), none = {0};
    d5_tensor l = lo ? tf32(0, NULL, lo) : none, h = hi ? tf32(0, NULL, hi) : none;
    d5_tensor in[3] = {x, l, h};
    int32_t nin = hi ? 3 : lo ? 2 : 1;
    expect_op_values("Clip", in, nin, NULL, want, 5, 0);
    d5_tensor_free(&x);
    d5_tensor_free(&l);
    d5_tensor_free(&h);
}

Test(clip, forward)
{
    /* By hand on x = [-2, -0.5, 0, 0.5, 2]. */
    expect_clip(VALS(-1), VALS(1), VALS(-1, -0.5, 0, 0.5, 1));
    expect_clip(VALS(0), NULL, VALS(0, 0, 0, 0.5, 2));
    expect_clip(NULL, VALS(0), VALS(-2, -0.5, 0, 0, 0));
    expect_clip(NULL, NULL, XS);
    /* min > max: every element becomes max. */
    expect_clip(VALS(1), VALS(0), VALS(0, 0, 0, 0, 0));
    /* Integers, bounds of shape [1]. */
    d5_tensor x = ti64(2, SHAPE(1, 3), IVALS(-5, 0, 7)), l = ti64(1, SHAPE(1), IVALS(-2)),
              h = ti64(1, SHAPE(1), IVALS(3)), y;
    d5_tensor in[3] = {x, l, h};
    run_op("Clip", "ref", in, 3, NULL, &y, 1);
    cr_assert_eq(y.desc.dtype, D5_I64);
    const int64_t *v = y.data;
    cr_assert(v[0] == -2 && v[1] == 0 && v[2] == 3, "%lld %lld %lld", (long long)v[0],
              (long long)v[1], (long long)v[2]);
    d5_tensor_free(&y);
    d5_tensor_free(&x);
    d5_tensor_free(&l);
    d5_tensor_free(&h);
}

Test(clip, gradients)
{
    d5_tensor_desc d[3] = {op_fdesc(2, SHAPE(3, 4)), op_fdesc(0, NULL), op_fdesc(0, NULL)};
    expect_gradient("Clip", d, 1, NULL, NULL, 1);
    /* Bounds -0.5 and 0.5: the gradient reaches x, min and max. */
    d5_tensor none = {0}, lo = tf32(0, NULL, VALS(-0.5)), hi = tf32(0, NULL, VALS(0.5));
    d5_tensor both[3] = {none, lo, hi};
    expect_gradient("Clip", d, 3, both, NULL, 1);
    /* min > max: all of it goes to max. */
    d5_tensor swapped[3] = {none, hi, lo};
    expect_gradient("Clip", d, 3, swapped, NULL, 1);
    /* min omitted. */
    d5_tensor_desc omitted[3] = {d[0], {0}, d[2]};
    d5_tensor max_only[3] = {none, none, hi};
    expect_gradient("Clip", omitted, 3, max_only, NULL, 1);
    d5_tensor_free(&lo);
    d5_tensor_free(&hi);
}

Test(clip, bad_inputs)
{
    d5_tensor x = tf32(1, SHAPE(3), NULL), two = tf32(1, SHAPE(2), NULL), w = tf64(0, NULL);
    d5_tensor xt[2] = {x, two}, none = {0}, xw[3] = {x, none, w};
    op_expect_fails("Clip", xt, 2, NULL, 1, D5_ERR_SHAPE,
                    "Clip: input 1 (min) has shape [2], expected a scalar");
    op_expect_fails("Clip", xw, 3, NULL, 1, D5_ERR_INVALID,
                    "Clip: input 2 (max) has data type float64, input 0 float32");
    d5_tensor_free(&x);
    d5_tensor_free(&two);
    d5_tensor_free(&w);
}

/* ---- Softmax, LogSoftmax ----------------------------------------------------------------------
 */

static void expect_softmax(const char *name, int64_t axis, int use_axis, const d5_tensor *x,
                           const float *want, int64_t n)
{
    d5_attr items[] = {attr_int("axis", axis)};
    d5_attrs attrs = {items, 1};
    d5_tensor y;
    run_op(name, "ref", x, 1, use_axis ? &attrs : NULL, &y, 1);
    expect_values(&y, want, n, 1e-6);
    d5_tensor_free(&y);
}

Test(softmax, forward_along_each_axis)
{
    /* numpy: e = np.exp(x - x.max(axis, keepdims=True)); e / e.sum(axis, keepdims=True) */
    d5_tensor x = tf32(2, SHAPE(2, 3), VALS(1, 2, 3, 1, 1, 1));
    const float *last =
        VALS(0.090030573, 0.24472847, 0.66524096, 0.33333333, 0.33333333, 0.33333333);
    const float *first = VALS(0.5, 0.73105858, 0.88079708, 0.5, 0.26894142, 0.11920292);
    expect_softmax("Softmax", 0, 0, &x, last, 6);
    expect_softmax("Softmax", -1, 1, &x, last, 6);
    expect_softmax("Softmax", 1, 1, &x, last, 6);
    expect_softmax("Softmax", 0, 1, &x, first, 6);
    expect_softmax("Softmax", -2, 1, &x, first, 6);
    /* numpy: np.log of the above. */
    const float *loglast =
        VALS(-2.407606, -1.407606, -0.40760596, -1.0986123, -1.0986123, -1.0986123);
    const float *logfirst =
        VALS(-0.69314718, -0.31326169, -0.12692801, -0.69314718, -1.3132617, -2.126928);
    expect_softmax("LogSoftmax", 0, 0, &x, loglast, 6);
    expect_softmax("LogSoftmax", -1, 1, &x, loglast, 6);
    expect_softmax("LogSoftmax", 0, 1, &x, logfirst, 6);
    expect_softmax("LogSoftmax", -2, 1, &x, logfirst, 6);
    d5_tensor_free(&x);
    /* The middle axis of arange(8) as [2, 2, 2]: pairs differ by 2, so
     * softmax gives 1 / (1 + e^2) = 0.11920292 and 0.88079708. */
    d5_tensor z = tf32(3, SHAPE(2, 2, 2), VALS(0, 1, 2, 3, 4, 5, 6, 7));
    const float *mid = VALS(0.11920292, 0.11920292, 0.88079708, 0.88079708, 0.11920292, 0.11920292,
                            0.88079708, 0.88079708);
    expect_softmax("Softmax", 1, 1, &z, mid, 8);
    expect_softmax("Softmax", -2, 1, &z, mid, 8);
    /* log(0.11920292) = -2.126928, log(0.88079708) = -0.12692801 */
    const float *logmid = VALS(-2.126928, -2.126928, -0.12692801, -0.12692801, -2.126928, -2.126928,
                               -0.12692801, -0.12692801);
    expect_softmax("LogSoftmax", -2, 1, &z, logmid, 8);
    d5_tensor_free(&z);
}

Test(softmax, large_values_are_stable)
{
    /* [1000, 1001, 1002] gives the same as [0, 1, 2] (numpy). */
    d5_tensor x = tf32(1, SHAPE(3), VALS(1000, 1001, 1002));
    expect_softmax("Softmax", 0, 0, &x, VALS(0.090030573, 0.24472847, 0.66524096), 3);
    expect_softmax("LogSoftmax", 0, 0, &x, VALS(-2.407606, -1.407606, -0.40760596), 3);
    d5_tensor_free(&x);
}

Test(softmax, gradients)
{
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 4));
    const int64_t axes[] = {-1, 1, -3, 0};
    for (int k = 0; k < 4; k++) {
        d5_attr items[] = {attr_int("axis", axes[k])};
        d5_attrs attrs = {items, 1};
        expect_gradient("Softmax", &d, 1, NULL, &attrs, 1);
        expect_gradient("LogSoftmax", &d, 1, NULL, &attrs, 1);
    }
    expect_gradient("Softmax", &d, 1, NULL, NULL, 1);
    expect_gradient("LogSoftmax", &d, 1, NULL, NULL, 1);
}

Test(softmax, bad_inputs)
{
    d5_tensor x = tf32(2, SHAPE(2, 3), NULL), s = tf32(0, NULL, VALS(1));
    d5_attr two[] = {attr_int("axis", 2)}, minus3[] = {attr_int("axis", -3)};
    d5_attrs a2 = {two, 1}, a3 = {minus3, 1};
    op_expect_fails("Softmax", &x, 1, &a2, 1, D5_ERR_INVALID,
                    "Softmax: axis 2 is outside [-2, 1] for a 2-d input");
    op_expect_fails("LogSoftmax", &x, 1, &a3, 1, D5_ERR_INVALID,
                    "LogSoftmax: axis -3 is outside [-2, 1] for a 2-d input");
    op_expect_fails("Softmax", &s, 1, NULL, 1, D5_ERR_INVALID, "Softmax: axis -1 is outside");
    d5_tensor_free(&x);
    d5_tensor_free(&s);
}

/* ---- Older opsets ------------------------------------------------------------------------ */

Test(clip, min_and_max_attributes_before_opset_11)
{
    /* By hand on x = [-2, -0.5, 0, 0.5, 2]; ONNX's test_operator_clip has min -0.5, max 0.5. */
    opset_attrs o;
    d5_attr both[2] = {attr_float("min", -0.5), attr_float("max", 0.5)};
    d5_tensor x = tf32(1, SHAPE(5), XS);
    expect_op_values("Clip", &x, 1, with_opset(&o, 6, both, 2), VALS(-0.5, -0.5, 0, 0.5, 0.5), 5,
                     0);
    /* One bound: the other is infinite. */
    d5_attr max = attr_float("max", 0);
    expect_op_values("Clip", &x, 1, with_opset(&o, 1, &max, 1), VALS(-2, -0.5, 0, 0, 0), 5, 0);
    expect_op_values("Clip", &x, 1, with_opset(&o, 10, NULL, 0), XS, 5, 0);
    /* Opset 11 takes the bounds as inputs. */
    d5_tensor lo = tf32(0, NULL, VALS(-1)), none = {0}, in[3] = {x, lo, none};
    expect_op_values("Clip", in, 2, with_opset(&o, 11, NULL, 0), VALS(-1, -0.5, 0, 0.5, 2), 5, 0);
    op_expect_fails("Clip", in, 2, with_opset(&o, 10, both, 2), 1, D5_ERR_INVALID,
                    "Clip: opset 10 takes 1 input (min and max are attributes), got 2");
    op_expect_fails("Clip", &x, 1, with_opset(&o, 11, both, 2), 1, D5_ERR_INVALID,
                    "Clip: opset 11 takes min and max as inputs 1 and 2, not as attributes");
    d5_tensor_free(&lo);
    d5_tensor_free(&x);
    d5_tensor_desc d = op_fdesc(2, SHAPE(3, 4));
    expect_gradient("Clip", &d, 1, NULL, with_opset(&o, 6, both, 2), 1);
}

static void expect_softmax_opset(const char *name, int64_t opset, const d5_attr *axis,
                                 const d5_tensor *x, const float *want, int64_t n)
{
    opset_attrs o;
    d5_tensor y;
    run_op(name, "ref", x, 1, with_opset(&o, opset, axis, axis ? 1 : 0), &y, 1);
    expect_values(&y, want, n, 1e-6);
    d5_tensor_free(&y);
}

Test(softmax, coerced_to_2d_before_opset_13)
{
    /* x = arange(12).reshape(2, 3, 2) / 4 - 1. numpy, for opsets 1 to 12:
     * r = x.reshape(prod(x.shape[:axis]), -1); softmax of each row of r. */
    d5_tensor x = tf32(3, SHAPE(2, 3, 2), NULL);
    for (int i = 0; i < 12; i++) ((float *)x.data)[i] = (float)i / 4 - 1;
    const float *axis1 =
        VALS(0.081576904, 0.10474682, 0.13449758, 0.17269831, 0.22174902, 0.28473137, 0.081576904,
             0.10474682, 0.13449758, 0.17269831, 0.22174902, 0.28473137);
    d5_attr one = attr_int("axis", 1), zero = attr_int("axis", 0), minus2 = attr_int("axis", -2),
            last = attr_int("axis", -1);
    expect_softmax_opset("Softmax", 11, NULL, &x, axis1, 12); /* axis defaults to 1 */
    expect_softmax_opset("Softmax", 1, &one, &x, axis1, 12);
    expect_softmax_opset("Softmax", 12, &minus2, &x, axis1, 12);
    const float *axis0 =
        VALS(0.01488171, 0.019108493, 0.024535791, 0.031504579, 0.040452681, 0.05194227,
             0.066695195, 0.085638325, 0.10996179, 0.14119373, 0.18129634, 0.2327891);
    expect_softmax_opset("Softmax", 11, &zero, &x, axis0, 12);
    /* From opset 13, axis 1 is one axis only. */
    const float *opset13 =
        VALS(0.18632372, 0.18632372, 0.30719589, 0.30719589, 0.50648039, 0.50648039, 0.18632372,
             0.18632372, 0.30719589, 0.30719589, 0.50648039, 0.50648039);
    expect_softmax_opset("Softmax", 13, &one, &x, opset13, 12);
    const float *log1 =
        VALS(-2.5062091, -2.2562091, -2.0062091, -1.7562091, -1.5062091, -1.2562091, -2.5062091,
             -2.2562091, -2.0062091, -1.7562091, -1.5062091, -1.2562091);
    expect_softmax_opset("LogSoftmax", 11, NULL, &x, log1, 12);
    const float *loglast =
        VALS(-0.82593942, -0.57593942, -0.82593942, -0.57593942, -0.82593942, -0.57593942,
             -0.82593942, -0.57593942, -0.82593942, -0.57593942, -0.82593942, -0.57593942);
    expect_softmax_opset("LogSoftmax", 11, &last, &x, loglast, 12);
    d5_tensor_free(&x);
    opset_attrs o;
    d5_tensor_desc d = op_fdesc(3, SHAPE(2, 3, 4));
    expect_gradient("Softmax", &d, 1, NULL, with_opset(&o, 11, NULL, 0), 1);
    expect_gradient("LogSoftmax", &d, 1, NULL, with_opset(&o, 11, &zero, 1), 1);
    d5_tensor v = tf32(1, SHAPE(3), NULL);
    op_expect_fails("Softmax", &v, 1, with_opset(&o, 11, NULL, 0), 1, D5_ERR_INVALID,
                    "Softmax: axis 1 is outside [-1, 0] for a 1-d input");
    d5_tensor_free(&v);
}
