/* What NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss share: an input
 * of per-class values (N, C) or (N, C, D1..Dk), a target of classes (N) or
 * (N, D1..Dk) (int64 or int32) with an optional ignore_index, optional class
 * weights (C), and the reduction of the per-position losses. */
#ifndef D5_REF_CLASS_LOSS_H
#define D5_REF_CLASS_LOSS_H

#include "reduce.h"

/* How an operator's messages name its inputs. */
typedef struct d5_class_loss_names {
    const char *op;
    const char *input;        /* "input", "scores" */
    const char *input_of;     /* its possessive: "input's", "scores'" */
    const char *target;       /* "target", "labels" */
    const char *target_value; /* one of its values: "target", "label" */
    const char *weight;       /* "weight", "weights" */
    int plural;               /* target and weight take plural verbs ("labels have") */
    int64_t min_classes;      /* C below this is D5_ERR_SHAPE ("scores [3,0] has no classes") */
} d5_class_loss_names;

/* The state of both operators. Position j is sample j / d, position j % d
 * within it. */
typedef struct d5_class_loss {
    const d5_class_loss_names *names;
    int64_t n, c, d; /* batch, classes, positions per sample (D1 * ... * Dk) */
    d5_loss_reduction reduction;
    int has_ignore;
    int64_t ignore_index;
} d5_class_loss;

/* Checks input 0 (floating point), the target (input 1) and the optional
 * weight (input 2, input 0's type, shape (C)), reads the attributes reduction
 * and ignore_index, gives output 0 the target's shape ("none") or none
 * (a scalar), and allocates *state as a d5_class_loss. */
d5_status d5__class_loss_create(const d5_class_loss_names *names, const d5_op_create_args *args,
                                void **state);

/* The offset in input 0 of position j's first class; class k is k * d
 * further. */
static inline int64_t d5__class_loss_base(const d5_class_loss *g, int64_t j)
{
    return j / g->d * g->c * g->d + j % g->d;
}

/* The class of position j, or -1 when it is ignore_index; D5_ERR_RANGE for a
 * class outside [0, C) that is not ignored. */
d5_status d5__class_loss_class(const d5_class_loss *g, const d5_rt *target, int64_t j,
                               int64_t *cls);

/* The weight of class cls from the optional input 2: 0 when cls < 0 (ignored),
 * 1 without weights. */
static inline double d5__class_loss_weight(const d5_rt *in, int32_t nin, int64_t cls)
{
    if (cls < 0) return 0;
    return nin > 2 && in[2].data ? in[2].data[cls] : 1;
}

/* The gradient of position j's loss: the output's (its element j for "none"),
 * divided by the sum of the weights for "mean". */
static inline double d5__class_loss_grad(const d5_class_loss *g, const d5_rt *gout, int64_t j,
                                         double wsum)
{
    double dl = g->reduction == D5_LOSS_NONE ? gout[0].data[j] : gout[0].data[0];
    return g->reduction == D5_LOSS_MEAN ? dl / wsum : dl;
}

/* The unweighted loss of class cls at one position, whose C values are x[0],
 * x[d], ..., x[(C - 1) d] (anything when cls is -1, ignored); when log_prob is
 * not NULL, also the position's C log-probabilities, at the same offsets. */
typedef double (*d5_class_nll_fn)(const d5_class_loss *g, const double *x, int64_t cls,
                                  double *log_prob);

/* The sum of the weighted losses of all positions and of their weights; the
 * loss of each position into loss[j] and the log-probabilities into log_prob
 * (input 0's shape) when they are not NULL. */
d5_status d5__class_loss_totals(const d5_class_loss *g, const d5_rt *in, int32_t nin,
                                d5_class_nll_fn nll, double *loss, double *log_prob, double *sum,
                                double *wsum);

/* The forward of both: output 0 is the losses ("none"), their sum, or the sum
 * divided by that of the weights ("mean"); output 1, when there is one, the
 * log-probabilities. */
d5_status d5__class_loss_forward(const d5_class_loss *g, const d5_ref_call *call,
                                 d5_class_nll_fn nll);

#endif
