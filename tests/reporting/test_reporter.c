/* The reporter interface (d5/report.h): context, runs, finish; the built-in
 * reporters write what the results' own writers write; timer regions become
 * results. */
#define _GNU_SOURCE
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static d5_results *sample_results(void)
{
    d5_results *r;
    cr_assert_eq(d5_results_create(&r), D5_OK);
    d5_measurement m = fixed_measurement();
    cr_assert_eq(d5_results_add(r, "gemm/64", &m, "ns", NULL), D5_OK);
    cr_assert_eq(d5_results_add(r, "conv/3x3", &m, "ns", NULL), D5_OK);
    d5_measurement_free(&m);
    cr_assert_eq(d5_results_add_error(r, "conv/broken", "crashed"), D5_OK);
    cr_assert_eq(d5_results_context(r, "suite", "unit"), D5_OK);
    return r;
}

/* A reporter that records the calls it gets. */
typedef struct calls {
    char seq[64];
    int freed;
} calls;
static d5_status rec_context(void *self, const d5_results *r)
{
    (void)r;
    strcat(((calls *)self)->seq, "c");
    return D5_OK;
}
static d5_status rec_run(void *self, const d5_results *r, size_t i)
{
    (void)r;
    char one[8];
    snprintf(one, sizeof one, "%zu", i);
    strcat(((calls *)self)->seq, one);
    return D5_OK;
}
static d5_status rec_finish(void *self, const d5_results *r)
{
    (void)r;
    strcat(((calls *)self)->seq, "f");
    return D5_OK;
}
static void rec_free(void *self)
{
    ((calls *)self)->freed = 1;
}
static const d5_reporter_ops rec_ops = {"rec", rec_context, rec_run, rec_finish, rec_free};

Test(reporter, context_then_every_run_then_finish)
{
    d5_results *r = sample_results();
    calls c = {"", 0};
    d5_reporter *rep;
    cr_assert_eq(d5_reporter_create(&rec_ops, &c, &rep), D5_OK);
    cr_assert_str_eq(d5_reporter_name(rep), "rec");
    cr_assert_eq(d5_reporter_report(rep, r), D5_OK);
    cr_assert_str_eq(c.seq, "c012f");
    d5_reporter_free(rep);
    cr_assert_eq(c.freed, 1);
    d5_results_free(r);
}

static char *file_text(const char *path)
{
    size_t n;
    char *t = slurp(path, &n);
    cr_assert_not_null(t, "%s", path);
    return t;
}

/* The JSON document without its context (its date and load change). */
static char *json_without_context(const char *path)
{
    json_t *doc = json_read(path);
    json_object_del(doc, "context");
    char *text = json_dumps(doc, JSON_SORT_KEYS);
    json_decref(doc);
    return text;
}

Test(reporter, builtins_write_what_the_results_write)
{
    d5_results *r = sample_results();
    char *dir = tmpdir_make(), *a_json, *b_json, *a_csv, *b_csv, *a_txt, *b_txt;
    cr_assert_geq(asprintf(&a_json, "%s/a.json", dir), 0);
    cr_assert_geq(asprintf(&b_json, "%s/b.json", dir), 0);
    cr_assert_geq(asprintf(&a_csv, "%s/a.csv", dir), 0);
    cr_assert_geq(asprintf(&b_csv, "%s/b.csv", dir), 0);
    cr_assert_geq(asprintf(&a_txt, "%s/a.txt", dir), 0);
    cr_assert_geq(asprintf(&b_txt, "%s/b.txt", dir), 0);
    cr_assert_eq(d5_results_write_json(r, a_json), D5_OK);
    cr_assert_eq(d5_results_write_csv(r, a_csv), D5_OK);
    FILE *fa = fopen(a_txt, "w"), *fb = fopen(b_txt, "w");
    cr_assert_eq(d5_results_print(fa, r), D5_OK);
    fclose(fa);

    d5_reporter *reps[3];
    cr_assert_eq(d5_reporter_json(b_json, &reps[0]), D5_OK);
    cr_assert_eq(d5_reporter_csv(b_csv, &reps[1]), D5_OK);
    cr_assert_eq(d5_reporter_console(fb, &reps[2]), D5_OK);
    cr_assert_eq(d5_reporters_report(reps, 3, r), D5_OK);
    fclose(fb);
    for (int i = 0; i < 3; i++) d5_reporter_free(reps[i]);

    char *ja = json_without_context(a_json), *jb = json_without_context(b_json);
    cr_assert_str_eq(ja, jb);
    char *ca = file_text(a_csv), *cb = file_text(b_csv);
    cr_assert_str_eq(ca, cb);
    char *ta = file_text(a_txt), *tb = file_text(b_txt);
    cr_assert_str_eq(ta, tb);
    free(ja), free(jb), free(ca), free(cb), free(ta), free(tb);
    free(a_json), free(b_json), free(a_csv), free(b_csv), free(a_txt), free(b_txt);
    rmtree(dir);
    free(dir);
    d5_results_free(r);
}

static d5_status add_param(void *user, d5_runlog *log)
{
    (void)user;
    return d5_runlog_param(log, "suite", "unit");
}

Test(reporter, mlflow_run_of_the_results)
{
    d5_results *r = sample_results();
    char *dir = tmpdir_make();
    d5_tracker_params p = d5_tracker_default_params();
    p.dir = dir;
    p.project = "unit";
    p.run_name = "reporter test";
    p.before = add_param;
    d5_reporter *rep;
    cr_assert_eq(d5_reporter_mlflow(&p, &rep), D5_OK);
    cr_assert_eq(d5_reporter_report(rep, r), D5_OK);
    d5_reporter_free(rep);
    /* DIR/<experiment>/<run>/metrics/bench/gemm/64/median and params/suite. */
    char *cmd;
    cr_assert_geq(asprintf(&cmd,
                           "test -f %s/*/*/metrics/bench/gemm/64/median && "
                           "test -f %s/*/*/metrics/bench/conv/3x3/ci_high && "
                           "grep -qx unit %s/*/*/params/suite && "
                           "! test -e %s/*/*/metrics/bench/conv/broken",
                           dir, dir, dir, dir),
                  0);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    rmtree(dir);
    free(dir);
    d5_results_free(r);
}

Test(reporter, timer_regions_become_results)
{
    d5_timer_params tp = d5_timer_default_params();
    d5_timer *t;
    cr_assert_eq(d5_timer_create(&tp, &t), D5_OK);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(d5_timer_add(t, "FORWARD", 1000.0 * i, 100 + i), D5_OK);
        cr_assert_eq(d5_timer_add(t, "BACKWARD", 1000.0 * i + 500, 200), D5_OK);
    }
    d5_results *r;
    cr_assert_eq(d5_results_create(&r), D5_OK);
    cr_assert_eq(d5_results_add_timer(r, t, "train/"), D5_OK);
    cr_assert_eq(d5_results_count(r), 2);
    size_t i;
    cr_assert_eq(d5_results_find(r, "train/FORWARD", &i), D5_OK);
    const double *v;
    size_t n;
    d5_stats st;
    cr_assert_eq(d5_results_samples(r, i, &v, &n, &st), D5_OK);
    cr_assert_eq(n, 5);
    cr_assert(fabs(st.median - 102) < 1, "median %g", st.median); /* stored in clock ticks */
    cr_assert_eq(d5_results_find(r, "train/BACKWARD", &i), D5_OK);
    d5_results_free(r);
    d5_timer_free(t);
}
