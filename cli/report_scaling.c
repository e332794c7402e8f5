/* d5 report: scaling efficiency against ranks, from scaling.json (the
 * document of d5 scaling --json): measured rows as solid lines, modelled
 * rows dashed, oversubscribed runs marked. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct row {
    double ranks, efficiency, speedup; /* efficiency in %, NaN where null */
    int modelled, oversubscribed;
    const char *scheme; /* borrowed from the JSON */
} row;

static double jnum(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static d5_status read_rows(const char *path, json_t *root, row **out, size_t *n)
{
    const json_t *series = json_object_get(root, "series");
    if (!json_is_array(series))
        return d5_error(D5_ERR_FORMAT,
                        "%s: no 'series' array (expected the document of d5 scaling --json)", path);
    size_t m = json_array_size(series);
    row *r = calloc(m + 1, sizeof *r);
    if (!r) return d5_error(D5_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < m; i++) {
        const json_t *o = json_array_get(series, i);
        r[i].ranks = jnum(o, "ranks");
        if (!json_is_object(o) || !(r[i].ranks >= 1)) {
            free(r);
            return d5_error(D5_ERR_FORMAT, "%s: series[%zu]: 'ranks' must be a number >= 1", path,
                            i);
        }
        r[i].efficiency = 100 * jnum(o, "efficiency");
        r[i].speedup = jnum(o, "speedup");
        r[i].modelled = json_is_true(json_object_get(o, "modelled"));
        r[i].oversubscribed = json_is_true(json_object_get(o, "oversubscribed"));
        const char *scheme = json_string_value(json_object_get(o, "scheme"));
        r[i].scheme = scheme ? scheme : "";
    }
    *out = r;
    *n = m;
    return D5_OK;
}

/* One series per scheme, measured and modelled apart. */
static int same_series(const row *a, const row *b)
{
    return a->modelled == b->modelled && strcmp(a->scheme, b->scheme) == 0;
}

static void write_plot(FILE *data, FILE *f, const row *r, size_t n)
{
    double top = 100, lo = INFINITY, hi = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(r[i].efficiency)) top = fmax(top, r[i].efficiency);
        lo = fmin(lo, r[i].ranks);
        hi = fmax(hi, r[i].ranks);
    }
    fprintf(f,
            "set title \"Scaling efficiency against ranks\"\n"
            "set xlabel \"ranks (log scale)\"\nset ylabel \"efficiency (%%): X(P) / (P X(1))\"\n"
            "set logscale x 2\nset xrange [%g:%g]\nset yrange [0:%g]\n"
            "set grid xtics ytics lc rgb \"#e5e5e5\"\nset key outside bottom center horizontal "
            "reverse Left\n"
            "set xtics (",
            lo / 1.3, hi * 1.3, ceil(top * 1.1 / 10 - 1e-9) * 10);
    /* A tic at every rank count of the series. */
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t k = 0; k < i; k++) seen |= r[k].ranks == r[i].ranks;
        if (seen) continue;
        fprintf(f, "%s\"%g\" %g", first ? "" : ", ", r[i].ranks, r[i].ranks);
        first = 0;
    }
    fprintf(f, ")\nplot 100 with lines dt 2 lw 1.5 lc rgb \"#555555\" title \"ideal (100%%)\"");
    for (size_t i = 0; i < n; i++) {
        int seen = 0;
        for (size_t k = 0; k < i; k++) seen |= same_series(&r[k], &r[i]);
        if (seen) continue;
        fprintf(data, "$e%zu << EOD\n", i);
        for (size_t k = i; k < n; k++)
            if (same_series(&r[k], &r[i]) && isfinite(r[k].efficiency))
                fprintf(data, "%g %.6g\n", r[k].ranks, r[k].efficiency);
        fprintf(data, "EOD\n");
        char title[128];
        snprintf(title, sizeof title, "%s%s", r[i].scheme[0] ? r[i].scheme : "efficiency",
                 r[i].modelled ? ", modelled (alpha-beta)" : ", measured");
        /* A scheme keeps its colour, measured or modelled: the colour of
         * its place among the schemes. */
        size_t c = 0;
        for (size_t k = 0; k < i; k++) {
            int earlier = 0;
            for (size_t j = 0; j < k; j++) earlier |= strcmp(r[j].scheme, r[k].scheme) == 0;
            if (!earlier && strcmp(r[k].scheme, r[i].scheme) != 0) c++;
            if (strcmp(r[k].scheme, r[i].scheme) == 0) break;
        }
        fprintf(f,
                ", \\\n     $e%zu using 1:2 with linespoints lw 2 %s ps 1.5 lc rgb \"%s\" title ",
                i, r[i].modelled ? "dt 3 pt 6" : "pt 7", report_colour(NULL, c));
        report_gp_string(f, title);
    }
    int over = 0;
    fprintf(data, "$over << EOD\n");
    for (size_t i = 0; i < n; i++)
        if (r[i].oversubscribed && isfinite(r[i].efficiency)) {
            fprintf(data, "%g %.6g\n", r[i].ranks, r[i].efficiency);
            over = 1;
        }
    fprintf(data, "EOD\n");
    if (over)
        fprintf(f, ", \\\n     $over using 1:2 with points pt 2 ps 2.5 lw 2 lc rgb \"#d62728\" "
                   "title \"oversubscribed (more ranks than cores)\"");
    fprintf(f, "\n");
}

static void table(FILE *f, const row *r, size_t n)
{
    fprintf(f, "<table><tr><th>scheme</th><th>ranks</th><th>kind</th><th>speedup</th>"
               "<th>efficiency (%%)</th></tr>\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<tr><td>");
        report_html_escape(f, r[i].scheme);
        fprintf(f, "</td><td>%g</td><td>%s%s</td><td>", r[i].ranks,
                r[i].modelled ? "modelled" : "measured",
                r[i].oversubscribed ? ", oversubscribed" : "");
        report_html_number(f, "%.3g", r[i].speedup);
        fprintf(f, "</td><td>");
        report_html_number(f, "%.1f", r[i].efficiency);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
}

d5_status report_scaling(const report_src *src, report_plot *p)
{
    if (!report_has(src, "scaling.json"))
        return report_absent(p, "no scaling.json (d5 scaling --json FILE) in %s", src->dir);
    char *path = report_path(src, "scaling.json");
    if (!path) return d5_error(D5_ERR_NOMEM, "out of memory");
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    d5_status s = D5_OK;
    row *r = NULL;
    size_t n = 0, with_eff = 0;
    if (!root)
        s = d5_error(D5_ERR_FORMAT, "%s: line %d: %s", path, err.line, err.text);
    else
        s = read_rows(path, root, &r, &n);
    for (size_t i = 0; s == D5_OK && i < n; i++) with_eff += isfinite(r[i].efficiency);
    if (s == D5_OK && with_eff == 0)
        s = report_absent(p, "scaling.json has no efficiency figures (no 1-rank run to compare "
                             "with)");
    else if (s == D5_OK) {
        p->width = 1000;
        p->height = 600;
        report_text d, t;
        if ((s = report_text_open(&d)) == D5_OK && (s = report_text_open(&t)) != D5_OK)
            report_text_discard(&d);
        if (s == D5_OK) {
            write_plot(d.f, t.f, r, n);
            s = report_text_close(&d, &p->data);
            if (s == D5_OK)
                s = report_text_close(&t, &p->script);
            else
                report_text_discard(&t);
        }
        if (s == D5_OK && (s = report_text_open(&t)) == D5_OK) {
            fprintf(t.f,
                    "<p>Efficiency is the throughput on P ranks over P times the throughput on "
                    "one rank, as d5 scaling computes it (scaling.json). Modelled rows (dotted) "
                    "were never run: an alpha-beta model of the allreduce beside the measured "
                    "compute.</p>\n");
            s = report_text_close(&t, &p->notes);
        }
        if (s == D5_OK && (s = report_text_open(&t)) == D5_OK) {
            table(t.f, r, n);
            s = report_text_close(&t, &p->table);
        }
    }
    free(r);
    json_decref(root);
    free(path);
    return s;
}
