/* The step recorder and the step profile's file: the timeline of real steps
 * (every parameter ready once, times in order, the step's batch), the file
 * read back equal, and the errors of files that are not profiles. */
#include "support.h"
#include "trainer_support.h"

#include <criterion/criterion.h>
#include <string.h>

TestSuite(step_profile, .init = test_dir_make, .fini = test_dir_remove);

/* A profile of `steps` steps of the mlp at batch 16 (the first left out). */
static void record(int64_t steps, d5_step_profile *p)
{
    d5_network *net = mlp(16);
    d5_dataset *train = synthetic(256, 3);
    d5_optimizer *opt = optimizer_of("momentum", 0.05);
    d5_trainer_params tp = d5_trainer_default_params();
    tp.max_batches = steps;
    d5_trainer *t = NULL;
    d5_step_recorder *r = NULL;
    d5_train_result res;
    cr_assert_eq(d5_trainer_create(net, &tp, &t), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_trainer_set_optimizer(t, opt), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_step_recorder_attach(t, &r), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_trainer_run(t, train, NULL, 1, &res), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_step_recorder_steps(r), steps);
    cr_assert_eq(d5_step_recorder_profile(r, 1, p), D5_OK, "%s", d5_last_error());
    /* Every step left out: nothing to take medians over. */
    d5_step_profile none;
    cr_assert_eq(d5_step_recorder_profile(r, steps, &none), D5_ERR_STATE);
    cr_assert_not_null(strstr(d5_last_error(), "no step to take the medians over"));
    d5_step_recorder_free(r);
    d5_train_result_free(&res);
    d5_trainer_free(t);
    d5_optimizer_free(opt);
    d5_dataset_free(train);
    d5_network_free(net);
}

Test(step_profile, records_every_gradient_once_in_time_order)
{
    d5_step_profile p;
    record(6, &p);
    cr_assert_eq(p.steps, 5);
    cr_assert_eq(p.batch, 16);
    cr_assert_gt(p.n, 1);
    int64_t total = 0;
    char seen[64] = {0};
    cr_assert_lt(p.n, 64);
    for (int32_t k = 0; k < p.n; k++) {
        cr_assert(p.order[k] >= 0 && p.order[k] < p.n);
        cr_assert_eq(seen[p.order[k]]++, 0, "parameter %d ready twice", (int)p.order[k]);
        cr_assert_gt(p.ready_s[k], 0, "ready %d at %g s", (int)k, p.ready_s[k]);
        if (k > 0) cr_assert_geq(p.ready_s[k], p.ready_s[k - 1]);
        total += p.elements[k];
        cr_assert_not_null(p.names[k]);
    }
    cr_assert_eq(total, 535818, "%lld elements (the mlp's)", (long long)total);
    cr_assert_geq(p.backward_end_s, p.ready_s[p.n - 1]);
    cr_assert_geq(p.update_begin_s, p.backward_end_s);
    cr_assert_gt(p.update_end_s, p.update_begin_s, "the optimizer takes time");
    cr_assert_geq(p.step_s, p.update_end_s);
    /* Backpropagation goes from the last layer to the first: the first
     * layer's weight (784 x 512) is among the last two gradients ready. */
    int first_layer = -1;
    for (int32_t k = 0; k < p.n; k++)
        if (p.elements[p.order[k]] == 784 * 512) first_layer = k;
    cr_assert_geq(first_layer, p.n - 2, "the first layer's weight was ready %d-th of %d",
                  first_layer + 1, (int)p.n);
    /* Each step over the median: as many as steps, the median one 1. */
    cr_assert_eq(p.nfactors, p.steps);
    int below = 0, above = 0;
    for (int64_t k = 0; k < p.nfactors; k++) {
        cr_assert_gt(p.factors[k], 0);
        below += p.factors[k] < 1;
        above += p.factors[k] > 1;
    }
    cr_assert(below <= 2 && above <= 2, "%d below and %d above the median of 5", below, above);
    cr_assert_eq(d5_step_profile_check(&p), D5_OK, "%s", d5_last_error());
    d5_step_profile_free(&p);
}

Test(step_profile, file_reads_back_equal)
{
    d5_step_profile p, q;
    record(4, &p);
    snprintf(p.model, sizeof p.model, "mlp");
    p.threads = 2;
    char *path = path_join(test_dir, "profile.json");
    cr_assert_eq(d5_step_profile_write(&p, path), D5_OK, "%s", d5_last_error());
    cr_assert_eq(d5_step_profile_read(path, &q), D5_OK, "%s", d5_last_error());
    cr_assert_str_eq(q.model, "mlp");
    cr_assert_eq(q.threads, 2);
    cr_assert_eq(q.steps, p.steps);
    cr_assert_eq(q.batch, p.batch);
    cr_assert_eq(q.n, p.n);
    for (int32_t i = 0; i < p.n; i++) {
        cr_assert_str_eq(q.names[i], p.names[i]);
        cr_assert_eq(q.elements[i], p.elements[i]);
        cr_assert_eq(q.order[i], p.order[i]);
        cr_assert_float_eq(q.ready_s[i], p.ready_s[i], 1e-12);
    }
    cr_assert_float_eq(q.step_s, p.step_s, 1e-12);
    cr_assert_eq(q.nfactors, p.nfactors);
    for (int64_t k = 0; k < p.nfactors; k++) cr_assert_float_eq(q.factors[k], p.factors[k], 1e-9);
    cr_assert_float_eq(q.update_end_s, p.update_end_s, 1e-12);
    d5_step_profile_free(&q);
    d5_step_profile_free(&p);
    free(path);
}

/* The error of reading `text` as a profile: its status, its message checked
 * to name the file and to hold `needle`. */
static void refused(const char *text, d5_status want, const char *needle)
{
    char *path = path_join(test_dir, "bad.json");
    write_text(test_dir, "bad.json", text);
    d5_step_profile p;
    cr_assert_eq(d5_step_profile_read(path, &p), want, "%s", d5_last_error());
    cr_assert_not_null(strstr(d5_last_error(), path), "%s", d5_last_error());
    cr_assert_not_null(strstr(d5_last_error(), needle), "%s", d5_last_error());
    cr_assert_null(p.names);
    free(path);
}

#define GOOD_HEAD                                                                                  \
    "{\"schema\": \"d5-step-profile\", \"version\": 1, \"model\": \"m\", \"batch\": 8, "           \
    "\"threads\": 1, \"steps\": 3, \"backward_end_s\": 0.03, \"update_begin_s\": 0.03, "           \
    "\"update_end_s\": 0.035, \"step_s\": 0.04, "

Test(step_profile, files_that_are_not_profiles_are_named)
{
    refused("{\"schema\": 1", D5_ERR_FORMAT, "not JSON");
    refused("{\"schema\": \"d5-results\", \"version\": 1}", D5_ERR_FORMAT, "\"schema\"");
    refused(GOOD_HEAD "\"parameters\": []}", D5_ERR_FORMAT, "\"parameters\"");
    refused(GOOD_HEAD "\"parameters\": [{\"name\": \"w\", \"elements\": 4}], \"ready\": []}",
            D5_ERR_FORMAT, "one entry a parameter");
    refused(GOOD_HEAD "\"parameters\": [{\"name\": \"w\", \"elements\": 4}, {\"name\": \"b\", "
                      "\"elements\": 2}], \"ready\": [{\"parameter\": 1, \"s\": 0.01}, "
                      "{\"parameter\": 1, \"s\": 0.02}]}",
            D5_ERR_FORMAT, "ready twice");
    refused(GOOD_HEAD "\"parameters\": [{\"name\": \"w\", \"elements\": 4}, {\"name\": \"b\", "
                      "\"elements\": 2}], \"ready\": [{\"parameter\": 1, \"s\": 0.02}, "
                      "{\"parameter\": 0, \"s\": 0.01}]}",
            D5_ERR_FORMAT, "ready[1]");
    refused(GOOD_HEAD "\"parameters\": [{\"name\": \"w\", \"elements\": 4}], \"ready\": "
                      "[{\"parameter\": 0, \"s\": 0.05}]}",
            D5_ERR_FORMAT, "backward_end_s");
    refused(GOOD_HEAD "\"parameters\": [{\"name\": \"w\"}], \"ready\": [{\"parameter\": 0, "
                      "\"s\": 0.01}]}",
            D5_ERR_FORMAT, "\"elements\"");
    char *missing = path_join(test_dir, "none.json");
    d5_step_profile p;
    cr_assert_eq(d5_step_profile_read(missing, &p), D5_ERR_IO);
    cr_assert_not_null(strstr(d5_last_error(), missing), "%s", d5_last_error());
    free(missing);
}
