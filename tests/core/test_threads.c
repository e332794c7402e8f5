/* Usable cores, the thread count, and contention measured beside a busy process. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TestSuite(threads, .timeout = D5_TIMEOUT(120));

Test(threads, usable_cores_follow_the_affinity_mask)
{
    d5_cores c;
    cr_assert_eq(d5_cores_query(&c), D5_OK);
    cr_assert_geq(c.usable, 1);
    cr_assert_leq(c.usable, c.online);
    cr_assert_leq(c.affinity, c.online);
    /* Criterion runs each test in its own process: narrowing its mask to
     * one CPU is seen at once. */
    cpu_set_t one;
    CPU_ZERO(&one);
    cpu_set_t all;
    cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int first = 0;
    while (!CPU_ISSET(first, &all)) first++;
    CPU_SET(first, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    cr_assert_eq(d5_cores_query(&c), D5_OK);
    cr_assert_eq(c.affinity, 1);
    cr_assert_eq(c.usable, 1);
    if (c.online > 1) cr_assert_str_eq(c.limited_by, "affinity mask");
}

Test(threads, ranks_per_node_divide_an_unbound_node)
{
    d5_cores c;
    cr_assert_eq(d5_cores_query(&c), D5_OK);
    if (c.affinity != c.online || c.online < 2 || c.quota > 0)
        cr_skip_test("needs an unrestricted machine with 2 or more CPUs");
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    cr_assert_eq(d5_cores_query(&c), D5_OK);
    cr_assert_eq(c.local_ranks, 2);
    cr_assert_eq(c.usable, c.online / 2);
    cr_assert_str_eq(c.limited_by, "ranks per node");
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "0", 1); /* nonsense is ignored */
    cr_assert_eq(d5_cores_query(&c), D5_OK);
    cr_assert_eq(c.local_ranks, 1);
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

Test(threads, fixed_and_automatic_counts)
{
    cr_assert_eq(d5_threads_set(-1), D5_ERR_INVALID);
    cr_assert_eq(d5_threads_set(3), D5_OK);
    cr_assert_eq(d5_threads_team(), 3);
    cr_assert_eq(d5_threads_adapt(), 3, "a fixed count never adapts");
    d5_threads_info t;
    d5_threads_info_get(&t);
    cr_assert_eq(t.requested, 3);
    cr_assert_eq(d5_threads_set(0), D5_OK);
    d5_cores c;
    cr_assert_eq(d5_cores_query(&c), D5_OK);
    /* Fewer than the usable cores when other processes run right now. */
    cr_assert_leq(d5_threads_team(), c.usable);
    cr_assert_geq(d5_threads_team(), 1);
    d5_threads_info_get(&t);
    cr_assert_eq(t.requested, 0);
    cr_assert_eq(t.usable, c.usable);
}

Test(threads, wait_policy_respects_the_user)
{
    setenv("OMP_WAIT_POLICY", "active", 1);
    unsetenv("GOMP_SPINCOUNT");
    cr_assert_eq(d5_threads_wait_policy_env(), 0);
    cr_assert_null(getenv("GOMP_SPINCOUNT"));
    unsetenv("OMP_WAIT_POLICY");
    cr_assert_eq(d5_threads_wait_policy_env(), 1);
    cr_assert_str_eq(getenv("GOMP_SPINCOUNT"), D5_THREADS_SPINCOUNT);
    cr_assert_eq(d5_threads_wait_policy_env(), 0, "set once");
}

/* Two samples one second apart on 2 CPUs with the given CPU times. */
static void two_samples(double busy_s, double self_s, double steal_s, d5_load_sample *a,
                        d5_load_sample *b)
{
    long hz = sysconf(_SC_CLK_TCK);
    memset(a, 0, sizeof *a);
    a->wall_ns = 1000000000u;
    a->cpus = 2;
    a->valid = 1;
    a->busy_ticks = a->steal_ticks = a->total_ticks = 1000;
    *b = *a;
    b->wall_ns += 1000000000u;
    b->busy_ticks += (uint64_t)(busy_s * (double)hz);
    b->steal_ticks += (uint64_t)(steal_s * (double)hz);
    b->total_ticks += (uint64_t)(2.0 * (double)hz);
    b->self_cpu_ns = (uint64_t)(self_s * 1e9);
}

Test(threads, contention_rule_on_known_figures)
{
    d5_load_sample a, b;
    d5_contention c;
    /* We used 1 core-second, others 1: with 2 threads nothing was free. */
    two_samples(2.0, 1.0, 0, &a, &b);
    d5_contention_between(&a, &b, 2, &c);
    cr_assert(c.known);
    cr_assert_float_eq(c.others_cores, 1.0, 0.02);
    cr_assert(c.contended, "%s", c.reason);
    cr_assert(strstr(c.reason, "busy with other processes"), "%s", c.reason);
    /* With one thread, the other core was free for them. */
    d5_contention_between(&a, &b, 1, &c);
    cr_assert_not(c.contended, "%s", c.reason);
    /* A quiet machine. */
    two_samples(1.9, 1.85, 0, &a, &b);
    d5_contention_between(&a, &b, 2, &c);
    cr_assert_not(c.contended, "%s", c.reason);
    /* Steal time of 10% is contention whatever the threads. */
    two_samples(1.0, 1.0, 0.2, &a, &b);
    d5_contention_between(&a, &b, 1, &c);
    cr_assert_float_eq(c.steal_fraction, 0.1, 0.01);
    cr_assert(c.contended, "%s", c.reason);
    /* Unreadable /proc/stat: no verdict. */
    a.valid = 0;
    d5_contention_between(&a, &b, 2, &c);
    cr_assert_not(c.known);
    cr_assert_not(c.contended);
}

static volatile double sink;
static d5_status spin_1ms(void *ctx)
{
    (void)ctx;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double x = 1;
    do {
        for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000L);
    sink = x;
    return D5_OK;
}

/* A process that busy-loops beside a measurement is reported on it. */
Test(threads, a_busy_process_is_reported)
{
    cr_assert_eq(d5_threads_set(0), D5_OK);
    int pid = busy_start(30);
    cr_assert_gt(pid, 0);
    /* The automatic count starts without the core the child holds. */
    cr_assert_eq(d5_threads_set(0), D5_OK);
    d5_cores c;
    cr_assert_eq(d5_cores_query(&c), D5_OK);
    if (c.usable >= 2 && c.usable == c.affinity)
        cr_expect_lt(d5_threads_team(), c.usable, "team %d of %d usable beside a busy process",
                     (int)d5_threads_team(), (int)c.usable);
    d5_measure_params p = d5_measure_default_params();
    p.max_time_s = 1.0;
    p.min_reps = 400; /* at least 0.4 s of measuring */
    d5_measurement m;
    d5_status s = d5_measure_run(spin_1ms, NULL, &p, &m);
    busy_stop(pid);
    cr_assert_eq(s, D5_OK, "%s", d5_last_error());
    if (!m.contention.known) cr_skip_test("/proc/stat is not readable here");
    cr_assert_geq(m.contention.others_cores, 0.5, "the busy child took %.2f cores",
                  m.contention.others_cores);
    cr_assert(m.contention.contended, "%s", m.contention.reason);
    d5_measurement_free(&m);
}

/* Core does not link OpenBLAS: in a program that loads none (this test links
 * only d5core) there is none to report or to set. */
Test(threads, no_blas_without_openblas_loaded)
{
    d5_blas_info b;
    d5_blas_info_get(&b);
    cr_assert_eq(b.loaded, 0);
    cr_assert_str_eq(b.config, "");
    cr_assert_str_eq(b.parallel, "none");
    cr_assert_eq(d5_threads_set(2), D5_OK);
    d5_threads_info t;
    d5_threads_info_get(&t);
    cr_assert_str_eq(t.openblas, "none");
    cr_assert_eq(d5_threads_set(0), D5_OK);
}
