/* Summary statistics and the median's nonparametric confidence interval. */
#include "d5/stats.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void d5__sort_doubles(double *x, size_t n)
{
    qsort(x, n, sizeof *x, cmp_double);
}

double d5_stats_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0) return NAN;
    if (q <= 0) return sorted[0];
    if (q >= 1) return sorted[n - 1];
    double h = (double)(n - 1) * q;
    size_t i = (size_t)floor(h);
    if (i + 1 >= n) return sorted[n - 1];
    return sorted[i] + (h - (double)i) * (sorted[i + 1] - sorted[i]);
}

/* Inverse of the standard normal CDF (Acklam's rational approximation,
 * relative error below 1.2e-9), enough for confidence levels. */
double d5__probit(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    const double plow = 0.02425;
    if (p < plow) {
        double q = sqrt(-2 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - plow) return -d5__probit(1 - p);
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

/* P(X <= k) for X ~ Binomial(n, 1/2). */
static double binom_half_cdf(size_t n, size_t k)
{
    double sum = 0;
    for (size_t i = 0; i <= k && i <= n; i++)
        sum += exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) -
                   (double)n * log(2.0));
    return sum;
}

d5_status d5_stats_median_ci_ranks(size_t n, double level, size_t *lo, size_t *hi, double *coverage)
{
    if (n == 0) return d5_error(D5_ERR_INVALID, "median confidence interval of zero samples");
    if (!(level > 0 && level < 1))
        return d5_error(D5_ERR_INVALID, "confidence level %g is outside (0, 1)", level);
    size_t j = 1;
    double cov;
    if (n <= D5_STATS_EXACT_MAX) {
        /* Widest-to-narrowest: [x(j), x(n+1-j)] covers the median with
         * probability 1 - 2 P(X <= j-1). Take the largest j that still reaches the level. */
        cov = 1 - 2 * binom_half_cdf(n, 0);
        for (size_t k = 2; k <= (n + 1) / 2; k++) {
            double c = 1 - 2 * binom_half_cdf(n, k - 1);
            if (c < level) break;
            j = k;
            cov = c;
        }
        *lo = j;
        *hi = n + 1 - j;
    } else {
        double z = d5__probit(1 - (1 - level) / 2);
        double s = z * sqrt((double)n);
        double l = floor(((double)n - s) / 2), h = ceil(1 + ((double)n + s) / 2);
        if (l < 1) l = 1;
        if (h > (double)n) h = (double)n;
        *lo = (size_t)l;
        *hi = (size_t)h;
        /* Coverage of the chosen ranks, normal approximation with continuity correction. */
        double tail =
            0.5 * erfc(-((double)*lo - 0.5 - (double)n / 2) / (sqrt((double)n) / 2) / sqrt(2.0));
        cov = 1 - 2 * tail;
    }
    if (coverage) *coverage = cov;
    return D5_OK;
}

d5_status d5_stats_compute_level(const double *x, size_t n, double level, d5_stats *out)
{
    if (!x || !out) return d5_error(D5_ERR_INVALID, "d5_stats_compute: NULL argument");
    if (n == 0) return d5_error(D5_ERR_INVALID, "statistics of zero samples");
    size_t lo, hi;
    double cov;
    d5_status s = d5_stats_median_ci_ranks(n, level, &lo, &hi, &cov);
    if (s != D5_OK) return s;
    double *v = d5_alloc(n * sizeof *v, "sorted samples");
    if (!v) return D5_ERR_NOMEM;
    memcpy(v, x, n * sizeof *v);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(v[i])) {
            d5_free(v);
            return d5_error(D5_ERR_INVALID, "sample %zu of %zu is NaN", i, n);
        }
        sum += v[i];
    }
    d5__sort_doubles(v, n);
    d5_stats r;
    memset(&r, 0, sizeof r);
    r.n = n;
    r.min = v[0];
    r.max = v[n - 1];
    r.p5 = d5_stats_quantile_sorted(v, n, 0.05);
    r.q1 = d5_stats_quantile_sorted(v, n, 0.25);
    r.median = d5_stats_quantile_sorted(v, n, 0.5);
    r.q3 = d5_stats_quantile_sorted(v, n, 0.75);
    r.p95 = d5_stats_quantile_sorted(v, n, 0.95);
    r.iqr = r.q3 - r.q1;
    r.mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (v[i] - r.mean) * (v[i] - r.mean);
    r.stdev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
    r.ci_rank_lo = lo;
    r.ci_rank_hi = hi;
    r.ci_low = v[lo - 1];
    r.ci_high = v[hi - 1];
    r.ci_level = level;
    r.ci_coverage = cov;
    d5_free(v);
    *out = r;
    return D5_OK;
}

d5_status d5_stats_compute(const double *x, size_t n, d5_stats *out)
{
    return d5_stats_compute_level(x, n, 0.95, out);
}
