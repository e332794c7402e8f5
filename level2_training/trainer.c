/* The trainer: epochs of sampler -> executor (forward, loss, backward) ->
 * optimizer, timed by region, with periodic evaluation, early stops, numeric
 * checks, a progress line and a checkpoint. */
#define _POSIX_C_SOURCE 200809L
#include "d5/datasets.h"
#include "d5/executor.h"
#include "d5/onnx.h"
#include "d5/training.h"

#include "bn_train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LABELS "__d5_labels"
#define LOSS   "__d5_loss"

d5_trainer_params d5_trainer_default_params(void)
{
    d5_trainer_params p;
    memset(&p, 0, sizeof p);
    p.epochs = 1;
    p.check_numerics = 1;
    return p;
}

void d5_train_result_free(d5_train_result *r)
{
    if (!r) return;
    d5_free(r->epochs);
    d5_free(r->losses);
    d5_free(r->snapshots);
    r->epochs = NULL;
    r->losses = NULL;
    r->snapshots = NULL;
    r->nsnapshots = 0;
    r->nepochs = 0;
    r->nlosses = 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Everything one training run holds. */
typedef struct run {
    const d5_trainer_params *p;
    d5_network *net;  /* the caller's: its weights are trained in place */
    d5_network *tnet; /* the copy with the loss */
    d5_executor *ex;
    d5_executor *eval; /* see infer() */
    d5__bn_train bn;
    d5_optimizer *opt;
    d5_timer *timer;
    const char *input, *logits;
    d5_tensor_desc xdesc, ldesc;
    int64_t batch, classes, sample;
    float *x;
    int64_t *labels;
    float **grads;
    float **params;
    int64_t *sizes;
    const char **names;
    int32_t nparams;
    int in_backward;
    int training; /* 1 during a training step: evaluation runs are not timed */
} run;

/* FORWARD and BACKWARD regions from the executor's events. */
static d5_status on_event(void *user, const d5_event_info *e)
{
    run *r = user;
    if (!r->training) return D5_OK;
    switch (e->event) {
    case D5_EVENT_BEFORE_EXECUTOR: return d5_timer_start(r->timer, D5_KEY_FORWARD);
    case D5_EVENT_AFTER_INFERENCE: {
        d5_status s = d5_timer_end(r->timer, D5_KEY_FORWARD);
        if (s == D5_OK && !r->in_backward) {
            r->in_backward = 1;
            s = d5_timer_start(r->timer, D5_KEY_BACKWARD);
        }
        return s;
    }
    case D5_EVENT_AFTER_EXECUTOR:
        if (!r->in_backward) return D5_OK;
        r->in_backward = 0;
        return d5_timer_end(r->timer, D5_KEY_BACKWARD);
    default: return D5_OK;
    }
}

static d5_status timer_mark(d5_timer *t, const char *key, int start)
{
    if (!t) return D5_OK;
    return start ? d5_timer_start(t, key) : d5_timer_end(t, key);
}

/* The training graph: the network, a labels input and the loss. */
static d5_status build(run *r, const d5_network *net, const d5_dataset *train)
{
    if (d5_network_input_count(net) != 1 || d5_network_output_count(net) < 1)
        return d5_error(D5_ERR_INVALID,
                        "d5_train: the network needs one input and an output of logits; it has "
                        "%d inputs and %d outputs",
                        (int)d5_network_input_count(net), (int)d5_network_output_count(net));
    d5_status s = d5_network_clone(net, &r->tnet);
    if (s == D5_OK) s = d5__bn_train_prepare(r->tnet, r->net, &r->bn);
    if (s != D5_OK) return s;
    r->input = d5_network_input_name(r->tnet, 0);
    r->logits = d5_network_output_name(r->tnet, 0);
    if ((s = d5_network_infer_shapes(r->tnet)) != D5_OK) return s;
    int32_t v;
    d5_value_info in, out;
    if ((s = d5_network_find_value(r->tnet, r->input, &v)) != D5_OK) return s;
    d5_network_value_at(r->tnet, v, &in);
    if ((s = d5_network_find_value(r->tnet, r->logits, &v)) != D5_OK) return s;
    d5_network_value_at(r->tnet, v, &out);
    r->xdesc = in.desc;
    r->batch = in.desc.ndim > 0 ? in.desc.shape[0] : 0;
    r->sample = r->batch > 0 ? d5_tensor_desc_numel(&in.desc) / r->batch : 0;
    const d5_tensor_desc *sd = d5_dataset_sample_desc(train);
    if (in.desc.dtype != D5_F32 || r->batch < 1 || r->sample != d5_tensor_desc_numel(sd)) {
        char a[128], b[128];
        d5_tensor_desc_format(&in.desc, a, sizeof a);
        d5_tensor_desc_format(sd, b, sizeof b);
        return d5_error(D5_ERR_SHAPE,
                        "d5_train: the network's input '%s' is %s; the dataset '%s' has samples "
                        "%s (the input must be float32 [batch, sample...] with the same number "
                        "of elements per sample)",
                        r->input, a, d5_dataset_name(train), b);
    }
    r->classes = out.desc.ndim == 2 ? out.desc.shape[1] : 0;
    if (r->classes < d5_dataset_classes(train))
        return d5_error(D5_ERR_SHAPE,
                        "d5_train: the output '%s' must be logits [%lld, classes >= %lld]",
                        r->logits, (long long)r->batch, (long long)d5_dataset_classes(train));
    if ((s = d5_tensor_desc_make(D5_I64, 1, &r->batch, &r->ldesc)) != D5_OK) return s;
    if ((s = d5_network_add_input(r->tnet, LABELS, &r->ldesc, NULL)) != D5_OK) return s;
    const char *li[] = {r->logits, LABELS}, *lo[] = {LOSS};
    s = d5_network_add_node(r->tnet, "__d5_loss", "SoftmaxCrossEntropyLoss", NULL, li, 2, lo, 1,
                            NULL, NULL);
    if (s == D5_OK) s = d5_network_add_output(r->tnet, LOSS, NULL);
    return s;
}

static d5_status setup(run *r, const d5_trainer_params *p)
{
    d5_executor_options o = d5_executor_default_options();
    o.backend = p->backend;
    o.backprop = 1;
    o.loss = LOSS;
    d5_status s = d5_executor_create(r->tnet, &o, &r->ex);
    if (s == D5_OK && r->timer) s = d5_executor_add_handler(r->ex, on_event, r);
    if (s == D5_OK) s = d5__bn_train_bind(&r->bn, r->ex);
    if (s != D5_OK) return s;
    if (d5_optimizer_param_count(r->opt) != 0)
        return d5_error(D5_ERR_STATE, "d5_train: the optimizer already has parameters; give it "
                                      "a fresh one");
    r->nparams = d5_network_param_count(r->tnet);
    r->grads = d5_calloc((size_t)r->nparams + 1, sizeof *r->grads, "gradients");
    r->names = d5_calloc((size_t)r->nparams + 1, sizeof *r->names, "gradients");
    r->params = d5_calloc((size_t)r->nparams + 1, sizeof *r->params, "parameters");
    r->sizes = d5_calloc((size_t)r->nparams + 1, sizeof *r->sizes, "parameters");
    r->x = d5_alloc((size_t)(r->batch * r->sample) * sizeof *r->x, "training batch");
    r->labels = d5_calloc((size_t)r->batch, sizeof *r->labels, "training labels");
    if (!r->grads || !r->names || !r->params || !r->sizes || !r->x || !r->labels)
        return D5_ERR_NOMEM;
    for (int32_t i = 0; i < r->nparams && s == D5_OK; i++) {
        /* The executor reads, and the optimizer updates, the caller's weights. */
        const char *name = d5_network_param_name(r->tnet, i);
        float *data = d5_network_initializer_data(r->net, name);
        int32_t v;
        d5_value_info info;
        d5_tensor g;
        s = d5_network_find_value(r->tnet, name, &v);
        if (s != D5_OK) break;
        d5_network_value_at(r->tnet, v, &info);
        if (info.desc.dtype != D5_F32)
            return d5_error(D5_ERR_UNSUPPORTED, "d5_train: parameter '%s' is %s; float32 only",
                            name, d5_dtype_name((d5_dtype)info.desc.dtype));
        if (!data)
            return d5_error(D5_ERR_STATE, "d5_train: parameter '%s' is not in the network", name);
        s = d5_executor_bind_param(r->ex, name, data);
        if (s == D5_OK)
            s = d5_optimizer_add_param(r->opt, name, data, d5_tensor_desc_numel(&info.desc), NULL);
        if (s == D5_OK) s = d5_executor_gradient(r->ex, name, &g);
        r->grads[i] = g.data;
        r->names[i] = name;
        r->params[i] = data;
        r->sizes[i] = d5_tensor_desc_numel(&info.desc);
    }
    return s;
}

static d5_status feed(run *r)
{
    d5_tensor x = {r->xdesc, r->x, D5_DEVICE_CPU, 0}, l = {r->ldesc, r->labels, D5_DEVICE_CPU, 0};
    d5_status s = d5_executor_feed(r->ex, r->input, &x);
    return s == D5_OK ? d5_executor_feed(r->ex, LABELS, &l) : s;
}

/* Correct predictions and summed loss of the first n rows of the logits. */
static void score(const run *r, const float *logits, int64_t n, int64_t *correct, double *loss)
{
    for (int64_t i = 0; i < n; i++) {
        const float *z = logits + i * r->classes;
        int64_t best = 0;
        double mx = z[0], sum = 0;
        for (int64_t c = 1; c < r->classes; c++)
            if (z[c] > z[best]) best = c;
        mx = z[best];
        for (int64_t c = 0; c < r->classes; c++) sum += exp((double)z[c] - mx);
        *loss += log(sum) + mx - (double)z[r->labels[i]];
        *correct += best == r->labels[i];
    }
}

/* One test batch through the training graph, or, when the network has
 * BatchNormalization trained with batch statistics, through the caller's
 * network in inference mode: it normalizes with the running statistics and
 * reads the weights the optimizer updates in place (created at the first
 * evaluation). */
static d5_status infer(run *r, d5_tensor *logits)
{
    if (r->bn.count > 0 && !r->eval) {
        d5_executor_options e = d5_executor_default_options();
        e.backend = r->p->backend;
        e.variable_params = 1;
        d5_status s = d5_executor_create(r->net, &e, &r->eval);
        if (s != D5_OK) return s;
    }
    d5_executor *ex = r->eval ? r->eval : r->ex;
    d5_tensor x = {r->xdesc, r->x, D5_DEVICE_CPU, 0};
    d5_status s = r->eval ? d5_executor_feed(ex, r->input, &x) : feed(r);
    if (s == D5_OK) s = d5_executor_inference(ex);
    return s == D5_OK ? d5_executor_fetch(ex, r->logits, logits) : s;
}

static d5_status evaluate(run *r, const d5_dataset *test, double *loss, double *accuracy)
{
    d5_sampler_params sp = d5_sampler_default_params();
    sp.kind = D5_SAMPLER_ORDERED;
    sp.batch = r->batch;
    d5_sampler *smp = NULL;
    d5_status s = d5_sampler_create(test, &sp, &smp);
    int64_t n = 0, total = 0, correct = 0;
    double sum = 0;
    while (s == D5_OK) {
        s = d5_sampler_next(smp, r->x, r->labels, &n);
        if (s != D5_OK || n == 0) break;
        if (n < r->batch) { /* a partial last batch: pad, and score the real rows only */
            memset(r->x + n * r->sample, 0, (size_t)((r->batch - n) * r->sample) * sizeof *r->x);
            memset(r->labels + n, 0, (size_t)(r->batch - n) * sizeof *r->labels);
        }
        d5_tensor logits;
        s = infer(r, &logits);
        if (s == D5_OK) score(r, logits.data, n, &correct, &sum);
        total += n;
    }
    d5_sampler_free(smp);
    *loss = total ? sum / (double)total : NAN;
    *accuracy = total ? (double)correct / (double)total : NAN;
    return s;
}

static d5_status check_numerics(const run *r, int64_t step, double loss)
{
    if (!isfinite(loss))
        return d5_error(D5_ERR_NUMERIC, "d5_train: step %lld: the loss is %g", (long long)step,
                        loss);
    for (int32_t i = 0; i < r->nparams; i++) {
        int64_t n = r->sizes[i];
        for (int64_t k = 0; k < n; k++)
            if (!isfinite(r->grads[i][k]))
                return d5_error(D5_ERR_NUMERIC,
                                "d5_train: step %lld: the gradient of '%s' has %g at element %lld",
                                (long long)step, r->names[i], (double)r->grads[i][k], (long long)k);
    }
    return D5_OK;
}

/* Appends a copy of every parameter to the result's snapshots. */
static d5_status snapshot(const run *r, d5_train_result *out, int64_t *cap)
{
    int64_t total = 0;
    for (int32_t i = 0; i < r->nparams; i++) total += r->sizes[i];
    out->param_elements = total;
    if (out->nsnapshots == *cap) {
        int64_t next = *cap ? *cap * 2 : 16;
        float *p = d5_realloc(out->snapshots, (size_t)(*cap * total) * sizeof *p,
                              (size_t)(next * total) * sizeof *p, "parameter snapshots");
        if (!p) return D5_ERR_NOMEM;
        out->snapshots = p;
        *cap = next;
    }
    float *dst = out->snapshots + out->nsnapshots * total;
    for (int32_t i = 0; i < r->nparams; i++) {
        memcpy(dst, r->params[i], (size_t)r->sizes[i] * sizeof *dst);
        dst += r->sizes[i];
    }
    out->nsnapshots++;
    return D5_OK;
}

static void progress(const run *r, int32_t epoch, int32_t epochs, int64_t b, int64_t nb,
                     double loss, double acc, double rate)
{
    char bar[21];
    int fill = nb > 0 ? (int)(20 * b / nb) : 0;
    for (int i = 0; i < 20; i++) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[20] = 0;
    double eta = rate > 0 ? (double)(nb - b) * (double)r->batch / rate : 0;
    fprintf(stderr, "\repoch %d/%d [%s] %lld/%lld loss %.4f acc %5.1f%% %.0f samples/s ETA %.0fs ",
            (int)epoch, (int)epochs, bar, (long long)b, (long long)nb, loss, 100 * acc, rate, eta);
}

/* Appends to a growing array of n items. */
static d5_status push(void **arr, int64_t *cap, int64_t n, size_t size)
{
    if (n < *cap) return D5_OK;
    int64_t next = *cap ? *cap * 2 : 256;
    void *p = d5_realloc(*arr, (size_t)*cap * size, (size_t)next * size, "training history");
    if (!p) return D5_ERR_NOMEM;
    *arr = p;
    *cap = next;
    return D5_OK;
}

static d5_status train_loop(run *r, const d5_dataset *train, const d5_dataset *test, uint64_t seed,
                            d5_train_result *out)
{
    const d5_trainer_params *p = r->p;
    d5_sampler_params sp = d5_sampler_default_params();
    sp.kind = D5_SAMPLER_SHUFFLED;
    sp.batch = r->batch;
    sp.seed = seed;
    sp.drop_last = 1;
    d5_sampler *smp = NULL;
    d5_status s = d5_sampler_create(train, &sp, &smp);
    if (s != D5_OK) return s;
    if (r->timer) d5_sampler_attach_timer(smp, r->timer);
    int64_t loss_cap = 0, epoch_cap = 0, snap_cap = 0, step = 0;
    double trained = 0, base_lr = d5_optimizer_get_params(r->opt)->lr;
    int tty = p->progress && isatty(2);
    out->time_to_accuracy_s = -1;
    out->stop = D5_TRAIN_DONE;
    d5_load_sample load0;
    d5_load_sample_take(&load0);
    out->threads_min = out->threads_max = d5_threads_team();
    for (int32_t e = 1; s == D5_OK && e <= p->epochs && out->stop == D5_TRAIN_DONE; e++) {
        d5_epoch_stats st;
        memset(&st, 0, sizeof st);
        st.epoch = e;
        double t0 = now_s(), io = 0, eval_time = 0, loss_sum = 0, last_print = 0;
        int64_t correct = 0, nb = d5_sampler_batches(smp);
        d5_sampler_reset(smp);
        s = timer_mark(r->timer, D5_KEY_EPOCH, 1);
        while (s == D5_OK) {
            if (p->max_batches > 0 && step >= p->max_batches) {
                out->stop = D5_TRAIN_BATCHES;
                break;
            }
            int64_t n = 0;
            double t_io = now_s();
            s = d5_sampler_next(smp, r->x, r->labels, &n);
            io += now_s() - t_io;
            if (s != D5_OK || n == 0) break;
            if ((s = timer_mark(r->timer, D5_KEY_BATCH, 1)) != D5_OK) break;
            d5_optimizer_set_lr(r->opt, d5_schedule_lr(&p->schedule, base_lr, step));
            s = d5_optimizer_prepare(r->opt);
            if (s == D5_OK) s = feed(r);
            r->training = 1;
            if (s == D5_OK) s = d5_executor_inference_and_backprop(r->ex);
            r->training = 0;
            if (s == D5_OK) s = d5__bn_train_update(&r->bn, r->ex);
            d5_tensor loss, logits;
            if (s == D5_OK) s = d5_executor_fetch(r->ex, LOSS, &loss);
            if (s == D5_OK) s = d5_executor_fetch(r->ex, r->logits, &logits);
            double l = s == D5_OK ? ((float *)loss.data)[0] : 0, ignored = 0;
            if (s == D5_OK) score(r, logits.data, n, &correct, &ignored);
            step++;
            if (s == D5_OK && p->check_numerics) s = check_numerics(r, step, l);
            if (s == D5_OK) s = timer_mark(r->timer, "OPTIMIZER", 1);
            if (s == D5_OK) s = d5_optimizer_update_all(r->opt, (const float *const *)r->grads);
            if (s == D5_OK) s = timer_mark(r->timer, "OPTIMIZER", 0);
            if (s == D5_OK) s = timer_mark(r->timer, D5_KEY_BATCH, 0);
            int32_t team = d5_threads_adapt();
            out->threads_min = team < out->threads_min ? team : out->threads_min;
            out->threads_max = team > out->threads_max ? team : out->threads_max;
            if (s == D5_OK) s = push((void **)&out->losses, &loss_cap, out->nlosses, sizeof(float));
            if (s != D5_OK) break;
            out->losses[out->nlosses++] = (float)l;
            if (p->snapshot_every > 0 && step % p->snapshot_every == 0 &&
                (s = snapshot(r, out, &snap_cap)) != D5_OK)
                break;
            loss_sum += l;
            st.batches++;
            st.samples += n;
            double elapsed = now_s() - t0 - eval_time;
            if (tty && now_s() - last_print > 0.2) {
                last_print = now_s();
                progress(r, e, p->epochs, st.batches, nb, l, (double)correct / (double)st.samples,
                         (double)st.samples / elapsed);
            }
            if (p->eval_every > 0 && test && step % p->eval_every == 0) {
                double te = now_s(), tl, ta;
                s = evaluate(r, test, &tl, &ta);
                eval_time += now_s() - te;
                if (s == D5_OK && p->target_accuracy > 0 && ta >= p->target_accuracy) {
                    out->time_to_accuracy_s = trained + now_s() - t0 - eval_time;
                    out->stop = D5_TRAIN_TARGET;
                    break;
                }
            }
            if (p->time_budget_s > 0 && trained + elapsed >= p->time_budget_s) {
                out->stop = D5_TRAIN_TIME;
                break;
            }
        }
        if (s == D5_OK) s = timer_mark(r->timer, D5_KEY_EPOCH, 0);
        if (s != D5_OK) break;
        st.seconds = now_s() - t0 - eval_time;
        trained += st.seconds;
        if (tty) fprintf(stderr, "\r%*s\r", 110, "");
        st.train_loss = st.batches ? loss_sum / (double)st.batches : NAN;
        st.train_accuracy = st.samples ? (double)correct / (double)st.samples : NAN;
        st.samples_per_s = st.seconds > 0 ? (double)st.samples / st.seconds : 0;
        st.batches_per_s = st.seconds > 0 ? (double)st.batches / st.seconds : 0;
        st.io_samples_per_s = io > 0 ? (double)st.samples / io : 0;
        st.test_loss = st.test_accuracy = NAN;
        if (test && (s = evaluate(r, test, &st.test_loss, &st.test_accuracy)) != D5_OK) break;
        if (test && p->target_accuracy > 0 && st.test_accuracy >= p->target_accuracy &&
            out->time_to_accuracy_s < 0) {
            out->time_to_accuracy_s = trained;
            out->stop = D5_TRAIN_TARGET;
        }
        if ((s = push((void **)&out->epochs, &epoch_cap, out->nepochs, sizeof st)) != D5_OK) break;
        out->epochs[out->nepochs++] = st;
        out->final_test_accuracy = st.test_accuracy;
    }
    d5_load_sample load1;
    d5_load_sample_take(&load1);
    d5_contention_between(&load0, &load1, out->threads_max, &out->contention);
    d5_sampler_free(smp);
    return s;
}

d5_status d5_train(d5_network *net, const d5_dataset *train, const d5_dataset *test,
                   d5_optimizer *opt, const d5_trainer_params *params, uint64_t seed,
                   d5_timer *timer, d5_train_result *out)
{
    if (!net || !train || !opt || !out)
        return d5_error(D5_ERR_INVALID, "d5_train: network, dataset, optimizer and result are "
                                        "required");
    d5_trainer_params p = params ? *params : d5_trainer_default_params();
    if (p.epochs < 1) return d5_error(D5_ERR_INVALID, "d5_train: %d epochs", (int)p.epochs);
    memset(out, 0, sizeof *out);
    run r;
    memset(&r, 0, sizeof r);
    r.p = &p;
    r.opt = opt;
    r.timer = timer;
    r.net = net;
    d5_status s = build(&r, net, train);
    out->batchnorm_training = r.bn.count;
    out->batchnorm_frozen = r.bn.frozen;
    if (s == D5_OK) s = setup(&r, &p);
    if (s == D5_OK) {
        int32_t n = d5_executor_backend_nodes(r.ex, out->backends, D5_TRAIN_MAX_BACKENDS);
        out->nbackends = n < D5_TRAIN_MAX_BACKENDS ? n : D5_TRAIN_MAX_BACKENDS;
    }
    if (s == D5_OK) s = train_loop(&r, train, test, seed, out);
    if (s == D5_OK && p.checkpoint) s = d5_onnx_save(net, p.checkpoint);
    d5_executor_free(r.ex);
    d5_executor_free(r.eval);
    d5__bn_train_free(&r.bn);
    d5_network_free(r.tnet);
    d5_free(r.grads);
    d5_free(r.names);
    d5_free(r.params);
    d5_free(r.sizes);
    d5_free(r.x);
    d5_free(r.labels);
    if (s != D5_OK) d5_train_result_free(out);
    return s;
}
