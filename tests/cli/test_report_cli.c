/* d5 report on the fixture folders of tests/cli/data/report: bench/ (d5 bench
 * --out: results.json, samples.csv, machine.json), operator/ (d5
 * test-operator --json: GB/s counters, no samples), train/ (train.json,
 * steps.csv), scaling/ (scaling.json), system/ (system.csv,
 * memory_timeline.csv). The SVGs are parsed as XML and their texts read by
 * Debian's python3; the figures the page shows are computed here again from
 * the fixtures. gnuplot is required (scripts/setup.sh installs it). */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})
#define DATA               D5_SOURCE_DIR "/tests/cli/data/report"

TestSuite(report_cli, .timeout = D5_TIMEOUT(120));

static const char *const plot_names[] = {
    "operator_timings", "roofline", "training_by_step", "training_by_time", "scaling",
    "memory_timeline",  "system"};
#define NPLOTS (sizeof plot_names / sizeof plot_names[0])

static int exists(const char *dir, const char *name)
{
    char *p = path_join(dir, name);
    struct stat st;
    int ok = stat(p, &st) == 0;
    free(p);
    return ok;
}

/* Copies fixture files (names or shell patterns relative to DATA) into
 * dir. */
static void copy_data(const char *dir, const char *files)
{
    char *cmd;
    cr_assert_geq(asprintf(&cmd, "cd '%s' && cp %s '%s'/", DATA, files, dir), 0);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
}

/* Everything a command prints on standard output. */
static char *capture(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "%s", cmd);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, p)) > 0) fwrite(chunk, 1, got, m);
    fclose(m);
    *status = pclose(p);
    return buf;
}

/* What `ls -A dir` prints, through the shell pipeline `filter` ("" for
 * none). */
static char *listing(const char *dir, const char *filter)
{
    char *cmd;
    cr_assert_geq(asprintf(&cmd, "ls -A '%s' %s", dir, filter), 0);
    int status;
    char *out = capture(cmd, &status);
    free(cmd);
    return out;
}

/* Fails the test unless `ls -A dir` lists exactly `want` (names, one a line):
 * what a failed or interrupted run left behind. */
static void expect_left(const char *dir, const char *want)
{
    char *left = listing(dir, "");
    cr_assert_str_eq(left, want, "left behind: %s", left);
    free(left);
}

/* Fails the test unless `text` holds the formatted string. */
static void expect_in(const char *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void expect_in(const char *text, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *want;
    cr_assert_geq(vasprintf(&want, fmt, ap), 0);
    va_end(ap);
    cr_assert(strstr(text, want), "no '%s' in\n%s", want, text);
    free(want);
}

/* The texts of an SVG, one <text> element a line; fails the test unless the
 * file is well-formed XML whose root is <svg> (check_page.py). */
static char *svg_texts(const char *dir, const char *name)
{
    char *cmd;
    cr_assert_geq(
        asprintf(&cmd, "/usr/bin/python3 '%s/check_page.py' svg '%s/%s.svg'", DATA, dir, name), 0);
    int status;
    char *out = capture(cmd, &status);
    cr_assert_eq(status, 0, "%s/%s.svg is not well-formed SVG", dir, name);
    free(cmd);
    return out;
}

/* The page's problems, one a line (empty when none): ids used twice, a
 * reference to a missing id, a link that leaves the folder or names a file
 * that is not there, a script, a style sheet, a font, any address outside
 * the folder (check_page.py). */
static char *html_problems(const char *dir)
{
    char *cmd;
    cr_assert_geq(asprintf(&cmd, "/usr/bin/python3 '%s/check_page.py' page '%s'", DATA, dir), 0);
    int status;
    char *out = capture(cmd, &status);
    cr_assert_eq(status, 0, "%s", cmd);
    free(cmd);
    return out;
}

/* A PNG file: its signature, width and height (IHDR). */
static void png_size(const char *dir, const char *name, unsigned *w, unsigned *h)
{
    char *p;
    cr_assert_geq(asprintf(&p, "%s/%s.png", dir, name), 0);
    unsigned char b[24];
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f, "%s", p);
    cr_assert_eq(fread(b, 1, 24, f), 24u, "%s", p);
    fclose(f);
    cr_assert_eq(memcmp(b, "\x89PNG\r\n\x1a\n", 8), 0, "%s: not a PNG", p);
    cr_assert_eq(memcmp(b + 12, "IHDR", 4), 0, "%s", p);
    *w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
    *h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
    free(p);
}

/* The part of the page about one plot. */
static char *section(const char *html, const char *name)
{
    char *start;
    cr_assert_geq(asprintf(&start, "<section id=\"plot-%s\">", name), 0);
    const char *a = strstr(html, start);
    cr_assert_not_null(a, "no section for %s", name);
    const char *b = strstr(a, "</section>");
    cr_assert_not_null(b);
    free(start);
    return strndup(a, (size_t)(b - a));
}

static char *page(const char *dir)
{
    char *p = path_join(dir, "index.html");
    char *html = slurp(p, NULL);
    cr_assert_not_null(html, "%s", p);
    free(p);
    return html;
}

/* Expects section `name` of dir's index.html to hold `text`. */
static void expect_section_has(const char *dir, const char *name, const char *text)
{
    char *html = page(dir), *sec = section(html, name);
    cr_assert(strstr(sec, text), "section %s lacks '%s': %s", name, text, sec);
    free(sec);
    free(html);
}

static void run_ok(const char *in, const char *out_dir, char **out, char **err)
{
    int rc = RUN(out, err, "report", in, "--out", out_dir);
    cr_assert_eq(rc, 0, "d5 report %s: exit %d\n%s", in, rc, *err);
    cr_assert_null(strstr(*err, "gnuplot, plot"), "gnuplot said something:\n%s", *err);
}

/* A report of the fixture folder `in`, written to the folder "r" of a
 * fresh folder t; report_free removes both. */
typedef struct report {
    char *t, *dir, *out, *err;
} report;

static report report_of(const char *in)
{
    report r = {.t = tmpdir_make()};
    r.dir = path_join(r.t, "r");
    run_ok(in, r.dir, &r.out, &r.err);
    return r;
}

/* The same, of a folder "in" of t that holds only `files` (as copy_data
 * takes them). */
static report report_of_files(const char *files)
{
    report r = {.t = tmpdir_make()};
    char *in = path_join(r.t, "in");
    cr_assert_eq(mkdir(in, 0700), 0);
    copy_data(in, files);
    r.dir = path_join(r.t, "r");
    run_ok(in, r.dir, &r.out, &r.err);
    free(in);
    return r;
}

static void report_free(report *r)
{
    free(r->out);
    free(r->err);
    rmtree(r->t);
    free(r->dir);
    free(r->t);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- operator timings and the roofline (bench/) ---- */

Test(report_cli, bench_folder_violins_with_medians_of_the_samples)
{
    report r = report_of(DATA "/bench");
    char *texts = svg_texts(r.dir, "operator_timings");
    cr_assert(strstr(texts, "Operator timings per backend: every sample"), "%s", texts);
    cr_assert(strstr(texts, "time per call (µs, log scale)"), "%s", texts);
    cr_assert(strstr(texts, "Gemm M×N×K") && strstr(texts, "64×32×128") &&
                  strstr(texts, "256×128×512") && strstr(texts, "Conv N4 C32 14×14"),
              "%s", texts);
    cr_assert(strstr(texts, "blas") && strstr(texts, "dnnl") && !strstr(texts, "cuda"), "%s",
              texts);
    /* Every operator benchmark of samples.csv: n and median (in µs) in the
     * page's table, computed here from the samples. */
    char *html = page(r.dir), *sec = section(html, "operator_timings");
    char *csv = slurp(DATA "/bench/samples.csv", NULL);
    cr_assert_not_null(csv);
    const char *names[] = {"Gemm/M=64,N=32,K=128,a_t=N,b_t=N/blas",
                           "Gemm/M=256,N=128,K=512,a_t=N,b_t=N/dnnl",
                           "Conv/W=14,H=14,C=32,N=4,K=16,S=3,R=3,pad_w=1,pad_h=1,wstride=1,"
                           "hstride=1/blas"};
    for (size_t k = 0; k < 3; k++) {
        double v[256];
        size_t n = 0;
        char *key;
        cr_assert_geq(asprintf(&key, "\"%s\",ns,", names[k]), 0);
        for (const char *p = csv; (p = strstr(p, key)); p += strlen(key)) {
            const char *value = strchr(p + strlen(key), ',');
            v[n++] = strtod(value + 1, NULL) / 1e3;
        }
        cr_assert_gt(n, 5, "%s", key);
        qsort(v, n, sizeof *v, cmp_double);
        double median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        expect_in(sec, "</td><td>%zu</td><td>%.4g</td>", n, median);
        free(key);
    }
    /* The failed cuda benchmark and the other benchmarks are not plotted. */
    cr_assert_null(strstr(sec, "cuda"));
    cr_assert(strstr(sec, "1 operator benchmark failed and is not shown"), "%s", sec);
    cr_assert_null(strstr(sec, "lenet"));
    free(csv);
    free(sec);
    free(html);
    free(texts);
    report_free(&r);
}

/* Bytes of an f32 Gemm and Conv, every tensor once: the count the operators'
 * cost functions use. */
static double gemm_intensity(double m, double n, double k)
{
    return 2 * m * n * k / (4 * (m * k + k * n + m * n));
}

Test(report_cli, bench_folder_roofline_intensity_from_the_sizes)
{
    report r = report_of(DATA "/bench");
    /* The ceilings, as machine.json has them. */
    json_error_t je;
    json_t *m = json_load_file(DATA "/bench/machine.json", 0, &je);
    cr_assert_not_null(m);
    double peak = json_number_value(json_object_get(
        json_object_get(json_object_get(json_object_get(m, "peaks"), "fp32_all"), "stats"),
        "median"));
    double bw = json_number_value(json_object_get(
        json_object_get(json_object_get(json_object_get(m, "peaks"), "triad"), "stats"), "median"));
    json_decref(m);
    char *texts = svg_texts(r.dir, "roofline");
    cr_assert(strstr(texts, "arithmetic intensity (FLOP/byte, log scale)"), "%s", texts);
    cr_assert(strstr(texts, "performance (GFLOP/s, log scale)"), "%s", texts);
    expect_in(texts, "FP32 FMA peak %.4g GFLOP/s", peak);
    expect_in(texts, "memory bandwidth %.3g GB/s", bw);
    cr_assert(strstr(texts, "Gemm, blas") && strstr(texts, "Conv, dnnl"), "%s", texts);
    /* Intensities: FLOP over the bytes of inputs and output. */
    char *html = page(r.dir), *sec = section(html, "roofline");
    double conv_p = (14 + 2 - 3) / 1 + 1, conv_flops = 2.0 * 4 * 16 * conv_p * conv_p * 32 * 9;
    double conv_bytes = 4.0 * (4 * 32 * 14 * 14 + 16 * 32 * 9 + 4 * 16 * conv_p * conv_p);
    const double ai[] = {gemm_intensity(64, 32, 128), gemm_intensity(256, 128, 512),
                         conv_flops / conv_bytes};
    for (size_t k = 0; k < 3; k++) expect_in(sec, "</td><td>%.4g</td><td>the size</td>", ai[k]);
    free(sec);
    free(html);
    free(texts);
    report_free(&r);
}

/* A d5 bench folder whose context names the peak its %peak used (the higher
 * of the two it measured): the roof is that peak, not machine.json's. */
Test(report_cli, bench_roofline_uses_the_peak_bench_chose)
{
    report r = {.t = tmpdir_make()};
    char *in = path_join(r.t, "in"), *res = path_join(in, "results.json");
    cr_assert_eq(mkdir(in, 0700), 0);
    copy_data(in, "bench/*");
    json_t *doc = json_read(res);
    json_t *ctx = json_object_get(doc, "context");
    json_object_set_new(ctx, "fp32_peak_used_gflops", json_real(389));
    json_object_set_new(ctx, "fp32_peak_used", json_string("after"));
    cr_assert_eq(json_dump_file(doc, res, JSON_INDENT(1)), 0);
    json_decref(doc);
    r.dir = path_join(r.t, "r");
    run_ok(in, r.dir, &r.out, &r.err);
    char *texts = svg_texts(r.dir, "roofline");
    expect_in(texts, "FP32 FMA peak %.4g GFLOP/s", 389.0);
    expect_section_has(r.dir, "roofline",
                       "the higher of the two peaks d5 bench measured, the one after the "
                       "suite (results.json)");
    free(texts);
    free(res);
    free(in);
    report_free(&r);
}

Test(report_cli, operator_folder_boxes_and_intensity_from_counters)
{
    report r = report_of(DATA "/operator");
    char *texts = svg_texts(r.dir, "operator_timings");
    cr_assert(strstr(texts, "quartiles and 5th-95th percentiles"), "%s", texts);
    expect_section_has(r.dir, "operator_timings", "holds no samples");
    char *html = page(r.dir);
    /* Intensity = GFLOP/s over GB/s of the file's counters. */
    json_error_t je;
    json_t *res = json_load_file(DATA "/operator/results.json", 0, &je);
    cr_assert_not_null(res);
    char *sec = section(html, "roofline");
    size_t i, points = 0;
    json_t *e;
    json_array_foreach(json_object_get(res, "benchmarks"), i, e)
    {
        const char *agg = json_string_value(json_object_get(e, "aggregate_name"));
        if (!agg || strcmp(agg, "median") != 0) continue;
        double ai = json_number_value(json_object_get(e, "GFLOP/s")) /
                    json_number_value(json_object_get(e, "GB/s"));
        expect_in(sec, "</td><td>%.4g</td><td>GB/s counter</td>", ai);
        points++;
    }
    cr_assert_eq(points, 4);
    json_decref(res);
    free(sec);
    free(html);
    free(texts);
    report_free(&r);
}

/* ---- training, scaling, memory and system ---- */

Test(report_cli, train_folder_loss_and_accuracy)
{
    report r = report_of(DATA "/train");
    char *step = svg_texts(r.dir, "training_by_step"), *time = svg_texts(r.dir, "training_by_time");
    /* 120 steps in steps.csv: a running mean over 120 / 40 of them. */
    char *steps = slurp(DATA "/train/steps.csv", NULL);
    size_t rows = count_lines(steps) - 1;
    char *want;
    cr_assert_geq(asprintf(&want, "loss, mean of the last %zu steps", rows / 40), 0);
    for (int k = 0; k < 2; k++) {
        const char *s = k ? time : step;
        cr_assert(strstr(s, want), "no '%s' in\n%s", want, s);
        cr_assert(strstr(s, "loss") && strstr(s, "accuracy (%)"), "%s", s);
        cr_assert(strstr(s, "training accuracy (mean of each epoch)"), "%s", s);
        cr_assert(strstr(s, "test accuracy (each epoch's end)"), "%s", s);
    }
    cr_assert(strstr(step, "step (batches trained)"), "%s", step);
    cr_assert(strstr(time, "training time (s, without evaluation)"), "%s", time);
    expect_section_has(r.dir, "training_by_time", "the step times of steps.csv added up");
    free(want);
    free(steps);
    free(step);
    free(time);
    report_free(&r);
}

Test(report_cli, train_json_alone_spreads_epoch_time)
{
    report r = report_of_files("train/train.json");
    expect_section_has(r.dir, "training_by_time", "spread evenly over its steps");
    expect_section_has(r.dir, "training_by_time", "from train.json");
    cr_assert(exists(r.dir, "training_by_step.svg") && exists(r.dir, "training_by_time.png"));
    report_free(&r);
}

Test(report_cli, scaling_efficiency_against_ranks)
{
    report r = report_of(DATA "/scaling");
    char *texts = svg_texts(r.dir, "scaling");
    cr_assert(strstr(texts, "Scaling efficiency against ranks"), "%s", texts);
    cr_assert(strstr(texts, "ranks (log scale)"), "%s", texts);
    cr_assert(strstr(texts, "efficiency (%)"), "%s", texts);
    cr_assert(strstr(texts, "dsgd, measured") && strstr(texts, "dsgd, modelled (alpha-beta)"), "%s",
              texts);
    cr_assert(strstr(texts, "oversubscribed (more ranks than cores)"), "%s", texts);
    json_error_t je;
    json_t *doc = json_load_file(DATA "/scaling/scaling.json", 0, &je);
    cr_assert_not_null(doc);
    char *html = page(r.dir), *sec = section(html, "scaling");
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(doc, "series"), i, row)
    {
        expect_in(sec, "<td>%lld</td>",
                  (long long)json_integer_value(json_object_get(row, "ranks")));
        expect_in(sec, "<td>%.1f</td>",
                  100 * json_number_value(json_object_get(row, "efficiency")));
    }
    json_decref(doc);
    free(sec);
    free(html);
    free(texts);
    report_free(&r);
}

Test(report_cli, memory_timeline_peak_and_system_panels)
{
    report r = report_of(DATA "/system");
    /* The peak of live_bytes, found here. */
    char *csv = slurp(DATA "/system/memory_timeline.csv", NULL);
    double peak = 0, at = 0;
    for (const char *l = strchr(csv, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
        char *end;
        double time = strtod(l, &end), live = strtod(end + 1, NULL);
        if (live > peak) {
            peak = live;
            at = time;
        }
    }
    char *texts = svg_texts(r.dir, "memory_timeline");
    expect_in(texts, "peak %.4g MiB at %.4g ms", peak / 1048576, at);
    cr_assert(strstr(texts, "live memory (MiB)"), "%s", texts);
    cr_assert(strstr(texts, "time since the step began (ms)"), "%s", texts);
    char *sys = svg_texts(r.dir, "system");
    const char *labels[] = {"System utilisation", "CPU (%)",   "memory (GiB)",
                            "I/O (MB/s)",         "GPU (%)",   "time since the sampler started (s)",
                            "each core",          "all cores", "disk read",
                            "network sent",       "GPU 0"};
    for (size_t k = 0; k < sizeof labels / sizeof labels[0]; k++)
        cr_assert(strstr(sys, labels[k]), "no '%s' in\n%s", labels[k], sys);
    unsigned w, h;
    png_size(r.dir, "system", &w, &h);
    cr_assert_eq(w, 1000u);
    cr_assert_eq(h, 120u + 4 * 230u, "four panels: %u pixels high", h);
    free(sys);
    free(texts);
    free(csv);
    report_free(&r);
}

/* ---- the page and the folder ---- */

Test(report_cli, every_plot_in_one_self_contained_page)
{
    char *t = tmpdir_make(), *out, *err;
    const char *fixtures[] = {"bench", "train", "scaling", "system"};
    for (size_t k = 0; k < 4; k++) {
        char *files;
        cr_assert_geq(asprintf(&files, "%s/*", fixtures[k]), 0);
        copy_data(t, files);
        free(files);
    }
    int rc = RUN(&out, &err, "report", t, "--title", "Run <7> & co");
    cr_assert_eq(rc, 0, "exit %d\n%s", rc, err);
    cr_assert(strstr(err, "[8/8] writing index.html"), "%s", err);
    char *dir = path_join(t, "report");
    char *html = page(dir), *problems = html_problems(dir);
    cr_assert_str_empty(problems, "%s", problems);
    cr_assert(strstr(html, "<title>Run &lt;7&gt; &amp; co</title>"), "the title is escaped");
    size_t svgs = 0;
    for (const char *p = html; (p = strstr(p, "<svg ")); p++) svgs++;
    cr_assert_eq(svgs, NPLOTS, "%zu inline SVGs", svgs);
    cr_assert_null(strstr(html, "Not drawn"));
    for (size_t k = 0; k < NPLOTS; k++) {
        char *sec = section(html, plot_names[k]);
        expect_in(sec, "<a href=\"%s.svg\">", plot_names[k]);
        expect_in(sec, "<a href=\"%s.png\">", plot_names[k]);
        cr_assert(strstr(sec, "<svg "), "%s: no inline SVG", plot_names[k]);
        unsigned w, h;
        png_size(dir, plot_names[k], &w, &h);
        cr_assert(w >= 800 && h >= 500, "%s.png is %ux%u", plot_names[k], w, h);
        free(sec);
    }
    /* Nothing else in the folder: no script or data file left behind. */
    char *files = listing(dir, "| wc -l");
    cr_assert_eq(atoi(files), (int)(2 * NPLOTS + 1), "%s files", files);
    free(files);
    /* An existing report folder is never overwritten. */
    free(out);
    free(err);
    rc = RUN(&out, &err, "report", t);
    cr_assert_eq(rc, 2, "exit %d", rc);
    cr_assert(strstr(err, "already exists"), "%s", err);
    free(problems);
    free(html);
    free(out);
    free(err);
    rmtree(t);
    free(dir);
    free(t);
}

Test(report_cli, absent_plots_say_why)
{
    report r = report_of(DATA "/scaling");
    const char *why[][2] = {
        {"operator_timings", "no results.json"},
        {"roofline", "no results.json"},
        {"training_by_step", "no train.json or steps.csv"},
        {"training_by_time", "no train.json or steps.csv"},
        {"memory_timeline", "no memory_timeline.csv"},
        {"system", "no system.csv"},
    };
    char *html = page(r.dir);
    for (size_t k = 0; k < sizeof why / sizeof why[0]; k++) {
        char *sec = section(html, why[k][0]);
        cr_assert(strstr(sec, "Not drawn: ") && strstr(sec, why[k][1]), "%s", sec);
        cr_assert_null(strstr(sec, "<svg"));
        cr_assert(!exists(r.dir, why[k][0]));
        expect_in(r.out, "not drawn: %s: %s", why[k][0], why[k][1]);
        free(sec);
    }
    free(html);
    report_free(&r);
    /* A roofline needs machine.json. */
    r = report_of_files("bench/results.json bench/samples.csv");
    cr_assert(strstr(r.out, "not drawn: roofline: no machine.json"), "%s", r.out);
    cr_assert(exists(r.dir, "operator_timings.svg") && !exists(r.dir, "roofline.svg"));
    report_free(&r);
}

Test(report_cli, formats_svg_or_png)
{
    char *t = tmpdir_make(), *png = path_join(t, "png"), *svg = path_join(t, "svg"), *out, *err;
    int rc = RUN(&out, &err, "report", DATA "/scaling", "--out", png, "--format", "png");
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(exists(png, "scaling.png") && !exists(png, "scaling.svg"));
    char *html = page(png), *problems = html_problems(png);
    cr_assert_str_empty(problems, "%s", problems);
    /* The PNG inlined: its signature in base64. */
    cr_assert(strstr(html, "src=\"data:image/png;base64,iVBORw0KGgo"), "no inline PNG");
    cr_assert_null(strstr(html, "<svg"));
    free(problems);
    free(html);
    free(out);
    free(err);
    rc = RUN(&out, &err, "report", DATA "/scaling", "--out", svg, "--format", "svg");
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(exists(svg, "scaling.svg") && !exists(svg, "scaling.png"));
    html = page(svg);
    cr_assert(strstr(html, "<svg ") && !strstr(html, "scaling.png"));
    free(html);
    free(out);
    free(err);
    rmtree(t);
    free(png);
    free(svg);
    free(t);
}

/* ---- failures: nothing is left behind ---- */

Test(report_cli, gnuplot_missing_says_how_to_install_it)
{
    char *t = tmpdir_make(), *dir = path_join(t, "r"), *out, *err;
    setenv("PATH", "/nonexistent", 1);
    int rc = RUN(&out, &err, "report", DATA "/scaling", "--out", dir);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "gnuplot is not installed") && strstr(err, "apt-get install gnuplot-nox"),
              "%s", err);
    cr_assert_neq(access(dir, F_OK), 0, "a report folder was left");
    free(out);
    free(err);
    rmtree(t);
    free(dir);
    free(t);
}

/* A malformed input is an error naming the file and what is wrong; no
 * report folder appears. */
static void bad_input(const char *name, const char *text, const char *message)
{
    char *t = tmpdir_make(), *dir = path_join(t, "r"), *out, *err;
    copy_data(t, "bench/* train/* system/* scaling/*");
    write_text(t, name, text);
    int rc = RUN(&out, &err, "report", t, "--out", dir);
    cr_assert_eq(rc, 3, "%s: exit %d\n%s", name, rc, err);
    cr_assert(strstr(err, name) && strstr(err, message), "%s: no '%s' in\n%s", name, message, err);
    cr_assert_neq(access(dir, F_OK), 0, "a report folder was left");
    char *partial = listing(t, "| grep -c partial");
    cr_assert_eq(atoi(partial), 0, "a partial folder was left");
    free(partial);
    free(out);
    free(err);
    rmtree(t);
    free(dir);
    free(t);
}

Test(report_cli, malformed_inputs)
{
    bad_input("results.json", "{\"benchmarks\": [", "line");
    bad_input("results.json", "{\"context\": {}}", "no 'benchmarks' array");
    bad_input("results.json",
              "{\"benchmarks\": [{\"name\": \"x\", \"run_type\": \"aggregate\", "
              "\"aggregate_name\": \"median\", \"real_time\": \"fast\"}]}",
              "real_time is not a number");
    bad_input("samples.csv", "name,unit,index,value\nx,ns,0\n", "line 2 has 3 fields");
    bad_input("machine.json", "{\"peaks\": {\"fp32_all\": {}}}", "peaks.fp32_all.stats.median");
    bad_input("train.json", "{\"epochs\": 3}", "'epochs' and 'losses' arrays");
    bad_input("steps.csv", "step,epoch,loss\n1,1,oops\n", "column loss: 'oops' is not a number");
    bad_input("scaling.json", "{\"series\": [{\"ranks\": 0}]}", "series[0]: 'ranks'");
    bad_input("memory_timeline.csv", "time_ms,bytes\n0,1\n", "no column 'live_bytes'");
    bad_input("system.csv", "time_s,cpu0_percent\n0,5\n", "no column 'cpu_percent'");
    bad_input("system.csv", "time_s,cpu_percent\n\"0,5\n", "a quote is not closed");
}

Test(report_cli, nothing_to_plot)
{
    char *t = tmpdir_make(), *out, *err;
    /* Results without operator benchmarks beside a machine description;
     * then the machine description alone. */
    copy_data(t, "operator/*");
    char *rm = path_join(t, "results.json");
    write_text(t, "results.json",
               "{\"benchmarks\": [{\"name\": \"timer/pair\", \"run_type\": \"aggregate\", "
               "\"aggregate_name\": \"median\", \"real_time\": 20, \"time_unit\": \"ns\"}]}");
    int rc = RUN(&out, &err, "report", t);
    cr_assert_eq(rc, 3, "exit %d\n%s", rc, err);
    cr_assert(strstr(err, "nothing to plot") && strstr(err, "no plot has what it needs"), "%s",
              err);
    cr_assert(strstr(out, "not drawn: operator_timings: results.json holds no operator "
                          "benchmarks"),
              "%s", out);
    cr_assert(!exists(t, "report"));
    free(out);
    free(err);
    unlink(rm);
    free(rm);
    rc = RUN(&out, &err, "report", t);
    cr_assert_eq(rc, 3);
    cr_assert(strstr(err, "it holds none of results.json"), "%s", err);
    free(out);
    free(err);
    rmtree(t);
    free(t);
}

/* A gnuplot of our own first on PATH: `body` is its shell script. */
static char *fake_gnuplot(const char *t, const char *body)
{
    char *bin = path_join(t, "bin");
    cr_assert_eq(mkdir(bin, 0700), 0);
    write_text(bin, "gnuplot", body);
    char *exe = path_join(bin, "gnuplot"), *path;
    cr_assert_eq(chmod(exe, 0700), 0);
    cr_assert_geq(asprintf(&path, "%s:%s", bin, getenv("PATH")), 0);
    setenv("PATH", path, 1);
    free(path);
    free(exe);
    return bin;
}

Test(report_cli, gnuplot_failing_is_reported_and_nothing_is_left)
{
    char *t = tmpdir_make(), *dir = path_join(t, "r"), *out, *err;
    char *bin =
        fake_gnuplot(t, "#!/bin/sh\necho \"line 7: undefined variable: roof\" >&2\nexit 1\n");
    int rc = RUN(&out, &err, "report", DATA "/scaling", "--out", dir);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "gnuplot failed on plot 'scaling'") &&
                  strstr(err, "line 7: undefined variable: roof"),
              "%s", err);
    expect_left(t, "bin\n");
    free(out);
    free(err);
    rmtree(t);
    free(bin);
    free(dir);
    free(t);
}

Test(report_cli, interrupted_run_ends_gnuplot_and_leaves_nothing)
{
    char *t = tmpdir_make(), *dir = path_join(t, "r"), *pidfile = path_join(t, "gnuplot.pid"),
         *body;
    cr_assert_geq(asprintf(&body, "#!/bin/sh\necho $$ > '%s'\nexec sleep 60\n", pidfile), 0);
    char *bin = fake_gnuplot(t, body);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(D5_BIN, "d5", "report", DATA "/scaling", "--out", dir, (char *)NULL);
        _exit(127);
    }
    /* Until gnuplot runs, then Ctrl-C. */
    for (int i = 0; i < 200 && access(pidfile, F_OK) != 0; i++) usleep(50000);
    usleep(100000);
    cr_assert_eq(access(pidfile, F_OK), 0, "gnuplot never started");
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
    /* gnuplot is gone (or a zombie waiting for its reaper). */
    char *text = slurp(pidfile, NULL), *stat;
    cr_assert_geq(asprintf(&stat, "/proc/%ld/stat", strtol(text, NULL, 10)), 0);
    char *line = NULL;
    for (int i = 0; i < 40; i++) {
        free(line);
        line = slurp(stat, NULL);
        if (!line || strstr(line, ") Z ")) break;
        usleep(50000);
    }
    cr_assert(!line || strstr(line, ") Z "), "gnuplot still runs: %s", line);
    expect_left(t, "bin\ngnuplot.pid\n");
    free(line);
    free(stat);
    free(text);
    rmtree(t);
    free(body);
    free(bin);
    free(pidfile);
    free(dir);
    free(t);
}
