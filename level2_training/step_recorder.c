/* The step recorder: trainer hooks that note, for every step, when each
 * gradient became ready, when the backward pass ended, when the optimizer
 * began and ended and when the step ended, each from the end of the step
 * before (the first step: from the before_first_step hooks); and the
 * profile of their medians (d5/step_profile.h), which d5-sim-train replays. */
#include "d5/stats.h"
#include "d5/step_profile.h"
#include "d5/training.h"

#include <stdlib.h>
#include <string.h>

enum { T_BACKWARD, T_UPDATE_BEGIN, T_UPDATE_END, T_STEP, T_COUNT };

struct d5_step_recorder {
    d5_trainer *t;
    int32_t n;
    uint64_t start_ns;
    double *now;  /* this step: n ready times, then T_COUNT phase times; -1 not seen */
    double *rows; /* one row of n + T_COUNT a step recorded */
    int64_t steps, cap;
    d5_status failed; /* out of memory while recording */
};

static double since(const d5_step_recorder *r)
{
    return (double)(d5_monotonic_ns() - r->start_ns) * 1e-9;
}

static size_t width(const d5_step_recorder *r)
{
    return (size_t)r->n + T_COUNT;
}

static void begin(d5_step_recorder *r)
{
    r->start_ns = d5_monotonic_ns();
    for (size_t k = 0; k < width(r); k++) r->now[k] = -1;
}

static d5_status on_first(d5_trainer *t, void *user)
{
    (void)t;
    begin(user);
    return D5_OK;
}

static d5_status on_ready(d5_trainer *t, void *user, int64_t step, int32_t param)
{
    (void)t;
    (void)step;
    d5_step_recorder *r = user;
    if (param >= 0 && param < r->n && r->now[param] < 0) r->now[param] = since(r);
    return D5_OK;
}

static d5_status on_backward(d5_trainer *t, void *user, const d5_step_grads *g)
{
    (void)t;
    (void)g;
    d5_step_recorder *r = user;
    r->now[r->n + T_BACKWARD] = since(r);
    return D5_OK;
}

static d5_status on_update_begin(d5_trainer *t, void *user, int64_t step)
{
    (void)t;
    (void)step;
    d5_step_recorder *r = user;
    r->now[r->n + T_UPDATE_BEGIN] = since(r);
    return D5_OK;
}

static d5_status on_update_end(d5_trainer *t, void *user, int64_t step)
{
    (void)t;
    (void)step;
    d5_step_recorder *r = user;
    r->now[r->n + T_UPDATE_END] = since(r);
    return D5_OK;
}

/* Keeps the step's row (a gradient never announced counts as ready when the
 * backward pass ended) and starts the next step's clock. */
static d5_status on_step(d5_trainer *t, void *user, int64_t step, double loss)
{
    (void)t;
    (void)step;
    (void)loss;
    d5_step_recorder *r = user;
    double *x = r->now;
    x[r->n + T_STEP] = since(r);
    for (int k = T_COUNT - 2; k >= 0; k--)
        if (x[r->n + k] < 0) x[r->n + k] = x[r->n + k + 1];
    for (int32_t i = 0; i < r->n; i++)
        if (x[i] < 0) x[i] = x[r->n + T_BACKWARD];
    if (r->steps == r->cap && r->failed == D5_OK) {
        int64_t cap = r->cap ? 2 * r->cap : 64;
        double *rows = d5_realloc(r->rows, (size_t)r->cap * width(r) * sizeof *rows,
                                  (size_t)cap * width(r) * sizeof *rows, "step recorder");
        if (rows) {
            r->rows = rows;
            r->cap = cap;
        } else {
            r->failed = D5_ERR_NOMEM;
        }
    }
    if (r->steps < r->cap) memcpy(r->rows + (size_t)r->steps++ * width(r), x, width(r) * sizeof *x);
    begin(r);
    return D5_OK;
}

d5_status d5_step_recorder_attach(d5_trainer *t, d5_step_recorder **out)
{
    if (!t || !out) return d5_error(D5_ERR_INVALID, "d5_step_recorder_attach: NULL argument");
    *out = NULL;
    d5_step_recorder *r = d5_calloc(1, sizeof *r, "step recorder");
    if (!r) return D5_ERR_NOMEM;
    r->t = t;
    r->n = d5_trainer_param_count(t);
    r->now = d5_calloc(width(r), sizeof *r->now, "step recorder");
    if (!r->now) {
        d5_step_recorder_free(r);
        return D5_ERR_NOMEM;
    }
    begin(r);
    d5_trainer_hooks h;
    memset(&h, 0, sizeof h);
    h.user = r;
    h.before_first_step = on_first;
    h.gradient_ready = on_ready;
    h.after_backward = on_backward;
    h.before_update = on_update_begin;
    h.after_update = on_update_end;
    h.after_step = on_step;
    d5_status s = d5_trainer_add_hooks(t, "step recorder", &h);
    if (s != D5_OK) {
        d5_step_recorder_free(r);
        return s;
    }
    *out = r;
    return D5_OK;
}

void d5_step_recorder_free(d5_step_recorder *r)
{
    if (!r) return;
    d5_free(r->now);
    d5_free(r->rows);
    d5_free(r);
}

int64_t d5_step_recorder_steps(const d5_step_recorder *r)
{
    return r ? r->steps : 0;
}

/* The median of column c over rows skip .. steps-1 (col: scratch). */
static double median_of(const d5_step_recorder *r, int64_t skip, size_t c, double *col)
{
    size_t m = (size_t)(r->steps - skip);
    for (size_t k = 0; k < m; k++) col[k] = r->rows[(size_t)(skip + (int64_t)k) * width(r) + c];
    d5_stats st;
    return d5_stats_compute(col, m, &st) == D5_OK ? st.median : 0;
}

/* A parameter and its median ready time, ordered by the time (ties by index). */
typedef struct ready {
    double t;
    int32_t i;
} ready;

static int by_time(const void *a, const void *b)
{
    const ready *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

d5_status d5_step_recorder_profile(const d5_step_recorder *r, int64_t skip, d5_step_profile *out)
{
    if (!r || !out) return d5_error(D5_ERR_INVALID, "d5_step_recorder_profile: NULL argument");
    memset(out, 0, sizeof *out);
    if (r->failed != D5_OK)
        return d5_error(r->failed, "step recorder: ran out of memory after %lld steps",
                        (long long)r->steps);
    if (skip < 0 || r->steps - skip < 1)
        return d5_error(D5_ERR_STATE,
                        "step profile: %lld steps recorded, %lld left out: no step to take the "
                        "medians over (train more steps, e.g. --max-batches %lld)",
                        (long long)r->steps, (long long)skip, (long long)(skip + 10));
    if (r->n < 1) return d5_error(D5_ERR_STATE, "step profile: the trainer has no parameters");
    d5_status s = d5_step_profile_alloc(out, r->n);
    double *col = s == D5_OK ? d5_alloc((size_t)r->steps * sizeof *col, "step profile") : NULL;
    double *med = col ? d5_alloc(width(r) * sizeof *med, "step profile") : NULL;
    if (!med) {
        d5_free(col);
        d5_step_profile_free(out);
        return D5_ERR_NOMEM;
    }
    for (size_t c = 0; c < width(r); c++) med[c] = median_of(r, skip, c, col);
    for (int32_t i = 0; i < r->n; i++) {
        out->elements[i] = d5_trainer_param_size(r->t, i);
        out->names[i] = d5_strdup(d5_trainer_param_name(r->t, i), "step profile");
        if (!out->names[i]) s = D5_ERR_NOMEM;
    }
    ready *by = d5_alloc((size_t)r->n * sizeof *by, "step profile");
    if (!by) s = D5_ERR_NOMEM;
    for (int32_t i = 0; by && i < r->n; i++) by[i] = (ready){med[i], i};
    if (by) qsort(by, (size_t)r->n, sizeof *by, by_time);
    for (int32_t k = 0; by && k < r->n; k++) out->order[k] = by[k].i;
    d5_free(by);
    /* Medians of different columns need not be ordered: each time is at
     * least the one before it. */
    double last = 0;
    for (int32_t k = 0; k < r->n; k++)
        last = out->ready_s[k] = med[out->order[k]] > last ? med[out->order[k]] : last;
    double *phase[T_COUNT] = {&out->backward_end_s, &out->update_begin_s, &out->update_end_s,
                              &out->step_s};
    for (int k = 0; k < T_COUNT; k++)
        last = *phase[k] = med[r->n + k] > last ? med[r->n + k] : last;
    out->steps = r->steps - skip;
    out->batch = d5_trainer_batch(r->t);
    /* Each step's time over the median (a step before which the clock did
     * not start, e.g. after evaluation, counts as it was). */
    out->factors = d5_alloc((size_t)out->steps * sizeof *out->factors, "step profile");
    if (!out->factors) s = D5_ERR_NOMEM;
    for (int64_t k = 0; s == D5_OK && k < out->steps; k++) {
        double t = r->rows[(size_t)(skip + k) * width(r) + (size_t)r->n + T_STEP];
        out->factors[k] = med[r->n + T_STEP] > 0 && t > 0 ? t / med[r->n + T_STEP] : 1;
    }
    out->nfactors = s == D5_OK ? out->steps : 0;
    d5_free(col);
    d5_free(med);
    if (s != D5_OK) d5_step_profile_free(out);
    return s;
}
