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

TestSuite(train_cli, .timeout = 300);

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
    json_error_t jerr;
    json_t *doc = json_load_file(json, 0, &jerr);
    cr_assert_not_null(doc, "%s", jerr.text);
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
    free(out);
    free(err);
    free(json);
    free(csv);
    rmtree(dir);
    free(dir);
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
