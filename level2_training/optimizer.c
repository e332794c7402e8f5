/* The optimizer: the registry of built-in optimizers, their parameters and
 * state, and the three-step protocol (prepare before the forward pass, update
 * after the backward pass) that every optimizer runs through. */
#include "optimizer_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct builtin {
    const d5_optimizer_desc *desc;
    int32_t uses; /* D5__USES_* */
} builtin;

static const builtin builtins[] = {
#define D5__OPTIMIZER_ENTRY(name, uses) {&d5__optimizer_##name, uses},
    D5__OPTIMIZER_LIST(D5__OPTIMIZER_ENTRY)
#undef D5__OPTIMIZER_ENTRY
};

#define NBUILTINS ((int32_t)(sizeof builtins / sizeof builtins[0]))

typedef struct param {
    char *name;
    float *data; /* the caller's */
    int64_t n;
    float *state;    /* state_per_elem * n floats, NULL when there is no state */
    int32_t updated; /* 1 once updated in the step in progress */
} param;

struct d5_optimizer {
    const d5_optimizer_desc *desc;
    d5_optimizer_params params; /* params.lr follows d5_optimizer_set_lr */
    param *params_list;
    int32_t nparams;
    size_t cap;
    int64_t steps;    /* completed steps */
    int32_t prepared; /* 1 between d5_optimizer_prepare and the last update */
    int32_t nupdated; /* parameters updated in the step in progress */
    void *user;       /* d5_optimizer_set_user */
};

d5_optimizer_params d5_optimizer_default_params(void)
{
    d5_optimizer_params p;
    memset(&p, 0, sizeof p);
    p.lr = 0.01;
    p.momentum = 0.9;
    p.beta1 = 0.9;
    p.beta2 = 0.999;
    p.eps = 1e-8;
    p.alpha = 0.99;
    p.weight_decay = 0;
    p.initial_accumulator = 0;
    p.accelegrad_d = 1;
    p.accelegrad_g = 1;
    return p;
}

int32_t d5_optimizer_count(void)
{
    return NBUILTINS;
}

const char *d5_optimizer_name_at(int32_t i)
{
    return i >= 0 && i < NBUILTINS ? builtins[i].desc->name : NULL;
}

/* Checks that a hyperparameter lies in [lo, hi] (hi_open: [lo, hi)); the
 * comparisons are written so that NaN fails them. */
static d5_status check_range(const char *opt, const char *field, double v, double lo, double hi,
                             int hi_open)
{
    int ok = v >= lo && (hi_open ? v < hi : v <= hi);
    if (ok) return D5_OK;
    return d5_error(D5_ERR_INVALID,
                    "optimizer %s: %s = %g is out of range, expected %g <= %s %s %g", opt, field, v,
                    lo, field, hi_open ? "<" : "<=", hi);
}

static d5_status check_params(const char *opt, const d5_optimizer_params *p, int32_t uses)
{
    d5_status s = check_range(opt, "lr", p->lr, 0, HUGE_VAL, 1);
    if (s == D5_OK) s = check_range(opt, "weight_decay", p->weight_decay, 0, HUGE_VAL, 1);
    if (s == D5_OK && (uses & D5__USES_MOMENTUM))
        s = check_range(opt, "momentum", p->momentum, 0, HUGE_VAL, 1);
    if (s == D5_OK && (uses & D5__USES_BETAS)) s = check_range(opt, "beta1", p->beta1, 0, 1, 1);
    if (s == D5_OK && (uses & D5__USES_BETAS)) s = check_range(opt, "beta2", p->beta2, 0, 1, 1);
    if (s == D5_OK && (uses & D5__USES_EPS)) s = check_range(opt, "eps", p->eps, 0, HUGE_VAL, 1);
    if (s == D5_OK && (uses & D5__USES_ALPHA)) s = check_range(opt, "alpha", p->alpha, 0, 1, 0);
    if (s == D5_OK && (uses & D5__USES_ACCUMULATOR))
        s = check_range(opt, "initial_accumulator", p->initial_accumulator, 0, HUGE_VAL, 1);
    if (s == D5_OK && (uses & D5__USES_ACCELEGRAD)) {
        s = check_range(opt, "accelegrad_d", p->accelegrad_d, 0, HUGE_VAL, 1);
        if (s == D5_OK) s = check_range(opt, "accelegrad_g", p->accelegrad_g, 0, HUGE_VAL, 1);
        if (s == D5_OK && (p->accelegrad_d == 0 || p->accelegrad_g == 0))
            s = d5_error(D5_ERR_INVALID,
                         "optimizer %s: accelegrad_d and accelegrad_g must be "
                         "positive (got %g and %g)",
                         opt, p->accelegrad_d, p->accelegrad_g);
    }
    return s;
}

static d5_status make(const d5_optimizer_desc *desc, const d5_optimizer_params *p, int32_t uses,
                      d5_optimizer **out)
{
    d5_optimizer_params params = p ? *p : d5_optimizer_default_params();
    d5_status s = check_params(desc->name, &params, uses);
    if (s != D5_OK) return s;
    d5_optimizer *o = d5_calloc(1, sizeof *o, "optimizer");
    if (!o) return D5_ERR_NOMEM;
    o->desc = desc;
    o->params = params;
    *out = o;
    return D5_OK;
}

/* The built-in optimizer `name`, or D5_ERR_UNSUPPORTED listing them. */
static d5_status find_builtin(const char *name, const builtin **out)
{
    for (int32_t i = 0; i < NBUILTINS; i++)
        if (strcmp(builtins[i].desc->name, name) == 0) {
            *out = &builtins[i];
            return D5_OK;
        }
    char names[256] = "";
    size_t used = 0;
    for (int32_t i = 0; i < NBUILTINS && used < sizeof names; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                 builtins[i].desc->name);
    return d5_error(D5_ERR_UNSUPPORTED, "unknown optimizer '%s' (d5 has: %s)", name, names);
}

d5_status d5_optimizer_create(const char *name, const d5_optimizer_params *p, d5_optimizer **out)
{
    if (!name || !out) return d5_error(D5_ERR_INVALID, "d5_optimizer_create: NULL argument");
    const builtin *b;
    d5_status s = find_builtin(name, &b);
    return s == D5_OK ? make(b->desc, p, b->uses, out) : s;
}

d5_status d5_optimizer_builtin(const char *name, const d5_optimizer_desc **out)
{
    if (!name || !out) return d5_error(D5_ERR_INVALID, "d5_optimizer_builtin: NULL argument");
    const builtin *b;
    d5_status s = find_builtin(name, &b);
    if (s == D5_OK) *out = b->desc;
    return s;
}

void d5_optimizer_set_user(d5_optimizer *o, void *user)
{
    if (o) o->user = user;
}

void *d5_optimizer_user(const d5_optimizer *o)
{
    return o ? o->user : NULL;
}

d5_status d5_optimizer_create_custom(const d5_optimizer_desc *desc, const d5_optimizer_params *p,
                                     d5_optimizer **out)
{
    if (!desc || !out) return d5_error(D5_ERR_INVALID, "d5_optimizer_create_custom: NULL argument");
    if (!desc->name || !desc->update_rule)
        return d5_error(D5_ERR_INVALID,
                        "custom optimizer '%s': the table needs a name and an "
                        "update_rule",
                        desc->name ? desc->name : "(unnamed)");
    if (desc->state_per_elem < 0)
        return d5_error(D5_ERR_INVALID,
                        "custom optimizer '%s': state_per_elem is %d, expected >= 0", desc->name,
                        (int)desc->state_per_elem);
    return make(desc, p, 0, out);
}

void d5_optimizer_free(d5_optimizer *o)
{
    if (!o) return;
    for (int32_t i = 0; i < o->nparams; i++) {
        d5_free(o->params_list[i].name);
        d5_free(o->params_list[i].state);
    }
    d5_free(o->params_list);
    d5_free(o);
}

const char *d5_optimizer_name(const d5_optimizer *o)
{
    return o ? o->desc->name : NULL;
}

const d5_optimizer_params *d5_optimizer_get_params(const d5_optimizer *o)
{
    return o ? &o->params : NULL;
}

d5_status d5_optimizer_add_param(d5_optimizer *o, const char *name, float *data, int64_t n,
                                 int32_t *index)
{
    if (!o || !name || !data)
        return d5_error(D5_ERR_INVALID, "d5_optimizer_add_param: NULL argument");
    if (n <= 0)
        return d5_error(D5_ERR_INVALID,
                        "optimizer %s: parameter '%s' has %lld elements, "
                        "expected at least 1",
                        o->desc->name, name, (long long)n);
    if (o->prepared || o->steps > 0)
        return d5_error(D5_ERR_STATE,
                        "optimizer %s: parameter '%s' added after the first step; "
                        "add every parameter before d5_optimizer_prepare",
                        o->desc->name, name);
    for (int32_t i = 0; i < o->nparams; i++)
        if (strcmp(o->params_list[i].name, name) == 0)
            return d5_error(D5_ERR_INVALID, "optimizer %s: parameter '%s' is already registered",
                            o->desc->name, name);
    size_t per = (size_t)o->desc->state_per_elem;
    if (per && (uint64_t)n > SIZE_MAX / sizeof(float) / per)
        return d5_error(D5_ERR_RANGE,
                        "optimizer %s: the state of parameter '%s' (%lld elements) "
                        "does not fit in memory",
                        o->desc->name, name, (long long)n);
    if (d5_grow(&o->params_list, &o->cap, (size_t)o->nparams + 1, sizeof *o->params_list,
                "optimizer parameters") != D5_OK)
        return D5_ERR_NOMEM;
    param q = {NULL, data, n, NULL, 0};
    q.name = d5_strdup(name, "optimizer parameter name");
    if (q.name && per) q.state = d5_calloc((size_t)n * per, sizeof(float), "optimizer state");
    if (!q.name || (per && !q.state)) {
        d5_free(q.name);
        return D5_ERR_NOMEM;
    }
    o->params_list[o->nparams] = q;
    if (index) *index = o->nparams;
    o->nparams++;
    return D5_OK;
}

int32_t d5_optimizer_param_count(const d5_optimizer *o)
{
    return o ? o->nparams : 0;
}

void d5_optimizer_set_lr(d5_optimizer *o, double lr)
{
    if (o) o->params.lr = lr;
}

d5_status d5_optimizer_prepare(d5_optimizer *o)
{
    if (!o) return d5_error(D5_ERR_INVALID, "d5_optimizer_prepare: NULL optimizer");
    if (o->prepared)
        return d5_error(D5_ERR_STATE,
                        "optimizer %s: step %lld is already prepared and %d of %d "
                        "parameters are not updated yet",
                        o->desc->name, (long long)(o->steps + 1), (int)(o->nparams - o->nupdated),
                        (int)o->nparams);
    if (!(o->params.lr >= 0 && o->params.lr < HUGE_VAL))
        return d5_error(D5_ERR_INVALID,
                        "optimizer %s: learning rate %g (from d5_optimizer_set_lr)"
                        " is not a finite non-negative number",
                        o->desc->name, o->params.lr);
    int64_t step = o->steps + 1;
    d5_status s = o->desc->new_input ? o->desc->new_input(o, step) : D5_OK;
    for (int32_t i = 0; i < o->nparams && s == D5_OK && o->desc->prepare_param; i++) {
        param *q = &o->params_list[i];
        s = o->desc->prepare_param(o, step, q->data, q->state, q->n);
    }
    if (s != D5_OK) return s;
    for (int32_t i = 0; i < o->nparams; i++) o->params_list[i].updated = 0;
    o->nupdated = 0;
    o->prepared = 1;
    return D5_OK;
}

d5_status d5_optimizer_update(d5_optimizer *o, int32_t index, const float *grad)
{
    if (!o || !grad) return d5_error(D5_ERR_INVALID, "d5_optimizer_update: NULL argument");
    if (index < 0 || index >= o->nparams)
        return d5_error(D5_ERR_RANGE,
                        "optimizer %s: parameter index %d is out of range (%d "
                        "parameters)",
                        o->desc->name, (int)index, (int)o->nparams);
    param *q = &o->params_list[index];
    if (!o->prepared)
        return d5_error(D5_ERR_STATE,
                        "optimizer %s: update of parameter '%s' before "
                        "d5_optimizer_prepare",
                        o->desc->name, q->name);
    if (q->updated)
        return d5_error(D5_ERR_STATE,
                        "optimizer %s: parameter '%s' was already updated in step "
                        "%lld",
                        o->desc->name, q->name, (long long)(o->steps + 1));
    d5_status s = o->desc->update_rule(o, o->steps + 1, q->data, grad, q->state, q->n);
    if (s != D5_OK) return s;
    q->updated = 1;
    if (++o->nupdated == o->nparams) {
        o->prepared = 0;
        o->steps++;
    }
    return D5_OK;
}

d5_status d5_optimizer_update_all(d5_optimizer *o, const float *const *grads)
{
    if (!o || !grads) return d5_error(D5_ERR_INVALID, "d5_optimizer_update_all: NULL argument");
    if (!o->prepared)
        return d5_error(D5_ERR_STATE, "optimizer %s: update before d5_optimizer_prepare",
                        o->desc->name);
    for (int32_t i = 0; i < o->nparams; i++)
        if (!grads[i])
            return d5_error(D5_ERR_INVALID, "optimizer %s: no gradient for parameter '%s'",
                            o->desc->name, o->params_list[i].name);
    if (o->nparams == 0) { /* a step with nothing to update still counts */
        o->prepared = 0;
        o->steps++;
        return D5_OK;
    }
    int32_t n = o->nparams;
    d5_status s = D5_OK;
    for (int32_t i = 0; i < n && s == D5_OK; i++)
        if (!o->params_list[i].updated) s = d5_optimizer_update(o, i, grads[i]);
    return s;
}

d5_status d5_optimizer_skip(d5_optimizer *o)
{
    if (!o) return d5_error(D5_ERR_INVALID, "d5_optimizer_skip: NULL optimizer");
    if (!o->prepared)
        return d5_error(D5_ERR_STATE,
                        "optimizer %s: skip with no step in progress (call "
                        "d5_optimizer_prepare first)",
                        o->desc->name);
    if (o->nupdated > 0)
        return d5_error(D5_ERR_STATE,
                        "optimizer %s: skip of step %lld after %d of its %d parameters were "
                        "updated",
                        o->desc->name, (long long)(o->steps + 1), (int)o->nupdated,
                        (int)o->nparams);
    o->prepared = 0;
    return D5_OK;
}

int64_t d5_optimizer_step_count(const d5_optimizer *o)
{
    return o ? o->steps : 0;
}

float *d5_optimizer_state(d5_optimizer *o, int32_t index)
{
    if (!o || index < 0 || index >= o->nparams) return NULL;
    return o->params_list[index].state;
}
