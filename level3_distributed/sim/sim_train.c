/* d5-sim-train: distributed training on hosts that SimGrid's SMPI simulates.
 * The schemes (dist.c, ps.c, schemes/) and the communicator run their real
 * code, built with smpicc (level3_distributed/CMakeLists.txt); the training
 * itself is not computed: each rank replays the timeline of a measured step
 * (`d5 train --step-profile FILE.json`), waiting on the simulated clock until
 * each gradient was ready, announcing it to the scheme as the trainer does,
 * then the end of the backward pass, the optimizer and the end of the step.
 *
 *   smpirun -np 64 -platform fat_tree.xml -hostfile hosts.txt \
 *       --cfg=smpi/simulate-computation:no \
 *       d5-sim-train --profile resnet20.json --scheme dsgd --comm ring --steps 20
 *
 * This file stands in for level 2's trainer and optimizer: it defines the
 * functions of d5/training.h that the schemes call, over the profile's
 * parameter table. Parameters and gradients are SMPI's shared allocations
 * (every simulated rank's folded onto one block), so that a thousand ranks
 * of a large model fit in memory: the values mean nothing, the times do.
 * Copies of gradients and the sums of reductions cost the time of a model
 * (seconds per byte: measured on this machine at the start, or given)
 * rather than their arithmetic. Rank 0 prints the step time, its compute and
 * exposed communication (medians with 95% CIs, the first step left out), as
 * `d5 train --distributed` does for a real run. */
#include "../dist_internal.h"

#include <errno.h>
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The models of a sum's and a copy's time (comm.c, dist.c, built with D5_SIM). */
extern double d5__sim_reduce_alpha_s, d5__sim_reduce_s_per_byte;

/* ---- The optimizer: the profile's update time, spread over its elements ---- */

static double update_s_per_element;
/* The factor of the step being replayed (--variation). */
static double step_factor = 1;

static d5_status replayed_rule(d5_optimizer *o, int64_t step, float *param, const float *grad,
                               float *state, int64_t n)
{
    (void)o, (void)step, (void)param, (void)grad, (void)state, (void)n;
    return D5_OK;
}

static const d5_optimizer_desc replayed = {"replayed", 0, NULL, NULL, replayed_rule};

struct d5_optimizer {
    const d5_optimizer_desc *desc;
    d5_optimizer_params p;
    int64_t elements; /* of the parameters it updates */
};

d5_status d5_optimizer_create_custom(const d5_optimizer_desc *desc, const d5_optimizer_params *p,
                                     d5_optimizer **out)
{
    d5_optimizer *o = d5_calloc(1, sizeof *o, "optimizer");
    if (!o) return D5_ERR_NOMEM;
    o->desc = desc;
    if (p) o->p = *p;
    *out = o;
    return D5_OK;
}

void d5_optimizer_free(d5_optimizer *o)
{
    d5_free(o);
}

const d5_optimizer_params *d5_optimizer_get_params(const d5_optimizer *o)
{
    return &o->p;
}

void d5_optimizer_set_lr(d5_optimizer *o, double lr)
{
    o->p.lr = lr;
}

d5_status d5_optimizer_add_param(d5_optimizer *o, const char *name, float *data, int64_t n,
                                 int32_t *index)
{
    (void)name, (void)data, (void)index;
    o->elements += n;
    return D5_OK;
}

d5_status d5_optimizer_prepare(d5_optimizer *o)
{
    (void)o;
    return D5_OK;
}

/* The replayed optimizer takes its share of the profile's update time; any
 * other (the parameter server's stand-in on its workers) takes none. */
d5_status d5_optimizer_update_all(d5_optimizer *o, const float *const *grads)
{
    (void)grads;
    double t = d5__sim_owed_s;
    d5__sim_owed_s = 0;
    if (o->desc == &replayed && o->elements > 0)
        t += (double)o->elements * update_s_per_element * step_factor;
    if (t > 0) smpi_execute(t);
    return D5_OK;
}

/* ---- The trainer: the profile's parameters and timeline ---- */

#define MAX_HOOKS 8

struct d5_trainer {
    const d5_step_profile *prof;
    float *params, *grads; /* shared: every parameter's, one after another */
    int64_t *offset;       /* of parameter i in them */
    float **param_at, **grad_at;
    d5_optimizer *opt;
    d5_trainer_hooks hooks[MAX_HOOKS];
    int nhooks;
};

int32_t d5_trainer_param_count(const d5_trainer *t)
{
    return t->prof->n;
}

const char *d5_trainer_param_name(const d5_trainer *t, int32_t i)
{
    return t->prof->names[i];
}

int64_t d5_trainer_param_size(const d5_trainer *t, int32_t i)
{
    return t->prof->elements[i];
}

float *d5_trainer_param(d5_trainer *t, int32_t i)
{
    return t->param_at[i];
}

float *d5_trainer_gradient(d5_trainer *t, int32_t i)
{
    return t->grad_at[i];
}

int64_t d5_trainer_batch(const d5_trainer *t)
{
    return t->prof->batch;
}

d5_optimizer *d5_trainer_optimizer(const d5_trainer *t)
{
    return t->opt;
}

d5_status d5_trainer_set_optimizer(d5_trainer *t, d5_optimizer *opt)
{
    t->opt = opt;
    if (opt->elements == 0)
        for (int32_t i = 0; i < t->prof->n; i++) opt->elements += t->prof->elements[i];
    return D5_OK;
}

d5_status d5_trainer_add_hooks(d5_trainer *t, const char *name, const d5_trainer_hooks *hooks)
{
    if (t->nhooks == MAX_HOOKS)
        return d5_error(D5_ERR_STATE, "d5-sim-train: more than %d hook sets (%s)", MAX_HOOKS, name);
    t->hooks[t->nhooks++] = *hooks;
    return D5_OK;
}

static d5_status trainer_create(const d5_step_profile *prof, d5_trainer **out)
{
    d5_trainer *t = d5_calloc(1, sizeof *t, "trainer");
    if (!t) return D5_ERR_NOMEM;
    t->prof = prof;
    int64_t total = 0;
    t->offset = d5_alloc((size_t)prof->n * sizeof *t->offset, "trainer");
    t->param_at = d5_alloc((size_t)prof->n * sizeof *t->param_at, "trainer");
    t->grad_at = d5_alloc((size_t)prof->n * sizeof *t->grad_at, "trainer");
    for (int32_t i = 0; t->offset && i < prof->n; i++) {
        t->offset[i] = total;
        total += prof->elements[i];
    }
    t->params = SMPI_SHARED_MALLOC((size_t)total * sizeof(float));
    t->grads = SMPI_SHARED_MALLOC((size_t)total * sizeof(float));
    *out = t;
    if (!t->offset || !t->param_at || !t->grad_at || !t->params || !t->grads)
        return d5_error(D5_ERR_NOMEM, "d5-sim-train: out of memory for %lld parameters",
                        (long long)total);
    for (int32_t i = 0; i < prof->n; i++) {
        t->param_at[i] = t->params + t->offset[i];
        t->grad_at[i] = t->grads + t->offset[i];
    }
    return D5_OK;
}

static void trainer_free(d5_trainer *t)
{
    if (!t) return;
    if (t->params) SMPI_SHARED_FREE(t->params);
    if (t->grads) SMPI_SHARED_FREE(t->grads);
    d5_free(t->offset);
    d5_free(t->param_at);
    d5_free(t->grad_at);
    d5_free(t);
}

/* Computes on the simulated clock from *now to time `at` of the step (times
 * the step's factor). */
static void until(double at, double *now)
{
    double t = (at > *now ? (at - *now) * step_factor : 0) + d5__sim_owed_s;
    d5__sim_owed_s = 0;
    if (t > 0) smpi_execute(t);
    if (at > *now) *now = at;
}

#define EACH_HOOK(field, ...)                                                                      \
    for (int h_ = 0; s == D5_OK && h_ < t->nhooks; h_++)                                           \
        if (t->hooks[h_].field) s = t->hooks[h_].field(t, t->hooks[h_].user, __VA_ARGS__);

/* One step of the profile, the hooks called where the trainer calls them. */
static d5_status replay_step(d5_trainer *t, int64_t step)
{
    const d5_step_profile *p = t->prof;
    d5_status s = D5_OK;
    double now = 0;
    for (int32_t k = 0; s == D5_OK && k < p->n; k++) {
        until(p->ready_s[k], &now);
        EACH_HOOK(gradient_ready, step, p->order[k]);
    }
    until(p->backward_end_s, &now);
    d5_step_grads g = {step, p->n, t->grad_at, t->param_at, p->elements};
    EACH_HOOK(after_backward, &g);
    until(p->update_begin_s, &now);
    EACH_HOOK(before_update, step);
    if (s == D5_OK) s = d5_optimizer_update_all(t->opt, (const float *const *)t->grad_at);
    now = p->update_end_s; /* the update took its time */
    EACH_HOOK(after_update, step);
    until(p->step_s, &now);
    EACH_HOOK(after_step, step, 0.0);
    return s;
}

/* Which recorded step rank `rank` replays as its step k: a fixed scramble,
 * so that ranks draw different steps, the same in every run. */
static int64_t draw(int32_t rank, int64_t k, int64_t n)
{
    uint64_t h = (uint64_t)rank * 0x9E3779B97F4A7C15u ^ (uint64_t)k * 0xC2B2AE3D27D4EB4Fu;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9u;
    h ^= h >> 32;
    return (int64_t)(h % (uint64_t)n);
}

static d5_status train(d5_trainer *t, int64_t steps, int32_t rank, int vary)
{
    d5_status s = D5_OK;
    const d5_step_profile *p = t->prof;
    for (int h = 0; s == D5_OK && h < t->nhooks; h++)
        if (t->hooks[h].before_first_step) s = t->hooks[h].before_first_step(t, t->hooks[h].user);
    for (int64_t k = 1; s == D5_OK && k <= steps; k++) {
        step_factor = vary && p->nfactors > 0 ? p->factors[draw(rank, k, p->nfactors)] : 1;
        s = replay_step(t, k);
    }
    step_factor = 1;
    return s;
}

#undef EACH_HOOK

/* ---- The models of copies and sums, measured here ---- */

/* Seconds a byte of a copy (scale 1: memcpy) or a float32 sum of 8 MiB
 * buffers, the median of 7 (wall clock: SMPI runs one rank at a time). */
static double measure_s_per_byte(int sum)
{
    size_t n = (size_t)2 << 20;
    float *a = d5_alloc(n * sizeof *a, "measure"), *b = d5_alloc(n * sizeof *b, "measure");
    double t[7], v = 0;
    for (int r = 0; a && b && r < 7; r++) {
        for (size_t k = 0; k < n; k++) a[k] = b[k] = (float)k;
        uint64_t t0 = d5_monotonic_ns();
        if (sum)
            d5_comm_reduce_sum(a, b, n, D5_F32);
        else
            memcpy(a, b, n * sizeof *a);
        t[r] = (double)(d5_monotonic_ns() - t0) * 1e-9 / (double)(n * sizeof *a);
    }
    d5_stats st;
    if (a && b && d5_stats_compute(t, 7, &st) == D5_OK) v = st.median;
    d5_free(a);
    d5_free(b);
    return v;
}

/* Every time of the profile multiplied by x. */
static void scale_profile(d5_step_profile *p, double x)
{
    for (int32_t k = 0; k < p->n; k++) p->ready_s[k] *= x;
    p->backward_end_s *= x;
    p->update_begin_s *= x;
    p->update_end_s *= x;
    p->step_s *= x;
}

/* ---- The command ---- */

typedef struct options {
    const char *profile, *comm, *scheme;
    int64_t steps;
    double bucket_mb, copy_s_per_byte, sum_s_per_byte, time_scale;
    int servers, staleness, average_every;
    int vary; /* --variation recorded (1) or none (0) */
} options;

static int usage(const char *why)
{
    FILE *f = why ? stderr : stdout;
    if (why) fprintf(stderr, "d5-sim-train: %s\n", why);
    fprintf(f, "usage: smpirun -np P -platform PLATFORM.xml -hostfile HOSTS "
               "[--cfg=smpi/simulate-computation:no] d5-sim-train --profile FILE.json\n"
               "       [--scheme dsgd|local|pssgd|asgd|ssp|mavg|dpsgd] [--comm mpi|ring|recdbl]\n"
               "       [--steps N] [--bucket-mb M] [--servers N] [--staleness S] "
               "[--average-every K]\n"
               "       [--copy-s-per-byte X] [--sum-s-per-byte X] [--time-scale X]\n"
               "       [--variation recorded|none]\n"
               "Replays the step of d5 train --step-profile FILE.json on every simulated rank with "
               "the scheme's real communication (docs/level3.md). --time-scale multiplies the "
               "profile's times (a worker's smaller batch of strong scaling); copies and sums cost "
               "seconds a byte measured here unless given. --variation recorded (the default) "
               "scales each step of each rank by one of the profile's recorded steps over their "
               "median, drawn per rank and step, so that ranks wait for each other as real ones "
               "do; none replays the median step everywhere.\n");
    return 2;
}

static int parse_num(const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= lo && x <= hi)) return 0;
    *out = x;
    return 1;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){NULL, "mpi", "dsgd", 20, 25, -1, -1, 1, -1, -1, -1, 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x = 0;
        char why[256];
        if (strcmp(a, "--help") == 0) return usage(NULL) * 0;
        if (!v) {
            snprintf(why, sizeof why, "%s needs a value", a);
            return usage(why);
        }
        snprintf(why, sizeof why, "%s %s: not a valid value", a, v);
        if (strcmp(a, "--profile") == 0)
            o->profile = v;
        else if (strcmp(a, "--comm") == 0)
            o->comm = v;
        else if (strcmp(a, "--scheme") == 0)
            o->scheme = v;
        else if (strcmp(a, "--steps") == 0 && parse_num(v, 2, 1e6, &x))
            o->steps = (int64_t)x;
        else if (strcmp(a, "--bucket-mb") == 0 && parse_num(v, 0, 1e6, &x))
            o->bucket_mb = x;
        else if (strcmp(a, "--servers") == 0 && parse_num(v, 0, 1e6, &x))
            o->servers = (int)x;
        else if (strcmp(a, "--staleness") == 0 && parse_num(v, 0, 1e6, &x))
            o->staleness = (int)x;
        else if (strcmp(a, "--average-every") == 0 && parse_num(v, 1, 1e6, &x))
            o->average_every = (int)x;
        else if (strcmp(a, "--copy-s-per-byte") == 0 && parse_num(v, 0, 1, &x))
            o->copy_s_per_byte = x;
        else if (strcmp(a, "--sum-s-per-byte") == 0 && parse_num(v, 0, 1, &x))
            o->sum_s_per_byte = x;
        else if (strcmp(a, "--time-scale") == 0 && parse_num(v, 1e-6, 1e6, &x))
            o->time_scale = x;
        else if (strcmp(a, "--variation") == 0 &&
                 (strcmp(v, "recorded") == 0 || strcmp(v, "none") == 0))
            o->vary = strcmp(v, "recorded") == 0;
        else
            return usage(why);
        i++;
    }
    if (!o->profile) return usage("--profile FILE.json is required (d5 train --step-profile)");
    return -1;
}

static void print_figure(const char *name, const double *x, int64_t n)
{
    d5_stats st;
    if (n < 1 || d5_stats_compute(x, (size_t)n, &st) != D5_OK) return;
    printf("%-10s %10.3f ms  [%.3f, %.3f]\n", name, st.median * 1e3, st.ci_low * 1e3,
           st.ci_high * 1e3);
}

static void report(const options *o, const d5_step_profile *p, const d5_dist_result *r,
                   int32_t size)
{
    int64_t total = 0;
    for (int32_t i = 0; i < p->n; i++) total += p->elements[i];
    printf("# d5-sim-train: %s on %d simulated ranks (%d workers, %d servers), comm %s; profile "
           "%s: batch %lld a worker, %lld parameters, step %.3f ms (%lld steps, %d threads)\n",
           o->scheme, (int)size, (int)r->workers, (int)r->servers, o->comm, p->model,
           (long long)p->batch, (long long)total, p->step_s * 1e3, (long long)p->steps,
           (int)p->threads);
    if (o->vary && p->nfactors > 0) {
        double lo = p->factors[0], hi = p->factors[0];
        for (int64_t k = 1; k < p->nfactors; k++) {
            if (p->factors[k] < lo) lo = p->factors[k];
            if (p->factors[k] > hi) hi = p->factors[k];
        }
        printf("# each rank's steps scaled by recorded steps over their median (%lld, %.3f to "
               "%.3f; --variation none: the median step everywhere)\n",
               (long long)p->nfactors, lo, hi);
    }
    if (o->time_scale != 1)
        printf("# the profile's times multiplied by %g (--time-scale): the step above is scaled\n",
               o->time_scale);
    printf("# a copy %.4f ns/B, a sum %.4f ns/B (%s); SimGrid SMPI's clock; the first of %lld "
           "steps left out; median [95%% CI]\n",
           d5__sim_copy_s_per_byte * 1e9, d5__sim_reduce_s_per_byte * 1e9,
           o->copy_s_per_byte >= 0 || o->sum_s_per_byte >= 0 ? "given or measured here"
                                                             : "measured here",
           (long long)r->steps);
    int64_t n = r->steps - 1;
    print_figure("step", r->step_s + 1, n);
    print_figure("compute", r->compute_s + 1, n);
    print_figure("exposed", r->exposed_s + 1, n);
    printf("%-10s %10.1f samples/s (all workers)\n", "throughput", r->samples_per_second);
    printf("%-10s %10.3f MB sent a step (all ranks)\n", "traffic",
           r->steps > 0 ? (double)r->bytes_sent_all / (double)r->steps * 1e-6 : 0);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    d5_step_profile prof;
    d5_status s = d5_step_profile_read(o.profile, &prof);
    if (s != D5_OK) {
        fprintf(stderr, "d5-sim-train: %s\n", d5_last_error());
        return 3;
    }
    scale_profile(&prof, o.time_scale);
    d5_comm_params cp = d5_comm_default_params();
    cp.backend = o.comm;
    cp.thread_level = D5_COMM_THREAD_SINGLE;
    d5_comm *c = NULL;
    d5_dist *d = NULL;
    d5_trainer *t = NULL;
    d5_optimizer *opt = NULL;
    d5_dist_result res;
    memset(&res, 0, sizeof res);
    s = d5_comm_create(&cp, &c);
    int rank = s == D5_OK ? d5_comm_rank(c) : -1;
    /* The models: measured by rank 0 on this machine, unless given. */
    double rates[2] = {o.copy_s_per_byte, o.sum_s_per_byte};
    if (s == D5_OK && rank == 0)
        for (int k = 0; k < 2; k++)
            if (rates[k] < 0) rates[k] = measure_s_per_byte(k);
    if (s == D5_OK && MPI_Bcast(rates, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        s = d5_error(D5_ERR_BACKEND, "d5-sim-train: MPI_Bcast of the models failed");
    d5__sim_copy_s_per_byte = rates[0] > 0 ? rates[0] : 1e-15;
    d5__sim_reduce_s_per_byte = rates[1] > 0 ? rates[1] : 1e-15;
    d5__sim_reduce_alpha_s = 0;
    int64_t total = 0;
    for (int32_t i = 0; i < prof.n; i++) total += prof.elements[i];
    update_s_per_element = (prof.update_end_s - prof.update_begin_s) / (double)total;
    d5_dist_params dp = d5_dist_default_params();
    if (s == D5_OK) s = d5_dist_scheme_parse(o.scheme, &dp.scheme);
    if (o.bucket_mb >= 0) dp.bucket_mb = o.bucket_mb;
    if (o.servers >= 0) dp.servers = o.servers;
    if (o.staleness >= 0) dp.staleness = o.staleness;
    if (o.average_every >= 0) dp.average_every = o.average_every;
    dp.epoch_steps = o.steps;
    if (s == D5_OK) s = d5_dist_create(c, &dp, &d);
    if (s == D5_OK) s = trainer_create(&prof, &t);
    if (s == D5_OK) s = d5_optimizer_create_custom(&replayed, NULL, &opt);
    if (s == D5_OK && d5_dist_is_server(d))
        s = d5_dist_serve(d, t, opt);
    else if (s == D5_OK) {
        s = d5_dist_attach(d, t, opt);
        if (s == D5_OK) s = train(t, o.steps, rank, o.vary);
    }
    if (s == D5_OK) s = d5_dist_finish(d, t, &res);
    if (s == D5_OK && rank == 0) report(&o, &prof, &res, d5_comm_size(c));
    if (s != D5_OK) fprintf(stderr, "d5-sim-train: rank %d: %s\n", rank, d5_last_error());
    d5_dist_result_free(&res);
    d5_dist_free(d);
    trainer_free(t);
    d5_optimizer_free(opt);
    d5_comm_free(c);
    d5_step_profile_free(&prof);
    return s == D5_OK ? 0 : 1;
}
