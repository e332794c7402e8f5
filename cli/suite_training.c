/* The training part of `d5 bench`: a fraction of an epoch of LeNet-5 on MNIST
 * (synthetic data of MNIST's shape when MNIST is not installed), with the
 * speed report: batches/s, samples/s and the dataloader's samples/s. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* A benchmark from the samples of one timer key. */
static d5_status add_key(d5_results *r, d5_timer *t, const char *key, const char *name,
                         size_t *index)
{
    d5_timer_id id;
    d5_timer_series series;
    d5_status s = d5_timer_key(t, key, &id);
    if (s == D5_OK) s = d5_timer_series_get(t, id, D5_TIMER_CPU, &series);
    if (s != D5_OK) return s;
    d5_measurement m;
    memset(&m, 0, sizeof m);
    m.samples = (double *)series.duration_ns;
    m.n = series.n;
    m.stop = D5_STOP_MAX_REPS;
    if ((s = d5_stats_compute(m.samples, m.n, &m.stats)) != D5_OK) return s;
    return d5_results_add(r, name, &m, "ns", index);
}

d5_status d5_suite_training(d5_results *r, int64_t batches)
{
    d5_model_params mp = d5_model_default_params();
    mp.batch = 64;
    mp.seed = 1;
    char dir[4096];
    d5_dataset_default_dir("mnist", dir, sizeof dir);
    d5_network *net = NULL;
    d5_dataset *train = NULL;
    d5_optimizer *opt = NULL;
    d5_timer *timer = NULL;
    d5_train_result res;
    memset(&res, 0, sizeof res);
    d5_status s = d5_model_build("lenet", &mp, &net);
    const char *data = "mnist";
    if (s == D5_OK && d5_dataset_open_mnist(dir, 1, &train) != D5_OK) {
        d5_tensor_desc sample;
        data = "synthetic";
        s = d5_tensor_desc_make(D5_F32, 3, (int64_t[]){1, 28, 28}, &sample);
        if (s == D5_OK) s = d5_dataset_synthetic(&sample, 64 * batches, 10, 1, &train);
    }
    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = 0.05;
    if (s == D5_OK) s = d5_optimizer_create("momentum", &op, &opt);
    if (s == D5_OK) s = d5_timer_create(NULL, &timer);
    d5_trainer_params tp = d5_trainer_default_params();
    tp.max_batches = batches;
    if (s == D5_OK) s = d5_train(net, train, NULL, opt, &tp, 1, timer, &res);
    char name[128];
    size_t idx;
    snprintf(name, sizeof name, "training/lenet/%s/batch64/step", data);
    if (s == D5_OK) s = add_key(r, timer, D5_KEY_BATCH, name, &idx);
    if (s == D5_OK && res.nepochs > 0) {
        const d5_epoch_stats *e = &res.epochs[0];
        s = d5_results_counter(r, idx, "batches_per_second", e->batches_per_s, "1/s");
        if (s == D5_OK)
            s = d5_results_counter(r, idx, "samples_per_second", e->samples_per_s, "1/s");
        if (s == D5_OK)
            s = d5_results_counter(r, idx, "loader_samples_per_second", e->io_samples_per_s, "1/s");
        if (s == D5_OK)
            s = d5_results_counter(r, idx, "train_accuracy", e->train_accuracy, "ratio");
    }
    const char *keys[] = {D5_KEY_FORWARD, D5_KEY_BACKWARD, "OPTIMIZER", D5_KEY_IO};
    for (size_t k = 0; s == D5_OK && k < sizeof keys / sizeof keys[0]; k++) {
        snprintf(name, sizeof name, "training/lenet/%s/batch64/%s", data, keys[k]);
        s = add_key(r, timer, keys[k], name, NULL);
    }
    d5_train_result_free(&res);
    d5_timer_free(timer);
    d5_optimizer_free(opt);
    d5_dataset_free(train);
    d5_network_free(net);
    return s;
}
