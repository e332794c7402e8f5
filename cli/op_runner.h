/* Running one operator on one problem size: timing with d5's statistics,
 * validation against ref, and isolation of custom operators in a child
 * process. Shared by `d5 test-operator` and `d5 bench`. */
#ifndef D5_CLI_OP_RUNNER_H
#define D5_CLI_OP_RUNNER_H

#include "sizes.h"

typedef struct target {
    char label[160]; /* "blas" or "custom:MedianPool" */
    const d5_op_desc *desc;
    d5_op_library *lib; /* custom operators only */
} target;

typedef struct run_opts {
    double max_time;        /* budget per size and backend, seconds */
    int validate, gradient; /* compare forward / backward with ref */
    double validate_max_gflop;
    const char *heatmap;
    double timeout; /* custom operators: seconds before the child is killed */
} run_opts;

/* What one (size, backend) run gave. */
typedef struct outcome {
    int ok;           /* measured */
    char status[256]; /* "ok", "FAIL ...", "crashed: signal 11", "timed out", error */
    d5_measurement m;
    double flops, bytes;
    int validated, valid; /* a comparison with ref was made, and it passed */
    double err_linf, err_rel;
    int grad_checked, grad_ok;
    int64_t grad_fd_checked; /* elements compared with finite differences */
} outcome;

/* Runs in this process (built-in operators). */
void run_here(const run_opts *o, const op_case *c, const target *t, outcome *r);
/* Runs in a child process with a timeout (custom operators). */
void run_isolated(const run_opts *o, const op_case *c, const target *t, outcome *r);
/* Loads a custom operator library in a child process first, so that a
 * constructor or entry point that crashes, exits or hangs (more than
 * `timeout` seconds) is reported (D5_ERR_IO: it cannot be loaded) instead of
 * taking d5 down;
 * the library's own errors come back as they are. D5_OK: it can be loaded. */
d5_status probe_library(const char *path, double timeout);
/* Either, as the target requires. */
void run_case(const run_opts *o, const op_case *c, const target *t, outcome *r);

#endif
