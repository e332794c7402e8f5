/* d5 report: small functions shared by the plot builders. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void report_plot_clear(report_plot *p)
{
    free(p->data);
    free(p->script);
    free(p->absent);
    free(p->notes);
    free(p->table);
    p->data = p->script = p->absent = p->notes = p->table = NULL;
}

d5_status report_absent(report_plot *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int r = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (r < 0) return d5_error(D5_ERR_NOMEM, "out of memory");
    free(p->script);
    p->script = NULL;
    free(p->absent);
    p->absent = msg;
    return D5_OK;
}

d5_status report_text_open(report_text *t)
{
    t->s = NULL;
    t->n = 0;
    t->f = open_memstream(&t->s, &t->n);
    return t->f ? D5_OK : d5_error(D5_ERR_NOMEM, "out of memory for a plot script");
}

d5_status report_text_close(report_text *t, char **out)
{
    int bad = fclose(t->f) != 0;
    t->f = NULL;
    if (bad) {
        free(t->s);
        t->s = NULL;
        return d5_error(D5_ERR_NOMEM, "out of memory for a plot script");
    }
    *out = t->s;
    t->s = NULL;
    return D5_OK;
}

void report_text_discard(report_text *t)
{
    if (t->f) fclose(t->f);
    t->f = NULL;
    free(t->s);
    t->s = NULL;
}

char *report_path(const report_src *src, const char *name)
{
    char *p;
    return asprintf(&p, "%s/%s", src->dir, name) < 0 ? NULL : p;
}

int report_has(const report_src *src, const char *name)
{
    char *p = report_path(src, name);
    struct stat st;
    int ok = p && stat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
    return ok;
}

const char *report_colour(const char *backend, size_t index)
{
    /* The usual backends keep their colour whatever else is in a file. */
    static const struct {
        const char *name, *colour;
    } known[] = {{"blas", "#1f77b4"}, {"dnnl", "#ff7f0e"}, {"cuda", "#2ca02c"}, {"ref", "#7f7f7f"}};
    static const char *const others[] = {"#9467bd", "#d62728", "#8c564b", "#e377c2",
                                         "#17becf", "#bcbd22", "#1f77b4", "#ff7f0e"};
    for (size_t i = 0; backend && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(backend, known[i].name) == 0) return known[i].colour;
    return others[index % (sizeof others / sizeof others[0])];
}

void report_html_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
}

const char *report_time_unit(double min_ns, double *unit_ns)
{
    if (min_ns >= 1e9) {
        *unit_ns = 1e9;
        return "s";
    }
    if (min_ns >= 1e6) {
        *unit_ns = 1e6;
        return "ms";
    }
    if (min_ns >= 1e3) {
        *unit_ns = 1e3;
        return "µs";
    }
    *unit_ns = 1;
    return "ns";
}

void report_log_tics(FILE *f, const char *axis, double lo, double hi)
{
    static const double fine[] = {1, 1.5, 2, 3, 4, 5, 6, 8}, mid[] = {1, 2, 5}, coarse[] = {1};
    double decades = log10(hi / lo);
    const double *m = decades <= 1.2 ? fine : decades <= 3 ? mid : coarse;
    size_t nm = decades <= 1.2 ? 8 : decades <= 3 ? 3 : 1;
    fprintf(f, "set %stics (", axis);
    int first = 1;
    for (double d = pow(10, floor(log10(lo))); d <= hi; d *= 10)
        for (size_t i = 0; i < nm; i++) {
            double v = m[i] * d;
            if (v < lo || v > hi) continue;
            fprintf(f, v >= 1 ? "%s\"%.0f\" %g" : "%s\"%g\" %g", first ? "" : ", ", v, v);
            first = 0;
        }
    fprintf(f, ")\nset m%stics 10\n", axis);
}

void report_html_number(FILE *f, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs("–", f);
}
