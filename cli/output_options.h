/* The output options of the commands that write results, one group for all:
 * --json, --csv, --out, --mlflow and --wandb. The rows of the option table,
 * the check of their paths before the work starts, and the reporters
 * (d5/report.h) that write a command's d5_results to each. */
#ifndef D5_CLI_OUTPUT_OPTIONS_H
#define D5_CLI_OUTPUT_OPTIONS_H

#include "cli.h"

/* Where the results go; NULL: not asked for. */
typedef struct cli_outputs {
    const char *json;   /* FILE: Google Benchmark's JSON layout with d5's context */
    const char *csv;    /* FILE: one row per benchmark */
    const char *out;    /* DIR: the command's results folder (a new one) */
    const char *mlflow; /* DIR: an MLflow run under this mlruns folder */
    const char *wandb;  /* DIR: a W&B offline run under this folder */
} cli_outputs;

/* The rows of the group, for a command's option table: the ones it writes,
 * with the command's own help text (the _AS forms) or the group's. */
#define CLI_OUTPUT_ROW(name, field, meta, help)                                                    \
    {                                                                                              \
        name, CLI_STRING, &(field), meta, (help), 0, 0                                             \
    }
#define CLI_OUTPUT_JSON_AS(o, help)   CLI_OUTPUT_ROW("json", (o)->json, "FILE", help)
#define CLI_OUTPUT_CSV_AS(o, help)    CLI_OUTPUT_ROW("csv", (o)->csv, "FILE", help)
#define CLI_OUTPUT_OUT(o, help)       CLI_OUTPUT_ROW("out", (o)->out, "DIR", help)
#define CLI_OUTPUT_MLFLOW_AS(o, help) CLI_OUTPUT_ROW("mlflow", (o)->mlflow, "DIR", help)
#define CLI_OUTPUT_WANDB_AS(o, help)  CLI_OUTPUT_ROW("wandb", (o)->wandb, "DIR", help)
#define CLI_OUTPUT_JSON(o)                                                                         \
    CLI_OUTPUT_JSON_AS(o, "write the results to FILE as JSON (Google Benchmark's layout, d5's "    \
                          "context)")
#define CLI_OUTPUT_CSV(o) CLI_OUTPUT_CSV_AS(o, "write the results to FILE as CSV")
#define CLI_OUTPUT_MLFLOW(o)                                                                       \
    CLI_OUTPUT_MLFLOW_AS(o, "log the run as an MLflow run under DIR (mlruns): options, build and " \
                            "host, every benchmark's median and CI")
#define CLI_OUTPUT_WANDB(o)                                                                        \
    CLI_OUTPUT_WANDB_AS(o, "write that run log as a W&B offline run under DIR (wandb sync "        \
                           "DIR/offline-run-*)")
/* All five. */
#define CLI_OUTPUT_ALL(o, out_help)                                                                \
    CLI_OUTPUT_OUT(o, out_help), CLI_OUTPUT_JSON(o), CLI_OUTPUT_CSV(o), CLI_OUTPUT_MLFLOW(o),      \
        CLI_OUTPUT_WANDB(o)

/* Checks, before any work, every path given (cli_output_ok: --json, --csv and
 * --out take a new entry in a writable folder, --mlflow and --wandb a folder,
 * created if missing). Prints what is wrong and returns 0; 1 when all is well. */
int cli_outputs_check(const char *command, const cli_outputs *o);

/* How a command's results are written. */
typedef struct cli_outputs_params {
    const cli_spec *spec;   /* the command: its name and options, echoed into the JSON and the
                               run logs; may be NULL */
    const char *command;    /* the name when spec is NULL ("allreduce") */
    const char *run_name;   /* run logs' name; default "d5 COMMAND" */
    const char *experiment; /* MLflow experiment; default the run name */
    const char *project;    /* W&B project; default "d5-COMMAND" */
    /* The command's own entries of the run log: `before` the benchmarks'
     * metrics (after the options, build and host of cli_runlog_context),
     * `after` them. May be NULL. */
    d5_status (*before)(void *user, d5_runlog *log);
    d5_status (*after)(void *user, d5_runlog *log);
    void *user;
    int console; /* 1: the table of the results on standard output first */
} cli_outputs_params;

/* The reporters of one command's run, in the order they write. */
#define CLI_MAX_REPORTERS 8
typedef struct cli_reporters {
    d5_reporter *rep[CLI_MAX_REPORTERS];
    size_t n;
    /* What the JSON and run-log reporters borrow. */
    cli_outputs_params params;
    char run_name[128], project[128];
} cli_reporters;

/* Builds the reporters for the outputs asked for: the console table (with
 * p->console), --json (cli_json_write_results), --csv, --mlflow and --wandb
 * (d5_reporter_mlflow, d5_reporter_wandb with the hooks above; each says on
 * standard output where its run went). --out is the command's own. `out`
 * (zeroed first) must stay in place until cli_reporters_free; on failure it
 * is freed. */
d5_status cli_outputs_reporters(const cli_outputs *o, const cli_outputs_params *p,
                                cli_reporters *out);
/* Runs every reporter over `r` (context, runs, finish); the first error stops. */
d5_status cli_reporters_report(cli_reporters *reps, const d5_results *r);
void cli_reporters_free(cli_reporters *reps);
/* The three above in one: the results written to every output asked for. */
d5_status cli_outputs_write(const cli_outputs *o, const cli_outputs_params *p, const d5_results *r);

#endif
