/* The typed training configuration: its defaults, its checks, the trainer,
 * optimizer and sampler parameters it gives, and the parsers of the option
 * strings (schedule, sampler, augmentations), good and bad, with the exact
 * messages d5 train prints. */
#include "support.h"

#include "d5/train_config.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* The call fails with D5_ERR_INVALID and exactly this message. */
#define EXPECT_INVALID(call, msg)                                                                  \
    do {                                                                                           \
        cr_expect_eq((call), D5_ERR_INVALID, "%s", #call);                                         \
        cr_expect_str_eq(d5_last_error(), (msg));                                                  \
    } while (0)

Test(train_config, defaults_are_d5_trains)
{
    d5_train_config c = d5_train_config_default();
    cr_expect_str_eq(c.model, "lenet");
    cr_expect_str_eq(c.dataset, "mnist");
    cr_expect_str_eq(c.optimizer, "momentum");
    cr_expect_eq(c.lr, 0.05);
    cr_expect_eq(c.momentum, 0.9);
    cr_expect_eq(c.batch, 64);
    cr_expect_eq(c.epochs, 1);
    cr_expect_eq(c.schedule, D5_SCHEDULE_CONSTANT);
    cr_expect_eq(c.sampler, -1);
    cr_expect_eq(c.seed, 1);
    cr_expect_str_eq(c.precision, "f32");
    cr_expect_eq(c.baseline, 1);
    cr_expect_eq(c.loss_scale, -1);
    cr_expect_eq(d5_train_config_check(&c), D5_OK, "%s", d5_last_error());
}

Test(train_config, schedule_names)
{
    static const char *const names[] = {"constant", "step", "exponential", "cosine"};
    for (int32_t k = 0; k < 4; k++) {
        int32_t kind = -1;
        cr_expect_eq(d5_train_parse_schedule(names[k], &kind), D5_OK);
        cr_expect_eq(kind, k);
        cr_expect_str_eq(d5_train_schedule_name(k), names[k]);
    }
    cr_expect_str_eq(d5_train_schedule_name(4), "?");
    int32_t kind = 7;
    EXPECT_INVALID(d5_train_parse_schedule("linear", &kind),
                   "--schedule 'linear': expected constant, step, exponential or cosine");
    cr_expect_eq(kind, 7, "left alone on an error");
    EXPECT_INVALID(d5_train_parse_schedule("", &kind),
                   "--schedule '': expected constant, step, exponential or cosine");
}

Test(train_config, sampler_names)
{
    static const char *const names[] = {"ordered", "shuffled", "partitioned", "sharded-batch"};
    for (int32_t k = 0; k < 4; k++) {
        int32_t kind = -1;
        cr_expect_eq(d5_train_parse_sampler(names[k], &kind), D5_OK);
        cr_expect_eq(kind, k);
        cr_expect_str_eq(d5_train_sampler_name(k), names[k]);
    }
    cr_expect_str_eq(d5_train_sampler_name(-1), "?");
    int32_t kind;
    EXPECT_INVALID(d5_train_parse_sampler("random", &kind),
                   "--sampler 'random': unknown sampler; expected ordered, shuffled, partitioned "
                   "or sharded-batch");
}

Test(train_config, augment_lists)
{
    d5_augment a;
    char spec[128];
    cr_assert_eq(d5_train_parse_augment("none", &a), D5_OK);
    cr_expect(!a.crop_pad && !a.flip && !a.normalize && !a.cutout);
    d5_train_augment_spec(&a, spec, sizeof spec);
    cr_expect_str_eq(spec, "none");

    cr_assert_eq(d5_train_parse_augment("flip,crop,cutout", &a), D5_OK);
    cr_expect_eq(a.crop_pad, 4, "crop's default padding");
    cr_expect_eq(a.cutout, 16, "cutout's default side");
    cr_expect_eq(a.flip, 1);
    cr_expect_eq(a.normalize, 0);
    d5_train_augment_spec(&a, spec, sizeof spec);
    cr_expect_str_eq(spec, "crop:4,flip,cutout:16");

    cr_assert_eq(d5_train_parse_augment("crop:2,normalize,cutout:8", &a), D5_OK);
    cr_expect_eq(a.crop_pad, 2);
    cr_expect_eq(a.normalize, 1);
    cr_expect_eq(a.cutout, 8);
    d5_train_augment_spec(&a, spec, sizeof spec);
    cr_expect_str_eq(spec, "crop:2,normalize,cutout:8");
    d5_augment back;
    cr_assert_eq(d5_train_parse_augment(spec, &back), D5_OK, "the spec parses back");
    cr_expect(back.crop_pad == 2 && back.normalize && back.cutout == 8 && !back.flip);
}

Test(train_config, bad_augment_lists)
{
    d5_augment a;
    memset(&a, 0, sizeof a);
    a.flip = 1;
    EXPECT_INVALID(d5_train_parse_augment("blur", &a),
                   "--augment 'blur': unknown augmentation 'blur'; expected a comma-separated "
                   "list of crop[:PAD], flip, normalize, cutout[:SIDE], or none");
    cr_expect(a.flip == 1 && a.crop_pad == 0, "left alone on an error");
    EXPECT_INVALID(d5_train_parse_augment("crop,,flip", &a),
                   "--augment 'crop,,flip': an empty item; expected a comma-separated list of "
                   "crop[:PAD], flip, normalize, cutout[:SIDE], or none");
    EXPECT_INVALID(d5_train_parse_augment("flip,flip", &a),
                   "--augment 'flip,flip': 'flip' is given twice");
    EXPECT_INVALID(d5_train_parse_augment("normalize:3", &a),
                   "--augment 'normalize:3': 'normalize' takes no value");
    EXPECT_INVALID(d5_train_parse_augment("crop:0", &a),
                   "--augment item 'crop:0': expects an integer in 1..1024");
    EXPECT_INVALID(d5_train_parse_augment("cutout:9x", &a),
                   "--augment item 'cutout:9x': expects an integer in 1..4096");
    EXPECT_INVALID(d5_train_parse_augment(NULL, &a), "--augment: no list");
}

Test(train_config, checks_name_the_option)
{
    d5_train_config c = d5_train_config_default();
    c.batch = 0;
    EXPECT_INVALID(d5_train_config_check(&c), "--batch 0: expected a value from 1 to 1048576");
    c = d5_train_config_default();
    c.lr = NAN;
    EXPECT_INVALID(d5_train_config_check(&c), "--lr nan: expected a value from 0 to 100");
    c = d5_train_config_default();
    c.target_accuracy = 1.5;
    EXPECT_INVALID(d5_train_config_check(&c),
                   "--target-accuracy 1.5: expected a value from 0 to 1");
    c = d5_train_config_default();
    c.precision = "f8";
    EXPECT_INVALID(d5_train_config_check(&c), "--precision 'f8': expected f32, bf16 or f16");
    c = d5_train_config_default();
    c.loss_scale = 1024;
    EXPECT_INVALID(d5_train_config_check(&c),
                   "--loss-scale configures the loss scaling of --precision f16");
    c.precision = "f16";
    cr_expect_eq(d5_train_config_check(&c), D5_OK, "%s", d5_last_error());
    c.loss_scale = 0.5;
    EXPECT_INVALID(d5_train_config_check(&c),
                   "--loss-scale 0.5: expected 0 (no loss scaling) or a scale >= 1");
    c = d5_train_config_default();
    c.sampler = 4;
    EXPECT_INVALID(d5_train_config_check(&c), "--sampler: kind 4 is not a d5_sampler_kind");
    c = d5_train_config_default();
    c.schedule = -1;
    EXPECT_INVALID(d5_train_config_check(&c), "--schedule: kind -1 is not a d5_schedule_kind");
    EXPECT_INVALID(d5_train_config_check(NULL), "d5_train_config_check: NULL configuration");
}

Test(train_config, parameters_for_the_trainer_optimizer_and_sampler)
{
    d5_train_config c = d5_train_config_default();
    c.lr = 0.1;
    c.weight_decay = 1e-4;
    c.epochs = 3;
    c.max_batches = 7;
    c.checkpoint = "m.onnx";
    c.compare_backend = "ref";
    d5_optimizer_params op = d5_train_config_optimizer(&c);
    cr_expect_eq(op.lr, 0.1);
    cr_expect_eq(op.momentum, 0.9);
    cr_expect_eq(op.weight_decay, 1e-4);

    c.schedule = D5_SCHEDULE_STEP;
    d5_trainer_params tp = d5_train_config_trainer(&c, 100);
    cr_expect_eq(tp.epochs, 3);
    cr_expect_eq(tp.max_batches, 7);
    cr_expect_str_eq(tp.checkpoint, "m.onnx");
    cr_expect_eq(tp.snapshot_every, 50, "the default with compare_backend");
    cr_expect_eq(tp.schedule.kind, D5_SCHEDULE_STEP);
    cr_expect_eq(tp.schedule.step_size, 100, "x0.1 every epoch");
    cr_expect_eq(tp.schedule.gamma, 0.1);
    cr_expect_eq(d5_schedule_check(&tp.schedule), D5_OK);

    c.schedule = D5_SCHEDULE_EXPONENTIAL;
    tp = d5_train_config_trainer(&c, 10);
    cr_expect_float_eq(pow(tp.schedule.gamma, 10), 0.1, 1e-12, "x0.1 over an epoch");
    c.schedule = D5_SCHEDULE_COSINE;
    tp = d5_train_config_trainer(&c, 10);
    cr_expect_eq(tp.schedule.total, 30, "down over all epochs");

    c.precision = "f16";
    c.loss_scale = 0;
    tp = d5_train_config_trainer(&c, 10);
    cr_expect_eq(tp.loss_scaling, D5_LOSS_SCALING_OFF);
    c.loss_scale = 256;
    tp = d5_train_config_trainer(&c, 10);
    cr_expect_eq(tp.loss_scale.init, 256);

    cr_assert_eq(d5_train_parse_augment("flip", &c.augment), D5_OK);
    d5_sampler_params sp = d5_train_config_sampler(&c, 0);
    cr_expect_eq(sp.kind, D5_SAMPLER_SHUFFLED);
    cr_expect_eq(sp.batch, 64);
    cr_expect_eq(sp.seed, 1);
    cr_expect_eq(sp.drop_last, 1);
    cr_expect_eq(sp.augment.flip, 1);
    cr_expect_eq(d5_train_config_sampler(&c, 1).kind, D5_SAMPLER_PARTITIONED);
    c.sampler = D5_SAMPLER_ORDERED;
    cr_expect_eq(d5_train_config_sampler(&c, 1).kind, D5_SAMPLER_ORDERED);
}
