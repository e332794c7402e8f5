/* The registry of built-in models and d5_model_build. Adding a model is one
 * row of D5__MODELS and, for a new family, one file with its builder. */
#include "builder.h"

#include <stdio.h>
#include <string.h>

/* Which transformer sizes a model takes (d5_model_params). */
#define K_NONE 0
#define K_SEQ  1 /* sequence */
#define K_SIZE 2 /* layers, hidden, heads */

/* X(name, builder, variant, default classes, sizes taken, lowest opset, summary) */
#define D5__MODELS(X)                                                                              \
    X("lenet", d5__model_lenet, 0, 10, K_NONE, 7, "LeNet-5 for MNIST, input 1x28x28")              \
    X("mlp", d5__model_mlp, 0, 10, K_NONE, 7,                                                      \
      "MLP 784-512-256 with ReLU for MNIST, input 1x28x28")                                        \
    X("resnet18", d5__model_resnet_imagenet, 18, 1000, K_NONE, 7,                                  \
      "ResNet-18 (torchvision) for ImageNet, input 3x224x224")                                     \
    X("resnet34", d5__model_resnet_imagenet, 34, 1000, K_NONE, 7,                                  \
      "ResNet-34 (torchvision) for ImageNet, input 3x224x224")                                     \
    X("resnet50", d5__model_resnet_imagenet, 50, 1000, K_NONE, 7,                                  \
      "ResNet-50 (torchvision, bottlenecks) for ImageNet, input 3x224x224")                        \
    X("resnet20", d5__model_resnet_cifar, 20, 10, K_NONE, 7,                                       \
      "CIFAR ResNet-20 (He et al.), input 3x32x32")                                                \
    X("resnet32", d5__model_resnet_cifar, 32, 10, K_NONE, 7,                                       \
      "CIFAR ResNet-32 (He et al.), input 3x32x32")                                                \
    X("resnet44", d5__model_resnet_cifar, 44, 10, K_NONE, 7,                                       \
      "CIFAR ResNet-44 (He et al.), input 3x32x32")                                                \
    X("resnet56", d5__model_resnet_cifar, 56, 10, K_NONE, 7,                                       \
      "CIFAR ResNet-56 (He et al.), input 3x32x32")                                                \
    X("resnet18-cifar", d5__model_resnet18_cifar, 0, 10, K_NONE, 7,                                \
      "ResNet-18 blocks with a 3x3 stem for CIFAR, input 3x32x32")                                 \
    X("wide-resnet-28-10", d5__model_wrn, 2810, 10, K_NONE, 7,                                     \
      "pre-activation Wide ResNet 28-10 for CIFAR, input 3x32x32")                                 \
    X("bert-tiny", d5__model_bert, 0, 2, K_SEQ | K_SIZE, 17,                                       \
      "BERT encoder, 2 layers, width 128, and a classifier; token ids [N,128]")                    \
    X("bert-base", d5__model_bert, 1, 2, K_SEQ | K_SIZE, 17,                                       \
      "BERT-base encoder, 12 layers, width 768, and a classifier; token ids [N,128]")              \
    X("gpt2-small", d5__model_gpt2, 2, 50257, K_SEQ | K_SIZE, 17,                                  \
      "GPT-2 small decoder (causal), 12 layers, width 768; token ids [N,128], logits per token")   \
    X("vit-tiny", d5__model_vit, 3, 1000, K_SIZE, 17,                                              \
      "ViT (DeiT) tiny, 12 layers, width 192, 16x16 patches, input 3x224x224")                     \
    X("vit-b16", d5__model_vit, 4, 1000, K_SIZE, 17,                                               \
      "ViT-B/16 (torchvision), 12 layers, width 768, input 3x224x224")

typedef struct model_entry {
    const char *name;
    d5_status (*build)(d5__mb *b, int32_t variant);
    int32_t variant;
    int64_t classes; /* default number of classes */
    int sizes;       /* K_* bits: the transformer sizes it takes */
    int32_t min_opset;
    const char *summary;
} model_entry;

static const model_entry models[] = {
#define D5__MODEL_ROW(name, fn, variant, classes, sizes, min_opset, summary)                       \
    {name, fn, variant, classes, sizes, min_opset, summary},
    D5__MODELS(D5__MODEL_ROW)
#undef D5__MODEL_ROW
};

#define D5__MODEL_COUNT ((int32_t)(sizeof models / sizeof models[0]))

/* Highest class count and opset accepted (the operators used mean the same
 * from each model's lowest opset to 22: 7, where Gemm lost its broadcast
 * attribute; 17, which brought LayerNormalization). */
#define D5__MAX_CLASSES 1000000
#define D5__MAX_OPSET   22

d5_model_params d5_model_default_params(void)
{
    d5_model_params p = {0};
    return p;
}

int32_t d5_model_count(void)
{
    return D5__MODEL_COUNT;
}

const char *d5_model_name(int32_t i)
{
    return i >= 0 && i < D5__MODEL_COUNT ? models[i].name : NULL;
}

const char *d5_model_summary(int32_t i)
{
    return i >= 0 && i < D5__MODEL_COUNT ? models[i].summary : NULL;
}

/* Finds the model and checks the parameters; fills the builder's fields but net. */
static d5_status prepare(const char *name, const d5_model_params *p, const model_entry **entry,
                         d5__mb *b)
{
    const d5_model_params def = d5_model_default_params();
    if (!p) p = &def;
    const model_entry *e = NULL;
    for (int32_t i = 0; name && i < D5__MODEL_COUNT; i++)
        if (strcmp(models[i].name, name) == 0) e = &models[i];
    if (!e) {
        char known[512] = "";
        size_t len = 0;
        for (int32_t i = 0; i < D5__MODEL_COUNT && len < sizeof known; i++)
            len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                                    models[i].name);
        return d5_error(D5_ERR_UNSUPPORTED, "no model named '%s'; known models: %s",
                        name ? name : "(null)", known);
    }
    if (p->batch < 0)
        return d5_error(D5_ERR_RANGE, "model '%s': batch %lld is negative (0 means symbolic \"N\")",
                        e->name, (long long)p->batch);
    if (p->classes < 0 || p->classes > D5__MAX_CLASSES)
        return d5_error(D5_ERR_RANGE, "model '%s': classes %lld is outside 0..%d (0: default %lld)",
                        e->name, (long long)p->classes, D5__MAX_CLASSES, (long long)e->classes);
    if (p->opset != 0 && (p->opset < e->min_opset || p->opset > D5__MAX_OPSET))
        return d5_error(D5_ERR_RANGE, "model '%s': opset %d is outside %d..%d (0: default %d)",
                        e->name, (int)p->opset, (int)e->min_opset, D5__MAX_OPSET, D5_DEFAULT_OPSET);
    const char *refused = NULL;
    if (p->sequence && !(e->sizes & K_SEQ)) refused = "sequence";
    if (p->layers && !(e->sizes & K_SIZE)) refused = "layer count";
    if (p->hidden && !(e->sizes & K_SIZE)) refused = "hidden width";
    if (p->heads && !(e->sizes & K_SIZE)) refused = "head count";
    if (refused)
        return d5_error(D5_ERR_RANGE,
                        "model '%s' takes no %s (a sequence: the bert and gpt2 models; layers, "
                        "hidden width and heads: those and the vit models)",
                        e->name, refused);
    if (p->sequence < 0 || p->layers < 0 || p->hidden < 0 || p->heads < 0)
        return d5_error(D5_ERR_RANGE, "model '%s': a negative transformer size", e->name);
    memset(b, 0, sizeof *b);
    b->net = NULL;
    b->seed = p->seed;
    b->batch = p->batch;
    b->classes = p->classes ? p->classes : e->classes;
    b->params = 0;
    b->model = e->name;
    b->sequence = p->sequence;
    b->layers = p->layers;
    b->hidden = p->hidden;
    b->heads = p->heads;
    *entry = e;
    return D5_OK;
}

d5_status d5_model_build(const char *name, const d5_model_params *p, d5_network **out)
{
    const model_entry *e;
    d5__mb b;
    if (!out) return d5_error(D5_ERR_INVALID, "d5_model_build: out is NULL");
    D5__TRY(prepare(name, p, &e, &b));
    const int32_t opset = p && p->opset ? p->opset : D5_DEFAULT_OPSET;
    D5__TRY(d5_network_create(e->name, &b.net));
    d5_status s = d5_network_set_opset(b.net, "", opset);
    if (s == D5_OK) s = e->build(&b, e->variant);
    if (s != D5_OK) {
        d5_network_free(b.net);
        return s;
    }
    *out = b.net;
    return D5_OK;
}

d5_status d5_model_param_elements(const char *name, const d5_model_params *p, int64_t *out)
{
    const model_entry *e;
    d5__mb b;
    if (!out) return d5_error(D5_ERR_INVALID, "d5_model_param_elements: out is NULL");
    D5__TRY(prepare(name, p, &e, &b));
    D5__TRY(e->build(&b, e->variant));
    *out = b.params;
    return D5_OK;
}
