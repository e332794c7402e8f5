/* Files written atomically: a temporary file beside the target, renamed over
 * it once complete. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *d5_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    int slash = a > 0 && dir[a - 1] != '/';
    char *p = d5_alloc(a + (size_t)slash + b + 1, "path");
    if (!p) return NULL;
    memcpy(p, dir, a);
    if (slash) p[a] = '/';
    memcpy(p + a + (size_t)slash, name, b + 1);
    return p;
}

d5_status d5_mkdirs(const char *path)
{
    char *p = d5_strdup(path, "directory path");
    if (!p) return D5_ERR_NOMEM;
    d5_status s = D5_OK;
    for (char *c = p + 1;; c++) {
        if (*c == '/' || *c == '\0') {
            char saved = *c;
            *c = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                s = d5_error(D5_ERR_IO, "cannot create directory '%s': %s", p, strerror(errno));
                break;
            }
            *c = saved;
            if (saved == '\0') break;
        }
    }
    if (s == D5_OK) {
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            s = d5_error(D5_ERR_IO, "'%s' exists and is not a directory", path);
    }
    d5_free(p);
    return s;
}

d5_status d5_afile_open(d5_afile *af, const char *path)
{
    memset(af, 0, sizeof *af);
    size_t n = strlen(path);
    af->path = d5_strdup(path, "output path");
    af->tmp = d5_alloc(n + 16, "temporary path");
    if (!af->path || !af->tmp) {
        d5_afile_abort(af);
        return D5_ERR_NOMEM;
    }
    snprintf(af->tmp, n + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(af->tmp);
    if (fd < 0) {
        d5_status s = d5_error(D5_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
        af->tmp[0] = '\0';
        d5_afile_abort(af);
        return s;
    }
    fchmod(fd, 0644);
    af->f = fdopen(fd, "w");
    if (!af->f) {
        close(fd);
        d5_status s = d5_error(D5_ERR_IO, "cannot open '%s': %s", af->tmp, strerror(errno));
        d5_afile_abort(af);
        return s;
    }
    return D5_OK;
}

d5_status d5_afile_commit(d5_afile *af)
{
    d5_status s = D5_OK;
    if (fflush(af->f) != 0 || ferror(af->f) || fsync(fileno(af->f)) != 0)
        s = d5_error(D5_ERR_IO, "cannot write '%s': %s", af->path, strerror(errno));
    if (fclose(af->f) != 0 && s == D5_OK)
        s = d5_error(D5_ERR_IO, "cannot write '%s': %s", af->path, strerror(errno));
    af->f = NULL;
    if (s == D5_OK && rename(af->tmp, af->path) != 0)
        s = d5_error(D5_ERR_IO, "cannot rename '%s' to '%s': %s", af->tmp, af->path,
                     strerror(errno));
    if (s == D5_OK) af->tmp[0] = '\0'; /* nothing left to remove */
    d5_afile_abort(af);
    return s;
}

void d5_afile_abort(d5_afile *af)
{
    if (af->f) fclose(af->f);
    if (af->tmp && af->tmp[0]) unlink(af->tmp);
    d5_free(af->path);
    d5_free(af->tmp);
    memset(af, 0, sizeof *af);
}

d5_status d5_file_write_atomic(const char *path, const void *data, size_t len)
{
    if (!path || (len && !data))
        return d5_error(D5_ERR_INVALID, "d5_file_write_atomic: NULL argument");
    d5_afile af;
    d5_status s = d5_afile_open(&af, path);
    if (s != D5_OK) return s;
    if (len && fwrite(data, 1, len, af.f) != len) {
        s = d5_error(D5_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        d5_afile_abort(&af);
        return s;
    }
    return d5_afile_commit(&af);
}

d5_status d5_file_check_regular(const char *path, const char *what)
{
    if (!path) return d5_error(D5_ERR_INVALID, "no path given for the %s", what ? what : "file");
    struct stat st;
    if (stat(path, &st) != 0)
        return d5_error(D5_ERR_IO, "cannot open %s '%s': %s", what ? what : "file", path,
                        strerror(errno));
    if (S_ISREG(st.st_mode)) return D5_OK;
    const char *kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "not a regular file";
    return d5_error(D5_ERR_IO, "'%s' is %s; the %s must be a regular file", path, kind,
                    what ? what : "input");
}
