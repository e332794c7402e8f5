/* The Mann-Whitney U test for comparing two sets of samples. */
#include "d5/stats.h"
#include "internal.h"

#include <math.h>
#include <string.h>

typedef struct {
    double v;
    int group;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    double x = ((const ranked *)a)->v, y = ((const ranked *)b)->v;
    return (x > y) - (x < y);
}

/* P(U <= u) and P(U >= u) for U of the smaller-index sample when there are no
 * ties, from the exact distribution: f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u). */
static d5_status exact_tails(size_t m, size_t n, double u, double *le, double *ge)
{
    size_t umax = m * n;
    size_t width = umax + 1;
    double *prev = d5_calloc((n + 1) * width, sizeof(double), "Mann-Whitney distribution");
    double *cur = d5_calloc((n + 1) * width, sizeof(double), "Mann-Whitney distribution");
    if (!prev || !cur) {
        d5_free(prev);
        d5_free(cur);
        return D5_ERR_NOMEM;
    }
    for (size_t j = 0; j <= n; j++) prev[j * width] = 1; /* m' = 0: U is 0 */
    for (size_t i = 1; i <= m; i++) {
        memset(cur, 0, (n + 1) * width * sizeof(double));
        cur[0] = 1; /* n' = 0 */
        for (size_t j = 1; j <= n; j++)
            for (size_t k = 0; k <= i * j; k++)
                cur[j * width + k] =
                    (k >= j ? prev[j * width + k - j] : 0) + cur[(j - 1) * width + k];
        double *t = prev;
        prev = cur;
        cur = t;
    }
    double total = 0, below = 0, above = 0;
    for (size_t k = 0; k <= umax; k++) {
        double f = prev[n * width + k];
        total += f;
        if ((double)k <= u + 1e-9) below += f;
        if ((double)k >= u - 1e-9) above += f;
    }
    *le = below / total;
    *ge = above / total;
    d5_free(prev);
    d5_free(cur);
    return D5_OK;
}

static double median_of(const double *x, size_t n, d5_status *s)
{
    d5_stats st;
    *s = d5_stats_compute(x, n, &st);
    return *s == D5_OK ? st.median : NAN;
}

d5_status d5_mann_whitney(const double *a, size_t na, const double *b, size_t nb, d5_mwu *out)
{
    if (!a || !b || !out) return d5_error(D5_ERR_INVALID, "d5_mann_whitney: NULL argument");
    if (na == 0 || nb == 0)
        return d5_error(D5_ERR_INVALID,
                        "Mann-Whitney test needs two non-empty sample sets "
                        "(got %zu and %zu samples)",
                        na, nb);
    for (size_t i = 0; i < na + nb; i++) {
        double v = i < na ? a[i] : b[i - na];
        if (isnan(v))
            return d5_error(D5_ERR_INVALID, "Mann-Whitney test: sample %zu of set %c is NaN",
                            i < na ? i : i - na, i < na ? 'a' : 'b');
    }
    size_t n = na + nb;
    ranked *r = d5_alloc(n * sizeof *r, "Mann-Whitney ranks");
    if (!r) return D5_ERR_NOMEM;
    for (size_t i = 0; i < na; i++) r[i] = (ranked){a[i], 0};
    for (size_t i = 0; i < nb; i++) r[na + i] = (ranked){b[i], 1};
    qsort(r, n, sizeof *r, cmp_ranked);
    double rank_sum_a = 0, tie_term = 0;
    int ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && r[j + 1].v == r[i].v) j++;
        double avg = ((double)i + (double)j) / 2 + 1; /* 1-based average rank */
        double t = (double)(j - i + 1);
        if (t > 1) {
            ties = 1;
            tie_term += t * t * t - t;
        }
        for (size_t k = i; k <= j; k++)
            if (r[k].group == 0) rank_sum_a += avg;
        i = j + 1;
    }
    d5_free(r);

    d5_mwu m;
    memset(&m, 0, sizeof m);
    double dna = (double)na, dnb = (double)nb, dn = (double)n;
    m.u_a = rank_sum_a - dna * (dna + 1) / 2;
    m.u_b = dna * dnb - m.u_a;
    m.effect = m.u_a / (dna * dnb);
    double mu = dna * dnb / 2;
    double var = dna * dnb / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
    double diff = m.u_a - mu;
    double cc = diff > 0 ? 0.5 : (diff < 0 ? -0.5 : 0);
    m.z = var > 0 ? (diff - cc) / sqrt(var) : 0;
    if (!ties && na <= 50 && nb <= 50) {
        double le, ge;
        d5_status s = exact_tails(na, nb, m.u_a, &le, &ge);
        if (s != D5_OK) return s;
        m.p_value = fmin(1.0, 2 * fmin(le, ge));
        m.exact = 1;
    } else {
        m.p_value = var > 0 ? fmin(1.0, erfc(fabs(m.z) / sqrt(2.0))) : 1.0;
    }
    d5_status s;
    double ma = median_of(a, na, &s);
    if (s != D5_OK) return s;
    double mb = median_of(b, nb, &s);
    if (s != D5_OK) return s;
    m.median_ratio = ma / mb;
    *out = m;
    return D5_OK;
}
