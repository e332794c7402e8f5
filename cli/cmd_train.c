/* d5 train: trains a classifier on a dataset and reports accuracy, the loss
 * curve, time-to-accuracy and the speed of every phase. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "comm_cli.h"
#include "netload.h"
#include "train_dist.h"
#include "train_out.h"
#include "train_results.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
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

/* --sampler: one name per d5_sampler_kind, in its order. */
static const char *const sampler_names[] = {"ordered", "shuffled", "partitioned", "sharded-batch"};
_Static_assert(sizeof sampler_names / sizeof sampler_names[0] == D5_SAMPLER_SHARDED_BATCH + 1,
               "one --sampler name per d5_sampler_kind");
#define SAMPLER_LIST "ordered, shuffled, partitioned or sharded-batch"

int train_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "d5 train: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'd5 train --help')\n");
    va_end(ap);
    return D5_EXIT_USAGE;
}

/* The kind named by --sampler, or -1 after printing what is valid. */
static int32_t parse_sampler(const char *name)
{
    for (int32_t k = 0; k <= D5_SAMPLER_SHARDED_BATCH; k++)
        if (strcmp(name, sampler_names[k]) == 0) return k;
    train_usage("--sampler '%s': unknown sampler; expected " SAMPLER_LIST, name);
    return -1;
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
    if (s == D5_OK) s = d5_trainer_run(t, NULL, test, 0, res);
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

int cmd_train(int argc, char **argv)
{
    const char *model = "lenet", *dataset = "mnist", *optimizer = "momentum", *backend = NULL;
    const char *json = NULL, *csv = NULL, *mlflow = NULL, *trace = NULL, *checkpoint = NULL;
    const char *out = NULL, *memory = NULL, *wandb = NULL;
    double system_hz = 10;
    int memory_step = 2;
    const char *schedule = "constant", *sampler = NULL, *augment = "none";
    const char *distributed = NULL, *comm_name = NULL;
    char scheme_help[256];
    int servers = -1, staleness = -1, average_every = -1, hash_every = 0;
    double bucket_mb = -1, comm_timeout = 60;
    int batch = 64, epochs = 1, threads = 0, max_batches = 0, eval_every = 0, warmup = 0;
    int seed = 1, snapshot_every = 0;
    const char *compare = NULL, *precision = "f32";
    int no_baseline = 0;
    double loss_scale = -1;
    double lr = 0.05, momentum = 0.9, weight_decay = 0, target = 0, budget = 0;
    char backend_help[96];
    snprintf(backend_help, sizeof backend_help, "executor backends, or auto (default %s)",
             d5_backend_default_list());
    const cli_opt opts[] = {
        {"model", CLI_STRING, &model, "NAME|FILE.onnx",
         "a built-in model (d5 model --list; default lenet) or an ONNX classifier", 0, 0},
        {"dataset", CLI_STRING, &dataset, "NAME[:DIR]",
         "mnist, fashion-mnist, cifar10, cifar100 or synthetic (default mnist)", 0, 0},
        {"optimizer", CLI_STRING, &optimizer, "NAME",
         "sgd, momentum, nesterov, adam, adamw, adagrad, rmsprop, accelegrad (default momentum)", 0,
         0},
        {"lr", CLI_DOUBLE, &lr, "X", "learning rate (default 0.05)", 0, 100},
        {"momentum", CLI_DOUBLE, &momentum, "X", "momentum of momentum/nesterov (default 0.9)", 0,
         1},
        {"weight-decay", CLI_DOUBLE, &weight_decay, "X", "weight decay (default 0)", 0, 1},
        {"schedule", CLI_STRING, &schedule, "NAME",
         "learning rate: constant, step (x0.1 every epoch), exponential, cosine", 0, 0},
        {"warmup", CLI_INT, &warmup, "N", "linear warm-up over N steps (default 0)", 0, 1 << 30},
        {"batch", CLI_INT, &batch, "B", "batch size (default 64)", 1, 1 << 20},
        {"epochs", CLI_INT, &epochs, "N", "epochs (default 1)", 1, 100000},
        {"max-batches", CLI_INT, &max_batches, "N", "stop after N batches (default: no limit)", 0,
         1 << 30},
        {"target-accuracy", CLI_DOUBLE, &target, "A",
         "stop once the test accuracy reaches A (0..1)", 0, 1},
        {"time-budget", CLI_DOUBLE, &budget, "S", "stop after S seconds of training", 0, 1e9},
        {"eval-every", CLI_INT, &eval_every, "N",
         "evaluate every N batches (default: at each epoch's end)", 0, 1 << 30},
        {"sampler", CLI_STRING, &sampler, "NAME",
         "order of the training batches: " SAMPLER_LIST
         " (default shuffled; partitioned with --distributed: each worker its own shard; "
         "sharded-batch splits each global batch --batch over the workers)",
         0, 0},
        {"augment", CLI_STRING, &augment, "LIST",
         "augmentations, comma-separated: crop[:PAD] (random crop after zero padding, default "
         "4), flip, normalize (by each channel's mean and std in the training set; the test "
         "set too), cutout[:SIDE] (default 16); default none",
         0, 0},
        {"seed", CLI_INT, &seed, "S", "seed of weights, shuffling and augmentation (default 1)", 0,
         2147483647},
        {"threads", CLI_INT, &threads, "N", CLI_THREADS_HELP, 0, 4096},
        {"backend", CLI_STRING, &backend, "LIST", backend_help, 0, 0},
        {"checkpoint", CLI_STRING, &checkpoint, "FILE.onnx", "write the trained model", 0, 0},
        {"compare-backend", CLI_STRING, &compare, "LIST",
         "train a second time from the same weights on these backends and print the l2 and "
         "l-infinity distance between the two runs' parameters along the way",
         0, 0},
        {"snapshot-every", CLI_INT, &snapshot_every, "N",
         "compare the parameters every N steps (default 50 with --compare-backend)", 0, 1 << 30},
        {"precision", CLI_STRING, &precision, "NAME",
         "compute precision of Conv, Gemm and MatMul, forward and backward: f32 (default), "
         "bf16 or f16, on float32 master weights; bf16 and f16 also train a float32 baseline "
         "from the same weights and seed and compare accuracy and step time",
         0, 0},
        {"no-baseline", CLI_FLAG, &no_baseline, NULL,
         "with --precision bf16 or f16: no float32 baseline run", 0, 0},
        {"loss-scale", CLI_DOUBLE, &loss_scale, "S",
         "--precision f16: initial scale of the dynamic loss scaling (default 32768 = 2^15; "
         "halved at an overflow, doubled after 2000 good steps); 0: no loss scaling",
         0, 16777216},
        {"distributed", CLI_STRING, &distributed, "SCHEME",
         distributed_help(scheme_help, sizeof scheme_help), 0, 0},
        {"comm", CLI_STRING, &comm_name, "NAME",
         "communicator backend of --distributed: mpi (default), ring, recdbl", 0, 0},
        {"servers", CLI_INT, &servers, "N",
         "dedicated parameter-server ranks, the last N (pssgd: default 0, rank 0 serves; asgd, "
         "ssp: default 1)",
         0, 1 << 20},
        {"staleness", CLI_INT, &staleness, "S",
         "ssp: steps a worker may run ahead of the slowest (default 2)", 0, 1 << 20},
        {"average-every", CLI_INT, &average_every, "K",
         "mavg: average the models every K steps (default 4)", 1, 1 << 30},
        {"bucket-mb", CLI_DOUBLE, &bucket_mb, "M",
         "dsgd: gradient bucket in MiB, allreduced while backpropagation goes on (default 25; 0: "
         "one allreduce after backpropagation)",
         0, 1e6},
        {"hash-every", CLI_INT, &hash_every, "N",
         "dsgd, pssgd: compare the parameters across workers every N steps too (default: at "
         "the end only)",
         0, 1 << 30},
        {"comm-timeout", CLI_DOUBLE, &comm_timeout, "S",
         "--distributed: end the job when a communication waits S seconds (a rank crashed or "
         "hangs; default 60, 0: wait forever)",
         0, 1e6},
        {"json", CLI_STRING, &json, "FILE", "epochs, loss curve and configuration as JSON", 0, 0},
        {"csv", CLI_STRING, &csv, "FILE", "one row per epoch", 0, 0},
        {"mlflow", CLI_STRING, &mlflow, "DIR",
         "log the run as an MLflow run under DIR (mlruns): every option as a parameter, "
         "build and host as tags, loss, learning rate, step time per step, the epochs' figures "
         "and the timer's regions as metrics",
         0, 0},
        {"out", CLI_STRING, &out, "DIR",
         "results folder to create (must not exist): summary.txt, train.json, epochs.csv, "
         "steps.csv, regions.csv, trace.json",
         0, 0},
        {"trace", CLI_STRING, &trace, "FILE",
         "Chrome/Perfetto trace of every region, with the system sampler's and the memory "
         "report's counter tracks",
         0, 0},
        {"wandb", CLI_STRING, &wandb, "DIR",
         "write the run log of --mlflow as a W&B offline run under DIR (upload it with wandb "
         "sync DIR/offline-run-*)",
         0, 0},
        {"system-hz", CLI_DOUBLE, &system_hz, "HZ",
         "sample CPU, memory, disk, network (and GPU through NVML) HZ times a second during the "
         "run (default 10; 0: off): a line in the report, system.csv and system.json in --out, "
         "system/ metrics in --mlflow and --wandb, counter tracks in the traces; energy per step "
         "from RAPL and NVML where the machine exposes them",
         0, 1000},
        {"memory-step", CLI_INT, &memory_step, "N",
         "the training step --memory and --out record (default 2: the steady state; 1 shows "
         "what the first step allocates once; 0: none)",
         0, 1 << 30},
        {"memory", CLI_STRING, &memory, "FILE.json",
         "record one step's memory per operator (planned and heap bytes, the peak and where): "
         "a table, FILE.json and FILE_timeline.csv (--out holds them as memory.json and "
         "memory_timeline.csv)",
         0, 0},
    };
    const cli_spec spec = {CLI_SPEC(
        "train",
        "[--model NAME|FILE.onnx] [--dataset NAME[:DIR]] [--optimizer NAME] [--lr X]\n"
        "       [--batch B] [--epochs N] [--target-accuracy A] [--seed S] [--threads T]\n"
        "       [--sampler ordered|shuffled|partitioned|sharded-batch] [--augment LIST]\n"
        "       [--backend LIST] [--json FILE] [--csv FILE] [--mlflow DIR] [--trace FILE]\n"
        "       [--out DIR] [--wandb DIR] [--system-hz HZ] [--memory FILE.json]\n"
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
        opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    int32_t scheme = -1;
    if (distributed && d5_dist_scheme_parse(distributed, &scheme) != D5_OK)
        return train_usage("--distributed: %s", d5_last_error());
    if (!distributed && (comm_name || servers >= 0 || staleness >= 0 || average_every >= 0 ||
                         bucket_mb >= 0 || hash_every > 0))
        return train_usage("--comm, --servers, --staleness, --average-every, --bucket-mb and "
                           "--hash-every configure --distributed, which is not given");
    if (distributed && memory)
        return train_usage("--memory records one trainer's step and does not combine with "
                           "--distributed");
    if (distributed && compare)
        return train_usage("--compare-backend does not combine with --distributed");
    if (distributed && scheme != D5_DIST_LOCAL && (target > 0 || budget > 0))
        return train_usage(
            "--target-accuracy and --time-budget would stop the workers at different "
            "steps; with --distributed only the local scheme takes them");
    int low = strcmp(precision, "bf16") == 0 || strcmp(precision, "f16") == 0;
    if (!low && strcmp(precision, "f32") != 0)
        return train_usage("--precision '%s': expected f32, bf16 or f16", precision);
    if (loss_scale >= 0 && strcmp(precision, "f16") != 0)
        return train_usage("--loss-scale configures the loss scaling of --precision f16");
    if (loss_scale > 0 && loss_scale < 1)
        return train_usage("--loss-scale %g: expected 0 (no loss scaling) or a scale >= 1",
                           loss_scale);
    if (distributed && strcmp(precision, "f16") == 0 && loss_scale != 0)
        return train_usage("--precision f16 skips the steps whose gradients overflow, which each "
                           "worker of --distributed would decide alone; take bf16, or "
                           "--loss-scale 0");
    if (distributed && low && !no_baseline)
        return train_usage("--precision %s trains a float32 baseline beside it, which "
                           "--distributed does not; add --no-baseline",
                           precision);
    if (comm_name && strcmp(comm_name, "nccl") == 0)
        return train_usage(
            "--comm nccl: NCCL reduces device memory and the trainer's gradients are "
            "in host memory; take mpi, ring or recdbl");
    if (!sampler) sampler = distributed ? "partitioned" : "shuffled";
    d5_sampler_params sp = d5_sampler_default_params();
    sp.kind = parse_sampler(sampler);
    if (sp.kind < 0) return D5_EXIT_USAGE;
    if (distributed && scheme != D5_DIST_LOCAL && sp.kind < D5_SAMPLER_PARTITIONED)
        return train_usage(
            "--sampler %s gives every worker the same batches; with --distributed %s "
            "take partitioned or sharded-batch",
            sampler, distributed);
    if ((rc = train_parse_augment(augment, &sp.augment)) >= 0) return rc;
    if ((rc = cli_check_backends("train", "backend", backend, 1)) >= 0 ||
        (rc = cli_check_backends("train", "compare-backend", compare, 1)) >= 0)
        return rc;
    job jb;
    memset(&jb, 0, sizeof jb);
    jb.size = jb.workers = 1;
    if (distributed) {
        d5_dist_params dp = d5_dist_default_params();
        dp.scheme = scheme;
        if (servers >= 0) dp.servers = servers;
        if (staleness >= 0) dp.staleness = staleness;
        if (average_every >= 0) dp.average_every = average_every;
        if (bucket_mb >= 0) dp.bucket_mb = bucket_mb;
        dp.hash_every = hash_every;
        rc = job_begin(&jb, &dp, comm_name ? comm_name : "mpi", comm_timeout, sp.kind, batch);
        if (rc >= 0) return rc;
        /* Only rank 0 prints and writes files; the others keep standard error. */
        if (jb.rank != 0 && !freopen("/dev/null", "w", stdout)) jb.rank = jb.rank;
    }
    cli_echo(stdout, &spec);
    /* A results folder is never overwritten, as d5 bench's. */
    struct stat out_st;
    int out_taken = jb.rank == 0 && out && stat(out, &out_st) == 0;
    if (out_taken)
        fprintf(stderr, "d5 train: results folder '%s' already exists; choose another --out\n",
                out);
    int outputs_ok = jb.rank != 0 || (!out_taken && cli_output_ok("train", "--out", out, 0) &&
                                      cli_output_ok("train", "--json", json, 0) &&
                                      cli_output_ok("train", "--csv", csv, 0) &&
                                      cli_output_ok("train", "--trace", trace, 0) &&
                                      cli_output_ok("train", "--checkpoint", checkpoint, 0) &&
                                      cli_output_ok("train", "--memory", memory, 0) &&
                                      cli_output_ok("train", "--mlflow", mlflow, 1) &&
                                      cli_output_ok("train", "--wandb", wandb, 1));
    if (jb.comm) outputs_ok = job_agree_ok(&jb, outputs_ok);
    if (!outputs_ok) return job_end(&jb, out_taken ? D5_EXIT_USAGE : D5_EXIT_INPUT);
    int want_out = out != NULL; /* every rank takes part in the folder's merged trace */
    if (jb.rank != 0) json = csv = mlflow = wandb = checkpoint = out = memory = NULL;
    if ((rc = cli_threads_apply("train", threads)) >= 0) return job_end(&jb, rc);
    d5_status s = D5_OK;
    d5_contention whole;
    memset(&whole, 0, sizeof whole);
    d5_network *net = NULL;
    d5_dataset *train = NULL, *test = NULL;
    d5_optimizer *opt = NULL;
    d5_timer *timer = NULL;
    d5_train_result res;
    memset(&res, 0, sizeof res);
    int64_t local_batch = sp.kind == D5_SAMPLER_SHARDED_BATCH ? batch / jb.workers : batch;
    if (s == D5_OK) s = open_model(model, local_batch, 0, (uint64_t)seed, &net);
    if (s == D5_OK && !jb.server) s = open_dataset(dataset, net, (uint64_t)seed, &train, &test);
    sp.batch = local_batch;
    sp.rank = jb.worker > 0 ? jb.worker : 0;
    sp.world = jb.workers;
    sp.seed = (uint64_t)seed;
    sp.drop_last = 1;
    /* A batch the data cannot fill is refused before the executor, the
     * optimizer and the trainer are built for it (gigabytes at a huge batch). */
    if (s == D5_OK && !jb.server)
        s = check_full_batch(d5_dataset_name(train), d5_dataset_size(train), &sp);
    if (s == D5_OK && sp.augment.normalize) s = train_channel_stats(train, &sp.augment);
    const d5_tensor_desc *sd = train ? d5_dataset_sample_desc(train) : NULL;
    int64_t channels = sd && sd->ndim == 3 ? sd->shape[0] : 1;
    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = lr;
    op.momentum = momentum;
    op.weight_decay = weight_decay;
    if (s == D5_OK) s = d5_optimizer_create(optimizer, &op, &opt);
    d5_trainer_params tp = d5_trainer_default_params();
    tp.epochs = epochs;
    tp.max_batches = max_batches;
    tp.target_accuracy = target;
    tp.time_budget_s = budget;
    tp.eval_every = eval_every;
    tp.backend = backend;
    tp.checkpoint = checkpoint;
    tp.progress = jb.rank == 0;
    tp.schedule.warmup = warmup;
    tp.precision = precision;
    if (loss_scale == 0) tp.loss_scaling = D5_LOSS_SCALING_OFF;
    if (loss_scale > 0) tp.loss_scale.init = loss_scale;
    train_precision prec;
    memset(&prec, 0, sizeof prec);
    prec.precision = precision;
    prec.loss_scale = tp.loss_scale;
    if (s == D5_OK) {
        /* Steps per epoch: a worker's share of the data in its batches. */
        int64_t per_epoch = train ? d5_dataset_size(train) / batch : 1;
        if (train && sp.kind == D5_SAMPLER_PARTITIONED)
            per_epoch = d5_dataset_size(train) / jb.workers / batch;
        jb.epoch_steps = per_epoch;
        if (strcmp(schedule, "constant") == 0)
            tp.schedule.kind = D5_SCHEDULE_CONSTANT;
        else if (strcmp(schedule, "step") == 0) {
            tp.schedule.kind = D5_SCHEDULE_STEP;
            tp.schedule.gamma = 0.1;
            tp.schedule.step_size = per_epoch > 0 ? per_epoch : 1;
        } else if (strcmp(schedule, "exponential") == 0) {
            tp.schedule.kind = D5_SCHEDULE_EXPONENTIAL;
            tp.schedule.gamma = per_epoch > 0 ? pow(0.1, 1.0 / (double)per_epoch) : 0.99;
        } else if (strcmp(schedule, "cosine") == 0) {
            tp.schedule.kind = D5_SCHEDULE_COSINE;
            tp.schedule.total = per_epoch * epochs;
        } else {
            s = d5_error(D5_ERR_INVALID,
                         "--schedule '%s': expected constant, step, exponential or cosine",
                         schedule);
        }
    }
    d5_timer_params tmp = d5_timer_default_params();
    tmp.name = "d5 train";
    if (s == D5_OK) s = d5_timer_create(&tmp, &timer);
    int64_t global_batch =
        sp.kind == D5_SAMPLER_SHARDED_BATCH ? batch : local_batch * (int64_t)jb.workers;
    char aug[256];
    train_format_augment(&sp.augment, channels, aug, sizeof aug);
    /* The run log (rank 0): the resolved configuration now, the metrics after
     * the run; --mlflow writes it. */
    const char *backend_used = backend ? backend : d5_backend_default_list();
    d5_runlog *log = NULL;
    if (s == D5_OK && jb.rank == 0) {
        char name[512];
        snprintf(name, sizeof name, "%s on %s", model, dataset);
        s = d5_runlog_create(name, &log);
        if (s == D5_OK) s = cli_runlog_context(log, &spec);
        train_run_params rp = {sampler_names[sp.kind],
                               backend_used,
                               aug,
                               local_batch,
                               global_batch,
                               &jb,
                               train,
                               test,
                               net,
                               &tp,
                               opt};
        if (s == D5_OK) s = train_out_log_params(log, &rp);
    }
    /* The system sampler and one step's memory (rank 0; memory without
     * --distributed, when a file asks for it). */
    train_reports tr;
    memset(&tr, 0, sizeof tr);
    tr.system_hz = system_hz;
    tr.memory_step = !jb.comm && (memory || out) ? memory_step : 0;
    char header[1024] = "";
    if (s == D5_OK && !jb.server) {
        snprintf(header, sizeof header,
                 "training %s (%lld parameters) on %s: %lld training, %lld test samples, batch "
                 "%d, %lld batches per epoch\nsampler: %s, seed %d; augmentations: %s\n",
                 model, (long long)d5_network_param_elements(net), d5_dataset_name(train),
                 (long long)d5_dataset_size(train), (long long)d5_dataset_size(test), batch,
                 (long long)jb.epoch_steps, sampler_names[sp.kind], seed, aug);
        fputs(header, stdout);
        fflush(stdout);
        if (compare && snapshot_every == 0) snapshot_every = 50;
        tp.snapshot_every = snapshot_every;
        if (jb.rank == 0) s = train_reports_start(&tr);
        if (s == D5_OK)
            s = jb.comm ? job_train(&jb, net, train, test, opt, &tp, &sp, timer, &res)
                        : train_with(net, train, test, opt, &tp, &sp, timer, &res, &tr);
        if (s == D5_OK && jb.rank == 0) s = train_reports_stop(&tr, &res);
    } else if (s == D5_OK) {
        s = job_serve(&jb, net, opt, &tp);
    }
    if (s == D5_OK && jb.comm) s = job_finish(&jb);
    if (s == D5_OK && jb.rank == 0 && jb.comm && jb.res.losses) job_global_losses(&jb, &res);
    rerun again = {model, batch, seed, train, test, optimizer, &op, &sp};
    train_report rep = {&res,  target,      backend_used, &jb, sampler_names[sp.kind],
                        batch, local_batch, timer,        &tr, &prec};
    if (s == D5_OK && jb.rank == 0) {
        s = train_print_report(stdout, &rep);
        fflush(stdout);
        cli_contention_end("train", &whole);
    }
    if (s == D5_OK && !jb.comm && low && !no_baseline) {
        s = train_baseline(&again, &tp, &prec);
        if (s == D5_OK) train_precision_print_baseline(stdout, &prec, &res);
    }
    if (s == D5_OK && compare) s = compare_runs(&again, &tp, compare, &res);
    if (s == D5_OK && trace)
        s = jb.comm ? d5_comm_trace_merge(jb.comm, timer, trace)
                    : train_reports_trace(&tr, timer, trace);
    if (s == D5_OK && memory) s = train_reports_memory_file(&tr, memory);
    /* The folder's trace of every rank: merged by all, moved in by rank 0. */
    char trace_part[4200] = "";
    if (s == D5_OK && want_out && jb.comm) {
        snprintf(trace_part, sizeof trace_part, "%s.trace-%ld.json", out ? out : "d5-train",
                 (long)getpid());
        s = d5_comm_trace_merge(jb.comm, timer, trace_part);
    }
    json_t *doc = NULL;
    if (s == D5_OK && jb.rank == 0) {
        json_t *config =
            json_pack("{s:s, s:s, s:s, s:f, s:i, s:i, s:i, s:s}", "model", model, "dataset",
                      dataset, "optimizer", optimizer, "lr", lr, "batch", batch, "epochs", epochs,
                      "seed", seed, "backend_requested", backend_used);
        json_object_set_new(config, "backends_used", train_backends_json(&res));
        json_object_set_new(config, "sampler", json_string(sampler_names[sp.kind]));
        json_object_set_new(config, "precision", json_string(precision));
        json_t *dist_block =
            jb.comm ? job_report(&jb, NULL, sampler_names[sp.kind], batch, local_batch) : NULL;
        json_object_set_new(config, "augment", train_augment_json(&sp, channels));
        json_object_set_new(config, "contention",
                            json_pack("{s:b, s:s, s:f, s:f, s:f, s:i, s:i}", "contended",
                                      whole.contended, "detail", whole.reason, "others_cores",
                                      whole.others_cores, "steal_fraction", whole.steal_fraction,
                                      "nivcsw_per_s", whole.nivcsw_per_s, "threads_min",
                                      (int)res.threads_min, "threads_max", (int)res.threads_max));
        doc = train_doc(&res, config, train_regions_json(timer), dist_block);
        if (doc) json_object_set_new(doc, "precision", train_precision_json(&prec, &res));
        if (!doc) s = d5_error(D5_ERR_NOMEM, "out of memory building the training document");
        if (s == D5_OK) s = train_reports_json(&tr, doc);
        if (s == D5_OK && csv) s = train_out_epochs_csv(&res, csv);
        if (s == D5_OK && json) s = cli_json_write(&spec, NULL, json_incref(doc), json);
    }
    if (s == D5_OK && log) {
        s = train_out_log_results(log, &res, train_stop_name(res.stop));
        if (s == D5_OK) s = train_out_metrics(log, &res, timer, global_batch);
        if (s == D5_OK) s = train_reports_log(&tr, log);
        d5_runlog_finish(log, s != D5_OK);
    }
    if (s == D5_OK && mlflow) {
        char id[33];
        s = d5_runlog_write_mlflow(log, mlflow, "d5 train", id, sizeof id);
        if (s == D5_OK) printf("mlflow run %s written under %s\n", id, mlflow);
    }
    if (s == D5_OK && wandb) {
        char id[33];
        s = d5_runlog_write_wandb(log, wandb, "d5-train", id, sizeof id);
        if (s == D5_OK) printf("W&B offline run %s written under %s\n", id, wandb);
    }
    if (s == D5_OK && out) {
        char *text = NULL;
        size_t len = 0;
        s = train_summary(&spec, header, &rep, &text, &len);
        train_out o = {&spec,        &res, timer, doc, text, len, trace_part[0] ? trace_part : NULL,
                       global_batch, &tr};
        if (s == D5_OK) s = train_out_folder(out, &o);
        free(text);
        if (s == D5_OK) {
            printf("\nresults in %s/:", out);
            train_out_print_files(stdout, out);
            printf("\n");
        }
    }
    if (trace_part[0] && jb.rank == 0) unlink(trace_part); /* left when the folder failed */
    json_decref(doc);
    d5_runlog_free(log);
    train_reports_free(&tr);
    d5_train_result_free(&prec.base);
    d5_train_result_free(&res);
    d5_timer_free(timer);
    d5_optimizer_free(opt);
    d5_dataset_free(train);
    d5_dataset_free(test);
    d5_network_free(net);
    if (s != D5_OK) return job_fail(&jb, s);
    return job_end(&jb, D5_EXIT_OK);
}
