/* What defines the schemes, checked under mpiexec (2 and 4 ranks) with plain
 * SGD on an MLP:
 * - pssgd (rank 0 or a dedicated rank serving) and mavg averaging every step
 *   compute the step of one rank with the whole batch: every worker's gradient,
 *   rank 0's included, counts once. Their loss curves equal one rank's with the
 *   global batch to a relative 1e-5, as dsgd's do (cli_train_dist.cmake).
 * - dpsgd: after each step every worker's model is the mean of its own and its
 *   ring neighbours' models after their SGD steps, so the mean model follows
 *   the mean SGD step; on 4 ranks the models stay apart (consensus distance
 *   above 0). */
#include "mpi_check.h"

#include "d5/d5.h"

#include <math.h>
#include <string.h>

#define STEPS  20
#define GLOBAL 24 /* divisible by 1, 2, 3 and 4 workers */
#define LR     0.05
#define TOL    1e-5
#define SAMPLE 32 /* elements of each parameter tensor followed for dpsgd */

/* dpsgd: this worker's sampled parameters after its own SGD step (u) and
 * after the step (w), gathered from every rank each step. */
typedef struct follow {
    d5_comm *c;
    int32_t p, rank, n;
    double *u;    /* this rank's u, SAMPLE per tensor */
    double *all;  /* every rank's u, then every rank's w: 2 * p * n * SAMPLE */
    double worst; /* largest relative difference seen */
    double worst_mean;
} follow;

static int64_t sampled(d5_trainer *t, int32_t i)
{
    int64_t n = d5_trainer_param_size(t, i);
    return n < SAMPLE ? n : SAMPLE;
}

static d5_status losses_hook(d5_trainer *t, void *user, int64_t step, double loss)
{
    (void)t;
    if (step >= 1 && step <= STEPS) ((double *)user)[step - 1] = loss;
    return D5_OK;
}

/* Before the optimizer: u = w - lr g, this worker's own SGD step. */
static d5_status own_step(d5_trainer *t, void *user, const d5_step_grads *g)
{
    follow *f = user;
    if (!f->u) {
        f->n = g->n;
        f->u = d5_calloc((size_t)g->n * SAMPLE, sizeof *f->u, "dpsgd check");
        f->all = d5_calloc(2 * (size_t)f->p * (size_t)g->n * SAMPLE, sizeof *f->all, "dpsgd check");
        if (!f->u || !f->all) return D5_ERR_NOMEM;
    }
    for (int32_t i = 0; i < g->n; i++)
        for (int64_t k = 0; k < sampled(t, i); k++)
            f->u[i * SAMPLE + k] = (double)(g->params[i][k] - (float)LR * g->grads[i][k]);
    return D5_OK;
}

static double rel(double got, double want)
{
    return fabs(got - want) / (fabs(want) > 1e-3 ? fabs(want) : 1e-3);
}

static d5_status after_step(d5_trainer *t, void *user, int64_t step, double loss)
{
    (void)step;
    (void)loss;
    follow *f = user;
    size_t m = (size_t)f->n * SAMPLE, all = (size_t)f->p * m;
    memset(f->all, 0, 2 * all * sizeof *f->all);
    double *u = f->all, *w = f->all + all;
    memcpy(u + (size_t)f->rank * m, f->u, m * sizeof *u);
    for (int32_t i = 0; i < f->n; i++)
        for (int64_t k = 0; k < sampled(t, i); k++)
            w[(size_t)f->rank * m + (size_t)i * SAMPLE + (size_t)k] = d5_trainer_param(t, i)[k];
    d5_status s = d5_comm_allreduce(f->c, f->all, 2 * all, D5_F64, "dpsgd check");
    if (s != D5_OK) return s;
    int32_t r = f->rank, p = f->p, left = (r + p - 1) % p, right = (r + 1) % p;
    for (int32_t i = 0; i < f->n; i++)
        for (int64_t k = 0; k < sampled(t, i); k++) {
            size_t at = (size_t)i * SAMPLE + (size_t)k;
            double ul = u[(size_t)left * m + at], ur = u[(size_t)right * m + at];
            double mine = u[(size_t)r * m + at];
            double want = p > 2 ? (ul + mine + ur) / 3 : (ul + mine) / 2;
            double d = rel(w[(size_t)r * m + at], want);
            if (d > f->worst) f->worst = d;
            double su = 0, sw = 0;
            for (int32_t q = 0; q < p; q++) {
                su += u[(size_t)q * m + at];
                sw += w[(size_t)q * m + at];
            }
            d = rel(sw / p, su / p);
            if (d > f->worst_mean) f->worst_mean = d;
        }
    return D5_OK;
}

typedef struct setup {
    d5_network *net;
    d5_dataset *ds;
    d5_optimizer *opt;
    d5_sampler *smp;
    d5_trainer *t;
} setup;

/* The MLP with `batch` samples per step, plain SGD, STEPS steps. */
static d5_status build(setup *e, int64_t batch)
{
    memset(e, 0, sizeof *e);
    d5_model_params mp = d5_model_default_params();
    mp.batch = batch;
    mp.seed = 5;
    d5_tensor_desc sample;
    d5_trainer_params tp = d5_trainer_default_params();
    tp.max_batches = STEPS;
    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = LR;
    d5_status s = d5_model_build("mlp", &mp, &e->net);
    if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 3, (int64_t[]){1, 28, 28}, &sample);
    if (s == D5_OK) s = d5_dataset_synthetic(&sample, 2048, 10, 3, &e->ds);
    if (s == D5_OK) s = d5_optimizer_create("sgd", &op, &e->opt);
    if (s == D5_OK) s = d5_trainer_create(e->net, &tp, &e->t);
    return s;
}

static d5_status run(setup *e, int32_t kind, int64_t batch, int32_t rank, int32_t world)
{
    d5_sampler_params sp = d5_sampler_default_params();
    sp.kind = kind;
    sp.batch = batch;
    sp.seed = 9;
    sp.drop_last = 1;
    sp.rank = rank;
    sp.world = world;
    d5_train_result tr;
    memset(&tr, 0, sizeof tr);
    d5_status s = d5_sampler_create(e->ds, &sp, &e->smp);
    if (s == D5_OK) s = d5_trainer_set_sampler(e->t, e->smp);
    if (s == D5_OK) s = d5_trainer_run(e->t, NULL, NULL, 0, &tr);
    d5_train_result_free(&tr);
    return s;
}

static void teardown(setup *e)
{
    d5_trainer_free(e->t);
    d5_sampler_free(e->smp);
    d5_optimizer_free(e->opt);
    d5_dataset_free(e->ds);
    d5_network_free(e->net);
}

/* One rank with the whole batch: rank 0 trains, every rank gets the curve. */
static void reference(d5_comm *c, double *losses)
{
    memset(losses, 0, STEPS * sizeof *losses);
    if (d5_comm_rank(c) == 0) {
        setup e;
        d5_trainer_hooks h = {.user = losses, .after_step = losses_hook};
        d5_status s = build(&e, GLOBAL);
        if (s == D5_OK) s = d5_trainer_set_optimizer(e.t, e.opt);
        if (s == D5_OK) s = d5_trainer_add_hooks(e.t, "losses", &h);
        if (s == D5_OK) s = run(&e, D5_SAMPLER_SHUFFLED, GLOBAL, 0, 1);
        CHECK(s == D5_OK, "one rank: %s: %s", d5_status_name(s), d5_last_error());
        teardown(&e);
    }
    CHECK_OK(d5_comm_broadcast(c, losses, STEPS, D5_F64, 0, "reference losses"));
}

/* Trains scheme dp with the global batch sharded over its workers; fills
 * *res. f (dpsgd) follows every step. */
static d5_status train(d5_comm *c, const d5_dist_params *dp, follow *f, d5_dist_result *res)
{
    d5_dist *d = NULL;
    setup e;
    memset(&e, 0, sizeof e);
    d5_status s = d5_dist_create(c, dp, &d);
    int64_t batch = s == D5_OK ? GLOBAL / d5_dist_workers(d) : 1;
    if (s == D5_OK) s = build(&e, batch);
    if (s == D5_OK && d5_dist_is_server(d)) {
        s = d5_dist_serve(d, e.t, e.opt);
    } else if (s == D5_OK) {
        d5_trainer_hooks h = {.user = f, .after_backward = own_step, .after_step = after_step};
        if (f) s = d5_trainer_add_hooks(e.t, "follow", &h);
        if (s == D5_OK) s = d5_dist_attach(d, e.t, e.opt);
        if (s == D5_OK)
            s = run(&e, D5_SAMPLER_SHARDED_BATCH, batch, d5_dist_worker(d), d5_dist_workers(d));
    }
    if (s == D5_OK) s = d5_dist_finish(d, e.t, res);
    d5_dist_free(d);
    teardown(&e);
    return s;
}

/* The loss curve of the workers against one rank's with the global batch. */
static void equals_one_rank(d5_comm *c, const double *ref, int32_t scheme, int32_t servers)
{
    d5_dist_params dp = d5_dist_default_params();
    dp.scheme = scheme;
    dp.servers = servers;
    dp.average_every = 1;
    d5_dist_result res;
    memset(&res, 0, sizeof res);
    const char *name = d5_dist_scheme_name(scheme);
    d5_status s = train(c, &dp, NULL, &res);
    CHECK(s == D5_OK, "%s (servers %d): %s: %s", name, (int)servers, d5_status_name(s),
          d5_last_error());
    if (s == D5_OK && d5_comm_rank(c) < res.workers) {
        CHECK(res.steps == STEPS && res.losses, "%s: %lld steps", name, (long long)res.steps);
        double worst = 0;
        int64_t at = 0;
        for (int64_t k = 0; res.losses && k < res.steps && k < STEPS; k++)
            if (rel(res.losses[k], ref[k]) > worst) worst = rel(res.losses[k], ref[k]), at = k;
        CHECK(worst <= TOL,
              "%s (servers %d) on %d workers: loss %.9g at step %lld, one rank with the whole "
              "batch %.9g (relative %.2g > %g)",
              name, (int)servers, (int)res.workers, res.losses ? res.losses[at] : 0.0,
              (long long)at + 1, ref[at], worst, TOL);
    }
    d5_dist_result_free(&res);
}

static void dpsgd_averages_neighbours(d5_comm *c)
{
    int32_t p = d5_comm_size(c);
    d5_dist_params dp = d5_dist_default_params();
    dp.scheme = D5_DIST_DPSGD;
    follow f = {c, p, d5_comm_rank(c), 0, NULL, NULL, 0, 0};
    d5_dist_result res;
    memset(&res, 0, sizeof res);
    d5_status s = train(c, &dp, &f, &res);
    CHECK(s == D5_OK, "dpsgd: %s: %s", d5_status_name(s), d5_last_error());
    CHECK(f.worst <= TOL,
          "dpsgd on %d ranks: a model is not the mean of its ring neighbours' after their SGD "
          "steps (relative %.2g)",
          (int)p, f.worst);
    CHECK(f.worst_mean <= TOL,
          "dpsgd on %d ranks: the mean model left the SGD step (relative %.2g)", (int)p,
          f.worst_mean);
    /* Neighbours only: on 4 ranks no model is the mean of all of them. */
    if (s == D5_OK && p >= 4)
        CHECK(res.consensus > 0 && res.consensus_rel > 1e-6,
              "dpsgd on %d ranks: consensus distance %g (%g of the mean model)", (int)p,
              res.consensus, res.consensus_rel);
    d5_dist_result_free(&res);
    d5_free(f.u);
    d5_free(f.all);
}

int main(void)
{
    d5_comm *c = mpi_check_world("test_dist_exact", 60);
    if (!c) return 1;
    int32_t p = d5_comm_size(c);
    CHECK_OK(d5_threads_set(1));
    double ref[STEPS];
    reference(c, ref);
    equals_one_rank(c, ref, D5_DIST_DSGD, -1); /* the model these follow */
    equals_one_rank(c, ref, D5_DIST_PSSGD, 0);
    if (p >= 2) equals_one_rank(c, ref, D5_DIST_PSSGD, 1);
    equals_one_rank(c, ref, D5_DIST_MAVG, -1);
    dpsgd_averages_neighbours(c);
    int rc = mpi_check_finish(c, "test_dist_exact");
    d5_comm_free(c);
    return rc;
}
