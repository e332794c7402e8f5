/* d5 report: the memory timeline of one step (memory_timeline.csv:
 * time_ms,live_bytes,delta_bytes,label) and the system's utilisation over a
 * run (system.csv of the system sampler: CPU, memory, disk and network,
 * GPUs), one panel per kind of figure. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bytes_unit(double max, double *scale)
{
    if (max >= 1024.0 * 1024 * 1024) {
        *scale = 1024.0 * 1024 * 1024;
        return "GiB";
    }
    if (max >= 1024.0 * 1024) {
        *scale = 1024.0 * 1024;
        return "MiB";
    }
    *scale = 1024;
    return "KiB";
}

/* A table of a results folder: its file, what writes it, the two columns
 * the figure needs. */
typedef struct table_spec {
    const char *name, *producer;
    const char *need[2];
} table_spec;

static const table_spec memory_table = {
    "memory_timeline.csv", "the memory report of d5 train or d5 run", {"time_ms", "live_bytes"}};
static const table_spec system_table = {
    "system.csv", "the system sampler of d5 bench, d5 run and d5 train", {"time_s", "cpu_percent"}};

/* The table t of src with its two columns (their indices in col): 1 when it
 * is open in *c with rows; 0 when it is not (*s says why: D5_OK when p now
 * says the table is absent or empty, an error otherwise). */
static int open_table(const report_src *src, const table_spec *t, long col[2], report_csv *c,
                      report_plot *p, d5_status *s)
{
    const char *name = t->name;
    if (!report_has(src, name)) {
        *s = report_absent(p, "no %s (%s) in %s", name, t->producer, src->dir);
        return 0;
    }
    char *path = report_path(src, name);
    if (!path) {
        *s = d5_error(D5_ERR_NOMEM, "out of memory");
        return 0;
    }
    *s = report_csv_read(path, c);
    free(path);
    if (*s != D5_OK) return 0;
    *s = report_csv_require(c, t->need, 2, col);
    if (*s == D5_OK && c->rows == 0) *s = report_absent(p, "%s has no rows", name);
    if (*s == D5_OK && c->rows > 0) return 1;
    report_csv_free(c);
    return 0;
}

/* ---- memory_timeline.csv ---- */

d5_status report_memory(const report_src *src, report_plot *p)
{
    long col[2];
    report_csv c;
    d5_status s;
    if (!open_table(src, &memory_table, col, &c, p, &s)) return s;
    double *t = calloc(c.rows + 1, sizeof *t), *live = calloc(c.rows + 1, sizeof *live);
    if (s == D5_OK && (!t || !live)) s = d5_error(D5_ERR_NOMEM, "out of memory");
    double peak = -1, peak_t = 0, t_lo = INFINITY, t_hi = -INFINITY;
    for (size_t i = 0; s == D5_OK && i < c.rows; i++) {
        s = report_csv_number(&c, i, (size_t)col[0], 0, &t[i]);
        if (s == D5_OK) s = report_csv_number(&c, i, (size_t)col[1], 0, &live[i]);
        if (s == D5_OK) {
            t_lo = fmin(t_lo, t[i]);
            t_hi = fmax(t_hi, t[i]);
        }
        if (s == D5_OK && live[i] > peak) {
            peak = live[i];
            peak_t = t[i];
        }
    }
    if (s == D5_OK) {
        double scale;
        const char *unit = bytes_unit(peak, &scale);
        p->width = 1000;
        p->height = 550;
        report_text d, f;
        if ((s = report_text_open(&d)) == D5_OK) {
            fprintf(d.f, "$mem << EOD\n");
            for (size_t i = 0; i < c.rows; i++) fprintf(d.f, "%.9g %.9g\n", t[i], live[i] / scale);
            fprintf(d.f, "EOD\n$peak << EOD\n%.9g %.9g\nEOD\n", peak_t, peak / scale);
            s = report_text_close(&d, &p->data);
        }
        if (s == D5_OK && (s = report_text_open(&f)) == D5_OK) {
            fprintf(f.f,
                    "set title \"Memory timeline: live bytes during one step\"\n"
                    "set xlabel \"time since the step began (ms)\"\n"
                    "set xrange [%g:%g]\n"
                    "set ylabel \"live memory (%s)\"\nset yrange [0:*]\n"
                    "set offsets 0, 0, graph 0.08, 0\n"
                    "set grid xtics ytics lc rgb \"#e5e5e5\"\n"
                    "set key outside bottom center horizontal reverse Left\n"
                    "plot $mem using 1:2 with fillsteps fs solid 0.25 noborder lc rgb "
                    "\"#1f77b4\" notitle, \\\n"
                    "     $mem using 1:2 with steps lw 2 lc rgb \"#1f77b4\" title \"live "
                    "(after each allocation and free)\", \\\n"
                    "     $peak using 1:2 with points pt 7 ps 1.8 lc rgb \"#d62728\" title "
                    "\"peak %.4g %s at %.4g ms\"\n",
                    t_hi > t_lo ? fmin(0, t_lo) : t_lo - 1,
                    t_hi > t_lo ? t_hi + 0.03 * (t_hi - t_lo) : t_hi + 1, unit, peak / scale, unit,
                    peak_t);
            s = report_text_close(&f, &p->script);
        }
        if (s == D5_OK && (s = report_text_open(&f)) == D5_OK) {
            fprintf(f.f,
                    "<p>The bytes live after each of the %zu allocations and frees of "
                    "memory_timeline.csv; the peak is %.4g %s, %.4g ms into the step.</p>\n",
                    c.rows, peak / scale, unit, peak_t);
            s = report_text_close(&f, &p->notes);
        }
    }
    free(t);
    free(live);
    report_csv_free(&c);
    return s;
}

/* ---- system.csv ---- */

/* One line of a panel: a column, its title, and how it is drawn. */
typedef struct line {
    long col;
    char title[64];
    const char *style;
} line;

typedef struct panel {
    char ylabel[64];
    double scale; /* divides the column */
    line lines[80];
    size_t n;
} panel;

static void add(panel *p, long col, const char *title, const char *style)
{
    if (col < 0 || p->n == sizeof p->lines / sizeof p->lines[0]) return;
    p->lines[p->n].col = col;
    snprintf(p->lines[p->n].title, sizeof p->lines[p->n].title, "%s", title);
    p->lines[p->n].style = style;
    p->n++;
}

static double column_max(const report_csv *c, long col)
{
    double m = 0, v;
    for (size_t i = 0; col >= 0 && i < c->rows; i++)
        if (report_csv_number(c, i, (size_t)col, 1, &v) == D5_OK && v > m) m = v;
    return m;
}

static const char *const core_styles[] = {
    "lw 1 lc rgb \"#c6dbef\"",
    "lw 1 lc rgb \"#fdd0a2\"",
    "lw 1 lc rgb \"#c7e9c0\"",
    "lw 1 lc rgb \"#dadaeb\"",
};
static const char *const strong[] = {
    "lw 2 lc rgb \"#08519c\"", "lw 2 lc rgb \"#d94801\"",      "lw 2 lc rgb \"#238b45\"",
    "lw 2 lc rgb \"#6a51a3\"", "lw 2 dt 2 lc rgb \"#08519c\"", "lw 2 dt 2 lc rgb \"#d94801\"",
};

static size_t panels(const report_csv *c, panel *pl)
{
    size_t np = 0;
    char name[64], title[64];
    /* CPU: the whole machine bold, each core thin. */
    panel *cpu = &pl[np++];
    snprintf(cpu->ylabel, sizeof cpu->ylabel, "CPU (%%)");
    cpu->scale = 1;
    for (int k = 0; k < 64; k++) {
        snprintf(name, sizeof name, "cpu%d_percent", k);
        long col = report_csv_col(c, name);
        if (col < 0) break;
        add(cpu, col, k == 0 ? "each core" : "", core_styles[0]);
    }
    add(cpu, report_csv_col(c, "cpu_percent"), "all cores", strong[0]);
    /* Memory. */
    static const char *const mem[][2] = {{"memory_used_bytes", "used (machine)"},
                                         {"rss_bytes", "process RSS"}};
    double mmax = 0;
    for (size_t i = 0; i < 2; i++) mmax = fmax(mmax, column_max(c, report_csv_col(c, mem[i][0])));
    int gpus = 0;
    for (int g = 0; g < 16; g++) {
        snprintf(name, sizeof name, "gpu%d_util_percent", g);
        if (report_csv_col(c, name) < 0) break;
        gpus++;
        snprintf(name, sizeof name, "gpu%d_memory_used_bytes", g);
        mmax = fmax(mmax, column_max(c, report_csv_col(c, name)));
    }
    panel *m = &pl[np];
    const char *unit = bytes_unit(mmax, &m->scale);
    snprintf(m->ylabel, sizeof m->ylabel, "memory (%s)", unit);
    for (size_t i = 0; i < 2; i++) add(m, report_csv_col(c, mem[i][0]), mem[i][1], strong[i]);
    for (int g = 0; g < gpus; g++) {
        snprintf(name, sizeof name, "gpu%d_memory_used_bytes", g);
        snprintf(title, sizeof title, "GPU %d", g);
        add(m, report_csv_col(c, name), title, strong[2 + g % 4]);
    }
    if (m->n) np++;
    /* Disk and network. */
    static const char *const io[][2] = {{"disk_read_bytes_per_s", "disk read"},
                                        {"disk_write_bytes_per_s", "disk write"},
                                        {"net_rx_bytes_per_s", "network received"},
                                        {"net_tx_bytes_per_s", "network sent"}};
    panel *o = &pl[np];
    o->scale = 1e6;
    snprintf(o->ylabel, sizeof o->ylabel, "I/O (MB/s)");
    for (size_t i = 0; i < 4; i++) add(o, report_csv_col(c, io[i][0]), io[i][1], strong[i]);
    if (o->n) np++;
    /* GPUs: utilisation. */
    panel *g = &pl[np];
    g->scale = 1;
    snprintf(g->ylabel, sizeof g->ylabel, "GPU (%%)");
    for (int k = 0; k < gpus; k++) {
        snprintf(name, sizeof name, "gpu%d_util_percent", k);
        snprintf(title, sizeof title, "GPU %d", k);
        add(g, report_csv_col(c, name), title, strong[k % 4]);
    }
    if (g->n) np++;
    return np;
}

static d5_status system_data(FILE *f, const report_csv *c, long tcol)
{
    fprintf(f, "$sys << EOD\n");
    for (size_t i = 0; i < c->rows; i++) {
        for (size_t k = 0; k < c->cols; k++) {
            double v;
            d5_status s = report_csv_number(c, i, k, 1, &v);
            if (s != D5_OK && (long)k == tcol) return s;
            if (s != D5_OK || !isfinite(v))
                fprintf(f, "%sNaN", k ? " " : "");
            else
                fprintf(f, "%s%.9g", k ? " " : "", v);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "EOD\n");
    return D5_OK;
}

static void system_script(FILE *f, const panel *pl, size_t np, long tcol)
{
    /* Fixed margins so that the panels share their time axis. */
    double top = 0.93, bottom = 0.08, gap = 0.045,
           h = (top - bottom - gap * (double)(np - 1)) / (double)np;
    fprintf(f, "set multiplot title \"System utilisation\"\n"
               "set grid xtics ytics lc rgb \"#e5e5e5\"\n"

               "set lmargin at screen 0.09\nset rmargin at screen 0.77\n");
    for (size_t k = 0; k < np; k++) {
        const panel *p = &pl[k];
        double hi = top - (double)k * (h + gap);
        fprintf(f, "set tmargin at screen %.4f\nset bmargin at screen %.4f\n", hi, hi - h);
        fprintf(f, "set key at screen 0.79, screen %.4f left top vertical reverse Left samplen 2\n",
                hi);
        fprintf(f, "set ylabel \"%s\"\n", p->ylabel);
        fprintf(f, k + 1 == np ? "set xlabel \"time since the sampler started (s)\"\n"
                                 "set format x \"%%g\"\n"
                               : "unset xlabel\nset format x \"\"\n");
        fprintf(f, strstr(p->ylabel, "%") ? "set yrange [0:105]\n" : "set yrange [0:*]\n");
        fprintf(f, "plot ");
        for (size_t i = 0; i < p->n; i++) {
            fprintf(f, "%s$sys using %ld:($%ld/%g) with lines %s ", i ? ", \\\n     " : "",
                    tcol + 1, p->lines[i].col + 1, p->scale, p->lines[i].style);
            if (p->lines[i].title[0]) {
                fprintf(f, "title ");
                report_gp_string(f, p->lines[i].title);
            } else {
                fprintf(f, "notitle");
            }
        }
        fprintf(f, "\n");
    }
    fprintf(f, "unset multiplot\n");
}

d5_status report_system(const report_src *src, report_plot *p)
{
    long col[2];
    report_csv c;
    d5_status s;
    if (!open_table(src, &system_table, col, &c, p, &s)) return s;
    panel *pl = calloc(4, sizeof *pl);
    if (!pl) s = d5_error(D5_ERR_NOMEM, "out of memory");
    if (s == D5_OK) {
        size_t np = panels(&c, pl);
        p->width = 1000;
        p->height = 120 + 230 * (int)np;
        report_text d, t;
        if ((s = report_text_open(&d)) == D5_OK) {
            s = system_data(d.f, &c, col[0]);
            if (s == D5_OK)
                s = report_text_close(&d, &p->data);
            else
                report_text_discard(&d);
        }
        if (s == D5_OK && (s = report_text_open(&t)) == D5_OK) {
            system_script(t.f, pl, np, col[0]);
            s = report_text_close(&t, &p->script);
        }
        if (s == D5_OK && (s = report_text_open(&t)) == D5_OK) {
            fprintf(t.f,
                    "<p>%zu samples of system.csv over %.4g s: CPU utilisation of the whole "
                    "machine and of each core, memory, disk and network rates%s.</p>\n",
                    c.rows, column_max(&c, col[0]), np > 3 ? ", GPUs" : "");
            s = report_text_close(&t, &p->notes);
        }
    }
    free(pl);
    report_csv_free(&c);
    return s;
}
