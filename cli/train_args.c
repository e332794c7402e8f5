/* d5 train's command line: the option table, bound to a train_options and
 * the strings of its typed fields, parsed into the typed options (the option
 * strings by level 2's parsers), the checks of the options together, and the
 * same table holding the values of given options (the echo of the resolved
 * configuration of a run that d5 recipe started). */
#define _POSIX_C_SOURCE 200809L
#include "train_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLER_LIST "ordered, shuffled, partitioned or sharded-batch"
#define TRAIN_NOPTS  43

struct train_args {
    cli_spec spec; /* first: train_spec_free frees the struct through it */
    train_options o;
    /* The typed fields' strings and int copies, as cli_parse fills them. */
    const char *schedule, *sampler, *augment;
    int warmup, max_batches, eval_every, snapshot_every, no_baseline;
    char augment_buf[128];
    char backend_help[96], scheme_help[256];
    cli_opt opts[TRAIN_NOPTS];
};

void train_options_default(train_options *o)
{
    memset(o, 0, sizeof *o);
    o->cfg = d5_train_config_default();
    o->system_hz = 10;
    o->memory_step = 2;
    o->scheme = -1;
    o->servers = o->staleness = o->average_every = -1;
    o->bucket_mb = -1;
    o->comm_timeout = 60;
}

int train_usage_error(const char *message)
{
    fprintf(stderr, "d5 train: %s (see 'd5 train --help')\n", message);
    return D5_EXIT_USAGE;
}

/* The help of --distributed, naming every scheme of d5/dist_schemes.def:
 * "local, dsgd, ... or dpsgd". */
static const char *distributed_help(char *buf, size_t size)
{
    int used =
        snprintf(buf, size, "train on every rank of an MPI job (mpirun -n P d5 train ...): ");
    for (int32_t k = 0; k < D5_DIST_SCHEME_COUNT && used > 0 && (size_t)used < size; k++)
        used += snprintf(buf + used, size - (size_t)used, "%s%s",
                         k == 0                          ? ""
                         : k == D5_DIST_SCHEME_COUNT - 1 ? " or "
                                                         : ", ",
                         d5_dist_scheme_name(k));
    if (used > 0 && (size_t)used < size)
        snprintf(buf + used, size - (size_t)used,
                 " (docs/level3.md); rank 0 prints and writes the files");
    return buf;
}

/* The option table, its destinations in *a. */
static void bind_options(train_args *a)
{
    train_options *o = &a->o;
    d5_train_config *c = &o->cfg;
    snprintf(a->backend_help, sizeof a->backend_help, "executor backends, or auto (default %s)",
             d5_backend_default_list());
    const cli_opt opts[] = {
        {"model", CLI_STRING, &c->model, "NAME|FILE.onnx",
         "a built-in model (d5 model --list; default lenet) or an ONNX classifier", 0, 0},
        {"dataset", CLI_STRING, &c->dataset, "NAME[:DIR]",
         "mnist, fashion-mnist, cifar10, cifar100 or synthetic (default mnist)", 0, 0},
        {"optimizer", CLI_STRING, &c->optimizer, "NAME",
         "sgd, momentum, nesterov, adam, adamw, adagrad, rmsprop, accelegrad (default momentum)", 0,
         0},
        {"lr", CLI_DOUBLE, &c->lr, "X", "learning rate (default 0.05)", 0, 100},
        {"momentum", CLI_DOUBLE, &c->momentum, "X", "momentum of momentum/nesterov (default 0.9)",
         0, 1},
        {"weight-decay", CLI_DOUBLE, &c->weight_decay, "X", "weight decay (default 0)", 0, 1},
        {"schedule", CLI_STRING, &a->schedule, "NAME",
         "learning rate: constant, step (x0.1 every epoch), exponential, cosine", 0, 0},
        {"warmup", CLI_INT, &a->warmup, "N", "linear warm-up over N steps (default 0)", 0, 1 << 30},
        {"batch", CLI_INT, &c->batch, "B", "batch size (default 64)", 1, 1 << 20},
        {"epochs", CLI_INT, &c->epochs, "N", "epochs (default 1)", 1, 100000},
        {"max-batches", CLI_INT, &a->max_batches, "N", "stop after N batches (default: no limit)",
         0, 1 << 30},
        {"target-accuracy", CLI_DOUBLE, &c->target_accuracy, "A",
         "stop once the test accuracy reaches A (0..1)", 0, 1},
        {"time-budget", CLI_DOUBLE, &c->time_budget_s, "S", "stop after S seconds of training", 0,
         1e9},
        {"eval-every", CLI_INT, &a->eval_every, "N",
         "evaluate every N batches (default: at each epoch's end)", 0, 1 << 30},
        {"sampler", CLI_STRING, &a->sampler, "NAME",
         "order of the training batches: " SAMPLER_LIST
         " (default shuffled; partitioned with --distributed: each worker its own shard; "
         "sharded-batch splits each global batch --batch over the workers)",
         0, 0},
        {"augment", CLI_STRING, &a->augment, "LIST",
         "augmentations, comma-separated: crop[:PAD] (random crop after zero padding, default "
         "4), flip, normalize (by each channel's mean and std in the training set; the test "
         "set too), cutout[:SIDE] (default 16); default none",
         0, 0},
        {"seed", CLI_INT, &c->seed, "S", "seed of weights, shuffling and augmentation (default 1)",
         0, 2147483647},
        {"threads", CLI_INT, &o->threads, "N", CLI_THREADS_HELP, 0, 4096},
        {"backend", CLI_STRING, &c->backend, "LIST", a->backend_help, 0, 0},
        {"checkpoint", CLI_STRING, &c->checkpoint, "FILE.onnx", "write the trained model", 0, 0},
        {"compare-backend", CLI_STRING, &c->compare_backend, "LIST",
         "train a second time from the same weights on these backends and print the l2 and "
         "l-infinity distance between the two runs' parameters along the way",
         0, 0},
        {"snapshot-every", CLI_INT, &a->snapshot_every, "N",
         "compare the parameters every N steps (default 50 with --compare-backend)", 0, 1 << 30},
        {"precision", CLI_STRING, &c->precision, "NAME",
         "compute precision of Conv, Gemm and MatMul, forward and backward: f32 (default), "
         "bf16 or f16, on float32 master weights; bf16 and f16 also train a float32 baseline "
         "from the same weights and seed and compare accuracy and step time",
         0, 0},
        {"no-baseline", CLI_FLAG, &a->no_baseline, NULL,
         "with --precision bf16 or f16: no float32 baseline run", 0, 0},
        {"loss-scale", CLI_DOUBLE, &c->loss_scale, "S",
         "--precision f16: initial scale of the dynamic loss scaling (default 32768 = 2^15; "
         "halved at an overflow, doubled after 2000 good steps); 0: no loss scaling",
         0, 16777216},
        {"distributed", CLI_STRING, &o->distributed, "SCHEME",
         distributed_help(a->scheme_help, sizeof a->scheme_help), 0, 0},
        {"comm", CLI_STRING, &o->comm, "NAME",
         "communicator backend of --distributed: mpi (default), ring, recdbl", 0, 0},
        {"servers", CLI_INT, &o->servers, "N",
         "dedicated parameter-server ranks, the last N (pssgd: default 0, rank 0 serves; asgd, "
         "ssp: default 1)",
         0, 1 << 20},
        {"staleness", CLI_INT, &o->staleness, "S",
         "ssp: steps a worker may run ahead of the slowest (default 2)", 0, 1 << 20},
        {"average-every", CLI_INT, &o->average_every, "K",
         "mavg: average the models every K steps (default 4)", 1, 1 << 30},
        {"bucket-mb", CLI_DOUBLE, &o->bucket_mb, "M",
         "dsgd: gradient bucket in MiB, allreduced while backpropagation goes on (default 25; 0: "
         "one allreduce after backpropagation)",
         0, 1e6},
        {"hash-every", CLI_INT, &o->hash_every, "N",
         "dsgd, pssgd: compare the parameters across workers every N steps too (default: at "
         "the end only)",
         0, 1 << 30},
        {"comm-timeout", CLI_DOUBLE, &o->comm_timeout, "S",
         "--distributed: end the job when a communication waits S seconds (a rank crashed or "
         "hangs; default 60, 0: wait forever)",
         0, 1e6},
        CLI_OUTPUT_JSON_AS(&o->outs, "epochs, loss curve and configuration as JSON"),
        CLI_OUTPUT_CSV_AS(&o->outs, "one row per epoch"),
        CLI_OUTPUT_MLFLOW_AS(
            &o->outs,
            "log the run as an MLflow run under DIR (mlruns): every option as a parameter, "
            "build and host as tags, loss, learning rate, step time per step, the epochs' figures "
            "and the timer's regions as metrics"),
        CLI_OUTPUT_OUT(
            &o->outs,
            "results folder to create (must not exist): summary.txt, train.json, epochs.csv, "
            "steps.csv, regions.csv, trace.json"),
        {"trace", CLI_STRING, &o->trace, "FILE",
         "Chrome/Perfetto trace of every region, with the system sampler's and the memory "
         "report's counter tracks",
         0, 0},
        CLI_OUTPUT_WANDB_AS(
            &o->outs,
            "write the run log of --mlflow as a W&B offline run under DIR (upload it with wandb "
            "sync DIR/offline-run-*)"),
        {"system-hz", CLI_DOUBLE, &o->system_hz, "HZ",
         "sample CPU, memory, disk, network (and GPU through NVML) HZ times a second during the "
         "run (default 10; 0: off): a line in the report, system.csv and system.json in --out, "
         "system/ metrics in --mlflow and --wandb, counter tracks in the traces; energy per step "
         "from RAPL and NVML where the machine exposes them",
         0, 1000},
        {"memory-step", CLI_INT, &o->memory_step, "N",
         "the training step --memory and --out record (default 2: the steady state; 1 shows "
         "what the first step allocates once; 0: none)",
         0, 1 << 30},
        {"memory", CLI_STRING, &o->memory, "FILE.json",
         "record one step's memory per operator (planned and heap bytes, the peak and where): "
         "a table, FILE.json and FILE_timeline.csv (--out holds them as memory.json and "
         "memory_timeline.csv)",
         0, 0},
        {"step-profile", CLI_STRING, &o->step_profile, "FILE.json",
         "write the timeline of a training step (medians over the steps after the first): when "
         "each gradient became ready, the end of the backward pass, the optimizer, the end of "
         "the step; d5-sim-train replays it on simulated hosts (docs/level3.md). With "
         "--distributed only the local scheme (the compute without communication)",
         0, 0},
    };
    _Static_assert(sizeof opts / sizeof opts[0] == TRAIN_NOPTS, "TRAIN_NOPTS options");
    memcpy(a->opts, opts, sizeof opts);
}

/* The spec: synopsis, description and the bound options. */
static void bind_spec(train_args *a)
{
    bind_options(a);
    a->spec = (cli_spec){CLI_SPEC(
        "train",
        "[--model NAME|FILE.onnx] [--dataset NAME[:DIR]] [--optimizer NAME] [--lr X]\n"
        "       [--batch B] [--epochs N] [--target-accuracy A] [--seed S] [--threads T]\n"
        "       [--sampler ordered|shuffled|partitioned|sharded-batch] [--augment LIST]\n"
        "       [--backend LIST] [--json FILE] [--csv FILE] [--mlflow DIR] [--trace FILE]\n"
        "       [--out DIR] [--wandb DIR] [--system-hz HZ] [--memory FILE.json]\n"
        "       [--step-profile FILE.json]\n"
        "       [--precision f32|bf16|f16 [--no-baseline] [--loss-scale S]]\n"
        "       [--distributed SCHEME [--comm NAME] [--servers N] [--staleness S]\n"
        "        [--average-every K] [--bucket-mb M] [--comm-timeout S]]   (under mpirun)",
        "Trains a classifier: batches from the sampler (--sampler, shuffled by default; the\n"
        "last partial batch dropped) with its augmentations (--augment), forward, softmax\n"
        "cross-entropy, backward, optimizer step. Prints a progress line on a terminal, then\n"
        "one row per epoch (loss, training and test accuracy, seconds, samples/s, batches/s,\n"
        "dataloader samples/s), the time to the target accuracy, and the region timer's table\n"
        "(EPOCH, BATCH, IO, FORWARD, BACKWARD, OPTIMIZER). With a fixed seed and one thread,\n"
        "two runs give bit-identical loss curves. MNIST comes from scripts/setup_data.sh,\n"
        "Fashion-MNIST from Debian's dataset-fashion-mnist; see docs/level2.md for CIFAR.\n"
        "\n"
        "With --distributed SCHEME under mpirun, mpiexec or srun every rank trains (or serves\n"
        "parameters) and rank 0 prints: after the epochs, the step time, compute and exposed\n"
        "communication (median [95% CI], the first step left out), the measured throughput of\n"
        "all workers, bytes per step, the consensus distance, the parameter hash of the\n"
        "consistent schemes and the staleness of asgd and ssp. Timings are flagged when ranks\n"
        "outnumber this node's CPUs. Example: mpirun -n 2 d5 train --distributed dsgd\n"
        "--sampler sharded-batch --batch 64 (two workers of 32, the step of one with 64).",
        a->opts)};
}

/* The strings of the typed fields from a->o (the defaults, or a run's
 * options). */
static void args_from_options(train_args *a)
{
    const d5_train_config *c = &a->o.cfg;
    a->schedule = d5_train_schedule_name(c->schedule);
    /* The sampler that runs: the default one resolved, as the run uses it. */
    a->sampler = d5_train_sampler_name(c->sampler >= 0    ? c->sampler
                                       : a->o.distributed ? D5_SAMPLER_PARTITIONED
                                                          : D5_SAMPLER_SHUFFLED);
    d5_train_augment_spec(&c->augment, a->augment_buf, sizeof a->augment_buf);
    a->augment = a->augment_buf;
    a->warmup = (int)c->warmup;
    a->max_batches = (int)c->max_batches;
    a->eval_every = (int)c->eval_every;
    a->snapshot_every = (int)c->snapshot_every;
    a->no_baseline = !c->baseline;
}

/* The typed fields from the parsed strings. */
static d5_status options_from_args(train_args *a)
{
    train_options *o = &a->o;
    d5_train_config *c = &o->cfg;
    c->warmup = a->warmup;
    c->max_batches = a->max_batches;
    c->eval_every = a->eval_every;
    c->snapshot_every = a->snapshot_every;
    c->baseline = !a->no_baseline;
    d5_status s = D5_OK;
    if (o->distributed && d5_dist_scheme_parse(o->distributed, &o->scheme) != D5_OK) {
        char why[512]; /* d5_error writes where d5_last_error points */
        snprintf(why, sizeof why, "%s", d5_last_error());
        s = d5_error(D5_ERR_INVALID, "--distributed: %s", why);
    }
    if (s == D5_OK) s = d5_train_parse_schedule(a->schedule, &c->schedule);
    c->sampler = -1;
    if (s == D5_OK && a->sampler) s = d5_train_parse_sampler(a->sampler, &c->sampler);
    if (s == D5_OK) s = d5_train_parse_augment(a->augment, &c->augment);
    return s;
}

int train_parse(int argc, char **argv, train_options *o)
{
    train_args *a = calloc(1, sizeof *a);
    if (!a) {
        fprintf(stderr, "d5 train: out of memory\n");
        return D5_EXIT_CHECK;
    }
    train_options_default(&a->o);
    args_from_options(a);
    a->sampler = NULL; /* not given: the default of the run (distributed or not) */
    bind_spec(a);
    int rc = cli_parse(&a->spec, argc, argv);
    d5_status s = D5_OK;
    if (rc < 0) s = options_from_args(a);
    if (rc < 0 && s == D5_OK) s = train_options_check(&a->o);
    if (rc < 0 && s != D5_OK) rc = train_usage_error(d5_last_error());
    *o = a->o;
    free(a);
    return rc;
}

const cli_spec *train_spec_of(const train_options *o)
{
    train_args *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->o = *o;
    args_from_options(a);
    bind_spec(a);
    return &a->spec;
}

void train_spec_free(const cli_spec *spec)
{
    free((void *)spec);
}

/* The options of --distributed without it, and the options it does not
 * take. */
static d5_status check_distributed(const train_options *o)
{
    const d5_train_config *c = &o->cfg;
    if (!o->distributed && (o->comm || o->servers >= 0 || o->staleness >= 0 ||
                            o->average_every >= 0 || o->bucket_mb >= 0 || o->hash_every > 0))
        return d5_error(D5_ERR_INVALID,
                        "--comm, --servers, --staleness, --average-every, --bucket-mb and "
                        "--hash-every configure --distributed, which is not given");
    if (!o->distributed) return D5_OK;
    if (o->memory)
        return d5_error(D5_ERR_INVALID, "--memory records one trainer's step and does not "
                                        "combine with --distributed");
    if (o->step_profile && o->scheme != D5_DIST_LOCAL)
        return d5_error(D5_ERR_INVALID,
                        "--step-profile records the compute of a step; with --distributed it "
                        "takes the local scheme only (%s's communication would count as compute)",
                        o->distributed);
    if (c->compare_backend)
        return d5_error(D5_ERR_INVALID, "--compare-backend does not combine with --distributed");
    if (o->scheme != D5_DIST_LOCAL && (c->target_accuracy > 0 || c->time_budget_s > 0))
        return d5_error(D5_ERR_INVALID,
                        "--target-accuracy and --time-budget would stop the workers at "
                        "different steps; with --distributed only the local scheme takes them");
    return D5_OK;
}

/* What --distributed does not take of the precision, the communicator and
 * the sampler. */
static d5_status check_distributed_more(const train_options *o)
{
    const d5_train_config *c = &o->cfg;
    int low = strcmp(c->precision, "bf16") == 0 || strcmp(c->precision, "f16") == 0;
    if (o->distributed && strcmp(c->precision, "f16") == 0 && c->loss_scale != 0)
        return d5_error(D5_ERR_INVALID,
                        "--precision f16 skips the steps whose gradients overflow, which each "
                        "worker of --distributed would decide alone; take bf16, or "
                        "--loss-scale 0");
    if (o->distributed && low && c->baseline)
        return d5_error(D5_ERR_INVALID,
                        "--precision %s trains a float32 baseline beside it, which "
                        "--distributed does not; add --no-baseline",
                        c->precision);
    if (o->comm && strcmp(o->comm, "nccl") == 0)
        return d5_error(D5_ERR_INVALID,
                        "--comm nccl: NCCL reduces device memory and the trainer's gradients "
                        "are in host memory; take mpi, ring or recdbl");
    if (o->distributed && o->scheme != D5_DIST_LOCAL && c->sampler >= 0 &&
        c->sampler < D5_SAMPLER_PARTITIONED)
        return d5_error(D5_ERR_INVALID,
                        "--sampler %s gives every worker the same batches; with --distributed "
                        "%s take partitioned or sharded-batch",
                        d5_train_sampler_name(c->sampler), o->distributed);
    return D5_OK;
}

d5_status train_options_check(const train_options *o)
{
    d5_status s = check_distributed(o);
    if (s == D5_OK) s = d5_train_config_check(&o->cfg);
    if (s == D5_OK) s = check_distributed_more(o);
    return s;
}
