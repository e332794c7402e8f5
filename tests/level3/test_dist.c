/* Distributed training schemes under mpiexec (1 to 4 ranks): every scheme
 * trains an MLP on synthetic data; the consistent ones, and mavg after its
 * last average, end with the same parameter bits on every worker (each rank
 * hashes its own parameters, and the hashes are compared here as well as by
 * the library every 10 steps); a worker whose parameters drift is named;
 * with worker 1 held back, asgd and ssp see stale gradients and ssp a lead
 * that stays within its bound; bad combinations are refused before anything
 * starts. */
#define _POSIX_C_SOURCE 200809L
#include "mpi_check.h"

#include "d5/d5.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STEPS 30

typedef struct run {
    int32_t scheme, servers, staleness;
    double bucket_mb;
    int32_t spoil_rank; /* this rank changes a weight after step 5 (-1: none) */
    d5_comm *hold;      /* non-NULL: worker 1 is held back (below), on this communicator */
} run;

/* Worker 1, after step HOLD, waits until worker 0 is about to push its
 * gradient of step HOLD + 2, and HOLD_MS more for that push to reach the
 * server: worker 0 is then a step ahead (ssp's bound of 1 allows it), and its
 * gradient is applied between worker 1's pull and push. Messages on a
 * communicator of their own, so as not to meet the scheme's. */
#define HOLD    2
#define HOLD_MS 200

static d5_status before_push(d5_trainer *t, void *user, const d5_step_grads *g)
{
    (void)t;
    const run *r = user;
    double go = 1;
    if (r->hold && mpi_check_rank == 0 && g->step == HOLD + 2)
        return d5_comm_send(r->hold, &go, 1, D5_F64, 1, 1, "hold");
    return D5_OK;
}

static d5_status after_step(d5_trainer *t, void *user, int64_t step, double loss)
{
    (void)loss;
    const run *r = user;
    if (step == 5 && r->spoil_rank == mpi_check_rank) d5_trainer_param(t, 0)[0] += 1e-3f;
    double go = 0;
    if (!r->hold || mpi_check_rank != 1 || step != HOLD) return D5_OK;
    d5_status s = d5_comm_recv(r->hold, &go, 1, D5_F64, 0, 1, "hold");
    struct timespec ts = {0, HOLD_MS * 1000000L};
    nanosleep(&ts, NULL);
    return s;
}

/* FNV-1a of this rank's own parameters. */
static uint64_t own_hash(d5_trainer *t)
{
    uint64_t h = D5_FNV1A_OFFSET;
    for (int32_t i = 0; i < d5_trainer_param_count(t); i++)
        h = d5_fnv1a(h, d5_trainer_param(t, i),
                     (size_t)d5_trainer_param_size(t, i) * sizeof(float));
    return h;
}

/* Trains (or serves) STEPS steps of scheme r; returns the trainer's status
 * and fills *res and *hash (the hash of this rank's parameters at the end)
 * on success. */
static d5_status train(d5_comm *c, const run *r, d5_dist_result *res, uint64_t *hash)
{
    d5_model_params mp = d5_model_default_params();
    mp.batch = 16;
    mp.seed = 5;
    d5_network *net = NULL;
    d5_dataset *ds = NULL;
    d5_tensor_desc sample;
    d5_optimizer *opt = NULL;
    d5_sampler *smp = NULL;
    d5_trainer *t = NULL;
    d5_dist *d = NULL;
    d5_dist_params dp = d5_dist_default_params();
    dp.scheme = r->scheme;
    dp.servers = r->servers;
    dp.staleness = r->staleness;
    dp.bucket_mb = r->bucket_mb;
    dp.hash_every = 10;
    d5_trainer_params tp = d5_trainer_default_params();
    tp.max_batches = STEPS;
    d5_optimizer_params op = d5_optimizer_default_params();
    /* Asynchronous schemes apply gradients up to a few steps stale: with
     * momentum 0.9, lr 0.05 could make this MLP diverge within 30 steps,
     * depending on the order of arrival (a NaN loss at step 30 was seen with
     * asgd on 4 oversubscribed ranks under ASan). */
    op.lr = r->scheme == D5_DIST_ASGD || r->scheme == D5_DIST_SSP ? 0.01 : 0.05;
    d5_status s = d5_model_build("mlp", &mp, &net);
    if (s == D5_OK) s = d5_tensor_desc_make(D5_F32, 3, (int64_t[]){1, 28, 28}, &sample);
    if (s == D5_OK) s = d5_dataset_synthetic(&sample, 2048, 10, 3, &ds);
    if (s == D5_OK) s = d5_optimizer_create("momentum", &op, &opt);
    if (s == D5_OK) s = d5_dist_create(c, &dp, &d);
    if (s == D5_OK) s = d5_trainer_create(net, &tp, &t);
    if (s == D5_OK && d5_dist_is_server(d)) {
        s = d5_dist_serve(d, t, opt);
    } else if (s == D5_OK) {
        d5_sampler_params sp = d5_sampler_default_params();
        sp.kind = D5_SAMPLER_PARTITIONED;
        sp.batch = 16;
        sp.seed = 9;
        sp.drop_last = 1;
        sp.rank = d5_dist_worker(d);
        sp.world = d5_dist_workers(d);
        /* Before the scheme's hooks: before_push runs ahead of the push. */
        d5_trainer_hooks h = {
            .user = (void *)r, .after_backward = before_push, .after_step = after_step};
        d5_train_result tr;
        memset(&tr, 0, sizeof tr);
        s = d5_sampler_create(ds, &sp, &smp);
        if (s == D5_OK) s = d5_trainer_set_sampler(t, smp);
        if (s == D5_OK && (r->spoil_rank >= 0 || r->hold)) s = d5_trainer_add_hooks(t, "test", &h);
        if (s == D5_OK) s = d5_dist_attach(d, t, opt);
        if (s == D5_OK) s = d5_trainer_run(t, NULL, NULL, 0, &tr);
        d5_train_result_free(&tr);
    }
    if (s == D5_OK) s = d5_dist_finish(d, t, res);
    if (s == D5_OK) *hash = own_hash(t);
    d5_dist_free(d);
    d5_trainer_free(t);
    d5_sampler_free(smp);
    d5_optimizer_free(opt);
    d5_dataset_free(ds);
    d5_network_free(net);
    return s;
}

/* Every rank's own hash, gathered (two exact 32-bit halves per rank, summed
 * into place): the workers' must all equal worker 0's, which is also the
 * hash the library reports on every rank. Collective. */
static void same_parameters(d5_comm *c, const d5_dist_result *res, uint64_t mine, const char *name)
{
    int32_t p = d5_comm_size(c), me = d5_comm_rank(c);
    double *h = calloc(2 * (size_t)p, sizeof *h);
    if (!h) abort();
    h[2 * me] = (double)(mine >> 32);
    h[2 * me + 1] = (double)(mine & 0xffffffffu);
    CHECK_OK(d5_comm_agree(c, h, 2 * (size_t)p, D5_COMM_SUM));
    uint64_t first = ((uint64_t)h[0] << 32) | (uint64_t)h[1];
    for (int32_t w = 1; w < res->workers; w++) {
        uint64_t other = ((uint64_t)h[2 * w] << 32) | (uint64_t)h[2 * w + 1];
        CHECK(other == first, "%s: worker %d's parameters hash to %016llx, worker 0's to %016llx",
              name, (int)w, (unsigned long long)other, (unsigned long long)first);
    }
    if (res->hash_checks > 0)
        CHECK(res->param_hash == first, "%s: hash %016llx reported, worker 0 has %016llx", name,
              (unsigned long long)res->param_hash, (unsigned long long)first);
    free(h);
}

static void scheme_trains(d5_comm *c, d5_comm *side, int32_t scheme, int32_t servers,
                          double bucket_mb)
{
    int32_t p = d5_comm_size(c);
    int async = scheme == D5_DIST_ASGD || scheme == D5_DIST_SSP;
    /* With two workers or more, worker 1 is held back. */
    run r = {scheme, servers, 1, bucket_mb, -1, async && p >= 3 ? side : NULL};
    d5_dist_result res;
    memset(&res, 0, sizeof res);
    const char *name = d5_dist_scheme_name(scheme);
    uint64_t hash = 0;
    d5_status s = train(c, &r, &res, &hash);
    CHECK(s == D5_OK, "%s (servers %d, bucket %g MiB) on %d ranks: %s: %s", name, (int)servers,
          bucket_mb, (int)p, d5_status_name(s), d5_last_error());
    if (s != D5_OK) return;
    int32_t workers = res.workers;
    CHECK(res.ranks == p && res.workers + res.servers == p, "%s: %d ranks, %d workers, %d servers",
          name, (int)res.ranks, (int)res.workers, (int)res.servers);
    CHECK(res.samples == (int64_t)workers * STEPS * 16, "%s: %lld samples trained", name,
          (long long)res.samples);
    CHECK(res.samples_per_second > 0 && res.gradient_bytes > 0, "%s: throughput %g", name,
          res.samples_per_second);
    if (d5_comm_rank(c) < workers) {
        CHECK(res.steps == STEPS, "%s: %lld steps", name, (long long)res.steps);
        for (int64_t k = 0; k < res.steps; k++)
            CHECK(res.step_s[k] > 0 && res.exposed_s[k] >= 0 && res.compute_s[k] >= 0 &&
                      res.exposed_s[k] <= res.step_s[k],
                  "%s: step %lld: %g s, exposed %g s", name, (long long)k, res.step_s[k],
                  res.exposed_s[k]);
    }
    if (scheme == D5_DIST_DSGD || scheme == D5_DIST_PSSGD) {
        /* Consistent: the hash compared at steps 10, 20, 30 and at the end. */
        CHECK(res.hash_checks == 4, "%s: %d hash checks", name, (int)res.hash_checks);
        CHECK(res.consensus == 0, "%s: consensus distance %g", name, res.consensus);
    }
    if (scheme == D5_DIST_MAVG) CHECK(res.hash_checks == 0, "mavg: %d", (int)res.hash_checks);
    /* Consistent schemes, and mavg after its last average: the same bits on
     * every worker. The others make no such claim. */
    if (scheme == D5_DIST_DSGD || scheme == D5_DIST_PSSGD || scheme == D5_DIST_MAVG)
        same_parameters(c, &res, hash, name);
    if (scheme == D5_DIST_SSP) {
        CHECK(res.ssp_lead_max <= 1, "ssp: a worker ran %d steps ahead (bound 1)",
              (int)res.ssp_lead_max);
        if (workers >= 2) /* worker 0 got ahead of worker 1 */
            CHECK(res.ssp_lead_max > 0, "ssp: %d workers, one held back, but no lead",
                  (int)workers);
        int64_t pushes = 0;
        for (int k = 0; k < D5_DIST_MAX_STALENESS; k++) pushes += res.staleness[k];
        CHECK(pushes == (int64_t)workers * STEPS, "ssp: %lld gradients in the histogram",
              (long long)pushes);
    }
    if (scheme == D5_DIST_ASGD || scheme == D5_DIST_SSP) {
        if (workers == 1)
            CHECK(res.staleness_max == 0, "one worker: staleness %d", (int)res.staleness_max);
        else /* worker 1's gradient of step HOLD + 1 is at least one update old */
            CHECK(res.staleness_max > 0, "%s: %d workers, one held back, but no stale gradient",
                  name, (int)workers);
    }
    d5_dist_result_free(&res);
}

/* A worker whose parameters drift is found by the hash check. */
static void drift_is_named(d5_comm *c)
{
    if (d5_comm_size(c) < 2) return;
    run r = {D5_DIST_DSGD, 0, 0, 25, 1, NULL};
    d5_dist_result res;
    memset(&res, 0, sizeof res);
    uint64_t hash = 0;
    d5_status s = train(c, &r, &res, &hash);
    CHECK(s == D5_ERR_NUMERIC, "dsgd with rank 1 drifting: %s", d5_status_name(s));
    CHECK(strstr(d5_last_error(), "rank 1") && strstr(d5_last_error(), "differ"), "%s",
          d5_last_error());
    d5_dist_result_free(&res);
}

static void combinations_are_checked(int32_t p)
{
    d5_dist_params dp = d5_dist_default_params();
    dp.scheme = D5_DIST_ASGD;
    dp.servers = 0;
    CHECK_STATUS(d5_dist_check(&dp, 4), D5_ERR_INVALID);
    CHECK(strstr(d5_last_error(), "server"), "%s", d5_last_error());
    dp.servers = 4;
    CHECK_STATUS(d5_dist_check(&dp, 4), D5_ERR_INVALID);
    CHECK(strstr(d5_last_error(), "no worker"), "%s", d5_last_error());
    dp.scheme = D5_DIST_DSGD;
    dp.servers = 1;
    CHECK_STATUS(d5_dist_check(&dp, 4), D5_ERR_INVALID);
    dp = d5_dist_default_params();
    dp.scheme = D5_DIST_PSSGD;
    CHECK_OK(d5_dist_check(&dp, p));
    dp.scheme = D5_DIST_MAVG;
    dp.average_every = 0;
    CHECK_STATUS(d5_dist_check(&dp, p), D5_ERR_INVALID);
    int32_t k = -1;
    CHECK_OK(d5_dist_scheme_parse("ssp", &k));
    CHECK(k == D5_DIST_SSP, "ssp parsed as %d", (int)k);
    CHECK_STATUS(d5_dist_scheme_parse("allreduce", &k), D5_ERR_UNSUPPORTED);
    CHECK(strstr(d5_last_error(), "dsgd"), "%s", d5_last_error());
}

int main(void)
{
    d5_comm *c = mpi_check_world("test_dist", 60);
    if (!c) return 1;
    int32_t p = d5_comm_size(c);
    d5_comm *side = mpi_check_open("mpi", 60); /* holds worker 1 back */
    CHECK_OK(d5_threads_set(1));
    combinations_are_checked(p);
    scheme_trains(c, side, D5_DIST_LOCAL, -1, 25);
    scheme_trains(c, side, D5_DIST_DSGD, -1, 25);
    scheme_trains(c, side, D5_DIST_DSGD, -1, 0.01); /* several buckets in flight */
    scheme_trains(c, side, D5_DIST_DSGD, -1, 0);    /* one allreduce after backpropagation */
    scheme_trains(c, side, D5_DIST_PSSGD, 0, 25);
    scheme_trains(c, side, D5_DIST_MAVG, -1, 25);
    scheme_trains(c, side, D5_DIST_DPSGD, -1, 25);
    if (p >= 2) {
        scheme_trains(c, side, D5_DIST_PSSGD, 1, 25);
        scheme_trains(c, side, D5_DIST_ASGD, 1, 25);
        scheme_trains(c, side, D5_DIST_SSP, 1, 25);
    }
    drift_is_named(c);
    d5_comm_free(side);
    int rc = mpi_check_finish(c, "test_dist");
    d5_comm_free(c);
    return rc;
}
