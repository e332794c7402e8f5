/* The built-in optimizers: one list registers them, and the helpers their
 * update rules share. Adding an optimizer is one file in optimizers/ and one
 * line in D5__OPTIMIZER_LIST. */
#ifndef D5_OPTIMIZER_INTERNAL_H
#define D5_OPTIMIZER_INTERNAL_H

#include "d5/training.h"

/* The fields of d5_optimizer_params an optimizer reads beyond lr and
 * weight_decay (which every optimizer accepts); d5_optimizer_create checks
 * these and ignores the others. */
enum {
    D5__USES_MOMENTUM = 1 << 0,
    D5__USES_BETAS = 1 << 1,
    D5__USES_EPS = 1 << 2,
    D5__USES_ALPHA = 1 << 3,
    D5__USES_ACCUMULATOR = 1 << 4,
    D5__USES_ACCELEGRAD = 1 << 5
};

/* X(name, fields used): each optimizers/<name>.c defines d5__optimizer_<name>. */
#define D5__OPTIMIZER_LIST(X)                                                                      \
    X(sgd, 0)                                                                                      \
    X(momentum, D5__USES_MOMENTUM)                                                                 \
    X(nesterov, D5__USES_MOMENTUM)                                                                 \
    X(adam, D5__USES_BETAS | D5__USES_EPS)                                                         \
    X(adamw, D5__USES_BETAS | D5__USES_EPS)                                                        \
    X(adagrad, D5__USES_EPS | D5__USES_ACCUMULATOR)                                                \
    X(rmsprop, D5__USES_ALPHA | D5__USES_EPS)                                                      \
    X(accelegrad, D5__USES_ACCELEGRAD)

#define D5__OPTIMIZER_EXTERN(name, uses) extern const d5_optimizer_desc d5__optimizer_##name;
D5__OPTIMIZER_LIST(D5__OPTIMIZER_EXTERN)
#undef D5__OPTIMIZER_EXTERN

/* The gradient with L2 weight decay folded in: g' = g + wd p, in double. */
static inline double d5__decayed(const float *grad, const float *param, int64_t i, double wd)
{
    return (double)grad[i] + wd * (double)param[i];
}

/* The optimizers with one float of state per element (momentum, nesterov,
 * adagrad, rmsprop) differ only in what they do to one element.
 * D5__ONE_STATE_OPTIMIZER(NAME, RULE) defines d5__optimizer_<NAME>, whose
 * update calls, for every element,
 *
 *   double RULE(const d5_optimizer_params *h, int64_t step, double g, float *s, double p)
 *
 * with the gradient g' (weight decay folded in), the element's state s, which
 * the rule updates in place, and the parameter p; it returns the new p. */
#define D5__ONE_STATE_OPTIMIZER(NAME, RULE)                                                        \
    static d5_status NAME##_update(d5_optimizer *o, int64_t step, float *p, const float *g,        \
                                   float *s, int64_t n)                                            \
    {                                                                                              \
        const d5_optimizer_params *h = d5_optimizer_get_params(o);                                 \
        for (int64_t i = 0; i < n; i++)                                                            \
            p[i] = (float)RULE(h, step, d5__decayed(g, p, i, h->weight_decay), &s[i], p[i]);       \
        return D5_OK;                                                                              \
    }                                                                                              \
    const d5_optimizer_desc d5__optimizer_##NAME = {                                               \
        .name = #NAME, .state_per_elem = 1, .update_rule = NAME##_update}

/* One Adam step on n elements (optimizers/adam.c), with l2 as the weight
 * decay folded into the gradient; AdamW passes 0 and decays on its own. State:
 * m then v, n floats each. */
void d5__adam_update(const d5_optimizer_params *h, double l2, int64_t step, float *p,
                     const float *g, float *state, int64_t n);

#endif
