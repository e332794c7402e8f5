/* The d5 command-line tool: shared declarations for its commands. */
#ifndef D5_CLI_H
#define D5_CLI_H

#include "d5/d5.h"

#include <stdio.h>

/* Exit codes of every command. */
enum {
    D5_EXIT_OK = 0,    /* success */
    D5_EXIT_CHECK = 1, /* a check failed, or the run itself failed */
    D5_EXIT_USAGE = 2, /* bad command line */
    D5_EXIT_INPUT = 3  /* bad input: a file, a size, a name that does not exist or parse */
};

/* ---- Options (options.c) ---- */

typedef enum cli_kind { CLI_FLAG, CLI_INT, CLI_DOUBLE, CLI_STRING } cli_kind;

typedef struct cli_opt {
    const char *name; /* long name without "--" */
    cli_kind kind;
    void *dest;          /* int* for FLAG and INT, double*, const char** */
    const char *metavar; /* "FILE", "N", "S" */
    const char *help;
    double min, max; /* range of INT and DOUBLE values */
} cli_opt;

typedef struct cli_spec {
    const char *command;     /* "machine" */
    const char *synopsis;    /* "[--json FILE] [--threads N]" */
    const char *description; /* paragraphs shown by --help */
    const cli_opt *opts;
    size_t nopts;
    const char *positional; /* name of the one positional argument ("OP"), or NULL */
    const char **pos_value; /* receives it */
    /* Instead of pos_value: one or more positional arguments ("DIR..."),
     * collected into *pos_list (malloc'd; the caller frees it whatever
     * cli_parse returns) and *pos_count. */
    const char ***pos_list;
    int *pos_count;
    int pos_optional; /* the command checks for a missing positional argument itself */
} cli_spec;

/* The fields every command sets: name, synopsis, description and its option
 * table (an array, counted here). Positional arguments follow as designated
 * initialisers: {CLI_SPEC("run", "...", "...", opts), .positional = "MODEL", ...}. */
#define CLI_SPEC(cmd_, synopsis_, description_, opts_)                                             \
    .command = (cmd_), .synopsis = (synopsis_), .description = (description_), .opts = (opts_),    \
    .nopts = sizeof(opts_) / sizeof((opts_)[0])

/* Parses argv[1..] (argv[0] is the command name). Positional arguments other
 * than the spec's one are an error; a missing one too. Returns -1 to go on, or
 * an exit code: D5_EXIT_OK after printing --help, D5_EXIT_USAGE after printing
 * what was wrong. */
int cli_parse(const cli_spec *spec, int argc, char **argv);
void cli_usage(FILE *f, const cli_spec *spec);
/* Prints the resolved value of every option as "# name = value" lines. */
void cli_echo(FILE *f, const cli_spec *spec);

/* Checks, before any work, that an output path (a file; is_dir: a folder,
 * created if missing) can be written: its folder exists and takes a new file.
 * NULL is fine (the output was not asked for). Prints what is wrong and
 * returns 0. */
int cli_output_ok(const char *command, const char *flag, const char *path, int is_dir);
/* Prints "d5 COMMAND: <status description>: <detail>" and returns the exit
 * code for a failed d5 call. */
int cli_fail(const char *command, d5_status s);
/* A progress line on standard error ("[2/5] what"). */
void cli_progress(int step, int steps, const char *fmt, ...) D5_PRINTF(3, 4);

/* ---- JSON documents (json_context.c) ---- */

struct json_t;
/* Writes `doc` (a JSON object; the reference is taken) to `path` atomically,
 * as every --json document is written: "schema_version"
 * (D5_REPORT_SCHEMA_VERSION) and "context" first, then the document's other
 * members. The context is core's block (date, host, CPU, caches, load, the d5
 * build: version, commit, compiler, libraries) with the document's own
 * context entries, plus "schema_version", "command" ("d5 " and spec's command,
 * else `command`), "machine" (a summary) and "configuration" ({"arguments":
 * the command line, "options": every option's resolved value when `spec` is
 * given}). */
d5_status cli_json_write(const cli_spec *spec, const char *command, struct json_t *doc,
                         const char *path);
/* d5_results_write_json's document, with the same additions. */
d5_status cli_json_write_results(const cli_spec *spec, const char *command, const d5_results *r,
                                 const char *path);
/* The document that another writer put in `written` (a cli_json_sibling of
 * `path`; removed), with the same additions, into `path`. */
d5_status cli_json_amend(const cli_spec *spec, const char *command, const char *written,
                         const char *path);
/* A hidden path beside `path` for such a writer (malloc'd). */
char *cli_json_sibling(const char *path);
/* The same context for a run log (an MLflow run): every option's resolved
 * value as a parameter (flags "yes"/"no", unset strings "none"), and tags for
 * the command and its command line (mlflow.source.name,
 * mlflow.note.content), the build (mlflow.source.git.commit, d5.version,
 * d5.compiler, ...), the libraries (lib.*), the host and a machine summary
 * (machine.*). */
d5_status cli_runlog_context(d5_runlog *log, const cli_spec *spec);

/* ---- Backends (options.c) ---- */

/* Checks the backend list of option --FLAG: with `executor`, as an executor's
 * preference list ("auto" allowed, d5_executor_check_backends), else as names
 * of backends (d5_backend_check_list). NULL (the default) is good. Returns -1
 * when it is good; else prints one line, "d5 COMMAND: --FLAG LIST: <reason>"
 * with the backends available here, and returns D5_EXIT_USAGE. */
int cli_check_backends(const char *command, const char *flag, const char *list, int executor);
/* Prints "d5 COMMAND: --FLAG VALUE: <detail of the last error>", with the
 * backends available here unless `s` is D5_ERR_NOTFOUND (an unknown node),
 * and returns D5_EXIT_USAGE: a bad backend option found by a check. */
int cli_bad_backend_option(const char *command, const char *flag, const char *value, d5_status s);

/* ---- Signals (signals.c) ---- */

/* Blocks SIGINT, SIGTERM and SIGHUP. main() calls it first: the mask and a
 * signal that arrives meanwhile survive the restart (execve) and wait for the
 * handlers, so that d5 is never ended by one of them without its cleanup. */
void cli_signals_block(void);
/* On SIGINT, SIGTERM or SIGHUP: ends the registered children's process
 * groups, removes the registered unfinished files and folders, and exits with
 * 128 + the signal. Installed once by main(), which then unblocks the signals
 * (a pending one is handled at that moment). */
void cli_signals_install(void);
/* A child process group to end on a signal, and its end. */
void cli_child_started(long pgid);
void cli_child_ended(long pgid);
/* A file (or an empty-by-then folder: register its files first) to remove on
 * a signal; cli_unfinished_clear once the output is complete. */
void cli_unfinished_add(const char *path);
void cli_unfinished_clear(void);

/* ---- Threads and contention (contention.c) ---- */

/* The help text of every command's --threads option. */
#define CLI_THREADS_HELP                                                                           \
    "threads of the CPU backends (default 0: automatic, the cores this process may use, fewer "    \
    "while other processes occupy some)"

/* Restarts the process (execv of /proc/self/exe with the same arguments) after
 * setting d5's OpenMP wait policy, unless the user set one: OpenMP reads it
 * only when it is loaded (d5_threads_wait_policy_env). Returns when there is
 * nothing to do, or when the restart failed. */
void cli_wait_policy_restart(char **argv);
/* Sets the thread count (0: automatic), echoes it and the threading runtime as
 * "# threads: ..." lines, and starts watching the cores. Returns -1 to go on,
 * or an exit code. */
int cli_threads_apply(const char *command, int threads);
/* The threads the command meant to use: --threads, or the usable cores. */
int32_t cli_threads_intended(void);
/* Counts a measurement that the end-of-command warning summarises. */
void cli_contention_note(const d5_measurement *m);
/* Contention over the whole command; prints one warning line on standard
 * error when other processes competed for the cores (and one when
 * measurements were unstable). Returns 1 when flagged. `out` may be NULL. */
int cli_contention_end(const char *command, d5_contention *out);
/* Records the figures of cli_contention_end and the threading in a results
 * context. */
d5_status cli_contention_context(d5_results *r);

/* ---- Commands ---- */

typedef int (*cli_command_fn)(int argc, char **argv);
/* One per row of commands.def, each in its file cmd_<name>.c. */
#define D5_COMMAND(NAME, FN, COMPUTES, SUMMARY) int FN(int argc, char **argv);
#include "commands.def"
#undef D5_COMMAND

/* ---- Suites shared by `d5 bench` and bench/ (suite_timer.c) ---- */

/* Measures the cost of timer start+end pairs and of clock reads, adding one
 * benchmark per variant to `r` (ns per pair or per read). */
d5_status d5_suite_timer_overhead(d5_results *r, const d5_measure_params *mp);
/* The GFLOP/s of the operator benchmarks of a results set, by index, kept
 * until the peak they are rated against is known (bench_peak.c). */
#define CLI_RATES_MAX 64
typedef struct cli_rates {
    size_t n;
    size_t index[CLI_RATES_MAX];
    double gflops[CLI_RATES_MAX];
} cli_rates;
/* Adds one; D5_ERR_RANGE when full. */
d5_status cli_rates_note(cli_rates *rates, size_t index, double gflops);
/* Adds the counters pct_peak (% of peak_gflops) and, above 100%,
 * peak_under_measured to every noted benchmark; nothing for a peak <= 0. */
d5_status cli_rates_pct_peak(d5_results *r, const cli_rates *rates, double peak_gflops);
/* The all-core FP32 peak that d5 bench rates its operators against: the
 * higher median of the peaks measured before and after the suite (a
 * contended measurement reads low); gflops 0 when neither was measured. */
typedef struct cli_peak_choice {
    double gflops;
    const char *which; /* "before" or "after" the suite, or "none" */
    const char *why;   /* a phrase for the output */
} cli_peak_choice;
cli_peak_choice cli_bench_peak(const d5_machine_peaks *before, const d5_machine_peaks *after);
/* Times a DeepBench subset of GEMM and convolution on every available fast
 * backend, with GFLOP/s; each benchmark's GFLOP/s is noted in `rates` (may
 * be NULL) for cli_rates_pct_peak. */
d5_status d5_suite_operators(d5_results *r, double max_time, cli_rates *rates);
/* Times LeNet (batch 64) and the CIFAR ResNet-20 (batch 32) inference on the
 * default backends, with FrameworkOverhead as counters (suite_network.c). */
/* With `mem` (may be NULL), the memory report of one inference of the last
 * model (CIFAR ResNet-20) is kept there (free with d5_memory_profile_free);
 * every model's peak is a counter memory_peak_bytes. */
d5_status d5_suite_network(d5_results *r, double max_time, d5_memory_profile *mem);
/* Trains LeNet-5 on MNIST (synthetic data of its shape without MNIST) for
 * `batches` batches of 64 and adds the step time with the speed report as
 * counters, and the FORWARD, BACKWARD, OPTIMIZER and IO regions
 * (suite_training.c). */
d5_status d5_suite_training(d5_results *r, int64_t batches);

#endif
