/* d5 report: violin plots of operator timings, one violin per benchmark
 * (OP/SIZE/BACKEND), grouped by operator case, coloured by backend. Each
 * violin is gnuplot's kernel density estimate of the samples (smooth
 * kdensity), mirrored; without samples, boxes from the statistics. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct layout {
    const report_bench **ops; /* the operator benchmarks with something to draw */
    size_t n;
    const char **cases; /* "OP/SIZE" per case, borrowed from the names */
    size_t ncases;
    const char **backends; /* in order of appearance */
    size_t nbackends;
    int samples; /* violins (1) or boxes from the statistics (0) */
    int logy;
    double unit; /* ns per unit of the axis */
    const char *unit_name;
} layout;

static size_t index_of(const char **list, size_t *n, const char *s, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (strncmp(list[i], s, len) == 0 && list[i][len] == s[len]) return i;
    list[*n] = s;
    return (*n)++;
}

static size_t case_of(const layout *l, const report_bench *b)
{
    size_t len = strlen(b->op) + 1 + strlen(b->size);
    for (size_t i = 0; i < l->ncases; i++)
        if (strncmp(l->cases[i], b->name, len) == 0 && l->cases[i][len] == '/') return i;
    return 0;
}

static size_t backend_of(const layout *l, const report_bench *b)
{
    for (size_t i = 0; i < l->nbackends; i++)
        if (strcmp(l->backends[i], b->backend) == 0) return i;
    return 0;
}

/* Where a benchmark's violin sits, and its half width. */
static double centre(const layout *l, const report_bench *b, double *half)
{
    double slot = 0.84 / (double)l->nbackends;
    *half = 0.45 * slot;
    return (double)case_of(l, b) +
           ((double)backend_of(l, b) - 0.5 * (double)(l->nbackends - 1)) * slot;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Silverman's rule on the plotted values (log10 of time on a log axis). */
static double bandwidth(const double *v, size_t n)
{
    double *s = malloc(n * sizeof *s), mean = 0, var = 0;
    if (!s) return 0;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    for (size_t i = 0; i < n; i++) mean += s[i] / (double)n;
    for (size_t i = 0; i < n; i++)
        var += (s[i] - mean) * (s[i] - mean) / (double)(n > 1 ? n - 1 : 1);
    double iqr = s[(3 * (n - 1)) / 4] - s[(n - 1) / 4], sd = sqrt(var);
    double spread = iqr > 0 && iqr / 1.34 < sd ? iqr / 1.34 : sd;
    double h = 0.9 * spread * pow((double)n, -0.2);
    double range = s[n - 1] - s[0];
    free(s);
    return h > 0 ? h : range / 10;
}

/* The samples of benchmark i as the axis plots them, and their density. */
static void violin_data(FILE *f, const layout *l, size_t i)
{
    const report_bench *b = l->ops[i];
    double *v = malloc(b->n * sizeof *v), lo = INFINITY, hi = -INFINITY;
    if (!v) return;
    for (size_t k = 0; k < b->n; k++) {
        v[k] = l->logy ? log10(b->samples[k] / l->unit) : b->samples[k] / l->unit;
        lo = fmin(lo, v[k]);
        hi = fmax(hi, v[k]);
    }
    fprintf(f, "$s%zu << EOD\n", i);
    for (size_t k = 0; k < b->n; k++) fprintf(f, "%.9g\n", v[k]);
    fprintf(f, "EOD\n");
    if (hi > lo) { /* else a flat line: every sample the same */
        fprintf(f,
                "set table $k%zu\nplot $s%zu using 1:(1) smooth kdensity bandwidth %.6g\n"
                "unset table\nstats $k%zu using 2 nooutput\nm%zu = STATS_max\n",
                i, i, bandwidth(v, b->n), i, i);
    }
    free(v);
}

/* The cases' labels under the axis, the margins they need, and the key
 * below them. */
static void xtics(FILE *f, const layout *l)
{
    int rotate = l->ncases > 6;
    size_t longest = 0;
    fprintf(f, "set xtics (");
    for (size_t c = 0; c < l->ncases; c++) {
        const char *name = l->cases[c], *slash = strchr(name, '/');
        const char *end = strchr(slash + 1, '/');
        char op[128], size[512], label[256];
        snprintf(op, sizeof op, "%.*s", (int)(slash - name), name);
        snprintf(size, sizeof size, "%.*s", (int)(end - slash - 1), slash + 1);
        report_case_label(op, size, label, sizeof label);
        if (rotate)
            for (char *p = label; *p; p++)
                if (*p == '\n') *p = ' ';
        if (strlen(label) > longest) longest = strlen(label);
        fprintf(f, "%s", c ? ", " : "");
        report_gp_string(f, label);
        fprintf(f, " %zu", c);
    }
    fprintf(f, ")\n");
    /* In character heights: the labels, then a line for the key. */
    double below = rotate ? 1.5 + 0.2 * (double)longest : 3;
    if (rotate)
        fprintf(f, "set xtics rotate by 30 right\nset lmargin %d\n",
                (int)fmin(40, fmax(10, 0.75 * (double)longest)));
    fprintf(
        f,
        "set bmargin %d\nset key at screen 0.5, screen 0.01 bottom center horizontal reverse Left "
        "samplen 2\n",
        (int)ceil(below) + 3);
}

static const char *ytrans(const layout *l)
{
    return l->logy ? "(10**$1)" : "1";
}

static void plot_violins(FILE *f, const layout *l)
{
    /* The key: one filled box per backend, whatever its first violin. */
    fprintf(f, "plot ");
    for (size_t k = 0; k < l->nbackends; k++) {
        fprintf(f, "keyentry with boxes fs solid 0.8 noborder fc rgb \"%s\" title ",
                report_colour(l->backends[k], k));
        report_gp_string(f, l->backends[k]);
        fprintf(f, ", \\\n     ");
    }
    for (size_t i = 0; i < l->n; i++) {
        const report_bench *b = l->ops[i];
        double half, x = centre(l, b, &half);
        const char *colour = report_colour(b->backend, backend_of(l, b));
        double lo = INFINITY, hi = -INFINITY;
        for (size_t s = 0; s < b->n; s++) {
            lo = fmin(lo, b->samples[s]);
            hi = fmax(hi, b->samples[s]);
        }
        if (hi > lo) {
            for (int side = -1; side <= 1; side += 2)
                fprintf(f,
                        "$k%zu using (%.6g%+.6g*$2/m%zu):%s with filledcurves x=%.6g fc rgb "
                        "\"%s\" fs solid 0.8 noborder notitle, \\\n     ",
                        i, x, side * half, i, ytrans(l), x, colour);
        } else { /* every sample the same: a line */
            fprintf(f,
                    "$s%zu every ::0::0 using (%.6g):%s:(%.6g):(0) with vectors nohead lw 3 "
                    "lc rgb \"%s\" notitle, \\\n     ",
                    i, x - half, ytrans(l), 2 * half, colour);
        }
    }
    fprintf(f, "$med using 1:2:3:(0) with vectors nohead lw 2 lc rgb \"black\" title \"median\", "
               "\\\n     $ci using 1:2:(0):3 with vectors nohead lw 4 lc rgb \"#333333\" "
               "title \"95%% CI of the median\"\n");
}

/* Without samples: a box from q1 to q3, whiskers at p5 and p95. */
static void plot_boxes(FILE *f, const layout *l)
{
    fprintf(f, "set style fill solid 0.8 border lc rgb \"black\"\nplot ");
    for (size_t k = 0; k < l->nbackends; k++) {
        fprintf(f, "$b%zu using 1:3:4:5:6:(2*$2) with candlesticks whiskerbars 0.5 fc rgb \"%s\" ",
                k, report_colour(l->backends[k], k));
        fprintf(f, "title ");
        report_gp_string(f, l->backends[k]);
        fprintf(f, ", \\\n     ");
    }
    fprintf(f, "$med using 1:2:3:(0) with vectors nohead lw 2 lc rgb \"black\" title \"median\"\n");
}

static void data_blocks(FILE *f, const layout *l)
{
    if (l->samples)
        for (size_t i = 0; i < l->n; i++) violin_data(f, l, i);
    fprintf(f, "$med << EOD\n");
    for (size_t i = 0; i < l->n; i++) {
        double half, x = centre(l, l->ops[i], &half);
        fprintf(f, "%.6g %.9g %.6g\n", x - half * 0.8, l->ops[i]->median / l->unit, 1.6 * half);
    }
    fprintf(f, "EOD\n$ci << EOD\n");
    for (size_t i = 0; i < l->n; i++) {
        const report_bench *b = l->ops[i];
        double half, x = centre(l, b, &half);
        if (isfinite(b->ci_low) && isfinite(b->ci_high))
            fprintf(f, "%.6g %.9g %.9g\n", x, b->ci_low / l->unit,
                    (b->ci_high - b->ci_low) / l->unit);
    }
    fprintf(f, "EOD\n");
    if (l->samples) return;
    for (size_t k = 0; k < l->nbackends; k++) {
        fprintf(f, "$b%zu << EOD\n", k);
        for (size_t i = 0; i < l->n; i++) {
            const report_bench *b = l->ops[i];
            if (backend_of(l, b) != k) continue;
            double half, x = centre(l, b, &half);
            fprintf(f, "%.6g %.6g %.9g %.9g %.9g %.9g\n", x, half, b->q1 / l->unit, b->p5 / l->unit,
                    b->p95 / l->unit, b->q3 / l->unit);
        }
        fprintf(f, "EOD\n");
    }
}

static void table(FILE *f, const layout *l)
{
    fprintf(f,
            "<table><tr><th>operator</th><th>size</th><th>backend</th><th>n</th>"
            "<th>median (%s)</th><th>95%% CI of the median</th><th>5th–95th percentile</th>"
            "</tr>\n",
            l->unit_name);
    for (size_t i = 0; i < l->n; i++) {
        const report_bench *b = l->ops[i];
        fprintf(f, "<tr><td>");
        report_html_escape(f, b->op);
        fprintf(f, "</td><td>");
        report_html_escape(f, b->size);
        fprintf(f, "</td><td>");
        report_html_escape(f, b->backend);
        fprintf(f, "</td><td>%zu</td><td>", b->n);
        report_html_number(f, "%.4g", b->median / l->unit);
        fprintf(f, "</td><td>[");
        report_html_number(f, "%.4g", b->ci_low / l->unit);
        fprintf(f, ", ");
        report_html_number(f, "%.4g", b->ci_high / l->unit);
        fprintf(f, "]</td><td>");
        report_html_number(f, "%.4g", b->p5 / l->unit);
        fprintf(f, " – ");
        report_html_number(f, "%.4g", b->p95 / l->unit);
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</table>\n");
}

static void notes(FILE *f, const layout *l, int from, size_t failed)
{
    if (l->samples)
        fprintf(f,
                "<p>One violin per benchmark: the density of all its samples (gnuplot's Gaussian "
                "kernel density estimate, Silverman's bandwidth%s), cut at the smallest and the "
                "largest sample, every violin scaled to the same width. The black line is the "
                "median, the grey bar its 95%% confidence interval. Samples from %s.</p>\n",
                l->logy ? ", on the logarithm of the time" : "",
                from == 1 ? "results.json" : "samples.csv");
    else
        fprintf(f, "<p>results.json holds no samples and there is no samples.csv beside it: each "
                   "box spans the quartiles of the benchmark's samples, the whiskers the 5th and "
                   "95th percentiles, the black line the median, as the statistics in "
                   "results.json give them.</p>\n");
    if (failed)
        fprintf(f, "<p>%zu operator benchmark%s failed and %s not shown (see results.json).</p>\n",
                failed, failed == 1 ? "" : "s", failed == 1 ? "is" : "are");
}

d5_status report_violins(const report_src *src, report_plot *p)
{
    if (!report_has(src, "results.json"))
        return report_absent(p, "no results.json (d5 bench --out, d5 test-operator --json) in %s",
                             src->dir);
    report_results r;
    d5_status s = report_results_read(src, &r);
    if (s != D5_OK) return s;
    layout l = {0};
    l.ops = calloc(r.n + 1, sizeof *l.ops);
    l.cases = calloc(r.n + 1, sizeof *l.cases);
    l.backends = calloc(r.n + 1, sizeof *l.backends);
    if (!l.ops || !l.cases || !l.backends) s = d5_error(D5_ERR_NOMEM, "out of memory");
    l.samples = r.samples_from != 0;
    size_t with_samples = 0, operators = 0, failed = 0;
    for (size_t i = 0; s == D5_OK && i < r.n; i++) {
        const report_bench *b = &r.b[i];
        failed += b->op && b->error;
        if (!b->op || b->error) continue;
        operators++;
        with_samples += b->n > 0;
    }
    /* Violins when every benchmark has samples; else boxes for all. */
    l.samples = operators > 0 && with_samples == operators;
    double lo = INFINITY, hi = -INFINITY, min_median = INFINITY;
    for (size_t i = 0; s == D5_OK && i < r.n; i++) {
        const report_bench *b = &r.b[i];
        if (!b->op || b->error || !isfinite(b->median)) continue;
        if (!l.samples &&
            !(isfinite(b->q1) && isfinite(b->q3) && isfinite(b->p5) && isfinite(b->p95)))
            continue;
        l.ops[l.n++] = b;
        index_of(l.cases, &l.ncases, b->name, strlen(b->op) + 1 + strlen(b->size));
        index_of(l.backends, &l.nbackends, b->backend, strlen(b->backend));
        min_median = fmin(min_median, b->median);
        for (size_t k = 0; k < b->n; k++) {
            lo = fmin(lo, b->samples[k]);
            hi = fmax(hi, b->samples[k]);
        }
        if (!l.samples) {
            lo = fmin(lo, b->p5);
            hi = fmax(hi, b->p95);
        }
    }
    if (s == D5_OK && l.n == 0)
        s = report_absent(p, "results.json holds no operator benchmarks with timings (names "
                             "OP/SIZE/BACKEND, such as Gemm/M=64,N=64,K=64/blas)");
    else if (s == D5_OK) {
        l.unit_name = report_time_unit(10 * lo, &l.unit); /* the smallest >= 0.1 */
        l.logy = lo > 0 && hi / lo > 30;
        p->width = l.ncases * l.nbackends > 12
                       ? (int)fmin(2400, 80.0 * (double)(l.ncases * l.nbackends))
                       : 1000;
        p->height = 600;
        report_text d, t, n, tb;
        s = report_text_open(&d);
        if (s == D5_OK && (s = report_text_open(&t)) != D5_OK) report_text_discard(&d);
        if (s == D5_OK) {
            data_blocks(d.f, &l);
            fprintf(t.f, "set title %s\nset ylabel \"time per call (%s%s)\"\n",
                    l.samples ? "\"Operator timings per backend: every sample\""
                              : "\"Operator timings per backend: quartiles and 5th-95th "
                                "percentiles\"",
                    l.unit_name, l.logy ? ", log scale" : "");
            double y0 = lo / l.unit, y1 = hi / l.unit, pad = l.logy ? 0 : 0.05 * (y1 - y0);
            if (!(y1 > y0)) { /* every sample the same */
                pad = 0.1 * y0;
                l.logy = 0;
            }
            fprintf(t.f, "set xrange [-0.5:%zu.5]\nset yrange [%.6g:%.6g]\n", l.ncases - 1,
                    l.logy ? y0 / 1.2 : fmax(0, y0 - pad - 1e-9 * y0),
                    l.logy ? y1 * 1.2 : y1 + pad);
            if (l.logy) {
                fprintf(t.f, "set logscale y\n");
                report_log_tics(t.f, "y", y0 / 1.2, y1 * 1.2);
            }
            fprintf(t.f, "set format y \"%%g\"\nset grid ytics mytics lc rgb \"#e5e5e5\"\n"
                         "set xtics nomirror scale 0\nset ytics nomirror\n");
            for (size_t c = 1; c < l.ncases; c++)
                fprintf(t.f,
                        "set arrow from %zu.5, graph 0 to %zu.5, graph 1 nohead lc rgb "
                        "\"#bbbbbb\" dt 2\n",
                        c - 1, c - 1);
            xtics(t.f, &l);
            if (l.samples)
                plot_violins(t.f, &l);
            else
                plot_boxes(t.f, &l);
            s = report_text_close(&d, &p->data);
            if (s == D5_OK)
                s = report_text_close(&t, &p->script);
            else
                report_text_discard(&t);
        }
        if (s == D5_OK && (s = report_text_open(&n)) == D5_OK) {
            notes(n.f, &l, r.samples_from, failed);
            s = report_text_close(&n, &p->notes);
        }
        if (s == D5_OK && (s = report_text_open(&tb)) == D5_OK) {
            table(tb.f, &l);
            s = report_text_close(&tb, &p->table);
        }
    }
    free(l.ops);
    free(l.cases);
    free(l.backends);
    report_results_free(&r);
    return s;
}
