/* A results folder that appears whole: its files are written into a folder
 * beside it, which is renamed once every file is there (d5 bench, d5 train). */
#ifndef D5_CLI_RESULTS_FOLDER_H
#define D5_CLI_RESULTS_FOLDER_H

#include "cli.h"

#include <stddef.h>
#include <stdio.h>

/* One file of a folder: its name and what writes it to `path` from the
 * command's context. A writer that has nothing to write this run (a report
 * not asked for) returns D5_OK and leaves no file. */
typedef struct cli_folder_file {
    const char *name;
    d5_status (*write)(const void *ctx, const char *path);
} cli_folder_file;

/* Writes the folder `dir` (which must not exist): the n files of `files`, in
 * order, into DIR.partial-PID, renamed to `dir` once complete. On failure the
 * partial folder is removed and nothing is left; while it is written, an
 * interrupt removes it too (cli_unfinished_add; cleared on return).
 * D5_ERR_IO names the folder that cannot be created or renamed; a writer's
 * status is returned as it is. */
d5_status cli_folder_write(const char *dir, const cli_folder_file *files, size_t n,
                           const void *ctx);
/* " summary.txt results.json ...": the files of the table that `dir` holds. */
void cli_folder_print(FILE *f, const char *dir, const cli_folder_file *files, size_t n);

#endif
