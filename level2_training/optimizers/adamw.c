/* AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR
 * 2019) with PyTorch's semantics (torch.optim.AdamW, amsgrad off): the weight
 * decay shrinks the parameter directly instead of entering the gradient.
 *
 *   p = p - lr wd p       (first, with the parameter before the step)
 *   Adam without L2 on p  (see adam.c for its formulas)
 *
 * State per element: m, then v. */
#include "../optimizer_internal.h"

static d5_status update(d5_optimizer *o, int64_t step, float *p, const float *g, float *state,
                        int64_t n)
{
    const d5_optimizer_params *h = d5_optimizer_get_params(o);
    double shrink = 1 - h->lr * h->weight_decay;
    if (h->weight_decay != 0)
        for (int64_t i = 0; i < n; i++) p[i] = (float)(p[i] * shrink);
    d5__adam_update(h, 0, step, p, g, state, n);
    return D5_OK;
}

const d5_optimizer_desc d5__optimizer_adamw = {.name = "adamw",
                                               .state_per_elem = 2,
                                               .new_input = NULL,
                                               .prepare_param = NULL,
                                               .update_rule = update};
