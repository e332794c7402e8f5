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

static double rule(const d5_optimizer_params *h, int64_t step, double g, float *s, double p)
{
    (void)step;
    double si = h->alpha * *s + (1 - h->alpha) * g * g;
    *s = (float)si;
    return p - h->lr * g / (sqrt(si) + h->eps);
}

D5__ONE_STATE_OPTIMIZER(rmsprop, rule);
