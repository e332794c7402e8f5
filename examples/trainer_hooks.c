/* Trains a small MLP on synthetic data through a d5_trainer with two sets of
 * hooks: one clips the gradients to a global l2 norm after the backward pass
 * (where a distributed scheme would allreduce them), the other prints the
 * loss every 10 steps and the test accuracy of every epoch.
 *
 *   trainer_hooks [STEPS] [MAX_NORM]      (defaults: 40 1.0)
 */
#include <d5/d5.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct clip {
    double max_norm;
    int64_t clipped; /* steps whose gradients were scaled down */
} clip;

/* Scales all gradients by max_norm / norm when their global l2 norm exceeds
 * max_norm, in place: the optimizer sees the clipped gradients. */
static d5_status clip_gradients(d5_trainer *t, void *user, const d5_step_grads *g)
{
    (void)t;
    clip *c = user;
    double sq = 0;
    for (int32_t i = 0; i < g->n; i++)
        for (int64_t k = 0; k < g->sizes[i]; k++) sq += (double)g->grads[i][k] * g->grads[i][k];
    double norm = sqrt(sq);
    if (!isfinite(norm)) return d5_error(D5_ERR_NUMERIC, "gradient norm %g", norm);
    if (norm <= c->max_norm) return D5_OK;
    float scale = (float)(c->max_norm / norm);
    for (int32_t i = 0; i < g->n; i++)
        for (int64_t k = 0; k < g->sizes[i]; k++) g->grads[i][k] *= scale;
    c->clipped++;
    return D5_OK;
}

static d5_status print_loss(d5_trainer *t, void *user, int64_t step, double loss)
{
    (void)t, (void)user;
    if (step % 10 == 0) printf("step %3lld  loss %.4f\n", (long long)step, loss);
    return D5_OK;
}

static d5_status print_epoch(d5_trainer *t, void *user, int32_t epoch, const d5_epoch_stats *st)
{
    (void)t, (void)user;
    printf("epoch %d: train loss %.4f, test accuracy %.1f%%\n", (int)epoch, st->train_loss,
           100 * st->test_accuracy);
    return D5_OK;
}

static int fail(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, d5_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    int64_t steps = argc > 1 ? atoll(argv[1]) : 40;
    clip c = {argc > 2 ? atof(argv[2]) : 1.0, 0};

    d5_model_params mp = d5_model_default_params();
    mp.batch = 32;
    mp.seed = 1;
    d5_network *net;
    if (d5_model_build("mlp", &mp, &net) != D5_OK) return fail("model");
    d5_tensor_desc sample;
    d5_dataset *train, *test;
    if (d5_tensor_desc_make(D5_F32, 3, (int64_t[]){1, 28, 28}, &sample) != D5_OK ||
        d5_dataset_synthetic(&sample, 2048, 10, 1, &train) != D5_OK ||
        d5_dataset_synthetic(&sample, 512, 10, 2, &test) != D5_OK)
        return fail("dataset");

    d5_trainer_params tp = d5_trainer_default_params();
    tp.epochs = 100;
    tp.max_batches = steps;
    d5_trainer *t;
    if (d5_trainer_create(net, &tp, &t) != D5_OK) return fail("trainer");
    printf("mlp: %d parameter tensors, batch %lld\n", (int)d5_trainer_param_count(t),
           (long long)d5_trainer_batch(t));

    /* Batches in order rather than shuffled: any sampler of level 2 fits. */
    d5_sampler_params sp = d5_sampler_default_params();
    sp.kind = D5_SAMPLER_ORDERED;
    sp.batch = d5_trainer_batch(t);
    sp.drop_last = 1;
    d5_sampler *smp;
    if (d5_sampler_create(train, &sp, &smp) != D5_OK) return fail("sampler");

    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = 0.05;
    d5_optimizer *opt;
    d5_trainer_hooks clipping = {.user = &c, .after_backward = clip_gradients};
    d5_trainer_hooks logging = {.after_step = print_loss, .end_of_epoch = print_epoch};
    if (d5_optimizer_create("momentum", &op, &opt) != D5_OK ||
        d5_trainer_set_optimizer(t, opt) != D5_OK || d5_trainer_set_sampler(t, smp) != D5_OK ||
        d5_trainer_add_hooks(t, "clip", &clipping) != D5_OK ||
        d5_trainer_add_hooks(t, "log", &logging) != D5_OK)
        return fail("setup");

    d5_train_result r;
    if (d5_trainer_run(t, NULL, test, 0, &r) != D5_OK) return fail("training");
    printf("clipped %lld of %lld steps to norm %g; final test accuracy %.1f%%\n",
           (long long)c.clipped, (long long)r.nlosses, c.max_norm, 100 * r.final_test_accuracy);

    d5_train_result_free(&r);
    d5_trainer_free(t);
    d5_optimizer_free(opt);
    d5_sampler_free(smp);
    d5_dataset_free(train);
    d5_dataset_free(test);
    d5_network_free(net);
    return 0;
}
