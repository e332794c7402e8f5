/* d5 train: what a finished run prints (the epochs table, the stop, the
 * backends, threads, precision, distributed figures, reports and regions)
 * and the training document of --json and train.json. */
#define _POSIX_C_SOURCE 200809L
#include "train_results.h"

#include <math.h>

static void print_epochs(FILE *f, const d5_train_result *r)
{
    fprintf(f, "\n%5s %10s %9s %10s %9s %9s %12s %10s %14s\n", "epoch", "train loss", "train acc",
            "test loss", "test acc", "seconds", "samples/s", "batches/s", "loader samp/s");
    for (int32_t i = 0; i < r->nepochs; i++) {
        const d5_epoch_stats *e = &r->epochs[i];
        fprintf(f, "%5d %10.4f %8.2f%% %10.4f %8.2f%% %9.2f %12.1f %10.2f %14.0f\n", (int)e->epoch,
                e->train_loss, 100 * e->train_accuracy, e->test_loss, 100 * e->test_accuracy,
                e->seconds, e->samples_per_s, e->batches_per_s, e->io_samples_per_s);
    }
}

const char *train_stop_name(int32_t stop)
{
    switch (stop) {
    case D5_TRAIN_TARGET: return "target accuracy reached";
    case D5_TRAIN_TIME: return "time budget spent";
    case D5_TRAIN_BATCHES: return "max batches reached";
    default: return "all epochs ran";
    }
}

/* The statistics of the trainer's regions, in nanoseconds. */
json_t *train_regions_json(d5_timer *t)
{
    static const char *const keys[] = {"EPOCH", "BATCH", "IO", "FORWARD", "BACKWARD", "OPTIMIZER"};
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        d5_stats st;
        if (d5_timer_stats(t, keys[i], D5_TIMER_CPU, &st) != D5_OK) continue;
        json_object_set_new(o, keys[i],
                            json_pack("{s:I, s:f, s:f, s:f, s:f}", "n", (json_int_t)st.n,
                                      "median_ns", st.median, "ci_low_ns", st.ci_low, "ci_high_ns",
                                      st.ci_high, "mean_ns", st.mean));
    }
    return o;
}

/* A figure that may not exist (no test set, target not reached): null in JSON. */
static json_t *number_or_null(double x)
{
    return isnan(x) ? json_null() : json_real(x);
}

/* The document of --json and train.json (its context block is added as it
 * is written, cli_json_write): config, regions, epochs, the loss and learning
 * rate of every step, the stop; `config`, `regions` and `dist` are taken. */
json_t *train_doc(const d5_train_result *r, json_t *config, json_t *regions, json_t *dist)
{
    json_t *epochs = json_array(), *losses = json_array(), *lrs = json_array(),
           *step_s = json_array();
    for (int32_t i = 0; i < r->nepochs; i++) {
        const d5_epoch_stats *e = &r->epochs[i];
        json_array_append_new(
            epochs,
            json_pack("{s:i, s:I, s:I, s:f, s:f, s:o, s:o, s:f, s:f, s:f, s:f}", "epoch", e->epoch,
                      "batches", (json_int_t)e->batches, "samples", (json_int_t)e->samples,
                      "train_loss", e->train_loss, "train_accuracy", e->train_accuracy, "test_loss",
                      number_or_null(e->test_loss), "test_accuracy",
                      number_or_null(e->test_accuracy), "seconds", e->seconds, "samples_per_second",
                      e->samples_per_s, "batches_per_second", e->batches_per_s,
                      "loader_samples_per_second", e->io_samples_per_s));
    }
    for (int64_t i = 0; i < r->nlosses; i++) {
        json_array_append_new(losses, json_real(r->losses[i]));
        json_array_append_new(lrs, r->lrs ? json_real(r->lrs[i]) : json_null());
        json_array_append_new(step_s,
                              r->step_seconds ? json_real(r->step_seconds[i]) : json_null());
    }
    d5_build_info bi;
    d5_build_info_get(&bi);
    json_t *root =
        json_pack("{s:{s:s, s:s, s:s}, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s}", "context",
                  "d5_version", bi.version, "git_commit", bi.git_commit, "compiler", bi.compiler,
                  "config", config, "regions", regions, "epochs", epochs, "losses", losses, "lrs",
                  lrs, "step_seconds", step_s, "time_to_accuracy_s",
                  number_or_null(r->time_to_accuracy_s >= 0 ? r->time_to_accuracy_s : NAN),
                  "final_test_accuracy", number_or_null(r->final_test_accuracy), "stop",
                  train_stop_name(r->stop));
    /* The lines of the report that are not figures above. */
    if (root)
        json_object_set_new(root, "batchnorm",
                            json_pack("{s:i, s:i}", "trained_with_batch_statistics",
                                      (int)r->batchnorm_training, "kept_in_inference_form",
                                      (int)r->batchnorm_frozen));
    if (root)
        json_object_set_new(root, "threads",
                            json_pack("{s:i, s:i, s:s}", "min", (int)r->threads_min, "max",
                                      (int)r->threads_max, "cores", r->contention.reason));
    if (root && dist)
        json_object_set_new(root, "distributed", dist);
    else
        json_decref(dist);
    return root;
}

/* "dnnl 7 nodes, ref 4 nodes": the backends that ran the training graph. */
void train_print_backends(FILE *f, const d5_train_result *r)
{
    if (r->nbackends == 0) fprintf(f, "none");
    for (int32_t k = 0; k < r->nbackends; k++)
        fprintf(f, "%s%s %d node%s", k ? ", " : "", r->backends[k].backend,
                (int)r->backends[k].nodes, r->backends[k].nodes == 1 ? "" : "s");
}

/* {"dnnl": 7, "ref": 4}: the same for the JSON file. */
json_t *train_backends_json(const d5_train_result *r)
{
    json_t *o = json_object();
    for (int32_t k = 0; o && k < r->nbackends; k++)
        json_object_set_new(o, r->backends[k].backend, json_integer(r->backends[k].nodes));
    return o;
}

d5_status train_print_report(FILE *f, const train_report *rp)
{
    const d5_train_result *res = rp->res;
    print_epochs(f, res);
    fprintf(f, "\nstop: %s; final test accuracy %.2f%%", train_stop_name(res->stop),
            100 * res->final_test_accuracy);
    if (rp->target > 0) {
        if (res->time_to_accuracy_s >= 0)
            fprintf(f, "; time to %.2f%%: %.2f s", 100 * rp->target, res->time_to_accuracy_s);
        else
            fprintf(f, "; %.2f%% not reached", 100 * rp->target);
    }
    fprintf(f, "\nbackends: ");
    train_print_backends(f, res);
    fprintf(f, " (requested %s)", rp->backend);
    if (res->batchnorm_training > 0)
        fprintf(f,
                "\nBatchNormalization: %d node%s trained with batch statistics, running "
                "statistics used for evaluation",
                (int)res->batchnorm_training, res->batchnorm_training == 1 ? "" : "s");
    if (res->batchnorm_frozen > 0)
        fprintf(f,
                "\nnote: %d BatchNormalization node%s kept in inference form (the model "
                "declares ai.onnx opset < 14, which has no training_mode; re-export it with "
                "opset >= 14 to train with batch statistics)",
                (int)res->batchnorm_frozen, res->batchnorm_frozen == 1 ? "" : "s");
    fprintf(f, "\nthreads: %d", (int)res->threads_max);
    if (res->threads_min != res->threads_max)
        fprintf(f, " to %d (automatic: fewer while other processes occupied cores)",
                (int)res->threads_min);
    fprintf(f, "; cores: %s", res->contention.reason);
    fprintf(f, "\n");
    train_precision_print(f, rp->prec, res);
    if (rp->jb->comm) job_report(rp->jb, f, rp->sampler, rp->batch, rp->local_batch);
    d5_status s = train_reports_print(f, rp->reports);
    fprintf(f, "\nregions\n");
    if (s == D5_OK) s = d5_report_table(f, rp->timer);
    return s;
}

d5_status train_summary(const cli_spec *spec, const char *header, const train_report *rp,
                        char **text, size_t *len)
{
    FILE *f = open_memstream(text, len);
    if (!f) return d5_error(D5_ERR_NOMEM, "out of memory for summary.txt");
    cli_echo(f, spec);
    fputs(header, f);
    d5_status s = train_print_report(f, rp);
    train_precision_print_baseline(f, rp->prec, rp->res);
    if (fclose(f) != 0 && s == D5_OK) s = d5_error(D5_ERR_NOMEM, "out of memory for summary.txt");
    return s;
}
