/* d5 report: CSV files with a header row (samples.csv, steps.csv,
 * memory_timeline.csv, system.csv), read whole, every cell kept as text. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The fields of one record starting at *p (RFC 4180: quoted fields may hold
 * commas, doubled quotes and line breaks), unquoted in place. Advances *p past
 * the record's line break. Returns the number of fields, or -1 when a quote is
 * not closed. */
static long split_record(char **p, char ***fields, size_t *cap)
{
    char *s = *p, *w = s;
    size_t n = 0;
    for (;;) {
        if (n == *cap) {
            size_t c = *cap ? 2 * *cap : 16;
            char **g = realloc(*fields, c * sizeof *g);
            if (!g) return -2;
            *fields = g;
            *cap = c;
        }
        (*fields)[n++] = w;
        if (*s == '"') {
            s++;
            for (;;) {
                if (*s == '\0') return -1;
                if (*s == '"' && s[1] == '"') {
                    *w++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    *w++ = *s++;
                }
            }
        }
        while (*s && *s != ',' && *s != '\n' && *s != '\r') *w++ = *s++;
        if (*s == ',') {
            *w++ = '\0';
            s++;
            continue;
        }
        if (*s == '\r') s++;
        if (*s == '\n') s++;
        *w = '\0';
        break;
    }
    *p = s;
    return (long)n;
}

d5_status report_csv_read(const char *path, report_csv *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return d5_error(D5_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = 2 * (len + got + 1);
            char *g = realloc(text, cap);
            if (!g) {
                free(text);
                fclose(f);
                return d5_error(D5_ERR_NOMEM, "%s: out of memory", path);
            }
            text = g;
        }
        memcpy(text + len, chunk, got);
        len += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        return d5_error(D5_ERR_IO, "cannot read '%s'", path);
    }
    if (!text || len == 0) {
        free(text);
        return d5_error(D5_ERR_FORMAT, "%s: empty file, expected a header row", path);
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        free(text);
        return d5_error(D5_ERR_FORMAT, "%s: a NUL byte; not a CSV file", path);
    }
    char **fields = NULL;
    size_t fcap = 0, cells_cap = 0, line = 1;
    char *p = text;
    d5_status s = D5_OK;
    long nf = split_record(&p, &fields, &fcap);
    if (nf < 0) s = d5_error(D5_ERR_FORMAT, "%s: line 1: a quote is not closed", path);
    if (s == D5_OK) {
        out->cols = (size_t)nf;
        out->header = malloc((size_t)nf * sizeof *out->header);
        if (!out->header) s = d5_error(D5_ERR_NOMEM, "%s: out of memory", path);
        for (long i = 0; s == D5_OK && i < nf; i++) out->header[i] = fields[i];
    }
    while (s == D5_OK && *p) {
        line++;
        char *start = p;
        nf = split_record(&p, &fields, &fcap);
        if (nf == 1 && fields[0][0] == '\0' && (start[0] == '\n' || start[0] == '\r'))
            continue; /* a blank line */
        if (nf < 0) {
            s = d5_error(D5_ERR_FORMAT, "%s: line %zu: a quote is not closed", path, line);
            break;
        }
        if ((size_t)nf != out->cols) {
            s = d5_error(D5_ERR_FORMAT, "%s: line %zu has %ld fields, the header %zu", path, line,
                         nf, out->cols);
            break;
        }
        if ((out->rows + 1) * out->cols > cells_cap) {
            size_t c = cells_cap ? 2 * cells_cap : 64 * out->cols;
            char **g = realloc(out->cells, c * sizeof *g);
            if (!g) {
                s = d5_error(D5_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            out->cells = g;
            cells_cap = c;
        }
        memcpy(out->cells + out->rows * out->cols, fields, out->cols * sizeof *fields);
        out->rows++;
    }
    free(fields);
    /* The cells point into the text, which the first header cell owns. */
    out->path = strdup(path);
    if (s == D5_OK && !out->path) s = d5_error(D5_ERR_NOMEM, "%s: out of memory", path);
    if (s != D5_OK || !out->header) {
        free(text);
        free(out->header);
        free(out->cells);
        free(out->path);
        memset(out, 0, sizeof *out);
        return s;
    }
    return D5_OK;
}

void report_csv_free(report_csv *c)
{
    if (!c) return;
    if (c->header) free(c->header[0]); /* the text of the whole file */
    free(c->header);
    free(c->cells);
    free(c->path);
    memset(c, 0, sizeof *c);
}

long report_csv_col(const report_csv *c, const char *name)
{
    for (size_t i = 0; i < c->cols; i++)
        if (strcmp(c->header[i], name) == 0) return (long)i;
    return -1;
}

const char *report_csv_cell(const report_csv *c, size_t row, size_t col)
{
    return c->cells[row * c->cols + col];
}

d5_status report_csv_number(const report_csv *c, size_t row, size_t col, int allow_empty,
                            double *out)
{
    const char *v = report_csv_cell(c, row, col);
    if (allow_empty && v[0] == '\0') {
        *out = NAN;
        return D5_OK;
    }
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno == ERANGE || !isfinite(x))
        return d5_error(D5_ERR_FORMAT, "%s: data row %zu, column %s: '%s' is not a number", c->path,
                        row + 1, c->header[col], v);
    *out = x;
    return D5_OK;
}

d5_status report_csv_require(const report_csv *c, const char *const *names, size_t n, long *cols)
{
    for (size_t i = 0; i < n; i++) {
        cols[i] = report_csv_col(c, names[i]);
        if (cols[i] < 0)
            return d5_error(D5_ERR_FORMAT, "%s: no column '%s' in the header", c->path, names[i]);
    }
    return D5_OK;
}
