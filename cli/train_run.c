/* One run of d5 train from its typed options: the distributed job, the
 * model, data, optimizer and trainer, the training, the report, the second
 * runs (the float32 baseline of --precision, --compare-backend), and the
 * files; the outcome back to the caller (d5 recipe). */
#define _POSIX_C_SOURCE 200809L
#include "train_run.h"

#include "train_dist.h"
#include "train_out.h"
#include "train_results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A path rather than a built-in model's name: something that is not a folder
 * exists there (a FIFO included, for the loader to refuse by name), or the
 * name has a folder or the .onnx suffix in it. */
static int is_path(const char *model)
{
    struct stat st;
    size_t len = strlen(model);
    return (stat(model, &st) == 0 && !S_ISDIR(st.st_mode)) || strchr(model, '/') ||
           (len > 5 && strcmp(model + len - 5, ".onnx") == 0);
}

/* The model: a built-in name or an ONNX file, at batch size `batch`. */
static d5_status open_model(const char *model, int64_t batch, int64_t classes, uint64_t seed,
                            d5_network **net)
{
    if (is_path(model)) {
        d5_status s = d5_onnx_load(model, net);
        if (s == D5_OK) s = d5_network_set_batch(*net, batch, 1);
        return s;
    }
    d5_model_params mp = d5_model_default_params();
    mp.batch = batch;
    mp.classes = classes;
    mp.seed = seed;
    return d5_model_build(model, &mp, net);
}

/* Refuses a batch that the training set of n samples cannot fill once in a
 * worker's share (the sampler drops the last partial batch), as the trainer
 * would, but before anything is built for that batch. */
static d5_status check_full_batch(const char *name, int64_t n, const d5_sampler_params *sp)
{
    int64_t share = sp->kind == D5_SAMPLER_PARTITIONED ? n / sp->world : n;
    int64_t need = sp->kind == D5_SAMPLER_SHARDED_BATCH ? sp->batch * sp->world : sp->batch;
    if (share >= need) return D5_OK;
    int64_t most = sp->kind == D5_SAMPLER_SHARDED_BATCH ? n / sp->world * sp->world : share;
    return d5_error(D5_ERR_INVALID,
                    "the training set %s of %lld samples holds no full batch of %lld (the last "
                    "partial batch is dropped): no step would run; --batch %lld at most",
                    name, (long long)n, (long long)need, (long long)most);
}

/* The vocabulary of a model that reads token ids from graph input `input`:
 * the rows of the embedding table (an initializer) of the Gather that looks
 * them up. */
static d5_status token_vocab(const d5_network *net, const char *input, int64_t *vocab)
{
    for (int32_t i = 0; i < d5_network_node_count(net); i++) {
        d5_node_info n;
        d5_network_node_at(net, i, &n);
        if (strcmp(n.op_type, "Gather") != 0 || n.ninputs < 2 || strcmp(n.inputs[1], input) != 0)
            continue;
        int32_t v;
        d5_value_info table;
        if (d5_network_find_value(net, n.inputs[0], &v) != D5_OK) continue;
        d5_network_value_at(net, v, &table);
        if (table.kind == D5_VALUE_INITIALIZER && table.desc.ndim >= 1) {
            *vocab = table.desc.shape[0];
            return D5_OK;
        }
    }
    return d5_error(D5_ERR_UNSUPPORTED,
                    "--dataset synthetic: graph input '%s' holds token ids, but no Gather looks "
                    "them up in an embedding table, so the vocabulary is unknown",
                    input);
}

/* "name[:DIR]": mnist, fashion-mnist, cifar10, cifar100, synthetic. */
static d5_status open_dataset(const char *spec, const d5_network *net, uint64_t seed,
                              d5_dataset **train, d5_dataset **test)
{
    char name[64], dir[4096];
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (n >= sizeof name) return d5_error(D5_ERR_INVALID, "--dataset '%s': unknown name", spec);
    memcpy(name, spec, n);
    name[n] = 0;
    if (colon)
        snprintf(dir, sizeof dir, "%s", colon + 1);
    else
        d5_dataset_default_dir(strcmp(name, "synthetic") == 0 ? "mnist" : name, dir, sizeof dir);
    d5_status s;
    if (strcmp(name, "mnist") == 0 || strcmp(name, "fashion-mnist") == 0) {
        s = d5_dataset_open_mnist(dir, 1, train);
        if (s == D5_OK) s = d5_dataset_open_mnist(dir, 0, test);
    } else if (strcmp(name, "cifar10") == 0 || strcmp(name, "cifar100") == 0) {
        int classes = strcmp(name, "cifar10") == 0 ? 10 : 100;
        s = d5_dataset_open_cifar(dir, 1, classes, train);
        if (s == D5_OK) s = d5_dataset_open_cifar(dir, 0, classes, test);
    } else if (strcmp(name, "synthetic") == 0) {
        /* Samples of the model's input shape, one class per logit. */
        int32_t v;
        d5_value_info in, out;
        if (d5_network_input_count(net) != 1 || d5_network_output_count(net) < 1)
            return d5_error(D5_ERR_INVALID,
                            "--dataset synthetic: the model has %d graph inputs and %d outputs; a "
                            "classifier has one input [batch, sample...] and an output [batch, "
                            "classes]",
                            (int)d5_network_input_count(net), (int)d5_network_output_count(net));
        s = d5_network_find_value(net, d5_network_input_name(net, 0), &v);
        if (s == D5_OK) d5_network_value_at(net, v, &in);
        if (s == D5_OK) s = d5_network_find_value(net, d5_network_output_name(net, 0), &v);
        if (s != D5_OK) return s;
        d5_network_value_at(net, v, &out);
        if (in.desc.ndim < 2)
            return d5_error(D5_ERR_SHAPE,
                            "--dataset synthetic: graph input '%s' has %d dimensions; a "
                            "classifier's input is [batch, sample...] with at least 2",
                            in.name, (int)in.desc.ndim);
        d5_tensor_desc sample = in.desc;
        sample.ndim--;
        memmove(sample.shape, sample.shape + 1, (size_t)sample.ndim * sizeof *sample.shape);
        int64_t classes = out.desc.ndim == 2 && out.desc.shape[1] > 0 ? out.desc.shape[1] : 10;
        if (in.desc.dtype == D5_I64 || in.desc.dtype == D5_I32) {
            int64_t vocab = 0;
            s = token_vocab(net, in.name, &vocab);
            if (s == D5_OK)
                s = d5_dataset_synthetic_tokens(&sample, 6400, classes, vocab, seed, train);
            if (s == D5_OK)
                s = d5_dataset_synthetic_tokens(&sample, 1024, classes, vocab, seed + 1, test);
            return s;
        }
        s = d5_dataset_synthetic(&sample, 6400, classes, seed, train);
        if (s == D5_OK) s = d5_dataset_synthetic(&sample, 1024, classes, seed + 1, test);
    } else {
        return d5_error(D5_ERR_INVALID,
                        "--dataset '%s': unknown; expected mnist, fashion-mnist, cifar10, "
                        "cifar100 or synthetic, optionally with :DIR",
                        spec);
    }
    return s;
}

/* Trains once. With `reports` (NULL: none) and its memory_step > 0 that step
 * is recorded, and the trainer is kept in `reports` for its profile. */
static d5_status train_with(d5_network *net, const d5_dataset *train, const d5_dataset *test,
                            d5_optimizer *opt, const d5_trainer_params *tp,
                            const d5_sampler_params *sp, d5_timer *timer, d5_train_result *res,
                            train_reports *reports)
{
    d5_sampler *smp = NULL;
    d5_trainer *t = NULL;
    d5_status s = d5_sampler_create(train, sp, &smp);
    if (s == D5_OK) s = d5_trainer_create(net, tp, &t);
    if (s == D5_OK) s = d5_trainer_set_sampler(t, smp);
    if (s == D5_OK) s = d5_trainer_set_timer(t, timer);
    if (s == D5_OK) s = d5_trainer_set_optimizer(t, opt);
    int record = reports && reports->memory_step > 0;
    if (s == D5_OK && record) s = d5_trainer_record_memory(t, reports->memory_step);
    if (s == D5_OK) s = train_reports_attach_steps(reports, t);
    if (s == D5_OK) s = d5_trainer_run(t, NULL, test, 0, res);
    if (s == D5_OK) s = train_reports_take_steps(reports);
    if (s == D5_OK && record)
        reports->trainer = t;
    else
        d5_trainer_free(t);
    d5_sampler_free(smp);
    return s;
}

/* What a second run of the same training needs: the model, data, optimizer
 * and sampler of the first (--compare-backend, the float32 baseline of
 * --precision). */
typedef struct rerun {
    const char *model;
    int64_t batch;
    int seed;
    const d5_dataset *train, *test;
    const char *optimizer;
    const d5_optimizer_params *op;
    const d5_sampler_params *sp;
} rerun;

/* Trains again from the same weights (the model built or loaded anew with
 * the same seed) and batches, with a fresh optimizer and the trainer
 * parameters p, into *res. */
static d5_status train_again(const rerun *r, const d5_trainer_params *p, d5_train_result *res)
{
    d5_network *net = NULL;
    d5_optimizer *opt = NULL;
    d5_status s = open_model(r->model, r->batch, 0, (uint64_t)r->seed, &net);
    if (s == D5_OK) s = d5_optimizer_create(r->optimizer, r->op, &opt);
    if (s == D5_OK) s = train_with(net, r->train, r->test, opt, p, r->sp, NULL, res, NULL);
    d5_optimizer_free(opt);
    d5_network_free(net);
    return s;
}

/* --precision bf16 or f16: the same training in float32 (unless
 * --no-baseline), into prec->base. */
static d5_status train_baseline(const rerun *r, const d5_trainer_params *tp, train_precision *prec)
{
    d5_trainer_params p = *tp;
    p.precision = "f32";
    p.loss_scaling = D5_LOSS_SCALING_OFF;
    p.checkpoint = NULL;
    p.snapshot_every = 0;
    p.progress = 1;
    printf("\ntraining the float32 baseline (same weights, seed and batches)\n");
    fflush(stdout);
    d5_status s = train_again(r, &p, &prec->base);
    prec->has_baseline = s == D5_OK;
    return s;
}

/* Trains again from the same weights and seed on other backends and prints
 * how far the two runs' parameters drift apart (the Deep500 paper's
 * divergence figure). */
static d5_status compare_runs(const rerun *r, const d5_trainer_params *tp, const char *backends,
                              const d5_train_result *first)
{
    d5_train_result second;
    memset(&second, 0, sizeof second);
    d5_trainer_params p = *tp;
    p.backend = backends;
    p.checkpoint = NULL;
    p.progress = 1;
    printf("\ncomparing with a run on %s (parameters every %lld steps)\n", backends,
           (long long)p.snapshot_every);
    fflush(stdout);
    d5_status s = train_again(r, &p, &second);
    if (s == D5_OK) {
        int64_t n = first->nsnapshots < second.nsnapshots ? first->nsnapshots : second.nsnapshots;
        printf("backends of the second run: ");
        train_print_backends(stdout, &second);
        printf("\n%8s %14s %14s\n", "step", "l2", "linf");
        for (int64_t k = 0; k < n; k++) {
            double l2, linf;
            d5_param_distance(first->snapshots + k * first->param_elements,
                              second.snapshots + k * second.param_elements, first->param_elements,
                              &l2, &linf);
            printf("%8lld %14.6g %14.6g\n", (long long)((k + 1) * p.snapshot_every), l2, linf);
        }
        printf("final test accuracy: %.2f%% and %.2f%%\n", 100 * first->final_test_accuracy,
               100 * second.final_test_accuracy);
    }
    d5_train_result_free(&second);
    return s;
}

/* A run of d5 train: what its steps share. */
typedef struct run {
    const train_options *o;
    const d5_train_config *c;
    const cli_spec *spec; /* the options' table holding o's values */
    job jb;
    /* The outputs of rank 0 (NULL on the other ranks). */
    const char *json, *csv, *mlflow, *wandb, *checkpoint, *out, *memory, *step_profile;
    int want_out; /* every rank takes part in the folder's merged trace */
    d5_sampler_params sp;
    d5_optimizer_params op;
    d5_trainer_params tp;
    train_precision prec;
    train_reports tr;
    d5_contention whole;
    d5_network *net;
    d5_dataset *train, *test;
    d5_optimizer *opt;
    d5_timer *timer;
    d5_train_result res;
    d5_runlog *log;
    json_t *doc;
    int64_t local_batch, global_batch, channels;
    const char *backend_used;
    char aug[256];
    char header[1024];
    char trace_part[4200];
} run;

/* The distributed job, the echo of the options, the outputs' checks and the
 * threads: -1 to go on, or an exit status. */
static int run_begin(run *r)
{
    const train_options *o = r->o;
    memset(&r->jb, 0, sizeof r->jb);
    r->jb.size = r->jb.workers = 1;
    r->sp = d5_train_config_sampler(r->c, o->distributed != NULL);
    if (o->distributed) {
        d5_dist_params dp = d5_dist_default_params();
        dp.scheme = o->scheme;
        if (o->servers >= 0) dp.servers = o->servers;
        if (o->staleness >= 0) dp.staleness = o->staleness;
        if (o->average_every >= 0) dp.average_every = o->average_every;
        if (o->bucket_mb >= 0) dp.bucket_mb = o->bucket_mb;
        dp.hash_every = o->hash_every;
        int rc = job_begin(&r->jb, &dp, o->comm ? o->comm : "mpi", o->comm_timeout, r->sp.kind,
                           r->c->batch);
        if (rc >= 0) return rc;
        /* Only rank 0 prints and writes files; the others keep standard error. */
        if (r->jb.rank != 0 && !freopen("/dev/null", "w", stdout)) r->jb.rank = r->jb.rank;
    }
    cli_echo(stdout, r->spec);
    /* A results folder is never overwritten, as d5 bench's. */
    struct stat out_st;
    int out_taken = r->jb.rank == 0 && o->outs.out && stat(o->outs.out, &out_st) == 0;
    if (out_taken)
        fprintf(stderr, "d5 train: results folder '%s' already exists; choose another --out\n",
                o->outs.out);
    int ok = r->jb.rank != 0 || (!out_taken && cli_outputs_check("train", &o->outs) &&
                                 cli_output_ok("train", "--trace", o->trace, 0) &&
                                 cli_output_ok("train", "--checkpoint", r->c->checkpoint, 0) &&
                                 cli_output_ok("train", "--memory", o->memory, 0) &&
                                 cli_output_ok("train", "--step-profile", o->step_profile, 0));
    if (r->jb.comm) ok = job_agree_ok(&r->jb, ok);
    if (!ok) return job_end(&r->jb, out_taken ? D5_EXIT_USAGE : D5_EXIT_INPUT);
    r->want_out = o->outs.out != NULL;
    if (r->jb.rank == 0) {
        r->json = o->outs.json, r->csv = o->outs.csv, r->mlflow = o->outs.mlflow;
        r->wandb = o->outs.wandb, r->out = o->outs.out;
        r->checkpoint = r->c->checkpoint, r->memory = o->memory;
        r->step_profile = o->step_profile;
    }
    int rc = cli_threads_apply("train", o->threads);
    return rc >= 0 ? job_end(&r->jb, rc) : -1;
}

/* The run log (rank 0): the resolved configuration now, the metrics after
 * the run; --mlflow and --wandb write it. */
static d5_status open_log(run *r)
{
    char name[512];
    snprintf(name, sizeof name, "%s on %s", r->c->model, r->c->dataset);
    d5_status s = d5_runlog_create(name, &r->log);
    if (s == D5_OK) s = cli_runlog_context(r->log, r->spec);
    train_run_params rp = {d5_train_sampler_name(r->sp.kind),
                           r->backend_used,
                           r->aug,
                           r->local_batch,
                           r->global_batch,
                           &r->jb,
                           r->train,
                           r->test,
                           r->net,
                           &r->tp,
                           r->opt};
    if (s == D5_OK) s = train_out_log_params(r->log, &rp);
    return s;
}

/* The model, the data, the optimizer, the trainer's parameters, the timer
 * and the run log. */
static d5_status run_setup(run *r)
{
    const d5_train_config *c = r->c;
    job *jb = &r->jb;
    d5_sampler_params *sp = &r->sp;
    r->local_batch = sp->kind == D5_SAMPLER_SHARDED_BATCH ? c->batch / jb->workers : c->batch;
    d5_status s = open_model(c->model, r->local_batch, 0, (uint64_t)c->seed, &r->net);
    if (s == D5_OK && !jb->server)
        s = open_dataset(c->dataset, r->net, (uint64_t)c->seed, &r->train, &r->test);
    sp->batch = r->local_batch;
    sp->rank = jb->worker > 0 ? jb->worker : 0;
    sp->world = jb->workers;
    /* A batch the data cannot fill is refused before the executor, the
     * optimizer and the trainer are built for it (gigabytes at a huge batch). */
    if (s == D5_OK && !jb->server)
        s = check_full_batch(d5_dataset_name(r->train), d5_dataset_size(r->train), sp);
    if (s == D5_OK && sp->augment.normalize) s = d5_train_channel_stats(r->train, &sp->augment);
    const d5_tensor_desc *sd = r->train ? d5_dataset_sample_desc(r->train) : NULL;
    r->channels = sd && sd->ndim == 3 ? sd->shape[0] : 1;
    r->op = d5_train_config_optimizer(c);
    if (s == D5_OK) s = d5_optimizer_create(c->optimizer, &r->op, &r->opt);
    /* Steps per epoch: a worker's share of the data in its batches. */
    int64_t per_epoch = r->train ? d5_dataset_size(r->train) / c->batch : 1;
    if (r->train && sp->kind == D5_SAMPLER_PARTITIONED)
        per_epoch = d5_dataset_size(r->train) / jb->workers / c->batch;
    jb->epoch_steps = per_epoch;
    r->tp = d5_train_config_trainer(c, per_epoch);
    r->tp.checkpoint = r->checkpoint;
    r->tp.progress = jb->rank == 0;
    r->prec.precision = c->precision;
    r->prec.loss_scale = r->tp.loss_scale;
    d5_timer_params tmp = d5_timer_default_params();
    tmp.name = "d5 train";
    if (s == D5_OK) s = d5_timer_create(&tmp, &r->timer);
    r->global_batch =
        sp->kind == D5_SAMPLER_SHARDED_BATCH ? c->batch : r->local_batch * (int64_t)jb->workers;
    train_format_augment(&sp->augment, r->channels, r->aug, sizeof r->aug);
    r->backend_used = c->backend ? c->backend : d5_backend_default_list();
    if (s == D5_OK && jb->rank == 0) s = open_log(r);
    /* The system sampler and one step's memory (rank 0; memory without
     * --distributed, when a file asks for it). */
    r->tr.system_hz = r->o->system_hz;
    r->tr.memory_step = !jb->comm && (r->memory || r->out) ? r->o->memory_step : 0;
    r->tr.record_steps = r->o->step_profile != NULL;
    return s;
}

/* The header, the training (or the parameter server's part) and the end of
 * the distributed job. */
static d5_status run_train(run *r)
{
    const d5_train_config *c = r->c;
    job *jb = &r->jb;
    d5_status s = D5_OK;
    if (!jb->server) {
        snprintf(r->header, sizeof r->header,
                 "training %s (%lld parameters) on %s: %lld training, %lld test samples, batch "
                 "%d, %lld batches per epoch\nsampler: %s, seed %d; augmentations: %s\n",
                 c->model, (long long)d5_network_param_elements(r->net), d5_dataset_name(r->train),
                 (long long)d5_dataset_size(r->train), (long long)d5_dataset_size(r->test),
                 (int)c->batch, (long long)jb->epoch_steps, d5_train_sampler_name(r->sp.kind),
                 (int)c->seed, r->aug);
        fputs(r->header, stdout);
        fflush(stdout);
        if (jb->rank == 0) s = train_reports_start(&r->tr);
        if (s == D5_OK)
            s = jb->comm ? job_train(jb, r->net, r->train, r->test, r->opt, &r->tp, &r->sp,
                                     r->timer, &r->res, &r->tr)
                         : train_with(r->net, r->train, r->test, r->opt, &r->tp, &r->sp, r->timer,
                                      &r->res, &r->tr);
        if (s == D5_OK && jb->rank == 0) s = train_reports_stop(&r->tr, &r->res);
    } else {
        s = job_serve(jb, r->net, r->opt, &r->tp);
    }
    if (s == D5_OK && jb->comm) s = job_finish(jb);
    if (s == D5_OK && jb->rank == 0 && jb->comm && jb->res.losses) job_global_losses(jb, &r->res);
    return s;
}

static train_report report_of(run *r)
{
    train_report rep = {&r->res,
                        r->c->target_accuracy,
                        r->backend_used,
                        &r->jb,
                        d5_train_sampler_name(r->sp.kind),
                        r->c->batch,
                        r->local_batch,
                        r->timer,
                        &r->tr,
                        &r->prec};
    return rep;
}

/* The report, the second runs, the traces and the memory file. */
static d5_status run_report(run *r)
{
    const d5_train_config *c = r->c;
    job *jb = &r->jb;
    rerun again = {c->model, c->batch, c->seed, r->train, r->test, c->optimizer, &r->op, &r->sp};
    train_report rep = report_of(r);
    d5_status s = D5_OK;
    if (jb->rank == 0) {
        s = train_print_report(stdout, &rep);
        fflush(stdout);
        cli_contention_end("train", &r->whole);
    }
    int low = strcmp(c->precision, "bf16") == 0 || strcmp(c->precision, "f16") == 0;
    if (s == D5_OK && !jb->comm && low && c->baseline) {
        s = train_baseline(&again, &r->tp, &r->prec);
        if (s == D5_OK) train_precision_print_baseline(stdout, &r->prec, &r->res);
    }
    if (s == D5_OK && c->compare_backend)
        s = compare_runs(&again, &r->tp, c->compare_backend, &r->res);
    if (s == D5_OK && r->o->trace)
        s = jb->comm ? d5_comm_trace_merge(jb->comm, r->timer, r->o->trace)
                     : train_reports_trace(&r->tr, r->timer, r->o->trace);
    if (s == D5_OK && r->memory) s = train_reports_memory_file(&r->tr, r->memory);
    if (s == D5_OK && r->step_profile)
        s = train_reports_step_file(&r->tr, c->model, r->res.threads_max, r->step_profile);
    /* The folder's trace of every rank: merged by all, moved in by rank 0. */
    if (s == D5_OK && r->want_out && jb->comm) {
        snprintf(r->trace_part, sizeof r->trace_part, "%s.trace-%ld.json",
                 r->out ? r->out : "d5-train", (long)getpid());
        s = d5_comm_trace_merge(jb->comm, r->timer, r->trace_part);
    }
    return s;
}

/* The training document (rank 0), --csv and --json. */
static d5_status run_document(run *r)
{
    const d5_train_config *c = r->c;
    if (r->jb.rank != 0) return D5_OK;
    const char *sampler = d5_train_sampler_name(r->sp.kind);
    json_t *config = json_pack("{s:s, s:s, s:s, s:f, s:i, s:i, s:i, s:s}", "model", c->model,
                               "dataset", c->dataset, "optimizer", c->optimizer, "lr", c->lr,
                               "batch", (int)c->batch, "epochs", (int)c->epochs, "seed",
                               (int)c->seed, "backend_requested", r->backend_used);
    json_object_set_new(config, "backends_used", train_backends_json(&r->res));
    json_object_set_new(config, "sampler", json_string(sampler));
    json_object_set_new(config, "precision", json_string(c->precision));
    json_t *dist_block =
        r->jb.comm ? job_report(&r->jb, NULL, sampler, c->batch, r->local_batch) : NULL;
    json_object_set_new(config, "augment", train_augment_json(&r->sp, r->channels));
    const d5_contention *w = &r->whole;
    json_object_set_new(config, "contention",
                        json_pack("{s:b, s:s, s:f, s:f, s:f, s:i, s:i}", "contended", w->contended,
                                  "detail", w->reason, "others_cores", w->others_cores,
                                  "steal_fraction", w->steal_fraction, "nivcsw_per_s",
                                  w->nivcsw_per_s, "threads_min", (int)r->res.threads_min,
                                  "threads_max", (int)r->res.threads_max));
    r->doc = train_doc(&r->res, config, train_regions_json(r->timer), dist_block);
    if (!r->doc) return d5_error(D5_ERR_NOMEM, "out of memory building the training document");
    json_object_set_new(r->doc, "precision", train_precision_json(&r->prec, &r->res));
    d5_status s = train_reports_json(&r->tr, r->doc);
    if (s == D5_OK && r->csv) s = train_out_epochs_csv(&r->res, r->csv);
    if (s == D5_OK && r->json) s = cli_json_write(r->spec, NULL, json_incref(r->doc), r->json);
    return s;
}

/* The run log's results, --mlflow, --wandb and the results folder. */
static d5_status run_files(run *r, d5_status s)
{
    if (s == D5_OK && r->log) {
        s = train_out_log_results(r->log, &r->res, train_stop_name(r->res.stop));
        if (s == D5_OK) s = train_out_metrics(r->log, &r->res, r->timer, r->global_batch);
        if (s == D5_OK) s = train_reports_log(&r->tr, r->log);
        d5_runlog_finish(r->log, s != D5_OK);
    }
    char id[33];
    if (s == D5_OK && r->mlflow) {
        s = d5_runlog_write_mlflow(r->log, r->mlflow, "d5 train", id, sizeof id);
        if (s == D5_OK) printf("mlflow run %s written under %s\n", id, r->mlflow);
    }
    if (s == D5_OK && r->wandb) {
        s = d5_runlog_write_wandb(r->log, r->wandb, "d5-train", id, sizeof id);
        if (s == D5_OK) printf("W&B offline run %s written under %s\n", id, r->wandb);
    }
    if (s == D5_OK && r->out) {
        char *text = NULL;
        size_t len = 0;
        train_report rep = report_of(r);
        s = train_summary(r->spec, r->header, &rep, &text, &len);
        train_out o = {r->spec,
                       &r->res,
                       r->timer,
                       r->doc,
                       text,
                       len,
                       r->trace_part[0] ? r->trace_part : NULL,
                       r->global_batch,
                       &r->tr};
        if (s == D5_OK) s = train_out_folder(r->out, &o);
        free(text);
        if (s == D5_OK) {
            printf("\nresults in %s/:", r->out);
            train_out_print_files(stdout, r->out);
            printf("\n");
        }
    }
    if (r->trace_part[0] && r->jb.rank == 0)
        unlink(r->trace_part); /* left when the folder failed */
    return s;
}

/* The figures for the caller. */
static d5_status run_outcome(const run *r, train_outcome *out)
{
    memset(out, 0, sizeof *out);
    const d5_train_result *res = &r->res;
    if (res->nepochs > 0) {
        out->epochs = malloc((size_t)res->nepochs * sizeof *out->epochs);
        if (!out->epochs) return d5_error(D5_ERR_NOMEM, "out of memory for the run's epochs");
        memcpy(out->epochs, res->epochs, (size_t)res->nepochs * sizeof *out->epochs);
    }
    out->nepochs = res->nepochs;
    for (int32_t i = 0; i < res->nepochs; i++) {
        out->batches += res->epochs[i].batches;
        out->seconds += res->epochs[i].seconds;
    }
    out->final_test_accuracy = res->final_test_accuracy;
    out->time_to_accuracy_s = res->time_to_accuracy_s >= 0 ? res->time_to_accuracy_s : NAN;
    out->stop = res->stop;
    out->contended = r->whole.contended;
    return D5_OK;
}

void train_outcome_free(train_outcome *o)
{
    if (!o) return;
    free(o->epochs);
    memset(o, 0, sizeof *o);
}

static void run_free(run *r)
{
    json_decref(r->doc);
    d5_runlog_free(r->log);
    train_reports_free(&r->tr);
    d5_train_result_free(&r->prec.base);
    d5_train_result_free(&r->res);
    d5_timer_free(r->timer);
    d5_optimizer_free(r->opt);
    d5_dataset_free(r->train);
    d5_dataset_free(r->test);
    d5_network_free(r->net);
}

int train_run(const train_options *o, train_outcome *out)
{
    if (out) memset(out, 0, sizeof *out);
    run *r = calloc(1, sizeof *r);
    const cli_spec *spec = r ? train_spec_of(o) : NULL;
    if (!spec) {
        free(r);
        fprintf(stderr, "d5 train: out of memory\n");
        return D5_EXIT_CHECK;
    }
    r->o = o;
    r->c = &o->cfg;
    r->spec = spec;
    int rc = run_begin(r);
    if (rc < 0) {
        d5_status s = run_setup(r);
        if (s == D5_OK) s = run_train(r);
        if (s == D5_OK) s = run_report(r);
        if (s == D5_OK) s = run_document(r);
        s = run_files(r, s);
        if (s == D5_OK && out) s = run_outcome(r, out);
        run_free(r);
        rc = s != D5_OK ? job_fail(&r->jb, s) : job_end(&r->jb, D5_EXIT_OK);
    }
    free(r);
    train_spec_free(spec);
    return rc;
}
