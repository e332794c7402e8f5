/* DeepBench's RNN sizes in d5 test-operator: the rows of the operator's cell
 * from bench/deepbench/rnn_*.csv, input size = hidden, FLOPs counted as
 * DeepBench counts them, the small smoke rows, inline sizes and their errors. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(rnn_sizes, .timeout = D5_TIMEOUT(300));

/* The counter `key` of the median aggregate of benchmark OP/SIZE/BACKEND. */
static double counter(const char *json, const char *name, const char *key)
{
    json_t *doc = json_read(json);
    char want[512];
    snprintf(want, sizeof want, "%s_median", name);
    double v = -1;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "benchmarks"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), want) == 0)
            v = json_number_value(json_object_get(e, key));
    }
    json_decref(doc);
    cr_assert_geq(v, 0, "no %s in %s", want, json);
    return v;
}

static int have_dnnl(void)
{
    char why[256];
    return d5_backend_available("dnnl", why, sizeof why);
}

/* The first LSTM row of DeepBench's training list, and its FLOPs:
 * 8 * timesteps * batch * hidden^2. */
Test(rnn_sizes, deepbench_train_lstm)
{
    const char *backend = have_dnnl() ? "dnnl" : "ref";
    char *dir = tmpdir_make(), *json, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/lstm.json", dir), 0);
    int rc = RUN(&out, &err, "test-operator", "LSTM", "--sizes", "deepbench-train", "--limit", "1",
                 "--backend", backend, "--max-time", "0.05", "--no-peak", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "hidden=512,batch=16,timesteps=25,cell=lstm"), "%s", out);
    char name[256];
    snprintf(name, sizeof name, "LSTM/hidden=512,batch=16,timesteps=25,cell=lstm/%s", backend);
    cr_assert_float_eq(counter(json, name, "flops"), 8.0 * 25 * 16 * 512 * 512, 1);
    free(out);
    free(err);
    free(json);
    rmtree(dir);
    free(dir);
}

/* The inference list's first GRU row (its "set" column is not part of the
 * size), with DeepBench's 6 * T * N * H^2; and the vanilla cell's
 * 2 * T * N * H^2 + T * N * H. */
Test(rnn_sizes, deepbench_infer_gru_and_train_vanilla)
{
    const char *backend = have_dnnl() ? "dnnl" : "ref";
    char *dir = tmpdir_make(), *json, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/gru.json", dir), 0);
    int rc = RUN(&out, &err, "test-operator", "GRU", "--sizes", "deepbench-infer", "--limit", "1",
                 "--backend", backend, "--max-time", "0.05", "--no-peak", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "cell=gru"), "%s", out);
    cr_assert_null(strstr(out, "set="), "%s", out);
    /* The first gru row of rnn_inference.csv. */
    char *csv_path;
    cr_assert_geq(asprintf(&csv_path, "%s/bench/deepbench/rnn_inference.csv", D5_SOURCE_DIR), 0);
    FILE *f = fopen(csv_path, "r");
    cr_assert_not_null(f);
    char line[256];
    long h = 0, n = 0, t = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, ",gru") && sscanf(line, "%*[^,],%ld,%ld,%ld", &h, &n, &t) == 3) break;
    fclose(f);
    cr_assert_gt(h, 0);
    char name[256];
    snprintf(name, sizeof name, "GRU/hidden=%ld,batch=%ld,timesteps=%ld,cell=gru/%s", h, n, t,
             backend);
    cr_assert_float_eq(counter(json, name, "flops"), 6.0 * t * n * h * h, 1);
    free(out);
    free(err);

    rc = RUN(&out, &err, "test-operator", "RNN", "--sizes", "hidden=64,batch=2,timesteps=3",
             "--backend", backend, "--max-time", "0.05", "--no-peak", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    snprintf(name, sizeof name, "RNN/hidden=64,batch=2,timesteps=3/%s", backend);
    cr_assert_float_eq(counter(json, name, "flops"), 2.0 * 3 * 2 * 64 * 64 + 3 * 2 * 64, 1e-6);
    free(out);
    free(err);
    free(csv_path);
    free(json);
    rmtree(dir);
    free(dir);
}

/* The default smoke rows on every backend, validated against ref with the
 * gradient checked. */
Test(rnn_sizes, smoke_validated)
{
    char *out, *err;
    int rc = RUN(&out, &err, "test-operator", "GRU", "--limit", "1", "--validate", "--gradient",
                 "--max-time", "0.05", "--no-peak");
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    cr_assert(strstr(out, "hidden=32,batch=4,timesteps=8"), "%s", out);
    cr_assert(strstr(out, "match finite differences"), "%s", out);
    free(out);
    free(err);
}

/* A bidirectional inline size counts both directions. */
Test(rnn_sizes, inline_bidirectional)
{
    const char *backend = have_dnnl() ? "dnnl" : "ref";
    char *dir = tmpdir_make(), *json, *out, *err;
    cr_assert_geq(asprintf(&json, "%s/bi.json", dir), 0);
    int rc = RUN(&out, &err, "test-operator", "LSTM", "--sizes",
                 "hidden=16,batch=2,timesteps=3,input=8,direction=bidirectional", "--backend",
                 backend, "--validate", "--max-time", "0.05", "--no-peak", "--json", json);
    cr_assert_eq(rc, 0, "exit %d: %s\n%s", rc, out, err);
    char name[256];
    snprintf(name, sizeof name,
             "LSTM/hidden=16,batch=2,timesteps=3,input=8,direction=bidirectional/%s", backend);
    cr_assert_float_eq(counter(json, name, "flops"), 2 * 8.0 * 3 * 2 * 16 * 16, 1e-6);
    free(out);
    free(err);
    free(json);
    rmtree(dir);
    free(dir);
}

Test(rnn_sizes, bad_sizes)
{
    char *out, *err;
    cr_assert_eq(RUN(&out, &err, "test-operator", "LSTM", "--sizes",
                     "hidden=8,batch=2,timesteps=3,cell=gru", "--backend", "ref", "--no-peak"),
                 3);
    cr_assert(strstr(err, "cell=gru, but LSTM is DeepBench's cell lstm"), "%s", err);
    free(out);
    free(err);
    cr_assert_eq(RUN(&out, &err, "test-operator", "GRU", "--sizes", "hidden=8,batch=2", "--backend",
                     "ref", "--no-peak"),
                 3);
    cr_assert(strstr(err, "missing timesteps"), "%s", err);
    free(out);
    free(err);
    cr_assert_eq(RUN(&out, &err, "test-operator", "RNN", "--sizes",
                     "hidden=8,batch=2,timesteps=3,direction=up", "--backend", "ref", "--no-peak"),
                 3);
    cr_assert(strstr(err, "direction=up is not forward, reverse or bidirectional"), "%s", err);
    free(out);
    free(err);
    /* A list without rows of the operator's cell. */
    char *dir = tmpdir_make(), *csv;
    cr_assert_geq(asprintf(&csv, "%s/lstm_only.csv", dir), 0);
    FILE *f = fopen(csv, "w");
    cr_assert_not_null(f);
    fputs("hidden,batch,timesteps,cell\n8,2,3,lstm\n", f);
    fclose(f);
    cr_assert_eq(
        RUN(&out, &err, "test-operator", "GRU", "--sizes", csv, "--backend", "ref", "--no-peak"),
        3);
    cr_assert(strstr(err, "has no rows of cell gru (GRU)"), "%s", err);
    free(out);
    free(err);
    free(csv);
    rmtree(dir);
    free(dir);
}
