/* The piecewise model of a message's time (a line per range of sizes, the
 * ranges chosen by dynamic programming and the Bayesian information
 * criterion), the ring allreduce it predicts with the reduction's own term,
 * and the sum the collectives combine with. Needs no MPI. */
#include "d5/distributed.h"

#include <math.h>
#include <string.h>

void d5_comm_reduce_sum(void *dst, const void *src, size_t n, d5_dtype dtype)
{
    if (!dst || !src) return;
    if (dtype == D5_F32) {
        float *restrict d = dst;
        const float *restrict s = src;
        for (size_t i = 0; i < n; i++) d[i] += s[i];
    } else if (dtype == D5_F64) {
        double *restrict d = dst;
        const double *restrict s = src;
        for (size_t i = 0; i < n; i++) d[i] += s[i];
    }
}

/* The weighted line through points [i, j] (weights 1/t^2): its alpha, beta
 * and weighted squared residuals; INFINITY when its sizes are all equal. */
static double line(const double *x, const double *t, size_t i, size_t j, double *alpha,
                   double *beta)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, sse = 0;
    for (size_t k = i; k <= j; k++) {
        double w = 1 / (t[k] * t[k]);
        sw += w;
        sx += w * x[k];
        sy += w * t[k];
    }
    double xm = sx / sw, ym = sy / sw;
    for (size_t k = i; k <= j; k++) {
        double w = 1 / (t[k] * t[k]), dx = x[k] - xm;
        sxx += w * dx * dx;
        sxy += w * dx * (t[k] - ym);
    }
    if (!(sxx > 0)) return INFINITY;
    *beta = sxy / sxx;
    *alpha = ym - *beta * xm;
    for (size_t k = i; k <= j; k++) {
        double w = 1 / (t[k] * t[k]), r = t[k] - *alpha - *beta * x[k];
        sse += w * r * r;
    }
    return sse;
}

#define MIN_POINTS 3

d5_status d5_piecewise_fit(const double *bytes, const double *seconds, size_t n,
                           int32_t max_segments, d5_piecewise *out)
{
    if (!bytes || !seconds || !out) return d5_error(D5_ERR_INVALID, "piecewise fit: NULL argument");
    memset(out, 0, sizeof *out);
    if (max_segments < 1 || max_segments > D5_PIECEWISE_MAX)
        return d5_error(D5_ERR_INVALID, "piecewise fit: %d segments; 1 to %d", (int)max_segments,
                        D5_PIECEWISE_MAX);
    if (n < 2) return d5_error(D5_ERR_INVALID, "piecewise fit: needs 2 points, got %zu", n);
    if (n > 4096) return d5_error(D5_ERR_INVALID, "piecewise fit: %zu points; at most 4096", n);
    for (size_t i = 0; i < n; i++) {
        if (!(seconds[i] > 0) || !isfinite(seconds[i]) || !isfinite(bytes[i]) || bytes[i] < 0)
            return d5_error(D5_ERR_INVALID,
                            "piecewise fit: point %zu (%g bytes, %g s) needs a positive, finite "
                            "time and size",
                            i, bytes[i], seconds[i]);
        if (i && bytes[i] < bytes[i - 1])
            return d5_error(D5_ERR_INVALID, "piecewise fit: sizes out of order at point %zu", i);
    }
    /* best[k][j]: the least error of k + 1 segments over points [0, j];
     * from[k][j]: where the last of them starts. */
    enum { K = D5_PIECEWISE_MAX };
    double *best = d5_alloc(sizeof(double) * K * n, "piecewise fit");
    size_t *from = d5_alloc(sizeof(size_t) * K * n, "piecewise fit");
    if (!best || !from) {
        d5_free(best);
        d5_free(from);
        return D5_ERR_NOMEM;
    }
    double a, b;
    for (size_t j = 0; j < n; j++) {
        best[j] = line(bytes, seconds, 0, j, &a, &b);
        from[j] = 0;
    }
    for (int32_t k = 1; k < max_segments; k++)
        for (size_t j = 0; j < n; j++) {
            best[k * n + j] = INFINITY;
            for (size_t i = MIN_POINTS; i + MIN_POINTS <= j + 1; i++) {
                double e = best[(k - 1) * n + i - 1] + line(bytes, seconds, i, j, &a, &b);
                if (e < best[k * n + j]) best[k * n + j] = e, from[k * n + j] = i;
            }
        }
    int32_t kbest = -1;
    double bic = INFINITY;
    for (int32_t k = 0; k < max_segments; k++) {
        double sse = best[k * n + n - 1];
        if (!isfinite(sse)) continue;
        double c =
            (double)n * log(fmax(sse, 1e-300) / (double)n) + (3.0 * (k + 1) - 1) * log((double)n);
        if (c < bic) bic = c, kbest = k;
    }
    d5_status s = D5_OK;
    if (kbest < 0) {
        s = d5_error(D5_ERR_INVALID, "piecewise fit: all %zu points have the same size", n);
    } else {
        size_t end = n - 1;
        out->nseg = kbest + 1;
        for (int32_t k = kbest; k >= 0; k--) {
            size_t start = from[k * n + end];
            line(bytes, seconds, start, end, &out->alpha_s[k], &out->beta_s_per_byte[k]);
            out->from_bytes[k] = start ? sqrt(bytes[start - 1] * bytes[start]) : 0;
            end = start - 1;
        }
        double sw = 0, sy = 0, syy = 0, sse = 0;
        for (size_t i = 0; i < n; i++) sw += 1 / (seconds[i] * seconds[i]), sy += 1 / seconds[i];
        for (size_t i = 0; i < n; i++) {
            double w = 1 / (seconds[i] * seconds[i]), d = seconds[i] - sy / sw;
            double r = seconds[i] - d5_piecewise_time_s(out, bytes[i]);
            syy += w * d * d;
            sse += w * r * r;
        }
        out->r2 = syy > 0 ? 1 - sse / syy : (sse == 0 ? 1 : 0);
        out->n = n;
    }
    d5_free(best);
    d5_free(from);
    return s;
}

double d5_piecewise_time_s(const d5_piecewise *m, double bytes)
{
    if (!m || m->nseg < 1 || !(bytes >= 0)) return NAN;
    int32_t k = 0;
    while (k + 1 < m->nseg && bytes >= m->from_bytes[k + 1]) k++;
    double t = m->alpha_s[k] + m->beta_s_per_byte[k] * bytes;
    return t > 0 ? t : 0;
}

double d5_piecewise_ring_allreduce_s(const d5_piecewise *exchange, const d5_alpha_beta *reduce,
                                     double bytes, int64_t ranks)
{
    if (!exchange || !reduce || ranks < 1 || !isfinite(bytes) || bytes < 0) return NAN;
    if (ranks == 1) return 0;
    double p = (double)ranks, chunk = bytes / p;
    double r = reduce->alpha_s + reduce->beta_s_per_byte * chunk;
    return 2 * (p - 1) * d5_piecewise_time_s(exchange, chunk) + (p - 1) * (r > 0 ? r : 0);
}
