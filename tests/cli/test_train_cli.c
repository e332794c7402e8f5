/* d5 train on synthetic data: the tables, the JSON and CSV files, and the
 * errors. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(train_cli, .timeout = D5_TIMEOUT(300));

Test(train_cli, synthetic_lenet_with_json_and_csv)
{
    char *dir = tmpdir_make(), *json, *csv, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/train.json", dir), 0);
    cr_assert_geq(asprintf(&csv, "%s/train.csv", dir), 0);
    int rc = RUN(&out, &err, "train", "--model", "lenet", "--dataset", "synthetic", "--batch", "16",
                 "--max-batches", "6", "--optimizer", "adam", "--lr", "0.001", "--threads", "1",
                 "--json", json, "--csv", csv);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "train loss"), "%s", out);
    cr_assert(strstr(out, "stop: max batches reached"), "%s", out);
    cr_assert(strstr(out, "OPTIMIZER"), "the timer table: %s", out);
    json_t *doc = json_read(json);
    cr_assert_eq(json_array_size(json_object_get(doc, "losses")), 6);
    cr_assert_eq(json_array_size(json_object_get(doc, "epochs")), 1);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(doc, "config"), "optimizer")), "adam");
    json_decref(doc);
    size_t len;
    char *text = slurp(csv, &len);
    cr_assert_not_null(text);
    cr_assert_eq(count_lines(text), 2, "%s", text);
    cr_assert(strncmp(text, "epoch,batches,samples,train_loss", 32) == 0, "%s", text);
    free(text);
    free(json);
    free(csv);
    run_done(out, err, dir);
}

/* A transformer that reads token ids trains on the synthetic token task:
 * the vocabulary comes from its embedding table. */
Test(train_cli, synthetic_tokens_train_bert_tiny)
{
    char *dir = tmpdir_make(), *out, *err;
    int rc = RUN(&out, &err, "train", "--model", "bert-tiny", "--dataset", "synthetic", "--batch",
                 "4", "--max-batches", "3", "--optimizer", "adam", "--lr", "0.001", "--threads",
                 "1", "--system-hz", "0");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "training bert-tiny (4386178 parameters) on synthetic"), "%s", out);
    cr_assert(strstr(out, "stop: max batches reached"), "%s", out);
    run_done(out, err, dir);
}

Test(train_cli, errors_name_what_is_wrong)
{
    char *out, *err;
    int rc = RUN(&out, &err, "train", "--dataset", "imagenet");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "imagenet"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "train", "--dataset", "mnist:/nonexistent", "--max-batches", "1");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "/nonexistent"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "train", "--optimizer", "lbfgs", "--dataset", "synthetic");
    cr_assert_eq(rc, 3, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "accelegrad"), "lists the optimizers: %s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "train", "--batch", "0");
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    free(out);
    free(err);
    /* A step profile under dsgd would count its communication as compute. */
    rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--distributed", "dsgd",
             "--step-profile", "/tmp/never.json");
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "--step-profile records the compute of a step"), "%s", err);
    free(out);
    free(err);
}

/* --step-profile: the timeline of a step, every parameter of LeNet in it. */
Test(train_cli, step_profile_of_lenet)
{
    char *dir = tmpdir_make(), *path, *out, *err;
    cr_assert_geq(asprintf(&path, "%s/profile.json", dir), 0);
    int rc =
        RUN(&out, &err, "train", "--model", "lenet", "--dataset", "synthetic", "--batch", "8",
            "--max-batches", "4", "--threads", "1", "--system-hz", "0", "--step-profile", path);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    json_t *doc = json_read(path);
    cr_assert_str_eq(json_string_value(json_object_get(doc, "schema")), "d5-step-profile");
    cr_assert_str_eq(json_string_value(json_object_get(doc, "model")), "lenet");
    cr_assert_eq(json_integer_value(json_object_get(doc, "batch")), 8);
    cr_assert_eq(json_integer_value(json_object_get(doc, "threads")), 1);
    cr_assert_eq(json_integer_value(json_object_get(doc, "steps")), 3, "the first left out");
    cr_assert_eq(json_array_size(json_object_get(doc, "parameters")), 10);
    cr_assert_eq(json_array_size(json_object_get(doc, "ready")), 10);
    cr_assert_eq(json_array_size(json_object_get(doc, "step_factors")), 3);
    double step = json_number_value(json_object_get(doc, "step_s"));
    cr_assert(step > 0 && step < 10, "%g s", step);
    json_decref(doc);
    free(path);
    run_done(out, err, dir);
}

/* Two runs from the same weights on two backends drift apart from zero. */
Test(train_cli, compare_backends_prints_the_divergence)
{
    char *out, *err;
    int rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--batch", "16", "--max-batches",
                 "20", "--threads", "1", "--compare-backend", "blas,ref", "--snapshot-every", "10");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "comparing with a run on blas,ref (parameters every 10 steps)"), "%s",
              out);
    const char *row = strstr(out, "\n      10 ");
    cr_assert_not_null(row, "%s", out);
    cr_assert_not_null(strstr(row + 1, "\n      20 "), "%s", out);
    double l2 = -1, linf = -1;
    cr_assert_eq(sscanf(row, " 10 %lf %lf", &l2, &linf), 2, "%s", row);
    cr_assert(l2 >= 0 && l2 < 1 && linf >= 0 && linf <= l2, "l2 %g linf %g", l2, linf);
    free(out);
    free(err);
}

/* --sampler and --augment: validated before any work, echoed, and recorded
 * in the JSON file's config; the sampler decides the batches. */
Test(train_cli, sampler_and_augmentations)
{
    char *out, *err;
    int rc = RUN(&out, &err, "train", "--sampler", "nosuch", "--dataset", "synthetic");
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "'nosuch'") &&
                  strstr(err, "ordered, shuffled, partitioned or sharded-batch"),
              "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "train", "--augment", "flip,spin", "--dataset", "synthetic");
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "'spin'") && strstr(err, "crop[:PAD], flip, normalize, cutout[:SIDE]"),
              "%s", err);
    free(out);
    free(err);

    char *dir = tmpdir_make(), *json[2];
    const char *kinds[2] = {"ordered", "shuffled"};
    json_t *doc[2];
    for (int k = 0; k < 2; k++) {
        cr_assert_geq(asprintf(&json[k], "%s/%s.json", dir, kinds[k]), 0);
        rc = RUN(&out, &err, "train", "--dataset", "synthetic", "--batch", "16", "--sampler",
                 kinds[k], "--augment", "crop:2,flip", "--max-batches", "5", "--threads", "1",
                 "--json", json[k]);
        cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
        char echo[64];
        snprintf(echo, sizeof echo, "sampler        = %s", kinds[k]);
        cr_assert(strstr(out, echo), "%s", out);
        cr_assert(strstr(out, "augmentations: crop 2, flip"), "%s", out);
        free(out);
        free(err);
        json_error_t jerr;
        doc[k] = json_load_file(json[k], 0, &jerr);
        cr_assert_not_null(doc[k], "%s", jerr.text);
        json_t *config = json_object_get(doc[k], "config");
        cr_assert_str_eq(json_string_value(json_object_get(config, "sampler")), kinds[k]);
        json_t *aug = json_object_get(config, "augment");
        cr_assert_eq(json_integer_value(json_object_get(aug, "crop_pad")), 2);
        cr_assert(json_is_true(json_object_get(aug, "flip")));
        cr_assert(json_is_null(json_object_get(aug, "normalize")));
        cr_assert_eq(json_array_size(json_object_get(doc[k], "losses")), 5);
    }
    cr_assert(!json_equal(json_object_get(doc[0], "losses"), json_object_get(doc[1], "losses")),
              "ordered and shuffled batches gave the same losses");
    for (int k = 0; k < 2; k++) {
        json_decref(doc[k]);
        free(json[k]);
    }
    rmtree(dir);
    free(dir);
}

/* The median of x[from..n) (sorted in place), for checking the reported
 * step times. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_from(double *x, size_t from, size_t n)
{
    qsort(x + from, n - from, sizeof *x, cmp_double);
    size_t m = n - from;
    return m % 2 ? x[from + m / 2] : (x[from + m / 2 - 1] + x[from + m / 2]) / 2;
}

static double mean_of(json_t *a, size_t from, size_t to)
{
    double s = 0;
    for (size_t i = from; i < to; i++) s += json_number_value(json_array_get(a, i));
    return s / (double)(to - from);
}

/* --precision bf16: the executor's precision report, a float32 baseline from
 * the same weights and batches, both runs' figures printed and in the JSON
 * file; the loss goes down. */
Test(train_cli, precision_bf16_beside_float32)
{
    char *dir = tmpdir_make(), *json, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/bf16.json", dir), 0);
    int rc = RUN(&out, &err, "train", "--model", "lenet", "--dataset", "synthetic", "--batch", "32",
                 "--max-batches", "60", "--optimizer", "adam", "--lr", "0.002", "--threads", "1",
                 "--precision", "bf16", "--system-hz", "0", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "precision      = bf16"), "echoed: %s", out);
    cr_assert(strstr(out, "precision: bf16 on float32 master weights\n  compute precision bf16: "),
              "%s", out);
    cr_assert(strstr(out, "training the float32 baseline (same weights, seed and batches)"), "%s",
              out);
    cr_assert(strstr(out, "\nbf16 ") && strstr(out, "\nf32 "), "a row per run: %s", out);
    cr_assert(strstr(out, "points of test accuracy; step time bf16/f32: "), "%s", out);
    json_t *doc = json_read(json);
    cr_assert_str_eq(
        json_string_value(json_object_get(json_object_get(doc, "config"), "precision")), "bf16");
    json_t *prec = json_object_get(doc, "precision");
    cr_assert_str_eq(json_string_value(json_object_get(prec, "compute")), "bf16");
    json_t *report = json_object_get(prec, "report");
    cr_assert_geq(json_array_size(report), 2, "a summary and a line per node");
    cr_assert(
        strncmp(json_string_value(json_array_get(report, 0)), "compute precision bf16: ", 24) == 0,
        "%s", json_string_value(json_array_get(report, 0)));
    cr_assert(json_is_null(json_object_get(prec, "loss_scaling")));
    cr_assert_eq(json_integer_value(json_object_get(prec, "skipped_steps")), 0);
    json_t *base = json_object_get(prec, "baseline");
    cr_assert_str_eq(json_string_value(json_object_get(base, "compute")), "f32");
    cr_assert_eq(json_array_size(json_object_get(base, "losses")), 60);
    /* The difference in points, from the two final accuracies. */
    double a = json_number_value(json_object_get(doc, "final_test_accuracy"));
    double b = json_number_value(json_object_get(base, "final_test_accuracy"));
    cr_assert(a > 0 && b > 0, "%g %g", a, b);
    cr_assert_float_eq(json_number_value(json_object_get(prec, "accuracy_difference_points")),
                       100 * (a - b), 1e-9);
    /* The median step time, first step left out, from the steps' times. */
    json_t *steps = json_object_get(doc, "step_seconds");
    double x[60];
    cr_assert_eq(json_array_size(steps), 60);
    for (size_t i = 0; i < 60; i++) x[i] = json_number_value(json_array_get(steps, i));
    double med = median_from(x, 1, 60);
    json_t *st = json_object_get(prec, "step_seconds");
    cr_assert_eq(json_integer_value(json_object_get(st, "n")), 59);
    cr_assert_float_eq(json_number_value(json_object_get(st, "median")), med, 1e-12);
    double bmed =
        json_number_value(json_object_get(json_object_get(base, "step_seconds"), "median"));
    cr_assert_float_eq(json_number_value(json_object_get(prec, "step_time_ratio")), med / bmed,
                       1e-9);
    /* Both runs learn. */
    json_t *losses = json_object_get(doc, "losses");
    cr_assert(mean_of(losses, 55, 60) < mean_of(losses, 0, 5) - 0.2, "bf16 loss does not go down");
    json_t *blosses = json_object_get(base, "losses");
    cr_assert(mean_of(blosses, 55, 60) < mean_of(blosses, 0, 5) - 0.2, "f32 loss does not go down");
    json_decref(doc);
    free(json);
    run_done(out, err, dir);
}

/* --precision f16 with --no-baseline and --loss-scale: the loss scaling and
 * its skipped steps are printed and recorded in the results folder. */
Test(train_cli, precision_f16_records_loss_scaling)
{
    char *dir = tmpdir_make(), *folder, *out, *err;
    cr_assert_geq(asprintf(&folder, "%s/run", dir), 0);
    int rc = RUN(&out, &err, "train", "--model", "lenet", "--dataset", "synthetic", "--batch", "16",
                 "--max-batches", "8", "--threads", "1", "--precision", "f16", "--no-baseline",
                 "--loss-scale", "256", "--system-hz", "0", "--out", folder);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "loss scaling: initial 256, final "), "%s", out);
    cr_assert(strstr(out, " of 8 steps skipped"), "%s", out);
    cr_assert_null(strstr(out, "float32 baseline"), "%s", out);
    char *path, *text;
    size_t len;
    cr_assert_geq(asprintf(&path, "%s/summary.txt", folder), 0);
    text = slurp(path, &len);
    cr_assert_not_null(text);
    cr_assert(strstr(text, "compute precision f16: ") && strstr(text, "loss scaling: initial 256"),
              "%s", text);
    free(text);
    free(path);
    cr_assert_geq(asprintf(&path, "%s/train.json", folder), 0);
    json_t *doc = json_read(path);
    json_t *prec = json_object_get(doc, "precision");
    cr_assert_str_eq(json_string_value(json_object_get(prec, "compute")), "f16");
    json_t *ls = json_object_get(prec, "loss_scaling");
    cr_assert_eq(json_number_value(json_object_get(ls, "initial")), 256.0);
    cr_assert_eq(json_integer_value(json_object_get(ls, "growth_interval")), 2000);
    json_int_t skipped = json_integer_value(json_object_get(prec, "skipped_steps"));
    cr_assert(skipped >= 0 && skipped < 8, "%lld", (long long)skipped);
    cr_assert_eq(json_integer_value(json_object_get(ls, "skipped_steps")), skipped);
    /* Each skipped step halved the scale; no step grew it (interval 2000). */
    cr_assert_eq(json_number_value(json_object_get(ls, "final")), 256.0 / (double)(1 << skipped));
    cr_assert(json_is_null(json_object_get(prec, "baseline")));
    json_decref(doc);
    free(path);
    free(folder);
    run_done(out, err, dir);
}
