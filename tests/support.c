#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

char *tmpdir_make(void)
{
    char *p = strdup("/tmp/d5-test-XXXXXX");
    if (p && !mkdtemp(p)) {
        free(p);
        return NULL;
    }
    return p;
}

char *test_dir;

void test_dir_make(void)
{
    test_dir = tmpdir_make();
    cr_assert_not_null(test_dir, "no folder under /tmp");
}

void test_dir_remove(void)
{
    rmtree(test_dir);
    free(test_dir);
    test_dir = NULL;
}

static d5_status next_fixed(void *ctx, double *v)
{
    int *i = ctx;
    *v = 100 + (*i)++ % 5;
    return D5_OK;
}

d5_measurement fixed_measurement(void)
{
    int i = 0;
    d5_measure_params p = d5_measure_default_params();
    p.warmup = 0;
    p.min_reps = p.max_reps = 10;
    d5_measurement m;
    cr_assert_eq(d5_measure_samples(next_fixed, &i, &p, &m), D5_OK);
    return m;
}

void run_done(char *out, char *err, char *dir)
{
    free(out);
    free(err);
    rmtree(dir);
    free(dir);
}

json_t *json_read(const char *path)
{
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    cr_assert_not_null(doc, "%s: line %d: %s", path, err.line, err.text);
    return doc;
}

json_t *json_read_in(const char *dir, const char *name)
{
    char *path = path_join(dir, name);
    json_t *doc = json_read(path);
    free(path);
    return doc;
}

d5_timer *forward_timer(void)
{
    d5_timer_params p = d5_timer_default_params();
    p.name = "unit-test";
    d5_timer *t;
    cr_assert_eq(d5_timer_create(&p, &t), D5_OK);
    for (int i = 1; i <= 3; i++)
        cr_assert_eq(d5_timer_add(t, D5_KEY_FORWARD, 10000.0 * i, 1500.0 * i), D5_OK);
    return t;
}

void rmtree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                rmtree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

char *path_join(const char *dir, const char *name)
{
    char *p;
    cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
    return p;
}

void write_text(const char *dir, const char *name, const char *text)
{
    char *p = path_join(dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
    free(p);
}

char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *g = realloc(buf, cap * 2);
            if (!g) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = g;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

void expect_has_all(const char *text, const char *const *needles)
{
    for (const char *const *n = needles; *n; n++)
        cr_expect(strstr(text, *n), "no '%s' in: %s", *n, text);
}

void expect_file_has(const char *path, const char *needle)
{
    char *text = slurp(path, NULL);
    cr_assert_not_null(text, "%s cannot be read", path);
    cr_assert(strstr(text, needle), "%s has no '%s': %s", path, needle, text);
    free(text);
}

size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static long budget = -1, live = 0;

static void *failing_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    if (budget == 0) return NULL;
    if (budget > 0) budget--;
    if (align < sizeof(void *)) align = sizeof(void *);
    void *p = NULL;
    if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
    live++;
    return p;
}

static void failing_free(void *ctx, void *p)
{
    (void)ctx;
    if (p) live--;
    free(p);
}

void failing_alloc_install(long b)
{
    budget = b;
    live = 0;
    d5_allocator a = {failing_alloc, failing_free, NULL};
    d5_allocator_set(&a);
}

void failing_alloc_remove(void)
{
    d5_allocator_set(NULL);
}

long failing_alloc_live(void)
{
    return live;
}

int run_d5(char **out, char **err, const char *const *args)
{
    return run_d5_peak(out, err, args, NULL);
}

int run_d5_peak(char **out, char **err, const char *const *args, long long *peak_bytes)
{
    char outp[] = "/tmp/d5-out-XXXXXX", errp[] = "/tmp/d5-err-XXXXXX";
    int fo = mkstemp(outp), fe = mkstemp(errp);
    if (fo < 0 || fe < 0) return -1;
    const char *argv[64];
    int n = 0;
    argv[n++] = D5_BIN;
    for (; args[n - 1] && n < 63; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fo, 1);
    posix_spawn_file_actions_adddup2(&fa, fe, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    pid_t pid;
    int rc = posix_spawn(&pid, D5_BIN, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fo);
    close(fe);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (rc == 0) wait4(pid, &status, 0, &ru);
    if (peak_bytes) *peak_bytes = (long long)ru.ru_maxrss * 1024;
    if (out) *out = slurp(outp, NULL);
    if (err) *err = slurp(errp, NULL);
    unlink(outp);
    unlink(errp);
    if (rc != 0 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

int busy_start(int seconds)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        volatile unsigned long n = 0;
        do {
            for (int i = 0; i < 100000; i++) n++;
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while (t.tv_sec - t0.tv_sec < seconds);
        _exit(0);
    }
    if (pid > 0) usleep(200000);
    return (int)pid;
}

void busy_stop(int pid)
{
    if (pid <= 0) return;
    kill((pid_t)pid, SIGKILL);
    waitpid((pid_t)pid, NULL, 0);
}

void need_data_file(const char *path, const char *how)
{
    char gz[4200];
    snprintf(gz, sizeof gz, "%s.gz", path);
    if (access(path, R_OK) == 0 || access(gz, R_OK) == 0) return;
    const char *ci = getenv("CI");
    if (ci && strcmp(ci, "true") == 0)
        cr_assert_fail("no %s (nor .gz): CI=true, where a missing data set is an error (%s)", path,
                       how);
    cr_skip_test("no %s (%s)", path, how);
}
