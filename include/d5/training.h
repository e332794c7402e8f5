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
#include "d5/operator.h"
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

/* ---- The trainer ---------------------------------------------------------------------- */

struct d5_network;
struct d5_dataset;
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
    int32_t check_numerics; /* 1 (default): NaN or Inf in the loss or a gradient stops training */
    /* > 0: keep a copy of all parameters (in parameter order) every this many
     * steps, for comparing the trajectories of two runs (d5_param_distance). */
    int64_t snapshot_every;
} d5_trainer_params;

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

typedef struct d5_train_result {
    d5_epoch_stats *epochs; /* nepochs entries; owned, d5_train_result_free */
    int32_t nepochs;
    float *losses; /* the loss of every batch, in order; owned */
    int64_t nlosses;
    double time_to_accuracy_s; /* training time until target_accuracy, -1 if never */
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
 * gradient is not finite. */
D5_API D5_NODISCARD d5_status d5_train(struct d5_network *net, const struct d5_dataset *train,
                                       const struct d5_dataset *test, d5_optimizer *opt,
                                       const d5_trainer_params *p, uint64_t seed,
                                       struct d5_timer *timer, d5_train_result *out);

#ifdef __cplusplus
}
#endif
#endif
