/* d5 train --distributed: printing and JSON of a d5_dist_result. The first
 * step is the warm-up (buffers, first messages) and is left out of the step
 * statistics when there are others. */
#include "train_dist.h"

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

static void bytes_text(double b, char *buf, size_t size)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

void train_dist_print(FILE *f, const train_dist_report *rep)
{
    const d5_dist_result *r = rep->r;
    d5_stats step = stats_of(r->step_s, r->steps), comp = stats_of(r->compute_s, r->steps),
             exp = stats_of(r->exposed_s, r->steps);
    char grad[32], sent[32], recv[32];
    bytes_text((double)r->gradient_bytes, grad, sizeof grad);
    bytes_text(r->bytes_sent_per_step, sent, sizeof sent);
    bytes_text(r->bytes_recv_per_step, recv, sizeof recv);
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
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "scheme", json_string(d5_dist_scheme_name(r->scheme)));
    json_object_set_new(o, "comm", json_string(rep->comm));
    json_object_set_new(o, "sampler", json_string(rep->sampler));
    json_object_set_new(o, "ranks", json_integer(r->ranks));
    json_object_set_new(o, "workers", json_integer(r->workers));
    json_object_set_new(o, "servers", json_integer(r->servers));
    json_object_set_new(o, "global_batch", json_integer(rep->global_batch));
    json_object_set_new(o, "local_batch", json_integer(rep->local_batch));
    json_object_set_new(o, "oversubscribed", json_boolean(rep->oversubscribed));
    json_object_set_new(o, "oversubscribed_detail", json_string(rep->why));
    json_object_set_new(o, "steps", json_integer(r->steps));
    json_object_set_new(o, "samples", json_integer(r->samples));
    json_object_set_new(o, "seconds", json_real(r->seconds));
    json_object_set_new(o, "samples_per_second", json_real(r->samples_per_second));
    json_object_set_new(o, "step_time_s", stats_json(r->step_s, r->steps));
    json_object_set_new(o, "compute_time_s", stats_json(r->compute_s, r->steps));
    json_object_set_new(o, "exposed_comm_s", stats_json(r->exposed_s, r->steps));
    json_object_set_new(o, "gradient_bytes", json_integer((json_int_t)r->gradient_bytes));
    json_object_set_new(o, "bytes_sent_per_step", json_real(r->bytes_sent_per_step));
    json_object_set_new(o, "bytes_recv_per_step", json_real(r->bytes_recv_per_step));
    json_object_set_new(o, "bytes_sent_all_ranks", json_integer((json_int_t)r->bytes_sent_all));
    json_object_set_new(o, "bytes_recv_all_ranks", json_integer((json_int_t)r->bytes_recv_all));
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
