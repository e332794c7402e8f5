/* Stochastic gradient descent, as PyTorch's torch.optim.SGD without momentum:
 *
 *   g' = g + wd p
 *   p  = p - lr g'
 *
 * No state. */
#include "../optimizer_internal.h"

static d5_status update(d5_optimizer *o, int64_t step, float *p, const float *g, float *state,
                        int64_t n)
{
    (void)step;
    (void)state;
    const d5_optimizer_params *h = d5_optimizer_get_params(o);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)(p[i] - h->lr * d5__decayed(g, p, i, h->weight_decay));
    return D5_OK;
}

const d5_optimizer_desc d5__optimizer_sgd = {.name = "sgd",
                                             .state_per_elem = 0,
                                             .new_input = NULL,
                                             .prepare_param = NULL,
                                             .update_rule = update};
