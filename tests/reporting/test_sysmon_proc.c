/* The system sampler's parsers of /proc text and the rates between two
 * readings, on fixtures whose percentages and rates are worked out by hand. */
#include "d5/d5.h"
#include "support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static d5_sysmon_counters *counters(void)
{
    d5_sysmon_counters *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    return c;
}

/* ---- Parsers and rates ------------------------------------------------------------------- */

static const char stat_a[] = "cpu  100 0 50 800 50 0 0 0 7 0\n"
                             "cpu0 60 0 20 400 20 0 0 0 7 0\n"
                             "cpu1 40 0 30 400 30 0 0 0 0 0\n"
                             "cpu3 0 0 0 0 0 0 0 0 0 0\n"
                             "intr 12345 0 0\n"
                             "ctxt 1000\n"
                             "btime 1700000000\n"
                             "processes 4000\n"
                             "procs_running 3\n"
                             "procs_blocked 0\n";
static const char stat_b[] = "cpu  300 0 100 1300 100 0 0 0 9 0\n"
                             "cpu0 160 0 40 600 40 0 0 0 9 0\n"
                             "cpu1 140 0 60 700 60 0 0 0 0 0\n"
                             "cpu3 0 0 0 0 0 0 0 0 0 0\n"
                             "ctxt 3000\n"
                             "procs_running 5\n";

Test(sysmon, stat_gives_cpu_percentages_and_context_switches)
{
    d5_sysmon_counters *a = counters(), *b = counters();
    cr_assert_eq(d5_sysmon_parse_stat(stat_a, a), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_sysmon_parse_stat(stat_b, b), D5_OK, "%s", d5_last_error());
    /* busy = all but idle and iowait; guest (7, 9) is inside user already. */
    cr_assert_eq(a->cpu.total, 1000);
    cr_assert_eq(a->cpu.busy, 150);
    cr_assert_eq(a->ncpu, 4);
    cr_assert_eq(a->core[2].total, 0, "cpu2 is not listed");
    cr_assert_eq(a->context_switches, 1000);
    cr_assert_eq(b->procs_running, 5);
    a->mono_ns = 1000000000;
    b->mono_ns = 1500000000;
    d5_sysmon_sample s;
    double core[4];
    d5_sysmon_rates(a, b, &s, core);
    /* (400 - 150) / (1800 - 1000) */
    cr_assert_float_eq(s.cpu_percent, 31.25, 1e-12);
    /* cpu0: busy 80 -> 200, total 500 -> 840; cpu1: 70 -> 200, 500 -> 960 */
    cr_assert_float_eq(core[0], 100.0 * 120 / 340, 1e-12);
    cr_assert_float_eq(core[1], 100.0 * 130 / 460, 1e-12);
    cr_assert(isnan(core[2]), "no such core: NaN, got %g", core[2]);
    cr_assert(isnan(core[3]), "no ticks in the interval: NaN, got %g", core[3]);
    cr_assert_float_eq(s.context_switches_per_s, 2000 / 0.5, 1e-9);
    cr_assert_float_eq(s.run_queue, 5, 0);
    cr_assert_float_eq(s.interval_s, 0.5, 1e-12);
    cr_assert(isnan(s.memory_used_bytes), "no meminfo in either reading");
    free(a);
    free(b);
}

/* iowait went back by 60 ticks while 50 were busy and 50 idle: the busy
 * share is of the ticks that advanced, 50%, not NaN and not more. */
Test(sysmon, iowait_going_back_leaves_the_busy_share)
{
    d5_sysmon_counters *a = counters(), *b = counters();
    cr_assert_eq(
        d5_sysmon_parse_stat("cpu  100 0 0 800 100 0 0 0 0 0\nctxt 1\nprocs_running 1\n", a), D5_OK,
        "%s", d5_last_error());
    cr_assert_eq(
        d5_sysmon_parse_stat("cpu  150 0 0 850 40 0 0 0 0 0\nctxt 2\nprocs_running 1\n", b), D5_OK,
        "%s", d5_last_error());
    cr_assert_eq(a->cpu.idle, 800);
    a->mono_ns = 1000000000;
    b->mono_ns = 1100000000;
    d5_sysmon_sample s;
    d5_sysmon_rates(a, b, &s, NULL);
    cr_assert_float_eq(s.cpu_percent, 50.0, 1e-12);
    free(a);
    free(b);
}

Test(sysmon, malformed_stat_is_a_format_error_that_changes_nothing)
{
    d5_sysmon_counters *c = counters(), *before = counters();
    c->ncpu = 7;
    memcpy(before, c, sizeof *c);
    cr_assert_eq(d5_sysmon_parse_stat("cpu  1 2 3 4\nprocs_running 1\n", c), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "/proc/stat: no 'ctxt' line"), "%s", d5_last_error());
    cr_assert_eq(d5_sysmon_parse_stat("cpu  1 2 x 4\nctxt 1\nprocs_running 1\n", c), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "line 1"), "%s", d5_last_error());
    cr_assert_eq(d5_sysmon_parse_stat("cpu0 1 2\ncpu  1 2 3 4\nctxt 1\nprocs_running 1\n", c),
                 D5_ERR_FORMAT);
    cr_assert_eq(memcmp(c, before, sizeof *c), 0, "outputs untouched on failure");
    free(c);
    free(before);
}

Test(sysmon, meminfo_used_memory_is_counted_as_mlflow_counts_it)
{
    const char *text = "MemTotal:       16000000 kB\n"
                       "MemFree:         2000000 kB\n"
                       "MemAvailable:    9000000 kB\n"
                       "Buffers:          500000 kB\n"
                       "Cached:          5000000 kB\n"
                       "SwapCached:            0 kB\n"
                       "SReclaimable:     400000 kB\n"
                       "HugePages_Total:       0\n";
    d5_sysmon_counters *c = counters();
    cr_assert_eq(d5_sysmon_parse_meminfo(text, c), D5_OK, "%s", d5_last_error());
    cr_assert_eq(c->mem_total, 16000000ull * 1024);
    cr_assert_eq(c->mem_available, 9000000ull * 1024);
    d5_sysmon_sample s;
    d5_sysmon_rates(c, c, &s, NULL);
    double used = (16000000.0 - 2000000 - 500000 - 5000000 - 400000) * 1024;
    cr_assert_float_eq(s.memory_used_bytes, used, 0);
    cr_assert_float_eq(s.memory_available_bytes, 9000000.0 * 1024, 0);
    cr_assert(isnan(s.cpu_percent));
    /* A missing MemAvailable says which kernels lack it. */
    cr_assert_eq(d5_sysmon_parse_meminfo("MemTotal: 1 kB\nMemFree: 1 kB\n", c), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "no 'MemAvailable:' line (kernels before 3.14"), "%s",
              d5_last_error());
    cr_assert_eq(d5_sysmon_parse_meminfo("MemTotal: 12 MB\n", c), D5_ERR_FORMAT);
    free(c);
}

/* sectors read are field 6, written field 10 (major = field 1). */
static const char disks_a[] = "   7       0 loop0 10 0 1000 0 0 0 0 0 0 0 0\n"
                              "   8       0 sda 100 0 2000 0 50 0 4000 0 0 0 0 0 0 0 0 0 0\n"
                              "   8       1 sda1 90 0 1900 0 45 0 3900 0 0 0 0\n"
                              " 259       0 nvme0n1 1 0 300 0 1 0 500 0 0 0 0\n"
                              " 259       1 nvme0n1p1 1 0 300 0 1 0 500 0 0 0 0\n"
                              " 253       0 dm-0 5 0 999 0 5 0 999 0 0 0 0\n"
                              " 179       0 mmcblk0 1 0 10 0 1 0 20 0 0 0 0\n"
                              " 179       1 mmcblk0p1 1 0 10 0 1 0 20 0 0 0 0\n"
                              "   9       0 md0 1 0 77 0 1 0 77 0 0 0 0\n"
                              " 252       0 zram0 1 0 88 0 1 0 88 0 0 0 0\n";
static const char disks_b[] = "   7       0 loop0 10 0 5000 0 0 0 0 0 0 0 0\n"
                              "   8       0 sda 100 0 2200 0 50 0 4400 0 0 0 0 0 0 0 0 0 0\n"
                              "   8       1 sda1 90 0 2100 0 45 0 4300 0 0 0 0\n"
                              " 259       0 nvme0n1 1 0 700 0 1 0 900 0 0 0 0\n"
                              " 259       1 nvme0n1p1 1 0 700 0 1 0 900 0 0 0 0\n"
                              " 253       0 dm-0 5 0 9999 0 5 0 9999 0 0 0 0\n"
                              " 179       0 mmcblk0 1 0 10 0 1 0 20 0 0 0 0\n"
                              " 179       1 mmcblk0p1 1 0 10 0 1 0 20 0 0 0 0\n"
                              "   9       0 md0 1 0 77 0 1 0 77 0 0 0 0\n"
                              " 252       0 zram0 1 0 88 0 1 0 88 0 0 0 0\n";

Test(sysmon, diskstats_count_whole_devices_only)
{
    d5_sysmon_counters *a = counters(), *b = counters();
    cr_assert_eq(d5_sysmon_parse_diskstats(disks_a, NULL, 0, a), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_sysmon_parse_diskstats(disks_b, NULL, 0, b), D5_OK, "%s", d5_last_error());
    /* sda, nvme0n1 and mmcblk0: not the partitions, not loop, dm, md or zram. */
    cr_assert_eq(a->disks, 3);
    cr_assert_eq(a->disk_read_bytes, (2000ull + 300 + 10) * 512);
    cr_assert_eq(a->disk_write_bytes, (4000ull + 500 + 20) * 512);
    a->mono_ns = 0;
    b->mono_ns = 2000000000;
    d5_sysmon_sample s;
    d5_sysmon_rates(a, b, &s, NULL);
    cr_assert_float_eq(s.disk_read_bytes_per_s, (200.0 + 400) * 512 / 2, 1e-9);
    cr_assert_float_eq(s.disk_write_bytes_per_s, (400.0 + 400) * 512 / 2, 1e-9);
    /* With the list of /sys/block: only the devices it names. */
    const char *whole[] = {"sda", "loop0"};
    cr_assert_eq(d5_sysmon_parse_diskstats(disks_b, whole, 2, b), D5_OK);
    cr_assert_eq(b->disks, 1);
    cr_assert_eq(b->disk_read_bytes, 2200ull * 512);
    cr_assert_eq(d5_sysmon_parse_diskstats("   8 0 sda 1 2\n", NULL, 0, b), D5_ERR_FORMAT);
    cr_assert(strstr(d5_last_error(), "/proc/diskstats line 1"), "%s", d5_last_error());
    free(a);
    free(b);
}

Test(sysmon, net_dev_leaves_out_lo)
{
    const char *a_text =
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
        "errs drop fifo colls carrier compressed\n"
        "    lo: 9999999 10 0 0 0 0 0 0 9999999 10 0 0 0 0 0 0\n"
        "  eth0: 1000 8 0 0 0 0 0 0 500 5 0 0 0 0 0 0\n"
        "wlan0:123456789012 8 0 0 0 0 0 0 20 5 0 0 0 0 0 0\n";
    const char *b_text =
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets "
        "errs drop fifo colls carrier compressed\n"
        "    lo: 99999999 10 0 0 0 0 0 0 99999999 10 0 0 0 0 0 0\n"
        "  eth0: 5000 8 0 0 0 0 0 0 900 5 0 0 0 0 0 0\n"
        "wlan0:123456789012 8 0 0 0 0 0 0 120 5 0 0 0 0 0 0\n";
    d5_sysmon_counters *a = counters(), *b = counters();
    cr_assert_eq(d5_sysmon_parse_net_dev(a_text, a), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_sysmon_parse_net_dev(b_text, b), D5_OK, "%s", d5_last_error());
    cr_assert_eq(a->interfaces, 2);
    cr_assert_eq(a->net_rx_bytes, 1000ull + 123456789012ull);
    cr_assert_eq(a->net_tx_bytes, 520);
    a->mono_ns = 0;
    b->mono_ns = 250000000;
    d5_sysmon_sample s;
    d5_sysmon_rates(a, b, &s, NULL);
    cr_assert_float_eq(s.net_rx_bytes_per_s, 4000 / 0.25, 1e-9);
    cr_assert_float_eq(s.net_tx_bytes_per_s, 500 / 0.25, 1e-9);
    /* An interface gone between two readings: no rate, not a negative one. */
    d5_sysmon_rates(b, a, &s, NULL);
    cr_assert(isnan(s.net_rx_bytes_per_s));
    cr_assert_eq(d5_sysmon_parse_net_dev("h|\nh|\n  eth0: 1 2 3\n", a), D5_ERR_FORMAT);
    free(a);
    free(b);
}

Test(sysmon, statm_resident_pages)
{
    d5_sysmon_counters *c = counters();
    cr_assert_eq(d5_sysmon_parse_statm("52000 2500 600 300 0 9000 0\n", 4096, c), D5_OK);
    cr_assert_eq(c->rss_bytes, 2500ull * 4096);
    cr_assert(c->have & D5_SYSMON_HAVE_RSS);
    cr_assert_eq(d5_sysmon_parse_statm("52000\n", 4096, c), D5_ERR_FORMAT);
    free(c);
}

/* ---- The sampler --------------------------------------------------------------------------- */
