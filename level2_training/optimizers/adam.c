/* Adam (Kingma & Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015)
 * with PyTorch's semantics (torch.optim.Adam, amsgrad off). Both moments are
 * bias-corrected with their own beta: the second moment with beta2 (Deep500's
 * reference used beta1 there, which is wrong). At step t (1-based):
 *
 *   g'   = g + l2 p                       (l2: weight_decay; 0 for AdamW)
 *   m    = b1 m + (1 - b1) g'
 *   v    = b2 v + (1 - b2) g'^2
 *   mhat = m / (1 - b1^t)
 *   vhat = v / (1 - b2^t)
 *   p    = p - lr mhat / (sqrt(vhat) + eps)
 *
 * State per element: m, then v (two blocks of n floats). */
#include "../optimizer_internal.h"

#include <math.h>

void d5__adam_update(const d5_optimizer_params *h, double l2, int64_t step, float *p,
                     const float *g, float *state, int64_t n)
{
    float *m = state, *v = state + n;
    double c1 = 1 - pow(h->beta1, (double)step), c2 = 1 - pow(h->beta2, (double)step);
    /* PyTorch's arrangement: lr/c1 * m / (sqrt(v)/sqrt(c2) + eps), the same
     * value as lr mhat / (sqrt(vhat) + eps). */
    double step_size = h->lr / c1, root_c2 = sqrt(c2);
    for (int64_t i = 0; i < n; i++) {
        double gi = d5__decayed(g, p, i, l2);
        double mi = h->beta1 * m[i] + (1 - h->beta1) * gi;
        double vi = h->beta2 * v[i] + (1 - h->beta2) * gi * gi;
        m[i] = (float)mi;
        v[i] = (float)vi;
        p[i] = (float)(p[i] - step_size * mi / (sqrt(vi) / root_c2 + h->eps));
    }
}

static d5_status update(d5_optimizer *o, int64_t step, float *p, const float *g, float *state,
                        int64_t n)
{
    const d5_optimizer_params *h = d5_optimizer_get_params(o);
    d5__adam_update(h, h->weight_decay, step, p, g, state, n);
    return D5_OK;
}

const d5_optimizer_desc d5__optimizer_adam = {.name = "adam",
                                              .state_per_elem = 2,
                                              .new_input = NULL,
                                              .prepare_param = NULL,
                                              .update_rule = update};
