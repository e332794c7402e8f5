/* d5 report: gnuplot as a child process. Each plot is one script, written
 * beside its outputs and removed afterwards: its data blocks once, then the
 * plot once per terminal (svg, pngcairo). */
#define _GNU_SOURCE
#include "report_plot.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A plot that takes longer than this is stuck (the largest take a second). */
#define GNUPLOT_TIMEOUT_S 120

void report_gp_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else if ((unsigned char)*s < 0x20)
            fputc(' ', f);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* A path as a gnuplot single-quoted string: nothing is expanded inside. */
static void gp_path(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

char *report_gnuplot_find(void)
{
    const char *path = getenv("PATH");
    if (!path || !*path) return NULL;
    char *copy = strdup(path), *save = NULL;
    char *found = NULL;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found;
         d = strtok_r(NULL, ":", &save)) {
        char *p;
        if (asprintf(&p, "%s/gnuplot", d) < 0) break;
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(copy);
    return found;
}

static void terminal(FILE *f, const report_plot *p, const char *dir, int svg)
{
    fprintf(f, "\nreset\n");
    if (svg)
        fprintf(f,
                "set terminal svg size %d,%d dynamic noenhanced font \"sans-serif,13\" "
                "background \"#ffffff\"\n",
                p->width, p->height);
    else
        fprintf(f,
                "set terminal pngcairo size %d,%d noenhanced font \"Sans,11\" "
                "background \"#ffffff\"\n",
                p->width, p->height);
    fprintf(f, "set output ");
    char *out;
    if (asprintf(&out, "%s/%s.%s", dir, p->name, svg ? "svg" : "png") >= 0) {
        gp_path(f, out);
        free(out);
    }
    fprintf(f, "\n%s\nunset output\n", p->script);
}

/* Reads the child's standard error until it ends or the time is up. */
static int collect(int fd, pid_t pid, report_text *err)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char buf[4096];
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = GNUPLOT_TIMEOUT_S - ((double)(now.tv_sec - t0.tv_sec) +
                                           1e-9 * (double)(now.tv_nsec - t0.tv_nsec));
        if (left <= 0) {
            kill(-pid, SIGKILL);
            return -1;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return 0;
        fwrite(buf, 1, (size_t)n, err->f);
    }
}

/* Runs gnuplot on a script file; its standard error lands in *err. */
static d5_status run_script(const char *gnuplot, const char *script, const char *name, char **err)
{
    int fds[2];
    if (pipe(fds) != 0) return d5_error(D5_ERR_IO, "cannot start gnuplot: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return d5_error(D5_ERR_IO, "cannot start gnuplot: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        dup2(fds[1], 2);
        close(fds[0]);
        execl(gnuplot, "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    cli_child_started(pid);
    close(fds[1]);
    report_text t;
    d5_status s = report_text_open(&t);
    int timed_out = s == D5_OK ? collect(fds[0], pid, &t) : 0;
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    cli_child_ended(pid);
    if (s == D5_OK) s = report_text_close(&t, err);
    if (s != D5_OK) return s;
    if (timed_out)
        return d5_error(D5_ERR_BACKEND, "gnuplot drew plot '%s' for more than %d s; stopped", name,
                        GNUPLOT_TIMEOUT_S);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        /* The first line that names the failing command. */
        const char *e = *err && (*err)[0] ? *err : "no message";
        return d5_error(D5_ERR_BACKEND, "gnuplot failed on plot '%s' (%s %d): %.600s", name,
                        WIFEXITED(status) ? "exit status" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), e);
    }
    return D5_OK;
}

/* The file is there, not empty, and starts as it should. */
static d5_status check_output(const char *dir, const report_plot *p, const char *ext,
                              const char *magic, size_t mlen)
{
    char *path;
    if (asprintf(&path, "%s/%s.%s", dir, p->name, ext) < 0)
        return d5_error(D5_ERR_NOMEM, "out of memory");
    char head[16] = {0};
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(head, 1, sizeof head, f) : 0;
    if (f) fclose(f);
    d5_status s = D5_OK;
    if (!f || got < mlen || memcmp(head, magic, mlen) != 0)
        s = d5_error(D5_ERR_BACKEND, "gnuplot did not write '%s' (plot '%s')", path, p->name);
    free(path);
    return s;
}

/* The SVG file's <title> (gnuplot writes "Gnuplot") becomes the plot's;
 * the others go. */
static d5_status svg_title(const char *dir, const report_plot *p)
{
    char *path;
    if (asprintf(&path, "%s/%s.svg", dir, p->name) < 0)
        return d5_error(D5_ERR_NOMEM, "out of memory");
    report_text old, t;
    d5_status s = report_text_open(&old);
    FILE *f = s == D5_OK ? fopen(path, "rb") : NULL;
    if (s == D5_OK && !f) s = d5_error(D5_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    char buf[65536];
    size_t got;
    while (f && (got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, old.f);
    if (f) fclose(f);
    char *svg = NULL;
    if (s == D5_OK)
        s = report_text_close(&old, &svg);
    else
        report_text_discard(&old);
    const char *mark = "<title>Gnuplot</title>", *at = svg ? strstr(svg, mark) : NULL;
    if (s == D5_OK && at && (s = report_text_open(&t)) == D5_OK) {
        fwrite(svg, 1, (size_t)(at - svg), t.f);
        fputs("<title>", t.f);
        report_html_escape(t.f, p->title);
        fputs("</title>", t.f);
        /* The titles gnuplot gives each plot element (tooltips) are dropped:
         * 5.4 writes the last tic label there, not the element's title. */
        const char *rest = at + strlen(mark), *open;
        while ((open = strstr(rest, "<title>"))) {
            const char *close = strstr(open, "</title>");
            if (!close) break;
            fwrite(rest, 1, (size_t)(open - rest), t.f);
            rest = close + strlen("</title>");
        }
        fputs(rest, t.f);
        char *fixed = NULL;
        s = report_text_close(&t, &fixed);
        if (s == D5_OK) s = d5_file_write_atomic(path, fixed, strlen(fixed));
        free(fixed);
    }
    free(svg);
    free(path);
    return s;
}

/* Passes gnuplot's messages on, one line at a time, with the plot's name. */
static void pass_on(const char *name, const char *err)
{
    while (err && *err) {
        const char *nl = strchr(err, '\n');
        int len = nl ? (int)(nl - err) : (int)strlen(err);
        if (len > 0) fprintf(stderr, "d5 report: gnuplot, plot %s: %.*s\n", name, len, err);
        err += len + (nl ? 1 : 0);
    }
}

d5_status report_gnuplot_run(const char *gnuplot, const char *dir, const report_plot *p, int svg,
                             int png)
{
    char *script;
    if (asprintf(&script, "%s/.%s.gp", dir, p->name) < 0)
        return d5_error(D5_ERR_NOMEM, "out of memory");
    report_text t;
    d5_status s = report_text_open(&t);
    if (s == D5_OK) {
        fprintf(t.f, "# %s: made by d5 report\nset encoding utf8\n%s\n", p->title,
                p->data ? p->data : "");
        if (svg) terminal(t.f, p, dir, 1);
        if (png) terminal(t.f, p, dir, 0);
        char *text = NULL;
        s = report_text_close(&t, &text);
        FILE *f = s == D5_OK ? fopen(script, "w") : NULL;
        if (s == D5_OK && !f)
            s = d5_error(D5_ERR_IO, "cannot write '%s': %s", script, strerror(errno));
        if (f && (fputs(text, f) == EOF) + (fclose(f) != 0))
            s = d5_error(D5_ERR_IO, "cannot write '%s'", script);
        free(text);
    }
    char *err = NULL;
    if (s == D5_OK) s = run_script(gnuplot, script, p->name, &err);
    unlink(script);
    free(script);
    if (s == D5_OK) pass_on(p->name, err);
    free(err);
    if (s == D5_OK && svg) s = check_output(dir, p, "svg", "<?xml", 5);
    if (s == D5_OK && svg) s = svg_title(dir, p);
    if (s == D5_OK && png) s = check_output(dir, p, "png", "\x89PNG\r\n\x1a\n", 8);
    return s;
}
