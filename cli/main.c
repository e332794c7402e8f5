/* d5: the command-line tool. Each command is one row of the table below and
 * one file cmd_<name>.c. */
#include "cli.h"

#include <string.h>

typedef struct command {
    const char *name;
    cli_command_fn run;
    const char *summary;
    int computes; /* runs OpenMP parallel work: restarts with d5's wait policy */
} command;

static const command commands[] = {
    {"allreduce", cmd_allreduce,
     "time a communicator's allreduce across sizes (under mpirun): busbw, #wrong", 1},
    {"bench", cmd_bench, "run the default benchmark suite and write a results folder", 1},
    {"compare", cmd_compare, "compare two results files: medians, ratio, rank test, verdict", 0},
    {"compile-op", cmd_compile_op, "build a custom operator into a shared object d5 can load", 0},
    {"machine", cmd_machine, "describe this machine and measure its FP32 and memory peaks", 1},
    {"model", cmd_model, "write a built-in model (LeNet, ResNets, WRN) as an ONNX file", 0},
    {"onnx-test", cmd_onnx_test, "run ONNX backend conformance test folders", 1},
    {"pingpong", cmd_pingpong, "latency and bandwidth between two ranks, alpha-beta fit", 0},
    {"recipe", cmd_recipe,
     "train a named recipe (model, data, schedule) and check its target accuracy", 1},
    {"report", cmd_report, "plot a results folder with gnuplot: an HTML page, SVG and PNG files",
     0},
    {"run", cmd_run, "measure an ONNX model: latency, throughput, per-operator time, overhead", 1},
    {"scaling", cmd_scaling,
     "run d5 train --distributed on several rank counts: speedup, efficiency, a model beyond", 0},
    {"summary", cmd_summary, "print a model summary: shapes, parameters, multiply-adds", 0},
    {"test-operator", cmd_test_operator, "time and validate one operator across sizes and backends",
     1},
    {"train", cmd_train, "train a classifier on a dataset: accuracy, loss curve, speed", 1},
    {"version", cmd_version, "print d5's version and build information", 0},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: d5 COMMAND [OPTIONS]\n\n"
               "d5 measures deep learning operators, networks, training and the communication\n"
               "of distributed training with statistically sound methods (warm-up excluded,\n"
               "repetitions until the median's 95%% confidence interval is tight, median and CI\n"
               "reported).\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'd5 COMMAND --help' describes a command and its options.\n"
               "exit status: 0 success, 1 a check or the run failed, 2 bad usage, 3 bad input,\n"
               "130 and 143 interrupted by SIGINT and SIGTERM\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return D5_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return D5_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) return cmd_version(1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            /* Signals wait from here until the handlers are in place, across
             * the restart and the second loading of d5's libraries. */
            cli_signals_block();
            if (commands[i].computes) cli_wait_policy_restart(argv);
            cli_signals_install();
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "d5: unknown command '%s' (see 'd5 --help')\n", argv[1]);
    return D5_EXIT_USAGE;
}
