/* d5: the command-line tool. Each command is one row of commands.def and one
 * file cmd_<name>.c. */
#include "cli.h"

#include <string.h>

typedef struct command {
    const char *name;
    cli_command_fn run;
    const char *summary;
    int computes; /* runs OpenMP parallel work: restarts with d5's wait policy */
} command;

static const command commands[] = {
#define D5_COMMAND(NAME, FN, COMPUTES, SUMMARY) {NAME, FN, SUMMARY, COMPUTES},
#include "commands.def"
#undef D5_COMMAND
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
