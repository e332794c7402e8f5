/* A training run's typed configuration: its defaults and checks, the
 * optimizer, trainer and sampler parameters it gives, and the parsers of the
 * option strings that name a schedule, a sampler and a list of
 * augmentations. */
#define _POSIX_C_SOURCE 200809L
#include "d5/train_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

d5_train_config d5_train_config_default(void)
{
    d5_train_config c;
    memset(&c, 0, sizeof c);
    c.model = "lenet";
    c.dataset = "mnist";
    c.optimizer = "momentum";
    c.lr = 0.05;
    c.momentum = 0.9;
    c.schedule = D5_SCHEDULE_CONSTANT;
    c.batch = 64;
    c.epochs = 1;
    c.sampler = -1;
    c.seed = 1;
    c.precision = "f32";
    c.baseline = 1;
    c.loss_scale = -1;
    return c;
}

/* D5_ERR_INVALID unless lo <= x <= hi (NaN fails). */
static d5_status in_range(const char *flag, double x, double lo, double hi)
{
    if (x >= lo && x <= hi) return D5_OK;
    return d5_error(D5_ERR_INVALID, "--%s %.15g: expected a value from %.15g to %.15g", flag, x, lo,
                    hi);
}

static d5_status check_ranges(const d5_train_config *c)
{
    static const double big = 1 << 30;
    d5_status s = in_range("lr", c->lr, 0, 100);
    if (s == D5_OK) s = in_range("momentum", c->momentum, 0, 1);
    if (s == D5_OK) s = in_range("weight-decay", c->weight_decay, 0, 1);
    if (s == D5_OK) s = in_range("warmup", (double)c->warmup, 0, big);
    if (s == D5_OK) s = in_range("batch", c->batch, 1, 1 << 20);
    if (s == D5_OK) s = in_range("epochs", c->epochs, 1, 100000);
    if (s == D5_OK) s = in_range("max-batches", (double)c->max_batches, 0, big);
    if (s == D5_OK) s = in_range("target-accuracy", c->target_accuracy, 0, 1);
    if (s == D5_OK) s = in_range("time-budget", c->time_budget_s, 0, 1e9);
    if (s == D5_OK) s = in_range("eval-every", (double)c->eval_every, 0, big);
    if (s == D5_OK) s = in_range("seed", c->seed, 0, 2147483647);
    if (s == D5_OK) s = in_range("snapshot-every", (double)c->snapshot_every, 0, big);
    return s;
}

d5_status d5_train_config_check(const d5_train_config *c)
{
    if (!c) return d5_error(D5_ERR_INVALID, "d5_train_config_check: NULL configuration");
    if (!c->model || !c->dataset || !c->optimizer || !c->precision)
        return d5_error(D5_ERR_INVALID, "d5_train_config_check: model, dataset, optimizer and "
                                        "precision must be set");
    d5_status s = check_ranges(c);
    if (s != D5_OK) return s;
    if (c->schedule < D5_SCHEDULE_CONSTANT || c->schedule > D5_SCHEDULE_COSINE)
        return d5_error(D5_ERR_INVALID, "--schedule: kind %d is not a d5_schedule_kind",
                        (int)c->schedule);
    if (c->sampler < -1 || c->sampler > D5_SAMPLER_SHARDED_BATCH)
        return d5_error(D5_ERR_INVALID, "--sampler: kind %d is not a d5_sampler_kind",
                        (int)c->sampler);
    int f16 = strcmp(c->precision, "f16") == 0;
    if (!f16 && strcmp(c->precision, "f32") != 0 && strcmp(c->precision, "bf16") != 0)
        return d5_error(D5_ERR_INVALID, "--precision '%s': expected f32, bf16 or f16",
                        c->precision);
    if (c->loss_scale >= 0 && !f16)
        return d5_error(D5_ERR_INVALID,
                        "--loss-scale configures the loss scaling of --precision f16");
    if ((c->loss_scale > 0 && c->loss_scale < 1) || c->loss_scale > 16777216 ||
        isnan(c->loss_scale))
        return d5_error(D5_ERR_INVALID,
                        "--loss-scale %g: expected 0 (no loss scaling) or a scale >= 1",
                        c->loss_scale);
    return D5_OK;
}

d5_optimizer_params d5_train_config_optimizer(const d5_train_config *c)
{
    d5_optimizer_params op = d5_optimizer_default_params();
    op.lr = c->lr;
    op.momentum = c->momentum;
    op.weight_decay = c->weight_decay;
    return op;
}

d5_trainer_params d5_train_config_trainer(const d5_train_config *c, int64_t steps_per_epoch)
{
    d5_trainer_params tp = d5_trainer_default_params();
    tp.epochs = c->epochs;
    tp.max_batches = c->max_batches;
    tp.target_accuracy = c->target_accuracy;
    tp.time_budget_s = c->time_budget_s;
    tp.eval_every = c->eval_every;
    tp.backend = c->backend;
    tp.checkpoint = c->checkpoint;
    tp.progress = 0;
    tp.precision = c->precision;
    if (c->loss_scale == 0) tp.loss_scaling = D5_LOSS_SCALING_OFF;
    if (c->loss_scale > 0) tp.loss_scale.init = c->loss_scale;
    tp.snapshot_every = c->snapshot_every;
    if (c->compare_backend && tp.snapshot_every == 0) tp.snapshot_every = 50;
    int64_t per_epoch = steps_per_epoch;
    tp.schedule.kind = c->schedule;
    tp.schedule.warmup = c->warmup;
    if (c->schedule == D5_SCHEDULE_STEP) {
        tp.schedule.gamma = 0.1;
        tp.schedule.step_size = per_epoch > 0 ? per_epoch : 1;
    } else if (c->schedule == D5_SCHEDULE_EXPONENTIAL) {
        tp.schedule.gamma = per_epoch > 0 ? pow(0.1, 1.0 / (double)per_epoch) : 0.99;
    } else if (c->schedule == D5_SCHEDULE_COSINE) {
        tp.schedule.total = per_epoch * c->epochs;
    }
    return tp;
}

d5_sampler_params d5_train_config_sampler(const d5_train_config *c, int distributed)
{
    d5_sampler_params sp = d5_sampler_default_params();
    sp.kind = c->sampler >= 0 ? c->sampler
              : distributed   ? D5_SAMPLER_PARTITIONED
                              : D5_SAMPLER_SHUFFLED;
    sp.batch = c->batch;
    sp.seed = (uint64_t)c->seed;
    sp.drop_last = 1;
    sp.augment = c->augment;
    return sp;
}

/* ---- Option strings ---- */

static const char *const schedule_names[] = {"constant", "step", "exponential", "cosine"};
_Static_assert(sizeof schedule_names / sizeof schedule_names[0] == D5_SCHEDULE_COSINE + 1,
               "one name per d5_schedule_kind");

static const char *const sampler_names[] = {"ordered", "shuffled", "partitioned", "sharded-batch"};
_Static_assert(sizeof sampler_names / sizeof sampler_names[0] == D5_SAMPLER_SHARDED_BATCH + 1,
               "one name per d5_sampler_kind");

d5_status d5_train_parse_schedule(const char *name, int32_t *kind)
{
    for (int32_t k = 0; name && k <= D5_SCHEDULE_COSINE; k++)
        if (strcmp(name, schedule_names[k]) == 0) {
            *kind = k;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID,
                    "--schedule '%s': expected constant, step, exponential or cosine",
                    name ? name : "");
}

const char *d5_train_schedule_name(int32_t kind)
{
    return kind >= 0 && kind <= D5_SCHEDULE_COSINE ? schedule_names[kind] : "?";
}

d5_status d5_train_parse_sampler(const char *name, int32_t *kind)
{
    for (int32_t k = 0; name && k <= D5_SAMPLER_SHARDED_BATCH; k++)
        if (strcmp(name, sampler_names[k]) == 0) {
            *kind = k;
            return D5_OK;
        }
    return d5_error(D5_ERR_INVALID,
                    "--sampler '%s': unknown sampler; expected ordered, shuffled, partitioned or "
                    "sharded-batch",
                    name ? name : "");
}

const char *d5_train_sampler_name(int32_t kind)
{
    return kind >= 0 && kind <= D5_SAMPLER_SHARDED_BATCH ? sampler_names[kind] : "?";
}

#define AUGMENT_LIST "crop[:PAD], flip, normalize, cutout[:SIDE]"

/* The value of "crop:PAD" or "cutout:SIDE" (def without one) in 1..max. */
static d5_status item_value(const char *item, const char *colon, int def, int max, int32_t *v)
{
    if (!colon) {
        *v = def;
        return D5_OK;
    }
    char *end;
    errno = 0;
    long x = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || x < 1 || x > max)
        return d5_error(D5_ERR_INVALID, "--augment item '%s': expects an integer in 1..%d", item,
                        max);
    *v = (int32_t)x;
    return D5_OK;
}

/* One item of the list, "name[:VALUE]", into *a; seen counts each name. */
static d5_status parse_item(const char *list, const char *item, int seen[4], d5_augment *a)
{
    static const char *const names[] = {"crop", "flip", "normalize", "cutout"};
    const char *colon = strchr(item, ':');
    size_t nlen = colon ? (size_t)(colon - item) : strlen(item);
    int k = 0;
    while (k < 4 && !(strlen(names[k]) == nlen && strncmp(item, names[k], nlen) == 0)) k++;
    if (k == 4)
        return d5_error(D5_ERR_INVALID,
                        "--augment '%s': unknown augmentation '%s'; expected a comma-separated "
                        "list of " AUGMENT_LIST ", or none",
                        list, item);
    if (seen[k]++)
        return d5_error(D5_ERR_INVALID, "--augment '%s': '%s' is given twice", list, names[k]);
    if (colon && (k == 1 || k == 2))
        return d5_error(D5_ERR_INVALID, "--augment '%s': '%s' takes no value", list, names[k]);
    if (k == 0) return item_value(item, colon, 4, 1024, &a->crop_pad);
    if (k == 3) return item_value(item, colon, 16, 4096, &a->cutout);
    if (k == 1) a->flip = 1;
    if (k == 2) a->normalize = 1;
    return D5_OK;
}

d5_status d5_train_parse_augment(const char *list, d5_augment *a)
{
    d5_augment parsed;
    memset(&parsed, 0, sizeof parsed);
    if (!list) return d5_error(D5_ERR_INVALID, "--augment: no list");
    int seen[4] = {0, 0, 0, 0};
    for (const char *p = list; strcmp(list, "none") != 0;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[64];
        if (len == 0 || len >= sizeof item)
            return d5_error(D5_ERR_INVALID,
                            "--augment '%s': %s; expected a comma-separated list of " AUGMENT_LIST
                            ", or none",
                            list, len ? "an item is too long" : "an empty item");
        memcpy(item, p, len);
        item[len] = 0;
        d5_status s = parse_item(list, item, seen, &parsed);
        if (s != D5_OK) return s;
        if (!comma) break;
        p = comma + 1;
    }
    *a = parsed;
    return D5_OK;
}

void d5_train_augment_spec(const d5_augment *a, char *buf, size_t size)
{
    size_t used = 0;
    if (!size) return;
    buf[0] = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (used < size) used += (size_t)snprintf(buf + used, size - used, __VA_ARGS__);           \
    } while (0)
    if (a->crop_pad > 0) ADD("%scrop:%d", used ? "," : "", (int)a->crop_pad);
    if (a->flip) ADD("%sflip", used ? "," : "");
    if (a->normalize) ADD("%snormalize", used ? "," : "");
    if (a->cutout > 0) ADD("%scutout:%d", used ? "," : "", (int)a->cutout);
#undef ADD
    if (!used) snprintf(buf, size, "none");
}

d5_status d5_train_channel_stats(const d5_dataset *ds, d5_augment *a)
{
    const d5_tensor_desc *d = d5_dataset_sample_desc(ds);
    int64_t numel = d5_tensor_desc_numel(d), channels = d->ndim == 3 ? d->shape[0] : 1;
    if (d->ndim > 3 || channels > 4 || numel < 1) return D5_OK;
    int64_t per = numel / channels, n = d5_dataset_size(ds), chunk = 256;
    float *x = malloc((size_t)(chunk * numel) * sizeof *x);
    int64_t *idx = malloc((size_t)chunk * sizeof *idx);
    double sum[4] = {0, 0, 0, 0}, sq[4] = {0, 0, 0, 0};
    d5_status s = x && idx ? D5_OK : d5_error(D5_ERR_NOMEM, "--augment normalize: no memory");
    for (int64_t i0 = 0; i0 < n && s == D5_OK; i0 += chunk) {
        int64_t m = n - i0 < chunk ? n - i0 : chunk;
        for (int64_t k = 0; k < m; k++) idx[k] = i0 + k;
        s = d5_dataset_get(ds, idx, m, x, NULL);
        for (int64_t k = 0; k < m && s == D5_OK; k++)
            for (int64_t c = 0; c < channels; c++)
                for (int64_t j = 0; j < per; j++) {
                    double v = x[k * numel + c * per + j];
                    sum[c] += v;
                    sq[c] += v * v;
                }
    }
    for (int64_t c = 0; c < channels && s == D5_OK; c++) {
        double count = (double)n * (double)per, mean = sum[c] / count;
        double var = sq[c] / count - mean * mean;
        a->mean[c] = (float)mean;
        a->std[c] = (float)sqrt(var > 0 ? var : 0);
    }
    free(x);
    free(idx);
    return s;
}
