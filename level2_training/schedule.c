/* Learning-rate schedules: constant, step, exponential and cosine decay, each
 * after an optional linear warm-up. */
#include "d5/training.h"

#include <math.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

d5_status d5_schedule_check(const d5_schedule *s)
{
    if (!s) return d5_error(D5_ERR_INVALID, "d5_schedule_check: NULL schedule");
    if (s->warmup < 0)
        return d5_error(D5_ERR_INVALID, "schedule: warmup is %lld steps, expected >= 0",
                        (long long)s->warmup);
    switch (s->kind) {
    case D5_SCHEDULE_CONSTANT: return D5_OK;
    case D5_SCHEDULE_STEP:
    case D5_SCHEDULE_EXPONENTIAL:
        if (s->kind == D5_SCHEDULE_STEP && s->step_size < 1)
            return d5_error(D5_ERR_INVALID, "step schedule: step_size is %lld, expected >= 1",
                            (long long)s->step_size);
        if (!(s->gamma >= 0 && s->gamma < HUGE_VAL))
            return d5_error(D5_ERR_INVALID,
                            "%s schedule: gamma is %g, expected a finite value >= 0",
                            s->kind == D5_SCHEDULE_STEP ? "step" : "exponential", s->gamma);
        return D5_OK;
    case D5_SCHEDULE_COSINE:
        if (s->total < 1)
            return d5_error(D5_ERR_INVALID, "cosine schedule: total is %lld steps, expected >= 1",
                            (long long)s->total);
        if (!(s->lr_min >= 0 && s->lr_min < HUGE_VAL))
            return d5_error(D5_ERR_INVALID,
                            "cosine schedule: lr_min is %g, expected a finite "
                            "value >= 0",
                            s->lr_min);
        return D5_OK;
    default:
        return d5_error(D5_ERR_INVALID,
                        "schedule: unknown kind %d (expected 0 constant, 1 step, "
                        "2 exponential or 3 cosine)",
                        (int)s->kind);
    }
}

/* 1 when the schedule's shape can be evaluated (d5_schedule_lr must not set
 * the error message, so it does not call d5_schedule_check). */
static int usable(const d5_schedule *s)
{
    if (s->warmup < 0 || s->kind < D5_SCHEDULE_CONSTANT || s->kind > D5_SCHEDULE_COSINE) return 0;
    if (s->kind == D5_SCHEDULE_STEP && s->step_size < 1) return 0;
    if (s->kind == D5_SCHEDULE_COSINE && s->total < 1) return 0;
    return 1;
}

/* The decayed rate k steps after the warm-up. */
static double decayed(const d5_schedule *s, double lr, int64_t k)
{
    switch (s->kind) {
    case D5_SCHEDULE_STEP: return lr * pow(s->gamma, (double)(k / s->step_size));
    case D5_SCHEDULE_EXPONENTIAL: return lr * pow(s->gamma, (double)k);
    case D5_SCHEDULE_COSINE:
        if (k >= s->total) return s->lr_min;
        return s->lr_min + (lr - s->lr_min) * (1 + cos(M_PI * (double)k / (double)s->total)) / 2;
    default: return lr;
    }
}

double d5_schedule_lr(const d5_schedule *s, double lr, int64_t step)
{
    if (!s || !usable(s)) return lr;
    if (step < 0) step = 0;
    if (step < s->warmup) return lr * (double)(step + 1) / (double)s->warmup;
    return decayed(s, lr, step - s->warmup);
}
