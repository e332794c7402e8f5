#include "support.h"

#include <criterion/criterion.h>
#include <math.h>

#define NEAR(a, b, tol)                                                                            \
    cr_assert(fabs((a) - (b)) <= (tol), "%.10g vs %.10g", (double)(a), (double)(b))

Test(mwu, complete_separation_exact)
{
    double a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
    d5_mwu r;
    cr_assert_eq(d5_mann_whitney(a, 3, b, 3, &r), D5_OK);
    NEAR(r.u_a, 0, 0);
    NEAR(r.u_b, 9, 0);
    cr_assert(r.exact);
    NEAR(r.p_value, 2.0 / 20, 1e-12); /* one arrangement of C(6,3) = 20 in each tail */
    NEAR(r.effect, 0, 0);
    NEAR(r.median_ratio, 2.0 / 5, 1e-12);
}

Test(mwu, interleaved_exact)
{
    /* a > b pairs: (3,2) (5,2) (5,4): U = 3. For m = n = 3 the counts of U = 0..9
     * are 1 1 2 3 3 3 3 2 1 1, so P(U <= 3) = 7/20 and p = 0.7. */
    double a[3] = {1, 3, 5}, b[3] = {2, 4, 6};
    d5_mwu r;
    cr_assert_eq(d5_mann_whitney(a, 3, b, 3, &r), D5_OK);
    NEAR(r.u_a, 3, 0);
    cr_assert(r.exact);
    NEAR(r.p_value, 0.7, 1e-12);
}

Test(mwu, ties_use_the_corrected_normal_approximation)
{
    /* Ranks 1.5 1.5 3.5 | 3.5 5.5 5.5: R_a = 6.5, U_a = 0.5. Tie term 3 x (8 - 2) = 18,
     * var = 9/12 (7 - 18/30) = 4.8, z = (0.5 - 4.5 + 0.5) / sqrt(4.8). */
    double a[3] = {1, 1, 2}, b[3] = {2, 3, 3};
    d5_mwu r;
    cr_assert_eq(d5_mann_whitney(a, 3, b, 3, &r), D5_OK);
    cr_assert(!r.exact);
    NEAR(r.u_a, 0.5, 1e-12);
    double z = -3.5 / sqrt(4.8);
    NEAR(r.z, z, 1e-12);
    NEAR(r.p_value, erfc(fabs(z) / sqrt(2.0)), 1e-12);
}

Test(mwu, large_samples_shifted_and_identical)
{
    enum { N = 200 };
    double a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = 100 + (i * 37 % N) * 0.01;
        b[i] = 101 + (i * 53 % N) * 0.01;
        c[i] = 100 + (i * 53 % N) * 0.01;
    }
    d5_mwu r;
    cr_assert_eq(d5_mann_whitney(a, N, b, N, &r), D5_OK);
    cr_assert(!r.exact);
    cr_assert_lt(r.p_value, 1e-6);
    cr_assert_lt(r.effect, 0.5);
    cr_assert_eq(d5_mann_whitney(a, N, c, N, &r), D5_OK); /* same values, other order */
    cr_assert_gt(r.p_value, 0.99);
    NEAR(r.effect, 0.5, 1e-12);
}

Test(mwu, bad_input)
{
    double a[2] = {1, NAN}, b[2] = {1, 2};
    d5_mwu r;
    cr_assert_eq(d5_mann_whitney(a, 2, b, 2, &r), D5_ERR_INVALID);
    cr_assert_str_eq(d5_last_error(), "Mann-Whitney test: sample 1 of set a is NaN");
    cr_assert_eq(d5_mann_whitney(b, 0, b, 2, &r), D5_ERR_INVALID);
}
