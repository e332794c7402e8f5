/* d5 scaling against a stand-in for d5 train: a shell script named d5 that
 * writes the "distributed" JSON of a made-up job, so that the table, the
 * speedups, the modelled rows and the files can be checked by hand, without
 * MPI. The real end-to-end series is tests/level3/cli_scaling.cmake. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN(out, err, ...) run_d5(out, err, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(scaling_cli, .timeout = D5_TIMEOUT(120));

/* The made-up job on P ranks (P from RANKS, set by the launcher "env
 * RANKS={n}"): every worker takes batch / P samples at 0.25 ms each, and an
 * allreduce costs 1 ms when P > 1; the throughput over the whole run is 90%
 * of batch / step (time outside the steps); more than 2 ranks are
 * oversubscribed.
 * FAIL_AT=P makes the run on P ranks fail with exit status 7; NO_DIST=1
 * writes a JSON without the "distributed" object. With --step-profile F it
 * writes the profile of that step: one parameter of 61706 floats, ready at
 * half the compute, the backward pass ending at 0.9 of it, the optimizer
 * until 0.95. */
static const char fake_d5[] =
    "#!/bin/sh\n"
    "json=; batch=64; profile=\n"
    "while [ $# -gt 0 ]; do\n"
    "  case \"$1\" in\n"
    "    --json) json=$2; shift ;;\n"
    "    --batch) batch=$2; shift ;;\n"
    "    --step-profile) profile=$2; shift ;;\n"
    "    --batch=*) batch=${1#--batch=} ;;\n"
    "  esac\n"
    "  shift\n"
    "done\n"
    "P=${RANKS:-1}\n"
    "echo \"fake d5 train on $P ranks, batch $batch\"\n"
    "if [ \"$P\" = \"${FAIL_AT:-0}\" ]; then echo \"boom at $P ranks\" >&2; exit 7; fi\n"
    "if [ -n \"$NO_DIST\" ]; then echo '{\"epochs\": []}' > \"$json\"; exit 0; fi\n"
    "awk -v P=\"$P\" -v B=\"$batch\" 'BEGIN {\n"
    "  local = B / P; compute = 0.00025 * local; comm = P > 1 ? 0.001 : 0; step = compute + comm\n"
    "  printf \"{\\\"distributed\\\": {\\\"scheme\\\": \\\"dsgd\\\", \\\"comm\\\": \\\"mpi\\\", "
    "\\\"ranks\\\": %d, \\\"workers\\\": %d, \\\"servers\\\": 0, \\\"global_batch\\\": %d, "
    "\\\"local_batch\\\": %d, \\\"oversubscribed\\\": %s, \\\"steps\\\": 10, "
    "\\\"samples_per_second\\\": %.17g, \\\"step_time_s\\\": {\\\"median\\\": %.17g, "
    "\\\"ci_low\\\": %.17g, \\\"ci_high\\\": %.17g}, \\\"compute_time_s\\\": {\\\"median\\\": "
    "%.17g, \\\"ci_low\\\": null, \\\"ci_high\\\": null}, \\\"exposed_comm_s\\\": "
    "{\\\"median\\\": %.17g, \\\"ci_low\\\": null, \\\"ci_high\\\": null}, "
    "\\\"gradient_bytes\\\": 246824, \\\"bytes_sent_per_step\\\": null, "
    "\\\"bytes_recv_per_step\\\": null}}\\n\", P, P, B, local, (P > 2 ? \"true\" : \"false\"), "
    "0.9 * B / step, step, 0.9 * step, 1.1 * step, compute, comm\n"
    "}' > \"$json\"\n"
    "[ -z \"$profile\" ] || awk -v P=\"$P\" -v B=\"$batch\" 'BEGIN { c = 0.00025 * B / P\n"
    "  printf \"{\\\"schema\\\": \\\"d5-step-profile\\\", \\\"version\\\": 1, "
    "\\\"model\\\": \\\"fake\\\", \\\"batch\\\": %d, \\\"threads\\\": 1, "
    "\\\"steps\\\": 9, \\\"parameters\\\": [{\\\"name\\\": \\\"w\\\", "
    "\\\"elements\\\": 61706}], \\\"ready\\\": [{\\\"parameter\\\": 0, "
    "\\\"s\\\": %.17g}], \\\"backward_end_s\\\": %.17g, \\\"update_begin_s\\\": "
    "%.17g, \\\"update_end_s\\\": %.17g, \\\"step_s\\\": %.17g}\\n\", B / P, 0.5 * c, "
    "0.9 * c, 0.9 * c, 0.95 * c, c\n"
    "}' > \"$profile\"\n";

typedef struct fixture {
    char *dir, *d5, *fit, *json, *csv;
} fixture;

static fixture setup_fake(void)
{
    fixture f;
    f.dir = tmpdir_make();
    cr_assert_geq(asprintf(&f.d5, "%s/d5", f.dir), 0);
    cr_assert_geq(asprintf(&f.fit, "%s/pingpong.json", f.dir), 0);
    cr_assert_geq(asprintf(&f.json, "%s/series.json", f.dir), 0);
    cr_assert_geq(asprintf(&f.csv, "%s/series.csv", f.dir), 0);
    FILE *s = fopen(f.d5, "w");
    cr_assert_not_null(s);
    fputs(fake_d5, s);
    fclose(s);
    cr_assert_eq(chmod(f.d5, 0755), 0);
    /* What `d5 pingpong --fit --json` writes, cut to the two figures read:
     * alpha = 2 us, beta = 0.1 ns/B. */
    s = fopen(f.fit, "w");
    cr_assert_not_null(s);
    fputs("{\"context\": {\"command\": \"d5 pingpong\", \"alpha_s\": 2e-06, "
          "\"beta_s_per_byte\": 1e-10, \"fit_r2\": 0.99}, \"benchmarks\": []}\n",
          s);
    fclose(s);
    return f;
}

static void teardown_fake(fixture *f)
{
    rmtree(f->dir);
    free(f->dir);
    free(f->d5);
    free(f->fit);
    free(f->json);
    free(f->csv);
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double median(const json_t *o, const char *key)
{
    return num(json_object_get(o, key), "median");
}

/* Equal to 1 part in 10^9. */
static int close_to(double got, double want)
{
    return fabs(got - want) <= 1e-9 * fabs(want);
}
#define CLOSE(a, b) close_to(a, b)

Test(scaling_cli, strong_series_with_modelled_rows)
{
    fixture f = setup_fake();
    char *out, *err;
    int rc = RUN(&out, &err, "scaling", "--ranks", "4,1,2", "--mode", "strong", "--launcher",
                 "env RANKS={n}", "--model-ranks", "8,16", "--fit", f.fit, "--json", f.json,
                 "--csv", f.csv, "--", f.d5, "train", "--distributed", "dsgd", "--sampler",
                 "sharded-batch", "--batch", "32");
    cr_assert_eq(rc, 0, "exit %d\n%s\n%s", rc, out, err);
    /* Measured P = 2: compute 4 ms + comm 1 ms = 5 ms, 0.9 * 6400 samples/s
     * against 0.9 * 4000 at P = 1: speedup 1.60, efficiency 0.800, comm 20%. */
    /* P = 4 is marked oversubscribed, and the table names the file that
     * alpha and beta came from. */
    EXPECT_HAS(out, "5.000 [4.500, 5.500]", "5760.0     1.60      0.800   20.0", "oversubscribed",
               "not meaningful", "alpha = 2.000 us, beta = 0.10000 ns/B", f.fit,
               "modelled, not measured");
    cr_expect(strstr(err, "[3/3] ranks 4"), "progress: %s", err);

    json_t *doc = json_read(f.json);
    json_t *ctx = json_object_get(doc, "context"), *rows = json_object_get(doc, "series");
    cr_expect(json_is_true(json_object_get(ctx, "complete")));
    cr_expect(CLOSE(num(ctx, "alpha_s"), 2e-6));
    cr_assert_eq(json_array_size(rows), 5);
    const int64_t want_ranks[] = {1, 2, 4, 8, 16};
    for (size_t i = 0; i < 5; i++) {
        json_t *r = json_array_get(rows, i);
        cr_expect_eq(json_integer_value(json_object_get(r, "ranks")), want_ranks[i]);
        cr_expect_eq(json_is_true(json_object_get(r, "modelled")), i >= 3, "row %zu", i);
    }
    json_t *r4 = json_array_get(rows, 2);
    cr_expect(json_is_true(json_object_get(r4, "oversubscribed")));
    cr_expect(CLOSE(num(r4, "speedup"), 0.008 / 0.003), "%g", num(r4, "speedup"));
    /* Modelled by hand, S = 246824 B, alpha = 2 us, beta = 1e-10 s/B, the
     * 1-rank compute 8 ms divided by P:
     *   P = 8:  1 ms + 2*7*2 us + 2*7/8*246824*1e-10 s = 1 ms + 28 us + 43.1942 us
     *   P = 16: 0.5 ms + 2*15*2 us + 2*15/16*246824*1e-10 s = 0.5 ms + 60 us + 46.2795 us */
    const double step8 = 1e-3 + 28e-6 + 43.1942e-6, step16 = 0.5e-3 + 60e-6 + 46.2795e-6;
    /* Their speedups are against the model at P = 1: 32 / 8 ms = 4000 samples/s
     * (the measured 3600 also holds the time outside the steps). */
    json_t *m8 = json_array_get(rows, 3), *m16 = json_array_get(rows, 4);
    cr_expect(CLOSE(median(m8, "step_time_s"), step8), "%.12g", median(m8, "step_time_s"));
    cr_expect(CLOSE(median(m16, "step_time_s"), step16), "%.12g", median(m16, "step_time_s"));
    cr_expect(CLOSE(median(m8, "compute_time_s"), 1e-3));
    cr_expect(CLOSE(median(m8, "exposed_comm_s"), 71.1942e-6));
    cr_expect(CLOSE(num(m8, "samples_per_second"), 32 / step8));
    cr_expect(CLOSE(num(m8, "efficiency"), 32 / step8 / 4000 / 8), "%g", num(m8, "efficiency"));
    cr_expect(CLOSE(num(m16, "comm_share"), (60e-6 + 46.2795e-6) / step16));
    cr_expect(json_is_null(json_object_get(m8, "oversubscribed")));
    cr_expect(json_is_null(json_object_get(json_object_get(m8, "step_time_s"), "ci_low")));
    json_decref(doc);

    size_t len;
    char *csv = slurp(f.csv, &len);
    cr_assert_not_null(csv);
    cr_expect_eq(count_lines(csv), 6, "%s", csv);
    cr_expect(strncmp(csv, "modelled,ranks,scheme,workers", 29) == 0, "%s", csv);
    cr_expect(strstr(csv, "\nfalse,1,dsgd,1,0,32,32,false,10,3600,"), "%s", csv);
    cr_expect(strstr(csv, "\ntrue,16,dsgd,16,0,32,2,,,"), "%s", csv);
    free(csv);
    free(out);
    free(err);
    teardown_fake(&f);
}

/* A piecewise fit (d5 pingpong --exchange --fit): the modelled rows come
 * from the exchange's segments and the sum's line. */
Test(scaling_cli, modelled_rows_from_a_piecewise_fit)
{
    fixture f = setup_fake();
    /* Exchange: 1 us + 0.2 ns/B below 4 KiB, 3 us + 0.1 ns/B above; the
     * sum 0.5 us + 0.05 ns/B. */
    FILE *fit = fopen(f.fit, "w");
    cr_assert_not_null(fit);
    fputs("{\"context\": {\"command\": \"d5 pingpong\", \"mode\": \"exchange\", "
          "\"exchange_segments\": 2, \"exchange_0_from_bytes\": 0, \"exchange_0_alpha_s\": 1e-06, "
          "\"exchange_0_beta_s_per_byte\": 2e-10, \"exchange_1_from_bytes\": 4096, "
          "\"exchange_1_alpha_s\": 3e-06, \"exchange_1_beta_s_per_byte\": 1e-10, "
          "\"reduce_alpha_s\": 5e-07, \"reduce_s_per_byte\": 5e-11}, \"benchmarks\": []}\n",
          fit);
    fclose(fit);
    char *out, *err;
    int rc =
        RUN(&out, &err, "scaling", "--ranks", "1,2", "--mode", "strong", "--launcher",
            "env RANKS={n}", "--model-ranks", "8", "--fit", f.fit, "--json", f.json, "--", f.d5,
            "train", "--distributed", "dsgd", "--sampler", "sharded-batch", "--batch", "32");
    cr_assert_eq(rc, 0, "exit %d\n%s\n%s", rc, out, err);
    EXPECT_HAS(out, "2(P-1) exchange(S/P) + (P-1) sum(S/P)", "exchange from 4096 B: 3.000 us",
               "sum: 0.500 us + 0.05000 ns/B", "--exchange --fit");
    /* P = 8, S = 246824 B: chunk 30853 B (second segment): 14 exchanges of
     * 3 us + 3.0853 us and 7 sums of 0.5 us + 1.54265 us; compute 1 ms. */
    double chunk = 246824.0 / 8;
    double comm = 14 * (3e-6 + 1e-10 * chunk) + 7 * (5e-7 + 5e-11 * chunk);
    json_t *doc = json_read(f.json);
    json_t *m8 = json_array_get(json_object_get(doc, "series"), 2);
    cr_expect(json_is_true(json_object_get(m8, "modelled")));
    cr_expect(CLOSE(median(m8, "step_time_s"), 1e-3 + comm), "%.12g, expected %.12g",
              median(m8, "step_time_s"), 1e-3 + comm);
    json_decref(doc);
    free(out);
    free(err);
    teardown_fake(&f);
}

/* --simulate: the model ranks once more, simulated by SimGrid: the 1-rank
 * run again as the local scheme writes its step profile (the fake's), which
 * the real d5-sim-train beside the fake d5 replays on 2 and 4 ranks of four
 * nodes of the fat tree, with dsgd's communication; strong scaling divides
 * the profile's times by P. */
Test(scaling_cli, simulated_rows_beside_the_modelled_ones, .timeout = D5_TIMEOUT(120))
{
    char sim[4200], link[4200], hosts[4200];
    const char *slash = strrchr(D5_BIN, '/');
    snprintf(sim, sizeof sim, "%.*s/d5-sim-train", (int)(slash - D5_BIN), D5_BIN);
    if (access(sim, X_OK) != 0 || system("command -v smpirun >/dev/null 2>&1") != 0)
        cr_skip_test("no d5-sim-train or smpirun (SimGrid's libsimgrid-dev)");
    fixture f = setup_fake();
    snprintf(link, sizeof link, "%s/d5-sim-train", f.dir);
    cr_assert_eq(symlink(sim, link), 0);
    write_text(f.dir, "hosts.txt", "node-0\nnode-1\nnode-2\nnode-3\n");
    snprintf(hosts, sizeof hosts, "%s/hosts.txt", f.dir);
    FILE *fit = fopen(f.fit, "w");
    cr_assert_not_null(fit);
    fputs("{\"context\": {\"exchange_segments\": 1, \"exchange_0_from_bytes\": 0, "
          "\"exchange_0_alpha_s\": 1e-06, \"exchange_0_beta_s_per_byte\": 1e-10, "
          "\"reduce_alpha_s\": 0, \"reduce_s_per_byte\": 5e-11}}\n",
          fit);
    fclose(fit);
    char *out, *err;
    int rc = RUN(&out, &err, "scaling", "--ranks", "1,2", "--mode", "strong", "--launcher",
                 "env RANKS={n}", "--model-ranks", "2,4", "--fit", f.fit, "--simulate",
                 D5_SOURCE_DIR "/level3_distributed/sim/platforms/fat_tree_100g.xml",
                 "--sim-hostfile", hosts, "--json", f.json, "--", f.d5, "train", "--distributed",
                 "dsgd", "--sampler", "sharded-batch", "--batch", "32", "--bucket-mb", "0");
    cr_assert_eq(rc, 0, "exit %d\n%s\n%s", rc, out, err);
    EXPECT_HAS(out, "# simulated (SimGrid, ", "fat_tree_100g.xml", "the fitted line of d5 pingpong",
               "replayed by d5-sim-train", "  simulated\n");
    cr_expect(strstr(err, "step profile: env RANKS=1 "), "%s", err);
    cr_expect(strstr(err, "--distributed local"), "%s", err);
    cr_expect(strstr(err, "simulated ranks 4: smpirun -np 4 -platform "), "%s", err);
    cr_expect(strstr(err, "--bucket-mb 0 --steps 5 --time-scale 0.25"), "%s", err);
    json_t *doc = json_read(f.json);
    json_t *rows = json_object_get(doc, "series");
    cr_assert_eq(json_array_size(rows), 6, "measured 1, 2; modelled 2, 4; simulated 2, 4");
    for (size_t i = 4; i < 6; i++) {
        json_t *r = json_array_get(rows, i);
        cr_expect(json_is_true(json_object_get(r, "simulated")), "row %zu", i);
        cr_expect(json_is_true(json_object_get(r, "modelled")), "row %zu", i);
        cr_expect_str_eq(json_string_value(json_object_get(r, "comm")), "ring (SimGrid)");
        double p = (double)json_integer_value(json_object_get(r, "ranks"));
        double comm = median(r, "exposed_comm_s"), compute = median(r, "compute_time_s");
        /* The 1-rank profile: 0.25 ms a sample, 32 samples: 8 ms, over P. */
        cr_expect(fabs(compute - 8e-3 / p) < 2e-6, "P = %g: compute %g s", p, compute);
        /* One allreduce of 246824 B after the backward pass: 2 (P - 1)
         * steps of S / P at 12.5 GB/s and 1 us a link at least, with SMPI's
         * factors of the platform, the copies and the loss's agreement on
         * top (copies at the rate measured on this machine): under 2 ms. */
        double least = 2 * (p - 1) * (2e-6 + 246824 / p / 12.5e9);
        cr_expect(comm > least && comm < 2e-3, "P = %g: %g s, at least %g s", p, comm, least);
        cr_expect(fabs(median(r, "step_time_s") - (compute + comm)) < 3e-6);
    }
    cr_expect(json_is_false(json_object_get(json_array_get(rows, 2), "simulated")));
    json_decref(doc);
    free(out);
    free(err);
    /* What --simulate needs, said before any run. */
    rc = RUN(&out, &err, "scaling", "--ranks", "1", "--mode", "strong", "--model-ranks", "4",
             "--simulate", "/no/such/platform.xml", "--", f.d5, "train", "--distributed", "dsgd");
    cr_expect_eq(rc, 2, "%s", err);
    EXPECT_HAS(err, "--simulate needs --sim-hostfile FILE");
    free(out);
    free(err);
    teardown_fake(&f);
}

/* Without a 1-rank run: no speedup or efficiency, and the model scales the
 * smallest run's compute (2 ranks: 4 ms, so 8 ranks: 1 ms). */
Test(scaling_cli, without_one_rank_efficiency_is_a_dash)
{
    fixture f = setup_fake();
    char *out, *err;
    int rc =
        RUN(&out, &err, "scaling", "--ranks", "2", "--mode", "strong", "--launcher",
            "env RANKS={n}", "--model-ranks", "8", "--fit", f.fit, "--json", f.json, "--", f.d5,
            "train", "--distributed", "dsgd", "--sampler", "sharded-batch", "--batch", "32");
    cr_assert_eq(rc, 0, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(out, "no 1-rank run"), "%s", out);
    cr_expect(strstr(out, "5760.0        -          -   20.0"), "%s", out);
    cr_expect(strstr(out, "of the 2-rank run (the smallest) scaled by 2 / P"), "%s", out);
    json_t *doc = json_load_file(f.json, 0, NULL);
    cr_assert_not_null(doc);
    json_t *m8 = json_array_get(json_object_get(doc, "series"), 1);
    cr_expect(CLOSE(median(m8, "compute_time_s"), 1e-3));
    cr_expect(json_is_null(json_object_get(m8, "speedup")));
    json_decref(doc);
    free(out);
    free(err);
    teardown_fake(&f);
}

/* Weak scaling with sharded-batch: run P gets --batch 16*P; the model keeps
 * the largest run's compute (2 ranks: 16 samples, 4 ms) and a global batch
 * of 16*P. */
Test(scaling_cli, weak_series_scales_the_batch)
{
    fixture f = setup_fake();
    char *out, *err;
    int rc =
        RUN(&out, &err, "scaling", "--ranks", "1,2", "--mode", "weak", "--launcher",
            "env RANKS={n}", "--model-ranks", "4", "--fit", f.fit, "--json", f.json, "--", f.d5,
            "train", "--distributed", "dsgd", "--sampler", "sharded-batch", "--batch=16");
    cr_assert_eq(rc, 0, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "--batch=32 --json"), "%s", err);
    json_t *doc = json_load_file(f.json, 0, NULL);
    cr_assert_not_null(doc);
    json_t *rows = json_object_get(doc, "series");
    cr_expect_eq(num(json_array_get(rows, 1), "global_batch"), 32);
    json_t *m4 = json_array_get(rows, 2);
    double comm = 2 * 3 * 2e-6 + 2 * 3.0 / 4 * 246824 * 1e-10, step = 4e-3 + comm;
    cr_expect(CLOSE(median(m4, "step_time_s"), step), "%.12g", median(m4, "step_time_s"));
    cr_expect(CLOSE(num(m4, "global_batch"), 64));
    /* Efficiency X_4 / (4 X_1), X_1 = 16 / 4 ms: the model at P = 1. */
    cr_expect(CLOSE(num(m4, "efficiency"), 64 / step / (4 * 4000.0)), "%g", num(m4, "efficiency"));
    json_decref(doc);
    free(out);
    free(err);
    teardown_fake(&f);
}

/* A failed run stops the series with its exit status and its rank count;
 * the rows before it are printed and written. */
Test(scaling_cli, a_failed_run_stops_the_series)
{
    fixture f = setup_fake();
    char *out, *err;
    int rc = RUN(&out, &err, "scaling", "--ranks", "1,2,4", "--mode", "strong", "--launcher",
                 "env RANKS={n} FAIL_AT=2", "--model-ranks", "8", "--fit", f.fit, "--json", f.json,
                 "--", f.d5, "train", "--distributed", "dsgd", "--batch", "32");
    cr_assert_eq(rc, 7, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "ranks 2: the run ended with exit status 7"), "%s", err);
    cr_expect(strstr(err, "boom at 2 ranks"), "the run's own output: %s", err);
    cr_expect(strstr(err, "stopped at 2 ranks"), "%s", err);
    cr_expect(!strstr(err, "ranks 4"), "%s", err);
    cr_expect(strstr(out, "8.000 [7.200, 8.800]"), "the 1-rank row: %s", out);
    json_t *doc = json_load_file(f.json, 0, NULL);
    cr_assert_not_null(doc);
    json_t *ctx = json_object_get(doc, "context");
    cr_expect(json_is_false(json_object_get(ctx, "complete")));
    cr_expect_eq(json_integer_value(json_object_get(ctx, "failed_ranks")), 2);
    cr_expect_eq(json_array_size(json_object_get(doc, "series")), 1);
    json_decref(doc);
    free(out);
    free(err);
    teardown_fake(&f);
}

/* A launcher that does not start P ranks, and a train without the
 * "distributed" object, are caught. */
Test(scaling_cli, runs_that_do_not_say_what_they_ran)
{
    fixture f = setup_fake();
    char *out, *err;
    int rc = RUN(&out, &err, "scaling", "--ranks", "1,2", "--mode", "strong", "--launcher",
                 "env IGNORED={n}", "--", f.d5, "train", "--distributed", "dsgd");
    cr_assert_eq(rc, 1, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "ranks 2: d5 train ran on 1 rank: the launcher did not start 2"), "%s",
              err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "scaling", "--ranks", "1", "--mode", "strong", "--launcher",
             "env NO_DIST=1 RANKS={n}", "--", f.d5, "train", "--distributed", "dsgd");
    cr_assert_eq(rc, 3, "exit %d\n%s\n%s", rc, out, err);
    cr_expect(strstr(err, "has no \"distributed\" object"), "%s", err);
    free(out);
    free(err);
    teardown_fake(&f);
}

/* With the partitioned sampler --batch is a worker's: weak scaling keeps
 * it, strong scaling divides it among the ranks. */
Test(scaling_cli, partitioned_batch_is_a_workers)
{
    const char *modes[] = {"weak", "strong"}, *b2[] = {"32", "16"}, *b4[] = {"32", "8"};
    for (int k = 0; k < 2; k++) {
        char *out, *err, *want;
        int rc = RUN(&out, &err, "scaling", "--ranks", "2,4", "--mode", modes[k], "--print-only",
                     "--launcher", "srun -n {n}", "--", "d5", "train", "--distributed", "dsgd",
                     "--batch", "32");
        cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
        cr_assert_geq(asprintf(&want,
                               "srun -n 2 %s train --distributed dsgd --batch %s --json "
                               "d5-scaling-2.json\n"
                               "srun -n 4 %s train --distributed dsgd --batch %s --json "
                               "d5-scaling-4.json\n",
                               D5_BIN, b2[k], D5_BIN, b4[k]),
                      0);
        cr_expect(strstr(out, want), "%s mode:\n%s\nexpected\n%s", modes[k], out, want);
        free(want);
        free(out);
        free(err);
    }
}

/* --print-only: the commands, one a line, nothing run. --batch is a
 * worker's with the partitioned sampler (the default) and the global batch
 * with sharded-batch: weak scaling grows the latter, strong scaling splits
 * the former. */
Test(scaling_cli, print_only_prints_the_commands)
{
    char *out, *err;
    int rc = RUN(&out, &err, "scaling", "--ranks", "4,1,2", "--mode", "weak", "--print-only",
                 "--launcher", "srun -n {n} --cpu-bind=cores", "--", "d5", "train", "--model",
                 "lenet", "--distributed", "dsgd", "--sampler", "sharded-batch", "--batch", "16");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    char *want;
    cr_assert_geq(
        asprintf(&want,
                 "srun -n 1 --cpu-bind=cores %s train --model lenet --distributed dsgd --sampler "
                 "sharded-batch --batch 16 --json d5-scaling-1.json\n"
                 "srun -n 2 --cpu-bind=cores %s train --model lenet --distributed dsgd --sampler "
                 "sharded-batch --batch 32 --json d5-scaling-2.json\n"
                 "srun -n 4 --cpu-bind=cores %s train --model lenet --distributed dsgd --sampler "
                 "sharded-batch --batch 64 --json d5-scaling-4.json\n",
                 D5_BIN, D5_BIN, D5_BIN),
        0);
    cr_expect_str_eq(out, want);
    cr_expect_str_eq(err, "");
    free(want);
    free(out);
    free(err);
    /* Strong with sharded-batch: the batch as given; with --model-ranks and
     * no --fit, the alpha-beta fit's command too. */
    rc = RUN(&out, &err, "scaling", "--ranks", "2", "--mode", "strong", "--print-only",
             "--launcher", "srun -n {n}", "--model-ranks", "64", "--", "d5", "train",
             "--distributed", "dsgd", "--sampler", "sharded-batch", "--batch", "16");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert_geq(asprintf(&want,
                           "srun -n 2 %s train --distributed dsgd --sampler sharded-batch "
                           "--batch 16 --json d5-scaling-2.json\n"
                           "srun -n 2 %s pingpong --fit -b 1K -e 4M --json "
                           "d5-scaling-pingpong.json\n",
                           D5_BIN, D5_BIN),
                  0);
    cr_expect_str_eq(out, want);
    free(want);
    free(out);
    free(err);
}

/* The default launcher: mpirun (or mpiexec) -n P, --oversubscribe only
 * beyond the cores. */
Test(scaling_cli, print_only_default_launcher)
{
    char *out, *err;
    int rc = RUN(&out, &err, "scaling", "--ranks", "1,100000", "--mode", "strong", "--print-only",
                 "--", "d5", "train", "--distributed", "dsgd");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    char *second = strchr(out, '\n');
    cr_assert_not_null(second, "%s", out);
    *second++ = '\0';
    cr_expect(strstr(out, "-n 1 ") && !strstr(out, "--oversubscribe"), "%s", out);
    cr_expect(strstr(second, "-n 100000 "), "%s", second);
    if (strstr(second, "mpirun -n 100000") && !system("mpirun --version 2>&1 | grep -q 'Open MPI'"))
        cr_expect(strstr(second, "-n 100000 --oversubscribe "), "%s", second);
    if (getuid() == 0 && strstr(out, "mpirun"))
        cr_expect(strncmp(out, "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ", 58) ==
                      0,
                  "%s", out);
    free(out);
    free(err);
}

/* Bad usage beyond tests/cli/bad_inputs.tsv: the train command's own --json,
 * weak mode without a batch, a launcher without {n}, a bad --fit file. */
Test(scaling_cli, bad_usage)
{
    fixture f = setup_fake();
    char *out, *err;
    int rc = RUN(&out, &err, "scaling", "--ranks", "1", "--mode", "strong", "--", "d5", "train",
                 "--distributed", "dsgd", "--json", "x.json");
    cr_expect_eq(rc, 2, "exit %d: %s", rc, err);
    cr_expect(strstr(err, "takes no --json"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "scaling", "--ranks", "1", "--mode", "weak", "--", "d5", "train",
             "--distributed", "dsgd", "--sampler", "sharded-batch");
    cr_expect_eq(rc, 2, "exit %d: %s", rc, err);
    cr_expect(strstr(err, "--mode weak with --sampler sharded-batch needs --batch B"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "scaling", "--ranks", "1", "--mode", "strong", "--launcher", "srun", "--",
             "d5", "train", "--distributed", "dsgd");
    cr_expect_eq(rc, 2, "exit %d: %s", rc, err);
    cr_expect(strstr(err, "needs {n}"), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "scaling", "--ranks", "1", "--mode", "strong", "--model-ranks", "8",
             "--fit", f.d5, "--", "d5", "train", "--distributed", "dsgd");
    cr_expect_eq(rc, 3, "exit %d: %s", rc, err);
    cr_expect(strstr(err, f.d5), "%s", err);
    free(out);
    free(err);
    rc = RUN(&out, &err, "scaling", "--ranks", "1", "--mode", "strong", "--", f.dir, "train",
             "--distributed", "dsgd");
    cr_expect_eq(rc, 2, "exit %d: %s", rc, err);
    free(out);
    free(err);
    teardown_fake(&f);
}
