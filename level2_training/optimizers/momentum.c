/* Heavy-ball momentum with PyTorch's semantics (torch.optim.SGD with momentum
 * mu, dampening 0, nesterov off):
 *
 *   g' = g + wd p
 *   v  = mu v + g'        (v starts at 0, so the first step sets v = g')
 *   p  = p - lr v
 *
 * State per element: v. */
#include "../optimizer_internal.h"

static double rule(const d5_optimizer_params *h, int64_t step, double g, float *v, double p)
{
    (void)step;
    double vi = h->momentum * *v + g;
    *v = (float)vi;
    return p - h->lr * vi;
}

D5__ONE_STATE_OPTIMIZER(momentum, rule);
