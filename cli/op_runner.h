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
    int validate, gradient; /* compare forward / backward with ref (gradient: float32 cases) */
    int grad_elements;      /* elements of each input checked against finite differences
                               (evenly spaced; 0: 256) */
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
    int unsupported; /* the backend cannot run the case (its precision, or declined here): status
                        says why */
    double err_tol;  /* the tolerance err_linf was held to (validated cases) */
} outcome;

/* Cases in a precision other than float32 (op_case.precision) are filled with
 * values of that type: bfloat16 and float16 inputs are uniform in [-1, 1]
 * rounded to the type; the uint8 and int8 operands of MatMulInteger and
 * ConvInteger take every value of their type; other int8 inputs lie in
 * [-8, 8]. Validated against the ref backend on the same values:
 * - bfloat16, float16: the float32 ref (its operator on the values widened,
 *   exactly, to float32) with |got - ref| <= u (1 + sqrt(K)) max|ref|, u the
 *   unit roundoff (2^-8 for bfloat16's 8-bit significand, 2^-11 for
 *   float16's 11 bits), K the length of the sums behind one output element
 *   (sizes_reduction_length): the output's own rounding, and rounding errors
 *   that grow as sqrt(K) where a backend accumulates in the narrow type;
 * - int8 (MatMulInteger, ConvInteger): MatMul or Conv of the ref in float64,
 *   where every sum of byte products is exact: equal, element for element;
 * - other int8 operators: the ref's own int8 operator, exactly. */

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
