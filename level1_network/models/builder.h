/* Internal helpers that the model builders share: one call adds one layer
 * (its node and its initializers) to the network under construction.
 *
 * Every helper writes its result into a value named like its node ("layer1.0.conv1"),
 * unless it takes an explicit output name, so that a builder refers to the
 * output of a layer by the layer's name. Initializers are named
 * "<node>.weight", "<node>.bias", "<node>.running_mean", "<node>.running_var",
 * the keys of a PyTorch state_dict.
 *
 * A builder whose `net` is NULL only counts parameters: the helpers then add
 * nothing and draw no random numbers, so that d5_model_param_elements costs
 * no memory.
 */
#ifndef D5_MODELS_BUILDER_H
#define D5_MODELS_BUILDER_H

#include "d5/models.h"

/* Longest node or value name the builders make, with its NUL. */
#define D5__MB_NAME 96

typedef struct d5__mb {
    d5_network *net;   /* the network being built; NULL to count parameters only */
    uint64_t seed;     /* the model's seed; each initializer derives its own stream */
    int64_t batch;     /* first input dimension; 0 for the symbolic "N" */
    int64_t classes;   /* outputs of the classifier */
    int64_t params;    /* parameter elements added so far */
    const char *model; /* the model's name, for messages */
    /* Conv weights as torch.nn.Conv2d initializes them (uniform in
     * +-1/sqrt(cin k k)) instead of torchvision's Kaiming-normal fan-out. */
    int conv_torch_default;
} d5__mb;

/* Returns from the enclosing function when `call` fails. */
#define D5__TRY(call)                                                                              \
    do {                                                                                           \
        d5_status d5__try_s = (call);                                                              \
        if (d5__try_s != D5_OK) return d5__try_s;                                                  \
    } while (0)

/* Formats a node name into buf (D5__MB_NAME bytes) and returns buf. */
const char *d5__mb_name(char *buf, const char *fmt, ...) D5_PRINTF(2, 3);

/* Declares the graph input "input", float32 [batch, c, h, w] (dim_param "N"
 * when the batch is 0), and the graph output "logits", float32 [batch, classes]. */
d5_status d5__mb_io(d5__mb *b, int64_t c, int64_t h, int64_t w);

/* Conv with a square kernel k, stride and padding on every side. The weight
 * [cout, cin, k, k] is Kaiming-normal with fan-out (std sqrt(2 / (cout k k)),
 * torchvision's init); with `bias`, a bias [cout] uniform in
 * +-1/sqrt(cin k k) (PyTorch's default). */
d5_status d5__mb_conv(d5__mb *b, const char *name, const char *x, int64_t cin, int64_t cout,
                      int64_t k, int64_t stride, int64_t pad, int bias);
/* BatchNormalization in inference form over c channels: weight 1, bias 0,
 * running_mean 0, running_var 1, epsilon 1e-5. */
d5_status d5__mb_bn(d5__mb *b, const char *name, const char *x, int64_t c);
d5_status d5__mb_relu(d5__mb *b, const char *name, const char *x);
/* MaxPool with a square window k, stride and padding on every side. */
d5_status d5__mb_maxpool(d5__mb *b, const char *name, const char *x, int64_t k, int64_t stride,
                         int64_t pad);
/* x + y (the residual connection). */
d5_status d5__mb_add(d5__mb *b, const char *name, const char *x, const char *y);
d5_status d5__mb_global_avgpool(d5__mb *b, const char *name, const char *x);
/* Flatten with axis 1: [N, C, H, W] -> [N, C H W]. */
d5_status d5__mb_flatten(d5__mb *b, const char *name, const char *x);
/* Gemm y = x W^T + bias (transB = 1, W [out, in] like torch.nn.Linear), both
 * uniform in +-1/sqrt(in). Writes the value `y`, or `name` when y is NULL. */
d5_status d5__mb_linear(d5__mb *b, const char *name, const char *x, int64_t in, int64_t out,
                        const char *y);

/* The builders, one per family; `variant` selects the member (a depth). */
d5_status d5__model_lenet(d5__mb *b, int32_t variant);
d5_status d5__model_mlp(d5__mb *b, int32_t variant);
d5_status d5__model_resnet_imagenet(d5__mb *b, int32_t variant);
d5_status d5__model_resnet_cifar(d5__mb *b, int32_t variant);
d5_status d5__model_resnet18_cifar(d5__mb *b, int32_t variant);
d5_status d5__model_wrn(d5__mb *b, int32_t variant);

#endif
