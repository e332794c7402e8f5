/* Adagrad (Duchi, Hazan & Singer, JMLR 2011) with PyTorch's semantics
 * (torch.optim.Adagrad, lr_decay 0):
 *
 *   g' = g + wd p
 *   s  = s + g'^2         (s starts at initial_accumulator)
 *   p  = p - lr g' / (sqrt(s) + eps)
 *
 * State per element: s. The state is allocated zeroed, so the first step
 * starts the sum from initial_accumulator instead of the stored value. */
#include "../optimizer_internal.h"

#include <math.h>

static double rule(const d5_optimizer_params *h, int64_t step, double g, float *s, double p)
{
    double si = (step == 1 ? h->initial_accumulator : (double)*s) + g * g;
    *s = (float)si;
    return p - h->lr * g / (sqrt(si) + h->eps);
}

D5__ONE_STATE_OPTIMIZER(adagrad, rule);
