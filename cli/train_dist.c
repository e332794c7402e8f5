/* d5 train --distributed: printing and JSON of a d5_dist_result. The first
 * step is the warm-up (buffers, first messages) and is left out of the step
 * statistics when there are others. */
#include "train_dist.h"
#include "train_out.h"
#include "train_run.h"

#include "comm_cli.h"

#include "d5/stats.h"

#include <math.h>
#include <string.h>

/* Median and CI of x[first..n) (all of it when n == 1); zeros when empty. */
static d5_stats stats_of(const double *x, int64_t n)
{
    d5_stats st;
    memset(&st, 0, sizeof st);
    int64_t first = n > 1 ? 1 : 0;
    if (x && n > first && d5_stats_compute(x + first, (size_t)(n - first), &st) != D5_OK)
        memset(&st, 0, sizeof st);
    return st;
}

void train_dist_print(FILE *f, const train_dist_report *rep)
{
    const d5_dist_result *r = rep->r;
    d5_stats step = stats_of(r->step_s, r->steps), comp = stats_of(r->compute_s, r->steps),
             exp = stats_of(r->exposed_s, r->steps);
    char grad[32], sent[32], recv[32];
    d5_format_bytes((double)r->gradient_bytes, grad, sizeof grad);
    d5_format_bytes(r->bytes_sent_per_step, sent, sizeof sent);
    d5_format_bytes(r->bytes_recv_per_step, recv, sizeof recv);
    fprintf(f, "\ndistributed: %s on %d rank%s (%d worker%s", d5_dist_scheme_name(r->scheme),
            (int)r->ranks, r->ranks == 1 ? "" : "s", (int)r->workers, r->workers == 1 ? "" : "s");
    if (r->servers) fprintf(f, ", %d server%s", (int)r->servers, r->servers == 1 ? "" : "s");
    fprintf(f, "), comm %s, sampler %s, batch %lld per step = %d x %lld\n", rep->comm, rep->sampler,
            (long long)rep->global_batch, (int)r->workers, (long long)rep->local_batch);
    if (rep->bucket_mb >= 0)
        fprintf(f, "  gradient buckets: %s\n",
                rep->bucket_mb > 0 ? "allreduced while backpropagation goes on"
                                   : "one allreduce after backpropagation");
    fprintf(f, "  steps %lld (rank 0; the first left out as warm-up)\n", (long long)r->steps);
    fprintf(f, "  step     %9.3f ms [%.3f, %.3f]\n", 1e3 * step.median, 1e3 * step.ci_low,
            1e3 * step.ci_high);
    fprintf(f, "  compute  %9.3f ms [%.3f, %.3f]\n", 1e3 * comp.median, 1e3 * comp.ci_low,
            1e3 * comp.ci_high);
    fprintf(f, "  exposed communication %9.3f ms [%.3f, %.3f] (%.1f%% of the step)\n",
            1e3 * exp.median, 1e3 * exp.ci_low, 1e3 * exp.ci_high,
            step.median > 0 ? 100 * exp.median / step.median : 0.0);
    fprintf(f, "  throughput %.1f samples/s (all workers, measured: %lld samples in %.3f s)\n",
            r->samples_per_second, (long long)r->samples, r->seconds);
    fprintf(f, "  gradient %s; rank 0 sent %s and received %s per step\n", grad, sent, recv);
    fprintf(f, "  consensus distance %.6g (%.3g of the mean model's norm)\n", r->consensus,
            r->consensus_rel);
    if (r->hash_checks)
        fprintf(f, "  parameters identical on every worker (hash %016llx, compared %d time%s)\n",
                (unsigned long long)r->param_hash, (int)r->hash_checks,
                r->hash_checks == 1 ? "" : "s");
    if (r->scheme == D5_DIST_ASGD || r->scheme == D5_DIST_SSP) {
        fprintf(f, "  staleness (updates between pull and push: gradients):");
        for (int k = 0; k < D5_DIST_MAX_STALENESS; k++)
            if (r->staleness[k]) fprintf(f, " %d:%lld", k, (long long)r->staleness[k]);
        fprintf(f, "; max %d\n", (int)r->staleness_max);
    }
    if (r->scheme == D5_DIST_SSP)
        fprintf(f, "  ssp: largest lead over the slowest worker %d (bound %d)\n",
                (int)r->ssp_lead_max, (int)rep->staleness_bound);
    if (rep->oversubscribed)
        fprintf(f,
                "  oversubscribed: %s: timings not meaningful (correctness results still "
                "count)\n",
                rep->why);
}

static json_t *stats_json(const double *x, int64_t n)
{
    d5_stats st = stats_of(x, n);
    if (st.n == 0) return json_null();
    return json_pack("{s:f, s:f, s:f, s:I}", "median", st.median, "ci_low", st.ci_low, "ci_high",
                     st.ci_high, "n", (json_int_t)st.n);
}

static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *train_dist_json(const train_dist_report *rep)
{
    const d5_dist_result *r = rep->r;
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:b, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, "
        "s:I, s:o, s:o, s:I, s:I}",
        "scheme", d5_dist_scheme_name(r->scheme), "comm", rep->comm, "sampler", rep->sampler,
        "ranks", (int)r->ranks, "workers", (int)r->workers, "servers", (int)r->servers,
        "global_batch", (json_int_t)rep->global_batch, "local_batch", (json_int_t)rep->local_batch,
        "oversubscribed", rep->oversubscribed, "oversubscribed_detail", rep->why, "steps",
        (json_int_t)r->steps, "samples", (json_int_t)r->samples, "seconds",
        real_or_null(r->seconds), "samples_per_second", real_or_null(r->samples_per_second),
        "step_time_s", stats_json(r->step_s, r->steps), "compute_time_s",
        stats_json(r->compute_s, r->steps), "exposed_comm_s", stats_json(r->exposed_s, r->steps),
        "gradient_bytes", (json_int_t)r->gradient_bytes, "bytes_sent_per_step",
        real_or_null(r->bytes_sent_per_step), "bytes_recv_per_step",
        real_or_null(r->bytes_recv_per_step), "bytes_sent_all_ranks", (json_int_t)r->bytes_sent_all,
        "bytes_recv_all_ranks", (json_int_t)r->bytes_recv_all);
    if (!o) return NULL;
    json_object_set_new(o, "bucket_mb",
                        rep->bucket_mb >= 0 ? json_real(rep->bucket_mb) : json_null());
    json_object_set_new(o, "consensus_distance", real_or_null(r->consensus));
    json_object_set_new(o, "consensus_relative", real_or_null(r->consensus_rel));
    if (r->hash_checks) {
        char h[20];
        snprintf(h, sizeof h, "%016llx", (unsigned long long)r->param_hash);
        json_object_set_new(o, "parameter_hash", json_string(h));
    } else {
        json_object_set_new(o, "parameter_hash", json_null());
    }
    json_object_set_new(o, "hash_checks", json_integer(r->hash_checks));
    int async = r->scheme == D5_DIST_ASGD || r->scheme == D5_DIST_SSP;
    json_t *hist = async ? json_array() : json_null();
    for (int k = 0; async && k < D5_DIST_MAX_STALENESS; k++)
        json_array_append_new(hist, json_integer(r->staleness[k]));
    json_object_set_new(o, "staleness_histogram", hist);
    json_object_set_new(o, "staleness_max", async ? json_integer(r->staleness_max) : json_null());
    json_object_set_new(o, "ssp_lead_max",
                        r->scheme == D5_DIST_SSP ? json_integer(r->ssp_lead_max) : json_null());
    json_object_set_new(o, "ssp_staleness_bound",
                        r->scheme == D5_DIST_SSP ? json_integer(rep->staleness_bound)
                                                 : json_null());
    json_t *steps = json_array();
    for (int64_t k = 0; k < r->steps; k++)
        json_array_append_new(steps,
                              json_pack("{s:f, s:f, s:f}", "step_s", r->step_s[k], "compute_s",
                                        r->compute_s[k], "exposed_comm_s", r->exposed_s[k]));
    json_object_set_new(o, "per_step", steps);
    return o;
}

/* Ends the job: frees what it holds (the communicator last: it finalises
 * MPI) and returns rc. */
int job_end(job *jb, int rc)
{
    d5_dist_result_free(&jb->res);
    d5_trainer_free(jb->t);
    d5_sampler_free(jb->smp);
    d5_dist_free(jb->dist);
    d5_comm_free(jb->comm);
    memset(jb, 0, sizeof *jb);
    return rc;
}

/* A failure after the job started: the other ranks may be waiting for this
 * one, so a job of several ranks is ended on every rank (MPI_Abort). */
int job_fail(job *jb, d5_status s)
{
    if (!jb->comm || jb->size == 1) return job_end(jb, cli_fail("train", s));
    fprintf(stderr, "d5 train: rank %d of %d: %s: %s\n", (int)jb->rank, (int)jb->size,
            d5_status_str(s), d5_last_error());
    fprintf(stderr, "d5 train: rank %d ends the job\n", (int)jb->rank);
    fflush(stderr);
    d5_comm_abort(jb->comm, D5_EXIT_CHECK);
    return job_end(jb, D5_EXIT_CHECK);
}

/* Ends the job on a bad option, keeping this rank's number and `why`. */
static int bad_option(job *jb, const char *why)
{
    /* Rank 0 says why before the job ends: ending it waits for every rank
     * (MPI_Finalize), whereas a message printed afterwards can be cut off
     * by mpiexec, which aborts the job once another rank has exited 2. */
    if (jb->rank == 0) train_usage_error(why);
    return job_end(jb, D5_EXIT_USAGE);
}

/* The communicator and the checks every rank makes alike before anything
 * starts: -1 to go on, or an exit status (D5_EXIT_USAGE: rank 0 has said
 * what is wrong with the options). */
int job_begin(job *jb, const d5_dist_params *dp, const char *comm_name, double timeout,
              int32_t sampler, int batch)
{
    char why[512];
    d5_comm_params cp = d5_comm_default_params();
    cp.backend = comm_name;
    cp.timeout_s = timeout;
    jb->dp = *dp;
    jb->comm_name = comm_name;
    d5_status s = d5_comm_create(&cp, &jb->comm);
    if (s != D5_OK) return cli_fail("train", s);
    jb->rank = d5_comm_rank(jb->comm);
    jb->size = d5_comm_size(jb->comm);
    s = d5_dist_create(jb->comm, dp, &jb->dist);
    if (s != D5_OK) {
        snprintf(why, sizeof why, "--distributed %s: %s", d5_dist_scheme_name(dp->scheme),
                 d5_last_error());
        return bad_option(jb, why);
    }
    jb->workers = d5_dist_workers(jb->dist);
    jb->worker = d5_dist_worker(jb->dist);
    jb->server = d5_dist_is_server(jb->dist);
    if (sampler == D5_SAMPLER_SHARDED_BATCH && batch % jb->workers != 0) {
        snprintf(why, sizeof why,
                 "--batch %d is not divisible by the %d workers: --sampler sharded-batch "
                 "splits each global batch evenly",
                 batch, (int)jb->workers);
        return bad_option(jb, why);
    }
    /* Created again once the steps per epoch are known. */
    d5_dist_free(jb->dist);
    jb->dist = NULL;
    return -1;
}

/* Every rank's verdict on a check, so that all go on or all stop. */
int job_agree_ok(job *jb, int ok)
{
    double v = ok ? 1 : 0;
    if (d5_comm_agree(jb->comm, &v, 1, D5_COMM_MIN) != D5_OK) return 0;
    return v > 0;
}

static d5_status job_dist(job *jb)
{
    jb->dp.epoch_steps = jb->epoch_steps;
    return d5_dist_create(jb->comm, &jb->dp, &jb->dist);
}

/* A worker: the trainer with the distributed sampler and the scheme. */
d5_status job_train(job *jb, d5_network *net, const d5_dataset *train, const d5_dataset *test,
                    d5_optimizer *opt, const d5_trainer_params *tp, const d5_sampler_params *sp,
                    d5_timer *timer, d5_train_result *res, train_reports *tr)
{
    d5_status s = job_dist(jb);
    if (s == D5_OK) s = d5_sampler_create(train, sp, &jb->smp);
    if (s == D5_OK) s = d5_trainer_create(net, tp, &jb->t);
    if (s == D5_OK) s = d5_trainer_set_sampler(jb->t, jb->smp);
    if (s == D5_OK) s = d5_trainer_set_timer(jb->t, timer);
    if (s == D5_OK) s = d5_comm_attach_timer(jb->comm, timer);
    if (s == D5_OK) s = d5_dist_attach(jb->dist, jb->t, opt);
    if (s == D5_OK) s = train_reports_attach_steps(tr, jb->t);
    if (s == D5_OK) s = d5_trainer_run(jb->t, NULL, test, 0, res);
    if (s == D5_OK) s = train_reports_take_steps(tr);
    return s;
}

/* A server rank: a trainer of the same network for its parameters, never run. */
d5_status job_serve(job *jb, d5_network *net, d5_optimizer *opt, const d5_trainer_params *tp)
{
    d5_trainer_params p = *tp;
    p.checkpoint = NULL;
    p.progress = 0;
    d5_status s = job_dist(jb);
    if (s == D5_OK) s = d5_trainer_create(net, &p, &jb->t);
    if (s == D5_OK) s = d5_dist_serve(jb->dist, jb->t, opt);
    return s;
}

d5_status job_finish(job *jb)
{
    d5_status s = d5_dist_finish(jb->dist, jb->t, &jb->res);
    jb->finished = s == D5_OK;
    return s;
}

/* The figures of the finished job, printed (f) or as the JSON block (f NULL:
 * returned; NULL when printed). */
json_t *job_report(job *jb, FILE *f, const char *sampler, int batch, int64_t local_batch)
{
    char why[96];
    train_dist_report rep;
    memset(&rep, 0, sizeof rep);
    rep.r = &jb->res;
    rep.comm = jb->comm_name;
    rep.sampler = sampler;
    rep.local_batch = local_batch;
    rep.global_batch = strcmp(sampler, "sharded-batch") == 0 ? batch : local_batch * jb->workers;
    rep.oversubscribed = comm_oversubscribed(jb->comm, why, sizeof why);
    rep.why = why;
    rep.staleness_bound = jb->dp.scheme == D5_DIST_SSP ? jb->dp.staleness : -1;
    rep.bucket_mb = jb->dp.scheme == D5_DIST_DSGD ? jb->dp.bucket_mb : -1;
    if (!f) return train_dist_json(&rep);
    train_dist_print(f, &rep);
    return NULL;
}

/* The loss curve of a synchronous scheme: the mean over workers per step
 * (with sharded-batch, the loss of the global batch). */
void job_global_losses(job *jb, d5_train_result *res)
{
    int64_t n = jb->res.steps < res->nlosses ? jb->res.steps : res->nlosses;
    for (int64_t k = 0; k < n; k++) res->losses[k] = (float)jb->res.losses[k];
}
