/* Optimizers against PyTorch and against the AcceleGrad paper, learning-rate
 * schedules, parameter distances and the optimizer's error paths. */
#include "support.h"

#include "d5/training.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define N 5

static const float P0[N] = {0.5f, -1.2f, 2.0f, 0.0f, -0.3f};
static const float GRADS[3][N] = {{0.1f, -0.4f, 0.25f, 1.0f, -0.05f},
                                  {-0.2f, 0.3f, 0.5f, -1.5f, 0.0f},
                                  {0.05f, 0.6f, -0.35f, 0.8f, 0.2f}};

/* The parameters after one and after three steps of torch.optim in float64
 * (torch 1.13, Debian's /usr/bin/python3), from:
 *
 *   torch.set_default_dtype(torch.float64)
 *   p = torch.tensor(P0, requires_grad=True); opt = <below>([p], weight_decay=wd)
 *   for g in GRADS: p.grad = torch.tensor(g); opt.step()
 *
 *   sgd       SGD(lr=0.1)            momentum  SGD(lr=0.1, momentum=0.9)
 *   nesterov  SGD(lr=0.1, momentum=0.9, nesterov=True)
 *   adam      Adam(lr=0.1, betas=(0.9, 0.999), eps=1e-8)      adamw  AdamW(same)
 *   adagrad   Adagrad(lr=0.1, eps=1e-10, initial_accumulator_value=0.1)
 *   rmsprop   RMSprop(lr=0.01, alpha=0.99, eps=1e-8) */
typedef struct torch_ref {
    const char *name;
    double wd;
    double one[N], three[N];
} torch_ref;

static const torch_ref REFS[] = {
    {"sgd", 0.0, {0.49, -1.16, 1.975, -0.1, -0.295}, {0.505, -1.25, 1.96, -0.03, -0.315}},
    {"sgd",
     0.1,
     {0.485, -1.148, 1.955, -0.1, -0.292},
     {0.4901485, -1.2148548, 1.9015955, -0.02951, -0.3061892}},
    {"momentum",
     0.0,
     {0.49, -1.16, 1.975, -0.1, -0.295},
     {0.5059, -1.2086, 1.87225, -0.066, -0.30645}},
    {"momentum",
     0.1,
     {0.485, -1.148, 1.955, -0.1, -0.292},
     {0.4782685, -1.1430708, 1.7624555, -0.06371, -0.2899532}},
    {"nesterov",
     0.0,
     {0.481, -1.124, 1.9525, -0.19, -0.2905},
     {0.51031, -1.25774, 1.845025, -0.0894, -0.320805}},
    {"nesterov",
     0.1,
     {0.4715, -1.1012, 1.9145, -0.19, -0.2848},
     {0.471057911, -1.16582149, 1.69117523, -0.08458559, -0.297584653}},
    {"adam",
     0.0,
     {0.40000001, -1.1, 1.9, -0.099999999, -0.20000002},
     {0.450279426, -1.13574078, 1.77417003, -0.0836555956, -0.182421398}},
    {"adam",
     0.1,
     {0.400000007, -1.1, 1.9, -0.099999999, -0.200000012},
     {0.390080317, -1.08360053, 1.73908759, -0.0828057603, -0.149731573}},
    {"adamw",
     0.0,
     {0.40000001, -1.1, 1.9, -0.099999999, -0.20000002},
     {0.450279426, -1.13574078, 1.77417003, -0.0836555956, -0.182421398}},
    {"adamw",
     0.1,
     {0.39500001, -1.088, 1.88, -0.099999999, -0.19700002},
     {0.437052822, -1.1021789, 1.71772321, -0.0819132974, -0.176171156}},
    {"adagrad",
     0.0,
     {0.469848866, -1.12155355, 1.93798263, -0.0953462589, -0.284382624},
     {0.508684955, -1.2434697, 1.90798375, -0.0534425982, -0.337363918}},
    {"adagrad",
     0.1,
     {0.457142857, -1.1145587, 1.91818182, -0.0953462589, -0.275474426},
     {0.47224514, -1.2047666, 1.85836528, -0.0530739179, -0.313845933}},
    {"rmsprop",
     0.0,
     {0.4000001, -1.10000002, 1.90000004, -0.09999999, -0.2000002},
     {0.467585013, -1.23727352, 1.86376445, -0.0574511486, -0.297071235}},
    {"rmsprop",
     0.1,
     {0.400000067, -1.10000002, 1.90000002, -0.09999999, -0.200000125},
     {0.432317274, -1.20083746, 1.83626645, -0.0570555542, -0.266904967}},
};

static void assert_close(const float *got, const double *want, int64_t n, double rtol,
                         const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= 1e-6 + rtol * fabs(want[i]),
                  "%s: element %lld is %.9g, expected %.9g", what, (long long)i, got[i], want[i]);
}

static d5_optimizer_params torch_params(const char *name, double wd)
{
    d5_optimizer_params p = d5_optimizer_default_params();
    p.lr = strcmp(name, "rmsprop") == 0 ? 0.01 : 0.1;
    p.weight_decay = wd;
    if (strcmp(name, "adagrad") == 0) {
        p.eps = 1e-10;
        p.initial_accumulator = 0.1;
    }
    return p;
}

/* One full step of the three-step protocol for a single parameter. */
static void step_one(d5_optimizer *o, const float *grad)
{
    cr_assert_eq(d5_optimizer_prepare(o), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_optimizer_update(o, 0, grad), D5_OK, "%s", d5_last_error());
}

Test(optimizers, match_torch_one_and_three_steps)
{
    int seen[8] = {0};
    for (size_t r = 0; r < sizeof REFS / sizeof REFS[0]; r++) {
        const torch_ref *ref = &REFS[r];
        d5_optimizer_params p = torch_params(ref->name, ref->wd);
        d5_optimizer *o = NULL;
        cr_assert_eq(d5_optimizer_create(ref->name, &p, &o), D5_OK, "%s", d5_last_error());
        float x[N];
        memcpy(x, P0, sizeof x);
        cr_assert_eq(d5_optimizer_add_param(o, "x", x, N, NULL), D5_OK);
        char what[64];
        for (int t = 0; t < 3; t++) {
            step_one(o, GRADS[t]);
            snprintf(what, sizeof what, "%s wd=%g step %d", ref->name, ref->wd, t + 1);
            if (t == 0) assert_close(x, ref->one, N, 1e-5, what);
        }
        assert_close(x, ref->three, N, 1e-5, what);
        cr_assert_eq(d5_optimizer_step_count(o), 3);
        for (int32_t i = 0; i < d5_optimizer_count(); i++)
            if (strcmp(d5_optimizer_name_at(i), ref->name) == 0) seen[i] = 1;
        d5_optimizer_free(o);
    }
    /* Every built-in but accelegrad (tested on its own below) has a reference. */
    for (int32_t i = 0; i < d5_optimizer_count(); i++)
        if (strcmp(d5_optimizer_name_at(i), "accelegrad") != 0)
            cr_assert(seen[i], "%s has no PyTorch reference", d5_optimizer_name_at(i));
}

Test(optimizers, adam_second_moment_uses_beta2)
{
    /* With beta1 far from beta2, correcting v with beta1 gives another step. */
    d5_optimizer_params p = d5_optimizer_default_params();
    p.lr = 1;
    p.beta1 = 0.5;
    p.beta2 = 0.9;
    p.eps = 0;
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create("adam", &p, &o), D5_OK);
    float x[1] = {0};
    const float g1[1] = {1}, g2[1] = {3};
    cr_assert_eq(d5_optimizer_add_param(o, "x", x, 1, NULL), D5_OK);
    step_one(o, g1);
    step_one(o, g2);
    /* Step 1 moves by -1. Step 2: m = 0.5*0.5 + 0.5*3 = 1.75, v = 0.9*0.1 + 0.1*9 = 0.99;
     * mhat = 1.75/0.75, vhat = 0.99/0.19. */
    double want = -1 - (1.75 / 0.75) / sqrt(0.99 / 0.19);
    cr_assert_float_eq(x[0], want, 1e-6, "%.9g vs %.9g", x[0], want);
    d5_optimizer_free(o);
}

/* AcceleGrad written again from Levy, Yurtsever & Cevher (NeurIPS 2018),
 * Algorithm 1, in double, for one tensor: the point handed to the gradient
 * (x_{t+1}) and the iterate y_{t+1} after each step. */
typedef struct accel_ref {
    double y[4], z[4], sum;
} accel_ref;

static void accel_point(const accel_ref *a, int t, int n, double *x)
{
    double alpha = t <= 2 ? 1 : (t + 1) / 4.0, tau = 1 / alpha;
    for (int i = 0; i < n; i++) x[i] = tau * a->z[i] + (1 - tau) * a->y[i];
}

static void accel_step(accel_ref *a, int t, int n, const double *x, const double *g,
                       const d5_optimizer_params *p)
{
    double alpha = t <= 2 ? 1 : (t + 1) / 4.0, norm2 = 0;
    double gw[4];
    for (int i = 0; i < n; i++) {
        gw[i] = g[i] + p->weight_decay * x[i];
        norm2 += gw[i] * gw[i];
    }
    a->sum += alpha * alpha * norm2;
    double eta = p->lr * 2 * p->accelegrad_d / sqrt(p->accelegrad_g * p->accelegrad_g + a->sum);
    for (int i = 0; i < n; i++) {
        a->z[i] -= alpha * eta * gw[i];
        a->y[i] = x[i] - eta * gw[i];
    }
}

static void accelegrad_case(double lr, double d, double g, double wd)
{
    d5_optimizer_params p = d5_optimizer_default_params();
    p.lr = lr;
    p.accelegrad_d = d;
    p.accelegrad_g = g;
    p.weight_decay = wd;
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create("accelegrad", &p, &o), D5_OK, "%s", d5_last_error());
    /* Two tensors, each minimizing ||w - c||^2 with its own c: each has its
     * own sum of gradient norms and step size. */
    const int n[2] = {3, 4};
    const double c[2][4] = {{1, -2, 0.5, 0}, {3, 0.25, -1, 2}};
    float w[2][4] = {{0.2f, 0.1f, -0.3f, 0}, {-0.5f, 1.5f, 0.7f, 0.1f}};
    accel_ref ref[2];
    memset(ref, 0, sizeof ref);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < n[k]; i++) ref[k].y[i] = ref[k].z[i] = w[k][i];
        cr_assert_eq(d5_optimizer_add_param(o, k ? "b" : "a", w[k], n[k], NULL), D5_OK);
    }
    for (int t = 0; t < 12; t++) {
        cr_assert_eq(d5_optimizer_prepare(o), D5_OK, "%s", d5_last_error());
        float grad[2][4];
        const float *grads[2] = {grad[0], grad[1]};
        double x[2][4], gd[2][4];
        for (int k = 0; k < 2; k++) {
            accel_point(&ref[k], t, n[k], x[k]);
            assert_close(w[k], x[k], n[k], 1e-5, "accelegrad gradient point");
            /* The gradient at the point the parameter now holds. */
            for (int i = 0; i < n[k]; i++) {
                grad[k][i] = (float)(2 * (w[k][i] - c[k][i]));
                gd[k][i] = 2 * (x[k][i] - c[k][i]);
            }
            accel_step(&ref[k], t, n[k], x[k], gd[k], &p);
        }
        cr_assert_eq(d5_optimizer_update_all(o, grads), D5_OK, "%s", d5_last_error());
        for (int k = 0; k < 2; k++) {
            assert_close(w[k], ref[k].y, n[k], 1e-5, "accelegrad iterate");
            assert_close(d5_optimizer_state(o, k) + n[k], ref[k].z, n[k], 1e-5, "accelegrad z");
        }
    }
    d5_optimizer_free(o);
}

Test(optimizers, accelegrad_follows_the_paper)
{
    accelegrad_case(1, 1, 1, 0);
    accelegrad_case(0.7, 1.5, 2, 0.05);
}

/* f(x) = ||x - c||^2 from x = 0 (f = 14.25) must fall below 1e-4 in 300 steps;
 * the settings were checked with torch.optim and the reference above. */
Test(optimizers, every_optimizer_minimizes_a_quadratic)
{
    const double c[4] = {1, -2, 0.5, 3};
    cr_assert_eq(d5_optimizer_count(), 8);
    for (int32_t k = 0; k < d5_optimizer_count(); k++) {
        const char *name = d5_optimizer_name_at(k);
        d5_optimizer_params p = d5_optimizer_default_params();
        p.lr = 0.1;
        if (!strcmp(name, "momentum") || !strcmp(name, "nesterov")) p.lr = 0.05;
        if (!strcmp(name, "adagrad")) p.lr = 1;
        if (!strcmp(name, "rmsprop")) p.lr = 0.02;
        if (!strcmp(name, "accelegrad")) {
            p.lr = 1;
            p.accelegrad_d = 2;
        }
        d5_optimizer *o = NULL;
        cr_assert_eq(d5_optimizer_create(name, &p, &o), D5_OK, "%s", d5_last_error());
        cr_assert_str_eq(d5_optimizer_name(o), name);
        float x[4] = {0}, g[4];
        cr_assert_eq(d5_optimizer_add_param(o, "x", x, 4, NULL), D5_OK);
        for (int t = 0; t < 300; t++) {
            cr_assert_eq(d5_optimizer_prepare(o), D5_OK);
            for (int i = 0; i < 4; i++) g[i] = (float)(2 * (x[i] - c[i]));
            cr_assert_eq(d5_optimizer_update(o, 0, g), D5_OK);
        }
        double f = 0;
        for (int i = 0; i < 4; i++) f += (x[i] - c[i]) * (x[i] - c[i]);
        cr_assert_lt(f, 1e-4, "%s: f = %g after 300 steps", name, f);
        d5_optimizer_free(o);
    }
}

Test(optimizers, set_lr_changes_the_next_step)
{
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create("sgd", NULL, &o), D5_OK);
    cr_assert_float_eq(d5_optimizer_get_params(o)->lr, 0.01, 1e-15);
    float x[2] = {1, 2};
    const float g[2] = {1, -1};
    cr_assert_eq(d5_optimizer_add_param(o, "x", x, 2, NULL), D5_OK);
    d5_optimizer_set_lr(o, 0.5);
    cr_assert_float_eq(d5_optimizer_get_params(o)->lr, 0.5, 1e-15);
    step_one(o, g);
    cr_assert_float_eq(x[0], 0.5f, 1e-7);
    cr_assert_float_eq(x[1], 2.5f, 1e-7);
    d5_optimizer_set_lr(o, -1);
    cr_assert_eq(d5_optimizer_prepare(o), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "learning rate"), "%s", d5_last_error());
    d5_optimizer_set_lr(o, NAN);
    cr_assert_eq(d5_optimizer_prepare(o), D5_ERR_INVALID);
    d5_optimizer_free(o);
}

/* A custom three-step optimizer: counts its calls and the steps it sees. */
static int64_t inputs, prepares, last_step;

static d5_status count_input(d5_optimizer *o, int64_t step)
{
    (void)o;
    inputs++;
    last_step = step;
    return D5_OK;
}

static d5_status count_prepare(d5_optimizer *o, int64_t step, float *param, float *state, int64_t n)
{
    (void)o;
    (void)param;
    (void)n;
    cr_assert_eq(step, last_step);
    state[0] += 1; /* counts the prepares of this parameter */
    prepares++;
    return D5_OK;
}

static d5_status sign_descent(d5_optimizer *o, int64_t step, float *param, const float *grad,
                              float *state, int64_t n)
{
    (void)state;
    cr_assert_eq(step, last_step);
    double lr = d5_optimizer_get_params(o)->lr;
    for (int64_t i = 0; i < n; i++) param[i] -= (float)(lr * ((grad[i] > 0) - (grad[i] < 0)));
    return D5_OK;
}

Test(optimizers, custom_three_step_optimizer)
{
    static const d5_optimizer_desc desc = {"signsgd", 2, count_input, count_prepare, sign_descent};
    d5_optimizer_params p = d5_optimizer_default_params();
    p.lr = 0.25;
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create_custom(&desc, &p, &o), D5_OK, "%s", d5_last_error());
    cr_assert_str_eq(d5_optimizer_name(o), "signsgd");
    float a[3] = {0, 0, 0}, b[1] = {1};
    const float ga[3] = {2, -3, 0}, gb[1] = {-0.1f};
    int32_t ia = -1, ib = -1;
    cr_assert_eq(d5_optimizer_add_param(o, "a", a, 3, &ia), D5_OK);
    cr_assert_eq(d5_optimizer_add_param(o, "b", b, 1, &ib), D5_OK);
    cr_assert_eq(ia, 0);
    cr_assert_eq(ib, 1);
    cr_assert_eq(d5_optimizer_param_count(o), 2);
    inputs = prepares = last_step = 0;
    for (int t = 0; t < 2; t++) {
        cr_assert_eq(d5_optimizer_prepare(o), D5_OK);
        /* Updated out of order, one at a time. */
        cr_assert_eq(d5_optimizer_update(o, 1, gb), D5_OK);
        cr_assert_eq(d5_optimizer_step_count(o), t);
        cr_assert_eq(d5_optimizer_update(o, 0, ga), D5_OK);
        cr_assert_eq(d5_optimizer_step_count(o), t + 1);
    }
    cr_assert_eq(inputs, 2);
    cr_assert_eq(last_step, 2);
    cr_assert_eq(prepares, 4);
    cr_assert_float_eq(d5_optimizer_state(o, 1)[0], 2.0f, 1e-7);
    cr_assert_float_eq(a[0], -0.5f, 1e-7);
    cr_assert_float_eq(a[1], 0.5f, 1e-7);
    cr_assert_float_eq(a[2], 0.0f, 1e-7);
    cr_assert_float_eq(b[0], 1.5f, 1e-7);
    cr_assert_null(d5_optimizer_state(o, 2));
    d5_optimizer_free(o);
}

/* ---- Schedules ------------------------------------------------------------------------ */

static void assert_lr(const d5_schedule *s, int64_t step, double want)
{
    double got = d5_schedule_lr(s, 0.1, step);
    cr_assert(fabs(got - want) <= 1e-12, "kind %d step %lld: lr %.15g, expected %.15g",
              (int)s->kind, (long long)step, got, want);
}

Test(schedules, constant_step_exponential)
{
    d5_schedule s = {.kind = D5_SCHEDULE_CONSTANT};
    cr_assert_eq(d5_schedule_check(&s), D5_OK);
    assert_lr(&s, 0, 0.1);
    assert_lr(&s, 1000, 0.1);
    s = (d5_schedule){.kind = D5_SCHEDULE_STEP, .gamma = 0.5, .step_size = 10};
    cr_assert_eq(d5_schedule_check(&s), D5_OK);
    assert_lr(&s, 0, 0.1);
    assert_lr(&s, 9, 0.1);
    assert_lr(&s, 10, 0.05);
    assert_lr(&s, 25, 0.025);
    s = (d5_schedule){.kind = D5_SCHEDULE_EXPONENTIAL, .gamma = 0.9};
    assert_lr(&s, 0, 0.1);
    assert_lr(&s, 3, 0.1 * 0.729);
}

Test(schedules, cosine)
{
    d5_schedule s = {.kind = D5_SCHEDULE_COSINE, .total = 100, .lr_min = 0.001};
    cr_assert_eq(d5_schedule_check(&s), D5_OK);
    assert_lr(&s, 0, 0.1);
    assert_lr(&s, 50, (0.1 + 0.001) / 2);
    /* cos(pi/4) = sqrt(2)/2 */
    assert_lr(&s, 25, 0.001 + 0.099 * (1 + sqrt(0.5)) / 2);
    assert_lr(&s, 100, 0.001);
    assert_lr(&s, 150, 0.001);
}

Test(schedules, linear_warmup)
{
    d5_schedule s = {.kind = D5_SCHEDULE_STEP, .gamma = 0.1, .step_size = 3, .warmup = 4};
    assert_lr(&s, 0, 0.025);
    assert_lr(&s, 1, 0.05);
    assert_lr(&s, 3, 0.1);
    /* The decay counts from the end of the warm-up. */
    assert_lr(&s, 4, 0.1);
    assert_lr(&s, 6, 0.1);
    assert_lr(&s, 7, 0.01);
    s = (d5_schedule){.kind = D5_SCHEDULE_COSINE, .total = 10, .warmup = 2};
    assert_lr(&s, 0, 0.05);
    assert_lr(&s, 7, 0.05);
    assert_lr(&s, 12, 0);
}

Test(schedules, bad_settings)
{
    d5_schedule s = {.kind = 7};
    cr_assert_eq(d5_schedule_check(&s), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "unknown kind 7"), "%s", d5_last_error());
    assert_lr(&s, 5, 0.1);
    s = (d5_schedule){.kind = D5_SCHEDULE_STEP, .gamma = 0.5, .step_size = 0};
    cr_assert_eq(d5_schedule_check(&s), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "step_size"), "%s", d5_last_error());
    assert_lr(&s, 5, 0.1);
    s = (d5_schedule){.kind = D5_SCHEDULE_EXPONENTIAL, .gamma = -1};
    cr_assert_eq(d5_schedule_check(&s), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "gamma"), "%s", d5_last_error());
    s = (d5_schedule){.kind = D5_SCHEDULE_COSINE, .total = 0};
    cr_assert_eq(d5_schedule_check(&s), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "total"), "%s", d5_last_error());
    s = (d5_schedule){.kind = D5_SCHEDULE_CONSTANT, .warmup = -2};
    cr_assert_eq(d5_schedule_check(&s), D5_ERR_INVALID);
    cr_assert_eq(d5_schedule_check(NULL), D5_ERR_INVALID);
    cr_assert_float_eq(d5_schedule_lr(NULL, 0.3, 9), 0.3, 1e-15);
}

/* ---- Distance ------------------------------------------------------------------------- */

Test(distance, l2_and_linf)
{
    const float a[4] = {1, 2, 3, -1}, b[4] = {1, 0, -1, -2};
    double l2 = -1, linf = -1;
    d5_param_distance(a, b, 4, &l2, &linf);
    cr_assert_float_eq(l2, sqrt(21.0), 1e-12);
    cr_assert_float_eq(linf, 4.0, 1e-12);
    d5_param_distance(a, a, 4, &l2, &linf);
    cr_assert_eq(l2, 0.0);
    cr_assert_eq(linf, 0.0);
    d5_param_distance(a, b, 0, &l2, NULL);
    cr_assert_eq(l2, 0.0);
    const float c[3] = {0, NAN, 0}, d[3] = {5, 0, 0};
    d5_param_distance(c, d, 3, &l2, &linf);
    cr_assert(isnan(l2) && isnan(linf), "a NaN difference gave %g and %g", l2, linf);
}

/* ---- Errors --------------------------------------------------------------------------- */

Test(optimizer_errors, unknown_name_lists_the_optimizers)
{
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create("lion", NULL, &o), D5_ERR_UNSUPPORTED);
    cr_assert_null(o);
    const char *msg = d5_last_error();
    cr_assert(strstr(msg, "'lion'"), "%s", msg);
    for (int32_t i = 0; i < d5_optimizer_count(); i++)
        cr_assert(strstr(msg, d5_optimizer_name_at(i)), "%s lacks %s", msg,
                  d5_optimizer_name_at(i));
    cr_assert_null(d5_optimizer_name_at(-1));
    cr_assert_null(d5_optimizer_name_at(d5_optimizer_count()));
}

/* The built-in tables by name, for wrappers; the user pointer. */
Test(optimizer_errors, builtin_tables_by_name)
{
    const d5_optimizer_desc *d = NULL;
    for (int32_t i = 0; i < d5_optimizer_count(); i++) {
        cr_assert_eq(d5_optimizer_builtin(d5_optimizer_name_at(i), &d), D5_OK);
        cr_assert_str_eq(d->name, d5_optimizer_name_at(i));
        cr_assert_not_null(d->update_rule);
    }
    const d5_optimizer_desc *untouched = d;
    cr_assert_eq(d5_optimizer_builtin("lion", &d), D5_ERR_UNSUPPORTED);
    cr_assert_eq(d, untouched, "*out is left alone on error");
    cr_assert(strstr(d5_last_error(), "'lion'") && strstr(d5_last_error(), "accelegrad"), "%s",
              d5_last_error());
    cr_assert_eq(d5_optimizer_builtin(NULL, &d), D5_ERR_INVALID);
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create("adam", NULL, &o), D5_OK);
    int owner;
    cr_assert_null(d5_optimizer_user(o));
    d5_optimizer_set_user(o, &owner);
    cr_assert_eq(d5_optimizer_user(o), &owner);
    cr_assert_null(d5_optimizer_user(NULL));
    d5_optimizer_free(o);
}

Test(optimizer_errors, hyperparameters_out_of_range)
{
    d5_optimizer *o = NULL;
    d5_optimizer_params p = d5_optimizer_default_params();
    p.lr = -0.1;
    cr_assert_eq(d5_optimizer_create("sgd", &p, &o), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "lr = -0.1"), "%s", d5_last_error());
    p.lr = NAN;
    cr_assert_eq(d5_optimizer_create("adam", &p, &o), D5_ERR_INVALID);
    p = d5_optimizer_default_params();
    p.weight_decay = -1;
    cr_assert_eq(d5_optimizer_create("momentum", &p, &o), D5_ERR_INVALID);
    p = d5_optimizer_default_params();
    p.beta2 = 1;
    cr_assert_eq(d5_optimizer_create("adamw", &p, &o), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "adamw: beta2"), "%s", d5_last_error());
    /* sgd does not read beta2. */
    cr_assert_eq(d5_optimizer_create("sgd", &p, &o), D5_OK);
    d5_optimizer_free(o);
    o = NULL;
    p = d5_optimizer_default_params();
    p.alpha = 1.5;
    cr_assert_eq(d5_optimizer_create("rmsprop", &p, &o), D5_ERR_INVALID);
    p = d5_optimizer_default_params();
    p.initial_accumulator = -1;
    cr_assert_eq(d5_optimizer_create("adagrad", &p, &o), D5_ERR_INVALID);
    p = d5_optimizer_default_params();
    p.accelegrad_d = 0;
    cr_assert_eq(d5_optimizer_create("accelegrad", &p, &o), D5_ERR_INVALID);
    p = d5_optimizer_default_params();
    p.momentum = -0.5;
    cr_assert_eq(d5_optimizer_create("nesterov", &p, &o), D5_ERR_INVALID);
    cr_assert_null(o);
    cr_assert_eq(d5_optimizer_create(NULL, NULL, &o), D5_ERR_INVALID);
    cr_assert_eq(d5_optimizer_create("sgd", NULL, NULL), D5_ERR_INVALID);
}

Test(optimizer_errors, calls_out_of_order)
{
    d5_optimizer *o = NULL;
    cr_assert_eq(d5_optimizer_create("adam", NULL, &o), D5_OK);
    float x[2] = {1, 2}, y[1] = {3};
    const float g[2] = {0.5f, 0.5f};
    const float *grads[2] = {g, g};
    cr_assert_eq(d5_optimizer_add_param(o, "x", x, 2, NULL), D5_OK);
    cr_assert_eq(d5_optimizer_add_param(o, "x", y, 1, NULL), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'x' is already registered"), "%s", d5_last_error());
    cr_assert_eq(d5_optimizer_add_param(o, "y", y, 0, NULL), D5_ERR_INVALID);
    cr_assert_eq(d5_optimizer_add_param(o, "y", y, 1, NULL), D5_OK);
    cr_assert_eq(d5_optimizer_update(o, 0, g), D5_ERR_STATE);
    cr_assert(strstr(d5_last_error(), "before d5_optimizer_prepare"), "%s", d5_last_error());
    cr_assert_eq(d5_optimizer_update_all(o, grads), D5_ERR_STATE);
    cr_assert_eq(d5_optimizer_prepare(o), D5_OK);
    cr_assert_eq(d5_optimizer_prepare(o), D5_ERR_STATE);
    cr_assert_eq(d5_optimizer_update(o, 2, g), D5_ERR_RANGE);
    cr_assert_eq(d5_optimizer_update(o, -1, g), D5_ERR_RANGE);
    cr_assert_eq(d5_optimizer_update(o, 0, NULL), D5_ERR_INVALID);
    cr_assert_eq(d5_optimizer_update(o, 0, g), D5_OK);
    cr_assert_eq(d5_optimizer_update(o, 0, g), D5_ERR_STATE);
    cr_assert(strstr(d5_last_error(), "'x' was already updated in step 1"), "%s", d5_last_error());
    cr_assert_eq(d5_optimizer_add_param(o, "z", y, 1, NULL), D5_ERR_STATE);
    /* update_all finishes the step with the parameters still open. */
    cr_assert_eq(d5_optimizer_update_all(o, grads), D5_OK);
    cr_assert_eq(d5_optimizer_step_count(o), 1);
    cr_assert_eq(d5_optimizer_add_param(o, "z", y, 1, NULL), D5_ERR_STATE);
    const float *missing[2] = {g, NULL};
    cr_assert_eq(d5_optimizer_prepare(o), D5_OK);
    cr_assert_eq(d5_optimizer_update_all(o, missing), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'y'"), "%s", d5_last_error());
    d5_optimizer_free(o);
    d5_optimizer_free(NULL);
    cr_assert_eq(d5_optimizer_prepare(NULL), D5_ERR_INVALID);
}

Test(optimizer_errors, bad_custom_table)
{
    d5_optimizer *o = NULL;
    d5_optimizer_desc desc = {"broken", 1, NULL, NULL, NULL};
    cr_assert_eq(d5_optimizer_create_custom(&desc, NULL, &o), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "'broken'"), "%s", d5_last_error());
    desc.update_rule = sign_descent;
    desc.state_per_elem = -1;
    cr_assert_eq(d5_optimizer_create_custom(&desc, NULL, &o), D5_ERR_INVALID);
    cr_assert_null(o);
}

Test(optimizer_errors, out_of_memory_leaks_nothing)
{
    int ok = 0;
    for (long budget = 0; budget < 12 && !ok; budget++) {
        failing_alloc_install(budget);
        d5_optimizer *o = NULL;
        float x[4] = {0}, y[3] = {0};
        d5_status s = d5_optimizer_create("adam", NULL, &o);
        if (s == D5_OK) s = d5_optimizer_add_param(o, "x", x, 4, NULL);
        if (s == D5_OK) s = d5_optimizer_add_param(o, "y", y, 3, NULL);
        cr_assert(s == D5_OK || s == D5_ERR_NOMEM, "budget %ld: %s", budget, d5_status_name(s));
        ok = s == D5_OK;
        d5_optimizer_free(o);
        cr_assert_eq(failing_alloc_live(), 0, "budget %ld leaks %ld blocks", budget,
                     failing_alloc_live());
        failing_alloc_remove();
    }
    cr_assert(ok, "never succeeded within the budgets tried");
}
