/* Bad inputs that once hung, crashed or passed silently: each must end with
 * a clear message, its exit status, and nothing written. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(hardening_cli, .timeout = D5_TIMEOUT(120));

/* A FIFO where a file is expected is refused at once instead of blocking
 * until a writer appears (the suite's timeout catches a return of the hang). */
Test(hardening_cli, fifos_are_refused_not_waited_on)
{
    char *dir = tmpdir_make(), *fifo, *mnist, *out, *err;
    cr_assert_geq(asprintf(&fifo, "%s/sizes.csv", dir), 0);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int rc = RUN(&out, &err, "test-operator", "Gemm", "--sizes", fifo, "--no-peak");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "is a FIFO; the sizes file must be a regular file"), "%s", err);
    free(out);
    free(err);
    const char *names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    for (size_t i = 0; i < 4; i++) {
        char *p;
        cr_assert_geq(asprintf(&p, "%s/%s", dir, names[i]), 0);
        cr_assert_eq(mkfifo(p, 0600), 0);
        free(p);
    }
    cr_assert_geq(asprintf(&mnist, "mnist:%s", dir), 0);
    rc = RUN(&out, &err, "train", "--dataset", mnist, "--max-batches", "1");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "is a FIFO"), "%s", err);
    free(mnist);
    free(fifo);
    run_done(out, err, dir);
}

/* A sweep in which every row errored is a failure, not a success. */
Test(hardening_cli, a_sweep_with_no_measured_row_fails)
{
    char *out, *err;
    int rc = RUN(&out, &err, "test-operator", "Concat", "--sizes", "shape=2x3", "--backend", "ref",
                 "--no-peak", "--max-time", "0.05");
    cr_assert_eq(rc, 1, "exit %d: %s", rc, err);
    cr_assert(strstr(out, "attribute axis is required"), "%s", out);
    cr_assert(strstr(err, "all 1 rows failed; nothing was measured"), "%s", err);
    free(out);
    free(err);
}

/* d5 bench checks every output path before the work: a --json in a missing
 * folder or an --mlflow that is a file end it at once, with nothing written. */
Test(hardening_cli, bench_checks_output_paths_first)
{
    char *dir = tmpdir_make(), *res, *file, *out, *err;
    cr_assert_geq(asprintf(&res, "%s/run", dir), 0);
    cr_assert_geq(asprintf(&file, "%s/plain", dir), 0);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    int rc = RUN(&out, &err, "bench", "--quick", "--out", res, "--json", "/nonexistent/d5/r.json");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "--json '/nonexistent/d5/r.json': cannot write in '/nonexistent/d5'"),
              "%s", err);
    cr_assert_null(strstr(err, "[1/"), "the work started: %s", err);
    struct stat st;
    cr_assert_neq(stat(res, &st), 0, "a results folder was left behind");
    free(out);
    free(err);
    rc = RUN(&out, &err, "bench", "--quick", "--out", res, "--mlflow", file);
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "exists and is not a folder"), "%s", err);
    cr_assert_neq(stat(res, &st), 0);
    free(res);
    free(file);
    run_done(out, err, dir);
}

/* Sizes that do not fit d5's fields are refused with the field named, never
 * cut short; a CSV row with more fields than its header is refused too. */
Test(hardening_cli, long_sizes_are_refused_not_truncated)
{
    char *out, *err, *dir = tmpdir_make(), *csv;
    char key[64];
    memset(key, 'k', 40);
    key[40] = '\0';
    char spec[128];
    snprintf(spec, sizeof spec, "M=1,N=2,K=3,%s=1", key);
    int rc = RUN(&out, &err, "test-operator", "Gemm", "--sizes", spec, "--no-peak");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "has 40 characters; at most 23"), "%s", err);
    free(out);
    free(err);
    cr_assert_geq(asprintf(&csv, "%s/s.csv", dir), 0);
    FILE *f = fopen(csv, "w");
    cr_assert_not_null(f);
    fputs("M,N,K\n1,2,3,4\n", f);
    fclose(f);
    rc = RUN(&out, &err, "test-operator", "Gemm", "--sizes", csv, "--no-peak");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "s.csv:2: 4 fields, the header has 3"), "%s", err);
    free(out);
    free(err);
    char *big = malloc(3000);
    memset(big, 'x', 2999);
    big[0] = 'M';
    big[1] = '=';
    big[2999] = '\0';
    rc = RUN(&out, &err, "test-operator", "Gemm", "--sizes", big, "--no-peak");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "--sizes: 2999 characters"), "%s", err);
    free(big);
    free(csv);
    run_done(out, err, dir);
}

/* Writes x -> Relu -> y with x of `ndim` dimensions of 4 (0: a scalar); y
 * is a graph output when `with_output`. */
static char *relu_model(const char *dir, int32_t ndim, int with_output)
{
    d5_network *net;
    cr_assert_eq(d5_network_create("relu", &net), D5_OK);
    int64_t shape[2] = {4, 4};
    d5_tensor_desc d;
    cr_assert_eq(d5_tensor_desc_make(D5_F32, ndim, shape, &d), D5_OK);
    cr_assert_eq(d5_network_add_input(net, "x", &d, NULL), D5_OK);
    const char *x[] = {"x"}, *y[] = {"y"};
    cr_assert_eq(d5_network_add_node(net, "r", "Relu", NULL, x, 1, y, 1, NULL, NULL), D5_OK);
    if (with_output) cr_assert_eq(d5_network_add_output(net, "y", &d), D5_OK);
    char *path;
    cr_assert_geq(asprintf(&path, "%s/relu%d%d.onnx", dir, (int)ndim, with_output), 0);
    cr_assert_eq(d5_onnx_save(net, path), D5_OK, "%s", d5_last_error());
    d5_network_free(net);
    return path;
}

/* d5 train on synthetic data with a model that is no classifier: a scalar
 * input, no graph output. Once a negative-size memmove and a crash. */
Test(hardening_cli, train_refuses_models_that_are_no_classifier)
{
    char *dir = tmpdir_make(), *out, *err;
    char *scalar = relu_model(dir, 0, 1), *no_output = relu_model(dir, 2, 0);
    int rc =
        RUN(&out, &err, "train", "--model", scalar, "--dataset", "synthetic", "--max-batches", "1");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "graph input 'x' has 0 dimensions"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "train", "--model", no_output, "--dataset", "synthetic", "--max-batches",
             "1");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "1 graph inputs and 0 outputs"), "%s", err);
    free(scalar);
    free(no_output);
    run_done(out, err, dir);
}

/* --gradient checks against finite differences, ref included. */
Test(hardening_cli, gradient_is_checked_against_finite_differences)
{
    char *out, *err;
    int rc = RUN(&out, &err, "test-operator", "Relu", "--sizes", "shape=4x64", "--backend", "ref",
                 "--gradient", "--no-peak", "--max-time", "0.05");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(strstr(out, "ok (gradient: 256 elements match finite differences)"), "%s", out);
    free(out);
    free(err);
}

/* A library whose constructor crashes, exits or hangs is loaded in a child
 * first: d5 reports it and goes on. */
Test(hardening_cli, misbehaving_library_constructors_are_contained)
{
    char *dir = tmpdir_make(), *lib, *spec, *out, *err;
    cr_assert_geq(asprintf(&lib, "%s/libctor.so", dir), 0);
    unsetenv("D5_TEST_CONSTRUCTOR");
    int rc = RUN(&out, &err, "compile-op", D5_SOURCE_DIR "/tests/level0/ops/bad_constructor.c",
                 "--name", "Copy", "-o", lib);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    free(out);
    free(err);
    cr_assert_geq(asprintf(&spec, "custom:%s:Copy", lib), 0);
    setenv("D5_TEST_CONSTRUCTOR", "crash", 1);
    rc = RUN(&out, &err, "test-operator", "Copy", "--backend", spec, "--sizes", "shape=8",
             "--no-peak");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    /* A signal, or under AddressSanitizer its report and exit status 1. */
    cr_assert(strstr(err, "crashed with signal 11") ||
                  strstr(err, "ended the process with exit status 1,"),
              "%s", err);
    free(out);
    free(err);
    setenv("D5_TEST_CONSTRUCTOR", "exit", 1);
    rc = RUN(&out, &err, "compile-op", D5_SOURCE_DIR "/tests/level0/ops/bad_constructor.c",
             "--name", "Copy", "-o", lib);
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "ended the process with exit status 7"), "%s", err);
    free(out);
    free(err);
    setenv("D5_TEST_CONSTRUCTOR", "hang", 1);
    rc = RUN(&out, &err, "test-operator", "Copy", "--backend", spec, "--sizes", "shape=8",
             "--no-peak", "--timeout", "2");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "did not finish within 2 s"), "%s", err);
    unsetenv("D5_TEST_CONSTRUCTOR");
    free(spec);
    free(lib);
    run_done(out, err, dir);
}

/* Starts d5 with its output discarded; returns its pid. */
/* d5 started as a terminal would start it; its standard error goes to
 * errpath (or nowhere when NULL). */
static pid_t start_d5(const char *const *args, const char *errpath)
{
    const char *argv[32] = {D5_BIN};
    int n = 1;
    while (args[n - 1] && n < 31) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        /* Signals as a terminal leaves them: default actions, none blocked;
         * and no wait policy of the user's, so that d5 restarts itself. */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        unsetenv("OMP_WAIT_POLICY");
        unsetenv("GOMP_SPINCOUNT");
        unsetenv("D5_WAIT_POLICY");
        FILE *null = freopen("/dev/null", "w", stdout);
        null = freopen(errpath ? errpath : "/dev/null", "w", stderr);
        (void)null;
        execv(D5_BIN, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* SIGTERM to test-operator while a custom operator hangs in its child: the
 * child and what it forked end with it, and d5 exits 143. */
Test(hardening_cli, sigterm_ends_children_and_exits_143)
{
    char *dir = tmpdir_make(), *lib, *spec, *pidfile, *out, *err;
    cr_assert_geq(asprintf(&lib, "%s/libbad.so", dir), 0);
    cr_assert_geq(asprintf(&pidfile, "%s/grandchild.pid", dir), 0);
    int rc = RUN(&out, &err, "compile-op", D5_SOURCE_DIR "/tests/level0/ops/misbehaving.c",
                 "--name", "ForkHang", "-o", lib);
    cr_assert_eq(rc, 0, "%s", err);
    free(out);
    free(err);
    cr_assert_geq(asprintf(&spec, "custom:%s:ForkHang", lib), 0);
    setenv("D5_TEST_PIDFILE", pidfile, 1);
    pid_t pid =
        start_d5((const char *const[]){"test-operator", "ForkHang", "--backend", spec, "--sizes",
                                       "shape=8", "--no-peak", "--timeout", "60", NULL},
                 NULL);
    unsetenv("D5_TEST_PIDFILE");
    char *text = NULL;
    for (int i = 0; i < 100 && !text; i++) {
        usleep(50000);
        text = slurp(pidfile, NULL);
    }
    cr_assert_not_null(text, "the operator did not start");
    long grandchild = strtol(text, NULL, 10);
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status), "d5 died of a signal");
    cr_assert_eq(WEXITSTATUS(status), 143);
    int gone = 0;
    for (int i = 0; i < 40 && !gone; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/stat", grandchild);
        char *st = slurp(path, NULL);
        gone = !st || strstr(st, ") Z ") != NULL;
        free(st);
        if (!gone) usleep(50000);
    }
    cr_assert(gone, "grandchild %ld survived", grandchild);
    free(text);
    free(spec);
    free(lib);
    free(pidfile);
    rmtree(dir);
    free(dir);
}

/* Whether d5 (pid) runs its own main(): SIGINT is blocked or caught there, or
 * it has restarted itself (its environment then holds d5's wait policy). */
static int d5_running(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    char *st = slurp(path, NULL);
    int yes = 0;
    for (const char *k = st ? strstr(st, "\nSigBlk:") : NULL; k && !yes;
         k = strstr(k + 1, "\nSigCgt:")) {
        unsigned long long mask = strtoull(k + 8, NULL, 16);
        yes = (mask >> (SIGINT - 1)) & 1;
    }
    free(st);
    snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
    size_t len = 0;
    char *env = slurp(path, &len);
    for (size_t i = 0; env && i < len && !yes; i += strlen(env + i) + 1)
        yes = strcmp(env + i, "D5_WAIT_POLICY=d5") == 0;
    free(env);
    return yes;
}

/* Ctrl-C during d5 bench, from the moment d5 runs (across its restart, while
 * its libraries load a second time) to the middle of the suite: exit 130 and
 * no results folder, whole or partial. */
Test(hardening_cli, sigint_during_bench_leaves_no_folder)
{
    const useconds_t after_us[] = {0, 200000, 600000, 1200000, 3000000};
    char *logdir = tmpdir_make(), *log;
    cr_assert_geq(asprintf(&log, "%s/stderr.txt", logdir), 0);
    for (size_t k = 0; k < sizeof after_us / sizeof after_us[0]; k++) {
        char *dir = tmpdir_make(), *res;
        cr_assert_geq(asprintf(&res, "%s/run", dir), 0);
        /* Budgets long enough that d5 is still measuring when the signal comes. */
        pid_t pid = start_d5((const char *const[]){"bench", "--time", "30", "--machine-time", "30",
                                                   "--out", res, NULL},
                             log);
        int status = 0, ready = 0;
        while (!(ready = d5_running(pid)) && waitpid(pid, &status, WNOHANG) == 0) usleep(1000);
        cr_assert(ready, "d5 ended before it ran (status %d)", status);
        usleep(after_us[k]);
        pid_t ended = waitpid(pid, &status, WNOHANG);
        if (ended == 0) {
            kill(pid, SIGINT);
            waitpid(pid, &status, 0);
        }
        char *said = slurp(log, NULL);
        cr_assert_eq(ended, 0, "d5 ended before the signal (status %d); d5 said:\n%s", status,
                     said ? said : "");
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130,
                  "SIGINT %g s after d5 started: %s %d, not exit 130; d5 said:\n%s",
                  after_us[k] * 1e-6, WIFSIGNALED(status) ? "killed by signal" : "exit",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), said ? said : "");
        free(said);
        struct stat st;
        cr_assert_neq(stat(res, &st), 0, "a results folder appeared");
        char *cmd;
        cr_assert_geq(asprintf(&cmd, "ls -A %s | grep -q .", dir), 0);
        cr_assert_neq(system(cmd), 0, "something was left in %s", dir);
        free(cmd);
        free(res);
        rmtree(dir);
        free(dir);
    }
    free(log);
    rmtree(logdir);
    free(logdir);
}

/* A target accuracy not reached is null in the JSON, not -1. */
Test(hardening_cli, unreached_target_is_null)
{
    char *dir = tmpdir_make(), *json, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/t.json", dir), 0);
    int rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--max-batches", "2",
                 "--target-accuracy", "0.999", "--json", json, "--threads", "1");
    cr_assert_eq(rc, 0, "%s", err);
    expect_file_has(json, "\"time_to_accuracy_s\": null");
    free(json);
    run_done(out, err, dir);
}
