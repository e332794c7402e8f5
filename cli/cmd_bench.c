/* d5 bench: the default suite. Everything lands in a results folder that
 * appears whole when the run is done. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct bench_cfg {
    const char *out;
    const char *json;
    double time_s;
    double machine_time_s;
    int quick;
} bench_cfg;

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Writes the summary text to stdout and to DIR/summary.txt. */
static d5_status summary(const char *dir, const bench_cfg *cfg, const cli_spec *spec,
                         const d5_machine_info *m, const d5_machine_peaks *p, const d5_results *r,
                         d5_timer *suite)
{
    char *path = join(dir, "summary.txt");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) {
        d5_status s = d5_error(D5_ERR_IO, "cannot write '%s': %s", path ? path : "summary.txt",
                               strerror(errno));
        free(path);
        return s;
    }
    FILE *outs[2] = {stdout, f};
    d5_status s = D5_OK;
    for (int i = 0; i < 2 && s == D5_OK; i++) {
        cli_echo(outs[i], spec);
        fprintf(outs[i], "\nmachine\n");
        s = d5_machine_print(outs[i], m, p);
        fprintf(outs[i], "\ntimer overhead (ns per start+end pair or per clock read; %s)\n",
                cfg->quick ? "quick run" : "full run");
        if (s == D5_OK) s = d5_results_print(outs[i], r);
        fprintf(outs[i], "\nsuite sections\n");
        if (s == D5_OK) s = d5_report_table(outs[i], suite);
    }
    if (fclose(f) != 0 && s == D5_OK) s = d5_error(D5_ERR_IO, "cannot write '%s'", path);
    free(path);
    return s;
}

static d5_status write_folder(const char *dir, const bench_cfg *cfg, const cli_spec *spec,
                              const d5_machine_info *m, const d5_machine_peaks *p,
                              const d5_results *r, d5_timer *suite)
{
    struct {
        const char *name;
        int kind;
    } files[] = {{"results.json", 0}, {"results.csv", 1}, {"samples.csv", 2},
                 {"machine.json", 3}, {"trace.json", 4},  {"sections.csv", 5}};
    d5_status s = D5_OK;
    for (size_t i = 0; s == D5_OK && i < sizeof files / sizeof files[0]; i++) {
        char *path = join(dir, files[i].name);
        if (!path) return d5_error(D5_ERR_NOMEM, "out of memory");
        switch (files[i].kind) {
        case 0:
            s = d5_results_write_json(r, path);
            break;
        case 1:
            s = d5_results_write_csv(r, path);
            break;
        case 2:
            s = d5_results_write_samples_csv(r, path);
            break;
        case 3:
            s = d5_machine_write_json(m, p, path);
            break;
        case 4:
            s = d5_report_trace(suite, path);
            break;
        default:
            s = d5_report_csv(suite, path);
            break;
        }
        free(path);
    }
    if (s == D5_OK) s = summary(dir, cfg, spec, m, p, r, suite);
    if (s == D5_OK && cfg->json) s = d5_results_write_json(r, cfg->json);
    return s;
}

static void remove_partial(const char *dir)
{
    static const char *const names[] = {"results.json", "results.csv", "samples.csv",
                                        "machine.json", "trace.json",  "sections.csv",
                                        "summary.txt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *p = join(dir, names[i]);
        if (p) unlink(p);
        free(p);
    }
    rmdir(dir);
}

static int run(const bench_cfg *cfg, const cli_spec *spec, const char *out)
{
    int steps = 3;
    d5_timer *suite;
    d5_timer_params tp = d5_timer_default_params();
    tp.name = "d5 bench";
    d5_status s = d5_timer_create(&tp, &suite);
    if (s != D5_OK) return cli_fail("bench", s);

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

    char partial[4096];
    snprintf(partial, sizeof partial, "%s.partial-%ld", out, (long)getpid());
    if (s == D5_OK) {
        cli_progress(3, steps, "writing %s", out);
        if (mkdir(partial, 0777) != 0)
            s = d5_error(D5_ERR_IO, "cannot create '%s': %s", partial, strerror(errno));
        else if ((s = write_folder(partial, cfg, spec, &m, &peaks, r, suite)) != D5_OK)
            remove_partial(partial);
        else if (rename(partial, out) != 0) {
            s = d5_error(D5_ERR_IO, "cannot rename '%s' to '%s': %s", partial, out,
                         strerror(errno));
            remove_partial(partial);
        }
    }
    d5_results_free(r);
    d5_timer_free(suite);
    if (s != D5_OK) return cli_fail("bench", s);
    printf("\nresults: %s/ (summary.txt, results.json, results.csv, samples.csv, machine.json, "
           "trace.json, sections.csv)\n",
           out);
    return D5_EXIT_OK;
}

int cmd_bench(int argc, char **argv)
{
    bench_cfg cfg = {NULL, NULL, 2.0, 1.0, 0};
    const cli_opt opts[] = {
        {"out", CLI_STRING, &cfg.out, "DIR",
         "results folder to create (default d5-results/bench-DATE-TIME)", 0, 0},
        {"json", CLI_STRING, &cfg.json, "FILE", "also write the results JSON to FILE", 0, 0},
        {"time", CLI_DOUBLE, &cfg.time_s, "S", "time budget per benchmark in seconds (default 2)",
         0.01, 3600},
        {"machine-time", CLI_DOUBLE, &cfg.machine_time_s, "S",
         "time budget per machine peak (default 1)", 0.01, 600},
        {"quick", CLI_FLAG, &cfg.quick, NULL, "short budgets (0.3 s each) for a smoke run", 0, 0},
    };
    const cli_spec spec = {
        "bench", "[--out DIR] [--json FILE] [--time S] [--machine-time S] [--quick]",
        "Runs d5's default suite: the machine's description and measured peaks, then the\n"
        "cost of the region timer (start+end pairs on the TSC and monotonic clocks, by name\n"
        "and by id) and of raw clock reads. Every benchmark warms up, then repeats until the\n"
        "median's 95% confidence interval is within 2% of it or its time budget ends.\n\n"
        "The results folder holds summary.txt (what is printed), results.json (Google\n"
        "Benchmark's JSON layout with a context block and d5's statistics), results.csv,\n"
        "samples.csv (every sample), machine.json, trace.json (Chrome trace events of the\n"
        "suite's sections: open in ui.perfetto.dev) and sections.csv. It appears only when\n"
        "complete; an existing folder is never overwritten.",
        opts, sizeof opts / sizeof opts[0]};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (cfg.quick) cfg.time_s = cfg.machine_time_s = 0.3;

    char def[256];
    if (!cfg.out) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(def, sizeof def, "d5-results/bench-%s", stamp);
        cfg.out = def;
        if (mkdir("d5-results", 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "d5 bench: cannot create 'd5-results': %s\n", strerror(errno));
            return D5_EXIT_INPUT;
        }
    }
    struct stat st;
    if (stat(cfg.out, &st) == 0) {
        fprintf(stderr, "d5 bench: results folder '%s' already exists; choose another --out\n",
                cfg.out);
        return D5_EXIT_USAGE;
    }
    return run(&cfg, &spec, cfg.out);
}
