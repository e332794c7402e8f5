/* Two benchmark sets compared benchmark by benchmark: medians, ratio,
 * Mann-Whitney U, verdict; the table and the JSON document. The readers of
 * results files are in compare_read.c. */
#include "compare_set.h"
#include "d5/report.h"
#include "internal.h"
#include "json.h"

#include <math.h>
#include <string.h>

/* ---- Sets ---- */

d5_status d5_bench_set_create(const char *label, d5_bench_set **out)
{
    if (!out) return d5_error(D5_ERR_INVALID, "d5_bench_set_create: NULL output");
    d5_bench_set *s = d5_calloc(1, sizeof *s, "benchmark set");
    if (!s) return D5_ERR_NOMEM;
    s->label = d5_strdup(label ? label : "", "benchmark set label");
    if (!s->label) {
        d5_free(s);
        return D5_ERR_NOMEM;
    }
    s->format = "";
    *out = s;
    return D5_OK;
}

void d5_bench_set_free(d5_bench_set *set)
{
    if (!set) return;
    for (size_t i = 0; i < set->n; i++) {
        d5_free(set->b[i].name);
        d5_free(set->b[i].error);
        d5_free(set->b[i].samples);
    }
    d5_free(set->b);
    d5_free(set->label);
    d5_free(set);
}

d5__bench *d5__bench_set_find(d5_bench_set *set, const char *name)
{
    if (set->last < set->n && strcmp(set->b[set->last].name, name) == 0) return &set->b[set->last];
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->b[i].name, name) == 0) {
            set->last = i;
            return &set->b[i];
        }
    return NULL;
}

d5_status d5__bench_set_new(d5_bench_set *set, const char *name, d5__bench **out)
{
    if (d5_grow(&set->b, &set->cap, set->n + 1, sizeof *set->b, "benchmark set") != D5_OK)
        return D5_ERR_NOMEM;
    d5__bench *b = &set->b[set->n];
    memset(b, 0, sizeof *b);
    b->name = d5_strdup(name, "benchmark name");
    if (!b->name) return D5_ERR_NOMEM;
    b->median = b->ci_low = b->ci_high = NAN;
    b->source = "";
    set->last = set->n++;
    *out = b;
    return D5_OK;
}

d5_status d5__bench_push(d5__bench *b, double v)
{
    if (d5_grow(&b->samples, &b->cap, b->n + 1, sizeof *b->samples, "samples") != D5_OK)
        return D5_ERR_NOMEM;
    b->samples[b->n++] = v;
    return D5_OK;
}

d5_status d5__bench_summarise(d5__bench *b)
{
    if (b->n == 0) return D5_OK;
    d5_stats st;
    d5_status s = d5_stats_compute(b->samples, b->n, &st);
    if (s != D5_OK) return s;
    b->median = st.median;
    b->ci_low = st.ci_low;
    b->ci_high = st.ci_high;
    return D5_OK;
}

/* A new benchmark for the public add functions, after checking its name. */
static d5_status add_checked(d5_bench_set *set, const char *name, const char *fn, d5__bench **out)
{
    if (!set || !name) return d5_error(D5_ERR_INVALID, "%s: NULL argument", fn);
    if (d5__bench_set_find(set, name))
        return d5_error(D5_ERR_INVALID, "%s: '%s' is already in the set '%s'", fn, name,
                        set->label);
    return d5__bench_set_new(set, name, out);
}

d5_status d5_bench_set_add_samples(d5_bench_set *set, const char *name, const double *samples,
                                   size_t n)
{
    if (!samples || n == 0)
        return d5_error(D5_ERR_INVALID, "d5_bench_set_add_samples: '%s' has no samples",
                        name ? name : "");
    for (size_t i = 0; i < n; i++)
        if (isnan(samples[i]))
            return d5_error(D5_ERR_INVALID, "d5_bench_set_add_samples: sample %zu of '%s' is NaN",
                            i, name ? name : "");
    d5__bench *b;
    d5_status s = add_checked(set, name, "d5_bench_set_add_samples", &b);
    if (s != D5_OK) return s;
    b->samples = d5_alloc(n * sizeof *b->samples, "samples");
    if (!b->samples) return D5_ERR_NOMEM; /* the entry stays, without samples */
    memcpy(b->samples, samples, n * sizeof *samples);
    b->n = b->cap = n;
    b->source = "added";
    return d5__bench_summarise(b);
}

d5_status d5_bench_set_add_median(d5_bench_set *set, const char *name, double median, double ci_low,
                                  double ci_high)
{
    d5__bench *b;
    d5_status s = add_checked(set, name, "d5_bench_set_add_median", &b);
    if (s != D5_OK) return s;
    b->median = median;
    b->ci_low = ci_low;
    b->ci_high = ci_high;
    return D5_OK;
}

d5_status d5_bench_set_add_error(d5_bench_set *set, const char *name, const char *reason)
{
    d5__bench *b;
    d5_status s = add_checked(set, name, "d5_bench_set_add_error", &b);
    if (s != D5_OK) return s;
    b->error = d5_strdup(reason ? reason : "failed", "error message");
    return b->error ? D5_OK : D5_ERR_NOMEM;
}

size_t d5_bench_set_count(const d5_bench_set *set)
{
    return set ? set->n : 0;
}

d5_status d5_bench_set_at(const d5_bench_set *set, size_t i, d5_bench_entry *out)
{
    if (!set || !out) return d5_error(D5_ERR_INVALID, "d5_bench_set_at: NULL argument");
    if (i >= set->n)
        return d5_error(D5_ERR_INVALID, "d5_bench_set_at: index %zu, the set '%s' has %zu", i,
                        set->label, set->n);
    const d5__bench *b = &set->b[i];
    *out =
        (d5_bench_entry){b->name,    b->error, b->n ? b->samples : NULL, b->n, b->median, b->ci_low,
                         b->ci_high, b->source};
    return D5_OK;
}

const char *d5_bench_set_label(const d5_bench_set *set)
{
    return set ? set->label : "";
}

const char *d5_bench_set_format(const d5_bench_set *set)
{
    return set ? set->format : "";
}

/* ---- Verdicts ---- */

static const char *const verdict_names[] = {
#define D5__VERDICT_NAME(name, key, text) key,
    D5_VERDICT_LIST(D5__VERDICT_NAME)
#undef D5__VERDICT_NAME
};
static const char *const verdict_texts[] = {
#define D5__VERDICT_TEXT(name, key, text) text,
    D5_VERDICT_LIST(D5__VERDICT_TEXT)
#undef D5__VERDICT_TEXT
};
_Static_assert(sizeof verdict_names / sizeof verdict_names[0] == D5_VERDICT_COUNT,
               "one name per verdict");

const char *d5_verdict_name(d5_verdict v)
{
    return (unsigned)v < D5_VERDICT_COUNT ? verdict_names[v] : "unknown";
}

const char *d5_verdict_str(d5_verdict v)
{
    return (unsigned)v < D5_VERDICT_COUNT ? verdict_texts[v] : "unknown";
}

/* ---- Comparison ---- */

d5_compare_params d5_compare_default_params(void)
{
    return (d5_compare_params){.alpha = 0.05, .threshold = 0.05};
}

static d5_compare_side side_of(const d5__bench *b)
{
    if (!b) return (d5_compare_side){0, 0, 0, NAN, NAN, NAN};
    return (d5_compare_side){1,         b->error != NULL, b->error ? 0 : b->n,
                             b->median, b->ci_low,        b->ci_high};
}

/* The smallest two-sided p-value the exact test can give for na and nb
 * samples without ties: 2 / C(na + nb, na). */
static double smallest_p(size_t na, size_t nb)
{
    size_t k = na < nb ? na : nb;
    double c = 1;
    for (size_t i = 1; i <= k && c < 1e300; i++) c = c * (double)(na + nb - k + i) / (double)i;
    return fmin(1.0, 2 / c);
}

static d5_status judge(d5_compare_row *r, const d5__bench *a, const d5__bench *b,
                       const d5_compare_params *p)
{
    r->a = side_of(a);
    r->b = side_of(b);
    r->ratio = r->p_value = NAN;
    r->note[0] = '\0';
    if ((a && a->error) || (b && b->error)) {
        r->verdict = D5_VERDICT_FAILED;
        snprintf(r->note, sizeof r->note, "failed in %s: %s",
                 a && a->error && b && b->error ? "A and B" : (a && a->error ? "A" : "B"),
                 a && a->error ? a->error : b->error);
        return D5_OK;
    }
    if (!b) {
        r->verdict = D5_VERDICT_ONLY_A;
        return D5_OK;
    }
    if (!a) {
        r->verdict = D5_VERDICT_ONLY_B;
        return D5_OK;
    }
    if (a->median > 0 && isfinite(a->median) && isfinite(b->median))
        r->ratio = b->median / a->median;
    if (a->n == 0 || b->n == 0) {
        r->verdict = D5_VERDICT_NO_SAMPLES;
        snprintf(r->note, sizeof r->note, "no samples: p-value unavailable (none in %s)",
                 a->n == 0 && b->n == 0 ? "A and B" : (a->n == 0 ? "A" : "B"));
        return D5_OK;
    }
    d5_mwu m;
    d5_status s = d5_mann_whitney(a->samples, a->n, b->samples, b->n, &m);
    if (s != D5_OK) return s;
    r->p_value = m.p_value;
    r->exact = m.exact;
    int significant = m.p_value < p->alpha;
    if (significant && r->ratio > 1 + p->threshold)
        r->verdict = D5_VERDICT_SLOWER;
    else if (significant && r->ratio < 1 - p->threshold)
        r->verdict = D5_VERDICT_FASTER;
    else
        r->verdict = D5_VERDICT_SAME;
    double floor_p = smallest_p(a->n, b->n);
    if (r->verdict == D5_VERDICT_SAME && isnan(r->ratio))
        snprintf(r->note, sizeof r->note, "no significant difference (the median of A is %g)",
                 a->median);
    else if (r->verdict == D5_VERDICT_SAME && floor_p >= p->alpha)
        snprintf(r->note, sizeof r->note,
                 "no significant difference (with %zu and %zu samples p cannot fall below %.3g)",
                 a->n, b->n, floor_p);
    return D5_OK;
}

/* The benchmark of `set` named `name`, looked for from position `hint` on
 * (two runs of one suite list their benchmarks in the same order). */
static const d5__bench *find_from(const d5_bench_set *set, const char *name, size_t hint)
{
    for (size_t k = 0; k < set->n; k++) {
        const d5__bench *b = &set->b[(hint + k) % set->n];
        if (strcmp(b->name, name) == 0) return b;
    }
    return NULL;
}

d5_status d5_compare_sets(const d5_bench_set *a, const d5_bench_set *b, const d5_compare_params *p,
                          d5_comparison *out)
{
    if (!a || !b || !out) return d5_error(D5_ERR_INVALID, "d5_compare_sets: NULL argument");
    d5_compare_params par = p ? *p : d5_compare_default_params();
    if (!(par.alpha > 0 && par.alpha < 1) || !(par.threshold >= 0))
        return d5_error(D5_ERR_INVALID,
                        "d5_compare_sets: alpha %g must lie in (0, 1) and threshold %g be >= 0",
                        par.alpha, par.threshold);
    d5_comparison c;
    memset(&c, 0, sizeof c);
    c.params = par;
    c.rows = d5_calloc(a->n + b->n + 1, sizeof *c.rows, "comparison rows");
    unsigned char *matched = d5_calloc(b->n + 1, 1, "comparison");
    c.label_a = d5_strdup(a->label, "comparison label");
    c.label_b = d5_strdup(b->label, "comparison label");
    d5_status s = c.rows && matched && c.label_a && c.label_b ? D5_OK : D5_ERR_NOMEM;
    snprintf(c.format_a, sizeof c.format_a, "%s", a->format);
    snprintf(c.format_b, sizeof c.format_b, "%s", b->format);
    for (size_t i = 0; s == D5_OK && i < a->n + b->n; i++) {
        const d5__bench *x = i < a->n ? &a->b[i] : NULL, *y;
        if (x) {
            y = find_from(b, x->name, i);
            if (y) matched[y - b->b] = 1;
        } else {
            if (matched[i - a->n]) continue;
            y = &b->b[i - a->n];
        }
        d5_compare_row *r = &c.rows[c.nrows];
        r->name = d5_strdup(x ? x->name : y->name, "benchmark name");
        if (!r->name) s = D5_ERR_NOMEM;
        if (s == D5_OK) s = judge(r, x, y, &par);
        if (r->name) c.nrows++;
        if (s == D5_OK) c.count[r->verdict]++;
    }
    d5_free(matched);
    if (s != D5_OK) {
        d5_comparison_free(&c);
        return s;
    }
    *out = c;
    return D5_OK;
}

void d5_comparison_free(d5_comparison *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->nrows; i++) d5_free(c->rows[i].name);
    d5_free(c->rows);
    d5_free(c->label_a);
    d5_free(c->label_b);
    memset(c, 0, sizeof *c);
}

/* ---- The table ---- */

static void side_text(const d5_compare_side *sd, char *buf, size_t size)
{
    if (!sd->present) {
        snprintf(buf, size, "-");
    } else if (sd->failed) {
        snprintf(buf, size, "FAILED");
    } else if (isnan(sd->median)) {
        snprintf(buf, size, "no median");
    } else {
        char m[32], lo[32], hi[32];
        d5_format_duration(sd->median, m, sizeof m);
        if (isnan(sd->ci_low) || isnan(sd->ci_high)) {
            snprintf(buf, size, "%s", m);
        } else {
            d5_format_duration(sd->ci_low, lo, sizeof lo);
            d5_format_duration(sd->ci_high, hi, sizeof hi);
            snprintf(buf, size, "%s [%s, %s]", m, lo, hi);
        }
    }
}

static void p_text(double p, char *buf, size_t size)
{
    if (isnan(p))
        snprintf(buf, size, "-");
    else if (p < 0.001)
        snprintf(buf, size, "<0.001");
    else
        snprintf(buf, size, "%.3f", p);
}

static const char *verdict_text(const d5_compare_row *r)
{
    return r->note[0] ? r->note : d5_verdict_str(r->verdict);
}

void d5_comparison_summary(const d5_comparison *c, char *buf, size_t size)
{
    if (!buf || size == 0) return;
    buf[0] = '\0';
    if (!c) return;
    const size_t *k = c->count;
    size_t used = 0;
#define D5__APPEND(...)                                                                            \
    do {                                                                                           \
        int w_ = snprintf(buf + used, size - used, __VA_ARGS__);                                   \
        if (w_ > 0) used = used + (size_t)w_ < size ? used + (size_t)w_ : size - 1;                \
    } while (0)
    D5__APPEND("%zu compared: %zu slower, %zu faster, %zu no significant difference",
               k[D5_VERDICT_SLOWER] + k[D5_VERDICT_FASTER] + k[D5_VERDICT_SAME],
               k[D5_VERDICT_SLOWER], k[D5_VERDICT_FASTER], k[D5_VERDICT_SAME]);
    if (k[D5_VERDICT_NO_SAMPLES]) D5__APPEND("; %zu without samples", k[D5_VERDICT_NO_SAMPLES]);
    if (k[D5_VERDICT_FAILED]) D5__APPEND("; %zu failed", k[D5_VERDICT_FAILED]);
    if (k[D5_VERDICT_ONLY_A]) D5__APPEND("; %zu only in A", k[D5_VERDICT_ONLY_A]);
    if (k[D5_VERDICT_ONLY_B]) D5__APPEND("; %zu only in B", k[D5_VERDICT_ONLY_B]);
    D5__APPEND(" (threshold %g%%, alpha %g)", 100 * c->params.threshold, c->params.alpha);
#undef D5__APPEND
}

d5_status d5_comparison_print(FILE *f, const d5_comparison *c)
{
    if (!f || !c) return d5_error(D5_ERR_INVALID, "d5_comparison_print: NULL argument");
    int wn = 9, wa = 17, wb = 17;
    char ta[128], tb[128];
    for (size_t i = 0; i < c->nrows; i++) {
        const d5_compare_row *r = &c->rows[i];
        side_text(&r->a, ta, sizeof ta);
        side_text(&r->b, tb, sizeof tb);
        if ((int)strlen(r->name) > wn) wn = (int)strlen(r->name);
        if ((int)strlen(ta) > wa) wa = (int)strlen(ta);
        if ((int)strlen(tb) > wb) wb = (int)strlen(tb);
    }
    fprintf(f, "%-*s  %-*s  %-*s  %6s  %6s  %s\n", wn, "benchmark", wa, "A median [95% CI]", wb,
            "B median [95% CI]", "B/A", "p", "verdict");
    for (size_t i = 0; i < c->nrows; i++) {
        const d5_compare_row *r = &c->rows[i];
        char ratio[32], p[32];
        side_text(&r->a, ta, sizeof ta);
        side_text(&r->b, tb, sizeof tb);
        if (isnan(r->ratio))
            snprintf(ratio, sizeof ratio, "-");
        else
            snprintf(ratio, sizeof ratio, "%.3f", r->ratio);
        p_text(r->p_value, p, sizeof p);
        fprintf(f, "%-*s  %-*s  %-*s  %6s  %6s  %s\n", wn, r->name, wa, ta, wb, tb, ratio, p,
                verdict_text(r));
    }
    char line[512];
    d5_comparison_summary(c, line, sizeof line);
    fprintf(f, "\n%s\n", line);
    return ferror(f) ? d5_error(D5_ERR_IO, "cannot write the comparison table") : D5_OK;
}

/* ---- JSON ---- */

static json_t *number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *side_json(const d5_compare_side *sd)
{
    if (!sd->present) return json_null();
    json_t *o = json_object();
    int ok = o && d5__json_set(o, "failed", json_boolean(sd->failed)) &&
             d5__json_set(o, "n", json_integer((json_int_t)sd->n)) &&
             d5__json_set(o, "median_ns", number_or_null(sd->median)) &&
             d5__json_set(o, "ci_low_ns", number_or_null(sd->ci_low)) &&
             d5__json_set(o, "ci_high_ns", number_or_null(sd->ci_high));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *row_json(const d5_compare_row *r)
{
    json_t *o = json_object();
    int ok = o && d5__json_set(o, "name", json_string(r->name)) &&
             d5__json_set(o, "verdict", json_string(d5_verdict_name(r->verdict))) &&
             d5__json_set(o, "verdict_text", json_string(verdict_text(r))) &&
             d5__json_set(o, "a", side_json(&r->a)) && d5__json_set(o, "b", side_json(&r->b)) &&
             d5__json_set(o, "ratio", number_or_null(r->ratio)) &&
             d5__json_set(o, "p_value", number_or_null(r->p_value)) &&
             d5__json_set(o, "exact", json_boolean(r->exact));
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

d5_status d5_comparison_write_json(const d5_comparison *c, const char *path)
{
    if (!c || !path) return d5_error(D5_ERR_INVALID, "d5_comparison_write_json: NULL argument");
    json_t *rows = json_array(), *summary = json_object();
    int ok = rows && summary;
    for (size_t i = 0; ok && i < c->nrows; i++)
        ok = json_array_append_new(rows, row_json(&c->rows[i])) == 0;
    for (int v = 0; ok && v < D5_VERDICT_COUNT; v++)
        ok = d5__json_set(summary, d5_verdict_name((d5_verdict)v),
                          json_integer((json_int_t)c->count[v]));
    char line[512];
    d5_comparison_summary(c, line, sizeof line);
    ok = ok && d5__json_set(summary, "text", json_string(line));
    if (!ok) {
        json_decref(rows);
        json_decref(summary);
        return d5_error(D5_ERR_NOMEM, "out of memory building '%s'", path);
    }
    json_t *doc = json_pack("{s:i, s:o, s:{s:s, s:s}, s:{s:s, s:s}, s:{s:f, s:f}, s:o, s:o}",
                            "schema_version", D5_REPORT_SCHEMA_VERSION, "context",
                            d5__json_context(), "a", "path", c->label_a ? c->label_a : "", "format",
                            c->format_a, "b", "path", c->label_b ? c->label_b : "", "format",
                            c->format_b, "params", "alpha", c->params.alpha, "threshold",
                            c->params.threshold, "benchmarks", rows, "summary", summary);
    return d5__json_write(doc, path, JSON_INDENT(2));
}
