/* Residual networks (He, Zhang, Ren and Sun, "Deep Residual Learning for Image
 * Recognition", CVPR 2016), post-activation, with convolutions without bias
 * followed by batch normalization.
 *
 * ImageNet (resnet18, resnet34, resnet50): torchvision's models, input
 * [N,3,224,224]. A 7x7/2 convolution with 64 channels, batch normalization,
 * ReLU and a 3x3/2 max pooling; four stages ("layer1".."layer4") of 64, 128,
 * 256 and 512 channels, the last three starting with stride 2; global
 * average pooling, flatten and "fc". resnet18 and resnet34 use BasicBlocks
 * (two 3x3 convolutions; 2-2-2-2 and 3-4-6-3 blocks), resnet50 Bottlenecks
 * (1x1, 3x3 with the stride, 1x1 to 4x the width; 3-4-6-3 blocks). Where a
 * block changes the shape, the shortcut is a 1x1 convolution with the stride
 * and batch normalization ("downsample.0", "downsample.1"). Parameters with
 * 1000 classes: 11,689,512 / 21,797,672 / 25,557,032, as torchvision.
 *
 * CIFAR (resnet20, resnet32, resnet44, resnet56): the 6n+2-layer networks of
 * the paper's section 4.2, input [N,3,32,32]: a 3x3 convolution with 16
 * channels, three stages of n BasicBlocks with 16, 32 and 64 channels (the
 * last two starting with stride 2), global average pooling and "fc". The
 * shortcut where the shape changes is a 1x1 convolution with batch
 * normalization (the paper's option B; its 0.27M for resnet20 counts option
 * A, zero-padding identity). Parameters with 10 classes: 272,474 / 466,906 /
 * 661,338 / 855,770.
 *
 * resnet18-cifar: torchvision's ResNet-18 blocks (64..512 channels, 2-2-2-2)
 * behind a 3x3 stride-1 stem without max pooling, input [N,3,32,32], the
 * common CIFAR-10 adaptation; 11,173,962 parameters with 10 classes. */
#include "builder.h"

typedef struct resnet_spec {
    int64_t stem;      /* channels of the stem convolution */
    int imagenet_stem; /* 7x7/2 convolution and 3x3/2 max pooling; else one 3x3/1 */
    int bottleneck;    /* Bottleneck blocks (expansion 4); else BasicBlocks */
    int32_t stages;    /* 3 or 4 */
    int32_t blocks[4]; /* blocks per stage */
    int64_t widths[4]; /* channels of each stage (before the expansion) */
    int64_t image;     /* height and width of the input */
} resnet_spec;

/* The shortcut of a block whose shape changes: 1x1 convolution with the
 * stride and batch normalization. Writes the value name into `out`. */
static d5_status downsample(d5__mb *b, const char *p, const char *x, int64_t cin, int64_t cout,
                            int64_t stride, char *out)
{
    char conv[D5__MB_NAME];
    D5__TRY(d5__mb_conv(b, d5__mb_name(conv, "%s.downsample.0", p), x, cin, cout, 1, stride, 0, 0));
    return d5__mb_bn(b, d5__mb_name(out, "%s.downsample.1", p), conv, cout);
}

/* One block named `p` ("layer2.0") reading value x (updated to the block's
 * output) with *cin channels (updated to its output channels). */
static d5_status block(d5__mb *b, const resnet_spec *r, const char *p, char *x, int64_t *cin,
                       int64_t width, int64_t stride)
{
    char n[6][D5__MB_NAME], shortcut[D5__MB_NAME];
    const int64_t cout = r->bottleneck ? 4 * width : width;
    const char *y;
    if (r->bottleneck) {
        /* 1x1 reduce, 3x3 with the stride (torchvision's ResNet v1.5), 1x1 expand. */
        D5__TRY(d5__mb_conv(b, d5__mb_name(n[0], "%s.conv1", p), x, *cin, width, 1, 1, 0, 0));
        D5__TRY(d5__mb_bn(b, d5__mb_name(n[1], "%s.bn1", p), n[0], width));
        D5__TRY(d5__mb_relu(b, d5__mb_name(n[2], "%s.relu1", p), n[1]));
        D5__TRY(
            d5__mb_conv(b, d5__mb_name(n[0], "%s.conv2", p), n[2], width, width, 3, stride, 1, 0));
        D5__TRY(d5__mb_bn(b, d5__mb_name(n[1], "%s.bn2", p), n[0], width));
        D5__TRY(d5__mb_relu(b, d5__mb_name(n[2], "%s.relu2", p), n[1]));
        D5__TRY(d5__mb_conv(b, d5__mb_name(n[0], "%s.conv3", p), n[2], width, cout, 1, 1, 0, 0));
        D5__TRY(d5__mb_bn(b, d5__mb_name(n[1], "%s.bn3", p), n[0], cout));
    } else {
        D5__TRY(d5__mb_conv(b, d5__mb_name(n[0], "%s.conv1", p), x, *cin, width, 3, stride, 1, 0));
        D5__TRY(d5__mb_bn(b, d5__mb_name(n[1], "%s.bn1", p), n[0], width));
        D5__TRY(d5__mb_relu(b, d5__mb_name(n[2], "%s.relu1", p), n[1]));
        D5__TRY(d5__mb_conv(b, d5__mb_name(n[0], "%s.conv2", p), n[2], width, width, 3, 1, 1, 0));
        D5__TRY(d5__mb_bn(b, d5__mb_name(n[1], "%s.bn2", p), n[0], width));
    }
    y = x;
    if (stride != 1 || *cin != cout) {
        D5__TRY(downsample(b, p, x, *cin, cout, stride, shortcut));
        y = shortcut;
    }
    D5__TRY(d5__mb_add(b, d5__mb_name(n[3], "%s.add", p), n[1], y));
    D5__TRY(d5__mb_relu(b, d5__mb_name(n[4], "%s.relu%d", p, r->bottleneck ? 3 : 2), n[3]));
    d5__mb_name(x, "%s", n[4]);
    *cin = cout;
    return D5_OK;
}

static d5_status build(d5__mb *b, const resnet_spec *r)
{
    char x[D5__MB_NAME], p[D5__MB_NAME];
    int64_t c = r->stem;
    D5__TRY(d5__mb_io(b, 3, r->image, r->image));
    if (r->imagenet_stem)
        D5__TRY(d5__mb_conv(b, "conv1", "input", 3, c, 7, 2, 3, 0));
    else
        D5__TRY(d5__mb_conv(b, "conv1", "input", 3, c, 3, 1, 1, 0));
    D5__TRY(d5__mb_bn(b, "bn1", "conv1", c));
    D5__TRY(d5__mb_relu(b, "relu", "bn1"));
    d5__mb_name(x, "relu");
    if (r->imagenet_stem) {
        D5__TRY(d5__mb_maxpool(b, "maxpool", "relu", 3, 2, 1));
        d5__mb_name(x, "maxpool");
    }
    for (int32_t s = 0; s < r->stages; s++)
        for (int32_t k = 0; k < r->blocks[s]; k++)
            D5__TRY(block(b, r, d5__mb_name(p, "layer%d.%d", s + 1, k), x, &c, r->widths[s],
                          k == 0 && s > 0 ? 2 : 1));
    D5__TRY(d5__mb_global_avgpool(b, "avgpool", x));
    D5__TRY(d5__mb_flatten(b, "flatten", "avgpool"));
    return d5__mb_linear(b, "fc", "flatten", c, b->classes, "logits");
}

/* variant: 18, 34 or 50. */
d5_status d5__model_resnet_imagenet(d5__mb *b, int32_t variant)
{
    resnet_spec r = {64, 1, variant == 50, 4, {2, 2, 2, 2}, {64, 128, 256, 512}, 224};
    if (variant != 18) {
        const int32_t deeper[4] = {3, 4, 6, 3};
        for (int32_t i = 0; i < 4; i++) r.blocks[i] = deeper[i];
    }
    return build(b, &r);
}

/* variant: the depth 6n+2 (20, 32, 44, 56). */
d5_status d5__model_resnet_cifar(d5__mb *b, int32_t variant)
{
    const int32_t n = (variant - 2) / 6;
    const resnet_spec r = {16, 0, 0, 3, {n, n, n, 0}, {16, 32, 64, 0}, 32};
    return build(b, &r);
}

d5_status d5__model_resnet18_cifar(d5__mb *b, int32_t variant)
{
    (void)variant;
    const resnet_spec r = {64, 0, 0, 4, {2, 2, 2, 2}, {64, 128, 256, 512}, 32};
    return build(b, &r);
}
