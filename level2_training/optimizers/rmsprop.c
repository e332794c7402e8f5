/* RMSprop (Tieleman & Hinton, 2012) with PyTorch's semantics
 * (torch.optim.RMSprop, not centered, momentum 0):
 *
 *   g' = g + wd p
 *   s  = a s + (1 - a) g'^2     (a: alpha; s starts at 0)
 *   p  = p - lr g' / (sqrt(s) + eps)
 *
 * State per element: s. */
#include "../optimizer_internal.h"

#include <math.h>

static d5_status update(d5_optimizer *o, int64_t step, float *p, const float *g, float *s,
                        int64_t n)
{
    (void)step;
    const d5_optimizer_params *h = d5_optimizer_get_params(o);
    for (int64_t i = 0; i < n; i++) {
        double gi = d5__decayed(g, p, i, h->weight_decay);
        double si = h->alpha * s[i] + (1 - h->alpha) * gi * gi;
        s[i] = (float)si;
        p[i] = (float)(p[i] - h->lr * gi / (sqrt(si) + h->eps));
    }
    return D5_OK;
}

const d5_optimizer_desc d5__optimizer_rmsprop = {.name = "rmsprop",
                                                 .state_per_elem = 1,
                                                 .new_input = NULL,
                                                 .prepare_param = NULL,
                                                 .update_rule = update};
