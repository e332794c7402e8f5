/* d5 level 2: optimizers, learning-rate schedules and the trainer.
 *
 * Optimizers come in Deep500's two shapes. An update-rule optimizer is a
 * function U(grad, param, state) applied to every parameter after the
 * backward pass. A three-step optimizer splits a step into new_input (once per
 * step, before the forward pass), prepare_param (per parameter, before the
 * forward pass: AcceleGrad evaluates the gradient at a point other than its
 * iterate) and update_rule (per parameter, after the backward pass); level 3
 * distributes any three-step optimizer by wrapping it. Every built-in
 * optimizer is a three-step optimizer; the update-rule ones leave new_input
 * and prepare_param empty.
 *
 * Parameters are float32 arrays owned by the caller (the network's
 * initializers, bound into the executor): the optimizer updates them in place
 * and keeps its state (moments, accumulators) per parameter.
 */
#ifndef D5_TRAINING_H
#define D5_TRAINING_H

#include "d5/core.h"
#include "d5/memory.h"
#include "d5/operator.h"
#include "d5/step_profile.h"
#include "d5/threads.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Optimizers ----------------------------------------------------------------------- */

typedef struct d5_optimizer_params {
    double lr;                  /* learning rate (default 0.01); accelegrad: a factor on eta_t */
    double momentum;            /* momentum, nesterov (default 0.9) */
    double beta1, beta2;        /* adam, adamw (0.9, 0.999) */
    double eps;                 /* adam, adamw, adagrad, rmsprop (1e-8) */
    double alpha;               /* rmsprop smoothing constant (0.99) */
    double weight_decay;        /* L2 added to the gradient (g + wd p); decoupled for adamw (0) */
    double initial_accumulator; /* adagrad (0) */
    /* accelegrad (Levy, Yurtsever, Cevher 2018): D (diameter bound, default 1)
     * and G (gradient bound, default 1). */
    double accelegrad_d, accelegrad_g;
} d5_optimizer_params;

D5_API d5_optimizer_params d5_optimizer_default_params(void);

typedef struct d5_optimizer d5_optimizer;

/* The three steps of one optimizer, with the state it needs per parameter
 * element. Custom optimizers fill one of these. `step` is the 1-based number of
 * the step in progress. The callbacks read the hyperparameters, the current
 * learning rate included, with d5_optimizer_get_params(o). The state of a
 * parameter is state_per_elem * n floats, zeroed when the parameter is added;
 * a callback that fails stops the step with its status. */
typedef struct d5_optimizer_desc {
    const char *name;       /* "adam" */
    int32_t state_per_elem; /* float state slots per parameter element */
    /* Once per step, before the forward pass (may be NULL). */
    d5_status (*new_input)(d5_optimizer *o, int64_t step);
    /* Per parameter before the forward pass (may be NULL): may rewrite the
     * parameter the forward pass will see. */
    d5_status (*prepare_param)(d5_optimizer *o, int64_t step, float *param, float *state,
                               int64_t n);
    /* Per parameter after the backward pass: the update, in place. */
    d5_status (*update_rule)(d5_optimizer *o, int64_t step, float *param, const float *grad,
                             float *state, int64_t n);
} d5_optimizer_desc;

/* Creates a built-in optimizer: sgd, momentum, nesterov, adam, adamw, adagrad,
 * rmsprop, accelegrad (D5_ERR_UNSUPPORTED lists them). p may be NULL (the
 * defaults). D5_ERR_INVALID names a hyperparameter out of range: lr or
 * weight_decay negative or not finite, and for the optimizers that read them
 * momentum < 0, beta1 or beta2 outside [0, 1), eps < 0, alpha outside [0, 1],
 * initial_accumulator < 0, accelegrad_d or accelegrad_g not positive. Free
 * with d5_optimizer_free. One optimizer is used from one thread at a time. */
D5_API D5_NODISCARD d5_status d5_optimizer_create(const char *name, const d5_optimizer_params *p,
                                                  d5_optimizer **out);
/* Creates one from a custom table (borrowed, must outlive the optimizer); it
 * needs a name and an update_rule. Only lr and weight_decay are checked. */
D5_API D5_NODISCARD d5_status d5_optimizer_create_custom(const d5_optimizer_desc *desc,
                                                         const d5_optimizer_params *p,
                                                         d5_optimizer **out);
D5_API void d5_optimizer_free(d5_optimizer *o);
D5_API const char *d5_optimizer_name(const d5_optimizer *o);
/* The optimizer's hyperparameters (borrowed until it is freed); lr is the
 * rate of the current step, as last set by d5_optimizer_set_lr. */
D5_API const d5_optimizer_params *d5_optimizer_get_params(const d5_optimizer *o);
/* Number of built-in optimizers and their names. */
D5_API int32_t d5_optimizer_count(void);
D5_API const char *d5_optimizer_name_at(int32_t i);
/* The table of the built-in optimizer `name` (*out borrowed, static: valid
 * for the life of the program), so that a wrapper can call its three steps
 * from its own table and create it with d5_optimizer_create_custom (the
 * callbacks then read the wrapper's hyperparameters). On error *out is
 * untouched: D5_ERR_INVALID for a NULL argument, D5_ERR_UNSUPPORTED for an
 * unknown name, listing the built-in ones. */
D5_API D5_NODISCARD d5_status d5_optimizer_builtin(const char *name, const d5_optimizer_desc **out);
/* A pointer the optimizer carries for its owner, e.g. the state of a wrapper
 * that its callbacks read back with d5_optimizer_user(o). NULL after
 * creation; the optimizer neither reads nor frees it. */
D5_API void d5_optimizer_set_user(d5_optimizer *o, void *user);
D5_API void *d5_optimizer_user(const d5_optimizer *o);

/* Registers a parameter of n elements (borrowed until the optimizer is freed;
 * its state is allocated zeroed). *index (may be NULL) receives its index.
 * The name is copied and must be unique (D5_ERR_INVALID). Every parameter is
 * added before the first d5_optimizer_prepare (D5_ERR_STATE after it). */
D5_API D5_NODISCARD d5_status d5_optimizer_add_param(d5_optimizer *o, const char *name, float *data,
                                                     int64_t n, int32_t *index);
D5_API int32_t d5_optimizer_param_count(const d5_optimizer *o);
/* The learning rate of the next step (schedules change it). It replaces
 * params.lr; a negative or non-finite rate makes the next
 * d5_optimizer_prepare fail with D5_ERR_INVALID. */
D5_API void d5_optimizer_set_lr(d5_optimizer *o, double lr);
/* One step in three calls: new_input and prepare_param for every parameter
 * (before the forward pass), then update with each parameter's gradient
 * (after the backward pass; gradients of n floats, borrowed for the call).
 * d5_optimizer_update_all takes the gradients in parameter order and updates
 * those not yet updated in this step. The step counter starts at 1: the
 * callbacks of the first step see step 1. The step ends when every parameter
 * has been updated once. D5_ERR_STATE: prepare while a step is open, update
 * before prepare, or a parameter updated twice in one step; D5_ERR_RANGE: an
 * index out of range. */
D5_API D5_NODISCARD d5_status d5_optimizer_prepare(d5_optimizer *o);
D5_API D5_NODISCARD d5_status d5_optimizer_update(d5_optimizer *o, int32_t index,
                                                  const float *grad);
D5_API D5_NODISCARD d5_status d5_optimizer_update_all(d5_optimizer *o, const float *const *grads);
/* Ends the step in progress without updating any parameter: the state and
 * the step count stay as they were, so the next d5_optimizer_prepare
 * prepares the same step number again (a step skipped by loss scaling).
 * Parameters that prepare_param rewrote keep that value; the next prepare
 * computes them again from the state. D5_ERR_STATE: no step in progress, or
 * a parameter updated in it already. */
D5_API D5_NODISCARD d5_status d5_optimizer_skip(d5_optimizer *o);
/* The number of completed steps (0 after creation). */
D5_API int64_t d5_optimizer_step_count(const d5_optimizer *o);
/* The state of parameter i, state_per_elem * n floats (borrowed); NULL for an
 * index out of range or an optimizer without state. */
D5_API float *d5_optimizer_state(d5_optimizer *o, int32_t index);

/* ---- Learning-rate schedules ------------------------------------------------------------- */

typedef enum d5_schedule_kind {
    D5_SCHEDULE_CONSTANT = 0,
    D5_SCHEDULE_STEP = 1,        /* lr * gamma^(floor(step / step_size)) */
    D5_SCHEDULE_EXPONENTIAL = 2, /* lr * gamma^step */
    D5_SCHEDULE_COSINE = 3       /* lr_min + (lr - lr_min)(1 + cos(pi step / total)) / 2,
                                    then lr_min from step total on */
} d5_schedule_kind;

typedef struct d5_schedule {
    int32_t kind;
    double gamma;
    int64_t step_size;
    int64_t total;
    double lr_min;
    int64_t warmup; /* linear warm-up over this many steps first (0: none) */
} d5_schedule;

/* The learning rate at `step` (0-based) for base rate lr. With warm-up w > 0
 * the rate is lr (step + 1) / w for step < w, reaching lr at step w - 1, and
 * the decay then runs on step - w (so `total` and `step_size` count the steps
 * after the warm-up). A NULL schedule, or one d5_schedule_check rejects for
 * its kind, step_size, total or warm-up, gives lr unchanged. */
D5_API double d5_schedule_lr(const d5_schedule *s, double lr, int64_t step);
/* D5_ERR_INVALID naming the first bad field: an unknown kind, warmup < 0,
 * step_size < 1 (step), gamma negative or not finite (step, exponential),
 * total < 1 or lr_min negative or not finite (cosine). */
D5_API D5_NODISCARD d5_status d5_schedule_check(const d5_schedule *s);

/* ---- Trajectories ---------------------------------------------------------------------- */

/* The distance between two parameter sets of n elements: l2 and l-infinity
 * (the divergence of two runs step by step, as in the Deep500 paper),
 * accumulated in double. Either output may be NULL; n <= 0 gives 0. A NaN
 * difference (a run that diverged) makes both NaN. */
D5_API void d5_param_distance(const float *a, const float *b, int64_t n, double *l2, double *linf);

/* ---- Dynamic loss scaling -------------------------------------------------------------- */

/* Loss scaling for float16 compute (Micikevicius et al., "Mixed Precision
 * Training", ICLR 2018; the rule of PyTorch's GradScaler): the gradient of
 * the loss is seeded with the scale instead of 1, so that small gradients stay
 * above float16's underflow; the gradients are divided by it before the
 * optimizer step. A step whose gradients hold an Inf or NaN is skipped and the
 * scale multiplied by `backoff`; after `growth_interval` finite steps in a row
 * it is multiplied by `growth`. The scale stays within [min, max]. */
typedef struct d5_loss_scale_params {
    double init;             /* the first scale (default 32768 = 2^15) */
    double growth;           /* factor after growth_interval finite steps (default 2) */
    double backoff;          /* factor after a step that overflowed (default 0.5) */
    int64_t growth_interval; /* finite steps in a row before growing (default 2000) */
    double min, max;         /* bounds of the scale (default 1 and 2^24 = 16777216) */
} d5_loss_scale_params;

D5_API d5_loss_scale_params d5_loss_scale_default_params(void);

/* The scaler's state: plain data, updated by d5_loss_scale_update. */
typedef struct d5_loss_scale {
    d5_loss_scale_params p;
    double scale;    /* the scale of the next step */
    int64_t good;    /* finite steps since the scale last changed (or since the start) */
    int64_t steps;   /* steps recorded */
    int64_t skipped; /* steps skipped because a gradient was not finite */
    int64_t growths; /* times the scale grew */
} d5_loss_scale;

/* Starts a scaler at p->init (p NULL: the defaults). D5_ERR_INVALID names the
 * field at fault: init, min or max not finite and positive, or init outside
 * [min, max]; growth < 1 or not finite; backoff outside (0, 1];
 * growth_interval < 1. On error *ls is untouched. */
D5_API D5_NODISCARD d5_status d5_loss_scale_init(d5_loss_scale *ls, const d5_loss_scale_params *p);
/* Divides n gradient arrays (grads[i] of sizes[i] floats) by the scale, in
 * place, in one pass that also looks for values that are not finite. Returns 1
 * when every element is finite, 0 otherwise (the arrays are then partly
 * divided: a skipped step discards them). */
D5_API int32_t d5_loss_scale_unscale(const d5_loss_scale *ls, float *const *grads,
                                     const int64_t *sizes, int32_t n);
/* Records one step whose gradients were all finite (finite = 1) or not (0)
 * and moves the scale: backoff (and no step) after an overflow, growth after
 * growth_interval finite steps in a row, clamped to [min, max]. Returns 1 when
 * the step's update should be applied, 0 when it is to be skipped. */
D5_API int32_t d5_loss_scale_update(d5_loss_scale *ls, int32_t finite);

/* ---- The trainer ---------------------------------------------------------------------- */

struct d5_network;
struct d5_dataset;
struct d5_sampler;
struct d5_timer;

typedef struct d5_trainer_params {
    int32_t epochs;         /* default 1 */
    int64_t max_batches;    /* stop after this many batches in all (0: no limit) */
    double target_accuracy; /* stop once the test accuracy reaches it (0: never) */
    double time_budget_s;   /* stop once training has run this long (0: no limit) */
    int64_t eval_every;     /* evaluate on the test set every N batches (0: each epoch's end) */
    const char *backend;    /* executor backends (NULL: the default) */
    const char *checkpoint; /* write the trained network as ONNX here at the end (NULL: no) */
    d5_schedule schedule;   /* learning rate per step (kind CONSTANT by default) */
    int32_t progress;       /* 1: a progress line on standard error */
    /* 1 (default): NaN or Inf in the loss or a gradient stops training; with
     * loss scaling, such a gradient skips the step instead, and stops
     * training only when the scale is at its minimum already. */
    int32_t check_numerics;
    /* > 0: keep a copy of all parameters (in parameter order) every this many
     * steps, for comparing the trajectories of two runs (d5_param_distance). */
    int64_t snapshot_every;
    /* Mixed precision: the compute precision of Conv, Gemm and MatMul,
     * forward and backward, in the training and evaluation executors
     * (d5_executor_options.compute_precision): NULL or "f32" (default), "bf16"
     * or "f16". Tensors, gradients, the optimizer and its state stay float32
     * (the master weights). */
    const char *precision;
    /* Dynamic loss scaling: D5_LOSS_SCALING_AUTO (default: on for "f16", off
     * otherwise), _OFF or _ON, with the parameters in loss_scale (the
     * defaults of d5_loss_scale_default_params). */
    int32_t loss_scaling;
    d5_loss_scale_params loss_scale;
} d5_trainer_params;

enum { D5_LOSS_SCALING_AUTO = 0, D5_LOSS_SCALING_OFF = 1, D5_LOSS_SCALING_ON = 2 };

D5_API d5_trainer_params d5_trainer_default_params(void);

typedef struct d5_epoch_stats {
    int32_t epoch; /* 1-based */
    int64_t batches, samples;
    double train_loss;               /* mean over the epoch's batches */
    double train_accuracy;           /* fraction of the epoch's samples classified right */
    double test_loss, test_accuracy; /* at the epoch's end; NaN without a test set */
    double seconds;                  /* training time of the epoch (evaluation excluded) */
    double samples_per_s, batches_per_s;
    double io_samples_per_s; /* dataloader throughput: samples over time spent reading */
} d5_epoch_stats;

typedef enum d5_train_stop {
    D5_TRAIN_DONE = 0,   /* every epoch ran */
    D5_TRAIN_TARGET = 1, /* the target accuracy was reached */
    D5_TRAIN_TIME = 2,   /* the time budget ran out */
    D5_TRAIN_BATCHES = 3 /* max_batches */
} d5_train_stop;

/* Distinct backends recorded in a d5_train_result. */
#define D5_TRAIN_MAX_BACKENDS 8
/* Bytes of d5_train_result.precision_report, its terminating 0 included. */
#define D5_TRAIN_PRECISION_REPORT 4096

typedef struct d5_train_result {
    d5_epoch_stats *epochs; /* nepochs entries; owned, d5_train_result_free */
    int32_t nepochs;
    float *losses; /* the loss of every batch, in order; owned */
    int64_t nlosses;
    /* Per step too, nlosses entries each (owned): the learning rate the step
     * used, and its wall time in seconds (from setting the learning rate to
     * the end of the after_step hooks; reading the batch is not included). */
    double *lrs;
    double *step_seconds;
    double time_to_accuracy_s; /* training time until target_accuracy, -1 if never (null in
                                  d5 train's JSON) */
    double final_test_accuracy;
    int32_t stop; /* a d5_train_stop */
    /* With snapshot_every: nsnapshots copies of the param_elements parameters,
     * taken after steps snapshot_every, 2 snapshot_every, ... (owned). */
    float *snapshots;
    int64_t nsnapshots, param_elements;
    /* The backends that ran the training graph's nodes (forward and
     * backward), with their node counts, as d5_executor_backend_nodes gives
     * them: backends[0..nbackends-1]. */
    d5_backend_nodes backends[D5_TRAIN_MAX_BACKENDS];
    int32_t nbackends;
    /* BatchNormalization nodes trained with batch statistics (running
     * statistics updated in the network), and nodes left in inference form
     * because the network declares ai.onnx opset < 14. */
    int32_t batchnorm_training, batchnorm_frozen;
    /* What competed for the cores while training (evaluation included), and
     * the team sizes used: with the automatic thread count, d5_threads_adapt
     * runs after every step. */
    d5_contention contention;
    int32_t threads_min, threads_max;
    /* The compute precision ("f32", "bf16", "f16") and what the training
     * executor made of it (d5_executor_precision_report: a summary line, then
     * one line per Conv, Gemm and MatMul node with the precision and kernels
     * it runs; "..." ends a report cut at the buffer's size). With loss scaling (loss_scaling = 1):
     * the steps skipped because a gradient overflowed (they count in nlosses; the optimizer did not
     * step), the scale's growths, and the scale at the end. */
    char precision[8];
    char precision_report[D5_TRAIN_PRECISION_REPORT];
    int32_t loss_scaling;
    int64_t skipped_steps, loss_scale_growths;
    double loss_scale;
} d5_train_result;

D5_API void d5_train_result_free(d5_train_result *r);

/* Trains `net` (a classifier: one input of shape [batch, sample...], one
 * output of logits [batch, classes]) on `train` with `opt`, evaluating on
 * `test` (may be NULL). The batch size is the network input's first
 * dimension. The network's weights are trained in place (afterwards `net`
 * holds the trained model): they are registered with `opt`, which must have
 * no parameters yet and keeps pointing at them while `net` lives. A SoftmaxCrossEntropyLoss on the
 * logits is added to an internal copy of the graph, where BatchNormalization
 * nodes (opset >= 14) normalize with batch statistics and update the
 * network's running statistics; evaluation runs the network itself, in
 * inference mode. Batches come from a shuffled sampler
 * (`seed`) without the last partial batch; test batches cover every sample.
 * The timer (may be NULL) receives EPOCH, BATCH, IO, FORWARD, BACKWARD and
 * OPTIMIZER regions. D5_ERR_NUMERIC names the step and tensor when a loss or
 * gradient is not finite. It is d5_trainer_create, d5_trainer_set_timer,
 * d5_trainer_set_optimizer and d5_trainer_run with the default sampler and no
 * hooks; the errors are theirs. */
D5_API D5_NODISCARD d5_status d5_train(struct d5_network *net, const struct d5_dataset *train,
                                       const struct d5_dataset *test, d5_optimizer *opt,
                                       const d5_trainer_params *p, uint64_t seed,
                                       struct d5_timer *timer, d5_train_result *out);

/* ---- The trainer object ----------------------------------------------------------------- */

/* The loop of d5_train with its parts as parameters: the sampler that draws
 * the training batches, the optimizer, and hooks called at fixed points of
 * every step, so that a distributed scheme (level 3) can wrap training without
 * owning the loop. Step k (1-based, the optimizer's step number) of
 * d5_trainer_run is:
 *
 *   d5_sampler_next                 a batch (a partial batch ends the epoch)
 *   d5_optimizer_set_lr, _prepare   the rate from the schedule
 *   forward, loss, backward         one executor call; gradient_ready hooks
 *                                   as each parameter's gradient is final
 *   after_backward hooks            may change the gradients in place
 *   loss scaling (when on)          gradients divided by the scale; on an
 *                                   overflow the step is skipped: the three
 *                                   lines below are replaced by
 *                                   d5_optimizer_skip
 *   numeric check                   loss and gradients finite (check_numerics)
 *   before_update hooks
 *   d5_optimizer_update_all         the timer region OPTIMIZER
 *   after_update hooks              may change the parameters
 *   after_step hooks                with the step's loss
 *
 * A skipped step still counts as a step of the trainer (the schedule and
 * d5_trainer_step move on), not of the optimizer (d5_optimizer_step_count).
 *
 * before_first_step hooks run once, before the first step's prepare (to
 * broadcast one worker's parameters, say); end_of_epoch hooks after each
 * epoch's evaluation. Hook sets run in the order they were added.
 *
 * Ownership: the trainer borrows the network (trained in place; it must
 * outlive the trainer) and the sampler, optimizer and timer it is given (they
 * must stay alive until d5_trainer_run returns, or until d5_trainer_free if
 * it never runs). It owns a copy of the training graph, its executors, the
 * batch buffers and a copy of its parameters (strings included). Pointers it
 * hands out are borrowed until d5_trainer_free.
 *
 * Threads: a trainer is used by one thread at a time. Hooks run on the thread
 * that called d5_trainer_run, one after another; the executor's own threads
 * are idle while they run. While d5_trainer_run runs, the network, sampler,
 * optimizer and timer belong to it: no other thread may use them, and a hook
 * may call the trainer's accessors but not its setters or d5_trainer_run
 * (D5_ERR_STATE), and never d5_trainer_free. */
typedef struct d5_trainer d5_trainer;

/* What the after_backward hooks receive: the step in progress (1-based)
 * and, for each parameter i < n in the trainer's parameter order, its
 * gradient grads[i] and its values params[i], sizes[i] floats each. */
typedef struct d5_step_grads {
    int64_t step;
    int32_t n;
    float *const *grads;
    float *const *params;
    const int64_t *sizes;
} d5_step_grads;

/* The hooks of one client of the trainer (a distributed scheme, a logger).
 * Every function may be NULL; each receives the trainer and `user`. `step` is
 * the 1-based number of the step in progress. A hook that returns a status
 * other than D5_OK stops training: d5_trainer_run returns that status, and
 * d5_last_error() names the hook set, the hook and the step, followed by the
 * message the hook left with d5_error. */
typedef struct d5_trainer_hooks {
    void *user; /* passed to every hook; the trainer never dereferences it */
    /* Once, before the first step: may overwrite the parameters
     * (d5_trainer_param), e.g. with those of rank 0. */
    d5_status (*before_first_step)(d5_trainer *t, void *user);
    /* After the backward pass, before the optimizer (g: d5_step_grads). The
     * gradients may be changed in place (allreduced, scaled); the optimizer
     * receives them as they are then. */
    d5_status (*after_backward)(d5_trainer *t, void *user, const d5_step_grads *g);
    /* Just before and just after d5_optimizer_update_all; after_update may
     * change the parameters (model averaging). */
    d5_status (*before_update)(d5_trainer *t, void *user, int64_t step);
    d5_status (*after_update)(d5_trainer *t, void *user, int64_t step);
    /* At the end of every step, with the step's training loss. */
    d5_status (*after_step)(d5_trainer *t, void *user, int64_t step, double loss);
    /* After epoch `epoch` (1-based) and its evaluation; stats is borrowed for
     * the call. */
    d5_status (*end_of_epoch)(d5_trainer *t, void *user, int32_t epoch,
                              const d5_epoch_stats *stats);
    /* During the backward pass, as soon as parameter `param`'s gradient is
     * final (the backward of every node that reads the parameter has run):
     * once per parameter and step, in the order gradients complete (the
     * layers backwards), all before after_backward. The gradient
     * (d5_trainer_gradient) may be read or copied, to start communicating it
     * while backpropagation goes on; the time spent here counts as BACKWARD. */
    d5_status (*gradient_ready)(d5_trainer *t, void *user, int64_t step, int32_t param);
} d5_trainer_hooks;

/* Builds a trainer for `net` (a classifier, as d5_train describes): the
 * training graph with its loss, its executor on p->backend, and the table of
 * parameters and gradient buffers. p may be NULL (the defaults); it is copied.
 * D5_ERR_INVALID: a NULL argument, epochs < 1, a negative max_batches,
 * eval_every or snapshot_every, a schedule d5_schedule_check rejects, a
 * precision other than f32, bf16 and f16, an unknown loss_scaling, or (with
 * loss scaling on) loss_scale parameters d5_loss_scale_init rejects;
 * D5_ERR_INVALID or D5_ERR_SHAPE for a network that is not a classifier with
 * a float32 input [batch, sample...] and logits [batch, classes];
 * D5_ERR_UNSUPPORTED for a parameter that is not float32; the executor's
 * errors. On error *out is untouched. Free with d5_trainer_free. */
D5_API D5_NODISCARD d5_status d5_trainer_create(struct d5_network *net, const d5_trainer_params *p,
                                                d5_trainer **out);
/* Frees the trainer; NULL is a no-op. Borrowed objects are left as they are. */
D5_API void d5_trainer_free(d5_trainer *t);

/* The optimizer (borrowed until d5_trainer_run returns): the trainer's
 * parameters are registered with it, in the trainer's order, so it must have
 * none yet (D5_ERR_STATE). Another optimizer may replace it before the run;
 * the first one keeps its registrations. d5_trainer_run needs one. */
D5_API D5_NODISCARD d5_status d5_trainer_set_optimizer(d5_trainer *t, d5_optimizer *opt);
/* The sampler of the training batches (borrowed until d5_trainer_run
 * returns), any kind d5_sampler_create makes; NULL restores the default, a
 * shuffled sampler of the dataset given to d5_trainer_run, seeded with its
 * `seed`, without the last partial batch. The trainer calls
 * d5_sampler_reset before every epoch (so its first epoch is the sampler's
 * epoch + 1, as for the default sampler), and ends an epoch at a batch
 * smaller than the network's (a sampler without drop_last): it is not
 * trained on. Test batches are normalized as this sampler normalizes
 * (augment.normalize); its other augmentations apply to training only. With
 * a timer it attaches the timer to the sampler for the run and detaches it
 * at the end.
 * D5_ERR_SHAPE: a batch size other than the network input's first
 * dimension, samples of another size or more classes than logits. */
D5_API D5_NODISCARD d5_status d5_trainer_set_sampler(d5_trainer *t, struct d5_sampler *s);
/* The region timer (borrowed until d5_trainer_run returns; NULL: none): EPOCH,
 * BATCH, IO, FORWARD, BACKWARD and OPTIMIZER. */
D5_API D5_NODISCARD d5_status d5_trainer_set_timer(d5_trainer *t, struct d5_timer *timer);
/* Adds a set of hooks, called after those added before. `name` (copied) is
 * how errors name the set ("allreduce"); the table is copied, hooks->user is
 * borrowed. D5_ERR_INVALID for a NULL argument; D5_ERR_STATE during a run. */
D5_API D5_NODISCARD d5_status d5_trainer_add_hooks(d5_trainer *t, const char *name,
                                                   const d5_trainer_hooks *hooks);
/* Trains, as d5_train does, filling *out (free it with d5_train_result_free;
 * it is freed and zeroed on error). `train` is the dataset of the default
 * sampler, shuffled with `seed`; with a sampler set, `train` is NULL or that
 * sampler's dataset, and `seed` is not used. `test` may be NULL. A trainer
 * runs once: the parameters and the optimizer's state carry on from step to
 * step, not from run to run. D5_ERR_STATE: no optimizer, a second run, or a
 * call from a hook; D5_ERR_INVALID: no training set, or one other than the
 * sampler's; D5_ERR_SHAPE: a dataset the network cannot take;
 * D5_ERR_NUMERIC: a loss or gradient that is not finite; the status of a
 * failing hook, sampler, executor or optimizer otherwise. */
D5_API D5_NODISCARD d5_status d5_trainer_run(d5_trainer *t, const struct d5_dataset *train,
                                             const struct d5_dataset *test, uint64_t seed,
                                             d5_train_result *out);

/* The parameters the trainer trains, the network's float32 initializers in
 * the training graph's order (the order of the optimizer's registration and
 * of the hooks' arrays). Valid from d5_trainer_create on. Out-of-range
 * indices give NULL or 0. Names and pointers are borrowed until
 * d5_trainer_free; d5_trainer_param is the network's own weight (writing it
 * changes the model), d5_trainer_gradient the executor's gradient buffer of
 * that parameter, written by each backward pass. */
D5_API int32_t d5_trainer_param_count(const d5_trainer *t);
D5_API const char *d5_trainer_param_name(const d5_trainer *t, int32_t i);
D5_API int64_t d5_trainer_param_size(const d5_trainer *t, int32_t i); /* elements */
D5_API float *d5_trainer_param(d5_trainer *t, int32_t i);
D5_API float *d5_trainer_gradient(d5_trainer *t, int32_t i);
/* The network's batch size (samples per step). */
D5_API int64_t d5_trainer_batch(const d5_trainer *t);
/* Completed steps of the run (0 before it). */
D5_API int64_t d5_trainer_step(const d5_trainer *t);
/* The optimizer set with d5_trainer_set_optimizer (borrowed), or NULL. */
D5_API d5_optimizer *d5_trainer_optimizer(const d5_trainer *t);
/* The loss scale of the step in progress (of the next step between steps);
 * 1 without loss scaling. gradient_ready and after_backward hooks see the
 * gradients multiplied by it (the trainer divides them afterwards), so that
 * a step that overflows on one worker overflows on every worker that sums the
 * gradients; a hook that needs true gradients (clipping) divides by it. */
D5_API double d5_trainer_loss_scale(const d5_trainer *t);

/* ---- Memory of one training step (d5/memory.h) ------------------------------------ */

/* Asks trainer `t` to record step `step` (1-based) of its coming run: the
 * step from its learning rate to its after_step hooks, with the rows of
 * every node forward and backward, "optimizer" (d5_optimizer_update_all) and
 * "outside nodes". Times are on the trainer's timer when it has one. Step 1
 * includes state optimizers allocate lazily; later steps show the steady
 * state. D5_ERR_INVALID for step < 1; D5_ERR_STATE during or after the run. */
D5_API D5_NODISCARD d5_status d5_trainer_record_memory(d5_trainer *t, int64_t step);
/* The profile of the recorded step, borrowed until d5_trainer_free.
 * D5_ERR_STATE when none was asked for, or the run stopped before that step. */
D5_API D5_NODISCARD d5_status d5_trainer_memory_profile(const d5_trainer *t,
                                                        const d5_memory_profile **out);

/* ---- The step recorder --------------------------------------------------------------- */

/* Records the timeline of every step of t's runs through trainer hooks,
 * added after the hooks already attached (their time counts in the step):
 * when each gradient became ready, when the backward pass ended, when the
 * optimizer began and ended, when the step ended, each from the end of the
 * step before. Free it after the trainer's last run. */
typedef struct d5_step_recorder d5_step_recorder;
D5_API D5_NODISCARD d5_status d5_step_recorder_attach(d5_trainer *t, d5_step_recorder **out);
D5_API void d5_step_recorder_free(d5_step_recorder *r);
/* Steps recorded so far. */
D5_API int64_t d5_step_recorder_steps(const d5_step_recorder *r);
/* The medians over the steps recorded, the first `skip` left out, into *out
 * (d5_step_profile_free it; model and threads are left for the caller).
 * D5_ERR_STATE when no step is left to take them over. */
D5_API D5_NODISCARD d5_status d5_step_recorder_profile(const d5_step_recorder *r, int64_t skip,
                                                       d5_step_profile *out);

#ifdef __cplusplus
}
#endif
#endif
