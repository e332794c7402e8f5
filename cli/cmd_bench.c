/* d5 bench: the default suite. Everything lands in a results folder that
 * appears whole when the run is done. */
#define _GNU_SOURCE
#include "cli.h"
#include "output_options.h"
#include "results_folder.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct bench_cfg {
    cli_outputs out; /* --out is the results folder */
    double time_s;
    double machine_time_s;
    int quick;
    int threads;
    double system_hz; /* the system sampler's rate; 0: off */
} bench_cfg;

/* Everything one output file needs. */
typedef struct bench_out {
    const bench_cfg *cfg;
    const cli_spec *spec;
    const d5_machine_info *m;
    const d5_machine_peaks *p;
    const d5_machine_peaks *after; /* the peaks measured again after the suite */
    cli_peak_choice peak;          /* the one %peak and the roofline use */
    const d5_results *r;
    d5_timer *suite;
    d5_sysmon *sys;               /* the stopped system sampler; NULL with --system-hz 0 */
    const d5_memory_profile *mem; /* one CIFAR ResNet-20 inference's memory report */
} bench_out;

/* The peak moved when the two medians differ by more than 5% and their
 * confidence intervals do not overlap. */
static int peak_moved(const d5_machine_peaks *a, const d5_machine_peaks *b)
{
    const d5_stats *x = &a->fp32_all, *y = &b->fp32_all;
    int apart = x->ci_high < y->ci_low || y->ci_high < x->ci_low;
    return apart && fabs(y->median / x->median - 1) > 0.05;
}

/* The human-readable summary; also what the run prints. */
static d5_status write_summary(const bench_out *o, FILE *f)
{
    cli_echo(f, o->spec);
    fprintf(f, "\nmachine\n");
    d5_status s = d5_machine_print(f, o->m, o->p);
    fprintf(f,
            "\nbenchmarks (%s): timer start+end pairs and clock reads; operators on "
            "DeepBench sizes (pct_peak: of the all-core FMA peak chosen below)\n",
            o->cfg->quick ? "quick run" : "full run");
    if (s == D5_OK) s = d5_results_print(f, o->r);
    fprintf(f,
            "\npeak after the suite: %.1f GFLOP/s [%.1f, %.1f] all cores (before: %.1f "
            "[%.1f, %.1f]), %+.1f%%%s\n",
            o->after->fp32_all.median, o->after->fp32_all.ci_low, o->after->fp32_all.ci_high,
            o->p->fp32_all.median, o->p->fp32_all.ci_low, o->p->fp32_all.ci_high,
            100 * (o->after->fp32_all.median / o->p->fp32_all.median - 1),
            peak_moved(o->p, o->after) ? ": MOVED, so %peak figures are uncertain" : ": steady");
    if (o->p->contention.contended)
        fprintf(f, "the first peak was measured under contention (%s)\n", o->p->contention.reason);
    fprintf(f, "%%peak and the roofline use %.1f GFLOP/s, the peak measured %s the suite (%s)\n",
            o->peak.gflops, o->peak.which, o->peak.why);
    fprintf(f, "\nsuite sections\n");
    if (s == D5_OK) s = d5_report_table(f, o->suite);
    if (o->sys) {
        char line[1024];
        d5_sysmon_summary_line(o->sys, line, sizeof line);
        fprintf(f, "\nsystem      %s\n", line);
    }
    return s;
}

static d5_status out_summary(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    FILE *f = fopen(path, "w");
    if (!f) return d5_error(D5_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    d5_status s = write_summary(o, f);
    if (fclose(f) != 0 && s == D5_OK) s = d5_error(D5_ERR_IO, "cannot write '%s'", path);
    return s;
}
static d5_status out_results_json(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return d5_results_write_json(o->r, path);
}
static d5_status out_results_csv(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return d5_results_write_csv(o->r, path);
}
static d5_status out_samples_csv(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return d5_results_write_samples_csv(o->r, path);
}
static d5_status out_machine_json(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return d5_machine_write_json(o->m, o->p, path);
}
/* The suite's sections, and the system sampler's series as counter tracks. */
static d5_status out_trace(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    if (!o->sys) return d5_report_trace(o->suite, path);
    d5_counter_track *tracks = NULL;
    size_t n = 0;
    d5_status s = d5_sysmon_counter_tracks(o->sys, o->suite, &tracks, &n);
    if (s == D5_OK) s = d5_report_trace_counters(o->suite, tracks, n, path);
    d5_sysmon_counter_tracks_free(tracks, n);
    return s;
}
static d5_status out_sections_csv(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return d5_report_csv(o->suite, path);
}
static d5_status out_history(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return d5_report_jsonl(o->suite, path);
}
/* The system report; nothing with --system-hz 0. */
static d5_status out_system_csv(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return o->sys ? d5_sysmon_write_csv(o->sys, path) : D5_OK;
}
static d5_status out_system_json(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return o->sys ? d5_sysmon_write_json(o->sys, path) : D5_OK;
}

/* The memory report of one ResNet-20 inference (the network suite's). */
static d5_status out_memory_json(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return o->mem->nrows > 0 ? d5_memory_profile_write_json(o->mem, path) : D5_OK;
}
static d5_status out_memory_timeline(const void *ctx, const char *path)
{
    const bench_out *o = ctx;
    return o->mem->nrows > 0 ? d5_memory_profile_write_timeline(o->mem, path) : D5_OK;
}

/* The files of a results folder, in the order they are written. */
static const cli_folder_file outputs[] = {
    {"summary.txt", out_summary},       {"results.json", out_results_json},
    {"results.csv", out_results_csv},   {"samples.csv", out_samples_csv},
    {"machine.json", out_machine_json}, {"trace.json", out_trace},
    {"sections.csv", out_sections_csv}, {"history.jsonl", out_history},
    {"system.csv", out_system_csv},     {"system.json", out_system_json},
    {"memory.json", out_memory_json},   {"memory_timeline.csv", out_memory_timeline},
};
#define NOUTPUTS (sizeof outputs / sizeof outputs[0])

/* The run log's entries of the suite (the reporters add every option, the
 * build, the host and the machine before, every benchmark's median and CI
 * after): the suite's sections as metrics time/<section>. */
static d5_status log_before(void *user, d5_runlog *log)
{
    const bench_out *o = user;
    d5_status s = d5_runlog_param(log, "suite", "d5 bench");
    if (s == D5_OK)
        s = d5_runlog_tag(log, "d5.cpu_clock", d5_timer_clock_name(o->suite, D5_TIMER_CPU));
    if (s == D5_OK) s = d5_runlog_add_timer(log, o->suite, "time/");
    return s;
}

/* Then the system sampler's series (system/...). */
static d5_status log_after(void *user, d5_runlog *log)
{
    const bench_out *o = user;
    return o->sys ? d5_sysmon_to_runlog(o->sys, log) : D5_OK;
}

/* The copies outside the folder (--json, --csv, --mlflow, --wandb), written once the
 * folder is in place: a failure here reports the path and leaves the folder alone. */
static d5_status write_extras(const bench_out *o)
{
    cli_outputs_params p = {
        .spec = o->spec, .before = log_before, .after = log_after, .user = (void *)o};
    cli_outputs extras = o->cfg->out;
    extras.out = NULL; /* the folder, written already */
    return cli_outputs_write(&extras, &p, o->r);
}

/* The system sampler over the whole suite; without it (--system-hz 0, or
 * one that cannot start: said on standard error) the suite runs alone. */
static d5_sysmon *system_start(double hz)
{
    d5_sysmon *m = NULL;
    if (d5_sysmon_begin(hz, &m) != D5_OK)
        fprintf(stderr, "d5 bench: no system report: %s\n", d5_last_error());
    return m;
}

static int run(const bench_cfg *cfg, const cli_spec *spec, const char *out)
{
    int steps = 7;
    d5_timer *suite;
    d5_timer_params tp = d5_timer_default_params();
    tp.name = "d5 bench";
    d5_status s = d5_timer_create(&tp, &suite);
    if (s != D5_OK) return cli_fail("bench", s);
    d5_sysmon *sys = system_start(cfg->system_hz);

    d5_machine_info m;
    d5_machine_peaks peaks;
    d5_results *r = NULL;
    cli_progress(1, steps, "machine: description and peaks (about %.0f s)",
                 3 * cfg->machine_time_s);
    s = d5_timer_start(suite, "machine");
    if (s == D5_OK) s = d5_machine_query(&m);
    d5_machine_measure_params mp = d5_machine_measure_default_params();
    mp.max_time_s = cfg->machine_time_s;
    if (s == D5_OK) s = d5_machine_measure(&mp, &peaks);
    if (s == D5_OK) s = d5_timer_end(suite, "machine");

    if (s == D5_OK) {
        cli_progress(2, steps, "timer overhead: start+end pairs and clock reads");
        s = d5_results_create(&r);
    }
    d5_measure_params bp = d5_measure_default_params();
    bp.max_time_s = cfg->time_s;
    if (s == D5_OK) s = d5_results_context(r, "suite", "d5 bench");
    if (s == D5_OK) s = d5_timer_start(suite, "timer-overhead");
    if (s == D5_OK) s = d5_suite_timer_overhead(r, &bp);
    if (s == D5_OK) s = d5_timer_end(suite, "timer-overhead");
    if (s == D5_OK) {
        cli_progress(3, steps, "operators: DeepBench GEMM and convolution on blas, dnnl, cuda");
        s = d5_timer_start(suite, "operators");
    }
    cli_rates rates;
    rates.n = 0;
    if (s == D5_OK) s = d5_suite_operators(r, cfg->time_s, &rates);
    if (s == D5_OK) s = d5_timer_end(suite, "operators");
    if (s == D5_OK) {
        cli_progress(4, steps, "networks: LeNet and CIFAR ResNet-20 inference, FrameworkOverhead");
        s = d5_timer_start(suite, "networks");
    }
    d5_memory_profile mem;
    memset(&mem, 0, sizeof mem);
    if (s == D5_OK) s = d5_suite_network(r, cfg->time_s, &mem);
    if (s == D5_OK) s = d5_timer_end(suite, "networks");
    if (s == D5_OK) {
        cli_progress(5, steps, "training: LeNet-5 on MNIST, %d batches", cfg->quick ? 50 : 200);
        s = d5_timer_start(suite, "training");
    }
    if (s == D5_OK) s = d5_suite_training(r, cfg->quick ? 50 : 200);
    if (s == D5_OK) s = d5_timer_end(suite, "training");
    /* The peak again: if it moved, the machine changed under the suite. */
    d5_machine_peaks after;
    memset(&after, 0, sizeof after);
    if (s == D5_OK) {
        cli_progress(6, steps, "machine: the peaks again, to see whether they moved");
        s = d5_timer_start(suite, "machine-after");
    }
    if (s == D5_OK) s = d5_machine_measure(&mp, &after);
    if (s == D5_OK) s = d5_timer_end(suite, "machine-after");
    /* %peak against the higher of the two peaks, now that both are known. */
    cli_peak_choice peak = cli_bench_peak(&peaks, &after);
    if (s == D5_OK) s = cli_rates_pct_peak(r, &rates, peak.gflops);
    /* A sampler stopped early (out of memory) keeps the samples it took. */
    if (sys && d5_sysmon_stop(sys) != D5_OK)
        fprintf(stderr, "d5 bench: the system sampler stopped early: %s\n", d5_last_error());
    d5_contention whole;
    cli_contention_end("bench", &whole);
    if (s == D5_OK) s = cli_contention_context(r);
    if (s == D5_OK) s = d5_results_context_number(r, "fp32_peak_gflops", peaks.fp32_all.median);
    if (s == D5_OK)
        s = d5_results_context_number(r, "fp32_peak_after_gflops", after.fp32_all.median);
    if (s == D5_OK)
        s = d5_results_context(r, "fp32_peak_moved", peak_moved(&peaks, &after) ? "yes" : "no");
    if (s == D5_OK)
        s = d5_results_context(r, "fp32_peak_contended", peaks.contention.contended ? "yes" : "no");
    if (s == D5_OK) s = d5_results_context_number(r, "fp32_peak_used_gflops", peak.gflops);
    if (s == D5_OK) s = d5_results_context(r, "fp32_peak_used", peak.which);
    if (s == D5_OK) s = d5_results_context(r, "fp32_peak_used_why", peak.why);

    bench_out o = {cfg, spec, &m, &peaks, &after, peak, r, suite, sys, &mem};
    if (s == D5_OK) {
        cli_progress(7, steps, "writing %s", out);
        s = cli_folder_write(out, outputs, NOUTPUTS, &o);
    }
    /* The folder is complete and in place: nothing below removes it. */
    int folder_written = s == D5_OK;
    if (s == D5_OK) s = write_extras(&o);
    if (s == D5_OK) s = write_summary(&o, stdout);
    d5_results_free(r);
    d5_timer_free(suite);
    d5_sysmon_free(sys);
    d5_memory_profile_free(&mem);
    if (s != D5_OK) {
        int code = cli_fail("bench", s);
        if (folder_written) fprintf(stderr, "d5 bench: the results folder %s is complete\n", out);
        return code;
    }
    printf("\nresults in %s/:", out);
    cli_folder_print(stdout, out, outputs, NOUTPUTS);
    printf("\n");
    return D5_EXIT_OK;
}

int cmd_bench(int argc, char **argv)
{
    bench_cfg cfg = {{NULL, NULL, NULL, NULL, NULL}, 2.0, 1.0, 0, 0, 10};
    const cli_opt opts[] = {
        CLI_OUTPUT_ALL(&cfg.out, "results folder to create (default d5-results/bench-DATE-TIME)"),
        {"time", CLI_DOUBLE, &cfg.time_s, "S", "time budget per benchmark in seconds (default 2)",
         0.01, 3600},
        {"machine-time", CLI_DOUBLE, &cfg.machine_time_s, "S",
         "time budget per machine peak (default 1)", 0.01, 600},
        {"quick", CLI_FLAG, &cfg.quick, NULL, "short budgets (0.3 s each) for a smoke run", 0, 0},
        {"threads", CLI_INT, &cfg.threads, "N", CLI_THREADS_HELP, 0, 4096},
        {"system-hz", CLI_DOUBLE, &cfg.system_hz, "HZ",
         "samples per second of the system sampler over the suite (default 10; 0: off)", 0, 1000},
    };
    const cli_spec spec = {CLI_SPEC(
        "bench",
        "[--out DIR] [--json FILE] [--csv FILE] [--mlflow DIR] [--wandb DIR] [--time S]\n"
        "       [--machine-time S] [--quick] [--threads N] [--system-hz HZ]",
        "Runs d5's default suite: the machine's description and measured peaks, then the\n"
        "cost of the region timer (start+end pairs on the TSC and monotonic clocks, by name\n"
        "and by id) and of raw clock reads, a DeepBench subset of GEMM and convolution on\n"
        "every available fast backend, and the inference of LeNet (batch 64) and the CIFAR\n"
        "ResNet-20 (batch 32) with FrameworkOverhead (the graph against the sum of its nodes\n"
        "timed alone), and 200 training steps of LeNet-5 on MNIST with the speed report\n"
        "(batches/s, samples/s, dataloader samples/s). Every benchmark warms up, then\n"
        "repeats until the\n"
        "median's 95% confidence interval is within 2% of it or its time budget ends.\n\n"
        "The results folder holds summary.txt (what is printed), results.json (Google\n"
        "Benchmark's JSON layout with a context block and d5's statistics), results.csv,\n"
        "samples.csv (every sample), machine.json, trace.json (Chrome trace events of the\n"
        "suite's sections: open in ui.perfetto.dev), sections.csv and history.jsonl (replay\n"
        "it into Weights & Biases with scripts/wandb_replay.py). The folder appears only\n"
        "when complete; an existing folder is never overwritten.\n\n"
        "A sampler records the machine while the suite runs (--system-hz, default 10 per\n"
        "second): system.csv (CPU per core, run queue, context switches, memory, disk and\n"
        "network traffic, GPUs) and system.json (means and peaks, energy where RAPL or NVML\n"
        "measure it, the sampler's own CPU time) in the folder, its series as counter\n"
        "tracks in trace.json. One CIFAR ResNet-20 inference is recorded node by node:\n"
        "memory.json (planned and heap bytes per operator, the peak and where) and\n"
        "memory_timeline.csv. 'd5 report DIR' plots the folder; 'd5 compare A B' compares\n"
        "two of them.",
        opts)};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (cfg.quick) cfg.time_s = cfg.machine_time_s = 0.3;

    char def[256];
    if (!cfg.out.out) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(def, sizeof def, "d5-results/bench-%s", stamp);
        cfg.out.out = def;
        if (mkdir("d5-results", 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "d5 bench: cannot create 'd5-results': %s\n", strerror(errno));
            return D5_EXIT_INPUT;
        }
    }
    struct stat st;
    if (stat(cfg.out.out, &st) == 0) {
        fprintf(stderr, "d5 bench: results folder '%s' already exists; choose another --out\n",
                cfg.out.out);
        return D5_EXIT_USAGE;
    }
    /* Every output path is checked before the work starts. */
    if (!cli_outputs_check("bench", &cfg.out)) return D5_EXIT_INPUT;
    if ((rc = cli_threads_apply("bench", cfg.threads)) >= 0) return rc;
    return run(&cfg, &spec, cfg.out.out);
}
