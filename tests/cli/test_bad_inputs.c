/* The catalogue of bad inputs (tests/cli/bad_inputs.tsv): every case must end
 * with its exit status and a message that says what is wrong, write nothing
 * into the output folder and delete nothing. All cases run; the failures are
 * listed together. */
#define _GNU_SOURCE
#include "onnx_support.h"
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

/* The most memory a refusal may take: d5 with its libraries loaded holds
 * about 230 MiB; a refusal that comes after building what the input asked
 * for (a model at a huge batch) holds far more. */
#define PEAK_LIMIT (1LL << 30)

static void make_dir(const char *dir, const char *name)
{
    char *p = path_join(dir, name);
    cr_assert_eq(mkdir(p, 0700), 0, "%s", p);
    free(p);
}

static void make_fifo(const char *dir, const char *name)
{
    char *p = path_join(dir, name);
    cr_assert_eq(mkfifo(p, 0600), 0, "%s", p);
    free(p);
}

/* An IDX file of n zero-valued unsigned bytes: images of 28 x 28 (ndim 3) or
 * labels (ndim 1). */
static void idx_write(const char *dir, const char *name, int ndim, uint32_t n)
{
    char *p = path_join(dir, name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f, "%s", p);
    unsigned char magic[4] = {0, 0, 0x08, (unsigned char)ndim};
    fwrite(magic, 1, 4, f);
    uint32_t dims[3] = {n, 28, 28};
    for (int i = 0; i < ndim; i++) {
        unsigned char be[4] = {(unsigned char)(dims[i] >> 24), (unsigned char)(dims[i] >> 16),
                               (unsigned char)(dims[i] >> 8), (unsigned char)dims[i]};
        fwrite(be, 1, 4, f);
    }
    for (uint32_t i = 0; i < (ndim == 3 ? n * 28 * 28 : n); i++) fputc(0, f);
    cr_assert_eq(fclose(f), 0);
    free(p);
}

/* The fixtures that {T} names in the catalogue. */
static void fixtures(const char *t)
{
    char *model = path_join(t, "lenet.onnx"), *out, *err;
    cr_assert_eq(RUN(&out, &err, "model", "lenet", "--batch", "4", "-o", model), 0, "%s", err);
    free(out);
    free(err);
    size_t len;
    char *bytes = slurp(model, &len);
    cr_assert_not_null(bytes);
    char *trunc = path_join(t, "trunc.onnx");
    FILE *f = fopen(trunc, "wb");
    fwrite(bytes, 1, len < 100 ? len : 100, f);
    fclose(f);
    free(trunc);
    free(bytes);
    free(model);
    /* Files named in the catalogue, by name and content. */
    static const struct {
        const char *name, *text;
    } files[] = {
        {"empty.onnx", ""},
        {"garbage.onnx", "this is not an ONNX model\n"},
        {"keep", "a file that must survive every case\n"},
        {"sizes-empty.csv", "M,N,K\n"},
        {"sizes-extra.csv", "M,N,K\n1,2,3,4\n"},
        {"sizes-wide.csv", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\n"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        write_text(t, files[i].name, files[i].text);
    make_dir(t, "dir");
    make_dir(t, "out");
    make_fifo(t, "fifo");
    /* MNIST folders of four garbage files, and of two FIFOs for the training set. */
    static const char *const mnist[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    make_dir(t, "mnist-bad");
    make_dir(t, "mnist-fifo");
    for (int i = 0; i < 4; i++) {
        char bad[64], fifo[64];
        snprintf(bad, sizeof bad, "mnist-bad/%s", mnist[i]);
        write_text(t, bad, "garbage, not IDX");
        snprintf(fifo, sizeof fifo, "mnist-fifo/%s", mnist[i]);
        if (i < 2) make_fifo(t, fifo);
    }
    /* A model whose input is a scalar. */
    char *scalar = path_join(t, "scalar.onnx");
    save_relu_model(scalar, "scalar", 0, NULL, NULL, 0);
    free(scalar);
    /* A model importing an opset that does not exist yet. */
    char *future = path_join(t, "opset999.onnx");
    save_relu_model(future, "future", 2, (const int64_t[]){1, 4}, "", 999);
    free(future);
    /* A custom operator library whose table declares ABI version 99. */
    char *abi = path_join(t, "abi99.so");
    cr_assert_eq(symlink(D5_FUTURE_ABI_LIB, abi), 0, "%s", abi);
    free(abi);
    /* MNIST-format files of 8 samples. */
    make_dir(t, "mnist-8");
    idx_write(t, "mnist-8/train-images-idx3-ubyte", 3, 8);
    idx_write(t, "mnist-8/train-labels-idx1-ubyte", 1, 8);
    idx_write(t, "mnist-8/t10k-images-idx3-ubyte", 3, 8);
    idx_write(t, "mnist-8/t10k-labels-idx1-ubyte", 1, 8);
}

/* Replaces every {T} in `s` (a new string). */
static char *expand(const char *s, const char *t)
{
    size_t cap = strlen(s) + 1, n = 0;
    for (const char *p = s; (p = strstr(p, "{T}")); p += 3) cap += strlen(t);
    char *r = malloc(cap);
    for (const char *p = s; *p;) {
        if (strncmp(p, "{T}", 3) == 0) {
            memcpy(r + n, t, strlen(t));
            n += strlen(t);
            p += 3;
        } else {
            r[n++] = *p++;
        }
    }
    r[n] = '\0';
    return r;
}

static int folder_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) empty = 0;
    closedir(d);
    return empty;
}

Test(bad_inputs, every_case_fails_cleanly, .timeout = D5_TIMEOUT(900))
{
    char *t = tmpdir_make();
    fixtures(t);
    char *out_dir = path_join(t, "out"), *keep = path_join(t, "keep");
    char *table = slurp(D5_SOURCE_DIR "/tests/cli/bad_inputs.tsv", NULL);
    cr_assert_not_null(table);
    int cases = 0, failures = 0;
    char report[16384] = "";
    size_t used = 0;
    char *save = NULL;
    for (char *line = strtok_r(table, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#' || !line[0]) continue;
        char *fields[40];
        int nf = 0;
        for (char *p = line; nf < 40;) {
            fields[nf++] = p;
            char *tab = strchr(p, '\t');
            if (!tab) break;
            *tab = '\0';
            p = tab + 1;
        }
        cr_assert_geq(nf, 2, "a line of the catalogue has no message column");
        int want = atoi(fields[0]);
        char *message = expand(fields[1], t);
        const char *args[40];
        int na = 0;
        for (int i = 2; i < nf; i++)
            if (fields[i][0]) args[na++] = expand(fields[i], t);
        args[na] = NULL;
        char *out = NULL, *err = NULL;
        long long peak = 0;
        int rc = run_d5_peak(&out, &err, args, &peak);
        cases++;
        const char *why = NULL;
        if (rc != want)
            why = "exit status";
        else if (peak > PEAK_LIMIT)
            why = "memory: refused only after building what the input asked for";
        else if (!strstr(err, message))
            why = "message";
        else if (!folder_empty(out_dir))
            why = "something was written into out/";
        else if (access(keep, F_OK) != 0)
            why = "the file keep was deleted";
        if (why) {
            failures++;
            used += (size_t)snprintf(report + used, used < sizeof report ? sizeof report - used : 0,
                                     "\n[%s] exit %d (want %d), peak %lld MiB, want '%s':", why, rc,
                                     want, peak >> 20, message);
            for (int i = 0; i < na && used < sizeof report; i++)
                used += (size_t)snprintf(report + used, sizeof report - used, " %s", args[i]);
            if (used < sizeof report)
                used += (size_t)snprintf(report + used, sizeof report - used,
                                         "\n    stderr: %.300s", err);
            /* Clean up after a case that wrote, so the next ones are judged alone. */
            char *cmd;
            if (asprintf(&cmd, "rm -rf '%s'/* && touch '%s'", out_dir, keep) >= 0) {
                if (system(cmd) != 0) fprintf(stderr, "could not clean %s\n", out_dir);
                free(cmd);
            }
        }
        for (int i = 0; i < na; i++) free((char *)args[i]);
        free(message);
        free(out);
        free(err);
    }
    fprintf(stderr, "bad inputs: %d cases, %d failures\n", cases, failures);
    cr_assert_geq(cases, 100, "the catalogue has %d cases", cases);
    cr_assert_eq(failures, 0, "%d of %d cases failed:%s", failures, cases, report);
    free(table);
    free(out_dir);
    free(keep);
    rmtree(t);
    free(t);
}
