/* The memory report of one training step: a recorder on the training
 * executor for the step asked for, with the optimizer's update as a section,
 * on the trainer's timer when it has one. The recorder exists only during
 * that step, so other steps run as without it. */
#include "trainer_internal.h"

#include <stdio.h>
#include <string.h>

d5_status d5_trainer_record_memory(d5_trainer *t, int64_t step)
{
    if (!t) return d5_error(D5_ERR_INVALID, "d5_trainer_record_memory: NULL trainer");
    if (step < 1)
        return d5_error(D5_ERR_INVALID, "d5_trainer_record_memory: step %lld; steps count from 1",
                        (long long)step);
    if (t->running || t->ran)
        return d5_error(D5_ERR_STATE, "d5_trainer_record_memory: call it before d5_trainer_run");
    t->mem_step = step;
    return D5_OK;
}

d5_status d5_trainer_memory_profile(const d5_trainer *t, const d5_memory_profile **out)
{
    if (!t || !out) return d5_error(D5_ERR_INVALID, "d5_trainer_memory_profile: NULL argument");
    if (!t->mem_step)
        return d5_error(D5_ERR_STATE, "d5_trainer_memory_profile: no step was to be recorded "
                                      "(d5_trainer_record_memory)");
    if (!t->mem_done)
        return d5_error(
            D5_ERR_STATE, "d5_trainer_memory_profile: step %lld was not recorded: the run %s",
            (long long)t->mem_step, t->ran ? "stopped before it" : "has not happened yet");
    *out = &t->mem_profile;
    return D5_OK;
}

d5_status d5__trainer_memory_begin(d5_trainer *t)
{
    char name[64];
    snprintf(name, sizeof name, "training step %lld", (long long)t->mem_step);
    d5_status s = d5_memory_recorder_create(t->ex, t->timer, &t->mem);
    if (s == D5_OK) s = d5_memory_recorder_begin(t->mem, name);
    if (s != D5_OK) {
        d5_memory_recorder_free(t->mem);
        t->mem = NULL;
    }
    return s;
}

d5_status d5__trainer_memory_section(d5_trainer *t, int32_t phase, const char *name)
{
    return t->mem ? d5_memory_recorder_section(t->mem, phase, name) : D5_OK;
}

d5_status d5__trainer_memory_end(d5_trainer *t, int ok)
{
    if (!t->mem) return D5_OK;
    d5_memory_profile p;
    d5_status s = ok ? d5_memory_recorder_end(t->mem, &p) : D5_OK;
    d5_memory_recorder_free(t->mem); /* ends a recording not ended above */
    t->mem = NULL;
    if (ok && s == D5_OK) {
        d5_memory_profile_free(&t->mem_profile);
        t->mem_profile = p;
        t->mem_done = 1;
    }
    return s;
}

void d5__trainer_memory_free(d5_trainer *t)
{
    d5_memory_recorder_free(t->mem);
    t->mem = NULL;
    d5_memory_profile_free(&t->mem_profile);
}
