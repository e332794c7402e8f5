/* d5 report: the roofline. GFLOP/s against arithmetic intensity (FLOP per
 * byte) under min(P, B x I): P the FP32 FMA peak of all cores and B the
 * STREAM-triad memory bandwidth measured by d5 machine (machine.json), with
 * every operator benchmark that has GFLOP/s and a byte count as a point. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct point {
    const report_bench *b;
    double ai, gflops;
    int derived; /* bytes derived from the size label (else the GB/s counter) */
} point;

typedef struct roof {
    double peak, bw; /* GFLOP/s, GB/s */
    int threads;
    char isa[32];
    char peak_from[160]; /* where P comes from, for the notes */
} roof;

/* d5 bench measures the peak twice and rates its operators against the
 * higher (results.json's context: fp32_peak_used_gflops): the roof is that
 * peak, not machine.json's first. */
static void read_used_peak(const report_src *src, roof *r)
{
    char *path = report_path(src, "results.json");
    json_t *root = path ? json_load_file(path, 0, NULL) : NULL;
    const json_t *ctx = json_object_get(root, "context");
    const json_t *used = json_object_get(ctx, "fp32_peak_used_gflops");
    const char *which = json_string_value(json_object_get(ctx, "fp32_peak_used"));
    if (json_is_number(used) && json_number_value(used) > 0 && which) {
        r->peak = json_number_value(used);
        snprintf(r->peak_from, sizeof r->peak_from,
                 "the higher of the two peaks d5 bench measured, the one %s the suite "
                 "(results.json)",
                 which);
    }
    json_decref(root);
    free(path);
}

static d5_status read_machine(const report_src *src, roof *r, int *have)
{
    char *path = report_path(src, "machine.json");
    if (!path) return d5_error(D5_ERR_NOMEM, "out of memory");
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    d5_status s = D5_OK;
    *have = 0;
    if (!root) {
        s = d5_error(D5_ERR_FORMAT, "%s: line %d: %s", path, err.line, err.text);
    } else {
        const json_t *pk = json_object_get(root, "peaks");
        const json_t *fp =
            json_object_get(json_object_get(json_object_get(pk, "fp32_all"), "stats"), "median");
        const json_t *bw =
            json_object_get(json_object_get(json_object_get(pk, "triad"), "stats"), "median");
        if (json_is_object(pk) && (!json_is_number(fp) || !json_is_number(bw)))
            s = d5_error(D5_ERR_FORMAT,
                         "%s: peaks.fp32_all.stats.median and peaks.triad.stats.median must be "
                         "numbers",
                         path);
        else if (json_is_object(pk) && json_number_value(fp) > 0 && json_number_value(bw) > 0) {
            r->peak = json_number_value(fp);
            r->bw = json_number_value(bw);
            const json_t *t = json_object_get(pk, "threads");
            r->threads = json_is_integer(t) ? (int)json_integer_value(t) : 0;
            const char *isa = json_string_value(json_object_get(pk, "fma_isa"));
            snprintf(r->isa, sizeof r->isa, "%s", isa ? isa : "");
            snprintf(r->peak_from, sizeof r->peak_from, "measured by d5 machine (machine.json)");
            *have = 1;
        }
    }
    json_decref(root);
    free(path);
    return s;
}

static int point_type(const char *op)
{
    if (strcmp(op, "Gemm") == 0) return 7;   /* filled circle */
    if (strcmp(op, "Conv") == 0) return 5;   /* filled square */
    if (strcmp(op, "MatMul") == 0) return 9; /* filled triangle */
    return 13;                               /* filled diamond */
}

static double decade_below(double x)
{
    return pow(10, floor(log10(x)));
}

static double decade_above(double x)
{
    return pow(10, ceil(log10(x)));
}

/* The plot area in screen coordinates, fixed so that the label along the
 * bandwidth line can be turned to its slope. */
#define AREA_L 0.10
#define AREA_R 0.96
#define AREA_B 0.19
#define AREA_T 0.90

/* 1 when point i is the first of its series (its operator and backend). */
static int first_of_series(const point *pt, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (strcmp(pt[k].b->op, pt[i].b->op) == 0 &&
            strcmp(pt[k].b->backend, pt[i].b->backend) == 0)
            return 0;
    return 1;
}

static void script(FILE *f, const report_plot *p, const roof *r, const point *pt, size_t n)
{
    double lo_ai = r->peak / r->bw, hi_ai = lo_ai, lo_y = r->peak;
    for (size_t i = 0; i < n; i++) {
        lo_ai = fmin(lo_ai, pt[i].ai);
        hi_ai = fmax(hi_ai, pt[i].ai);
        lo_y = fmin(lo_y, pt[i].gflops);
    }
    double x0 = decade_below(lo_ai / 2), x1 = decade_above(hi_ai * 2);
    double y0 = decade_below(fmin(lo_y / 2, r->peak / 100)), y1 = decade_above(r->peak * 2);
    /* The bandwidth line's angle on the screen. */
    double px = p->width * (AREA_R - AREA_L) / log10(x1 / x0),
           py = p->height * (AREA_T - AREA_B) / log10(y1 / y0);
    double angle = atan(py / px) * 180 / M_PI;
    /* Its label a little to the right of where the line enters the plot. */
    double lx = fmax(x0, y0 / r->bw) * pow(x1 / x0, 0.04);
    fprintf(f,
            "set title \"Roofline: FP32, all cores\"\n"
            "set lmargin at screen %g\nset rmargin at screen %g\n"
            "set bmargin at screen %g\nset tmargin at screen %g\n"
            "set logscale xy\nset xrange [%g:%g]\nset yrange [%g:%g]\n"

            "set xlabel \"arithmetic intensity (FLOP/byte, log scale)\"\n"
            "set ylabel \"performance (GFLOP/s, log scale)\"\n"
            "set grid xtics ytics lc rgb \"#e5e5e5\"\nset samples 600\n"
            "set key at screen 0.5, screen 0.015 bottom center horizontal reverse Left maxrows 3 "
            "samplen 1.5\n",
            AREA_L, AREA_R, AREA_B, AREA_T, x0, x1, y0, y1);
    report_log_tics(f, "x", x0, x1);
    report_log_tics(f, "y", y0, y1);
    fprintf(f,
            "P = %.9g\nBW = %.9g\nroof(x) = BW * x < P ? BW * x : P\n"
            "set label 1 \"FP32 FMA peak %.4g GFLOP/s\" at %g, %g right offset -1, 0.8\n"
            "set label 2 \"memory bandwidth %.3g GB/s\" at %g, %g left rotate by %.2f "
            "offset 0, 0.8\n",
            r->peak, r->bw, r->peak, x1, r->peak, r->bw, lx, r->bw * lx, angle);
    fprintf(f, "plot roof(x) with lines lw 2 lc rgb \"black\" title \"roof\"");
    /* One series per operator and backend: a colour per backend, a symbol
     * per operator. */
    for (size_t i = 0; i < n; i++) {
        if (!first_of_series(pt, i)) continue;
        char title[256];
        snprintf(title, sizeof title, "%s, %s", pt[i].b->op, pt[i].b->backend);
        fprintf(f, ", \\\n     $p%zu using 1:2 with points pt %d ps 1.3 lc rgb \"%s\" title ", i,
                point_type(pt[i].b->op), report_colour(pt[i].b->backend, i));
        report_gp_string(f, title);
    }
    fprintf(f, "\n");
}

static void data(FILE *f, const point *pt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!first_of_series(pt, i)) continue;
        fprintf(f, "$p%zu << EOD\n", i);
        for (size_t k = i; k < n; k++)
            if (strcmp(pt[k].b->op, pt[i].b->op) == 0 &&
                strcmp(pt[k].b->backend, pt[i].b->backend) == 0)
                fprintf(f, "%.9g %.9g\n", pt[k].ai, pt[k].gflops);
        fprintf(f, "EOD\n");
    }
}

static void table(FILE *f, const roof *r, const point *pt, size_t n)
{
    fprintf(f, "<table><tr><th>benchmark</th><th>GFLOP/s</th><th>FLOP/byte</th><th>bytes "
               "from</th><th>%% of the roof</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        double top = fmin(r->peak, r->bw * pt[i].ai);
        fprintf(f, "<tr><td>");
        report_html_escape(f, pt[i].b->name);
        fprintf(f, "</td><td>%.4g</td><td>%.4g</td><td>%s</td><td>%.1f</td></tr>\n", pt[i].gflops,
                pt[i].ai, pt[i].derived ? "the size" : "GB/s counter", 100 * pt[i].gflops / top);
    }
    fprintf(f, "</table>\n");
}

static void notes(FILE *f, const roof *r, size_t left_out)
{
    fprintf(f,
            "<p>The roof is min(P, B × I): P = %.4g GFLOP/s, the FP32 fused multiply-add peak "
            "of all cores (%d threads%s%s), %s; B = %.3g GB/s, the STREAM-triad memory "
            "bandwidth measured by d5 machine (machine.json); they meet at %.3g FLOP/byte. "
            "A point's intensity counts every input and output tensor once (compulsory "
            "traffic), as the operators' cost functions do: from the GB/s counter where "
            "results.json has one, else derived from the DeepBench size of an f32 Gemm, MatMul "
            "or Conv. A point above the roof means the peak was measured low (under "
            "contention).",
            r->peak, r->threads, r->isa[0] ? ", " : "", r->isa, r->peak_from, r->bw,
            r->peak / r->bw);
    if (left_out)
        fprintf(f, " %zu operator benchmark%s with GFLOP/s but no exact byte count %s left out.",
                left_out, left_out == 1 ? "" : "s", left_out == 1 ? "is" : "are");
    fprintf(f, "</p>\n");
}

d5_status report_roofline(const report_src *src, report_plot *p)
{
    if (!report_has(src, "results.json"))
        return report_absent(p, "no results.json (d5 bench --out, d5 test-operator --json) in %s",
                             src->dir);
    if (!report_has(src, "machine.json"))
        return report_absent(p,
                             "no machine.json in %s: the roof needs the FMA peak and the memory "
                             "bandwidth that d5 machine --json measures",
                             src->dir);
    roof r = {0};
    int have = 0;
    d5_status s = read_machine(src, &r, &have);
    if (s != D5_OK) return s;
    if (!have)
        return report_absent(p, "machine.json has no measured peaks (written with --no-measure?)");
    read_used_peak(src, &r);
    report_results res;
    if ((s = report_results_read(src, &res)) != D5_OK) return s;
    point *pt = calloc(res.n + 1, sizeof *pt);
    size_t n = 0, left_out = 0;
    if (!pt) s = d5_error(D5_ERR_NOMEM, "out of memory");
    for (size_t i = 0; s == D5_OK && i < res.n; i++) {
        const report_bench *b = &res.b[i];
        if (!b->op || b->error || !(b->gflops > 0)) continue;
        double bytes;
        if (b->gbs > 0) {
            pt[n] = (point){b, b->gflops / b->gbs, b->gflops, 0};
            n++;
        } else if (report_operator_bytes(b->op, b->size, &bytes) && b->median > 0) {
            double flops = b->flops > 0 ? b->flops : b->gflops * b->median;
            pt[n] = (point){b, flops / bytes, b->gflops, 1};
            n++;
        } else {
            left_out++;
        }
    }
    if (s == D5_OK && n == 0)
        s = report_absent(p, "no benchmark in results.json has GFLOP/s and a byte count (a GB/s "
                             "counter, or an f32 Gemm, MatMul or Conv size)");
    else if (s == D5_OK) {
        p->width = 1000;
        p->height = 650;
        report_text d, t, nt, tb;
        if ((s = report_text_open(&d)) == D5_OK) {
            data(d.f, pt, n);
            s = report_text_close(&d, &p->data);
        }
        if (s == D5_OK && (s = report_text_open(&t)) == D5_OK) {
            script(t.f, p, &r, pt, n);
            s = report_text_close(&t, &p->script);
        }
        if (s == D5_OK && (s = report_text_open(&nt)) == D5_OK) {
            notes(nt.f, &r, left_out);
            s = report_text_close(&nt, &p->notes);
        }
        if (s == D5_OK && (s = report_text_open(&tb)) == D5_OK) {
            table(tb.f, &r, pt, n);
            s = report_text_close(&tb, &p->table);
        }
    }
    free(pt);
    report_results_free(&res);
    return s;
}
