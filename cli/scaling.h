/* d5 scaling: the rows of a scaling series, measured (read from the JSON of
 * `d5 train --distributed`) or modelled (alpha-beta ring allreduce), and how
 * they are printed and written. cmd_scaling.c runs the series. */
#ifndef D5_CLI_SCALING_H
#define D5_CLI_SCALING_H

#include "cli.h"

/* A median with its 95% CI, in seconds; NaN where the run gave none. */
typedef struct scaling_stat {
    double median, ci_low, ci_high;
} scaling_stat;

/* One rank count. Figures that do not exist (null in the run's JSON, or no
 * 1-rank run to compare with) are NaN and print as '-'. */
typedef struct scaling_row {
    int modelled;  /* 0: measured; 1: modelled, never measured */
    int simulated; /* modelled with the allreduce simulated by SimGrid (--simulate) */
    int64_t ranks;
    double workers, servers, global_batch, local_batch, steps;
    int oversubscribed; /* 1 yes, 0 no, -1 not reported (modelled rows) */
    double samples_per_s;
    scaling_stat step, compute, comm; /* step time, compute time, exposed communication */
    double gradient_bytes, sent_per_step, recv_per_step;
    double speedup, efficiency, comm_share; /* X_P / X_1, X_P / (P X_1), comm / step */
    char scheme[32], comm_backend[32];
} scaling_row;

/* Reads the "distributed" object of a `d5 train --distributed --json` file.
 * D5_ERR_IO when the file cannot be read, D5_ERR_FORMAT when it is not JSON
 * or lacks the object or its "ranks", "samples_per_second" or
 * "step_time_s".median; other fields may be null or absent. */
d5_status scaling_row_read(const char *path, scaling_row *out);

/* Sets speedup, efficiency and communication share of every row against
 * `base`, the series' 1-rank run (NULL: speedup and efficiency are NaN). */
void scaling_rows_relate(scaling_row *rows, size_t n, const scaling_row *base);

/* A modelled step: compute_s (already scaled to P) plus the ring allreduce of
 * gradient_bytes with alpha and beta (d5_alpha_beta_ring_allreduce_s), no
 * overlap; global_batch samples per step. */
typedef struct scaling_fit scaling_fit;
typedef struct scaling_model {
    double alpha_s, beta_s_per_byte, gradient_bytes;
    const scaling_fit *fit; /* NULL, or a piecewise fit that replaces alpha and beta */
} scaling_model;
void scaling_model_row(const scaling_model *m, int64_t ranks, double compute_s, double global_batch,
                       scaling_row *out);

/* The table: a header, then one line per row ("oversubscribed" or "modelled"
 * at its end). */
void scaling_print_header(FILE *f);
void scaling_print_row(FILE *f, const scaling_row *r);

/* What the JSON file's context block says about the series. */
typedef struct scaling_context {
    const char *mode, *launcher, *train_command;
    int complete;           /* every measured run succeeded */
    int64_t failed_ranks;   /* the rank count whose run failed, else 0 */
    double alpha_s, beta_s; /* NaN without a model */
    const char *alpha_beta_source;
    const char *compute_source;
} scaling_context;

/* Both files are written whole or not at all (d5_file_write_atomic). */
d5_status scaling_write_json(const char *path, const scaling_context *ctx, const scaling_row *rows,
                             size_t n);
d5_status scaling_write_csv(const char *path, const scaling_row *rows, size_t n);

/* ---- How the runs start (scaling_launch.c) ---- */

#define SCALING_MAX_RANKS 1048576

/* A NULL-terminated list of owned strings: an argv. */
typedef struct scaling_words {
    char **v;
    size_t n, cap;
    int failed; /* out of memory on the way */
} scaling_words;
void scaling_words_add(scaling_words *w, const char *s);
void scaling_words_free(scaling_words *w);
/* The words as a POSIX shell reads them back (quoted where needed), after
 * `prefix`; no line break. */
void scaling_print_words(FILE *f, const char *prefix, const scaling_words *w);

/* "1,2,4": distinct rank counts 1..SCALING_MAX_RANKS, sorted (malloc'd).
 * Prints what is wrong ("d5 scaling: FLAG 'LIST': ...") and returns 0. */
int scaling_parse_ranks(const char *flag, const char *list, int64_t **out, size_t *n);

/* How every run is started. */
typedef struct scaling_plan {
    int weak;
    scaling_words launcher; /* --launcher's words, {n} still in them */
    int default_launcher;   /* mpirun -n {n}: --oversubscribe added beyond the cores */
    int open_mpi;           /* the default launcher is Open MPI's */
    int cores;              /* physical cores of this machine (Open MPI's slots) */
    char d5[4096];          /* the d5 binary of the runs */
    char **train;           /* the arguments after "train" (borrowed from argv) */
    int ntrain;
    int64_t batch;     /* --batch of the train command; 0: not given */
    int sharded;       /* --sampler sharded-batch: --batch is the global batch, else a worker's */
    int64_t max_ranks; /* the largest count of --ranks */
    const char *scheme;
} scaling_plan;

/* Checks the command after "--" (cmd[0..n)): d5 train or PATH/d5 train with
 * --distributed SCHEME and without --json, and with --batch B in weak mode;
 * fills the plan's d5, train, batch and scheme ("d5" becomes this binary).
 * Returns -1, or D5_EXIT_USAGE after saying what is wrong. Set weak and
 * max_ranks first. */
int scaling_check_train(char **cmd, int n, scaling_plan *pl);
/* Splits --launcher (NULL: the default mpirun -n {n}, from PATH; with
 * need_default, none found is D5_EXIT_USAGE). Returns -1 or an exit code. */
int scaling_setup_launcher(const char *arg, int need_default, scaling_plan *pl);
/* The command of the run on p ranks, writing its JSON to `json`, with the
 * --batch that keeps a worker's batch (weak) or the global batch (strong):
 * B*p in weak mode with sharded-batch, B/p in strong mode with the
 * partitioned sampler, B otherwise. */
void scaling_train_words(const scaling_plan *pl, int64_t p, const char *json, scaling_words *w);
/* 1 when argument `a` is a distributed scheme's own option ("--servers",
 * "--staleness", "--average-every", "--bucket-mb", "--hash-every", with its
 * value after "=" or in the next argument), which the local scheme does not
 * take. */
int scaling_scheme_option(const char *a);
/* The run on p ranks again as the local scheme (no communication, the
 * scheme's own options left out), writing its step profile to `profile`:
 * the compute d5-sim-train replays. */
void scaling_profile_words(const scaling_plan *pl, int64_t p, const char *json, const char *profile,
                           scaling_words *w);
/* d5 pingpong --fit on 2 ranks over 1 KiB..4 MiB, writing `json`. */
void scaling_pingpong_words(const scaling_plan *pl, const char *json, scaling_words *w);

/* 1 when `name` is an executable file in a folder of PATH. */
int scaling_on_path(const char *name);
/* Runs argv with standard output and error into `log`, standard input from
 * /dev/null, in a process group of its own that a signal to d5 ends (see
 * cli_child_started). Returns its exit status, 128 + the signal that ended
 * it, or 127 when it could not start. */
int scaling_run_logged(char **argv, const char *log);
/* The last `lines` lines of a log, indented, on standard error. */
void scaling_print_tail(const char *log, int lines);

/* ---- Simulated rows (scaling_sim.c) ---- */

/* --simulate: the platform file, the hostfile, and d5-sim-train beside the
 * d5 binary. */
typedef struct scaling_sim {
    const char *platform, *hostfile;
    char program[4200];
} scaling_sim;
/* Checks the files, the program and smpirun on PATH before any run. Returns
 * 0, or an exit status after saying what is missing. */
int scaling_sim_check(const char *d5, const char *platform, const char *hostfile, scaling_sim *out);
/* What a simulated row replays: the step profile, the scheme and its
 * options from the train command, the steps and the factor on the
 * profile's times (strong scaling: a worker's batch shrinks with P). */
typedef struct scaling_replay {
    const char *profile, *scheme, *comm;
    const scaling_plan *pl; /* the scheme's options are read from its train command */
    int64_t steps;
    double time_scale;
} scaling_replay;
/* smpirun -np RANKS -platform ... d5-sim-train --profile ... --scheme ...:
 * with a piecewise fit (`fit` may be NULL) a sum costs its fitted line,
 * else the rate d5-sim-train measures. */
void scaling_sim_words(const scaling_sim *sim, const scaling_fit *fit, int64_t ranks,
                       const scaling_replay *rp, scaling_words *w);
/* Runs it, output into `log`, and fills the row's step, compute and exposed
 * communication (SMPI's clock). Returns 0 or an exit status after saying what
 * failed. */
int scaling_sim_train(const scaling_sim *sim, const scaling_fit *fit, int64_t ranks,
                      const scaling_replay *rp, const char *log, scaling_row *row);

/* alpha and beta from the context of a `d5 pingpong --fit --json` file
 * (scaling.c). D5_ERR_IO, or D5_ERR_FORMAT when they are not numbers. */
/* What a `d5 pingpong --fit --json` file gives the model: alpha and beta
 * of one line, or, from `d5 pingpong --exchange --fit`, the piecewise model
 * of a ring's step and the line of its sum (piecewise set; the rows then
 * come from d5_piecewise_ring_allreduce_s). */
struct scaling_fit {
    double alpha_s, beta_s_per_byte;
    int piecewise;
    d5_piecewise exchange;
    d5_alpha_beta reduce;
};
d5_status scaling_fit_read(const char *path, scaling_fit *out);

#endif
