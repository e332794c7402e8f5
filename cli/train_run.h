/* One training run of d5 train, from typed options to its outcome: d5 train
 * parses its command line into train_options (train_args.c), d5 recipe fills
 * them per phase, and both call train_run. */
#ifndef D5_CLI_TRAIN_RUN_H
#define D5_CLI_TRAIN_RUN_H

#include "output_options.h"
#include "d5/d5.h"
#include "d5/train_config.h"

/* The training configuration (level 2) with what the command line adds: the
 * threads, the output files and the distributed job. */
typedef struct train_options {
    d5_train_config cfg;
    int threads; /* 0: automatic */
    /* Outputs (NULL: none): --out, --json, --csv, --mlflow, --wandb, and
     * --trace and --memory. */
    cli_outputs outs;
    const char *trace, *memory;
    const char *step_profile; /* --step-profile FILE.json */
    double system_hz;         /* default 10 */
    int memory_step;          /* default 2 */
    /* --distributed (NULL: one process) and its options; -1: the scheme's
     * default. */
    const char *distributed;
    int32_t scheme; /* parsed from distributed */
    const char *comm;
    int servers, staleness, average_every, hash_every;
    double bucket_mb, comm_timeout;
} train_options;

/* d5 train's defaults. */
void train_options_default(train_options *o);

/* What a run gives back to its caller (rank 0's figures). */
typedef struct train_outcome {
    d5_epoch_stats *epochs; /* nepochs entries; owned: train_outcome_free */
    int32_t nepochs;
    int64_t batches;            /* over all epochs */
    double seconds;             /* training time, evaluation excluded */
    double final_test_accuracy; /* NaN without a test set */
    double time_to_accuracy_s;  /* NaN when the target was not reached */
    int32_t stop;               /* a d5_train_stop */
    int contended;              /* other processes competed for the cores */
} train_outcome;

void train_outcome_free(train_outcome *o);

/* Runs the training of `o` (checked: train_options_check) and prints and
 * writes what d5 train does. `out` (may be NULL) receives the outcome of a
 * run that succeeded. Returns the exit status. */
int train_run(const train_options *o, train_outcome *out);

/* ---- The command line (train_args.c) ---- */

/* Checks the options together: the configuration (d5_train_config_check) and
 * the combinations with --distributed and its options. D5_ERR_INVALID with a
 * message naming the options. */
d5_status train_options_check(const train_options *o);

/* The option table of d5 train, bound to a train_options and the strings of
 * its typed fields. */
typedef struct train_args train_args;
/* Parses argv into *o. Returns -1 to go on, or an exit status after printing
 * --help or what is wrong. */
int train_parse(int argc, char **argv, train_options *o);
/* The spec of d5 train whose options hold the values of `o` (for the echo of
 * the resolved configuration, the JSON context and the run log); freed with
 * train_spec_free. NULL when out of memory. */
const cli_spec *train_spec_of(const train_options *o);
void train_spec_free(const cli_spec *spec);

/* Prints "d5 train: <message> (see 'd5 train --help')" and returns
 * D5_EXIT_USAGE. */
int train_usage_error(const char *message);

#endif
