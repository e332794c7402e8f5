/* d5 train's augmentations (parsed and measured by level 2,
 * d5/train_config.h): the resolved list as text and as JSON. */
#define _POSIX_C_SOURCE 200809L
#include "train_out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
