/* A results folder that appears whole (see results_folder.h). */
#define _POSIX_C_SOURCE 200809L
#include "results_folder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "dir/name" (caller frees), or NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void remove_partial(const char *dir, const cli_folder_file *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *p = join(dir, files[i].name);
        if (p) unlink(p);
        free(p);
    }
    rmdir(dir);
}

d5_status cli_folder_write(const char *dir, const cli_folder_file *files, size_t n, const void *ctx)
{
    char *partial = NULL;
    size_t len = strlen(dir) + 32;
    if (!(partial = malloc(len))) return d5_error(D5_ERR_NOMEM, "out of memory");
    snprintf(partial, len, "%s.partial-%ld", dir, (long)getpid());
    /* Interrupted while writing: the unfinished folder goes. */
    for (size_t i = 0; i < n; i++) {
        char *path = join(partial, files[i].name);
        if (path) cli_unfinished_add(path);
        free(path);
    }
    cli_unfinished_add(partial);
    d5_status s = D5_OK;
    int made = mkdir(partial, 0777) == 0;
    if (!made) s = d5_error(D5_ERR_IO, "cannot create '%s': %s", partial, strerror(errno));
    for (size_t i = 0; s == D5_OK && i < n; i++) {
        char *path = join(partial, files[i].name);
        s = path ? files[i].write(ctx, path) : d5_error(D5_ERR_NOMEM, "out of memory");
        free(path);
    }
    if (s == D5_OK && rename(partial, dir) != 0)
        s = d5_error(D5_ERR_IO, "cannot rename '%s' to '%s': %s", partial, dir, strerror(errno));
    if (s != D5_OK && made) remove_partial(partial, files, n);
    cli_unfinished_clear();
    free(partial);
    return s;
}

void cli_folder_print(FILE *f, const char *dir, const cli_folder_file *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *p = join(dir, files[i].name);
        struct stat st;
        if (p && stat(p, &st) == 0) fprintf(f, " %s", files[i].name);
        free(p);
    }
}
