/* d5 model: the files it writes pass ONNX's own checker (Debian's python3
 * with the onnx package), with the parameter count, input and output that
 * PyTorch's definitions give; --list, determinism and bad requests. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})
#define PYTHON             "/usr/bin/python3"

/* Checks a model file with onnx.checker (full_check: strict shape inference
 * too), counts its parameters (floating-point initializers) apart from the
 * running statistics, and infers the shape of "logits" afresh after erasing
 * the declared one. argv: FILE PARAMS INPUT OUTPUT BATCH, INPUT and OUTPUT
 * the dimensions after the batch, comma-separated ("3,32,32", "10"). */
static const char checker[] =
    "import sys, onnx\n"
    "from onnx import numpy_helper, shape_inference\n"
    "path = sys.argv[1]\n"
    "params, batch = int(sys.argv[2]), int(sys.argv[5])\n"
    "dims_in, dims_out = ([int(x) for x in a.split(',')] for a in sys.argv[3:5])\n"
    "m = onnx.load(path)\n"
    "onnx.checker.check_model(m, full_check=True)\n"
    "g = m.graph\n"
    "inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}\n"
    "stats = ('.running_mean', '.running_var')\n"
    "n = sum(a.size for k, a in inits.items() if not k.endswith(stats) and a.dtype.kind == 'f')\n"
    "assert n == params, f'{n} parameters, expected {params}'\n"
    "for a in inits.values():\n"
    "    assert (abs(a) < 1e3).all(), 'weights out of range'\n"
    "ins = [i for i in g.input if i.name not in inits]\n"
    "assert [i.name for i in ins] == ['input'], [i.name for i in ins]\n"
    "d = ins[0].type.tensor_type.shape.dim\n"
    "first = d[0].dim_param if batch == 0 else d[0].dim_value\n"
    "assert first == ('N' if batch == 0 else batch), d\n"
    "assert [x.dim_value for x in d[1:]] == dims_in, d\n"
    "assert [o.name for o in g.output] == ['logits']\n"
    "g.output[0].type.tensor_type.ClearField('shape')\n"
    "out = shape_inference.infer_shapes(m, strict_mode=True).graph.output[0]\n"
    "d = out.type.tensor_type.shape.dim\n"
    "got = [x.dim_param or x.dim_value for x in d]\n"
    "assert got == [('N' if batch == 0 else batch)] + dims_out, got\n"
    "print('checked', path, n)\n";

TestSuite(model_cli, .init = test_dir_make, .fini = test_dir_remove, .timeout = D5_TIMEOUT(300));

/* Runs the checker on a file; returns its exit status, its output in *log. */
static int check_with_onnx(const char *file, long params, const char *dims_in, const char *dims_out,
                           int batch, char **log)
{
    write_text(test_dir, "check.py", checker);
    char *script = path_join(test_dir, "check.py"), *logfile = path_join(test_dir, "check.log");
    char *cmd;
    cr_assert_geq(asprintf(&cmd, "%s %s %s %ld %s %s %d > %s 2>&1", PYTHON, script, file, params,
                           dims_in, dims_out, batch, logfile),
                  0);
    int rc = system(cmd);
    *log = slurp(logfile, NULL);
    free(script);
    free(logfile);
    free(cmd);
    return rc;
}

/* d5 model MODEL [--batch BATCH] [OPTIONS...] -o FILE, then the checker.
 * options: NULL-terminated, may be NULL. */
static void write_and_check_with(const char *model, long params, const char *dims_in,
                                 const char *dims_out, const char *batch,
                                 const char *const *options)
{
    if (access(PYTHON, X_OK) != 0) cr_skip_test("%s is not installed", PYTHON);
    char *file, *out, *err, *log;
    cr_assert_geq(asprintf(&file, "%s/%s.onnx", test_dir, model), 0);
    const char *args[32] = {"model", model, "-o", file};
    int n = 4;
    if (batch) args[n++] = "--batch", args[n++] = batch;
    for (int i = 0; options && options[i]; i++) args[n++] = options[i];
    int rc = run_d5(&out, &err, args);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    char want[128];
    snprintf(want, sizeof want, "wrote %s to %s: %ld parameters", model, file, params);
    cr_assert(strstr(out, want), "%s", out);
    rc = check_with_onnx(file, params, dims_in, dims_out, batch ? atoi(batch) : 0, &log);
    cr_assert_eq(rc, 0, "onnx rejected %s:\n%s", file, log ? log : "(no output)");
    cr_assert(log && strstr(log, "checked"), "%s", log);
    free(log);
    free(out);
    free(err);
    free(file);
}

static void write_and_check(const char *model, long params, int classes, int c, int hw,
                            const char *batch)
{
    char dims_in[64], dims_out[32];
    snprintf(dims_in, sizeof dims_in, "%d,%d,%d", c, hw, hw);
    snprintf(dims_out, sizeof dims_out, "%d", classes);
    write_and_check_with(model, params, dims_in, dims_out, batch, NULL);
}

Test(model_cli, lenet_passes_the_onnx_checker)
{
    write_and_check("lenet", 61706, 10, 1, 28, NULL);
}

Test(model_cli, mlp_with_a_fixed_batch_passes_the_onnx_checker)
{
    write_and_check("mlp", 535818, 10, 1, 28, "4");
}

Test(model_cli, resnet20_passes_the_onnx_checker)
{
    write_and_check("resnet20", 272474, 10, 3, 32, NULL);
}

Test(model_cli, resnet18_passes_the_onnx_checker)
{
    write_and_check("resnet18", 11689512, 1000, 3, 224, NULL);
}

/* The transformers at small sizes: token ids in, per-token logits out for
 * GPT-2. (ViT with a symbolic batch expands its class token through Shape,
 * Gather and Concat, whose values ONNX's shape inference does not follow:
 * it would name the batch of the logits anew.) */
Test(model_cli, bert_tiny_passes_the_onnx_checker)
{
    const char *const opts[] = {"--sequence", "32", NULL};
    write_and_check_with("bert-tiny", 4386178, "32", "2", "2", opts);
}

Test(model_cli, gpt2_small_passes_the_onnx_checker)
{
    const char *const opts[] = {"--layers", "1",         "--hidden", "64", "--sequence",
                                "16",       "--classes", "100",      NULL};
    /* 100 x 64 + 1024 x 64 embeddings, one block (12 H^2 + 13 H), ln_f. */
    write_and_check_with("gpt2-small", 100 * 64 + 1024 * 64 + 12 * 64 * 64 + 13 * 64 + 128, "16",
                         "16,100", NULL, opts);
}

Test(model_cli, vit_tiny_passes_the_onnx_checker)
{
    const char *const opts[] = {"--layers", "1", NULL};
    write_and_check_with("vit-tiny", 823912, "3,224,224", "1000", "2", opts);
}

Test(model_cli, list_shows_every_model_with_its_parameters)
{
    char *out, *err;
    cr_assert_eq(RUN(&out, &err, "model", "--list"), 0, "%s", err);
    static const char *const rows[][2] = {
        {"lenet", "61706"},
        {"resnet50", "25557032"},
        {"resnet56", "855770"},
        {"resnet18-cifar", "11173962"},
        {"wide-resnet-28-10", "36479194"},
        {"bert-base", "109483778"},
        {"gpt2-small", "124439808"},
        {"vit-b16", "86567656"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *line = strstr(out, rows[i][0]);
        cr_assert(line, "%s missing:\n%s", rows[i][0], out);
        const char *eol = strchr(line, '\n'), *num = strstr(line, rows[i][1]);
        cr_assert(num && eol && num < eol, "%s: expected %s:\n%s", rows[i][0], rows[i][1], out);
    }
    cr_assert_eq(count_lines(out), 16 + 4, "%s", out);
    free(out);
    free(err);
}

Test(model_cli, same_seed_same_file)
{
    char *a, *b, *c, *out, *err;
    cr_assert_geq(asprintf(&a, "%s/a.onnx", test_dir), 0);
    cr_assert_geq(asprintf(&b, "%s/b.onnx", test_dir), 0);
    cr_assert_geq(asprintf(&c, "%s/c.onnx", test_dir), 0);
    const char *files[3] = {a, b, c},
               *seeds[3] = {"12345678901234567890", "12345678901234567890", "1"};
    for (int i = 0; i < 3; i++) {
        int rc =
            RUN(&out, &err, "model", "lenet", "--seed", seeds[i], "--classes", "5", "-o", files[i]);
        cr_assert_eq(rc, 0, "%s", err);
        free(out);
        free(err);
    }
    size_t na, nb, nc;
    char *da = slurp(a, &na), *db = slurp(b, &nb), *dc = slurp(c, &nc);
    cr_assert(da && db && dc);
    cr_assert(na == nb && memcmp(da, db, na) == 0, "one seed gave two files");
    cr_assert(na != nc || memcmp(da, dc, na) != 0, "two seeds gave one file");
    free(da), free(db), free(dc);
    free(a), free(b), free(c);
}

Test(model_cli, bad_requests_exit_with_a_reason)
{
    char *out, *err;
    cr_assert_eq(RUN(&out, &err, "model", "resnet19", "-o", "/tmp/never.onnx"), 3);
    cr_assert(strstr(err, "no model named 'resnet19'"), "%s", err);
    cr_assert(strstr(err, "wide-resnet-28-10"), "%s", err);
    cr_assert_eq(access("/tmp/never.onnx", F_OK), -1);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "model", "lenet"), 2);
    cr_assert(strstr(err, "missing -o FILE"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "model", "-o", "x.onnx"), 2);
    cr_assert(strstr(err, "missing NAME"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "--batch", "-2", "-o", "x.onnx"), 2);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "--seed", "-1", "-o", "x.onnx"), 2);
    cr_assert(strstr(err, "--seed"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "--opset", "3", "-o", "x.onnx"), 3);
    cr_assert(strstr(err, "opset 3 is outside 7..22"), "%s", err);
    free(out), free(err);
    cr_assert_eq(
        RUN(&out, &err, "model", "bert-tiny", "--hidden", "100", "--heads", "3", "-o", "x.onnx"),
        3);
    cr_assert(strstr(err, "3 heads do not divide the width 100"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "model", "resnet20", "--layers", "4", "-o", "x.onnx"), 3);
    cr_assert(strstr(err, "'resnet20' takes no layer count"), "%s", err);
    free(out), free(err);
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "-o", "/nonexistent/dir/lenet.onnx"), 3);
    cr_assert(strstr(err, "/nonexistent/dir"), "%s", err);
    free(out), free(err);
}
