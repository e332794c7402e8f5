/* libFuzzer target for the option parser of every d5 command (cli_parse in
 * cli/options.c): the input, split at NUL bytes into arguments (at most 63
 * after the command name), must either parse or end with an exit code, never
 * crash, leak or read out of bounds. Two specs take an option of every kind
 * (a flag, an integer and a number with ranges, a string): one with a single
 * positional argument, one with a list of them. What parses must hold: values
 * inside their ranges, a non-empty string, the positional argument(s) taken
 * from the arguments.
 *
 * cli_parse writes its messages and --help to stdout and stderr: stdout goes
 * to /dev/null, and the target asks libFuzzer for -close_fd_mask=2 (given
 * before the command line's own flags, which may override it), which sends
 * stderr there while libFuzzer and the sanitizers keep reporting on a copy of
 * it; a freopen of stderr would silence them too. */
#include "cli.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char close_stderr[] = "-close_fd_mask=2";
static char **args;

static void free_args(void)
{
    free(args);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (!freopen("/dev/null", "w", stdout)) abort();
    /* argv[0], our flag, then the command line's arguments. */
    args = calloc((size_t)*argc + 2, sizeof *args);
    if (!args) abort();
    args[0] = (*argv)[0];
    args[1] = close_stderr;
    for (int i = 1; i < *argc; i++) args[i + 1] = (*argv)[i];
    *argc += 1;
    *argv = args;
    atexit(free_args);
    return 0;
}

static int verbose, threads;
static double max_time;
static const char *json, *op, **dirs;
static int ndirs;

static const cli_opt opts[] = {
    {"verbose", CLI_FLAG, &verbose, NULL, "say more", 0, 0},
    {"threads", CLI_INT, &threads, "N", "threads", 0, 1024},
    {"max-time", CLI_DOUBLE, &max_time, "S", "seconds", 0.001, 3600},
    {"json", CLI_STRING, &json, "FILE", "results file", 0, 0},
};

static const cli_spec one = {CLI_SPEC("fuzz", "[options] OP", "Fuzzes the option parser.", opts),
                             .positional = "OP", .pos_value = &op};
static const cli_spec many = {
    CLI_SPEC("fuzz", "[options] DIR...", "Fuzzes the option parser.", opts), .positional = "DIR",
    .pos_list = &dirs, .pos_count = &ndirs};

/* 1 when p is one of the arguments. */
static int is_arg(const char *p, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (p == argv[i]) return 1;
    return 0;
}

static void parse(const cli_spec *spec, int argc, char **argv)
{
    verbose = 0;
    threads = 1;
    max_time = 1.0;
    json = op = NULL;
    dirs = NULL;
    ndirs = 0;
    int rc = cli_parse(spec, argc, argv);
    if (rc != -1 && rc != D5_EXIT_OK && rc != D5_EXIT_USAGE) abort();
    if (rc == -1) {
        if ((verbose != 0 && verbose != 1) || threads < 0 || threads > 1024 ||
            !isfinite(max_time) || max_time < 0.001 || max_time > 3600 || (json && !*json))
            abort();
        if (json && !is_arg(json, argc, argv) && json[-1] != '=') abort();
        if (spec->pos_list) {
            if (ndirs < 1 || ndirs >= argc) abort();
            for (int i = 0; i < ndirs; i++)
                if (!is_arg(dirs[i], argc, argv)) abort();
        } else if (!op || !is_arg(op, argc, argv)) {
            abort();
        }
        cli_echo(stdout, spec);
    }
    if (spec->pos_list) free(dirs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf) abort();
    if (size) memcpy(buf, data, size);
    buf[size] = '\0';
    char command[] = "fuzz", *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = command;
    for (char *p = buf; argc < MAX_ARGS && p < buf + size; p += strlen(p) + 1) argv[argc++] = p;
    argv[argc] = NULL;
    parse(&one, argc, argv);
    parse(&many, argc, argv);
    free(buf);
    return 0;
}
