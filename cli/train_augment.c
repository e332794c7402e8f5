/* d5 train's augmentations: --augment parsed, the channel statistics of
 * "normalize" measured, and the resolved list as text and as JSON. */
#define _POSIX_C_SOURCE 200809L
#include "train_out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AUGMENT_LIST "crop[:PAD], flip, normalize, cutout[:SIDE]"

/* The value of "crop:PAD" or "cutout:SIDE" (def without one) in 1..max, or -1. */
static int item_value(const char *item, const char *colon, int def, int max)
{
    if (!colon) return def;
    char *end;
    errno = 0;
    long v = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || v < 1 || v > max) {
        train_usage("--augment item '%s': expects an integer in 1..%d", item, max);
        return -1;
    }
    return (int)v;
}

/* --augment LIST into *a (from d5_sampler_default_params): "none" or a
 * comma-separated list of AUGMENT_LIST, each at most once. normalize is only
 * marked here: its mean and std are measured on the training set. Returns -1
 * to go on, or D5_EXIT_USAGE after saying what is wrong. */
int train_parse_augment(const char *list, d5_augment *a)
{
    if (strcmp(list, "none") == 0) return -1;
    int seen[4] = {0, 0, 0, 0};
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[64];
        if (len == 0 || len >= sizeof item)
            return train_usage(
                "--augment '%s': %s; expected a comma-separated list of " AUGMENT_LIST ", or none",
                list, len ? "an item is too long" : "an empty item");
        memcpy(item, p, len);
        item[len] = 0;
        const char *colon = strchr(item, ':');
        size_t nlen = colon ? (size_t)(colon - item) : len;
        static const char *const names[] = {"crop", "flip", "normalize", "cutout"};
        int k = 0;
        while (k < 4 && !(strlen(names[k]) == nlen && strncmp(item, names[k], nlen) == 0)) k++;
        if (k == 4)
            return train_usage(
                "--augment '%s': unknown augmentation '%s'; expected a comma-separated "
                "list of " AUGMENT_LIST ", or none",
                list, item);
        if (seen[k]++) return train_usage("--augment '%s': '%s' is given twice", list, names[k]);
        if (colon && (k == 1 || k == 2))
            return train_usage("--augment '%s': '%s' takes no value", list, names[k]);
        int v = 1;
        if (k == 0) v = item_value(item, colon, 4, 1024);
        if (k == 3) v = item_value(item, colon, 16, 4096);
        if (v < 0) return D5_EXIT_USAGE;
        if (k == 0) a->crop_pad = v;
        if (k == 1) a->flip = 1;
        if (k == 2) a->normalize = 1;
        if (k == 3) a->cutout = v;
        if (!comma) return -1;
        p = comma + 1;
    }
}

/* The mean and standard deviation of each channel over the training set, for
 * --augment normalize (samples [C, H, W] or [H, W], as the augmentations take
 * them; other shapes are left for the sampler to refuse). */
d5_status train_channel_stats(const d5_dataset *ds, d5_augment *a)
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

/* "crop 4, flip, normalize (mean 0.1307 std 0.3081), cutout 16" or "none". */
void train_format_augment(const d5_augment *a, int64_t channels, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (used < size) used += (size_t)snprintf(buf + used, size - used, __VA_ARGS__);           \
    } while (0)
    if (a->crop_pad > 0) ADD("%scrop %d", used ? ", " : "", (int)a->crop_pad);
    if (a->flip) ADD("%sflip", used ? ", " : "");
    if (a->normalize) {
        ADD("%snormalize (mean", used ? ", " : "");
        for (int64_t c = 0; c < channels && c < 4; c++) ADD(" %.4g", (double)a->mean[c]);
        ADD(" std");
        for (int64_t c = 0; c < channels && c < 4; c++) ADD(" %.4g", (double)a->std[c]);
        ADD(")");
    }
    if (a->cutout > 0) ADD("%scutout %d", used ? ", " : "", (int)a->cutout);
#undef ADD
    if (!used) snprintf(buf, size, "none");
}

/* The augmentations for the JSON file's config; normalize is null or the
 * mean and std of each channel. */
json_t *train_augment_json(const d5_sampler_params *sp, int64_t channels)
{
    json_t *norm = json_null();
    if (sp->augment.normalize) {
        json_t *mean = json_array(), *sd = json_array();
        for (int64_t c = 0; c < channels && c < 4; c++) {
            json_array_append_new(mean, json_real(sp->augment.mean[c]));
            json_array_append_new(sd, json_real(sp->augment.std[c]));
        }
        norm = json_pack("{s:o, s:o}", "mean", mean, "std", sd);
    }
    return json_pack("{s:i, s:b, s:i, s:o}", "crop_pad", (int)sp->augment.crop_pad, "flip",
                     (int)sp->augment.flip, "cutout", (int)sp->augment.cutout, "normalize", norm);
}

/* One training run through a d5_trainer with the sampler of --sampler and
 * --augment. */
