/* d5 report: loss and accuracy of a training run against step and against
 * time, from train.json (d5 train --json, or the --out folder) and, when
 * present, steps.csv (step,epoch,loss,lr,seconds,samples_per_second). */
#define _GNU_SOURCE
#include "report_plot.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct epoch_pt {
    double step, time, train_acc, test_acc; /* accuracy in %, NaN when absent */
} epoch_pt;

typedef struct train_data {
    double *step, *time, *loss; /* per step; time in seconds of training */
    size_t n;
    epoch_pt *ep;
    size_t nep;
    int time_from; /* 1: steps.csv, 2: interpolated within the epochs of train.json, 0: none */
    int loss_from; /* 1: steps.csv, 2: train.json */
} train_data;

static void train_free(train_data *d)
{
    free(d->step);
    free(d->time);
    free(d->loss);
    free(d->ep);
}

static d5_status alloc_steps(train_data *d, size_t n)
{
    d->step = calloc(n + 1, sizeof *d->step);
    d->time = calloc(n + 1, sizeof *d->time);
    d->loss = calloc(n + 1, sizeof *d->loss);
    d->n = n;
    return d->step && d->time && d->loss ? D5_OK : d5_error(D5_ERR_NOMEM, "out of memory");
}

static double jnum(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* train.json: epochs [{batches, seconds, train_accuracy, test_accuracy}] and
 * losses [one per step]. */
static d5_status read_json(const char *path, train_data *d)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) return d5_error(D5_ERR_FORMAT, "%s: line %d: %s", path, err.line, err.text);
    d5_status s = D5_OK;
    const json_t *epochs = json_object_get(root, "epochs"),
                 *losses = json_object_get(root, "losses");
    if (!json_is_array(epochs) || !json_is_array(losses))
        s = d5_error(D5_ERR_FORMAT,
                     "%s: expected the document of d5 train --json, with 'epochs' and 'losses' "
                     "arrays",
                     path);
    size_t ne = s == D5_OK ? json_array_size(epochs) : 0;
    d->ep = calloc(ne + 1, sizeof *d->ep);
    if (s == D5_OK && !d->ep) s = d5_error(D5_ERR_NOMEM, "out of memory");
    double step = 0, time = 0;
    for (size_t i = 0; s == D5_OK && i < ne; i++) {
        const json_t *e = json_array_get(epochs, i);
        double b = jnum(e, "batches"), sec = jnum(e, "seconds");
        if (!json_is_object(e) || !(b >= 0) || !(sec >= 0)) {
            s = d5_error(D5_ERR_FORMAT, "%s: epochs[%zu]: 'batches' and 'seconds' must be numbers",
                         path, i);
            break;
        }
        step += b;
        time += sec;
        d->ep[i] =
            (epoch_pt){step, time, 100 * jnum(e, "train_accuracy"), 100 * jnum(e, "test_accuracy")};
        d->nep++;
    }
    size_t nl = s == D5_OK ? json_array_size(losses) : 0;
    if (s == D5_OK) s = alloc_steps(d, nl);
    for (size_t i = 0; s == D5_OK && i < nl; i++) {
        const json_t *v = json_array_get(losses, i);
        if (!json_is_number(v)) {
            s = d5_error(D5_ERR_FORMAT, "%s: losses[%zu] is not a number", path, i);
            break;
        }
        d->step[i] = (double)(i + 1);
        d->loss[i] = json_number_value(v);
    }
    if (s == D5_OK) d->loss_from = 2;
    /* Time within each epoch, spread evenly over its batches. */
    size_t k = 0;
    double t0 = 0, s0 = 0;
    for (size_t e = 0; s == D5_OK && e < d->nep; e++) {
        double steps = d->ep[e].step - s0;
        for (; k < d->n && d->step[k] <= d->ep[e].step; k++)
            d->time[k] = t0 + (d->ep[e].time - t0) * (d->step[k] - s0) / (steps > 0 ? steps : 1);
        t0 = d->ep[e].time;
        s0 = d->ep[e].step;
    }
    if (s == D5_OK && d->nep > 0 && k == d->n) d->time_from = 2;
    json_decref(root);
    return s;
}

/* steps.csv: its seconds are each step's duration when seconds times
 * samples_per_second gives the same batch on (nearly) every row, else the
 * time since training began when they never decrease. */
static d5_status read_steps(const char *path, train_data *d)
{
    report_csv c;
    d5_status s = report_csv_read(path, &c);
    if (s != D5_OK) return s;
    static const char *const need[] = {"step", "loss"};
    long col[2];
    s = report_csv_require(&c, need, 2, col);
    long sec = report_csv_col(&c, "seconds"), sps = report_csv_col(&c, "samples_per_second");
    train_data t = {0};
    if (s == D5_OK) s = alloc_steps(&t, c.rows);
    size_t same_batch = 0, rising = 1;
    double batch0 = NAN;
    for (size_t i = 0; s == D5_OK && i < c.rows; i++) {
        s = report_csv_number(&c, i, (size_t)col[0], 0, &t.step[i]);
        if (s == D5_OK) s = report_csv_number(&c, i, (size_t)col[1], 0, &t.loss[i]);
        if (s == D5_OK && sec >= 0) s = report_csv_number(&c, i, (size_t)sec, 0, &t.time[i]);
        double rate = NAN;
        if (s == D5_OK && sps >= 0) s = report_csv_number(&c, i, (size_t)sps, 1, &rate);
        if (s != D5_OK) break;
        double batch = rate * t.time[i];
        if (i == 0) batch0 = batch;
        same_batch += fabs(batch - batch0) <= 0.05 * fabs(batch0);
        if (i > 0 && t.time[i] < t.time[i - 1]) rising = 0;
    }
    if (s == D5_OK) {
        if (sec >= 0 && c.rows > 0) {
            int durations = same_batch >= 0.9 * (double)c.rows || !rising;
            for (size_t i = 1; durations && i < c.rows; i++) t.time[i] += t.time[i - 1];
            t.time_from = 1;
        }
        t.loss_from = 1;
        /* The epochs (accuracy) stay those of train.json. */
        t.ep = d->ep;
        t.nep = d->nep;
        d->ep = NULL;
        if (!t.time_from && d->time_from == 2 && d->n == t.n) {
            memcpy(t.time, d->time, t.n * sizeof *t.time);
            t.time_from = 2;
        }
        train_free(d);
        *d = t;
    } else {
        train_free(&t);
    }
    report_csv_free(&c);
    return s;
}

static d5_status train_read(const report_src *src, train_data *d, report_plot *p, int *have)
{
    memset(d, 0, sizeof *d);
    *have = 0;
    int json = report_has(src, "train.json"), steps = report_has(src, "steps.csv");
    if (!json && !steps)
        return report_absent(p,
                             "no train.json or steps.csv (d5 train --json FILE or --out DIR) "
                             "in %s",
                             src->dir);
    d5_status s = D5_OK;
    char *path;
    if (json) {
        if (!(path = report_path(src, "train.json")))
            return d5_error(D5_ERR_NOMEM, "out of memory");
        s = read_json(path, d);
        free(path);
    }
    if (s == D5_OK && steps) {
        if (!(path = report_path(src, "steps.csv"))) s = d5_error(D5_ERR_NOMEM, "out of memory");
        if (s == D5_OK) s = read_steps(path, d);
        free(path);
    }
    if (s == D5_OK && d->n == 0 && d->nep == 0)
        s = report_absent(p, "the training run recorded no steps");
    else if (s == D5_OK)
        *have = 1;
    return s;
}

static void data(FILE *f, const train_data *d, int by_time, size_t *window)
{
    size_t w = d->n / 40 > 1 ? d->n / 40 : 1;
    *window = w;
    fprintf(f, "$loss << EOD\n");
    double sum = 0;
    for (size_t i = 0; i < d->n; i++) {
        sum += d->loss[i];
        if (i >= w) sum -= d->loss[i - w];
        size_t m = i + 1 < w ? i + 1 : w;
        fprintf(f, "%.9g %.9g %.9g\n", by_time ? d->time[i] : d->step[i], d->loss[i],
                sum / (double)m);
    }
    fprintf(f, "EOD\n$acc << EOD\n");
    for (size_t i = 0; i < d->nep; i++) {
        fprintf(f, "%.9g", by_time ? d->ep[i].time : d->ep[i].step);
        const double acc[2] = {d->ep[i].train_acc, d->ep[i].test_acc};
        for (int k = 0; k < 2; k++)
            if (isfinite(acc[k]))
                fprintf(f, " %.6g", acc[k]);
            else
                fprintf(f, " NaN");
        fprintf(f, "\n");
    }
    fprintf(f, "EOD\n");
}

static void script(FILE *f, const train_data *d, int by_time, size_t window)
{
    int train_acc = 0, test_acc = 0;
    for (size_t i = 0; i < d->nep; i++) {
        train_acc |= isfinite(d->ep[i].train_acc);
        test_acc |= isfinite(d->ep[i].test_acc);
    }
    fprintf(f,
            "set title \"Training: loss and accuracy against %s\"\n"
            "set xlabel \"%s\"\nset ylabel \"loss\"\n"
            "set grid xtics ytics lc rgb \"#e5e5e5\"\nset ytics nomirror\nset xtics nomirror\n"
            "set key outside bottom center horizontal reverse Left samplen 2\nset offsets 0, "
            "graph 0.02, graph 0.03, 0\n",
            by_time ? "time" : "step",
            by_time ? "training time (s, without evaluation)" : "step (batches trained)");
    if (train_acc || test_acc)
        fprintf(f, "set y2label \"accuracy (%%)\"\nset y2range [0:100]\nset y2tics 10\n");
    fprintf(f, "plot ");
    const char *sep = "";
    if (d->n > 0) {
        fprintf(f,
                "$loss using 1:2 with lines lw 1 lc rgb \"#9ecae1\" title \"loss of each step\"");
        sep = ", \\\n     ";
        if (window > 1) {
            fprintf(f,
                    "%s$loss using 1:3 with lines lw 2.5 lc rgb \"#08519c\" title \"loss, mean of "
                    "the last %zu steps\"",
                    sep, window);
        }
    }
    if (train_acc) {
        fprintf(f,
                "%s$acc using 1:2 axes x1y2 with linespoints lw 2 pt 7 ps 1.5 lc rgb "
                "\"#ff7f0e\" title \"training accuracy (mean of each epoch)\"",
                sep);
        sep = ", \\\n     ";
    }
    if (test_acc)
        fprintf(f,
                "%s$acc using 1:3 axes x1y2 with linespoints lw 2 pt 5 ps 1.5 lc rgb "
                "\"#2ca02c\" title \"test accuracy (each epoch's end)\"",
                sep);
    fprintf(f, "\n");
}

static d5_status build(const report_src *src, report_plot *p, int by_time)
{
    train_data d;
    int have;
    d5_status s = train_read(src, &d, p, &have);
    if (s == D5_OK && have && by_time && d.time_from == 0 && d.n > 0)
        s = report_absent(p, "no step times: steps.csv has no 'seconds' column and train.json no "
                             "epochs to spread them over");
    else if (s == D5_OK && have) {
        p->width = 1000;
        p->height = 600;
        size_t window = 1;
        report_text t;
        if ((s = report_text_open(&t)) == D5_OK) {
            data(t.f, &d, by_time, &window);
            s = report_text_close(&t, &p->data);
        }
        if (s == D5_OK && (s = report_text_open(&t)) == D5_OK) {
            script(t.f, &d, by_time, window);
            s = report_text_close(&t, &p->script);
        }
        if (s == D5_OK && (s = report_text_open(&t)) == D5_OK) {
            fprintf(t.f, "<p>The loss of every step (%zu steps, from %s)", d.n,
                    d.loss_from == 1 ? "steps.csv" : "train.json");
            if (window > 1) fprintf(t.f, " and its mean over the last %zu steps", window);
            fprintf(t.f, "; the accuracy of each epoch (%zu, from train.json, right axis)", d.nep);
            if (by_time)
                fprintf(t.f, "; time is training time without evaluation, %s",
                        d.time_from == 1 ? "the step times of steps.csv added up"
                                         : "each epoch's seconds spread evenly over its steps "
                                           "(there is no steps.csv)");
            fprintf(t.f, ".</p>\n");
            s = report_text_close(&t, &p->notes);
        }
    }
    train_free(&d);
    return s;
}

d5_status report_train_step(const report_src *src, report_plot *p)
{
    return build(src, p, 0);
}

d5_status report_train_time(const report_src *src, report_plot *p)
{
    return build(src, p, 1);
}
