/* The system sampler (its parsers: test_sysmon_proc.c): sampling for a known
 * time, RAPL energy across a wrap-around on a fixture tree, a stand-in NVML,
 * the reasons given when something is unavailable, and every report read back
 * (CSV, JSON, run log, trace); then d5 run and d5 bench with their system
 * options. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(sysmon, .timeout = D5_TIMEOUT(120));

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Writes `text` to dir/rel atomically (a rename), creating folders. */
static void put(const char *dir, const char *rel, const char *text)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    for (char *c = path + strlen(dir) + 1; *c; c++)
        if (*c == '/') {
            *c = '\0';
            mkdir(path, 0755);
            *c = '/';
        }
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f, "%s: %s", tmp, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(rename(tmp, path), 0);
}

static d5_sysmon *make(double hz, const char *sys_root, const char *nvml)
{
    d5_sysmon_params p = d5_sysmon_default_params();
    p.hz = hz;
    if (sys_root) p.sys_root = sys_root;
    if (nvml) p.nvml_library = nvml;
    d5_sysmon *m = NULL;
    cr_assert_eq(d5_sysmon_create(&p, &m), D5_OK, "%s", d5_last_error());
    return m;
}

Test(sysmon, the_sampler_samples_at_its_rate)
{
    /* Nothing here bounds the wall time: the checks compare the sampler's
     * timestamps with the period and with moments this test reads from the
     * same monotonic clock, so a busy machine changes no outcome. */
    const double hz = 20, period_s = 1 / hz;
    d5_sysmon *m = make(hz, NULL, NULL);
    cr_assert_eq(d5_sysmon_start(m), D5_OK, "%s", d5_last_error());
    uint64_t after_start = d5_monotonic_ns();
    cr_assert_eq(d5_sysmon_start(m), D5_ERR_STATE);
    d5_sysmon_energy e;
    cr_assert_eq(d5_sysmon_energy_get(m, &e), D5_ERR_STATE, "read only when stopped");
    /* One core busy for 1 s, and 64 MiB touched: both must show. */
    size_t big = 64u << 20;
    char *p = malloc(big);
    cr_assert_not_null(p);
    memset(p, 1, big);
    uint64_t t0 = d5_monotonic_ns();
    volatile double x = 0;
    while (d5_monotonic_ns() - t0 < 1000000000u) x += 1e-9;
    cr_assert_gt(d5_sysmon_sample_count(m), 0, "readable while it runs");
    uint64_t before_stop = d5_monotonic_ns();
    cr_assert_eq(d5_sysmon_stop(m), D5_OK, "%s", d5_last_error());
    free(p);
    size_t n = d5_sysmon_sample_count(m);
    d5_sysmon_overhead o;
    cr_assert_eq(d5_sysmon_overhead_get(m, &o), D5_OK);
    /* The sampler's run encloses the busy second this test measured. */
    double busy_s = (double)(before_stop - t0) * 1e-9;
    cr_assert_geq(o.wall_s, busy_s, "a run of %g s around %g s of work", o.wall_s, busy_s);
    cr_assert_geq(o.wall_s, (double)(before_stop - after_start) * 1e-9);
    /* At most a sample a period and a last short one; at least a quarter of
     * the periods, as a busy machine makes the sampler skip some. */
    cr_assert(n >= (size_t)(0.25 * hz * o.wall_s) && n <= (size_t)(hz * o.wall_s) + 1,
              "%zu samples in %g s at %g Hz", n, o.wall_s, hz);
    double prev = 0, cpu = 0, rss_lo = INFINITY, rss_hi = 0;
    size_t counted = 0;
    int32_t cores = d5_sysmon_cores(m);
    cr_assert_gt(cores, 0);
    for (size_t i = 0; i < n; i++) {
        d5_sysmon_sample s;
        cr_assert_eq(d5_sysmon_sample_get(m, i, &s), D5_OK);
        cr_assert_gt(s.time_s, prev, "sample %zu at %g s after %g s", i, s.time_s, prev);
        /* Sample i waits for the end of period i + 1 (all but the last, short one). */
        if (i + 1 < n)
            cr_assert_geq(s.time_s, (double)(i + 1) * period_s - 1e-6,
                          "sample %zu at %g s, before its period ended", i, s.time_s);
        prev = s.time_s;
        /* The last, short sample may end before the kernel's next clock
         * tick: no CPU time has been counted in it, and its share is NaN. */
        int tickless = i + 1 == n && s.interval_s < 2.0 / (double)sysconf(_SC_CLK_TCK);
        if (tickless && isnan(s.cpu_percent)) continue;
        cr_assert(s.cpu_percent >= 0 && s.cpu_percent <= 100, "sample %zu of %zu: %g", i, n,
                  s.cpu_percent);
        counted++;
        cr_assert(s.memory_used_bytes > 0 && s.memory_available_bytes > 0);
        cr_assert(s.run_queue >= 1, "the sampler itself runs: %g", s.run_queue);
        cr_assert_not_null(s.core_percent);
        cpu += s.cpu_percent;
        rss_lo = s.rss_bytes < rss_lo ? s.rss_bytes : rss_lo;
        rss_hi = s.rss_bytes > rss_hi ? s.rss_bytes : rss_hi;
    }
    /* The last sample comes after the stop was asked for, unless the one
     * before it was less than a fifth of a period older than the stop. */
    double asked_s = (double)(before_stop - after_start) * 1e-9;
    cr_assert(prev >= asked_s - period_s / 5 && prev <= o.wall_s,
              "last sample at %g s; stop asked at %g s or later; run of %g s", prev, asked_s,
              o.wall_s);
    cr_assert_gt(counted, 0);
    cr_assert_geq(cpu / (double)counted, 0.5 * 100.0 / cores, "a busy core out of %d: %g%% mean",
                  (int)cores, cpu / (double)counted);
    cr_assert_geq(rss_hi, 60.0 * (1 << 20), "the 64 MiB touched: peak RSS %g", rss_hi);
    d5_sysmon_sample s;
    cr_assert_eq(d5_sysmon_sample_get(m, n, &s), D5_ERR_RANGE);
    cr_assert_gt(o.thread_cpu_s, 0);
    cr_assert_float_eq(o.fraction, o.thread_cpu_s / o.wall_s, 1e-12);
    cr_assert_lt(o.fraction, 0.2, "the sampler's share of a core: %g", o.fraction);
    cr_assert_eq(d5_sysmon_stop(m), D5_ERR_STATE);
    d5_sysmon_free(m);
}

Test(sysmon, bad_parameters_and_work)
{
    d5_sysmon_params p = d5_sysmon_default_params();
    d5_sysmon *m = NULL;
    p.hz = 0;
    cr_assert_eq(d5_sysmon_create(&p, &m), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "rate 0 Hz is outside (0, 1000]"), "%s", d5_last_error());
    p.hz = NAN;
    cr_assert_eq(d5_sysmon_create(&p, &m), D5_ERR_INVALID);
    cr_assert_null(m);
    m = make(10, NULL, NULL);
    cr_assert_eq(d5_sysmon_set_work(m, 0, "step"), D5_ERR_INVALID);
    cr_assert_eq(d5_sysmon_set_work(m, 3, "two words"), D5_ERR_INVALID);
    cr_assert_eq(d5_sysmon_set_work(m, 3, ""), D5_ERR_INVALID);
    cr_assert_eq(d5_sysmon_set_work(m, 3, "step"), D5_OK);
    d5_sysmon_overhead o;
    cr_assert_eq(d5_sysmon_overhead_get(m, &o), D5_ERR_STATE);
    cr_assert(strstr(d5_last_error(), "never started"), "%s", d5_last_error());
    cr_assert_eq(d5_sysmon_write_csv(m, "/tmp/never.csv"), D5_ERR_STATE);
    d5_sysmon_free(m); /* never started: fine */
    d5_sysmon_free(NULL);
}

/* ---- What is unavailable, and why -------------------------------------------------------------
 */

Test(sysmon, unavailable_gpu_and_energy_say_why)
{
    char *dir = tmpdir_make();
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/libnvidia-ml.so.1", dir);
    d5_sysmon *m = make(50, dir, missing);
    cr_assert_eq(d5_sysmon_gpu_count(m), 0);
    const char *why = d5_sysmon_gpu_unavailable(m);
    cr_assert_not_null(why);
    char expect[4400];
    snprintf(expect, sizeof expect, "%s cannot be loaded (no NVIDIA driver here): ", missing);
    cr_assert(strncmp(why, expect, strlen(expect)) == 0, "%s", why);
    cr_assert_eq(d5_sysmon_start(m), D5_OK);
    sleep_s(0.1);
    cr_assert_eq(d5_sysmon_stop(m), D5_OK);
    d5_sysmon_energy e;
    cr_assert_eq(d5_sysmon_energy_get(m, &e), D5_OK);
    cr_assert_eq(e.cpu.available, 0);
    cr_assert_eq(e.cpu.joules, 0);
    snprintf(expect, sizeof expect,
             "%s/class/powercap does not exist (no RAPL interface exposed to this machine)", dir);
    cr_assert_str_eq(e.cpu.reason, expect);
    cr_assert_eq(e.gpu.available, 0);
    cr_assert_str_eq(e.gpu.reason, why);
    char line[1024];
    d5_sysmon_summary_line(m, line, sizeof line);
    cr_assert(strstr(line, "energy unavailable: ") &&
                  strstr(line, "/class/powercap does not exist"),
              "%s", line);
    /* The CSV has no GPU columns; the JSON says why, with no number. */
    char csv[4200], js[4200];
    snprintf(csv, sizeof csv, "%s/system.csv", dir);
    snprintf(js, sizeof js, "%s/system.json", dir);
    cr_assert_eq(d5_sysmon_write_csv(m, csv), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_sysmon_write_json(m, js), D5_OK, "%s", d5_last_error());
    char *text = slurp(csv, NULL);
    cr_assert_null(strstr(text, "gpu"), "%s", text);
    free(text);
    json_t *doc = json_read(js);
    json_t *g = json_object_get(doc, "gpu");
    cr_assert(json_is_false(json_object_get(g, "available")));
    cr_assert_str_eq(json_string_value(json_object_get(g, "reason")), why);
    json_t *cpu = json_object_get(json_object_get(doc, "energy"), "cpu");
    cr_assert(json_is_false(json_object_get(cpu, "available")));
    cr_assert_str_eq(json_string_value(json_object_get(cpu, "reason")), expect);
    cr_assert_null(json_object_get(cpu, "joules"), "no number for what was not measured");
    json_decref(doc);
    d5_sysmon_free(m);
    rmtree(dir);
    free(dir);
}

Test(sysmon, this_machines_reasons)
{
    d5_sysmon *m = make(10, NULL, NULL);
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        cr_assert_eq(d5_sysmon_gpu_count(m), 0);
        cr_assert(strstr(d5_sysmon_gpu_unavailable(m), "libnvidia-ml.so.1 cannot be loaded"), "%s",
                  d5_sysmon_gpu_unavailable(m));
    } else {
        dlclose(h);
    }
    cr_assert_eq(d5_sysmon_start(m), D5_OK);
    cr_assert_eq(d5_sysmon_stop(m), D5_OK);
    d5_sysmon_energy e;
    cr_assert_eq(d5_sysmon_energy_get(m, &e), D5_OK);
    struct stat st;
    if (stat("/sys/class/powercap", &st) != 0)
        cr_assert_str_eq(e.cpu.reason, "/sys/class/powercap does not exist (no RAPL interface "
                                       "exposed to this machine)");
    else if (!e.cpu.available)
        cr_assert(strstr(e.cpu.reason, "/sys/class/powercap"), "%s", e.cpu.reason);
    d5_sysmon_free(m);
}

Test(sysmon, unreadable_and_missing_rapl_zones_say_which_file)
{
    char *dir = tmpdir_make();
    put(dir, "class/powercap/intel-rapl-mmio:0/name", "package-0\n");
    d5_sysmon *m = make(10, dir, "");
    cr_assert_str_eq(d5_sysmon_gpu_unavailable(m), "not sampled (no NVML library given)");
    cr_assert_eq(d5_sysmon_start(m), D5_OK);
    cr_assert_eq(d5_sysmon_stop(m), D5_OK);
    d5_sysmon_energy e;
    cr_assert_eq(d5_sysmon_energy_get(m, &e), D5_OK);
    cr_assert(strstr(e.cpu.reason, "holds no intel-rapl:N zone (no RAPL driver loaded"), "%s",
              e.cpu.reason);
    d5_sysmon_free(m);

    /* A counter that cannot be read (here a folder; without root, mode 000). */
    put(dir, "class/powercap/intel-rapl:0/name", "package-0\n");
    put(dir, "class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    char path[4200];
    snprintf(path, sizeof path, "%s/class/powercap/intel-rapl:0/energy_uj", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    m = make(10, dir, "");
    cr_assert_eq(d5_sysmon_start(m), D5_OK);
    cr_assert_eq(d5_sysmon_stop(m), D5_OK);
    cr_assert_eq(d5_sysmon_energy_get(m, &e), D5_OK);
    cr_assert_eq(e.cpu.available, 0);
    char expect[4400];
    snprintf(expect, sizeof expect, "cannot read %s: %s", path, strerror(EISDIR));
    cr_assert_str_eq(e.cpu.reason, expect);
    d5_sysmon_free(m);
    rmdir(path);
    if (geteuid() != 0) {
        put(dir, "class/powercap/intel-rapl:0/energy_uj", "5\n");
        cr_assert_eq(chmod(path, 0), 0);
        m = make(10, dir, "");
        cr_assert_eq(d5_sysmon_start(m), D5_OK);
        cr_assert_eq(d5_sysmon_stop(m), D5_OK);
        cr_assert_eq(d5_sysmon_energy_get(m, &e), D5_OK);
        cr_assert(strstr(e.cpu.reason, "Permission denied (the kernel lets only root"), "%s",
                  e.cpu.reason);
        d5_sysmon_free(m);
    }
    rmtree(dir);
    free(dir);
}

/* ---- Energy ------------------------------------------------------------------------------------
 */

Test(sysmon, rapl_energy_across_a_wrap_around)
{
    char *dir = tmpdir_make();
    const uint64_t range = 262143328850ull;
    char v[64];
    put(dir, "class/powercap/intel-rapl:0/name", "package-0\n");
    put(dir, "class/powercap/intel-rapl:0/max_energy_range_uj", "262143328850\n");
    snprintf(v, sizeof v, "%llu\n", (unsigned long long)(range - 1000));
    put(dir, "class/powercap/intel-rapl:0/energy_uj", v);
    /* A sub-zone and the platform zone: not counted (parts of, or holding, a package). */
    static const char *const zones[][2] = {
        {"class/powercap/intel-rapl:0/intel-rapl:0:0/name", "core\n"},
        {"class/powercap/intel-rapl:0:0/name", "core\n"},
        {"class/powercap/intel-rapl:0:0/energy_uj", "0\n"},
        {"class/powercap/intel-rapl:1/name", "psys\n"},
        {"class/powercap/intel-rapl:1/max_energy_range_uj", "262143328850\n"},
        {"class/powercap/intel-rapl:1/energy_uj", "0\n"},
    };
    for (size_t i = 0; i < sizeof zones / sizeof zones[0]; i++) put(dir, zones[i][0], zones[i][1]);
    d5_sysmon *m = make(50, dir, "");
    cr_assert_eq(d5_sysmon_start(m), D5_OK);
    sleep_s(0.2);
    snprintf(v, sizeof v, "%llu\n", (unsigned long long)(range - 10)); /* +990 uJ */
    put(dir, "class/powercap/intel-rapl:0/energy_uj", v);
    put(dir, "class/powercap/intel-rapl:1/energy_uj", "777777\n");
    sleep_s(0.2);
    put(dir, "class/powercap/intel-rapl:0/energy_uj", "500\n"); /* wrapped: +510 uJ */
    sleep_s(0.2);
    cr_assert_eq(d5_sysmon_stop(m), D5_OK);
    cr_assert_eq(d5_sysmon_set_work(m, 3, "step"), D5_OK);
    d5_sysmon_energy e;
    cr_assert_eq(d5_sysmon_energy_get(m, &e), D5_OK);
    cr_assert_eq(e.cpu.available, 1, "%s", e.cpu.reason);
    cr_assert_eq(e.cpu.devices, 1);
    cr_assert_float_eq(e.cpu.joules, 1500e-6, 1e-15);
    cr_assert_float_eq(e.work, 3, 0);
    cr_assert_str_eq(e.unit, "step");
    char js[4200];
    snprintf(js, sizeof js, "%s/system.json", dir);
    cr_assert_eq(d5_sysmon_write_json(m, js), D5_OK, "%s", d5_last_error());
    json_t *doc = json_read(js);
    json_t *en = json_object_get(doc, "energy");
    json_t *cpu = json_object_get(en, "cpu");
    cr_assert(json_is_true(json_object_get(cpu, "available")));
    cr_assert_float_eq(json_real_value(json_object_get(cpu, "joules")), 1500e-6, 1e-15);
    cr_assert_float_eq(json_real_value(json_object_get(cpu, "joules_per_unit")), 500e-6, 1e-15);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(en, "work"), "unit")),
                     "step");
    json_decref(doc);
    char line[512];
    d5_sysmon_summary_line(m, line, sizeof line);
    cr_assert(strstr(line, "energy 0.0005 J per step (CPU packages)"), "%s", line);
    d5_sysmon_free(m);
    rmtree(dir);
    free(dir);
}

#ifdef D5_FAKE_NVML
Test(sysmon, gpus_through_nvml)
{
    char *dir = tmpdir_make();
    d5_sysmon *m = make(50, dir, D5_FAKE_NVML);
    cr_assert_null(d5_sysmon_gpu_unavailable(m), "%s", d5_sysmon_gpu_unavailable(m));
    cr_assert_eq(d5_sysmon_gpu_count(m), 1);
    cr_assert_str_eq(d5_sysmon_gpu_name(m, 0), "Fake GPU");
    cr_assert_eq(d5_sysmon_start(m), D5_OK);
    sleep_s(0.2);
    cr_assert_eq(d5_sysmon_stop(m), D5_OK);
    cr_assert_eq(d5_sysmon_set_work(m, 10, "inference"), D5_OK);
    size_t n = d5_sysmon_sample_count(m);
    cr_assert_gt(n, 3);
    d5_sysmon_sample s;
    cr_assert_eq(d5_sysmon_sample_get(m, 0, &s), D5_OK);
    cr_assert_float_eq(s.gpu[0].util_percent, 37, 0);
    cr_assert_float_eq(s.gpu[0].memory_used_bytes, 2e9, 0);
    cr_assert_float_eq(s.gpu[0].power_w, 150, 1e-12);
    d5_sysmon_energy e;
    cr_assert_eq(d5_sysmon_energy_get(m, &e), D5_OK);
    cr_assert_eq(e.gpu.available, 1, "%s", e.gpu.reason);
    cr_assert_float_eq(e.gpu.joules, 5.0, 1e-12); /* two reads, 5000 mJ apart */
    char csv[4200];
    snprintf(csv, sizeof csv, "%s/system.csv", dir);
    cr_assert_eq(d5_sysmon_write_csv(m, csv), D5_OK);
    char *text = slurp(csv, NULL);
    cr_assert(strstr(text, ",net_tx_bytes_per_s,gpu0_util_percent,gpu0_memory_used_bytes,"
                           "gpu0_power_w\n"),
              "%s", text);
    cr_assert(strstr(text, ",37,2000000000,150.000\n"), "%s", text);
    free(text);
    d5_runlog *log;
    cr_assert_eq(d5_runlog_create("gpu", &log), D5_OK);
    cr_assert_eq(d5_sysmon_to_runlog(m, log), D5_OK, "%s", d5_last_error());
    size_t ne;
    const d5_runlog_entry *ent = d5_runlog_entries(log, D5_RUNLOG_METRIC, &ne);
    struct {
        const char *key;
        double v;
        size_t seen;
    } want[] = {{"system/gpu_0_utilization_percentage", 37, 0},
                {"system/gpu_0_memory_usage_megabytes", 2000, 0},
                {"system/gpu_0_memory_usage_percentage", 25, 0},
                {"system/gpu_0_power_usage_watts", 150, 0},
                {"system/gpu_0_power_usage_percentage", 50, 0}};
    for (size_t i = 0; i < ne; i++)
        for (size_t k = 0; k < 5; k++)
            if (strcmp(ent[i].key, want[k].key) == 0) {
                cr_assert_float_eq(ent[i].value, want[k].v, 1e-9, "%s", want[k].key);
                want[k].seen++;
            }
    for (size_t k = 0; k < 5; k++) cr_assert_eq(want[k].seen, n, "%s", want[k].key);
    d5_runlog_free(log);
    char line[512];
    d5_sysmon_summary_line(m, line, sizeof line);
    cr_assert(strstr(line, "GPU 37% mean"), "%s", line);
    cr_assert(strstr(line, "energy 0.5 J per inference (GPUs; CPU package energy unavailable: "),
              "%s", line);
    d5_sysmon_free(m);
    rmtree(dir);
    free(dir);
}

Test(sysmon, nvml_without_a_driver_or_a_gpu)
{
    setenv("D5_FAKE_NVML", "init", 1);
    d5_sysmon *m = make(10, NULL, D5_FAKE_NVML);
    cr_assert_str_eq(d5_sysmon_gpu_unavailable(m), "nvmlInit_v2 failed: Driver Not Loaded");
    d5_sysmon_free(m);
    setenv("D5_FAKE_NVML", "none", 1);
    m = make(10, NULL, D5_FAKE_NVML);
    cr_assert_str_eq(d5_sysmon_gpu_unavailable(m), "NVML sees no GPU");
    d5_sysmon_free(m);
    unsetenv("D5_FAKE_NVML");
}
#endif

/* ---- Reports read back --------------------------------------------------------------------------
 */

/* A sampler that ran 0.4 s at 25 Hz beside a timer with one region. */
static void sampled(d5_sysmon **m, d5_timer **t)
{
    cr_assert_eq(d5_timer_create(NULL, t), D5_OK);
    *m = make(25, NULL, "");
    cr_assert_eq(d5_timer_start(*t, "work"), D5_OK);
    cr_assert_eq(d5_sysmon_start(*m), D5_OK);
    sleep_s(0.4);
    cr_assert_eq(d5_sysmon_stop(*m), D5_OK);
    cr_assert_eq(d5_timer_end(*t, "work"), D5_OK);
}

Test(sysmon, csv_and_json_read_back)
{
    d5_sysmon *m;
    d5_timer *t;
    sampled(&m, &t);
    char *dir = tmpdir_make(), csv[4200], js[4200];
    snprintf(csv, sizeof csv, "%s/system.csv", dir);
    snprintf(js, sizeof js, "%s/system.json", dir);
    cr_assert_eq(d5_sysmon_write_csv(m, csv), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_sysmon_write_json(m, js), D5_OK, "%s", d5_last_error());
    size_t n = d5_sysmon_sample_count(m);
    int32_t cores = d5_sysmon_cores(m);
    /* The header, built here from the format's description. */
    char header[65536] = "time_s,cpu_percent";
    for (int32_t i = 0; i < cores; i++)
        snprintf(header + strlen(header), sizeof header - strlen(header), ",cpu%d_percent", (int)i);
    strcat(header, ",run_queue,context_switches_per_s,rss_bytes,memory_used_bytes,"
                   "memory_available_bytes,disk_read_bytes_per_s,disk_write_bytes_per_s,"
                   "net_rx_bytes_per_s,net_tx_bytes_per_s\n");
    char *text = slurp(csv, NULL);
    cr_assert_not_null(text);
    cr_assert_eq(strncmp(text, header, strlen(header)), 0, "%.300s", text);
    cr_assert_eq(count_lines(text), n + 1);
    /* Each row: as many fields as the header; the cpu_percent column's mean. */
    double sum = 0;
    size_t k = 0, fields_expected = 11 + (size_t)cores;
    char *save = NULL, *row = strtok_r(text + strlen(header), "\n", &save);
    for (size_t i = 0; row; i++, row = strtok_r(NULL, "\n", &save)) {
        size_t fields = 1;
        for (const char *c = row; *c; c++) fields += *c == ',';
        cr_assert_eq(fields, fields_expected, "row %zu: %s", i, row);
        d5_sysmon_sample s;
        cr_assert_eq(d5_sysmon_sample_get(m, i, &s), D5_OK);
        double time_s, cpu;
        cr_assert_eq(sscanf(row, "%lf,%lf", &time_s, &cpu), 2, "%s", row);
        cr_assert_float_eq(time_s, s.time_s, 1e-6);
        cr_assert_float_eq(cpu, s.cpu_percent, 0.006);
        sum += s.cpu_percent;
        k++;
    }
    cr_assert_eq(k, n);
    free(text);
    json_t *doc = json_read(js);
    cr_assert_eq(json_integer_value(json_object_get(doc, "schema_version")),
                 D5_SYSMON_SCHEMA_VERSION);
    cr_assert_eq((size_t)json_integer_value(json_object_get(doc, "samples")), n);
    cr_assert_float_eq(json_real_value(json_object_get(doc, "hz")), 25, 0);
    cr_assert_eq((uint64_t)json_integer_value(json_object_get(doc, "origin_unix_ns")),
                 d5_sysmon_origin_unix_ns(m));
    json_t *mean =
        json_object_get(json_object_get(json_object_get(doc, "summary"), "cpu_percent"), "mean");
    cr_assert_float_eq(json_real_value(mean), sum / (double)n, 1e-9);
    cr_assert_not_null(json_object_get(json_object_get(doc, "summary"), "rss_bytes"));
    json_t *ov = json_object_get(doc, "overhead");
    double cpu_s = json_real_value(json_object_get(ov, "thread_cpu_s"));
    double wall = json_real_value(json_object_get(ov, "wall_s"));
    cr_assert_gt(cpu_s, 0);
    cr_assert_float_eq(json_real_value(json_object_get(ov, "fraction")), cpu_s / wall, 1e-9);
    cr_assert_not_null(json_object_get(doc, "context"));
    json_decref(doc);
    d5_sysmon_free(m);
    d5_timer_free(t);
    rmtree(dir);
    free(dir);
}

Test(sysmon, runlog_gets_mlflows_system_metrics)
{
    d5_sysmon *m;
    d5_timer *t;
    sampled(&m, &t);
    d5_runlog *log;
    cr_assert_eq(d5_runlog_create("system", &log), D5_OK);
    cr_assert_eq(d5_sysmon_to_runlog(m, log), D5_OK, "%s", d5_last_error());
    size_t n = d5_sysmon_sample_count(m), ne;
    const d5_runlog_entry *e = d5_runlog_entries(log, D5_RUNLOG_METRIC, &ne);
    const char *keys[] = {
        "system/cpu_utilization_percentage",     "system/system_memory_usage_megabytes",
        "system/system_memory_usage_percentage", "system/disk_usage_megabytes",
        "system/disk_available_megabytes",       "system/disk_usage_percentage",
        "system/network_receive_megabytes",      "system/network_transmit_megabytes",
        "system/process_memory_rss_megabytes"};
    size_t seen[9] = {0};
    for (size_t i = 0; i < ne; i++) {
        size_t k = 0;
        while (k < 9 && strcmp(e[i].key, keys[k]) != 0) k++;
        cr_assert_lt(k, 9, "unexpected metric %s", e[i].key);
        d5_sysmon_sample s;
        cr_assert_eq(d5_sysmon_sample_get(m, (size_t)e[i].step, &s), D5_OK);
        cr_assert_eq(e[i].timestamp_ms, (int64_t)(s.unix_ns / 1000000));
        if (k == 0) cr_assert_float_eq(e[i].value, s.cpu_percent, 1e-12);
        if (k == 1) cr_assert_float_eq(e[i].value, s.memory_used_bytes / 1e6, 1e-9);
        if (k == 2)
            cr_assert_float_eq(e[i].value, 100 * s.memory_used_bytes / s.memory_total_bytes, 1e-9);
        if (k == 8) cr_assert_float_eq(e[i].value, s.rss_bytes / 1e6, 1e-9);
        seen[k]++;
    }
    /* Every sample of each (the first sample's CPU figure may be missing only
     * when /proc/stat's ticks did not move, which 40 ms prevent). */
    for (size_t k = 0; k < 9; k++) cr_assert_eq(seen[k], n, "%s: %zu of %zu", keys[k], seen[k], n);
    d5_runlog_free(log);
    d5_sysmon_free(m);
    d5_timer_free(t);
}

Test(sysmon, counter_tracks_beside_the_regions)
{
    d5_sysmon *m;
    d5_timer *t;
    sampled(&m, &t);
    d5_counter_track *tr;
    size_t nt;
    cr_assert_eq(d5_sysmon_counter_tracks(m, t, &tr, &nt), D5_OK, "%s", d5_last_error());
    cr_assert_eq(nt, 10 + (size_t)d5_sysmon_cores(m));
    char *dir = tmpdir_make(), path[4200];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    cr_assert_eq(d5_report_trace_counters(t, tr, nt, path), D5_OK, "%s", d5_last_error());
    json_t *doc = json_read(path);
    json_t *ev = json_object_get(doc, "traceEvents");
    d5_timer_series ser;
    d5_timer_id work;
    cr_assert_eq(d5_timer_key(t, "work", &work), D5_OK);
    cr_assert_eq(d5_timer_series_get(t, work, D5_TIMER_CPU, &ser), D5_OK);
    double r0 = ser.start_ns[0] * 1e-3, r1 = (ser.start_ns[0] + ser.duration_ns[0]) * 1e-3;
    size_t regions = 0, cpu_total = 0, points = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i);
        const char *ph = json_string_value(json_object_get(x, "ph"));
        const char *name = json_string_value(json_object_get(x, "name"));
        if (strcmp(ph, "X") == 0 && strcmp(name, "work") == 0) regions++;
        if (strcmp(ph, "C") != 0) continue;
        points++;
        double ts = json_number_value(json_object_get(x, "ts"));
        /* Samples fall inside the region that enclosed the sampler. */
        cr_assert(ts > r0 && ts <= r1 + 1, "%s at %g us, region [%g, %g]", name, ts, r0, r1);
        json_t *v = json_object_get(json_object_get(x, "args"), "total");
        if (strcmp(name, "CPU %") == 0 && v) cpu_total++;
    }
    size_t expected = 0;
    for (size_t k = 0; k < nt; k++) expected += tr[k].n;
    cr_assert_eq(regions, 1);
    cr_assert_eq(points, expected);
    cr_assert_eq(cpu_total, tr[0].n);
    cr_assert_str_eq(tr[0].name, "CPU %");
    cr_assert_str_eq(tr[0].series, "total");
    json_decref(doc);
    /* A track without a name is refused, and nothing is written. */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/bad.json", dir);
    double one = 1;
    d5_counter_track nameless = {"", "x", 1, &one, &one};
    cr_assert_eq(d5_report_trace_counters(t, &nameless, 1, bad), D5_ERR_INVALID);
    cr_assert(strstr(d5_last_error(), "counter track 0 has no name"), "%s", d5_last_error());
    double inf = INFINITY;
    d5_counter_track timeless = {"memory", "live", 1, &inf, &one};
    cr_assert_eq(d5_report_trace_counters(t, &timeless, 1, bad), D5_ERR_INVALID);
    struct stat st;
    cr_assert_neq(stat(bad, &st), 0);
    d5_sysmon_counter_tracks_free(tr, nt);
    d5_sysmon_free(m);
    d5_timer_free(t);
    rmtree(dir);
    free(dir);
}

/* ---- d5 run and d5 bench -----------------------------------------------------------------------
 */

TestSuite(sysmon_cli, .timeout = D5_TIMEOUT(300));

Test(sysmon_cli, run_writes_the_system_report_and_a_summary_line)
{
    char *dir = tmpdir_make(), *out, *err, model[4200], csv[4200], js[4200];
    snprintf(model, sizeof model, "%s/lenet.onnx", dir);
    snprintf(csv, sizeof csv, "%s/run-system.csv", dir);
    snprintf(js, sizeof js, "%s/run-system.json", dir);
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "--batch", "2", "-o", model), 0, "%s", err);
    free(out);
    free(err);
    int rc = RUN(&out, &err, "run", model, "--time", "0.5", "--no-overhead", "--system-hz", "50",
                 "--system", csv);
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    const char *line = strstr(out, "\nsystem      CPU ");
    cr_assert_not_null(line, "%s", out);
    cr_assert(strstr(line, "peak RSS"), "%s", line);
    cr_assert(strstr(line, " J per inference") || strstr(line, "energy unavailable: "), "%s", line);
    free(out);
    free(err);
    char *text = slurp(csv, NULL);
    cr_assert_not_null(text, "no %s", csv);
    cr_assert(strncmp(text, "time_s,cpu_percent,cpu0_percent,", 32) == 0, "%.100s", text);
    /* The measurement (or five periods, 0.1 s, when it stops sooner) at 50 Hz:
     * a header and samples, at least a first and a last; a busy machine makes
     * the sampler skip periods (another test's workers on both cores). */
    cr_assert_geq(count_lines(text), 3, "%s", text);
    free(text);
    json_t *doc = json_read(js);
    json_t *work = json_object_get(json_object_get(doc, "energy"), "work");
    cr_assert_str_eq(json_string_value(json_object_get(work, "unit")), "inference");
    cr_assert_gt(json_number_value(json_object_get(work, "count")), 3);
    json_decref(doc);
    /* --system without a rate is a usage error, before any work. */
    rc = RUN(&out, &err, "run", model, "--system-hz", "0", "--system", csv);
    cr_assert_eq(rc, 2, "%s", err);
    cr_assert(strstr(err, "--system needs --system-hz above 0"), "%s", err);
    free(out);
    free(err);
    rmtree(dir);
    free(dir);
}

Test(sysmon_cli, bench_folder_holds_the_system_report)
{
    char *dir = tmpdir_make(), *out, *err, res[4200], path[4400];
    snprintf(res, sizeof res, "%s/res", dir);
    int rc = RUN(&out, &err, "bench", "--quick", "--system-hz", "20", "--out", res);
    cr_assert_eq(rc, 0, "%s\n%s", out, err);
    cr_assert(strstr(out, " system.csv system.json"), "the listing: %s", out);
    cr_assert(strstr(out, "\nsystem      CPU "), "%s", out);
    free(out);
    free(err);
    json_t *doc = json_read_in(res, "system.json");
    cr_assert_gt(json_integer_value(json_object_get(doc, "samples")), 20);
    json_decref(doc);
    doc = json_read_in(res, "trace.json");
    json_t *ev = json_object_get(doc, "traceEvents");
    size_t counters = 0, regions = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        const char *ph = json_string_value(json_object_get(json_array_get(ev, i), "ph"));
        counters += strcmp(ph, "C") == 0;
        regions += strcmp(ph, "X") == 0;
    }
    cr_assert_gt(counters, 20);
    cr_assert_gt(regions, 4);
    json_decref(doc);
    snprintf(path, sizeof path, "%s/system.csv", res);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    rmtree(dir);
    free(dir);
}

Test(sysmon, begin_creates_and_starts_or_leaves_nothing)
{
    d5_sysmon *m = (d5_sysmon *)&m; /* overwritten in every case */
    cr_assert_eq(d5_sysmon_begin(0, &m), D5_OK);
    cr_assert_null(m, "hz 0: no sampler");
    m = (d5_sysmon *)&m;
    cr_assert_eq(d5_sysmon_begin(5000, &m), D5_ERR_INVALID);
    cr_assert_null(m, "a rate out of range leaves no sampler");
    cr_assert_eq(d5_sysmon_begin(100, &m), D5_OK, "%s", d5_last_error());
    cr_assert_not_null(m);
    cr_assert_eq(d5_sysmon_start(m), D5_ERR_STATE, "begin has started it already");
    sleep_s(0.05); /* five periods */
    cr_assert_eq(d5_sysmon_stop(m), D5_OK, "%s", d5_last_error());
    cr_assert_geq(d5_sysmon_sample_count(m), 1);
    d5_sysmon_free(m);
    cr_assert_eq(d5_sysmon_begin(10, NULL), D5_ERR_INVALID);
}
