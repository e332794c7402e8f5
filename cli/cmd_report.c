/* d5 report: plots of a results folder, drawn by gnuplot, in a report folder
 * that appears whole: index.html (self-contained), and one SVG and one PNG
 * per plot. Each plot is drawn when its inputs are in the folder; the page
 * says why the others are absent. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The plots, in the order of the page: one row each. */
static const struct {
    const char *name, *title;
    d5_status (*build)(const report_src *src, report_plot *p);
} builders[] = {
    {"operator_timings", "Operator timings per backend", report_violins},
    {"roofline", "Roofline", report_roofline},
    {"training_by_step", "Training: loss and accuracy against step", report_train_step},
    {"training_by_time", "Training: loss and accuracy against time", report_train_time},
    {"scaling", "Scaling efficiency against ranks", report_scaling},
    {"memory_timeline", "Memory timeline", report_memory},
    {"system", "System utilisation", report_system},
};
#define NPLOTS (sizeof builders / sizeof builders[0])

typedef struct report_cfg {
    const char *dir, *out, *format, *title;
    int svg, png;
} report_cfg;

/* "svg", "png", "svg,png" (any order, no repeats). */
static int parse_format(report_cfg *c)
{
    c->svg = c->png = 0;
    const char *p = c->format;
    while (*p) {
        size_t n = strcspn(p, ",");
        int *flag = n == 3 && strncmp(p, "svg", 3) == 0   ? &c->svg
                    : n == 3 && strncmp(p, "png", 3) == 0 ? &c->png
                                                          : NULL;
        if (!flag || *flag) return 0;
        *flag = 1;
        p += n;
        if (*p == ',') {
            p++;
            if (!*p) return 0;
        }
    }
    return c->svg || c->png;
}

static void remove_partial(const char *dir, const report_plot *plots, size_t n)
{
    char *p;
    for (size_t i = 0; i < n; i++) {
        static const char *const ext[] = {"svg", "png"};
        for (int k = 0; k < 2; k++)
            if (asprintf(&p, "%s/%s.%s", dir, plots[i].name, ext[k]) >= 0) {
                unlink(p);
                free(p);
            }
        if (asprintf(&p, "%s/.%s.gp", dir, plots[i].name) >= 0) {
            unlink(p);
            free(p);
        }
    }
    if (asprintf(&p, "%s/index.html", dir) >= 0) {
        unlink(p);
        free(p);
    }
    rmdir(dir);
}

/* The files to remove when interrupted, then the folder itself. */
static void register_partial(const char *dir, const report_plot *plots, size_t n)
{
    char *p;
    for (size_t i = 0; i < n; i++) {
        static const char *const fmt[] = {"%s/%s.svg", "%s/%s.png", "%s/.%s.gp"};
        for (int k = 0; k < 3; k++)
            if (asprintf(&p, fmt[k], dir, plots[i].name) >= 0) {
                cli_unfinished_add(p);
                free(p);
            }
    }
    if (asprintf(&p, "%s/index.html", dir) >= 0) {
        cli_unfinished_add(p);
        free(p);
    }
    cli_unfinished_add(dir);
}

static d5_status draw(const report_cfg *c, const char *gnuplot, const char *dir, report_plot *plots,
                      size_t drawn)
{
    d5_status s = D5_OK;
    int step = 0, steps = (int)drawn + 1;
    char formats[16];
    snprintf(formats, sizeof formats, "%s%s%s", c->svg ? "svg" : "", c->svg && c->png ? ", " : "",
             c->png ? "png" : "");
    for (size_t i = 0; s == D5_OK && i < NPLOTS; i++) {
        if (!plots[i].script) continue;
        cli_progress(++step, steps, "plotting %s (%s)", plots[i].name, formats);
        s = report_gnuplot_run(gnuplot, dir, &plots[i], c->svg, c->png);
    }
    if (s == D5_OK) {
        cli_progress(++step, steps, "writing index.html");
        report_page page = {c->title, c->dir, plots, NPLOTS, c->svg, c->png};
        s = report_html_write(dir, &page);
    }
    return s;
}

static int run(const report_cfg *c)
{
    report_src src = {c->dir};
    report_plot plots[NPLOTS];
    memset(plots, 0, sizeof plots);
    d5_status s = D5_OK;
    size_t drawn = 0;
    for (size_t i = 0; s == D5_OK && i < NPLOTS; i++) {
        plots[i].name = builders[i].name;
        plots[i].title = builders[i].title;
        s = builders[i].build(&src, &plots[i]);
        drawn += s == D5_OK && plots[i].script;
    }
    int rc = -1;
    char *gnuplot = NULL;
    for (size_t i = 0; s == D5_OK && i < NPLOTS; i++)
        if (!plots[i].script) printf("not drawn: %s: %s\n", plots[i].name, plots[i].absent);
    fflush(stdout);
    if (s != D5_OK) {
        rc = cli_fail("report", s);
    } else if (drawn == 0) {
        static const char *const inputs[] = {"results.json", "train.json",          "steps.csv",
                                             "scaling.json", "memory_timeline.csv", "system.csv"};
        int any = 0;
        for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
            any |= report_has(&src, inputs[i]);
        if (any)
            fprintf(stderr,
                    "d5 report: nothing to plot in '%s': no plot has what it needs (see "
                    "the lines above)\n",
                    c->dir);
        else
            fprintf(stderr,
                    "d5 report: nothing to plot in '%s': it holds none of results.json, "
                    "train.json, steps.csv, scaling.json, memory_timeline.csv, system.csv\n",
                    c->dir);
        rc = D5_EXIT_INPUT;
    } else if (!(gnuplot = report_gnuplot_find())) {
        fprintf(stderr, "d5 report: gnuplot is not installed (not found on PATH); install it "
                        "with 'apt-get install gnuplot-nox' (scripts/setup.sh does)\n");
        rc = D5_EXIT_CHECK;
    }
    char *partial = NULL;
    if (rc < 0 && asprintf(&partial, "%s.partial-%ld", c->out, (long)getpid()) < 0) {
        partial = NULL;
        rc = cli_fail("report", d5_error(D5_ERR_NOMEM, "out of memory"));
    }
    if (rc < 0) {
        register_partial(partial, plots, NPLOTS);
        if (mkdir(partial, 0777) != 0)
            s = d5_error(D5_ERR_IO, "cannot create '%s': %s", partial, strerror(errno));
        else if ((s = draw(c, gnuplot, partial, plots, drawn)) != D5_OK)
            remove_partial(partial, plots, NPLOTS);
        else if (rename(partial, c->out) != 0) {
            s = d5_error(D5_ERR_IO, "cannot rename '%s' to '%s': %s", partial, c->out,
                         strerror(errno));
            remove_partial(partial, plots, NPLOTS);
        }
        cli_unfinished_clear();
        if (s != D5_OK) rc = cli_fail("report", s);
    }
    if (rc < 0) {
        printf("report in %s/: index.html", c->out);
        for (size_t i = 0; i < NPLOTS; i++)
            for (int k = 0; plots[i].script && k < 2; k++)
                if (k == 0 ? c->svg : c->png)
                    printf(" %s.%s", plots[i].name, k == 0 ? "svg" : "png");
        printf("\n");
        rc = D5_EXIT_OK;
    }
    free(partial);
    free(gnuplot);
    for (size_t i = 0; i < NPLOTS; i++) report_plot_clear(&plots[i]);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    report_cfg c = {NULL, NULL, "svg,png", NULL, 0, 0};
    const cli_opt opts[] = {
        {"out", CLI_STRING, &c.out, "DIR2", "report folder to create (default DIR/report)", 0, 0},
        {"format", CLI_STRING, &c.format, "LIST",
         "image files per plot: svg, png or svg,png (default svg,png)", 0, 0},
        {"title", CLI_STRING, &c.title, "T", "the page's title (default: d5 report of DIR)", 0, 0},
    };
    const cli_spec spec = {
        CLI_SPEC("report", "DIR [--out DIR2] [--format svg,png] [--title T]",
                 "Plots a results folder with gnuplot (apt-get install gnuplot-nox) into a report\n"
                 "folder: index.html, a page that opens offline with every plot inlined, and an\n"
                 "SVG and a PNG file per plot. Each plot is drawn when its inputs are in DIR:\n"
                 "  operator_timings  violins of every sample per benchmark and backend\n"
                 "                    (results.json with samples.csv, or with samples inside)\n"
                 "  roofline          GFLOP/s against FLOP/byte under the measured FMA peak and\n"
                 "                    memory bandwidth (results.json, machine.json)\n"
                 "  training_by_step  loss and accuracy against step (train.json, steps.csv)\n"
                 "  training_by_time  the same against training time\n"
                 "  scaling           efficiency against ranks (scaling.json of d5 scaling)\n"
                 "  memory_timeline   live bytes during one step (memory_timeline.csv)\n"
                 "  system            CPU, memory, I/O and GPU utilisation (system.csv)\n"
                 "The page says why a plot is absent. The report folder appears only when\n"
                 "complete; an existing folder is never overwritten.",
                 opts),
        .positional = "DIR", .pos_value = &c.dir};
    int rc = cli_parse(&spec, argc, argv);
    if (rc >= 0) return rc;
    if (!parse_format(&c)) {
        fprintf(stderr, "d5 report: --format '%s': expected svg, png or svg,png\n", c.format);
        return D5_EXIT_USAGE;
    }
    struct stat st;
    if (stat(c.dir, &st) != 0) {
        fprintf(stderr, "d5 report: results folder '%s': %s\n", c.dir, strerror(errno));
        return D5_EXIT_INPUT;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "d5 report: '%s' is not a folder; give the results folder of d5 bench, "
                "d5 train or d5 scaling\n",
                c.dir);
        return D5_EXIT_INPUT;
    }
    char *def = NULL, *title = NULL;
    if (!c.out) {
        if (asprintf(&def, "%s/report", c.dir) < 0) return D5_EXIT_CHECK;
        c.out = def;
    }
    if (!c.title && asprintf(&title, "d5 report of %s", c.dir) >= 0) c.title = title;
    if (stat(c.out, &st) == 0) {
        fprintf(stderr,
                "d5 report: report folder '%s' already exists; remove it or choose "
                "another --out\n",
                c.out);
        rc = D5_EXIT_USAGE;
    } else if (!cli_output_ok("report", "--out", c.out, 0)) {
        rc = D5_EXIT_INPUT;
    } else {
        cli_echo(stdout, &spec);
        printf("#   %-14s = %s\n", "DIR", c.dir);
        rc = run(&c);
    }
    free(def);
    free(title);
    return rc;
}
