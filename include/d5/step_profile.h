/* A step profile: the timeline of one training step of a real run, what
 * d5-sim-train replays on simulated hosts (docs/level3.md). Every time is in
 * seconds from the start of the step (the end of the step before it), the
 * median over the steps recorded: when each parameter's gradient became
 * ready during backpropagation, in the order they did, when the backward
 * pass ended, when the optimizer's update began and ended, and when the step
 * ended. The trainer records it (d5_step_recorder_attach, d5/training.h);
 * this header holds the data and its JSON file, written by `d5 train
 * --step-profile FILE.json`.
 *
 * The file (schema "d5-step-profile", version 1):
 *   {"schema": "d5-step-profile", "version": 1, "context": {...},
 *    "model": ..., "batch": ..., "threads": ..., "steps": ...,
 *    "parameters": [{"name": ..., "elements": ...}, ...],
 *    "ready": [{"parameter": I, "s": T}, ...],
 *    "backward_end_s": ..., "update_begin_s": ..., "update_end_s": ...,
 *    "step_s": ..., "step_factors": [...]} */
#ifndef D5_STEP_PROFILE_H
#define D5_STEP_PROFILE_H

#include "d5/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct d5_step_profile {
    char model[128]; /* what was trained ("" when not known) */
    int64_t batch;   /* samples a step */
    int32_t threads; /* of the CPU backends */
    int64_t steps;   /* steps the medians are taken over */
    /* The trainer's parameters, in its order. */
    int32_t n;
    char **names;
    int64_t *elements;
    /* Gradients in the order they became ready: order[k] is the parameter
     * (0 .. n-1) that was k-th, ready_s[k] when; nondecreasing. */
    int32_t *order;
    double *ready_s;
    /* backward_end_s >= ready_s[n-1]; update_begin_s >= backward_end_s;
     * update_end_s >= update_begin_s; step_s >= update_end_s. */
    double backward_end_s, update_begin_s, update_end_s, step_s;
    /* How the steps varied: each recorded step's time over the median
     * (nfactors of them; 0 and NULL when not recorded). A replay may scale
     * each step by one of them, so that ranks differ as real ones do. */
    int64_t nfactors;
    double *factors;
} d5_step_profile;

/* Allocates the arrays of a profile of n parameters (names NULL, order the
 * identity, times 0); the scalars are left as they are. */
D5_API D5_NODISCARD d5_status d5_step_profile_alloc(d5_step_profile *p, int32_t n);
D5_API void d5_step_profile_free(d5_step_profile *p);
/* D5_ERR_INVALID naming the first broken rule of the comment above (each
 * parameter ready exactly once, times nondecreasing, sizes positive). */
D5_API D5_NODISCARD d5_status d5_step_profile_check(const d5_step_profile *p);
/* Writes the profile as JSON (atomically: the file appears whole or not at
 * all), with the context block of d5's other JSON files. */
D5_API D5_NODISCARD d5_status d5_step_profile_write(const d5_step_profile *p, const char *path);
/* Reads a file of d5_step_profile_write into *out (d5_step_profile_free it);
 * D5_ERR_FORMAT names the file and the field that is missing or wrong,
 * D5_ERR_IO a file that cannot be read. */
D5_API D5_NODISCARD d5_status d5_step_profile_read(const char *path, d5_step_profile *out);

#ifdef __cplusplus
}
#endif

#endif
