/* d5 recipe: the table, one recipe's configuration and command lines, the
 * short MNIST recipe end to end (PASS, and FAIL when cut short), a schedule of
 * three learning rates chained through checkpoints, and the errors. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(recipe_cli, .timeout = D5_TIMEOUT(900));

/* The line of `text` that starts with `start`, copied into line. */
static int find_line(const char *text, const char *start, char *line, size_t size)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, start, strlen(start)) == 0) {
            const char *end = strchr(p, '\n');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            snprintf(line, size, "%.*s", (int)(n < size ? n : size - 1), p);
            return 1;
        }
    return 0;
}

Test(recipe_cli, list_names_every_recipe_with_its_target)
{
    char *out, *err, line[512];
    int rc = RUN(&out, &err, "recipe", "list");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    /* The published figures: He et al. 2016, table 6 (8.75% error); LeCun et
     * al. 1998 (0.95% error, target 99.0%); Deep500's cifar10_resnet44.py. */
    static const struct {
        const char *name, *model, *dataset, *target, *source;
    } want[] = {
        {"resnet20-cifar10", "resnet20", "cifar10", "91.25%", "He et al. 2016"},
        {"resnet44-cifar10", "resnet44", "cifar10", "93.00%", "Deep500 recipe"},
        {"lenet-mnist ", "lenet", "mnist", "99.00%", "LeCun et al. 1998"},
        {"lenet-fashion-mnist", "lenet", "fashion-mnist", "87.60%",
         "Fashion-MNIST benchmark table"},
        {"lenet-mnist-smoke", "lenet", "mnist", "90.00%", "d5 measurement"},
        {"lenet-mnist-epoch", "lenet", "mnist", "96.00%", "d5 measurement"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cr_assert(find_line(out, want[i].name, line, sizeof line), "%s in\n%s", want[i].name, out);
        char model[32], dataset[32], target[32];
        cr_assert_eq(sscanf(line, "%*s %31s %31s %31s", model, dataset, target), 3, "%s", line);
        cr_expect_str_eq(model, want[i].model, "%s", line);
        cr_expect_str_eq(dataset, want[i].dataset, "%s", line);
        cr_expect_str_eq(target, want[i].target, "%s", line);
        cr_expect(strstr(line, want[i].source), "%s", line);
    }
    free(out);
    free(err);
}

/* The value after `flag ` in the n-th (0-based) "d5 train" line of `text`. */
static int train_flag(const char *text, int n, const char *flag, char *value, size_t size)
{
    const char *p = text;
    for (int i = 0; p && i <= n; i++) {
        p = strstr(p, "\nd5 train ");
        if (p && i < n) p++;
    }
    if (!p) return 0;
    const char *end = strchr(p + 1, '\n');
    char key[64];
    snprintf(key, sizeof key, " %s ", flag);
    const char *f = strstr(p, key);
    if (!f || (end && f > end)) return 0;
    f += strlen(key);
    size_t len = strcspn(f, " \n");
    snprintf(value, size, "%.*s", (int)len, f);
    return 1;
}

/* He et al.'s schedule in iterations (lr /10 at 32k and 48k, end at 64k)
 * as epochs of 50000 / 128 batches (the last partial batch dropped). */
Test(recipe_cli, show_resnet20_follows_the_papers_schedule)
{
    char *out, *err, v[256];
    int rc = RUN(&out, &err, "recipe", "show", "resnet20-cifar10");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    const double per_epoch = floor(50000.0 / 128);
    const double iters[3] = {32000, 48000, 64000};
    const char *lrs[3] = {"0.1", "0.01", "0.001"};
    int before = 0;
    for (int k = 0; k < 3; k++) {
        int end = (int)lround(iters[k] / per_epoch);
        char want[32];
        cr_assert(train_flag(out, k, "--epochs", v, sizeof v), "phase %d: %s", k, out);
        snprintf(want, sizeof want, "%d", end - before);
        cr_expect_str_eq(v, want, "phase %d", k);
        cr_assert(train_flag(out, k, "--lr", v, sizeof v));
        cr_expect_str_eq(v, lrs[k]);
        /* The sampler seeds epoch e with seed + e: phase k starts at seed + before. */
        cr_assert(train_flag(out, k, "--seed", v, sizeof v));
        snprintf(want, sizeof want, "%d", 1 + before);
        cr_expect_str_eq(v, want, "phase %d", k);
        cr_assert(train_flag(out, k, "--batch", v, sizeof v));
        cr_expect_str_eq(v, "128");
        cr_assert(train_flag(out, k, "--weight-decay", v, sizeof v));
        cr_expect_eq(strtod(v, NULL), 1e-4);
        cr_assert(train_flag(out, k, "--target-accuracy", v, sizeof v));
        cr_expect_eq(strtod(v, NULL), 0.9125);
        cr_assert(train_flag(out, k, "--dataset", v, sizeof v));
        cr_expect_str_eq(v, "cifar10:DIR");
        cr_assert(train_flag(out, k, "--model", v, sizeof v));
        if (k == 0)
            cr_expect_str_eq(v, "resnet20");
        else
            cr_expect_str_eq(v, k == 1 ? "model-1.onnx" : "model-2.onnx");
        before = end;
    }
    cr_expect_eq(before, 164);
    cr_expect(!train_flag(out, 3, "--epochs", v, sizeof v), "three phases only: %s", out);
    cr_expect(strstr(out, "crop:4,flip,normalize"), "%s", out);
    cr_expect(strstr(out, "91.25%"), "%s", out);
    free(out);
    free(err);

    rc = RUN(&out, &err, "recipe", "show", "lenet-mnist-smoke");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(train_flag(out, 0, "--max-batches", v, sizeof v), "%s", out);
    cr_expect_str_eq(v, "300");
    cr_expect(!train_flag(out, 1, "--epochs", v, sizeof v), "one phase: %s", out);
    cr_expect(!strstr(out, "--checkpoint"), "no checkpoint for one phase: %s", out);
    free(out);
    free(err);
}

Test(recipe_cli, unknown_names_and_subcommands)
{
    char *out, *err;
    int rc = RUN(&out, &err, "recipe", "show", "lenet-imagenet");
    cr_expect_eq(rc, 3, "exit %d", rc);
    cr_expect(strstr(err, "unknown recipe 'lenet-imagenet'") && strstr(err, "resnet20-cifar10"),
              "lists the recipes: %s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "recipe", "run", "nosuch", "--threads", "1");
    cr_expect_eq(rc, 3, "exit %d", rc);
    cr_expect(strstr(err, "unknown recipe 'nosuch'"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "recipe", "walk");
    cr_expect_eq(rc, 2, "exit %d", rc);
    cr_expect(strstr(err, "unknown subcommand 'walk'"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "recipe");
    cr_expect_eq(rc, 2, "exit %d", rc);
    free(out);
    free(err);
    rc = RUN(&out, &err, "recipe", "--help");
    cr_expect_eq(rc, 0, "exit %d", rc);
    cr_expect(strstr(out, "d5 recipe run NAME"), "%s", out);
    free(out);
    free(err);
}

/* Without CIFAR-10 the recipe says where to get it, before any work. */
Test(recipe_cli, cifar_without_data_says_how_to_get_it)
{
    char *dir = tmpdir_make(), *out, *err;
    setenv("D5_DATA_DIR", dir, 1);
    int rc = RUN(&out, &err, "recipe", "run", "resnet20-cifar10");
    cr_expect_eq(rc, 3, "exit %d: %s", rc, err);
    cr_expect(strstr(err, "resnet20-cifar10 needs cifar10") && strstr(err, "the default folder") &&
                  strstr(err, "https://www.cs.toronto.edu/~kriz/cifar.html") &&
                  strstr(err, "--data DIR"),
              "%s", err);
    cr_expect(!strstr(out, "phase 1"), "no training: %s", out);
    free(out);
    free(err);
    rc = RUN(&out, &err, "recipe", "run", "resnet44-cifar10", "--data", dir);
    cr_expect_eq(rc, 3, "exit %d: %s", rc, err);
    cr_expect(strstr(err, "(--data)") && strstr(err, "cifar-10-binary.tar.gz"), "%s", err);
    run_done(out, err, dir);
}

/* MNIST from scripts/setup_data.sh, where d5 looks for it (a failure without
 * it under CI: need_data_file). */
static void need_mnist(void)
{
    char dir[1024], path[1100];
    d5_dataset_default_dir("mnist", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    need_data_file(path, "run scripts/setup_data.sh");
}

static json_t *load(const char *path)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    cr_assert_not_null(doc, "%s: %s", path, jerr.text);
    return doc;
}

static double number(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    cr_assert(json_is_number(v), "%s is not a number", key);
    return json_number_value(v);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* The CI recipe: PASS, its numbers those of d5 train's own JSON file. */
Test(recipe_cli, smoke_recipe_passes_with_d5_trains_numbers)
{
    need_mnist();
    char *dir = tmpdir_make(), *json, *folder, *path, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/verdict.json", dir), 0);
    cr_assert_geq(asprintf(&folder, "%s/run", dir), 0);
    int rc = RUN(&out, &err, "recipe", "run", "lenet-mnist-smoke", "--threads", "2", "--seed", "3",
                 "--json", json, "--out", folder);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_expect(strstr(out, "recipe lenet-mnist-smoke: PASS: test accuracy "), "%s", out);
    cr_expect(strstr(out, "time to 90.00%: "), "%s", out);
    /* The folder, complete, and nothing else beside it: the verdict, the
     * trained model and d5 train's results folder (docs: formats of the
     * results folders). */
    static const char *const files[] = {"recipe.json", "model.onnx", "train/train.json",
                                        "train/summary.txt", "train/epochs.csv"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        cr_assert_geq(asprintf(&path, "%s/%s", folder, files[i]), 0);
        struct stat st;
        cr_expect(stat(path, &st) == 0 && st.st_size > 0, "%s", path);
        free(path);
    }
    cr_expect_eq(count_entries(folder), 3);
    cr_expect_eq(count_entries(dir), 2, "the verdict and the folder, no partial folder");

    json_t *doc = load(json);
    cr_assert_geq(asprintf(&path, "%s/train/train.json", folder), 0);
    json_t *train = load(path);
    free(path);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "verdict")), "PASS");
    double acc = number(doc, "final_test_accuracy");
    cr_expect_eq(acc, number(train, "final_test_accuracy"));
    cr_expect_geq(acc, 0.90);
    cr_expect_eq(number(doc, "target_accuracy"), 0.90);
    cr_expect_eq(number(doc, "time_to_accuracy_s"), number(train, "time_to_accuracy_s"));
    const json_t *cfg = json_object_get(train, "config");
    cr_expect_eq(json_integer_value(json_object_get(cfg, "seed")), 3, "--seed passed through");
    cr_expect_str_eq(json_string_value(json_object_get(cfg, "model")), "lenet");
    const json_t *epochs = json_object_get(doc, "epochs");
    cr_assert_eq(json_array_size(epochs), 1);
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(epochs, 0), "batches")), 300);
    cr_expect_eq(json_array_size(json_object_get(doc, "phases")), 1);
    const json_t *ctx = json_object_get(doc, "context");
    cr_expect(json_is_object(ctx) && json_object_get(ctx, "d5"), "a context block");
    cr_expect(json_is_integer(json_object_get(doc, "schema_version")));
    cr_expect_str_eq(json_string_value(json_object_get(ctx, "recipe")), "lenet-mnist-smoke");
    cr_assert_geq(asprintf(&path, "%s/recipe.json", folder), 0);
    json_t *kept = load(path);
    free(path);
    cr_expect_eq(number(kept, "final_test_accuracy"), acc);
    json_decref(kept);
    json_decref(train);
    json_decref(doc);
    free(out);
    free(err);

    /* One batch cannot reach 90%: FAIL, exit 1, the numbers said. */
    rc = RUN(&out, &err, "recipe", "run", "lenet-mnist-smoke", "--threads", "2", "--max-batches",
             "1");
    cr_expect_eq(rc, 1, "exit %d: %s\n%s", rc, out, err);
    cr_expect(
        strstr(out, "recipe lenet-mnist-smoke: FAIL: test accuracy ") &&
            strstr(out, "< target 90.00% after 1 epoch (1 batch); the target was not reached"),
        "%s", out);
    free(json);
    free(folder);
    run_done(out, err, dir);
}

/* A CIFAR-10 binary file of n records: label, then 3072 pixel bytes. */
static void write_cifar(const char *dir, const char *name, int n, unsigned seed)
{
    char *path = path_join(dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    for (int i = 0; i < n; i++) {
        fputc(i % 10, f);
        for (int j = 0; j < 3072; j++)
            fputc((int)((seed + 31u * (unsigned)i + 7u * (unsigned)j) & 255u), f);
    }
    fclose(f);
    free(path);
}

/* The three learning rates of resnet20-cifar10, one batch each on a tiny
 * data set of CIFAR-10's format: each phase starts from the previous one's
 * checkpoint with the seed of its first epoch, and the temporary files go. */
Test(recipe_cli, phases_chain_through_checkpoints)
{
    char *dir = tmpdir_make(), *data, *tmp, *json, *out, *err;
    cr_assert_geq(asprintf(&data, "%s/cifar", dir), 0);
    cr_assert_geq(asprintf(&tmp, "%s/tmp", dir), 0);
    cr_assert_geq(asprintf(&json, "%s/verdict.json", dir), 0);
    cr_assert_eq(mkdir(data, 0700), 0);
    cr_assert_eq(mkdir(tmp, 0700), 0);
    for (int b = 1; b <= 5; b++) {
        char name[32];
        snprintf(name, sizeof name, "data_batch_%d.bin", b);
        write_cifar(data, name, 26, (unsigned)b);
    }
    write_cifar(data, "test_batch.bin", 20, 99);
    setenv("TMPDIR", tmp, 1);
    int rc = RUN(&out, &err, "recipe", "run", "resnet20-cifar10", "--data", data, "--max-batches",
                 "1", "--full", "--threads", "2", "--json", json);
    unsetenv("TMPDIR");
    /* 20 test images of random-looking pixels: far from 91.25%. */
    cr_assert_eq(rc, 1, "exit %d: %s\n%s", rc, out, err);
    cr_expect(strstr(out, "recipe resnet20-cifar10: FAIL"), "%s", out);
    cr_expect(strstr(out, "phase 3 of 3: lr 0.001 for 41 epochs"), "%s", out);
    cr_expect_eq(count_entries(tmp), 0, "the temporary folder is gone");
    json_t *doc = load(json);
    const json_t *phases = json_object_get(doc, "phases"),
                 *cmds = json_object_get(doc, "train_commands");
    cr_assert_eq(json_array_size(phases), 3);
    cr_assert_eq(json_array_size(cmds), 3);
    const double lrs[3] = {0.1, 0.01, 0.001};
    const char *seeds[3] = {"1", "83", "124"};
    for (size_t k = 0; k < 3; k++) {
        const json_t *p = json_array_get(phases, k);
        cr_expect_eq(number(p, "lr"), lrs[k]);
        cr_expect_eq(json_integer_value(json_object_get(p, "epochs")), 1);
        const json_t *words = json_array_get(cmds, k);
        const char *model = NULL, *seed = NULL, *ckpt = NULL;
        for (size_t i = 0; i + 1 < json_array_size(words); i++) {
            const char *w = json_string_value(json_array_get(words, i));
            const char *next = json_string_value(json_array_get(words, i + 1));
            if (strcmp(w, "--model") == 0) model = next;
            if (strcmp(w, "--seed") == 0) seed = next;
            if (strcmp(w, "--checkpoint") == 0) ckpt = next;
        }
        cr_assert(model && seed, "phase %zu", k);
        cr_expect_str_eq(seed, seeds[k], "phase %zu", k);
        if (k == 0) {
            cr_expect_str_eq(model, "resnet20");
        } else {
            const json_t *prev = json_array_get(cmds, k - 1);
            const char *prev_ckpt = NULL;
            for (size_t i = 0; i + 1 < json_array_size(prev); i++)
                if (strcmp(json_string_value(json_array_get(prev, i)), "--checkpoint") == 0)
                    prev_ckpt = json_string_value(json_array_get(prev, i + 1));
            cr_assert_not_null(prev_ckpt, "phase %zu", k - 1);
            cr_expect_str_eq(model, prev_ckpt, "phase %zu starts from the previous checkpoint", k);
            cr_expect(strncmp(model, tmp, strlen(tmp)) == 0, "%s under TMPDIR", model);
        }
        cr_expect_eq(ckpt == NULL, k == 2, "a checkpoint for every phase but the last");
    }
    const json_t *epochs = json_object_get(doc, "epochs");
    cr_assert_eq(json_array_size(epochs), 3);
    for (size_t k = 0; k < 3; k++)
        cr_expect_eq(json_integer_value(json_object_get(json_array_get(epochs, k), "epoch")),
                     (json_int_t)k + 1);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "verdict")), "FAIL");
    json_decref(doc);
    free(data);
    free(tmp);
    free(json);
    run_done(out, err, dir);
}
