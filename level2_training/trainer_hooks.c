/* The trainer's hooks: sets added by its clients, called in order at fixed
 * points of every step. A failing hook stops training with its own status,
 * and the error says which set, which hook and which step. */
#include "trainer_internal.h"

#include <stdio.h>
#include <string.h>

d5_status d5_trainer_add_hooks(d5_trainer *t, const char *name, const d5_trainer_hooks *hooks)
{
    if (!t || !name || !hooks)
        return d5_error(D5_ERR_INVALID, "d5_trainer_add_hooks: NULL argument");
    if (t->running)
        return d5_error(D5_ERR_STATE,
                        "d5_trainer_add_hooks: hooks '%s' added while the trainer runs", name);
    if (d5_grow(&t->hooks, &t->hooks_cap, (size_t)t->nhooks + 1, sizeof *t->hooks,
                "trainer hooks") != D5_OK)
        return D5_ERR_NOMEM;
    char *copy = d5_strdup(name, "trainer hooks name");
    if (!copy) return D5_ERR_NOMEM;
    t->hooks[t->nhooks].name = copy;
    t->hooks[t->nhooks].hooks = *hooks;
    t->nhooks++;
    if (hooks->gradient_ready) t->want_ready = 1;
    return D5_OK;
}

void d5__hooks_free(d5_trainer *t)
{
    for (int32_t i = 0; i < t->nhooks; i++) d5_free(t->hooks[i].name);
    d5_free(t->hooks);
    t->hooks = NULL;
    t->nhooks = 0;
    t->hooks_cap = 0;
}

/* The error of a failed hook: its set, the hook, when, and what the hook said
 * (copied first: d5_error writes the buffer d5_last_error reads). */
static d5_status failed(const d5__hook_set *set, const char *hook, const char *when, d5_status s)
{
    char detail[768];
    snprintf(detail, sizeof detail, "%s", d5_last_error());
    return d5_error(s, "trainer: hook %s of '%s' failed %s with %s%s%s", hook, set->name, when,
                    d5_status_name(s), detail[0] ? ": " : "", detail);
}

static d5_status failed_at(const d5__hook_set *set, const char *hook, int64_t step, d5_status s)
{
    char when[48];
    snprintf(when, sizeof when, "at step %lld", (long long)step);
    return failed(set, hook, when, s);
}

d5_status d5__hooks_before_first_step(d5_trainer *t)
{
    for (int32_t i = 0; i < t->nhooks; i++) {
        const d5__hook_set *h = &t->hooks[i];
        if (!h->hooks.before_first_step) continue;
        d5_error_clear();
        d5_status s = h->hooks.before_first_step(t, h->hooks.user);
        if (s != D5_OK) return failed(h, "before_first_step", "before the first step", s);
    }
    return D5_OK;
}

d5_status d5__hooks_gradient_ready(d5_trainer *t, int64_t step, int32_t param)
{
    for (int32_t i = 0; i < t->nhooks; i++) {
        const d5__hook_set *h = &t->hooks[i];
        if (!h->hooks.gradient_ready) continue;
        d5_error_clear();
        d5_status s = h->hooks.gradient_ready(t, h->hooks.user, step, param);
        if (s != D5_OK) return failed_at(h, "gradient_ready", step, s);
    }
    return D5_OK;
}

d5_status d5__hooks_after_backward(d5_trainer *t, int64_t step)
{
    const d5_step_grads g = {
        .step = step, .n = t->nparams, .grads = t->grads, .params = t->params, .sizes = t->sizes};
    for (int32_t i = 0; i < t->nhooks; i++) {
        const d5__hook_set *h = &t->hooks[i];
        if (!h->hooks.after_backward) continue;
        d5_error_clear();
        d5_status s = h->hooks.after_backward(t, h->hooks.user, &g);
        if (s != D5_OK) return failed_at(h, "after_backward", step, s);
    }
    return D5_OK;
}

d5_status d5__hooks_before_update(d5_trainer *t, int64_t step)
{
    for (int32_t i = 0; i < t->nhooks; i++) {
        const d5__hook_set *h = &t->hooks[i];
        if (!h->hooks.before_update) continue;
        d5_error_clear();
        d5_status s = h->hooks.before_update(t, h->hooks.user, step);
        if (s != D5_OK) return failed_at(h, "before_update", step, s);
    }
    return D5_OK;
}

d5_status d5__hooks_after_update(d5_trainer *t, int64_t step)
{
    for (int32_t i = 0; i < t->nhooks; i++) {
        const d5__hook_set *h = &t->hooks[i];
        if (!h->hooks.after_update) continue;
        d5_error_clear();
        d5_status s = h->hooks.after_update(t, h->hooks.user, step);
        if (s != D5_OK) return failed_at(h, "after_update", step, s);
    }
    return D5_OK;
}

d5_status d5__hooks_after_step(d5_trainer *t, int64_t step, double loss)
{
    for (int32_t i = 0; i < t->nhooks; i++) {
        const d5__hook_set *h = &t->hooks[i];
        if (!h->hooks.after_step) continue;
        d5_error_clear();
        d5_status s = h->hooks.after_step(t, h->hooks.user, step, loss);
        if (s != D5_OK) return failed_at(h, "after_step", step, s);
    }
    return D5_OK;
}

d5_status d5__hooks_end_of_epoch(d5_trainer *t, const d5_epoch_stats *stats)
{
    for (int32_t i = 0; i < t->nhooks; i++) {
        const d5__hook_set *h = &t->hooks[i];
        if (!h->hooks.end_of_epoch) continue;
        d5_error_clear();
        d5_status s = h->hooks.end_of_epoch(t, h->hooks.user, stats->epoch, stats);
        if (s != D5_OK) {
            char when[48];
            snprintf(when, sizeof when, "at the end of epoch %d", (int)stats->epoch);
            return failed(h, "end_of_epoch", when, s);
        }
    }
    return D5_OK;
}
