#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define NEAR(a, b, tol)                                                                            \
    cr_assert(fabs((a) - (b)) <= (tol), "%.10g vs %.10g", (double)(a), (double)(b))

Test(stats, median_ci_ranks_exact_for_small_n)
{
    size_t lo, hi;
    double cov;
    /* n = 10: P(X <= 1) = 11/1024, so [x(2), x(9)] covers 1 - 22/1024. */
    cr_assert_eq(d5_stats_median_ci_ranks(10, 0.95, &lo, &hi, &cov), D5_OK);
    cr_assert_eq(lo, 2);
    cr_assert_eq(hi, 9);
    NEAR(cov, 1 - 22.0 / 1024, 1e-12);
    /* n = 6: only [min, max] reaches 95%: 1 - 2/64. */
    cr_assert_eq(d5_stats_median_ci_ranks(6, 0.95, &lo, &hi, &cov), D5_OK);
    cr_assert_eq(lo, 1);
    cr_assert_eq(hi, 6);
    NEAR(cov, 1 - 2.0 / 64, 1e-12);
    /* n = 5: no interval reaches 95%; [min, max] covers 1 - 2/32. */
    cr_assert_eq(d5_stats_median_ci_ranks(5, 0.95, &lo, &hi, &cov), D5_OK);
    cr_assert_eq(lo, 1);
    cr_assert_eq(hi, 5);
    NEAR(cov, 0.9375, 1e-12);
    /* n = 100: the textbook interval [x(40), x(61)]. */
    cr_assert_eq(d5_stats_median_ci_ranks(100, 0.95, &lo, &hi, &cov), D5_OK);
    cr_assert_eq(lo, 40);
    cr_assert_eq(hi, 61);
    cr_assert(cov >= 0.95 && cov < 0.97);
}

Test(stats, median_ci_ranks_normal_approximation_for_large_n)
{
    size_t lo, hi;
    double cov;
    /* floor((1000 - 1.96 sqrt(1000)) / 2) = 469, ceil(1 + (1000 + 1.96 sqrt(1000)) / 2) = 532 */
    cr_assert_eq(d5_stats_median_ci_ranks(1000, 0.95, &lo, &hi, &cov), D5_OK);
    cr_assert_eq(lo, 469);
    cr_assert_eq(hi, 532);
    NEAR(cov, 0.95, 0.01);
    cr_assert_eq(d5_stats_median_ci_ranks(0, 0.95, &lo, &hi, &cov), D5_ERR_INVALID);
    cr_assert_eq(d5_stats_median_ci_ranks(10, 1.5, &lo, &hi, &cov), D5_ERR_INVALID);
}

Test(stats, summary_of_one_to_ten)
{
    double x[10] = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4}; /* 1..10 shuffled */
    d5_stats s;
    cr_assert_eq(d5_stats_compute(x, 10, &s), D5_OK);
    cr_assert_eq(s.n, 10);
    NEAR(s.min, 1, 0);
    NEAR(s.max, 10, 0);
    NEAR(s.median, 5.5, 1e-12);
    NEAR(s.mean, 5.5, 1e-12);
    NEAR(s.q1, 3.25, 1e-12); /* type 7: 1 + 0.25 * 9 = position 3.25 */
    NEAR(s.q3, 7.75, 1e-12);
    NEAR(s.iqr, 4.5, 1e-12);
    NEAR(s.p5, 1.45, 1e-12);
    NEAR(s.p95, 9.55, 1e-12);
    NEAR(s.stdev, sqrt(82.5 / 9), 1e-12);
    NEAR(s.ci_low, 2, 0); /* ranks 2..9 */
    NEAR(s.ci_high, 9, 0);
    cr_assert_eq(x[0], 7); /* input untouched */
}

Test(stats, odd_count_median_and_single_sample)
{
    double x[3] = {5, 1, 3};
    d5_stats s;
    cr_assert_eq(d5_stats_compute(x, 3, &s), D5_OK);
    NEAR(s.median, 3, 0);
    double one = 42;
    cr_assert_eq(d5_stats_compute(&one, 1, &s), D5_OK);
    NEAR(s.median, 42, 0);
    NEAR(s.stdev, 0, 0);
    NEAR(s.ci_low, 42, 0);
}

Test(stats, bad_input_is_rejected)
{
    d5_stats s;
    double x[3] = {1, NAN, 3};
    cr_assert_eq(d5_stats_compute(x, 3, &s), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "sample 1"));
    cr_assert_eq(d5_stats_compute(x, 0, &s), D5_ERR_INVALID);
    cr_assert_eq(d5_stats_compute(NULL, 3, &s), D5_ERR_INVALID);
}

Test(stats, quantile_edges)
{
    double x[4] = {10, 20, 30, 40};
    NEAR(d5_stats_quantile_sorted(x, 4, 0), 10, 0);
    NEAR(d5_stats_quantile_sorted(x, 4, 1), 40, 0);
    NEAR(d5_stats_quantile_sorted(x, 4, 0.5), 25, 1e-12);
    NEAR(d5_stats_quantile_sorted(x, 4, 1.0 / 3), 20, 1e-12);
}
