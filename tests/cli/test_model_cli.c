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
 * too), counts its parameters apart from the running statistics, and infers
 * the shape of "logits" afresh after erasing the declared one. argv: FILE
 * PARAMS CLASSES C H W BATCH. */
static const char checker[] =
    "import sys, onnx\n"
    "from onnx import numpy_helper, shape_inference\n"
    "path = sys.argv[1]\n"
    "params, classes, c, h, w, batch = map(int, sys.argv[2:8])\n"
    "m = onnx.load(path)\n"
    "onnx.checker.check_model(m, full_check=True)\n"
    "g = m.graph\n"
    "inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}\n"
    "stats = ('.running_mean', '.running_var')\n"
    "n = sum(a.size for k, a in inits.items() if not k.endswith(stats))\n"
    "assert n == params, f'{n} parameters, expected {params}'\n"
    "for a in inits.values():\n"
    "    assert (abs(a) < 1e3).all(), 'weights out of range'\n"
    "ins = [i for i in g.input if i.name not in inits]\n"
    "assert [i.name for i in ins] == ['input'], [i.name for i in ins]\n"
    "d = ins[0].type.tensor_type.shape.dim\n"
    "first = d[0].dim_param if batch == 0 else d[0].dim_value\n"
    "assert first == ('N' if batch == 0 else batch), d\n"
    "assert [x.dim_value for x in d[1:]] == [c, h, w], d\n"
    "assert [o.name for o in g.output] == ['logits']\n"
    "g.output[0].type.tensor_type.ClearField('shape')\n"
    "out = shape_inference.infer_shapes(m, strict_mode=True).graph.output[0]\n"
    "d = out.type.tensor_type.shape.dim\n"
    "got = [x.dim_param or x.dim_value for x in d]\n"
    "assert got == [('N' if batch == 0 else batch), classes], got\n"
    "print('checked', path, n)\n";

TestSuite(model_cli, .init = test_dir_make, .fini = test_dir_remove, .timeout = D5_TIMEOUT(300));

/* Runs the checker on a file; returns its exit status, its output in *log. */
static int check_with_onnx(const char *file, long params, int classes, int c, int hw, int batch,
                           char **log)
{
    write_text(test_dir, "check.py", checker);
    char *script = path_join(test_dir, "check.py"), *logfile = path_join(test_dir, "check.log");
    char *cmd;
    cr_assert_geq(asprintf(&cmd, "%s %s %s %ld %d %d %d %d %d > %s 2>&1", PYTHON, script, file,
                           params, classes, c, hw, hw, batch, logfile),
                  0);
    int rc = system(cmd);
    *log = slurp(logfile, NULL);
    free(script);
    free(logfile);
    free(cmd);
    return rc;
}

static void write_and_check(const char *model, long params, int classes, int c, int hw,
                            const char *batch)
{
    if (access(PYTHON, X_OK) != 0) cr_skip_test("%s is not installed", PYTHON);
    char *file, *out, *err, *log;
    cr_assert_geq(asprintf(&file, "%s/%s.onnx", test_dir, model), 0);
    int rc = batch ? RUN(&out, &err, "model", model, "--batch", batch, "-o", file)
                   : RUN(&out, &err, "model", model, "-o", file);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    char want[128];
    snprintf(want, sizeof want, "wrote %s to %s: %ld parameters", model, file, params);
    cr_assert(strstr(out, want), "%s", out);
    rc = check_with_onnx(file, params, classes, c, hw, batch ? atoi(batch) : 0, &log);
    cr_assert_eq(rc, 0, "onnx rejected %s:\n%s", file, log ? log : "(no output)");
    cr_assert(log && strstr(log, "checked"), "%s", log);
    free(log);
    free(out);
    free(err);
    free(file);
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
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *line = strstr(out, rows[i][0]);
        cr_assert(line, "%s missing:\n%s", rows[i][0], out);
        const char *eol = strchr(line, '\n'), *num = strstr(line, rows[i][1]);
        cr_assert(num && eol && num < eol, "%s: expected %s:\n%s", rows[i][0], rows[i][1], out);
    }
    cr_assert_eq(count_lines(out), 11 + 4, "%s", out);
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
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "-o", "/nonexistent/dir/lenet.onnx"), 3);
    cr_assert(strstr(err, "/nonexistent/dir"), "%s", err);
    free(out), free(err);
}
