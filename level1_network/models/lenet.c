/* LeNet-5 (LeCun et al., "Gradient-based learning applied to document
 * recognition", 1998) in its common modern form for MNIST: ReLU instead of
 * scaled tanh, max pooling instead of trainable subsampling, and a first
 * convolution padded by 2 so that 28x28 digits take the place of the paper's
 * 32x32 ones.
 *
 *   input [N,1,28,28] -> conv1 (1->6, 5x5, pad 2) -> relu1 -> pool1 (2x2)
 *   -> conv2 (6->16, 5x5) -> relu2 -> pool2 (2x2) -> flatten [N,400]
 *   -> fc1 (400->120) -> relu3 -> fc2 (120->84) -> relu4 -> fc3 (84->classes)
 *
 * 61,706 parameters with 10 classes. The convolutions have biases (there is
 * no batch normalization). Every layer is initialized as PyTorch initializes
 * nn.Conv2d and nn.Linear (uniform in +-1/sqrt(fan_in)), the setting in which
 * LeNet-5 is usually trained and compared. */
#include "builder.h"

d5_status d5__model_lenet(d5__mb *b, int32_t variant)
{
    (void)variant;
    b->conv_torch_default = 1;
    D5__TRY(d5__mb_io(b, 1, 28, 28));
    D5__TRY(d5__mb_conv(b, "conv1", "input", 1, 6, 5, 1, 2, 1));
    D5__TRY(d5__mb_relu(b, "relu1", "conv1"));
    D5__TRY(d5__mb_maxpool(b, "pool1", "relu1", 2, 2, 0));
    D5__TRY(d5__mb_conv(b, "conv2", "pool1", 6, 16, 5, 1, 0, 1));
    D5__TRY(d5__mb_relu(b, "relu2", "conv2"));
    D5__TRY(d5__mb_maxpool(b, "pool2", "relu2", 2, 2, 0));
    D5__TRY(d5__mb_flatten(b, "flatten", "pool2"));
    D5__TRY(d5__mb_linear(b, "fc1", "flatten", 16 * 5 * 5, 120, NULL));
    D5__TRY(d5__mb_relu(b, "relu3", "fc1"));
    D5__TRY(d5__mb_linear(b, "fc2", "relu3", 120, 84, NULL));
    D5__TRY(d5__mb_relu(b, "relu4", "fc2"));
    return d5__mb_linear(b, "fc3", "relu4", 84, b->classes, "logits");
}
