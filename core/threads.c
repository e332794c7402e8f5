/* The one thread count of the CPU backends, and its automatic adaptation to
 * other processes on the same cores.
 *
 * OpenMP's setter is looked up at run time, so that core does not link an
 * OpenMP runtime of its own: the one that oneDNN and level 0 load is the one
 * that is set. OpenBLAS, which level 0 links, is set through blas.c. */
#define _GNU_SOURCE
#include "d5/threads.h"
#include "internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static struct {
    int32_t requested; /* 0: automatic */
    int32_t team;
    int32_t usable;
    int32_t cpus;
    int32_t adaptations;
    int32_t grow_votes;
    d5_load_sample last;
} state;

static void (*omp_set)(int);
static int omp_looked_up;

static void set_team(int32_t n)
{
    if (!omp_looked_up) {
        /* POSIX guarantees that a dlsym result converts to a function
         * pointer; the memcpy keeps ISO C's pedantic mode quiet about it. */
        void *sym = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
        if (sym) memcpy(&omp_set, &sym, sizeof omp_set);
        omp_looked_up = 1;
    }
    if (omp_set) omp_set(n);
    d5__blas_set_threads(n);
    state.team = n;
}

/* Runnable tasks other than the caller, the least of eight looks at
 * /proc/stat's procs_running 2 ms apart: a transient kernel thread is not
 * in all of them, a busy process is. */
static int32_t others_running(void)
{
    int32_t least = INT32_MAX;
    for (int i = 0; i < 8; i++) {
        if (i) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        d5_load_sample l;
        d5_load_sample_take(&l);
        if (l.procs_running < 0) return 0;
        int32_t others = l.procs_running - 1; /* the caller is running */
        if (others < least) least = others;
    }
    return least > 0 ? least : 0;
}

d5_status d5_threads_set(int32_t n)
{
    if (n < 0)
        return d5_error(D5_ERR_INVALID, "thread count %d must be 0 (automatic) or positive",
                        (int)n);
    d5_cores c;
    d5_status s = d5_cores_query(&c);
    if (s != D5_OK) return s;
    state.requested = n;
    state.usable = c.usable;
    state.cpus = c.affinity;
    state.adaptations = 0;
    state.grow_votes = 0;
    int32_t team = n > 0 ? n : c.usable;
    if (n == 0 && c.affinity == c.online) {
        /* CPU-time windows need a quarter second; a process that is running
         * at every one of eight looks over 14 ms is busy now. procs_running
         * counts the whole machine, so this is for a mask that covers it. */
        int32_t others = others_running();
        if (state.cpus - others < team) team = state.cpus - others;
        if (team < 1) team = 1;
        if (team < c.usable) state.adaptations = 1; /* counted: the start was adapted */
    }
    set_team(team);
    d5_load_sample_take(&state.last);
    return D5_OK;
}

int32_t d5_threads_team(void)
{
    if (state.team == 0 && d5_threads_set(0) != D5_OK) return 1;
    return state.team;
}

int32_t d5__threads_intended(void)
{
    int32_t team = d5_threads_team();
    return state.requested > 0 ? state.requested : (state.usable > team ? state.usable : team);
}

int32_t d5_threads_adapt(void)
{
    if (state.team == 0 && d5_threads_set(0) != D5_OK) return 1;
    if (state.requested != 0) return state.team;
    uint64_t now = d5__mono_ns();
    if (now - state.last.wall_ns < 250000000u) return state.team;
    d5_load_sample cur;
    d5_load_sample_take(&cur);
    d5_contention c;
    d5_contention_between(&state.last, &cur, state.team, &c);
    state.last = cur;
    if (!c.known) return state.team;
    /* A core is taken from 0.6 cores of other work on the mask's cores; the
     * team gets what is left of the usable cores. */
    int32_t taken = (int32_t)(c.others_cores + 0.4);
    int32_t want = state.usable;
    if (state.cpus - taken < want) want = state.cpus - taken;
    if (want < 1) want = 1;
    if (want < state.team) {
        set_team(want);
        state.adaptations++;
        state.grow_votes = 0;
    } else if (want > state.team) {
        /* Growing back waits for a second check that agrees, so that one
         * quiet window does not bring the workers back under a competitor. */
        if (++state.grow_votes >= 2) {
            set_team(want);
            state.adaptations++;
            state.grow_votes = 0;
        }
    } else {
        state.grow_votes = 0;
    }
    return state.team;
}

int d5_threads_wait_policy_env(void)
{
    /* The marker tells the restarted process, and child processes, that the
     * setting is d5's and not the user's. */
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return 0;
    if (setenv("GOMP_SPINCOUNT", D5_THREADS_SPINCOUNT, 0) != 0) return 0;
    return setenv("D5_WAIT_POLICY", "d5", 1) == 0;
}

void d5_threads_info_get(d5_threads_info *out)
{
    memset(out, 0, sizeof *out);
    out->team = d5_threads_team();
    out->requested = state.requested;
    out->usable = state.usable;
    out->adaptations = state.adaptations;
    out->openmp = dlsym(RTLD_DEFAULT, "omp_get_max_threads") != NULL;
    d5_blas_info blas;
    d5_blas_info_get(&blas);
    snprintf(out->openblas, sizeof out->openblas, "%s", blas.parallel);
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    if (spin)
        snprintf(out->wait_policy, sizeof out->wait_policy, "GOMP_SPINCOUNT=%s (%s)", spin,
                 getenv("D5_WAIT_POLICY") ? "d5" : "user");
    else if (policy)
        snprintf(out->wait_policy, sizeof out->wait_policy, "OMP_WAIT_POLICY=%s (user)", policy);
    else
        snprintf(out->wait_policy, sizeof out->wait_policy, "OpenMP default");
}
