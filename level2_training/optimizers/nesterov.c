/* Nesterov momentum with PyTorch's semantics (torch.optim.SGD with momentum
 * mu, dampening 0, nesterov on; Sutskever et al., ICML 2013):
 *
 *   g' = g + wd p
 *   v  = mu v + g'        (v starts at 0)
 *   p  = p - lr (g' + mu v)
 *
 * State per element: v. */
#include "../optimizer_internal.h"

static double rule(const d5_optimizer_params *h, int64_t step, double g, float *v, double p)
{
    (void)step;
    double vi = h->momentum * *v + g;
    *v = (float)vi;
    return p - h->lr * (g + h->momentum * vi);
}

D5__ONE_STATE_OPTIMIZER(nesterov, rule);
