/* A multilayer perceptron for MNIST, the usual first network of a tutorial:
 *
 *   input [N,1,28,28] -> flatten [N,784] -> fc1 (784->512) -> relu1
 *   -> fc2 (512->256) -> relu2 -> fc3 (256->classes)
 *
 * 535,818 parameters with 10 classes. */
#include "builder.h"

d5_status d5__model_mlp(d5__mb *b, int32_t variant)
{
    (void)variant;
    D5__TRY(d5__mb_io(b, 1, 28, 28));
    D5__TRY(d5__mb_flatten(b, "flatten", "input"));
    D5__TRY(d5__mb_linear(b, "fc1", "flatten", 28 * 28, 512, NULL));
    D5__TRY(d5__mb_relu(b, "relu1", "fc1"));
    D5__TRY(d5__mb_linear(b, "fc2", "relu1", 512, 256, NULL));
    D5__TRY(d5__mb_relu(b, "relu2", "fc2"));
    return d5__mb_linear(b, "fc3", "relu2", 256, b->classes, "logits");
}
