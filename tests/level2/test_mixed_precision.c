/* Mixed precision in the trainer: the loss scale's rule step by step, the
 * unscaling pass, a skipped optimizer step, loss scaling inside a training
 * run (exact in float32, skipped steps on an overflow, the stop at the
 * smallest scale), and short bf16 and f16 runs of LeNet. */
#include "support.h"
#include "trainer_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(mixed_precision, .timeout = D5_TIMEOUT(300));

Test(mixed_precision, default_parameters)
{
    d5_loss_scale_params p = d5_loss_scale_default_params();
    cr_assert_eq(p.init, 32768.0);
    cr_assert_eq(p.growth, 2.0);
    cr_assert_eq(p.backoff, 0.5);
    cr_assert_eq(p.growth_interval, 2000);
    cr_assert_eq(p.min, 1.0);
    cr_assert_eq(p.max, 16777216.0);
    d5_trainer_params tp = d5_trainer_default_params();
    cr_assert_null(tp.precision);
    cr_assert_eq(tp.loss_scaling, D5_LOSS_SCALING_AUTO);
    cr_assert_eq(tp.loss_scale.init, 32768.0);
}

/* A scripted sequence of finite (1) and overflowing (0) steps with init 8,
 * growth 2, backoff 0.5, interval 3 and bounds [1, 32]: the scale after
 * each step, worked out by hand. */
Test(mixed_precision, scale_rule_step_by_step)
{
    d5_loss_scale_params p = d5_loss_scale_default_params();
    p.init = 8;
    p.growth_interval = 3;
    p.max = 32;
    d5_loss_scale ls;
    cr_assert_eq(d5_loss_scale_init(&ls, &p), D5_OK, "%s", d5_last_error());
    cr_assert_eq(ls.scale, 8.0);
    static const int finite[] = {1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1,
                                 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
    static const double after[] = {8,  8,  16, 8,  8,  8,  4,  4, 4, 8, 8, 8, 16,
                                   16, 16, 32, 32, 32, 32, 16, 8, 4, 2, 1, 1};
    const int n = (int)(sizeof finite / sizeof finite[0]);
    cr_assert_eq(n, (int)(sizeof after / sizeof after[0]));
    int skipped = 0;
    for (int k = 0; k < n; k++) {
        int32_t apply = d5_loss_scale_update(&ls, finite[k]);
        cr_assert_eq(apply, finite[k], "step %d", k + 1);
        cr_assert_eq(ls.scale, after[k], "step %d: scale %g, expected %g", k + 1, ls.scale,
                     after[k]);
        skipped += !finite[k];
    }
    cr_assert_eq(ls.steps, n);
    cr_assert_eq(ls.skipped, skipped);
    cr_assert_eq(ls.skipped, 8);
    /* 8 -> 16, 4 -> 8, 8 -> 16, 16 -> 32; the clamp at 32 is no growth. */
    cr_assert_eq(ls.growths, 4);
}

Test(mixed_precision, bad_parameters_name_the_field)
{
    static const struct {
        const char *field;
        double init, growth, backoff, min, max;
        int64_t interval;
    } cases[] = {
        {"init", 0, 2, 0.5, 1, 1e6, 10},
        {"init", NAN, 2, 0.5, 1, 1e6, 10},
        {"init", 2e6, 2, 0.5, 1, 1e6, 10},
        {"init", 0.5, 2, 0.5, 1, 1e6, 10},
        {"growth", 8, 0.5, 0.5, 1, 1e6, 10},
        {"growth", 8, INFINITY, 0.5, 1, 1e6, 10},
        {"backoff", 8, 2, 0, 1, 1e6, 10},
        {"backoff", 8, 2, 1.5, 1, 1e6, 10},
        {"growth_interval", 8, 2, 0.5, 1, 1e6, 0},
        {"min", 8, 2, 0.5, 0, 1e6, 10},
        {"max", 8, 2, 0.5, 4, 2, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d5_loss_scale_params p = {cases[i].init,     cases[i].growth, cases[i].backoff,
                                  cases[i].interval, cases[i].min,    cases[i].max};
        d5_loss_scale ls;
        memset(&ls, 0x5a, sizeof ls);
        unsigned char before[sizeof ls];
        memcpy(before, &ls, sizeof ls);
        cr_assert_eq(d5_loss_scale_init(&ls, &p), D5_ERR_INVALID, "case %zu", i);
        cr_assert(strstr(d5_last_error(), cases[i].field), "case %zu: %s", i, d5_last_error());
        cr_assert_eq(memcmp(before, &ls, sizeof ls), 0, "case %zu: the scaler was changed", i);
    }
}

/* Division by the scale, and the one pass's verdict on Inf and NaN wherever
 * they are (also at the end of a long array, after any vectorized part). */
Test(mixed_precision, unscale_divides_and_finds_overflows)
{
    d5_loss_scale_params p = d5_loss_scale_default_params();
    p.init = 4;
    d5_loss_scale ls;
    cr_assert_eq(d5_loss_scale_init(&ls, &p), D5_OK);
    float a[] = {2.0f, -6.0f, 0.5f}, b[] = {3e38f, 1e-30f};
    float *g[] = {a, b};
    int64_t sizes[] = {3, 2};
    cr_assert_eq(d5_loss_scale_unscale(&ls, g, sizes, 2), 1);
    cr_assert_eq(a[0], 0.5f);
    cr_assert_eq(a[1], -1.5f);
    cr_assert_eq(a[2], 0.125f);
    cr_assert_eq(b[0], 7.5e37f);
    cr_assert_eq(b[1], 2.5e-31f);
    const float bad[] = {INFINITY, -INFINITY, NAN};
    const int64_t where[] = {0, 517, 1020};
    for (int k = 0; k < 3; k++)
        for (int w = 0; w < 3; w++) {
            float *big = calloc(1021, sizeof *big);
            cr_assert_not_null(big);
            for (int i = 0; i < 1021; i++) big[i] = (float)i;
            big[where[w]] = bad[k];
            float one = 1.0f, *gs[] = {&one, big};
            int64_t n[] = {1, 1021};
            cr_assert_eq(d5_loss_scale_unscale(&ls, gs, n, 2), 0, "%g at %lld", (double)bad[k],
                         (long long)where[w]);
            free(big);
        }
}

/* d5_optimizer_skip ends a prepared step without touching the parameters,
 * the state or the step count. */
Test(mixed_precision, optimizer_skip)
{
    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = 0.1;
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create("adam", &op, &o), D5_OK);
    float w[2] = {1.0f, -2.0f}, v[1] = {3.0f};
    cr_assert_eq(d5_optimizer_add_param(o, "w", w, 2, NULL), D5_OK);
    cr_assert_eq(d5_optimizer_add_param(o, "v", v, 1, NULL), D5_OK);
    cr_assert_eq(d5_optimizer_skip(o), D5_ERR_STATE, "no step in progress");
    cr_assert_eq(d5_optimizer_prepare(o), D5_OK);
    cr_assert_eq(d5_optimizer_skip(o), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_optimizer_step_count(o), 0);
    cr_assert_eq(w[0], 1.0f);
    cr_assert_eq(v[0], 3.0f);
    cr_assert_eq(d5_optimizer_state(o, 0)[0], 0.0f, "Adam's first moment is untouched");
    /* The next step is step 1 again: Adam's first step moves each element by
     * lr (m/(1-b1) = g, sqrt(v/(1-b2)) = |g|). */
    const float gw[2] = {0.5f, -0.25f}, gv[1] = {4.0f};
    const float *const grads[] = {gw, gv};
    cr_assert_eq(d5_optimizer_prepare(o), D5_OK);
    cr_assert_eq(d5_optimizer_update_all(o, grads), D5_OK);
    cr_assert_eq(d5_optimizer_step_count(o), 1);
    cr_assert_float_eq(w[0], 0.9f, 1e-6);
    cr_assert_float_eq(w[1], -1.9f, 1e-6);
    cr_assert_float_eq(v[0], 2.9f, 1e-6);
    /* Not after a parameter of the step was updated. */
    cr_assert_eq(d5_optimizer_prepare(o), D5_OK);
    cr_assert_eq(d5_optimizer_update(o, 0, gw), D5_OK);
    cr_assert_eq(d5_optimizer_skip(o), D5_ERR_STATE);
    cr_assert(strstr(d5_last_error(), "1 of its 2"), "%s", d5_last_error());
    d5_optimizer_free(o);
}

/* The gradients of parameter 0 that after_backward saw, per step. */
typedef struct grads_seen {
    float *g;  /* steps * n */
    int64_t n; /* elements of parameter 0 */
    int steps; /* recorded */
    double scale[16];
} grads_seen;

static d5_status record_grads(d5_trainer *t, void *user, const d5_step_grads *g)
{
    grads_seen *r = user;
    if (g->step > 16) return D5_OK;
    memcpy(r->g + (g->step - 1) * g->sizes[0], g->grads[0], (size_t)g->sizes[0] * sizeof(float));
    r->scale[g->step - 1] = d5_trainer_loss_scale(t);
    r->steps = (int)g->step;
    return D5_OK;
}

/* Loss scaling by a power of two in float32 is exact: the loss curve and
 * the trained weights equal those of a run without it, bit for bit, while
 * after_backward sees every gradient multiplied by the scale. */
Test(mixed_precision, scaling_in_float32_is_exact)
{
    cr_assert_eq(d5_threads_set(1), D5_OK);
    d5_train_result r[2];
    grads_seen seen[2];
    float *w[2];
    int64_t nw = 0;
    for (int k = 0; k < 2; k++) {
        d5_network *net = mlp(16);
        d5_dataset *train = synthetic(160, 4);
        d5_optimizer *opt = optimizer_of("momentum", 0.05);
        d5_trainer_params p = d5_trainer_default_params();
        if (k == 1) {
            p.loss_scaling = D5_LOSS_SCALING_ON;
            p.loss_scale.init = 1024;
        }
        d5_trainer *t = NULL;
        cr_assert_eq(d5_trainer_create(net, &p, &t), D5_OK, "%s", d5_last_error());
        seen[k].n = d5_trainer_param_size(t, 0);
        seen[k].g = calloc((size_t)(10 * seen[k].n), sizeof(float));
        d5_trainer_hooks h = {.user = &seen[k], .after_backward = record_grads};
        cr_assert_eq(d5_trainer_add_hooks(t, "record", &h), D5_OK);
        cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK);
        cr_assert_eq(d5_trainer_loss_scale(t), k ? 1024.0 : 1.0);
        cr_assert_eq(d5_trainer_run(t, train, NULL, 9, &r[k]), D5_OK, "%s", d5_last_error());
        nw = d5_trainer_param_size(t, 1);
        w[k] = malloc((size_t)nw * sizeof(float));
        memcpy(w[k], d5_trainer_param(t, 1), (size_t)nw * sizeof(float));
        d5_trainer_free(t);
        d5_optimizer_free(opt);
        d5_dataset_free(train);
        d5_network_free(net);
    }
    cr_assert_eq(r[0].nlosses, 10);
    cr_assert_eq(r[1].nlosses, 10);
    cr_assert_eq(memcmp(r[0].losses, r[1].losses, 10 * sizeof(float)), 0, "the loss curves differ");
    cr_assert_eq(memcmp(w[0], w[1], (size_t)nw * sizeof(float)), 0, "the weights differ");
    for (int64_t i = 0; i < 10 * seen[0].n; i++)
        cr_assert_eq(seen[1].g[i], 1024.0f * seen[0].g[i], "gradient element %lld", (long long)i);
    cr_assert_eq(seen[1].scale[9], 1024.0);
    cr_assert_eq(r[0].loss_scaling, 0);
    cr_assert_eq(r[1].loss_scaling, 1);
    cr_assert_eq(r[1].skipped_steps, 0);
    cr_assert_eq(r[1].loss_scale, 1024.0);
    cr_assert_str_eq(r[1].precision, "f32");
    for (int k = 0; k < 2; k++) {
        free(seen[k].g);
        free(w[k]);
        d5_train_result_free(&r[k]);
    }
}

/* Overflows injected by a hook: the step is skipped (no optimizer step, the
 * parameters as they were, no before_update), the scale halves, and it
 * doubles after growth_interval good steps. */
typedef struct inject {
    const int64_t *at; /* steps to poison, 0-terminated */
    float value;
    float *p0; /* parameter 0 as the step's backward left it */
    int64_t n0;
    double used[16];
    int updates, unchanged, changed;
    int64_t opt_steps[16];
    char name0[64]; /* parameter 0's name */
} inject;

static d5_status poison(d5_trainer *t, void *user, const d5_step_grads *g)
{
    inject *in = user;
    in->used[g->step - 1] = d5_trainer_loss_scale(t);
    snprintf(in->name0, sizeof in->name0, "'%s'", d5_trainer_param_name(t, 0));
    memcpy(in->p0, g->params[0], (size_t)g->sizes[0] * sizeof(float));
    for (const int64_t *a = in->at; *a; a++)
        if (*a == g->step) g->grads[0][1] = in->value;
    return D5_OK;
}

static d5_status count_update(d5_trainer *t, void *user, int64_t step)
{
    (void)t, (void)step;
    ((inject *)user)->updates++;
    return D5_OK;
}

static d5_status after_step(d5_trainer *t, void *user, int64_t step, double loss)
{
    (void)loss;
    inject *in = user;
    int same = memcmp(in->p0, d5_trainer_param(t, 0), (size_t)in->n0 * sizeof(float)) == 0;
    in->unchanged += same;
    in->changed += !same;
    in->opt_steps[step - 1] = d5_optimizer_step_count(d5_trainer_optimizer(t));
    return D5_OK;
}

static d5_status run_injected(inject *in, double init, int check, d5_train_result *r)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(256, 5);
    d5_optimizer *opt = optimizer_of("momentum", 0.05);
    d5_trainer_params p = d5_trainer_default_params();
    p.loss_scaling = D5_LOSS_SCALING_ON;
    p.loss_scale.init = init;
    p.loss_scale.growth_interval = 3;
    p.check_numerics = check;
    p.max_batches = 8;
    d5_trainer *t = NULL;
    cr_assert_eq(d5_trainer_create(net, &p, &t), D5_OK, "%s", d5_last_error());
    in->n0 = d5_trainer_param_size(t, 0);
    in->p0 = malloc((size_t)in->n0 * sizeof(float));
    d5_trainer_hooks h = {.user = in,
                          .after_backward = poison,
                          .before_update = count_update,
                          .after_step = after_step};
    cr_assert_eq(d5_trainer_add_hooks(t, "inject", &h), D5_OK);
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK);
    d5_status s = d5_trainer_run(t, train, NULL, 2, r);
    free(in->p0);
    d5_trainer_free(t);
    d5_optimizer_free(opt);
    d5_dataset_free(train);
    d5_network_free(net);
    return s;
}

Test(mixed_precision, overflow_skips_the_step_and_halves_the_scale)
{
    static const int64_t at[] = {2, 5, 0};
    inject in = {.at = at, .value = INFINITY};
    d5_train_result r;
    cr_assert_eq(run_injected(&in, 64, 1, &r), D5_OK, "%s", d5_last_error());
    /* Steps 1..8: 64 (good 1), 64 (Inf: 32), 32 (1), 32 (2), 32 (Inf: 16),
     * 16 (1), 16 (2), 16 (3: 32). */
    static const double used[] = {64, 64, 32, 32, 32, 16, 16, 16};
    for (int k = 0; k < 8; k++) cr_assert_eq(in.used[k], used[k], "step %d", k + 1);
    static const int64_t opt_steps[] = {1, 1, 2, 3, 3, 4, 5, 6};
    for (int k = 0; k < 8; k++) cr_assert_eq(in.opt_steps[k], opt_steps[k], "step %d", k + 1);
    cr_assert_eq(r.nlosses, 8);
    cr_assert_eq(r.skipped_steps, 2);
    cr_assert_eq(r.loss_scale_growths, 1);
    cr_assert_eq(r.loss_scale, 32.0);
    cr_assert_eq(in.updates, 6, "before_update runs for applied steps only");
    cr_assert_eq(in.unchanged, 2, "the skipped steps leave the parameters");
    cr_assert_eq(in.changed, 6);
    d5_train_result_free(&r);
}

/* At the smallest scale an overflow is not cured by scaling: with
 * check_numerics it stops training, naming the parameter; without, the step
 * is skipped like any other. */
Test(mixed_precision, overflow_at_the_smallest_scale)
{
    static const int64_t at[] = {3, 0};
    inject in = {.at = at, .value = NAN};
    d5_train_result r;
    cr_assert_eq(run_injected(&in, 1, 1, &r), D5_ERR_NUMERIC);
    cr_assert(strstr(d5_last_error(), "step 3") && strstr(d5_last_error(), "minimum") &&
                  strstr(d5_last_error(), in.name0),
              "%s", d5_last_error());
    inject again = {.at = at, .value = NAN};
    cr_assert_eq(run_injected(&again, 1, 0, &r), D5_OK, "%s", d5_last_error());
    /* 1 (good 1), 1 (good 2), 1 (NaN: stays at the minimum), then three good
     * steps: 2, and two more. */
    cr_assert_eq(r.skipped_steps, 1);
    cr_assert_eq(r.loss_scale_growths, 1);
    cr_assert_eq(r.loss_scale, 2.0);
    d5_train_result_free(&r);
}

Test(mixed_precision, bad_trainer_parameters)
{
    d5_network *net = mlp(8);
    d5_trainer *t = NULL;
    d5_trainer_params p = d5_trainer_default_params();
    p.precision = "fp8";
    cr_assert_eq(d5_trainer_create(net, &p, &t), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'fp8'") && strstr(d5_last_error(), "f32, bf16 or f16"), "%s",
              d5_last_error());
    p = d5_trainer_default_params();
    p.loss_scaling = 7;
    cr_assert_eq(d5_trainer_create(net, &p, &t), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "loss_scaling"), "%s", d5_last_error());
    p = d5_trainer_default_params();
    p.precision = "f16"; /* loss scaling on by default */
    p.loss_scale.backoff = 2;
    cr_assert_eq(d5_trainer_create(net, &p, &t), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "backoff"), "%s", d5_last_error());
    p.loss_scaling = D5_LOSS_SCALING_OFF; /* the parameters are not read then */
    cr_assert_eq(d5_trainer_create(net, &p, &t), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_trainer_loss_scale(t), 1.0);
    d5_trainer_free(t);
    d5_network_free(net);
}

/* LeNet in bf16 and in f16 (loss scaling on by default) for a few batches of
 * synthetic data: the loss goes down and the result says what ran. */
static void lenet_run(const char *precision, d5_train_result *r)
{
    d5_network *net = model_of("lenet", 32, 1);
    d5_dataset *train = synthetic(2048, 6);
    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = 0.002;
    d5_optimizer *opt = NULL;
    cr_assert_eq(d5_optimizer_create("adam", &op, &opt), D5_OK);
    d5_trainer_params p = d5_trainer_default_params();
    p.precision = precision;
    p.max_batches = 60;
    cr_assert_eq(d5_train(net, train, NULL, opt, &p, 1, NULL, r), D5_OK, "%s", d5_last_error());
    d5_optimizer_free(opt);
    d5_dataset_free(train);
    d5_network_free(net);
}

static double mean(const float *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    return s / n;
}

Test(mixed_precision, lenet_in_bf16_and_f16_learns)
{
    const char *precisions[] = {"bf16", "f16"};
    for (int k = 0; k < 2; k++) {
        d5_train_result r;
        lenet_run(precisions[k], &r);
        cr_assert_eq(r.nlosses, 60);
        double first = mean(r.losses, 5), last = mean(r.losses + 55, 5);
        cr_assert(last < first - 0.2, "%s: loss %g at first, %g at last", precisions[k], first,
                  last);
        cr_assert_str_eq(r.precision, precisions[k]);
        cr_assert(strstr(r.precision_report, precisions[k]), "%s", r.precision_report);
        cr_assert_eq(r.loss_scaling, k == 1, "loss scaling for f16 only");
        if (k == 1) cr_assert(r.loss_scale >= 1 && r.skipped_steps < 60);
        d5_train_result_free(&r);
    }
}
