/* Named long options, validated fully. */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage_error(const cli_spec *spec, const char *fmt, ...) D5_PRINTF(2, 3);

static void usage_error(const cli_spec *spec, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "d5 %s: ", spec->command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'd5 %s --help')\n", spec->command);
}

static int set_value(const cli_spec *spec, const cli_opt *o, const char *v)
{
    char *end;
    if (o->kind == CLI_INT) {
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno || end == v || *end) {
            usage_error(spec, "--%s expects an integer, got '%s'", o->name, v);
            return 0;
        }
        if ((double)x < o->min || (double)x > o->max) {
            usage_error(spec, "--%s %lld is outside %.0f..%.0f", o->name, x, o->min, o->max);
            return 0;
        }
        *(int *)o->dest = (int)x;
    } else if (o->kind == CLI_DOUBLE) {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || !isfinite(x)) {
            usage_error(spec, "--%s expects a number, got '%s'", o->name, v);
            return 0;
        }
        if (x < o->min || x > o->max) {
            usage_error(spec, "--%s %g is outside %g..%g", o->name, x, o->min, o->max);
            return 0;
        }
        *(double *)o->dest = x;
    } else {
        if (!*v) {
            usage_error(spec, "--%s expects a non-empty %s", o->name,
                        o->metavar ? o->metavar : "value");
            return 0;
        }
        *(const char **)o->dest = v;
    }
    return 1;
}

int cli_parse(const cli_spec *spec, int argc, char **argv)
{
    if (spec->pos_list) {
        *spec->pos_count = 0;
        *spec->pos_list = malloc((size_t)argc * sizeof **spec->pos_list);
        if (!*spec->pos_list) {
            fprintf(stderr, "d5 %s: out of memory\n", spec->command);
            return D5_EXIT_CHECK;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli_usage(stdout, spec);
            return D5_EXIT_OK;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (spec->pos_list) {
                (*spec->pos_list)[(*spec->pos_count)++] = a;
                continue;
            }
            if (spec->positional && !*spec->pos_value) {
                *spec->pos_value = a;
                continue;
            }
            usage_error(spec, "unexpected argument '%s'", a);
            return D5_EXIT_USAGE;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_opt *o = NULL;
        for (size_t k = 0; k < spec->nopts; k++)
            if (strlen(spec->opts[k].name) == len && strncmp(spec->opts[k].name, name, len) == 0)
                o = &spec->opts[k];
        if (!o) {
            usage_error(spec, "unknown option '--%.*s'", (int)len, name);
            return D5_EXIT_USAGE;
        }
        if (o->kind == CLI_FLAG) {
            if (eq) {
                usage_error(spec, "--%s takes no value", o->name);
                return D5_EXIT_USAGE;
            }
            *(int *)o->dest = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v) {
            usage_error(spec, "--%s needs a value (%s)", o->name,
                        o->metavar ? o->metavar : "value");
            return D5_EXIT_USAGE;
        }
        if (!set_value(spec, o, v)) return D5_EXIT_USAGE;
    }
    if (spec->positional && !spec->pos_optional &&
        (spec->pos_list ? *spec->pos_count == 0 : !*spec->pos_value)) {
        usage_error(spec, "missing %s", spec->positional);
        return D5_EXIT_USAGE;
    }
    return -1;
}

void cli_usage(FILE *f, const cli_spec *spec)
{
    fprintf(f, "usage: d5 %s %s\n\n%s\n", spec->command, spec->synopsis, spec->description);
    if (spec->nopts) fprintf(f, "\noptions:\n");
    for (size_t k = 0; k < spec->nopts; k++) {
        const cli_opt *o = &spec->opts[k];
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        fprintf(f, "  %-22s %s\n", left, o->help);
    }
    fprintf(f, "  %-22s %s\n", "--help", "show this help and exit");
    fprintf(f, "\nexit status: 0 success, 1 a check or the run failed, 2 bad usage, 3 bad input\n");
}

void cli_echo(FILE *f, const cli_spec *spec)
{
    fprintf(f, "# d5 %s %s (%s)\n", spec->command, d5_version(), "resolved configuration");
    for (size_t k = 0; k < spec->nopts; k++) {
        const cli_opt *o = &spec->opts[k];
        fprintf(f, "#   %-14s = ", o->name);
        switch (o->kind) {
        case CLI_FLAG: fprintf(f, "%s\n", *(int *)o->dest ? "yes" : "no"); break;
        case CLI_INT: fprintf(f, "%d\n", *(int *)o->dest); break;
        case CLI_DOUBLE: fprintf(f, "%g\n", *(double *)o->dest); break;
        case CLI_STRING: {
            const char *v = *(const char **)o->dest;
            fprintf(f, "%s\n", v ? v : "(none)");
            break;
        }
        }
    }
}

int cli_fail(const char *command, d5_status s)
{
    const char *detail = d5_last_error();
    fprintf(stderr, "d5 %s: %s%s%s\n", command, d5_status_str(s), detail[0] ? ": " : "", detail);
    switch (s) {
    case D5_ERR_INVALID:
    case D5_ERR_IO:
    case D5_ERR_FORMAT:
    case D5_ERR_UNSUPPORTED:
    case D5_ERR_SHAPE:
    case D5_ERR_NOTFOUND:
    case D5_ERR_RANGE: return D5_EXIT_INPUT;
    case D5_ERR_TIMEOUT: /* a rank crashed, hangs or lags: the run failed */
    default: return D5_EXIT_CHECK;
    }
}

void cli_progress(int step, int steps, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "[%d/%d] ", step, steps);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* " (available here: ref, blas)" unless the detail already lists them. */
static void available_suffix(const char *detail, char *buf, size_t size)
{
    buf[0] = '\0';
    if (strstr(detail, "available here")) return;
    size_t used = (size_t)snprintf(buf, size, " (available here: ");
    int n = 0;
    for (size_t i = 0; i < d5_backend_count() && used < size; i++) {
        d5_backend_info b;
        if (d5_backend_at(i, &b) != D5_OK || !b.available) continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%s", n++ ? ", " : "", b.name);
    }
    if (used < size) snprintf(buf + used, size - used, ")");
}

int cli_bad_backend_option(const char *command, const char *flag, const char *value, d5_status s)
{
    char detail[1024], avail[256] = "";
    snprintf(detail, sizeof detail, "%s", d5_last_error());
    if (s != D5_ERR_NOTFOUND) available_suffix(detail, avail, sizeof avail);
    fprintf(stderr, "d5 %s: --%s %s: %s%s\n", command, flag, value, detail, avail);
    return D5_EXIT_USAGE;
}

int cli_check_backends(const char *command, const char *flag, const char *list, int executor)
{
    if (!list) return -1;
    d5_status s = executor ? d5_executor_check_backends(list) : d5_backend_check_list(list, 0);
    return s == D5_OK ? -1 : cli_bad_backend_option(command, flag, list, s);
}

int cli_output_ok(const char *command, const char *flag, const char *path, int is_dir)
{
    if (!path) return 1;
    char dir[4096];
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && is_dir && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "d5 %s: %s '%s' exists and is not a folder\n", command, flag, path);
        return 0;
    }
    if (exists && !is_dir && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "d5 %s: %s '%s' is a folder, not a file\n", command, flag, path);
        return 0;
    }
    if (strlen(path) >= sizeof dir) {
        fprintf(stderr, "d5 %s: %s: the path is longer than %zu characters\n", command, flag,
                sizeof dir - 1);
        return 0;
    }
    snprintf(dir, sizeof dir, "%s", path);
    if (!(is_dir && exists)) { /* the folder that will hold it */
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, "%s", slash ? "/" : ".");
    }
    /* A probe file, created and removed, before minutes of work. */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.d5-probe-%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        fprintf(stderr, "d5 %s: %s '%s': cannot write in '%s': %s\n", command, flag, path, dir,
                strerror(errno));
        return 0;
    }
    close(fd);
    unlink(probe);
    return 1;
}
