/* d5 report: what the plot builders (report_*.c) share with cmd_report.c.
 * A builder reads its inputs from the results folder and either writes the
 * gnuplot commands of its plot or says why the plot is absent. */
#ifndef D5_CLI_REPORT_PLOT_H
#define D5_CLI_REPORT_PLOT_H

#include "cli.h"

#include <stdio.h>

/* One plot of the page. The builder fills script (the commands after the
 * terminal and output are set; data inline as $name << EOD blocks) or absent;
 * notes and table are HTML fragments for the page. Strings are malloc'd and
 * freed by report_plot_clear. */
typedef struct report_plot {
    const char *name;  /* file stem: "roofline" gives roofline.svg, roofline.png */
    const char *title; /* heading in the page */
    int width, height; /* pixels of the PNG (and the SVG's view box) */
    char *data;        /* datablocks and computed variables, run once before both terminals */
    char *script;      /* the plot itself, run once per format; NULL when absent */
    char *absent;      /* why there is no plot (plain text) */
    char *notes;       /* what the plot shows, where its numbers come from (HTML) */
    char *table;       /* the plotted figures as an HTML table, or NULL */
} report_plot;

void report_plot_clear(report_plot *p);
/* Sets p->absent to a formatted message; returns D5_OK (an absent plot is no
 * error). */
d5_status report_absent(report_plot *p, const char *fmt, ...) D5_PRINTF(2, 3);

/* A growing string (open_memstream). */
typedef struct report_text {
    FILE *f;
    char *s;
    size_t n;
} report_text;
d5_status report_text_open(report_text *t);
/* Closes the stream; *out receives the string (malloc'd). */
d5_status report_text_close(report_text *t, char **out);
/* Drops what was written. */
void report_text_discard(report_text *t);

/* ---- Plot builders: one per plot, in the order of the page ---- */

/* The results folder and what was asked for. */
typedef struct report_src {
    const char *dir;
} report_src;

/* A path inside the folder (malloc'd), and whether that file exists. */
char *report_path(const report_src *src, const char *name);
int report_has(const report_src *src, const char *name);

d5_status report_violins(const report_src *src, report_plot *p);    /* report_operators.c */
d5_status report_roofline(const report_src *src, report_plot *p);   /* report_roofline.c */
d5_status report_train_step(const report_src *src, report_plot *p); /* report_train.c */
d5_status report_train_time(const report_src *src, report_plot *p); /* report_train.c */
d5_status report_scaling(const report_src *src, report_plot *p);    /* report_scaling.c */
d5_status report_memory(const report_src *src, report_plot *p);     /* report_system.c */
d5_status report_system(const report_src *src, report_plot *p);     /* report_system.c */

/* ---- Results files (report_results.c) ---- */

/* One benchmark of a results.json (d5 bench, d5 test-operator --json, or
 * Google Benchmark's JSON), times in nanoseconds. An operator benchmark is
 * named OP/SIZE/BACKEND with '=' in SIZE ("Gemm/M=1760,N=128,K=1760/blas"). */
typedef struct report_bench {
    char *name;
    char *op, *size, *backend;                       /* NULL unless an operator benchmark */
    double median, ci_low, ci_high, p5, q1, q3, p95; /* NaN where the file has none */
    double gflops, gbs, flops;                       /* counters; NaN where absent */
    double *samples;                                 /* ns; n of them (0: none) */
    size_t n, cap;
    char *error; /* the benchmark failed: why */
} report_bench;

typedef struct report_results {
    report_bench *b;
    size_t n;
    int samples_from; /* 0: none, 1: results.json, 2: samples.csv */
} report_results;

/* Reads DIR/results.json and, when the JSON carries no samples,
 * DIR/samples.csv. D5_ERR_NOTFOUND when there is no results.json;
 * D5_ERR_FORMAT (naming the file, the benchmark and the field) when it does
 * not parse. */
d5_status report_results_read(const report_src *src, report_results *out);
void report_results_free(report_results *r);
/* Bytes that one call of an operator moves, derived from its DeepBench size
 * label where the count is exact (f32 Gemm, MatMul, Conv: every input and
 * output tensor once, as the operators' cost functions count them). Returns 1
 * and sets *bytes, or 0. */
int report_operator_bytes(const char *op, const char *size, double *bytes);
/* A short label of an operator case for an axis: "Gemm 1760×128×1760". */
void report_case_label(const char *op, const char *size, char *buf, size_t len);

/* ---- CSV (report_csv.c) ---- */

/* A CSV file with a header row (RFC 4180 quoting), every cell kept as text. */
typedef struct report_csv {
    char *path;
    char **cells; /* rows * cols, row-major; the header is not a row */
    char **header;
    size_t rows, cols;
} report_csv;

/* D5_ERR_IO when it cannot be read, D5_ERR_FORMAT (with the line) when a row
 * has another number of fields than the header. */
d5_status report_csv_read(const char *path, report_csv *out);
void report_csv_free(report_csv *c);
/* The column named `name`, or -1. */
long report_csv_col(const report_csv *c, const char *name);
/* The cell as text. */
const char *report_csv_cell(const report_csv *c, size_t row, size_t col);
/* The cell as a finite number (D5_ERR_FORMAT naming file, line and column
 * otherwise; an empty cell is NaN when allow_empty). */
d5_status report_csv_number(const report_csv *c, size_t row, size_t col, int allow_empty,
                            double *out);
/* The columns that must be present: D5_ERR_FORMAT naming the first missing. */
d5_status report_csv_require(const report_csv *c, const char *const *names, size_t n, long *cols);

/* ---- gnuplot (report_gnuplot.c) ---- */

/* Writes s as a gnuplot double-quoted string ("\n" kept as a line break). */
void report_gp_string(FILE *f, const char *s);
/* The gnuplot program on PATH (malloc'd), or NULL. */
char *report_gnuplot_find(void);
/* Runs `gnuplot` on the plot's script once per format ("svg", "png"),
 * writing DIR/NAME.svg and DIR/NAME.png. Whatever gnuplot says on standard
 * error is passed on, prefixed with the plot's name. D5_ERR_BACKEND when it
 * fails or a file is missing. */
d5_status report_gnuplot_run(const char *gnuplot, const char *dir, const report_plot *p, int svg,
                             int png);

/* ---- The page (report_html.c) ---- */

typedef struct report_page {
    const char *title, *source_dir;
    const report_plot *plots;
    size_t nplots;
    int svg, png; /* the formats written */
} report_page;

/* Writes DIR/index.html: self-contained (SVGs inlined with their ids made
 * unique, PNGs only as links, or inlined as data: URIs when no SVG was made). */
d5_status report_html_write(const char *dir, const report_page *page);

/* Writes s with &, <, >, " and ' escaped for HTML. */
void report_html_escape(FILE *f, const char *s);

/* Writes v with printf format fmt ("%.4g"), or "–" when v is not finite. */
void report_html_number(FILE *f, const char *fmt, double v);

/* A time unit for values in nanoseconds whose smallest is `min_ns`: "ns",
 * "µs", "ms" or "s", and its size in nanoseconds. */
const char *report_time_unit(double min_ns, double *unit_ns);

/* Labelled tics of a log axis ("x", "y") over [lo, hi]: 1-2-5 in each
 * decade, or finer when the range spans about one decade, so that every
 * axis shows several numbers. */
void report_log_tics(FILE *f, const char *axis, double lo, double hi);

/* Colours of the backends (and of other series), the same in every plot. */
const char *report_colour(const char *backend, size_t index);

#endif
