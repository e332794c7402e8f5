/* d5 level 1: reference models built in C.
 *
 * Each model is a d5_network built through network.h with seeded random
 * weights, so that a benchmark needs no file and no Python to get a realistic
 * graph: LeNet-5 and an MLP for MNIST, torchvision's ImageNet ResNets, the
 * CIFAR ResNets of He et al. (2016), a CIFAR ResNet-18 and the wide ResNet
 * WRN-28-10; BERT, GPT-2 and ViT transformers. The same name, parameters
 * and seed give the same network, bit for bit, on every machine.
 *
 * Every model has one graph input "input" (float32 [N, C, H, W], or token
 * ids int64 [N, S] for bert and gpt2; N is the symbolic dimension "N" when
 * the batch is 0) and one graph output "logits" (float32 [N, classes], or
 * [N, S, vocabulary] for gpt2). The transformers (bert-tiny, bert-base,
 * gpt2-small, vit-tiny, vit-b16) are written as PyTorch exports them and
 * need opset 17 or later (LayerNormalization). Node names follow the module names of the PyTorch
 * definitions ("layer1.0.conv1") and initializer names their state_dict keys
 * ("layer1.0.conv1.weight", "layer1.0.bn1.running_mean"). Batch normalization
 * is in its inference form (scale 1, bias 0, mean 0, variance 1, epsilon
 * 1e-5); convolution weights are Kaiming-normal with fan-out (as torchvision
 * initializes them), fully connected layers (Gemm, transB = 1, weight
 * [out, in]) uniform in +-1/sqrt(fan_in) (PyTorch's default). docs/models.md
 * describes each model and its parameter count.
 *
 * The registry is read-only and thread safe; building is thread safe for
 * distinct output networks.
 */
#ifndef D5_MODELS_H
#define D5_MODELS_H

#include "d5/network.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct d5_model_params {
    int64_t batch;   /* size of the first input dimension; 0: the symbolic dimension "N" */
    int64_t classes; /* number of outputs; 0: the model's default (10 or 1000) */
    uint64_t seed;   /* seed of the weights (d5_rng) */
    int32_t opset;   /* ai.onnx opset written into the network; 0: D5_DEFAULT_OPSET */
    /* The transformers' sizes (0: the model's default); the other models
     * refuse them. sequence: tokens per input (bert, gpt2); layers: blocks;
     * hidden: the width (the heads then stay 64 wide unless heads is set). */
    int32_t layers;
    int32_t heads;
    int64_t sequence;
    int64_t hidden;
} d5_model_params;

/* batch 0 (symbolic), classes 0 (the model's default), seed 0, opset 0, and
 * every transformer size 0 (the model's default). */
D5_API d5_model_params d5_model_default_params(void);

/* Builds the model `name` ("lenet", "resnet50", see d5_model_name) into a new
 * network (free it with d5_network_free); p may be NULL for the defaults.
 * Statuses: D5_ERR_UNSUPPORTED for an unknown name (the message lists the
 * known ones); D5_ERR_RANGE for a negative batch, classes outside
 * 0..1,000,000, an opset outside 7..22 (the operators used mean the same
 * in all of them; 17..22 for the transformers), a transformer size the model
 * cannot take (a width the heads do not divide, a sequence beyond its
 * positions) or a transformer size given to another model; D5_ERR_NOMEM. *out is untouched on
 * failure. */
D5_API D5_NODISCARD d5_status d5_model_build(const char *name, const d5_model_params *p,
                                             d5_network **out);

/* Number of parameter elements (weights, biases, batch normalization scales
 * and shifts; not the running statistics) that d5_model_build would give,
 * computed without allocating the weights: PyTorch's count (11,689,512 for
 * resnet18). d5_network_param_elements on the built network also counts the
 * running statistics, which are floating-point initializers too. Same
 * statuses as d5_model_build. */
D5_API D5_NODISCARD d5_status d5_model_param_elements(const char *name, const d5_model_params *p,
                                                      int64_t *out);

/* The registry: number of models, and the name and a one-line summary of
 * model i (static strings; NULL for i outside 0..count-1). */
D5_API int32_t d5_model_count(void);
D5_API const char *d5_model_name(int32_t i);
D5_API const char *d5_model_summary(int32_t i);

#ifdef __cplusplus
}
#endif
#endif
