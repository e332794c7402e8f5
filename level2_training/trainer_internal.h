/* The trainer object, shared by trainer.c (the graph, the executor, the
 * parameter table, setters and accessors), trainer_loop.c (the run) and
 * trainer_hooks.c (the hooks). */
#ifndef D5_TRAINING_TRAINER_INTERNAL_H
#define D5_TRAINING_TRAINER_INTERNAL_H

#include "d5/datasets.h"
#include "d5/executor.h"
#include "d5/memory.h"
#include "d5/training.h"

#include "bn_train.h"

#define D5__TRAINER_LABELS "__d5_labels"
#define D5__TRAINER_LOSS   "__d5_loss"
/* With loss scaling: the scale, a graph input, and the loss times the scale,
 * whose gradient the executor seeds with 1. */
#define D5__TRAINER_LOSS_SCALE  "__d5_loss_scale"
#define D5__TRAINER_SCALED_LOSS "__d5_scaled_loss"

/* One client's hooks and the name errors give them. */
typedef struct d5__hook_set {
    char *name;
    d5_trainer_hooks hooks;
} d5__hook_set;

struct d5_trainer {
    d5_trainer_params p; /* a copy; backend, checkpoint and precision point at the copies below */
    char *backend, *checkpoint, *precision;
    /* Dynamic loss scaling (loss_scale.c): on or off, the scaler, and the
     * scale fed to the graph as a float32 scalar. */
    int scaling;
    d5_loss_scale ls;
    float scale_fed;
    d5_tensor_desc sdesc;
    d5_network *net;  /* the caller's: its weights are trained in place */
    d5_network *tnet; /* the copy with the loss */
    d5_executor *ex;
    d5_executor *eval; /* created at the first evaluation when BatchNormalization trains */
    d5__bn_train bn;
    d5_optimizer *opt;   /* borrowed */
    d5_sampler *smp;     /* borrowed; NULL: the default */
    d5_sampler *run_smp; /* the sampler of the run in progress (smp or the default) */
    d5_timer *timer;     /* borrowed */
    const char *input, *logits;
    d5_tensor_desc xdesc, ldesc;
    int64_t batch, classes, sample;
    float *x;
    /* A network that reads token ids (int64 or int32 input): the batch as
     * the sampler fills it (floats holding integers) is converted into ids
     * before each feed. NULL for a float32 input. */
    void *ids;
    /* A language model (token ids [batch, lm] in, logits [batch, lm, classes]
     * out): lm is the sequence, and labels [batch, lm] are the next token at
     * each position (D5__TRAINER_NO_LABEL after the last); 0 otherwise. */
    int64_t lm;
    int64_t *labels;
    /* The parameter table, nparams entries (+1 so that none is empty). */
    float **grads;
    float **params;
    int64_t *sizes;
    const char **names;
    int32_t nparams;
    /* gradient_ready: parameter ready_order[k] is final after the backward
     * of schedule node ready_node[k] (descending; -1: at the pass's end);
     * ready_next is the next one to announce in the pass in progress. */
    int32_t *ready_order, *ready_node;
    int32_t ready_next;
    int want_ready;         /* some hook set has gradient_ready */
    d5_status ready_status; /* a failed gradient_ready hook, for d5_trainer_run */
    d5__hook_set *hooks;
    int32_t nhooks;
    size_t hooks_cap;
    int64_t step;    /* completed steps */
    int in_backward; /* between the FORWARD and BACKWARD events of the executor */
    int training;    /* 1 during a training step: evaluation runs are not timed */
    int running;     /* 1 inside d5_trainer_run */
    int ran;         /* 1 once d5_trainer_run has started */
    /* d5_trainer_record_memory (trainer_memory.c): the step to record, the
     * recorder while it runs, and its profile. */
    int64_t mem_step;
    struct d5_memory_recorder *mem;
    d5_memory_profile mem_profile;
    int mem_done;
};

/* What the training executor made of the compute precision, as one line
 * (d5_executor_precision_report), into buf of `size` bytes. */
void d5__trainer_precision_report(const d5_trainer *t, char *buf, size_t size);
/* Feeds the batch buffers (and the loss scale) to the training executor. */
D5_NODISCARD d5_status d5__trainer_feed(d5_trainer *t);
/* The label of a language model's last position: SoftmaxCrossEntropyLoss's
 * ignore_index. */
#define D5__TRAINER_NO_LABEL (-1)
/* Scored predictions per sample: a language model's sequence less its last
 * position, else 1. */
#define D5__TRAINER_PER_SAMPLE(t) ((t)->lm ? (t)->lm - 1 : 1)
/* The batch as the network's input: t->x, or t->x converted into t->ids
 * (and, for a language model, the labels derived from it). */
d5_tensor d5__trainer_input(d5_trainer *t);
/* Checks that a dataset fits the network (sample size, classes); `who` names
 * the caller in the message. */
D5_NODISCARD d5_status d5__trainer_check_dataset(const d5_trainer *t, const d5_dataset *ds,
                                                 const char *who);

/* The hooks of every set, in order (trainer_hooks.c). The first failure
 * stops the others and names its set, hook and step. */
D5_NODISCARD d5_status d5__hooks_before_first_step(d5_trainer *t);
D5_NODISCARD d5_status d5__hooks_gradient_ready(d5_trainer *t, int64_t step, int32_t param);
D5_NODISCARD d5_status d5__hooks_after_backward(d5_trainer *t, int64_t step);
D5_NODISCARD d5_status d5__hooks_before_update(d5_trainer *t, int64_t step);
D5_NODISCARD d5_status d5__hooks_after_update(d5_trainer *t, int64_t step);
D5_NODISCARD d5_status d5__hooks_after_step(d5_trainer *t, int64_t step, double loss);
D5_NODISCARD d5_status d5__hooks_end_of_epoch(d5_trainer *t, const d5_epoch_stats *stats);
void d5__hooks_free(d5_trainer *t);

/* The memory recording of one step (trainer_memory.c): begin before the
 * step, end after it (ok: the step succeeded; otherwise the recording is
 * dropped), and the recorder's and profile's memory. */
D5_NODISCARD d5_status d5__trainer_memory_begin(d5_trainer *t);
D5_NODISCARD d5_status d5__trainer_memory_section(d5_trainer *t, int32_t phase, const char *name);
D5_NODISCARD d5_status d5__trainer_memory_end(d5_trainer *t, int ok);
void d5__trainer_memory_free(d5_trainer *t);

#endif
