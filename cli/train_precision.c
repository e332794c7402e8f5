/* d5 train --precision: what a bf16 or f16 run reports beside its float32
 * baseline (test accuracy, median step time, their difference and ratio),
 * with the executor's precision report and the loss scaling's skipped steps,
 * printed and as the "precision" object of the training document. */
#include "train_out.h"

#include <math.h>
#include <string.h>

/* The median step time [95% CI], in seconds, of a run: the first step
 * (warm-up: first touches, primitive creation) is left out when there are
 * others. 0 when the run has no step time. */
static int step_stats(const d5_train_result *r, d5_stats *st)
{
    if (!r->step_seconds || r->nlosses < 1) return 0;
    size_t skip = r->nlosses > 1;
    return d5_stats_compute(r->step_seconds + skip, (size_t)r->nlosses - skip, st) == D5_OK;
}

/* The executor's report, one line after another, indented. */
static void print_lines(FILE *f, const char *text)
{
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        if (len > 0) fprintf(f, "  %.*s\n", len, line);
        line += len + (end != NULL);
    }
}

/* The same as a JSON array of strings. */
static json_t *lines_json(const char *text)
{
    json_t *a = json_array();
    for (const char *line = text; a && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > 0) json_array_append_new(a, json_stringn(line, len));
        line += len + (end != NULL);
    }
    return a;
}

static int shown(const train_precision *p, const d5_train_result *res)
{
    return p && p->precision && (strcmp(p->precision, "f32") != 0 || res->loss_scaling);
}

static void print_row(FILE *f, const char *name, const d5_train_result *r)
{
    d5_stats st;
    fprintf(f, "%-6s ", name);
    if (isnan(r->final_test_accuracy))
        fprintf(f, "%9s", "-");
    else
        fprintf(f, "%8.2f%%", 100 * r->final_test_accuracy);
    if (step_stats(r, &st))
        fprintf(f, "   %.3f ms [%.3f, %.3f]\n", 1e3 * st.median, 1e3 * st.ci_low, 1e3 * st.ci_high);
    else
        fprintf(f, "   -\n");
}

void train_precision_print(FILE *f, const train_precision *p, const d5_train_result *res)
{
    if (!shown(p, res)) return;
    fprintf(f, "precision: %s on float32 master weights\n", res->precision);
    print_lines(f, res->precision_report);
    if (res->loss_scaling)
        fprintf(f,
                "loss scaling: initial %g, final %g (%lld growth%s); %lld of %lld steps skipped "
                "(a gradient overflowed)\n",
                p->loss_scale.init, res->loss_scale, (long long)res->loss_scale_growths,
                res->loss_scale_growths == 1 ? "" : "s", (long long)res->skipped_steps,
                (long long)res->nlosses);
}

void train_precision_print_baseline(FILE *f, const train_precision *p, const d5_train_result *res)
{
    if (!p || !p->has_baseline) return;
    fprintf(f, "\nbeside float32 (same weights, seed and batches):\n%-6s %9s   %s\n", "run",
            "test acc", "step median [95% CI]");
    print_row(f, res->precision, res);
    print_row(f, "f32", &p->base);
    d5_stats a, b;
    double diff = 100 * (res->final_test_accuracy - p->base.final_test_accuracy);
    fprintf(f, "%s - f32: ", res->precision);
    if (isnan(diff))
        fprintf(f, "no test accuracy");
    else
        fprintf(f, "%+.2f points of test accuracy", diff);
    if (step_stats(res, &a) && step_stats(&p->base, &b) && b.median > 0)
        fprintf(f, "; step time %s/f32: %.3f", res->precision, a.median / b.median);
    fprintf(f, "\n");
}

static json_t *number_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

/* {"n", "median", "ci_low", "ci_high"} in seconds, or null. */
static json_t *steps_json(const d5_train_result *r)
{
    d5_stats st;
    if (!step_stats(r, &st)) return json_null();
    return json_pack("{s:I, s:f, s:f, s:f}", "n", (json_int_t)st.n, "median", st.median, "ci_low",
                     st.ci_low, "ci_high", st.ci_high);
}

static json_t *backends_json(const d5_train_result *r)
{
    json_t *o = json_object();
    for (int32_t k = 0; o && k < r->nbackends; k++)
        json_object_set_new(o, r->backends[k].backend, json_integer(r->backends[k].nodes));
    return o;
}

json_t *train_precision_json(const train_precision *p, const d5_train_result *res)
{
    json_t *ls = json_null();
    if (res->loss_scaling)
        ls = json_pack("{s:f, s:f, s:f, s:f, s:I, s:f, s:f, s:I, s:I}", "initial",
                       p->loss_scale.init, "final", res->loss_scale, "growth", p->loss_scale.growth,
                       "backoff", p->loss_scale.backoff, "growth_interval",
                       (json_int_t)p->loss_scale.growth_interval, "min", p->loss_scale.min, "max",
                       p->loss_scale.max, "growths", (json_int_t)res->loss_scale_growths,
                       "skipped_steps", (json_int_t)res->skipped_steps);
    json_t *o = json_pack("{s:s, s:o, s:o, s:I, s:I, s:o, s:o}", "compute", res->precision,
                          "report", lines_json(res->precision_report), "loss_scaling", ls, "steps",
                          (json_int_t)res->nlosses, "skipped_steps", (json_int_t)res->skipped_steps,
                          "final_test_accuracy", number_or_null(res->final_test_accuracy),
                          "step_seconds", steps_json(res));
    if (!o) return NULL;
    if (!p->has_baseline) {
        json_object_set_new(o, "baseline", json_null());
        json_object_set_new(o, "accuracy_difference_points", json_null());
        json_object_set_new(o, "step_time_ratio", json_null());
        return o;
    }
    const d5_train_result *b = &p->base;
    json_t *losses = json_array();
    for (int64_t i = 0; losses && i < b->nlosses; i++)
        json_array_append_new(losses, json_real(b->losses[i]));
    json_object_set_new(o, "baseline",
                        json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "compute", b->precision,
                                  "report", lines_json(b->precision_report), "final_test_accuracy",
                                  number_or_null(b->final_test_accuracy), "step_seconds",
                                  steps_json(b), "backends_used", backends_json(b), "losses",
                                  losses));
    d5_stats sa, sb;
    double ratio =
        step_stats(res, &sa) && step_stats(b, &sb) && sb.median > 0 ? sa.median / sb.median : NAN;
    json_object_set_new(o, "accuracy_difference_points",
                        number_or_null(100 * (res->final_test_accuracy - b->final_test_accuracy)));
    json_object_set_new(o, "step_time_ratio", number_or_null(ratio));
    return o;
}
