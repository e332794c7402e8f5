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

static d5_status update(d5_optimizer *o, int64_t step, float *p, const float *g, float *s,
                        int64_t n)
{
    const d5_optimizer_params *h = d5_optimizer_get_params(o);
    for (int64_t i = 0; i < n; i++) {
        double gi = d5__decayed(g, p, i, h->weight_decay);
        double si = (step == 1 ? h->initial_accumulator : (double)s[i]) + gi * gi;
        s[i] = (float)si;
        p[i] = (float)(p[i] - h->lr * gi / (sqrt(si) + h->eps));
    }
    return D5_OK;
}

const d5_optimizer_desc d5__optimizer_adagrad = {.name = "adagrad",
                                                 .state_per_elem = 1,
                                                 .new_input = NULL,
                                                 .prepare_param = NULL,
                                                 .update_rule = update};
