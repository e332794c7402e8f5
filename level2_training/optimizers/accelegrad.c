/* AcceleGrad: K. Y. Levy, A. Yurtsever and V. Cevher, "Online Adaptive
 * Methods, Universality and Acceleration", NeurIPS 2018, Algorithm 1, run on
 * the three-step interface as the Deep500 paper describes (the gradient is
 * taken at a point other than the iterate, so prepare_param rewrites the
 * parameter before the forward pass).
 *
 * The paper counts t = 0, 1, 2, ...; d5's step is t + 1. Its quantities:
 *
 *   alpha_t = 1 for 0 <= t <= 2, (t + 1) / 4 for t >= 3;   tau_t = 1 / alpha_t
 *   y_0 = z_0 = x_0 (the parameter as registered)
 *   x_{t+1} = tau_t z_t + (1 - tau_t) y_t          the point the gradient is taken at
 *   g_t     = grad f(x_{t+1})  (+ wd x_{t+1} when weight_decay is set; the paper has none)
 *   eta_t   = lr 2 D / sqrt(G^2 + sum_{s=0..t} alpha_s^2 ||g_s||^2)
 *   z_{t+1} = Proj_K(z_t - alpha_t eta_t g_t)
 *   y_{t+1} = x_{t+1} - eta_t g_t
 *
 * Because tau_t alpha_t = 1, the last line equals tau_t z_{t+1} + (1 - tau_t) y_t
 * (without projection): the iterate is also a mix of the new z and the old y.
 *
 * D and G are accelegrad_d and accelegrad_g; lr scales eta_t (lr = 1 is the
 * paper's rule). The sum of weighted squared gradient norms is kept per
 * parameter tensor, so each tensor has its own eta_t. d5 optimizes without
 * constraints: K is the whole space and Proj_K the identity, so D enters only
 * the step size.
 *
 * In d5's calls: prepare_param at step t + 1 writes x_{t+1} into the
 * parameter (at step 1 it first copies the parameter into y and z);
 * update_rule receives g_t, updates z and y, and leaves y_{t+1}, the iterate,
 * in the parameter. The paper's guarantee is for the average of the y_t
 * weighted by alpha_t; d5 keeps the last iterate, as training loops do.
 *
 * State per element, in three blocks of n floats: y, z and s, where
 * s_i = sum_t alpha_t^2 g_{t,i}^2, so that sum_i s_i is the tensor's sum of
 * alpha_t^2 ||g_t||^2. */
#include "../optimizer_internal.h"

#include <math.h>

static double alpha_at(int64_t step)
{
    int64_t t = step - 1;
    return t <= 2 ? 1.0 : (double)(t + 1) / 4.0;
}

static d5_status prepare(d5_optimizer *o, int64_t step, float *p, float *state, int64_t n)
{
    (void)o;
    float *y = state, *z = state + n;
    if (step == 1)
        for (int64_t i = 0; i < n; i++) y[i] = z[i] = p[i];
    double tau = 1.0 / alpha_at(step);
    for (int64_t i = 0; i < n; i++) p[i] = (float)(tau * z[i] + (1 - tau) * y[i]);
    return D5_OK;
}

static d5_status update(d5_optimizer *o, int64_t step, float *p, const float *g, float *state,
                        int64_t n)
{
    const d5_optimizer_params *h = d5_optimizer_get_params(o);
    float *y = state, *z = state + n, *s = state + 2 * n;
    double alpha = alpha_at(step), sum = 0;
    for (int64_t i = 0; i < n; i++) {
        double gi = d5__decayed(g, p, i, h->weight_decay);
        double si = s[i] + alpha * alpha * gi * gi;
        s[i] = (float)si;
        sum += si;
    }
    double g2 = h->accelegrad_g * h->accelegrad_g;
    double eta = h->lr * 2 * h->accelegrad_d / sqrt(g2 + sum);
    for (int64_t i = 0; i < n; i++) {
        double gi = d5__decayed(g, p, i, h->weight_decay);
        z[i] = (float)(z[i] - alpha * eta * gi);
        y[i] = (float)(p[i] - eta * gi);
        p[i] = y[i];
    }
    return D5_OK;
}

const d5_optimizer_desc d5__optimizer_accelegrad = {.name = "accelegrad",
                                                    .state_per_elem = 3,
                                                    .new_input = NULL,
                                                    .prepare_param = prepare,
                                                    .update_rule = update};
