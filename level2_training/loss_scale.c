/* Dynamic loss scaling for float16 compute: the scale's rule (back off after
 * an overflow, grow after a run of finite steps) and the pass that divides
 * the gradients by the scale while it looks for values that are not finite. */
#include "d5/training.h"

#include <math.h>
#include <string.h>

d5_loss_scale_params d5_loss_scale_default_params(void)
{
    d5_loss_scale_params p;
    memset(&p, 0, sizeof p);
    p.init = 32768.0; /* 2^15 */
    p.growth = 2.0;
    p.backoff = 0.5;
    p.growth_interval = 2000;
    p.min = 1.0;
    p.max = 16777216.0; /* 2^24 */
    return p;
}

static int positive(double x)
{
    return isfinite(x) && x > 0;
}

d5_status d5_loss_scale_init(d5_loss_scale *ls, const d5_loss_scale_params *p)
{
    if (!ls) return d5_error(D5_ERR_INVALID, "d5_loss_scale_init: NULL scaler");
    d5_loss_scale_params q = p ? *p : d5_loss_scale_default_params();
    if (!positive(q.min) || !positive(q.max) || q.min > q.max)
        return d5_error(D5_ERR_INVALID,
                        "loss scaling: min = %g, max = %g; expected finite bounds with 0 < min "
                        "<= max",
                        q.min, q.max);
    if (!positive(q.init) || q.init < q.min || q.init > q.max)
        return d5_error(D5_ERR_INVALID,
                        "loss scaling: init = %g; expected a finite scale in [min, max] = [%g, %g]",
                        q.init, q.min, q.max);
    if (!(isfinite(q.growth) && q.growth >= 1))
        return d5_error(D5_ERR_INVALID, "loss scaling: growth = %g; expected a finite factor >= 1",
                        q.growth);
    if (!(q.backoff > 0 && q.backoff <= 1))
        return d5_error(D5_ERR_INVALID, "loss scaling: backoff = %g; expected a factor in (0, 1]",
                        q.backoff);
    if (q.growth_interval < 1)
        return d5_error(D5_ERR_INVALID, "loss scaling: growth_interval = %lld; expected >= 1",
                        (long long)q.growth_interval);
    memset(ls, 0, sizeof *ls);
    ls->p = q;
    ls->scale = q.init;
    return D5_OK;
}

int32_t d5_loss_scale_unscale(const d5_loss_scale *ls, float *const *grads, const int64_t *sizes,
                              int32_t n)
{
    const float inv = (float)(1.0 / ls->scale);
    /* An Inf or a NaN is a float whose exponent bits are all ones; OR-ing the
     * comparisons keeps the loop free of branches, so that it vectorizes. */
    uint32_t bad = 0;
    for (int32_t i = 0; i < n; i++) {
        float *g = grads[i];
        for (int64_t k = 0; k < sizes[i]; k++) {
            float v = g[k] * inv;
            uint32_t u;
            memcpy(&u, &v, sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
            g[k] = v;
        }
    }
    return !bad;
}

int32_t d5_loss_scale_update(d5_loss_scale *ls, int32_t finite)
{
    ls->steps++;
    if (!finite) {
        ls->skipped++;
        ls->good = 0;
        ls->scale = fmax(ls->scale * ls->p.backoff, ls->p.min);
        return 0;
    }
    if (++ls->good >= ls->p.growth_interval) {
        ls->good = 0;
        double next = fmin(ls->scale * ls->p.growth, ls->p.max);
        if (next != ls->scale) ls->growths++;
        ls->scale = next;
    }
    return 1;
}
