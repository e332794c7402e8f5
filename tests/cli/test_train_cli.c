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
