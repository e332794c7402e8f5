/* Wide residual networks (Zagoruyko and Komodakis, "Wide Residual Networks",
 * BMVC 2016) for CIFAR, pre-activation, as in the authors' PyTorch code.
 *
 * WRN-d-k has n = (d - 4) / 6 blocks in each of three groups of 16k, 32k and
 * 64k channels ("block1".."block3"; the second and third start with stride 2),
 * behind a 3x3 convolution with 16 channels, and ends with batch
 * normalization, ReLU, global average pooling (8x8), flatten and "fc". A block
 * is
 *   bn1 -> relu1 -> conv1 (3x3, stride) -> bn2 -> relu2 -> conv2 (3x3)
 * plus the shortcut: the block's input, or where the channels change a 1x1
 * convolution with the stride of relu1's output ("shortcut", no batch
 * normalization). Convolutions have no bias. Dropout between the convolutions
 * (a training option of the paper) is left out: this is the inference graph.
 *
 * wide-resnet-28-10 (input [N,3,32,32]) has 36,479,194 parameters with 10
 * classes, as the authors' code. The 36,489,290 sometimes quoted is the same
 * network with a bias on every convolution (10,096 more). */
#include "builder.h"

/* One block named `p` ("block2.0") reading value x (updated to its output). */
static d5_status block(d5__mb *b, const char *p, char *x, int64_t cin, int64_t cout, int64_t stride)
{
    char bn1[D5__MB_NAME], relu1[D5__MB_NAME], conv1[D5__MB_NAME], bn2[D5__MB_NAME];
    char relu2[D5__MB_NAME], conv2[D5__MB_NAME], shortcut[D5__MB_NAME], add[D5__MB_NAME];
    D5__TRY(d5__mb_bn(b, d5__mb_name(bn1, "%s.bn1", p), x, cin));
    D5__TRY(d5__mb_relu(b, d5__mb_name(relu1, "%s.relu1", p), bn1));
    D5__TRY(d5__mb_conv(b, d5__mb_name(conv1, "%s.conv1", p), relu1, cin, cout, 3, stride, 1, 0));
    D5__TRY(d5__mb_bn(b, d5__mb_name(bn2, "%s.bn2", p), conv1, cout));
    D5__TRY(d5__mb_relu(b, d5__mb_name(relu2, "%s.relu2", p), bn2));
    D5__TRY(d5__mb_conv(b, d5__mb_name(conv2, "%s.conv2", p), relu2, cout, cout, 3, 1, 1, 0));
    const char *y = x;
    if (cin != cout || stride != 1) {
        D5__TRY(d5__mb_conv(b, d5__mb_name(shortcut, "%s.shortcut", p), relu1, cin, cout, 1, stride,
                            0, 0));
        y = shortcut;
    }
    D5__TRY(d5__mb_add(b, d5__mb_name(add, "%s.add", p), conv2, y));
    d5__mb_name(x, "%s", add);
    return D5_OK;
}

/* variant: depth * 100 + widening factor (2810 for WRN-28-10). */
d5_status d5__model_wrn(d5__mb *b, int32_t variant)
{
    const int32_t depth = variant / 100, n = (depth - 4) / 6;
    const int64_t k = variant % 100, widths[3] = {16 * k, 32 * k, 64 * k};
    char x[D5__MB_NAME], p[D5__MB_NAME];
    int64_t c = 16;
    D5__TRY(d5__mb_io(b, 3, 32, 32));
    D5__TRY(d5__mb_conv(b, "conv1", "input", 3, c, 3, 1, 1, 0));
    d5__mb_name(x, "conv1");
    for (int32_t g = 0; g < 3; g++)
        for (int32_t i = 0; i < n; i++) {
            D5__TRY(block(b, d5__mb_name(p, "block%d.%d", g + 1, i), x, c, widths[g],
                          i == 0 && g > 0 ? 2 : 1));
            c = widths[g];
        }
    D5__TRY(d5__mb_bn(b, "bn", x, c));
    D5__TRY(d5__mb_relu(b, "relu", "bn"));
    D5__TRY(d5__mb_global_avgpool(b, "avgpool", "relu"));
    D5__TRY(d5__mb_flatten(b, "flatten", "avgpool"));
    return d5__mb_linear(b, "fc", "flatten", c, b->classes, "logits");
}
