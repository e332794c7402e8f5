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
    /* The transformers' sizes, as asked (0: the model's default). */
    int64_t sequence, hidden;
    int32_t layers, heads;
} d5__mb;

/* How d5__mb_init fills an initializer. */
typedef enum d5__mb_fill {
    D5__MB_CONST,  /* every element `a` */
    D5__MB_NORMAL, /* normal with mean 0 and standard deviation `a` */
    D5__MB_UNIFORM /* uniform in [-a, a) */
} d5__mb_fill;

/* Returns from the enclosing function when `call` fails. */
#define D5__TRY(call)                                                                              \
    do {                                                                                           \
        d5_status d5__try_s = (call);                                                              \
        if (d5__try_s != D5_OK) return d5__try_s;                                                  \
    } while (0)

/* Formats a node name into buf (D5__MB_NAME bytes) and returns buf. */
const char *d5__mb_name(char *buf, const char *fmt, ...) D5_PRINTF(2, 3);

/* Adds the float32 initializer "<layer>.<suffix>" of the given shape, filled
 * from its own seeded stream. `param` says whether PyTorch counts it as a
 * parameter (running statistics are buffers). */
d5_status d5__mb_init(d5__mb *b, const char *layer, const char *suffix, int32_t ndim,
                      const int64_t *shape, d5__mb_fill kind, double a, int param);
/* Adds the initializer `name` holding a copy of `data` (a constant the graph
 * needs: a shape, indices, a mask; not a parameter). */
d5_status d5__mb_const(d5__mb *b, const char *name, d5_dtype dtype, int32_t ndim,
                       const int64_t *shape, const void *data);
/* Adds a node with one output (`out`, or the node's name when NULL). */
d5_status d5__mb_node(d5__mb *b, const char *name, const char *op, const char *const *inputs,
                      int32_t ninputs, const char *out, const d5_attr *attrs, int32_t nattrs);
/* The same with several outputs (Split). */
d5_status d5__mb_node_outs(d5__mb *b, const char *name, const char *op, const char *const *inputs,
                           int32_t ninputs, const char *const *outputs, int32_t noutputs,
                           const d5_attr *attrs, int32_t nattrs);
/* An attribute for d5__mb_node: an INT i, a FLOAT f, or INTS of i values
 * (referred to, not copied). */
d5_attr d5__mb_attr(const char *name, int32_t type, int64_t i, double f, const int64_t *ints);
#define d5__mb_int(name, v)     d5__mb_attr(name, D5_ATTR_INT, v, 0.0, NULL)
#define d5__mb_float(name, v)   d5__mb_attr(name, D5_ATTR_FLOAT, 0, v, NULL)
#define d5__mb_ints(name, v, n) d5__mb_attr(name, D5_ATTR_INTS, n, 0.0, v)
/* Declares the graph input "input" of type in_type and the float32 graph
 * output "logits": each has the batch as its first dimension (dim_param "N"
 * when the batch is 0), then the in_ndim - 1 and out_ndim - 1 sizes given. */
d5_status d5__mb_graph_io(d5__mb *b, d5_dtype in_type, int32_t in_ndim, const int64_t *in_shape,
                          int32_t out_ndim, const int64_t *out_shape);

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
d5_status d5__model_bert(d5__mb *b, int32_t variant);
d5_status d5__model_gpt2(d5__mb *b, int32_t variant);
d5_status d5__model_vit(d5__mb *b, int32_t variant);

#endif
