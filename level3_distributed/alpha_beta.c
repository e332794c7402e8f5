/* The alpha-beta (Hockney) model of a message's time, t(S) = alpha + beta S,
 * fitted by weighted least squares with weights 1/t^2: the relative residuals
 * are minimised, so small and large messages weigh alike; and the time it
 * predicts for a ring allreduce. */
#include "d5/distributed.h"

#include <math.h>

d5_status d5_alpha_beta_fit(const double *bytes, const double *seconds, size_t n,
                            d5_alpha_beta *out)
{
    if (!bytes || !seconds || !out)
        return d5_error(D5_ERR_INVALID, "alpha-beta fit: NULL argument");
    if (n < 2) return d5_error(D5_ERR_INVALID, "alpha-beta fit: needs 2 points, got %zu", n);
    double sw = 0, sx = 0, sy = 0;
    for (size_t i = 0; i < n; i++) {
        double t = seconds[i];
        if (!(t > 0) || !isfinite(t) || !isfinite(bytes[i]) || bytes[i] < 0)
            return d5_error(D5_ERR_INVALID,
                            "alpha-beta fit: point %zu (%g bytes, %g s) needs a positive, finite "
                            "time and size",
                            i, bytes[i], t);
        double w = 1 / (t * t);
        sw += w;
        sx += w * bytes[i];
        sy += w * t;
    }
    double xm = sx / sw, ym = sy / sw, sxx = 0, sxy = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1 / (seconds[i] * seconds[i]), dx = bytes[i] - xm, dy = seconds[i] - ym;
        sxx += w * dx * dx;
        sxy += w * dx * dy;
        syy += w * dy * dy;
    }
    if (!(sxx > 0))
        return d5_error(D5_ERR_INVALID, "alpha-beta fit: all %zu points have the same size", n);
    double beta = sxy / sxx, alpha = ym - beta * xm, sse = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1 / (seconds[i] * seconds[i]), r = seconds[i] - alpha - beta * bytes[i];
        sse += w * r * r;
    }
    out->alpha_s = alpha;
    out->beta_s_per_byte = beta;
    out->r2 = syy > 0 ? 1 - sse / syy : (sse == 0 ? 1 : 0);
    out->n = n;
    return D5_OK;
}

double d5_alpha_beta_ring_allreduce_s(double alpha_s, double beta_s_per_byte, double bytes,
                                      int64_t ranks)
{
    if (ranks < 1 || !isfinite(alpha_s) || !isfinite(beta_s_per_byte) || !isfinite(bytes) ||
        bytes < 0)
        return NAN;
    if (ranks == 1) return 0;
    double p = (double)ranks;
    return 2 * (p - 1) * alpha_s + 2 * (p - 1) / p * bytes * beta_s_per_byte;
}
