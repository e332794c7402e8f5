/* --threads on the commands that compute, and the contention warning beside a
 * busy process. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(threads_cli, .timeout = D5_TIMEOUT(300));

Test(threads_cli, every_computing_command_takes_threads)
{
    const char *cmds[] = {"run", "train", "test-operator", "bench", "onnx-test", "machine"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *out, *err;
        int rc = RUN(&out, &err, cmds[i], "--help");
        cr_assert_eq(rc, 0, "%s --help: %s", cmds[i], err);
        cr_assert(strstr(out, "--threads"), "d5 %s has no --threads: %s", cmds[i], out);
        free(out);
        free(err);
        rc = RUN(&out, &err, cmds[i], "--threads", "-1");
        cr_assert_eq(rc, 2, "d5 %s --threads -1 exited %d", cmds[i], rc);
        free(out);
        free(err);
    }
}

Test(threads_cli, the_resolved_threads_and_runtime_are_echoed)
{
    char *out, *err;
    int rc = RUN(&out, &err, "test-operator", "Relu", "--sizes", "shape=64x64", "--backend", "ref",
                 "--no-peak", "--max-time", "0.05", "--threads", "1");
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    cr_assert(strstr(out, "# threads: 1 (fixed by --threads"), "%s", out);
    cr_assert(strstr(out, "# threading: OpenMP"), "%s", out);
    /* d5 restarts itself with its wait policy unless the user chose one (as
     * scripts/valgrind.sh does, so that d5 need not re-execute itself). */
    if (getenv("GOMP_SPINCOUNT"))
        cr_assert(strstr(out, "GOMP_SPINCOUNT=") && strstr(out, " (user)"), "%s", out);
    else
        cr_assert(strstr(out, "GOMP_SPINCOUNT=" D5_THREADS_SPINCOUNT " (d5)"), "%s", out);
    free(out);
    free(err);
    /* The user's OMP_WAIT_POLICY alone (a GOMP_SPINCOUNT of the caller's set aside). */
    char *spin = getenv("GOMP_SPINCOUNT") ? strdup(getenv("GOMP_SPINCOUNT")) : NULL;
    unsetenv("GOMP_SPINCOUNT");
    setenv("OMP_WAIT_POLICY", "passive", 1);
    rc = RUN(&out, &err, "test-operator", "Relu", "--sizes", "shape=64x64", "--backend", "ref",
             "--no-peak", "--max-time", "0.05");
    unsetenv("OMP_WAIT_POLICY");
    if (spin) setenv("GOMP_SPINCOUNT", spin, 1);
    free(spin);
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    EXPECT_HAS(out, "OMP_WAIT_POLICY=passive (user)", "# threads: ", "(automatic: ");
    free(out);
    free(err);
}

/* One process busy-looping beside `d5 test-operator`: the run warns. */
Test(threads_cli, a_busy_process_brings_the_warning)
{
    int pid = busy_start(60);
    cr_assert_gt(pid, 0);
    char *out, *err, *dir = tmpdir_make(), *json;
    cr_assert_geq(asprintf(&json, "%s/r.json", dir), 0);
    int rc = RUN(&out, &err, "test-operator", "MatMul", "--sizes", "M=128,N=128,K=128", "--backend",
                 "blas", "--no-peak", "--max-time", "1", "--json", json);
    busy_stop(pid);
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    cr_assert(strstr(err, "warning: other processes competed for the cores"), "%s\n%s", out, err);
    expect_file_has(json, "\"contention\": \"yes\"");
    free(json);
    run_done(out, err, dir);
}
