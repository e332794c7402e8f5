#define _POSIX_C_SOURCE 200809L
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static size_t count(d5_timer *t, const char *key)
{
    d5_timer_id id;
    if (d5_timer_key(t, key, &id) != D5_OK) return (size_t)-1;
    return d5_timer_count(t, id, D5_TIMER_CPU);
}

/* A timer with the default parameters. */
static d5_timer *new_timer(void)
{
    d5_timer *t = NULL;
    cr_assert_eq(d5_timer_create(NULL, &t), D5_OK);
    return t;
}

/* Times one empty region each of keys prefix0 .. prefix(n-1), named from one
 * reused buffer. */
static void time_numbered_keys(d5_timer *t, const char *prefix, int n)
{
    char key[32];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s%d", prefix, i);
        cr_assert_eq(d5_timer_start(t, key), D5_OK);
        cr_assert_eq(d5_timer_end(t, key), D5_OK);
    }
}

Test(timer, default_keys_are_registered_in_order)
{
    d5_timer *t = new_timer();
    cr_assert_eq(d5_timer_key_count(t), D5_KEY_ID_DEFAULT_COUNT);
    cr_assert_str_eq(d5_timer_key_name(t, D5_KEY_ID_EPOCH), "EPOCH");
    cr_assert_str_eq(d5_timer_key_name(t, D5_KEY_ID_OTHER), "OTHER");
    cr_assert_null(d5_timer_key_name(t, 999));
    d5_timer_free(t);
    d5_timer_free(NULL);
}

Test(timer, regions_nest_and_overlap)
{
    d5_timer *t = new_timer();
    /* Nesting: EPOCH contains two BATCHes, each containing FORWARD and BACKWARD. */
    cr_assert_eq(d5_timer_start(t, D5_KEY_EPOCH), D5_OK);
    for (int b = 0; b < 2; b++) {
        cr_assert_eq(d5_timer_start(t, D5_KEY_BATCH), D5_OK);
        cr_assert_eq(d5_timer_start(t, D5_KEY_FORWARD), D5_OK);
        cr_assert_eq(d5_timer_end(t, D5_KEY_FORWARD), D5_OK);
        cr_assert_eq(d5_timer_start(t, D5_KEY_BACKWARD), D5_OK);
        cr_assert_eq(d5_timer_end(t, D5_KEY_BACKWARD), D5_OK);
        cr_assert_eq(d5_timer_end(t, D5_KEY_BATCH), D5_OK);
    }
    cr_assert_eq(d5_timer_end(t, D5_KEY_EPOCH), D5_OK);
    /* Overlap: A starts, B starts, A ends, B ends. */
    cr_assert_eq(d5_timer_start(t, "A"), D5_OK);
    cr_assert_eq(d5_timer_start(t, "B"), D5_OK);
    cr_assert_eq(d5_timer_end(t, "A"), D5_OK);
    cr_assert_eq(d5_timer_end(t, "B"), D5_OK);
    cr_assert_eq(count(t, D5_KEY_EPOCH), 1);
    cr_assert_eq(count(t, D5_KEY_BATCH), 2);
    cr_assert_eq(count(t, D5_KEY_FORWARD), 2);
    cr_assert_eq(count(t, "A"), 1);
    cr_assert_eq(count(t, "B"), 1);

    /* The epoch contains the batches: its duration is at least their sum. */
    d5_timer_series e, b;
    cr_assert_eq(d5_timer_series_get(t, D5_KEY_ID_EPOCH, D5_TIMER_CPU, &e), D5_OK);
    double epoch = e.duration_ns[0], epoch_start = e.start_ns[0];
    cr_assert_eq(d5_timer_series_get(t, D5_KEY_ID_BATCH, D5_TIMER_CPU, &b), D5_OK);
    cr_assert_geq(epoch, b.duration_ns[0] + b.duration_ns[1]);
    cr_assert_geq(b.start_ns[0], epoch_start);
    cr_assert_geq(b.start_ns[1], b.start_ns[0] + b.duration_ns[0]);
    d5_timer_free(t);
}

Test(timer, misuse_of_a_key_is_an_error_and_changes_nothing)
{
    d5_timer *t = new_timer();
    cr_assert_eq(d5_timer_end(t, "conv2"), D5_ERR_STATE);
    cr_assert_str_eq(d5_last_error(), "timer key 'conv2': end without a start");
    cr_assert_eq(d5_timer_start(t, "conv2"), D5_OK);
    cr_assert_eq(d5_timer_start(t, "conv2"), D5_ERR_STATE);
    cr_assert(strstr(d5_last_error(), "started again"));
    cr_assert_eq(d5_timer_reset(t), D5_ERR_STATE);
    cr_assert(strstr(d5_last_error(), "'conv2' is open"));
    cr_assert_eq(d5_timer_end(t, "conv2"), D5_OK);
    cr_assert_eq(d5_timer_end(t, "conv2"), D5_ERR_STATE);
    cr_assert_eq(count(t, "conv2"), 1);
    cr_assert_eq(d5_timer_end_id(t, 12345), D5_ERR_INVALID);
    cr_assert_eq(d5_timer_start(NULL, "x"), D5_ERR_INVALID);
    d5_timer_free(t);
}

Test(timer, bad_keys_are_rejected)
{
    d5_timer *t = new_timer();
    char longkey[D5_TIMER_KEY_MAX + 2];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    cr_assert_eq(d5_timer_start(t, longkey), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "longer than"));
    longkey[D5_TIMER_KEY_MAX] = '\0'; /* exactly the maximum is fine */
    cr_assert_eq(d5_timer_start(t, longkey), D5_OK);
    cr_assert_eq(d5_timer_start(t, ""), D5_ERR_INVALID);
    cr_assert_eq(d5_timer_start(t, NULL), D5_ERR_INVALID);
    d5_timer_free(t);
}

Test(timer, a_reused_buffer_is_looked_up_by_content)
{
    d5_timer *t = new_timer();
    time_numbered_keys(t, "layer", 3);
    cr_assert_eq(count(t, "layer0"), 1);
    cr_assert_eq(count(t, "layer1"), 1);
    cr_assert_eq(count(t, "layer2"), 1);
    d5_timer_free(t);
}

Test(timer, many_keys_and_many_samples)
{
    d5_timer *t = new_timer();
    time_numbered_keys(t, "node_", 2000);
    cr_assert_eq(d5_timer_key_count(t), D5_KEY_ID_DEFAULT_COUNT + 2000);
    for (int i = 0; i < 100000; i++) {
        cr_assert_eq(d5_timer_start_id(t, D5_KEY_ID_IO), D5_OK);
        cr_assert_eq(d5_timer_end_id(t, D5_KEY_ID_IO), D5_OK);
    }
    cr_assert_eq(count(t, "IO"), 100000);
    cr_assert_eq(count(t, "node_1999"), 1);
    cr_assert_eq(d5_timer_reset(t), D5_OK);
    cr_assert_eq(count(t, "IO"), 0);
    cr_assert_eq(d5_timer_key_count(t), D5_KEY_ID_DEFAULT_COUNT + 2000);
    d5_timer_free(t);
}

Test(timer, durations_follow_the_clock)
{
    d5_timer_params p = d5_timer_default_params();
    p.cpu_clock = D5_CPU_CLOCK_MONOTONIC;
    d5_timer *mono, *aut;
    cr_assert_eq(d5_timer_create(&p, &mono), D5_OK);
    cr_assert_eq(d5_timer_create(NULL, &aut), D5_OK);
    cr_assert_str_eq(d5_timer_clock_name(mono, D5_TIMER_CPU), "monotonic");
    /* The auto clock's region lies inside the monotonic one's. */
    cr_assert_eq(d5_timer_start(mono, "sleep"), D5_OK);
    cr_assert_eq(d5_timer_start(aut, "sleep"), D5_OK);
    sleep_ms(20);
    cr_assert_eq(d5_timer_end(aut, "sleep"), D5_OK);
    cr_assert_eq(d5_timer_end(mono, "sleep"), D5_OK);
    d5_stats a, m;
    cr_assert_eq(d5_timer_stats(aut, "sleep", D5_TIMER_CPU, &a), D5_OK);
    cr_assert_eq(d5_timer_stats(mono, "sleep", D5_TIMER_CPU, &m), D5_OK);
    cr_assert_geq(m.median, 20e6);
    cr_assert_geq(a.median, 20e6 * 0.999, "auto clock %s measured %.0f ns for a 20 ms sleep",
                  d5_timer_clock_name(aut, D5_TIMER_CPU), a.median);
    cr_assert_leq(a.median, m.median * 1.001);
    cr_assert_geq(d5_timer_now_ns(aut), a.median);
    cr_assert_eq(d5_timer_stats(aut, "never", D5_TIMER_CPU, &a), D5_ERR_NOTFOUND);
    cr_assert_eq(d5_timer_stats(aut, D5_KEY_COMM, D5_TIMER_CPU, &a), D5_ERR_NOTFOUND);
    cr_assert(strstr(d5_last_error(), "no samples"));
    d5_timer_free(mono);
    d5_timer_free(aut);
}

Test(timer, added_samples_feed_the_statistics)
{
    d5_timer *t = new_timer();
    for (int i = 1; i <= 10; i++)
        cr_assert_eq(d5_timer_add(t, "ext", 1000.0 * i, 1000.0 * i), D5_OK);
    d5_stats s;
    cr_assert_eq(d5_timer_stats(t, "ext", D5_TIMER_CPU, &s), D5_OK);
    cr_assert_eq(s.n, 10);
    cr_assert(fabs(s.median - 5500) < 1, "median %f", s.median);
    cr_assert(fabs(s.ci_low - 2000) < 1 && fabs(s.ci_high - 9000) < 1);
    cr_assert_eq(d5_timer_add(t, "ext", -1, 5), D5_ERR_INVALID);
    cr_assert_eq(d5_timer_add(t, "ext", 0, NAN), D5_ERR_INVALID);
    d5_timer_free(t);
}

Test(timer, bad_parameters)
{
    d5_timer *t = NULL;
    d5_timer_params p = d5_timer_default_params();
    p.clocks = 0;
    cr_assert_eq(d5_timer_create(&p, &t), D5_ERR_INVALID);
    p.clocks = 8;
    cr_assert_eq(d5_timer_create(&p, &t), D5_ERR_INVALID);
    cr_assert_null(t);
    d5_timer_series ser;
    cr_assert_eq(d5_timer_create(NULL, &t), D5_OK);
    cr_assert_eq(d5_timer_series_get(t, 0, D5_TIMER_CUDA, &ser), D5_ERR_STATE);
    cr_assert_eq(d5_timer_series_get(t, 0, 3, &ser), D5_ERR_INVALID);
    d5_timer_free(t);
}

Test(timer, out_of_memory_is_reported_and_nothing_leaks)
{
    /* Fail at every allocation in turn during creation and the first samples. */
    for (long budget = 0; budget < 40; budget++) {
        failing_alloc_install(budget);
        d5_timer *t = NULL;
        d5_status s = d5_timer_create(NULL, &t);
        if (s == D5_OK) {
            for (int i = 0; i < 200 && s == D5_OK; i++) {
                s = d5_timer_start(t, "k");
                if (s == D5_OK) s = d5_timer_end(t, "k");
            }
            d5_timer_free(t);
        }
        cr_assert(s == D5_OK || s == D5_ERR_NOMEM, "budget %ld: %s", budget, d5_status_name(s));
        cr_assert_eq(failing_alloc_live(), 0, "budget %ld leaks %ld blocks", budget,
                     failing_alloc_live());
    }
    failing_alloc_remove();
}

/* The CUDA-event clock lives in a plugin: where it is missing, the timer
 * says so. */
Test(timer, cuda_events_without_their_plugin_say_why)
{
    cr_assert_eq(setenv("D5_PLUGIN_DIR", "/nonexistent/d5-plugins", 1), 0);
    d5_timer_params p = d5_timer_default_params();
    p.clocks = D5_TIMER_CPU | D5_TIMER_CUDA;
    d5_timer *t = NULL;
    cr_assert_eq(d5_timer_create(&p, &t), D5_ERR_UNSUPPORTED);
    cr_assert_null(t);
    const char *e = d5_last_error();
    cr_assert(strstr(e, "CUDA-event timing: plugin not built (no "
                        "/nonexistent/d5-plugins/libd5_cudart.so)") ||
                  strstr(e, "built without the CUDA toolkit"),
              "%s", e);
}

Test(timer, cuda_events_run_on_a_device_or_say_why_not)
{
    d5_timer_params p = d5_timer_default_params();
    p.clocks = D5_TIMER_CPU | D5_TIMER_CUDA;
    d5_timer *t = NULL;
    d5_status s = d5_timer_create(&p, &t);
    if (s != D5_OK) {
        cr_assert(s == D5_ERR_NODEVICE || s == D5_ERR_UNSUPPORTED, "%s", d5_status_name(s));
        cr_assert(strstr(d5_last_error(), "CUDA"), "message: %s", d5_last_error());
        cr_assert_null(t);
        cr_skip_test("%s", d5_last_error());
    }
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(d5_timer_start(t, "gpu"), D5_OK);
        sleep_ms(2);
        cr_assert_eq(d5_timer_end(t, "gpu"), D5_OK);
    }
    d5_stats g, c;
    cr_assert_eq(d5_timer_stats(t, "gpu", D5_TIMER_CUDA, &g), D5_OK);
    cr_assert_eq(d5_timer_stats(t, "gpu", D5_TIMER_CPU, &c), D5_OK);
    cr_assert_eq(g.n, 5);
    /* Events on an idle stream complete as recorded: both clocks see the sleep. */
    cr_assert_geq(g.median, 1.5e6);
    cr_assert_geq(c.median, 2e6);
    d5_timer_free(t);
}
