/* d5 report: the page. One HTML file that opens offline: the SVGs inlined
 * (their ids prefixed so that several plots can share the page), no script,
 * no font and no address outside the report folder. */
#define _GNU_SOURCE
#include "report_plot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got + 1 > cap) {
            cap = 2 * (n + got + 1);
            char *g = realloc(buf, cap);
            if (!g) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = g;
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    fclose(f);
    if (!buf) buf = calloc(1, 1);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* gnuplot's SVG as an element of the page: from <svg on, without the
 * namespace declarations (HTML supplies them), every id and reference to an
 * id prefixed with the plot's name, the plot's title as its <title>. */
static void inline_svg(FILE *f, const char *svg, const report_plot *p)
{
    const char *s = strstr(svg, "<svg");
    if (!s) return;
    fprintf(f, "<svg class=\"plot\" role=\"img\"");
    s += 4;
    static const char *const drop[] = {" xmlns=\"http://www.w3.org/2000/svg\"",
                                       " xmlns:xlink=\"http://www.w3.org/1999/xlink\"",
                                       "\n xmlns=\"http://www.w3.org/2000/svg\"",
                                       "\n xmlns:xlink=\"http://www.w3.org/1999/xlink\""};
    while (*s) {
        int skipped = 0;
        for (size_t i = 0; i < sizeof drop / sizeof drop[0] && !skipped; i++)
            if (starts(s, drop[i])) {
                s += strlen(drop[i]);
                skipped = 1;
            }
        if (skipped) continue;
        if (starts(s, "<title>Gnuplot</title>")) {
            fprintf(f, "<title>");
            report_html_escape(f, p->title);
            fprintf(f, "</title>");
            s += strlen("<title>Gnuplot</title>");
        } else if ((s[0] == ' ' || s[0] == '\t' || s[0] == '\n') &&
                   (starts(s + 1, "id=\"") || starts(s + 1, "id='"))) {
            fprintf(f, "%cid=%c%s-", s[0], s[4], p->name);
            s += 5;
        } else if (starts(s, "href=\"#") || starts(s, "href='#")) {
            fprintf(f, "href=%c#%s-", s[5], p->name);
            s += 7;
        } else if (starts(s, "url(#")) {
            fprintf(f, "url(#%s-", p->name);
            s += 5;
        } else {
            fputc(*s++, f);
        }
    }
}

static void base64(FILE *f, const unsigned char *b, size_t n)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)b[i] << 16 | (i + 1 < n ? (unsigned)b[i + 1] << 8 : 0) |
                     (i + 2 < n ? b[i + 2] : 0);
        fputc(a[v >> 18 & 63], f);
        fputc(a[v >> 12 & 63], f);
        fputc(i + 1 < n ? a[v >> 6 & 63] : '=', f);
        fputc(i + 2 < n ? a[v & 63] : '=', f);
    }
}

static const char style[] =
    "body{font-family:sans-serif;color:#222;max-width:1150px;margin:1.5em auto;padding:0 1em;"
    "line-height:1.45}\n"
    "h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}\n"
    "svg.plot,img.plot{width:100%;height:auto;display:block}\n"
    "table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}\n"
    "th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}\n"
    "td:not(:first-child){font-variant-numeric:tabular-nums}\n"
    ".absent{color:#8a1f11}.files{font-size:0.9em;color:#555}\n";

static d5_status section(FILE *f, const char *dir, const report_plot *p, const report_page *pg)
{
    fprintf(f, "<section id=\"plot-%s\">\n<h2>", p->name);
    report_html_escape(f, p->title);
    fprintf(f, "</h2>\n");
    if (!p->script) {
        fprintf(f, "<p class=\"absent\">Not drawn: ");
        report_html_escape(f, p->absent ? p->absent : "no data");
        fprintf(f, ".</p>\n</section>\n");
        return D5_OK;
    }
    if (p->notes) fputs(p->notes, f);
    char *path;
    if (asprintf(&path, "%s/%s.%s", dir, p->name, pg->svg ? "svg" : "png") < 0)
        return d5_error(D5_ERR_NOMEM, "out of memory");
    size_t len = 0;
    char *bytes = slurp_file(path, &len);
    if (!bytes) {
        d5_status s = d5_error(D5_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        free(path);
        return s;
    }
    free(path);
    fprintf(f, "<figure>\n");
    if (pg->svg) {
        inline_svg(f, bytes, p);
    } else {
        fprintf(f, "<img class=\"plot\" alt=\"");
        report_html_escape(f, p->title);
        fprintf(f, "\" src=\"data:image/png;base64,");
        base64(f, (const unsigned char *)bytes, len);
        fprintf(f, "\">");
    }
    free(bytes);
    fprintf(f, "\n</figure>\n<p class=\"files\">Files:");
    if (pg->svg) fprintf(f, " <a href=\"%s.svg\">%s.svg</a>", p->name, p->name);
    if (pg->png) fprintf(f, " <a href=\"%s.png\">%s.png</a>", p->name, p->name);
    fprintf(f, "</p>\n");
    if (p->table)
        fprintf(f, "<details><summary>The figures plotted</summary>\n%s</details>\n", p->table);
    fprintf(f, "</section>\n");
    return D5_OK;
}

d5_status report_html_write(const char *dir, const report_page *pg)
{
    report_text t;
    d5_status s = report_text_open(&t);
    if (s != D5_OK) return s;
    FILE *f = t.f;
    d5_build_info bi;
    d5_build_info_get(&bi);
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %z", &tm);
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
    report_html_escape(f, pg->title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", style);
    report_html_escape(f, pg->title);
    fprintf(f, "</h1>\n<p>The results folder <code>");
    report_html_escape(f, pg->source_dir);
    fprintf(f, "</code>, plotted by d5 report (d5 %s, commit ", bi.version);
    report_html_escape(f, bi.git_commit);
    fprintf(f, ") on %s.</p>\n<ul>\n", date);
    for (size_t i = 0; i < pg->nplots; i++) {
        const report_plot *p = &pg->plots[i];
        fprintf(f, "<li><a href=\"#plot-%s\">", p->name);
        report_html_escape(f, p->title);
        fprintf(f, "</a>%s</li>\n", p->script ? "" : " (not drawn)");
    }
    fprintf(f, "</ul>\n");
    for (size_t i = 0; s == D5_OK && i < pg->nplots; i++) s = section(f, dir, &pg->plots[i], pg);
    fprintf(f, "</body>\n</html>\n");
    char *html = NULL;
    if (s == D5_OK)
        s = report_text_close(&t, &html);
    else
        report_text_discard(&t);
    char *path = NULL;
    if (s == D5_OK && asprintf(&path, "%s/index.html", dir) < 0) {
        path = NULL;
        s = d5_error(D5_ERR_NOMEM, "out of memory");
    }
    if (s == D5_OK) s = d5_file_write_atomic(path, html, strlen(html));
    free(path);
    free(html);
    return s;
}
