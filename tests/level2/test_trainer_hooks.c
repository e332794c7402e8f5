/* The trainer object: hooks at every point of a step, a failing hook's
 * status and name, samplers given by the caller, a wrapper optimizer around
 * a built-in one, the parameter table, and the errors of its setters. */
#include "support.h"
#include "trainer_support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

static d5_trainer *trainer(d5_network *net, int64_t max_batches)
{
    d5_trainer_params p = d5_trainer_default_params();
    p.max_batches = max_batches;
    d5_trainer *t = NULL;
    cr_assert_eq(d5_trainer_create(net, &p, &t), D5_OK, "%s", d5_last_error());
    return t;
}

/* d5_trainer_run(t, train, test, seed), asserting success. Free the result
 * with d5_train_result_free. */
static d5_train_result run_ok(d5_trainer *t, d5_dataset *train, d5_dataset *test, uint64_t seed)
{
    d5_train_result r;
    cr_assert_eq(d5_trainer_run(t, train, test, seed, &r), D5_OK, "%s", d5_last_error());
    return r;
}

/* Frees a test's trainer, sampler, optimizer, training set and network, in
 * that order (NULL for those it has not). */
static void free_setup(d5_trainer *t, d5_sampler *smp, d5_optimizer *opt, d5_dataset *train,
                       d5_network *net)
{
    d5_trainer_free(t);
    d5_sampler_free(smp);
    d5_optimizer_free(opt);
    d5_dataset_free(train);
    d5_network_free(net);
}

/* What the hooks saw. */
typedef struct seen {
    int first, backward, before, after, steps, epochs;
    int64_t last_step;
    int bad_arrays; /* after_backward got arrays other than the trainer's */
    int64_t fail_at;
} seen;

static d5_status first_hook(d5_trainer *t, void *user)
{
    seen *s = user;
    s->first++;
    return d5_trainer_step(t) == 0 ? D5_OK : d5_error(D5_ERR_STATE, "not before the first step");
}

static d5_status zero_gradients(d5_trainer *t, void *user, const d5_step_grads *g)
{
    seen *s = user;
    s->backward++;
    s->bad_arrays += g->step != s->last_step + 1 || g->n != d5_trainer_param_count(t);
    for (int32_t i = 0; i < g->n; i++) {
        s->bad_arrays += g->grads[i] != d5_trainer_gradient(t, i) ||
                         g->params[i] != d5_trainer_param(t, i) ||
                         g->sizes[i] != d5_trainer_param_size(t, i);
        for (int64_t k = 0; k < g->sizes[i]; k++) g->grads[i][k] *= 0.0f;
    }
    return D5_OK;
}

static d5_status before_update(d5_trainer *t, void *user, int64_t step)
{
    (void)t;
    seen *s = user;
    s->before += step == s->last_step + 1;
    return D5_OK;
}

static d5_status after_update(d5_trainer *t, void *user, int64_t step)
{
    (void)t;
    seen *s = user;
    s->after += step == s->last_step + 1;
    return D5_OK;
}

static d5_status after_step(d5_trainer *t, void *user, int64_t step, double loss)
{
    (void)t;
    seen *s = user;
    s->steps += isfinite(loss) && loss > 0;
    s->last_step = step;
    return D5_OK;
}

static d5_status end_of_epoch(d5_trainer *t, void *user, int32_t epoch, const d5_epoch_stats *st)
{
    (void)t;
    seen *s = user;
    s->epochs += epoch == st->epoch && st->batches > 0;
    return D5_OK;
}

/* Gradients scaled by 0 in after_backward reach the optimizer as they are:
 * with momentum SGD the parameters do not move. */
Test(trainer_hooks, zero_gradients_leave_the_parameters_unchanged)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(256, 1);
    d5_optimizer *opt = optimizer_of("momentum", 0.1);
    d5_trainer *t = trainer(net, 5);
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK, "%s", d5_last_error());
    int32_t n = d5_trainer_param_count(t);
    cr_assert_eq(n, d5_network_param_count(net));
    float *before[16];
    cr_assert(n > 0 && n <= 16);
    for (int32_t i = 0; i < n; i++) {
        int64_t size = d5_trainer_param_size(t, i);
        cr_assert_eq(d5_trainer_param(t, i),
                     d5_network_initializer_data(net, d5_trainer_param_name(t, i)),
                     "the network's own weights");
        before[i] = malloc((size_t)size * sizeof(float));
        memcpy(before[i], d5_trainer_param(t, i), (size_t)size * sizeof(float));
    }
    seen s = {0};
    d5_trainer_hooks h = {&s,           first_hook, zero_gradients, before_update,
                          after_update, after_step, end_of_epoch,   NULL};
    cr_assert_eq(d5_trainer_add_hooks(t, "zero", &h), D5_OK);
    d5_train_result r = run_ok(t, train, NULL, 3);
    cr_assert_eq(r.nlosses, 5);
    cr_assert_eq(s.first, 1);
    cr_assert_eq(s.backward, 5, "after_backward ran %d times", s.backward);
    cr_assert_eq(s.before, 5);
    cr_assert_eq(s.after, 5);
    cr_assert_eq(s.steps, 5);
    cr_assert_eq(s.epochs, 1);
    cr_assert_eq(s.bad_arrays, 0);
    cr_assert_eq(d5_trainer_step(t), 5);
    cr_assert_eq(d5_optimizer_step_count(opt), 5);
    for (int32_t i = 0; i < n; i++) {
        cr_assert_eq(memcmp(before[i], d5_trainer_param(t, i),
                            (size_t)d5_trainer_param_size(t, i) * sizeof(float)),
                     0, "parameter '%s' moved", d5_trainer_param_name(t, i));
        free(before[i]);
    }
    d5_train_result_free(&r);
    free_setup(t, NULL, opt, train, net);
}

static d5_status set_weights(d5_trainer *t, void *user)
{
    (void)user;
    for (int32_t i = 0; i < d5_trainer_param_count(t); i++)
        for (int64_t k = 0; k < d5_trainer_param_size(t, i); k++) d5_trainer_param(t, i)[k] = 0.25f;
    return D5_OK;
}

/* before_first_step may overwrite the parameters (a broadcast from rank 0):
 * with zero gradients they keep the values it wrote. */
Test(trainer_hooks, before_first_step_overwrites_the_parameters)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(64, 1);
    d5_optimizer *opt = optimizer_of("sgd", 0.1);
    d5_trainer *t = trainer(net, 2);
    seen s = {0};
    d5_trainer_hooks broadcast = {.before_first_step = set_weights};
    d5_trainer_hooks zero = {.user = &s, .after_backward = zero_gradients};
    cr_assert_eq(d5_trainer_add_hooks(t, "broadcast", &broadcast), D5_OK);
    cr_assert_eq(d5_trainer_add_hooks(t, "zero", &zero), D5_OK);
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK);
    d5_train_result r = run_ok(t, train, NULL, 1);
    cr_assert_eq(s.backward, 2);
    const float *w = d5_network_initializer_data(net, "fc1.weight");
    cr_assert_not_null(w);
    cr_assert_eq(w[0], 0.25f);
    cr_assert_eq(w[100], 0.25f);
    d5_train_result_free(&r);
    free_setup(t, NULL, opt, train, net);
}

static d5_status fail_backward(d5_trainer *t, void *user, const d5_step_grads *g)
{
    (void)t;
    seen *s = user;
    if (g->step == s->fail_at) return d5_error(D5_ERR_BACKEND, "peer 3 is gone");
    return D5_OK;
}

static d5_status fail_epoch(d5_trainer *t, void *user, int32_t epoch, const d5_epoch_stats *st)
{
    (void)t, (void)user, (void)epoch, (void)st;
    return D5_ERR_IO; /* without a message of its own */
}

/* A failing hook stops training with its own status, and the error names the
 * set, the hook and the step, then what the hook said. */
Test(trainer_hooks, a_failing_hook_stops_training_with_its_status_and_name)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(256, 1);
    d5_optimizer *opt = optimizer_of("sgd", 0.01);
    d5_trainer *t = trainer(net, 0);
    seen s = {0};
    s.fail_at = 3;
    d5_trainer_hooks count = {.user = &s, .after_step = after_step};
    d5_trainer_hooks fail = {.user = &s, .after_backward = fail_backward};
    cr_assert_eq(d5_trainer_add_hooks(t, "counter", &count), D5_OK);
    cr_assert_eq(d5_trainer_add_hooks(t, "allreduce", &fail), D5_OK);
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK);
    d5_train_result r;
    cr_assert_eq(d5_trainer_run(t, train, NULL, 1, &r), D5_ERR_BACKEND, "%s", d5_last_error());
    const char *e = d5_last_error();
    cr_assert(strstr(e, "after_backward") && strstr(e, "'allreduce'") && strstr(e, "step 3") &&
                  strstr(e, "peer 3 is gone"),
              "%s", e);
    cr_assert_eq(s.steps, 2, "training went on after the failure: %d steps", s.steps);
    cr_assert_eq(d5_trainer_step(t), 2);
    cr_assert_null(r.losses, "the result is freed on error");
    cr_assert_eq(d5_trainer_run(t, train, NULL, 1, &r), D5_ERR_STATE, "a trainer runs once");
    d5_trainer_free(t);
    d5_optimizer_free(opt);

    /* end_of_epoch, with a status and no message. */
    opt = optimizer_of("sgd", 0.01);
    t = trainer(net, 0);
    d5_trainer_hooks epoch = {.end_of_epoch = fail_epoch};
    cr_assert_eq(d5_trainer_add_hooks(t, "logger", &epoch), D5_OK);
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK);
    cr_assert_eq(d5_trainer_run(t, train, NULL, 1, &r), D5_ERR_IO);
    e = d5_last_error();
    cr_assert(strstr(e, "end_of_epoch") && strstr(e, "'logger'") && strstr(e, "epoch 1") &&
                  strstr(e, "D5_ERR_IO"),
              "%s", e);
    cr_assert_eq(d5_trainer_step(t), 256 / 16, "the whole epoch ran first");
    free_setup(t, NULL, opt, train, net);
}

/* The losses of `steps` steps from the same weights with a sampler of `kind`
 * (or the default one for kind < 0), one thread. */
static void losses(int32_t kind, uint64_t seed, int64_t steps, float *out)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(256, 4);
    d5_optimizer *opt = optimizer_of("momentum", 0.02);
    d5_trainer *t = trainer(net, steps);
    d5_sampler *smp = NULL;
    if (kind >= 0) {
        d5_sampler_params sp = d5_sampler_default_params();
        sp.kind = kind;
        sp.batch = 16;
        sp.seed = seed;
        sp.drop_last = 1;
        cr_assert_eq(d5_sampler_create(train, &sp, &smp), D5_OK, "%s", d5_last_error());
        cr_assert_eq(d5_trainer_set_sampler(t, smp), D5_OK, "%s", d5_last_error());
    }
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK);
    d5_train_result r;
    cr_assert_eq(d5_trainer_run(t, kind >= 0 ? NULL : train, NULL, seed, &r), D5_OK, "%s",
                 d5_last_error());
    cr_assert_eq(r.nlosses, steps);
    memcpy(out, r.losses, (size_t)steps * sizeof *out);
    d5_train_result_free(&r);
    free_setup(t, smp, opt, train, net);
}

/* An ordered sampler gives the same loss curve twice, and another one than
 * a shuffled sampler with the same seed; a shuffled sampler set by the
 * caller gives the default sampler's curve. */
Test(trainer_hooks, samplers_set_by_the_caller)
{
    cr_assert_eq(d5_threads_set(1), D5_OK);
    enum { STEPS = 12 };
    float ordered[2][STEPS], shuffled[STEPS], fallback[STEPS];
    losses(D5_SAMPLER_ORDERED, 5, STEPS, ordered[0]);
    losses(D5_SAMPLER_ORDERED, 5, STEPS, ordered[1]);
    losses(D5_SAMPLER_SHUFFLED, 5, STEPS, shuffled);
    losses(-1, 5, STEPS, fallback);
    cr_assert_eq(memcmp(ordered[0], ordered[1], sizeof ordered[0]), 0, "ordered is deterministic");
    cr_assert_neq(memcmp(ordered[0], shuffled, sizeof shuffled), 0,
                  "ordered and shuffled draw different batches");
    cr_assert_neq(ordered[0][0], shuffled[0]);
    cr_assert_eq(memcmp(shuffled, fallback, sizeof shuffled), 0,
                 "the default sampler is the shuffled one");
    cr_assert_eq(d5_threads_set(0), D5_OK);
}

/* The test loss of an untrained mlp(16) (gradients zeroed by a hook) after one
 * step on a sampler that normalizes with mean m and std sd (sd 0: none). */
static double untrained_test_loss(float m, float sd)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(64, 1), *test = synthetic(64, 2);
    d5_optimizer *opt = optimizer_of("sgd", 0.1);
    d5_trainer *t = trainer(net, 1);
    d5_sampler_params sp = d5_sampler_default_params();
    sp.batch = 16;
    sp.augment.normalize = sd != 0;
    sp.augment.mean[0] = m;
    sp.augment.std[0] = sd != 0 ? sd : 1;
    d5_sampler *smp = NULL;
    seen s = {0};
    d5_trainer_hooks zero = {.user = &s, .after_backward = zero_gradients};
    cr_assert_eq(d5_sampler_create(train, &sp, &smp), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_trainer_set_sampler(t, smp), D5_OK);
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK);
    cr_assert_eq(d5_trainer_add_hooks(t, "zero", &zero), D5_OK);
    d5_train_result r = run_ok(t, NULL, test, 0);
    cr_assert_eq(r.nepochs, 1);
    double loss = r.epochs[0].test_loss;
    d5_train_result_free(&r);
    free_setup(t, smp, opt, train, net);
    d5_dataset_free(test);
    return loss;
}

/* Test batches are normalized as the training sampler normalizes: the same
 * untrained model scores the test set differently with and without it. */
Test(trainer_hooks, evaluation_normalizes_like_the_training_sampler)
{
    /* A fixed team: with the automatic one, a busy machine changes the team
     * between runs, and with it the order of sums. */
    cr_assert_eq(d5_threads_set(1), D5_OK);
    double plain = untrained_test_loss(0, 0), identity = untrained_test_loss(0, 1);
    double shifted = untrained_test_loss(3, 0.25f);
    cr_assert(isfinite(plain) && isfinite(shifted));
    cr_assert_eq(plain, identity, "normalizing by mean 0 and std 1 changes nothing");
    cr_assert_neq(plain, shifted, "the test set was not normalized");
    cr_assert_eq(d5_threads_set(0), D5_OK);
}

/* A wrapper: the three steps of a built-in optimizer called from another
 * table, reaching its own state through the optimizer's user pointer. */
typedef struct wrapper {
    const d5_optimizer_desc *inner;
    int64_t updates;
} wrapper;

static d5_status wrap_new_input(d5_optimizer *o, int64_t step)
{
    wrapper *w = d5_optimizer_user(o);
    return w->inner->new_input ? w->inner->new_input(o, step) : D5_OK;
}

static d5_status wrap_prepare(d5_optimizer *o, int64_t step, float *param, float *state, int64_t n)
{
    wrapper *w = d5_optimizer_user(o);
    return w->inner->prepare_param ? w->inner->prepare_param(o, step, param, state, n) : D5_OK;
}

static d5_status wrap_update(d5_optimizer *o, int64_t step, float *param, const float *grad,
                             float *state, int64_t n)
{
    wrapper *w = d5_optimizer_user(o);
    w->updates++;
    return w->inner->update_rule(o, step, param, grad, state, n);
}

/* The parameters of mlp(16) after 8 steps of `opt`, one thread. */
static float *train_params(d5_optimizer *opt, int64_t *count)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(256, 2);
    d5_trainer *t = trainer(net, 8);
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK, "%s", d5_last_error());
    d5_train_result r = run_ok(t, train, NULL, 9);
    int64_t total = 0;
    for (int32_t i = 0; i < d5_trainer_param_count(t); i++) total += d5_trainer_param_size(t, i);
    float *all = malloc((size_t)total * sizeof *all), *dst = all;
    for (int32_t i = 0; i < d5_trainer_param_count(t); i++) {
        memcpy(dst, d5_trainer_param(t, i), (size_t)d5_trainer_param_size(t, i) * sizeof *dst);
        dst += d5_trainer_param_size(t, i);
    }
    *count = total;
    d5_train_result_free(&r);
    /* The optimizer is the caller's. */
    free_setup(t, NULL, NULL, train, net);
    return all;
}

Test(trainer_hooks, a_wrapper_around_builtin_sgd_reproduces_it_bit_for_bit)
{
    cr_assert_eq(d5_threads_set(1), D5_OK);
    wrapper w = {NULL, 0};
    cr_assert_eq(d5_optimizer_builtin("sgd", &w.inner), D5_OK, "%s", d5_last_error());
    cr_assert_str_eq(w.inner->name, "sgd");
    d5_optimizer_desc desc = {"wrapped-sgd", w.inner->state_per_elem, wrap_new_input, wrap_prepare,
                              wrap_update};
    d5_optimizer_params p = d5_optimizer_default_params();
    p.lr = 0.05;
    p.weight_decay = 1e-3;
    d5_optimizer *plain = NULL, *wrapped = NULL;
    cr_assert_eq(d5_optimizer_create("sgd", &p, &plain), D5_OK);
    cr_assert_eq(d5_optimizer_create_custom(&desc, &p, &wrapped), D5_OK, "%s", d5_last_error());
    cr_assert_null(d5_optimizer_user(wrapped));
    d5_optimizer_set_user(wrapped, &w);
    cr_assert_eq(d5_optimizer_user(wrapped), &w);
    int64_t n0, n1;
    float *a = train_params(plain, &n0), *b = train_params(wrapped, &n1);
    cr_assert_eq(n0, n1);
    cr_assert_eq(w.updates, 8 * d5_optimizer_param_count(wrapped), "the wrapper ran %lld updates",
                 (long long)w.updates);
    cr_assert_eq(memcmp(a, b, (size_t)n0 * sizeof *a), 0, "wrapped sgd differs from sgd");
    free(a);
    free(b);
    d5_optimizer_free(plain);
    d5_optimizer_free(wrapped);
    cr_assert_eq(d5_threads_set(0), D5_OK);
}

Test(trainer_hooks, setters_and_runs_refuse_what_they_cannot_use)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(64, 1), *other = synthetic(64, 2);
    d5_tensor_desc wide;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, 3, (int64_t[]){3, 32, 32}, &wide), D5_OK);
    d5_dataset *cifar_like = NULL;
    cr_assert_eq(d5_dataset_synthetic(&wide, 64, 10, 1, &cifar_like), D5_OK);
    d5_trainer *t = trainer(net, 1);
    cr_assert_eq(d5_trainer_batch(t), 16);
    cr_assert_null(d5_trainer_param(t, -1));
    cr_assert_null(d5_trainer_param_name(t, d5_trainer_param_count(t)));
    cr_assert_eq(d5_trainer_param_size(t, 99), 0);
    d5_train_result r;
    cr_assert_eq(d5_trainer_run(t, train, NULL, 1, &r), D5_ERR_STATE, "no optimizer");
    cr_assert(strstr(d5_last_error(), "d5_trainer_set_optimizer"), "%s", d5_last_error());

    d5_sampler_params sp = d5_sampler_default_params();
    sp.batch = 8;
    d5_sampler *small = NULL, *wrong = NULL, *ok = NULL;
    cr_assert_eq(d5_sampler_create(train, &sp, &small), D5_OK);
    cr_assert_eq(d5_trainer_set_sampler(t, small), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "batches of 8"), "%s", d5_last_error());
    sp.batch = 16;
    cr_assert_eq(d5_sampler_create(cifar_like, &sp, &wrong), D5_OK);
    cr_assert_eq(d5_trainer_set_sampler(t, wrong), D5_ERR_SHAPE);
    cr_assert(strstr(d5_last_error(), "float32[3,32,32]"), "%s", d5_last_error());
    cr_assert_eq(d5_sampler_create(train, &sp, &ok), D5_OK);
    cr_assert_eq(d5_trainer_set_sampler(t, ok), D5_OK);

    d5_optimizer *used = optimizer_of("sgd", 0.1), *fresh = optimizer_of("sgd", 0.1);
    float w = 0;
    cr_assert_eq(d5_optimizer_add_param(used, "w", &w, 1, NULL), D5_OK);
    cr_assert_eq(d5_trainer_set_optimizer(t, used), D5_ERR_STATE);
    cr_assert_eq(d5_trainer_set_optimizer(t, fresh), D5_OK);
    cr_assert_eq(d5_trainer_optimizer(t), fresh);
    cr_assert_eq(d5_trainer_run(t, other, NULL, 1, &r), D5_ERR_INVALID, "not the sampler's set");
    cr_assert_eq(d5_trainer_add_hooks(t, NULL, &(d5_trainer_hooks){0}), D5_ERR_INVALID);
    cr_assert_eq(d5_trainer_run(t, train, NULL, 1, &r), D5_OK, "%s", d5_last_error());
    cr_assert_eq(r.nlosses, 1);
    d5_train_result_free(&r);
    d5_trainer_free(t);
    d5_trainer_free(NULL);

    d5_trainer_params bad = d5_trainer_default_params();
    bad.epochs = 0;
    d5_trainer *none = NULL;
    cr_assert_eq(d5_trainer_create(net, &bad, &none), D5_ERR_INVALID);
    cr_assert_null(none);
    bad = d5_trainer_default_params();
    bad.schedule.kind = D5_SCHEDULE_STEP; /* step_size 0 */
    cr_assert_eq(d5_trainer_create(net, &bad, &none), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "step_size"), "%s", d5_last_error());

    d5_sampler_free(small);
    d5_sampler_free(wrong);
    d5_sampler_free(ok);
    d5_optimizer_free(used);
    d5_optimizer_free(fresh);
    d5_dataset_free(train);
    d5_dataset_free(other);
    d5_dataset_free(cifar_like);
    d5_network_free(net);
}

/* Every allocation of a trainer's life may fail: the error is D5_ERR_NOMEM
 * and nothing leaks. */
Test(trainer_hooks, out_of_memory_leaks_nothing)
{
    d5_network *net = mlp(4);
    d5_dataset *train = synthetic(16, 1);
    seen s = {0};
    d5_trainer_hooks h = {.user = &s, .after_step = after_step};
    int ok = 0;
    long budget = 0;
    for (; budget < 20000 && !ok; budget++) {
        failing_alloc_install(budget);
        d5_trainer_params p = d5_trainer_default_params();
        p.max_batches = 2;
        p.backend = "ref";
        d5_optimizer *opt = NULL;
        d5_trainer *t = NULL;
        d5_train_result r;
        d5_status st = d5_optimizer_create("momentum", NULL, &opt);
        if (st == D5_OK) st = d5_trainer_create(net, &p, &t);
        if (st == D5_OK) st = d5_trainer_add_hooks(t, "count", &h);
        if (st == D5_OK) st = d5_trainer_set_optimizer(t, opt);
        if (st == D5_OK) st = d5_trainer_run(t, train, NULL, 1, &r);
        cr_assert(st == D5_OK || st == D5_ERR_NOMEM, "budget %ld: %s: %s", budget,
                  d5_status_name(st), d5_last_error());
        ok = st == D5_OK;
        if (ok) d5_train_result_free(&r);
        d5_trainer_free(t);
        d5_optimizer_free(opt);
        failing_alloc_remove();
        cr_assert_eq(failing_alloc_live(), 0, "budget %ld leaks %ld blocks", budget,
                     failing_alloc_live());
    }
    cr_assert(ok, "never succeeded within the budgets tried");
    cr_log_info("a trainer's run took %ld allocations", budget - 1);
    d5_dataset_free(train);
    d5_network_free(net);
}

/* gradient_ready: each parameter once per step, the last layer's first and
 * the first layer's last, and each gradient already final when announced
 * (the copy taken then equals what after_backward sees). */
typedef struct ready_seen {
    int32_t n, calls, order_ok, bad;
    int32_t first, last;
    float *copy[16];
} ready_seen;

static d5_status on_ready(d5_trainer *t, void *user, int64_t step, int32_t param)
{
    ready_seen *r = user;
    r->bad += step != d5_trainer_step(t) + 1 || param < 0 || param >= r->n;
    if (r->calls % r->n == 0) r->first = param;
    r->last = param;
    r->calls++;
    memcpy(r->copy[param], d5_trainer_gradient(t, param),
           (size_t)d5_trainer_param_size(t, param) * sizeof(float));
    return D5_OK;
}

static d5_status check_ready(d5_trainer *t, void *user, const d5_step_grads *g)
{
    (void)t;
    ready_seen *r = user;
    r->bad += r->calls % r->n != 0;
    for (int32_t i = 0; i < g->n; i++)
        r->bad += memcmp(r->copy[i], g->grads[i], (size_t)g->sizes[i] * sizeof(float)) != 0;
    return D5_OK;
}

Test(trainer_hooks, gradient_ready_announces_final_gradients_layers_backwards)
{
    d5_network *net = model_of("lenet", 8, 3);
    d5_dataset *ds = synthetic(64, 5);
    d5_optimizer *o = optimizer_of("momentum", 0.01);
    d5_trainer *t = trainer(net, 4);
    ready_seen r;
    memset(&r, 0, sizeof r);
    r.n = d5_trainer_param_count(t);
    cr_assert(r.n > 2 && r.n <= 16, "%d parameters", r.n);
    for (int32_t i = 0; i < r.n; i++)
        r.copy[i] = malloc((size_t)d5_trainer_param_size(t, i) * sizeof(float));
    d5_trainer_hooks h = {.user = &r, .gradient_ready = on_ready, .after_backward = check_ready};
    cr_assert_eq(d5_trainer_add_hooks(t, "ready", &h), D5_OK);
    cr_assert_eq(d5_trainer_set_optimizer(t, o), D5_OK);
    d5_train_result res;
    cr_assert_eq(d5_trainer_run(t, ds, NULL, 1, &res), D5_OK, "%s", d5_last_error());
    cr_expect_eq(r.calls, 4 * r.n, "%d announcements for %d parameters and 4 steps", r.calls, r.n);
    cr_expect_eq(r.bad, 0, "%d announcements late, early or out of range", r.bad);
    /* Parameters are in graph order: the first belongs to the first layer. */
    const char *first = d5_trainer_param_name(t, r.first), *last = d5_trainer_param_name(t, r.last);
    cr_expect(r.first >= r.n - 2, "first announced: %s", first);
    cr_expect(r.last <= 1, "last announced: %s", last);
    d5_train_result_free(&res);
    for (int32_t i = 0; i < r.n; i++) free(r.copy[i]);
    d5_trainer_free(t);
    d5_optimizer_free(o);
    d5_dataset_free(ds);
    d5_network_free(net);
}
