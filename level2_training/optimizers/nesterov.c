/* Nesterov momentum with PyTorch's semantics (torch.optim.SGD with momentum
 * mu, dampening 0, nesterov on; Sutskever et al., ICML 2013):
 *
 *   g' = g + wd p
 *   v  = mu v + g'        (v starts at 0)
 *   p  = p - lr (g' + mu v)
 *
 * State per element: v. */
#include "../optimizer_internal.h"

static d5_status update(d5_optimizer *o, int64_t step, float *p, const float *g, float *v,
                        int64_t n)
{
    (void)step;
    const d5_optimizer_params *h = d5_optimizer_get_params(o);
    for (int64_t i = 0; i < n; i++) {
        double gi = d5__decayed(g, p, i, h->weight_decay);
        double vi = h->momentum * v[i] + gi;
        v[i] = (float)vi;
        p[i] = (float)(p[i] - h->lr * (gi + h->momentum * vi));
    }
    return D5_OK;
}

const d5_optimizer_desc d5__optimizer_nesterov = {.name = "nesterov",
                                                  .state_per_elem = 1,
                                                  .new_input = NULL,
                                                  .prepare_param = NULL,
                                                  .update_rule = update};
