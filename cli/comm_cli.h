/* What `d5 allreduce` and `d5 pingpong` share: message sizes, short option
 * aliases, and the measurement that every rank of a job takes alike. */
#ifndef D5_CLI_COMM_H
#define D5_CLI_COMM_H

#include "cli.h"
#include "d5/distributed.h"

/* "64M" -> 67108864: an integer with an optional K, M or G (powers of 1024)
 * and an optional B or iB. 0 when it does not parse (and *out is untouched). */
int comm_parse_bytes(const char *s, uint64_t *out);
/* "64 MiB", "1 KiB", "8 B". */
void comm_format_bytes(uint64_t b, char *buf, size_t size);

/* "12.34 [12.20, 12.51]" in microseconds from statistics in ns, with
 * " unstable" when the measurement was. */
void comm_format_time(const d5_measurement *m, char *buf, size_t size);

/* min, min*f, min*f^2, ... up to max; with min 0: 0, 1, f, f^2, ...
 * Malloc'd; D5_ERR_INVALID for min > max or factor < 2. */
d5_status comm_sizes_geometric(uint64_t min, uint64_t max, int factor, uint64_t **out, size_t *n);
/* The size_floats column of a DeepBench allreduce CSV ("deepbench" for
 * bench/deepbench/allreduce.csv), times `elem` bytes. Malloc'd. */
d5_status comm_sizes_csv(const char *spec, size_t elem, uint64_t **out, size_t *n);

/* argv with -b, -e and -f replaced by --min-bytes, --max-bytes and --factor
 * (malloc'd array; the strings are argv's own). NULL when out of memory. */
char **comm_short_aliases(int argc, char **argv);
/* cli_parse with the short aliases: -1 to go on, or an exit code. */
int comm_parse(const cli_spec *spec, int argc, char **argv);

/* One operation that every rank calls (an allreduce; a ping-pong exchange). */
typedef d5_status (*comm_op_fn)(void *ctx);

typedef struct comm_measure_params {
    double budget_s; /* time for the measured samples of one size */
    double scale;    /* sample = time per operation * scale (0.5: one way of a round trip) */
    int rank0_only;  /* the sample is rank 0's time; else the slowest rank's */
    d5_timer *timer; /* NULL, or records each batch (BATCH) and its agreement (AGREE) */
} comm_measure_params;

/* d5_measure_samples on every rank with the same samples: each sample times a
 * batch of operations and the ranks agree (d5_comm_agree) on its value, so
 * that they take the same number of samples and stop together. A pilot,
 * agreed as well, sizes the batch (about 1 ms) and turns the time budget into
 * the sample count. A failure on one rank fails the measurement on every rank;
 * contention on any rank's cores marks the measurement contended on all.
 * Samples are nanoseconds per operation. */
d5_status comm_measure(d5_comm *c, comm_op_fn op, void *ctx, const comm_measure_params *p,
                       d5_measurement *out);

/* The help text of --comm-timeout. */
#define COMM_TIMEOUT_HELP                                                                          \
    "give up a communication that has not completed after S seconds, and end the job with "        \
    "exit status 1: a rank that crashed or hangs then ends the run (default 0: wait for ever)"

/* Prints "d5 COMMAND: <status>: <detail>" and returns the exit code, as
 * cli_fail. D5_ERR_TIMEOUT (the detail names the rank and the operation) then
 * ends the whole job with d5_comm_abort and exit status D5_EXIT_CHECK: the
 * other ranks may be waiting for this one, or hang. */
int comm_fail(d5_comm *c, const char *command, d5_status s);

/* Ranks on this node against its online CPUs: 1 when they outnumber them.
 * `why` receives "4 ranks on this node, 2 online CPUs". */
int comm_oversubscribed(const d5_comm *c, char *why, size_t size);

#endif
