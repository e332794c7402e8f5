/* The trainer's run: epochs of sampler -> executor (forward, loss, backward)
 * -> hooks -> optimizer, timed by region, with periodic evaluation, early
 * stops, numeric checks, a progress line and a checkpoint. */
#define _POSIX_C_SOURCE 200809L
#include "d5/onnx.h"

#include "trainer_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static double now_s(void)
{
    return (double)d5_monotonic_ns() * 1e-9;
}

static d5_status timer_mark(d5_timer *timer, const char *key, int start)
{
    if (!timer) return D5_OK;
    return start ? d5_timer_start(timer, key) : d5_timer_end(timer, key);
}

/* Correct predictions and summed loss of the first n rows of the logits. */
static void score(const d5_trainer *t, const float *logits, int64_t n, int64_t *correct,
                  double *loss)
{
    /* Rows of logits: one per sample, or one per position of a language
     * model, whose last position has no label. */
    const int64_t per = t->lm ? t->lm : 1;
    for (int64_t i = 0; i < n * per; i++) {
        if (t->labels[i] == D5__TRAINER_NO_LABEL && t->lm) continue;
        const float *z = logits + i * t->classes;
        int64_t best = 0;
        double mx = z[0], sum = 0;
        for (int64_t c = 1; c < t->classes; c++)
            if (z[c] > z[best]) best = c;
        mx = z[best];
        for (int64_t c = 0; c < t->classes; c++) sum += exp((double)z[c] - mx);
        *loss += log(sum) + mx - (double)z[t->labels[i]];
        *correct += best == t->labels[i];
    }
}

/* One test batch through the training graph, or, when the network has
 * BatchNormalization trained with batch statistics, through the caller's
 * network in inference mode: it normalizes with the running statistics and
 * reads the weights the optimizer updates in place (created at the first
 * evaluation). */
static d5_status infer(d5_trainer *t, d5_tensor *logits)
{
    if (t->bn.count > 0 && !t->eval) {
        d5_executor_options e = d5_executor_default_options();
        e.backend = t->p.backend;
        e.variable_params = 1;
        e.compute_precision = t->p.precision;
        d5_status s = d5_executor_create(t->net, &e, &t->eval);
        if (s != D5_OK) return s;
    }
    d5_executor *ex = t->eval ? t->eval : t->ex;
    d5_status s = D5_OK;
    if (t->eval) {
        d5_tensor x = d5__trainer_input(t);
        s = d5_executor_feed(ex, t->input, &x);
    } else {
        s = d5__trainer_feed(t);
    }
    if (s == D5_OK) s = d5_executor_inference(ex);
    return s == D5_OK ? d5_executor_fetch(ex, t->logits, logits) : s;
}

/* Every test sample in order, normalized as the training batches are (the
 * other augmentations are for training only). */
static d5_status evaluate(d5_trainer *t, const d5_dataset *test, double *loss, double *accuracy)
{
    d5_sampler_params sp = d5_sampler_default_params();
    sp.kind = D5_SAMPLER_ORDERED;
    sp.batch = t->batch;
    const d5_augment *train_aug = &d5_sampler_get_params(t->run_smp)->augment;
    if (train_aug->normalize) {
        sp.augment.normalize = 1;
        memcpy(sp.augment.mean, train_aug->mean, sizeof sp.augment.mean);
        memcpy(sp.augment.std, train_aug->std, sizeof sp.augment.std);
    }
    d5_sampler *smp = NULL;
    d5_status s = d5_sampler_create(test, &sp, &smp);
    int64_t n = 0, total = 0, correct = 0;
    double sum = 0;
    while (s == D5_OK) {
        s = d5_sampler_next(smp, t->x, t->labels, &n);
        if (s != D5_OK || n == 0) break;
        if (n < t->batch) { /* a partial last batch: pad, and score the real rows only */
            memset(t->x + n * t->sample, 0, (size_t)((t->batch - n) * t->sample) * sizeof *t->x);
            memset(t->labels + n, 0, (size_t)(t->batch - n) * sizeof *t->labels);
        }
        d5_tensor logits;
        s = infer(t, &logits);
        if (s == D5_OK) score(t, logits.data, n, &correct, &sum);
        total += n * D5__TRAINER_PER_SAMPLE(t);
    }
    d5_sampler_free(smp);
    *loss = total ? sum / (double)total : NAN;
    *accuracy = total ? (double)correct / (double)total : NAN;
    return s;
}

/* The loss, then (grads: 1) every gradient, must be finite; `why` ends the
 * message. */
static d5_status check_numerics(const d5_trainer *t, int64_t step, double loss, int grads,
                                const char *why)
{
    if (!isfinite(loss))
        return d5_error(D5_ERR_NUMERIC, "trainer: step %lld: the loss is %g", (long long)step,
                        loss);
    for (int32_t i = 0; grads && i < t->nparams; i++) {
        int64_t n = t->sizes[i];
        for (int64_t k = 0; k < n; k++)
            if (!isfinite(t->grads[i][k]))
                return d5_error(D5_ERR_NUMERIC,
                                "trainer: step %lld: the gradient of '%s' has %g at element "
                                "%lld%s",
                                (long long)step, t->names[i], (double)t->grads[i][k], (long long)k,
                                why);
    }
    return D5_OK;
}

/* Loss scaling after the after_backward hooks: divides the gradients by the
 * scale and moves it; *apply is 0 when a gradient overflowed and the step is
 * to be skipped. An overflow at the smallest scale is no overflow that
 * scaling can cure: with check_numerics it stops training. */
static d5_status unscale(d5_trainer *t, int64_t step, double loss, int *apply)
{
    *apply = 1;
    if (!t->scaling) return D5_OK;
    double was = t->ls.scale;
    int32_t finite = d5_loss_scale_unscale(&t->ls, t->grads, t->sizes, t->nparams);
    if (!finite && was <= t->ls.p.min && t->p.check_numerics) {
        char why[96];
        snprintf(why, sizeof why, " (after division by the loss scale %g, its minimum)", was);
        d5_status s = check_numerics(t, step, loss, 1, why);
        if (s != D5_OK) return s;
    }
    *apply = d5_loss_scale_update(&t->ls, finite);
    return D5_OK;
}

/* Appends a copy of every parameter to the result's snapshots. */
static d5_status snapshot(const d5_trainer *t, d5_train_result *out, int64_t *cap)
{
    int64_t total = 0;
    for (int32_t i = 0; i < t->nparams; i++) total += t->sizes[i];
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
    for (int32_t i = 0; i < t->nparams; i++) {
        memcpy(dst, t->params[i], (size_t)t->sizes[i] * sizeof *dst);
        dst += t->sizes[i];
    }
    out->nsnapshots++;
    return D5_OK;
}

static void progress(const d5_trainer *t, int32_t epoch, int32_t epochs, int64_t b, int64_t nb,
                     double loss, double acc, double rate)
{
    char bar[21];
    int fill = nb > 0 ? (int)(20 * b / nb) : 0;
    for (int i = 0; i < 20; i++) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[20] = 0;
    double eta = rate > 0 ? (double)(nb - b) * (double)t->batch / rate : 0;
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

/* One training step on the batch in t->x (n samples, a full batch): the
 * step of training.h, from the learning rate to the after_step hooks. *loss
 * receives the batch's loss; *correct counts the samples classified right. */
static d5_status step_body(d5_trainer *t, double base_lr, int64_t n, int64_t *correct, double *loss)
{
    const d5_trainer_params *p = &t->p;
    int64_t step = t->step + 1;
    d5_status s = timer_mark(t->timer, D5_KEY_BATCH, 1);
    if (s != D5_OK) return s;
    d5_optimizer_set_lr(t->opt, d5_schedule_lr(&p->schedule, base_lr, t->step));
    s = d5_optimizer_prepare(t->opt);
    if (s == D5_OK) s = d5__trainer_feed(t);
    t->training = 1;
    if (s == D5_OK) s = d5_executor_inference_and_backprop(t->ex);
    t->training = 0;
    if (s == D5_OK) s = d5__bn_train_update(&t->bn, t->ex);
    d5_tensor lt, logits;
    if (s == D5_OK) s = d5_executor_fetch(t->ex, D5__TRAINER_LOSS, &lt);
    if (s == D5_OK) s = d5_executor_fetch(t->ex, t->logits, &logits);
    if (s != D5_OK) return s;
    double l = ((const float *)lt.data)[0], ignored = 0;
    score(t, logits.data, n, correct, &ignored);
    *loss = l;
    s = d5__hooks_after_backward(t, step);
    int apply = 1;
    if (s == D5_OK && p->check_numerics) s = check_numerics(t, step, l, !t->scaling, "");
    if (s == D5_OK) s = unscale(t, step, l, &apply);
    if (s == D5_OK && !apply) { /* an overflow: no update in this step */
        s = d5_optimizer_skip(t->opt);
        if (s == D5_OK) s = d5__hooks_after_step(t, step, l);
        if (s == D5_OK) s = timer_mark(t->timer, D5_KEY_BATCH, 0);
        if (s == D5_OK) t->step = step;
        return s;
    }
    if (s == D5_OK) s = d5__hooks_before_update(t, step);
    if (s == D5_OK)
        s = d5__trainer_memory_section(t, D5_MEMORY_OPTIMIZER, d5_optimizer_name(t->opt));
    if (s == D5_OK) s = timer_mark(t->timer, "OPTIMIZER", 1);
    if (s == D5_OK) s = d5_optimizer_update_all(t->opt, (const float *const *)t->grads);
    if (s == D5_OK) s = timer_mark(t->timer, "OPTIMIZER", 0);
    if (s == D5_OK) s = d5__trainer_memory_section(t, D5_MEMORY_OTHER, NULL);
    if (s == D5_OK) s = d5__hooks_after_update(t, step);
    if (s == D5_OK) s = d5__hooks_after_step(t, step, l);
    if (s == D5_OK) s = timer_mark(t->timer, D5_KEY_BATCH, 0);
    if (s == D5_OK) t->step = step;
    return s;
}

/* step_body, with its memory recorded when it is the step asked for
 * (d5_trainer_record_memory). */
static d5_status step_once(d5_trainer *t, double base_lr, int64_t n, int64_t *correct, double *loss)
{
    if (t->mem_step != t->step + 1) return step_body(t, base_lr, n, correct, loss);
    d5_status s = d5__trainer_memory_begin(t);
    if (s == D5_OK) s = step_body(t, base_lr, n, correct, loss);
    d5_status e = d5__trainer_memory_end(t, s == D5_OK);
    return s == D5_OK ? e : s;
}

/* The epochs on the sampler smp. */
static d5_status train_loop(d5_trainer *t, d5_sampler *smp, const d5_dataset *test,
                            d5_train_result *out)
{
    const d5_trainer_params *p = &t->p;
    int64_t loss_cap = 0, epoch_cap = 0, snap_cap = 0;
    double trained = 0, base_lr = d5_optimizer_get_params(t->opt)->lr;
    int tty = p->progress && isatty(2);
    out->time_to_accuracy_s = -1;
    out->stop = D5_TRAIN_DONE;
    /* A run in which no step could happen is no training run. */
    if (d5_sampler_batches(smp) == 0)
        return d5_error(D5_ERR_INVALID,
                        "trainer: the training set of %lld samples holds no full batch of %lld "
                        "(the last partial batch is dropped): no step would run",
                        (long long)d5_dataset_size(d5_sampler_dataset(smp)), (long long)t->batch);
    d5_status s = d5__hooks_before_first_step(t);
    if (s != D5_OK) return s;
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
        s = timer_mark(t->timer, D5_KEY_EPOCH, 1);
        while (s == D5_OK) {
            if (p->max_batches > 0 && t->step >= p->max_batches) {
                out->stop = D5_TRAIN_BATCHES;
                break;
            }
            int64_t n = 0;
            double t_io = now_s(), l = 0;
            s = d5_sampler_next(smp, t->x, t->labels, &n);
            io += now_s() - t_io;
            /* The end of the epoch, or a last batch smaller than the network's. */
            if (s != D5_OK || n < t->batch) break;
            double t_step = now_s();
            s = step_once(t, base_lr, n, &correct, &l);
            t_step = now_s() - t_step;
            int32_t team = d5_threads_adapt();
            out->threads_min = team < out->threads_min ? team : out->threads_min;
            out->threads_max = team > out->threads_max ? team : out->threads_max;
            /* The three per-step arrays grow together (one capacity). */
            int64_t cap = loss_cap;
            if (s == D5_OK) s = push((void **)&out->losses, &cap, out->nlosses, sizeof(float));
            cap = loss_cap;
            if (s == D5_OK) s = push((void **)&out->lrs, &cap, out->nlosses, sizeof(double));
            cap = loss_cap;
            if (s == D5_OK)
                s = push((void **)&out->step_seconds, &cap, out->nlosses, sizeof(double));
            if (s != D5_OK) break;
            loss_cap = cap;
            out->lrs[out->nlosses] = d5_optimizer_get_params(t->opt)->lr;
            out->step_seconds[out->nlosses] = t_step;
            out->losses[out->nlosses++] = (float)l;
            if (p->snapshot_every > 0 && t->step % p->snapshot_every == 0 &&
                (s = snapshot(t, out, &snap_cap)) != D5_OK)
                break;
            loss_sum += l;
            st.batches++;
            st.samples += n;
            double elapsed = now_s() - t0 - eval_time;
            if (tty && now_s() - last_print > 0.2) {
                last_print = now_s();
                progress(t, e, p->epochs, st.batches, nb, l,
                         (double)correct / (double)(st.samples * D5__TRAINER_PER_SAMPLE(t)),
                         (double)st.samples / elapsed);
            }
            if (p->eval_every > 0 && test && t->step % p->eval_every == 0) {
                double te = now_s(), tl, ta;
                s = evaluate(t, test, &tl, &ta);
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
        if (s == D5_OK) s = timer_mark(t->timer, D5_KEY_EPOCH, 0);
        if (s != D5_OK) break;
        st.seconds = now_s() - t0 - eval_time;
        trained += st.seconds;
        if (tty) fprintf(stderr, "\r%*s\r", 110, "");
        st.train_loss = st.batches ? loss_sum / (double)st.batches : NAN;
        st.train_accuracy =
            st.samples ? (double)correct / (double)(st.samples * D5__TRAINER_PER_SAMPLE(t)) : NAN;
        st.samples_per_s = st.seconds > 0 ? (double)st.samples / st.seconds : 0;
        st.batches_per_s = st.seconds > 0 ? (double)st.batches / st.seconds : 0;
        st.io_samples_per_s = io > 0 ? (double)st.samples / io : 0;
        st.test_loss = st.test_accuracy = NAN;
        if (test && (s = evaluate(t, test, &st.test_loss, &st.test_accuracy)) != D5_OK) break;
        if (test && p->target_accuracy > 0 && st.test_accuracy >= p->target_accuracy &&
            out->time_to_accuracy_s < 0) {
            out->time_to_accuracy_s = trained;
            out->stop = D5_TRAIN_TARGET;
        }
        if ((s = push((void **)&out->epochs, &epoch_cap, out->nepochs, sizeof st)) != D5_OK) break;
        out->epochs[out->nepochs++] = st;
        out->final_test_accuracy = st.test_accuracy;
        s = d5__hooks_end_of_epoch(t, &st);
    }
    d5_load_sample load1;
    d5_load_sample_take(&load1);
    d5_contention_between(&load0, &load1, out->threads_max, &out->contention);
    return s;
}

/* Checks the arguments of a run and picks its sampler: the one set, or a
 * default one created into *owned. */
static d5_status pick_sampler(d5_trainer *t, const d5_dataset *train, uint64_t seed,
                              d5_sampler **smp, d5_sampler **owned)
{
    if (!t->opt)
        return d5_error(D5_ERR_STATE,
                        "d5_trainer_run: no optimizer; set one with d5_trainer_set_optimizer");
    if (t->smp) {
        if (train && train != d5_sampler_dataset(t->smp))
            return d5_error(D5_ERR_INVALID,
                            "d5_trainer_run: the training set '%s' is not the dataset of the "
                            "trainer's sampler ('%s'); pass NULL or the sampler's dataset",
                            d5_dataset_name(train), d5_dataset_name(d5_sampler_dataset(t->smp)));
        *smp = t->smp;
        return D5_OK;
    }
    if (!train)
        return d5_error(D5_ERR_INVALID,
                        "d5_trainer_run: no training set and no sampler; pass the dataset or "
                        "set a sampler with d5_trainer_set_sampler");
    d5_status s = d5__trainer_check_dataset(t, train, "d5_trainer_run");
    if (s != D5_OK) return s;
    d5_sampler_params sp = d5_sampler_default_params();
    sp.kind = D5_SAMPLER_SHUFFLED;
    sp.batch = t->batch;
    sp.seed = seed;
    sp.drop_last = 1;
    s = d5_sampler_create(train, &sp, owned);
    if (s == D5_OK) *smp = *owned;
    return s;
}

d5_status d5_trainer_run(d5_trainer *t, const d5_dataset *train, const d5_dataset *test,
                         uint64_t seed, d5_train_result *out)
{
    if (!t || !out) return d5_error(D5_ERR_INVALID, "d5_trainer_run: NULL argument");
    if (t->running)
        return d5_error(D5_ERR_STATE, "d5_trainer_run: called from a hook of the same trainer");
    if (t->ran)
        return d5_error(D5_ERR_STATE,
                        "d5_trainer_run: this trainer has run already (after %lld steps); a "
                        "trainer runs once, create another one",
                        (long long)t->step);
    memset(out, 0, sizeof *out);
    d5_sampler *smp = NULL, *owned = NULL;
    d5_status s = pick_sampler(t, train, seed, &smp, &owned);
    if (s == D5_OK && test) s = d5__trainer_check_dataset(t, test, "d5_trainer_run (test set)");
    if (s != D5_OK) {
        d5_sampler_free(owned);
        return s;
    }
    t->ran = t->running = 1;
    out->batchnorm_training = t->bn.count;
    out->batchnorm_frozen = t->bn.frozen;
    int32_t nb = d5_executor_backend_nodes(t->ex, out->backends, D5_TRAIN_MAX_BACKENDS);
    out->nbackends = nb < D5_TRAIN_MAX_BACKENDS ? nb : D5_TRAIN_MAX_BACKENDS;
    snprintf(out->precision, sizeof out->precision, "%s", t->p.precision ? t->p.precision : "f32");
    d5__trainer_precision_report(t, out->precision_report, sizeof out->precision_report);
    out->loss_scaling = t->scaling;
    if (t->timer) d5_sampler_attach_timer(smp, t->timer);
    t->run_smp = smp;
    s = train_loop(t, smp, test, out);
    t->run_smp = NULL;
    if (t->scaling) {
        out->skipped_steps = t->ls.skipped;
        out->loss_scale_growths = t->ls.growths;
        out->loss_scale = t->ls.scale;
    }
    if (t->timer) d5_sampler_attach_timer(smp, NULL);
    if (s == D5_OK && t->p.checkpoint) s = d5_onnx_save(t->net, t->p.checkpoint);
    d5_sampler_free(owned);
    t->running = 0;
    if (s != D5_OK) d5_train_result_free(out);
    return s;
}
