/* The registry of built-in models and d5_model_build. Adding a model is one
 * row of `models` and, for a new family, one file with its builder. */
#include "builder.h"

#include <stdio.h>
#include <string.h>

/* Which transformer sizes a model takes (d5_model_params). */
#define K_NONE 0
#define K_SEQ  1 /* sequence */
#define K_SIZE 2 /* layers, hidden, heads */

typedef struct model_entry {
    const char *name;
    d5_status (*build)(d5__mb *b, int32_t variant);
    int32_t variant;
    int64_t classes; /* default number of classes */
    int sizes;       /* K_* bits: the transformer sizes it takes */
    int32_t min_opset;
    const char *summary;
} model_entry;

#define B(family) d5__model_##family
#define T         (K_SEQ | K_SIZE)

/* name, builder, variant, default classes, transformer sizes taken, lowest opset, summary */
/* clang-format off */
static const model_entry models[] = {
    {"lenet", B(lenet), 0, 10, K_NONE, 7, "LeNet-5 for MNIST, input 1x28x28"},
    {"mlp", B(mlp), 0, 10, K_NONE, 7, "MLP 784-512-256 with ReLU for MNIST, input 1x28x28"},
    {"resnet18", B(resnet_imagenet), 18, 1000, K_NONE, 7, "ResNet-18 (torchvision), 3x224x224"},
    {"resnet34", B(resnet_imagenet), 34, 1000, K_NONE, 7, "ResNet-34 (torchvision), 3x224x224"},
    {"resnet50", B(resnet_imagenet), 50, 1000, K_NONE, 7, "ResNet-50 (torchvision), 3x224x224"},
    {"resnet20", B(resnet_cifar), 20, 10, K_NONE, 7, "CIFAR ResNet-20 (He et al.), 3x32x32"},
    {"resnet32", B(resnet_cifar), 32, 10, K_NONE, 7, "CIFAR ResNet-32 (He et al.), 3x32x32"},
    {"resnet44", B(resnet_cifar), 44, 10, K_NONE, 7, "CIFAR ResNet-44 (He et al.), 3x32x32"},
    {"resnet56", B(resnet_cifar), 56, 10, K_NONE, 7, "CIFAR ResNet-56 (He et al.), 3x32x32"},
    {"resnet18-cifar", B(resnet18_cifar), 0, 10, K_NONE, 7, "ResNet-18, 3x3 stem, 3x32x32"},
    {"wide-resnet-28-10", B(wrn), 2810, 10, K_NONE, 7, "pre-activation WRN-28-10, 3x32x32"},
    {"bert-tiny", B(bert), 0, 2, T, 17, "BERT, 2 layers of width 128, a classifier; ids [N,128]"},
    {"bert-base", B(bert), 1, 2, T, 17, "BERT-base, 12 layers of 768, a classifier; ids [N,128]"},
    {"gpt2-small", B(gpt2), 2, 50257, T, 17, "GPT-2 small, 12 layers of 768; ids [N,128]"},
    {"vit-tiny", B(vit), 3, 1000, K_SIZE, 17, "ViT (DeiT) tiny, 12 layers of 192, 3x224x224"},
    {"vit-b16", B(vit), 4, 1000, K_SIZE, 17, "ViT-B/16 (torchvision), 12 layers of 768, 3x224x224"},
};
/* clang-format on */

#undef B
#undef T

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
