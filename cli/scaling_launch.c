/* d5 scaling: how the runs start. The launcher's words ("mpirun -n {n}"),
 * the train command checked and rebuilt for each rank count, and a child
 * process whose output goes to a log. */
#define _POSIX_C_SOURCE 200809L
#include "scaling.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void scaling_words_add(scaling_words *w, const char *s)
{
    if (w->failed) return;
    if (w->n + 2 > w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        char **v = realloc(w->v, cap * sizeof *v);
        if (!v) {
            w->failed = 1;
            return;
        }
        w->v = v;
        w->cap = cap;
    }
    if (!(w->v[w->n] = strdup(s))) {
        w->failed = 1;
        return;
    }
    w->v[++w->n] = NULL;
}

void scaling_words_free(scaling_words *w)
{
    for (size_t i = 0; i < w->n; i++) free(w->v[i]);
    free(w->v);
    memset(w, 0, sizeof *w);
}

/* A word as a POSIX shell reads it back: bare when safe ("{n}" is no brace
 * expansion), else single-quoted. */
static void print_word(FILE *f, const char *w)
{
    int plain = *w != '\0';
    for (const char *p = w; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_@%+=:,./-{}", *p)) plain = 0;
    if (plain) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (const char *p = w; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    }
    fputc('\'', f);
}

void scaling_print_words(FILE *f, const char *prefix, const scaling_words *w)
{
    fputs(prefix, f);
    for (size_t i = 0; i < w->n; i++) {
        if (i) fputc(' ', f);
        print_word(f, w->v[i]);
    }
}

int scaling_parse_ranks(const char *flag, const char *list, int64_t **out, size_t *n)
{
    size_t cap = 1;
    for (const char *p = list; *p; p++) cap += *p == ',';
    int64_t *r = malloc(cap * sizeof *r);
    size_t k = 0;
    const char *p = list;
    int ok = r != NULL;
    while (ok) {
        char *end = NULL;
        errno = 0;
        long long v = isdigit((unsigned char)*p) ? strtoll(p, &end, 10) : 0;
        if (!end || errno || (*end && *end != ',') || v < 1 || v > SCALING_MAX_RANKS) {
            ok = 0;
            break;
        }
        r[k++] = v;
        if (!*end) break;
        p = end + 1;
    }
    for (size_t i = 1; ok && i < k; i++) /* insertion sort: a handful of counts */
        for (size_t j = i; j > 0 && r[j - 1] > r[j]; j--) {
            int64_t t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    for (size_t i = 1; ok && i < k; i++)
        if (r[i] == r[i - 1]) {
            fprintf(stderr, "d5 scaling: %s %s: %lld appears twice\n", flag, list, (long long)r[i]);
            free(r);
            return 0;
        }
    if (!ok) {
        fprintf(stderr,
                "d5 scaling: %s '%s': expected rank counts 1..%d separated by commas, such as "
                "1,2,4\n",
                flag, list, SCALING_MAX_RANKS);
        free(r);
        return 0;
    }
    *out = r;
    *n = k;
    return 1;
}

/* `w` with every {n} replaced by p. */
static void subst(const char *w, int64_t p, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    while (*w && used + 1 < size) {
        if (strncmp(w, "{n}", 3) == 0) {
            used += (size_t)snprintf(buf + used, size - used, "%lld", (long long)p);
            w += 3;
        } else {
            buf[used++] = *w++;
            buf[used] = '\0';
        }
    }
}

static void launch_words(const scaling_plan *pl, int64_t p, scaling_words *w)
{
    char buf[4096];
    for (size_t i = 0; i < pl->launcher.n; i++) {
        subst(pl->launcher.v[i], p, buf, sizeof buf);
        scaling_words_add(w, buf);
    }
    if (pl->default_launcher && pl->open_mpi && p > pl->cores)
        scaling_words_add(w, "--oversubscribe");
}

/* The --batch of the run on p ranks (see scaling_train_words). */
static int64_t batch_for(const scaling_plan *pl, int64_t p)
{
    if (pl->weak && pl->sharded) return pl->batch * p;
    if (!pl->weak && !pl->sharded) return pl->batch / p > 0 ? pl->batch / p : 1;
    return pl->batch;
}

int scaling_scheme_option(const char *a)
{
    static const char *const names[] = {"--servers", "--staleness", "--average-every",
                                        "--bucket-mb", "--hash-every"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t len = strlen(names[k]);
        if (strncmp(a, names[k], len) == 0 && (a[len] == '\0' || a[len] == '=')) return 1;
    }
    return 0;
}

/* The train command of p ranks; with `profile`, as the local scheme writing
 * the step profile there. */
static void train_words(const scaling_plan *pl, int64_t p, const char *json, const char *profile,
                        scaling_words *w)
{
    char num[64];
    launch_words(pl, p, w);
    scaling_words_add(w, pl->d5);
    scaling_words_add(w, "train");
    for (int i = 0; i < pl->ntrain; i++) {
        const char *a = pl->train[i];
        int has_value = i + 1 < pl->ntrain && !strchr(a, '=');
        if (pl->batch > 0 && strcmp(a, "--batch") == 0 && i + 1 < pl->ntrain) {
            snprintf(num, sizeof num, "%lld", (long long)batch_for(pl, p));
            scaling_words_add(w, a);
            scaling_words_add(w, num);
            i++;
        } else if (pl->batch > 0 && strncmp(a, "--batch=", 8) == 0) {
            snprintf(num, sizeof num, "--batch=%lld", (long long)batch_for(pl, p));
            scaling_words_add(w, num);
        } else if (profile && strcmp(a, "--distributed") == 0 && has_value) {
            scaling_words_add(w, a);
            scaling_words_add(w, "local");
            i++;
        } else if (profile && strncmp(a, "--distributed=", 14) == 0) {
            scaling_words_add(w, "--distributed=local");
        } else if (profile && scaling_scheme_option(a)) {
            i += has_value;
        } else {
            scaling_words_add(w, a);
        }
    }
    scaling_words_add(w, "--json");
    scaling_words_add(w, json);
    if (profile) {
        scaling_words_add(w, "--step-profile");
        scaling_words_add(w, profile);
    }
}

void scaling_train_words(const scaling_plan *pl, int64_t p, const char *json, scaling_words *w)
{
    train_words(pl, p, json, NULL, w);
}

void scaling_profile_words(const scaling_plan *pl, int64_t p, const char *json, const char *profile,
                           scaling_words *w)
{
    train_words(pl, p, json, profile, w);
}

/* The alpha-beta fit on 2 ranks, over the sizes of bench_alpha_beta.sh. */
void scaling_pingpong_words(const scaling_plan *pl, const char *json, scaling_words *w)
{
    launch_words(pl, 2, w);
    const char *rest[] = {pl->d5, "pingpong", "--fit", "-b", "1K", "-e", "4M", "--json", json};
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) scaling_words_add(w, rest[i]);
}

/* The value of option `name` at cmd[*i] ("--name V" or "--name=V"), moving
 * *i past it; NULL when cmd[*i] is another word, "" when the value is
 * missing. */
static const char *option_value(char **cmd, int n, int *i, const char *name)
{
    size_t len = strlen(name);
    if (strncmp(cmd[*i], name, len) != 0) return NULL;
    if (cmd[*i][len] == '=') return cmd[*i] + len + 1;
    if (cmd[*i][len] != '\0') return NULL;
    if (*i + 1 >= n) return "";
    return cmd[++*i];
}

int scaling_check_train(char **cmd, int n, scaling_plan *pl)
{
    const char *base = n ? strrchr(cmd[0], '/') : NULL;
    base = base ? base + 1 : n ? cmd[0] : "";
    if (n < 2 || strcmp(base, "d5") != 0 || strcmp(cmd[1], "train") != 0) {
        fprintf(stderr,
                "d5 scaling: after '--' comes the training command, d5 train (or PATH/d5 train) "
                "with its options; got '%s%s%s'\n",
                n ? cmd[0] : "", n > 1 ? " " : "", n > 1 ? cmd[1] : "");
        return D5_EXIT_USAGE;
    }
    if (strchr(cmd[0], '/')) {
        if (access(cmd[0], X_OK) != 0) {
            fprintf(stderr, "d5 scaling: %s: not an executable file (%s)\n", cmd[0],
                    strerror(errno));
            return D5_EXIT_USAGE;
        }
        snprintf(pl->d5, sizeof pl->d5, "%s", cmd[0]);
    } else {
        /* "d5" is this d5, so that the series measures the build it came from. */
        ssize_t len = readlink("/proc/self/exe", pl->d5, sizeof pl->d5 - 1);
        pl->d5[len > 0 ? len : 0] = '\0';
        if (len <= 0) snprintf(pl->d5, sizeof pl->d5, "d5");
    }
    pl->train = cmd + 2;
    pl->ntrain = n - 2;
    const char *batch = NULL;
    for (int i = 0; i < pl->ntrain; i++) {
        const char *v;
        if ((v = option_value(pl->train, pl->ntrain, &i, "--distributed"))) {
            pl->scheme = v;
        } else if ((v = option_value(pl->train, pl->ntrain, &i, "--batch"))) {
            batch = v;
        } else if ((v = option_value(pl->train, pl->ntrain, &i, "--sampler"))) {
            pl->sharded = strcmp(v, "sharded-batch") == 0;
        } else if (option_value(pl->train, pl->ntrain, &i, "--json")) {
            fprintf(stderr, "d5 scaling: the train command takes no --json: each run gets its "
                            "own; d5 scaling --json FILE writes the series\n");
            return D5_EXIT_USAGE;
        }
    }
    if (!pl->scheme || !*pl->scheme) {
        fprintf(stderr,
                "d5 scaling: the train command needs --distributed SCHEME (such as "
                "--distributed dsgd): a scaling series runs one training job across ranks\n");
        return D5_EXIT_USAGE;
    }
    if (batch) {
        char *end;
        errno = 0;
        long long b = strtoll(batch, &end, 10);
        if (!errno && end != batch && !*end && b > 0) pl->batch = b;
    }
    if (pl->weak && pl->sharded && pl->batch <= 0) {
        fprintf(stderr, "d5 scaling: --mode weak with --sampler sharded-batch needs --batch B in "
                        "the train command (a positive integer, the batch of one rank: the run on "
                        "P ranks gets B*P)\n");
        return D5_EXIT_USAGE;
    }
    if (pl->weak && pl->sharded && pl->batch * pl->max_ranks > INT32_MAX) {
        fprintf(stderr, "d5 scaling: --batch %lld times %lld ranks is too large a batch\n",
                (long long)pl->batch, (long long)pl->max_ranks);
        return D5_EXIT_USAGE;
    }
    return -1;
}

int scaling_on_path(const char *name)
{
    const char *path = getenv("PATH");
    char buf[4096];
    for (const char *p = path ? path : ""; p && *p;) {
        const char *colon = strchr(p, ':');
        int len = colon ? (int)(colon - p) : (int)strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", len ? len : 1, len ? p : ".", name);
        if (access(buf, X_OK) == 0) return 1;
        p = colon ? colon + 1 : NULL;
    }
    return 0;
}

static int is_open_mpi(const char *prog)
{
    char cmd[64], line[256];
    snprintf(cmd, sizeof cmd, "%s --version 2>&1", prog);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    int yes = 0;
    while (p && fgets(line, sizeof line, p))
        if (strstr(line, "Open MPI") || strstr(line, "OpenRTE")) yes = 1;
    if (p) pclose(p);
    return yes;
}

int scaling_setup_launcher(const char *arg, int need_default, scaling_plan *pl)
{
    if (arg) {
        if (strlen(arg) > 1024) {
            fprintf(stderr, "d5 scaling: --launcher: longer than 1024 characters\n");
            return D5_EXIT_USAGE;
        }
        if (!strstr(arg, "{n}")) {
            fprintf(stderr,
                    "d5 scaling: --launcher '%s': needs {n} where the rank count goes, such as "
                    "\"srun -n {n}\"\n",
                    arg);
            return D5_EXIT_USAGE;
        }
        char *copy = strdup(arg), *save = NULL;
        for (char *t = copy ? strtok_r(copy, " \t", &save) : NULL; t;
             t = strtok_r(NULL, " \t", &save))
            scaling_words_add(&pl->launcher, t);
        free(copy);
        return pl->launcher.failed || !copy ? D5_EXIT_CHECK : -1;
    }
    const char *prog = scaling_on_path("mpirun")    ? "mpirun"
                       : scaling_on_path("mpiexec") ? "mpiexec"
                                                    : NULL;
    if (!prog && need_default) {
        fprintf(stderr, "d5 scaling: no mpirun or mpiexec on PATH: name the launcher with "
                        "--launcher, such as \"srun -n {n}\"\n");
        return D5_EXIT_USAGE;
    }
    pl->default_launcher = 1;
    scaling_words_add(&pl->launcher, prog ? prog : "mpirun");
    scaling_words_add(&pl->launcher, "-n");
    scaling_words_add(&pl->launcher, "{n}");
    pl->open_mpi = prog && is_open_mpi(prog);
    d5_machine_info mi;
    pl->cores = d5_machine_query(&mi) == D5_OK && mi.physical_cores > 0 ? mi.physical_cores : 1;
    return pl->launcher.failed ? D5_EXIT_CHECK : -1;
}

/* ---- Running ---- */

int scaling_run_logged(char **argv, const char *log)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "d5 scaling: fork: %s\n", strerror(errno));
        return D5_EXIT_CHECK;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600), in = open("/dev/null", O_RDONLY);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
            close(out);
        }
        if (in >= 0) {
            dup2(in, 0);
            close(in);
        }
        execvp(argv[0], argv);
        dprintf(2, "d5 scaling: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    cli_child_started(pid);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) continue;
    kill(-pid, SIGKILL); /* what the launcher left behind */
    cli_child_ended(pid);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : D5_EXIT_CHECK;
}

void scaling_print_tail(const char *log, int lines)
{
    FILE *f = fopen(log, "r");
    if (!f) return;
    static char buf[16384];
    long start = 0;
    if (fseek(f, 0, SEEK_END) == 0)
        start = ftell(f) > (long)sizeof buf - 1 ? ftell(f) - (long)sizeof buf + 1 : 0;
    fseek(f, start, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
    const char *p = buf + n;
    for (int k = 0; p > buf && k < lines; p--)
        if (p[-1] == '\n' && ++k == lines) break;
    if (!*p) {
        fprintf(stderr, "d5 scaling: it printed nothing\n");
        return;
    }
    fprintf(stderr, "d5 scaling: its last lines of output:\n");
    for (const char *q = p; *q;) {
        const char *e = strchr(q, '\n');
        int len = e ? (int)(e - q) : (int)strlen(q);
        fprintf(stderr, "  | %.*s\n", len, q);
        q = e ? e + 1 : q + len;
    }
}
