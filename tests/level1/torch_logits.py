#!/usr/bin/python3
"""The logits that tests/level1/test_models.c checks d5's built-in models
against ("..._computes_what_torch_computes").

    /usr/bin/python3 tests/level1/torch_logits.py [D5_BINARY]

For LeNet-5, ResNet-20, ResNet-50 and WRN-28-10: writes the model with
`d5 model NAME --seed 3 --batch 1 -o FILE` (the weights the test's build(name,
1, 0, 3) makes), defines the same network as a PyTorch nn.Module (the usual
definitions: torchvision's ResNet-50 with Bottleneck blocks, the CIFAR ResNet
with BasicBlocks and a 1x1 convolution shortcut, the authors' pre-activation
WRN), loads the ONNX initializers as its state_dict (every key must match,
with the same shape; only BatchNorm's num_batches_tracked is PyTorch's own),
runs it in float64 in evaluation mode on x[i] = ((37 i) mod 101) / 50 - 1 (i
over the flattened input, as float32 first, as the test feeds it) and prints
the first ten logits as the C initializers of the test.

Needs Debian's python3-torch and python3-onnx (/usr/bin/python3, not another
python on PATH). ResNet-50 and WRN-28-10 take a few seconds each on one core.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
D5 = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "../../build/release/d5")


class LeNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def shortcut(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, width, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.downsample = shortcut(cin, width, stride) if stride != 1 or cin != width else None

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (self.downsample(x) if self.downsample else x))


class Bottleneck(nn.Module):
    """torchvision's (ResNet v1.5: the stride on the 3x3 convolution)."""
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.downsample = shortcut(cin, cout, stride) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return torch.relu(y + (self.downsample(x) if self.downsample else x))


class ResNet(nn.Module):
    def __init__(self, block, blocks, widths, imagenet, classes):
        super().__init__()
        stem = 64 if imagenet else 16
        self.imagenet = imagenet
        self.conv1 = nn.Conv2d(3, stem, 7, 2, 3, bias=False) if imagenet else \
            nn.Conv2d(3, stem, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem)
        c = stem
        for s, (n, w) in enumerate(zip(blocks, widths)):
            layer = []
            for k in range(n):
                layer.append(block(c, w, 2 if k == 0 and s > 0 else 1))
                c = w * block.expansion
            setattr(self, "layer%d" % (s + 1), nn.Sequential(*layer))
        self.stages = len(blocks)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        if self.imagenet:
            x = torch.max_pool2d(x, 3, 2, 1)
        for s in range(self.stages):
            x = getattr(self, "layer%d" % (s + 1))(x)
        return self.fc(torch.flatten(torch.mean(x, (2, 3), keepdim=True), 1))


class WideBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, bias=False) \
            if cin != cout or stride != 1 else None

    def forward(self, x):
        a = torch.relu(self.bn1(x))
        y = self.conv2(torch.relu(self.bn2(self.conv1(a))))
        return y + (self.shortcut(a) if self.shortcut else x)


class WideResNet(nn.Module):
    def __init__(self, depth, k, classes):
        super().__init__()
        n = (depth - 4) // 6
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        c = 16
        for g, w in enumerate((16 * k, 32 * k, 64 * k)):
            blocks = []
            for i in range(n):
                blocks.append(WideBlock(c, w, 2 if i == 0 and g > 0 else 1))
                c = w
            setattr(self, "block%d" % (g + 1), nn.Sequential(*blocks))
        self.bn = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.block3(self.block2(self.block1(self.conv1(x))))
        x = torch.relu(self.bn(x))
        return self.fc(torch.flatten(torch.mean(x, (2, 3), keepdim=True), 1))


MODELS = [
    ("lenet", lambda: LeNet(10), (1, 1, 28, 28)),
    ("resnet20", lambda: ResNet(BasicBlock, (3, 3, 3), (16, 32, 64), False, 10), (1, 3, 32, 32)),
    ("resnet50", lambda: ResNet(Bottleneck, (3, 4, 6, 3), (64, 128, 256, 512), True, 1000),
     (1, 3, 224, 224)),
    ("wide-resnet-28-10", lambda: WideResNet(28, 10, 10), (1, 3, 32, 32)),
]


def logits(name, make, shape, folder):
    path = os.path.join(folder, name + ".onnx")
    subprocess.run([D5, "model", name, "--seed", "3", "--batch", "1", "-o", path], check=True,
                   stdout=subprocess.DEVNULL)
    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    model = make().double().eval()
    want = {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
    if set(want) != set(inits):
        sys.exit("%s: keys differ: only in PyTorch %s, only in the ONNX file %s" % (
            name, sorted(set(want) - set(inits))[:5], sorted(set(inits) - set(want))[:5]))
    for k, v in want.items():
        if tuple(v.shape) != inits[k].shape:
            sys.exit("%s: %s has shape %s in PyTorch, %s in the file" % (
                name, k, tuple(v.shape), inits[k].shape))
    model.load_state_dict({k: torch.from_numpy(inits[k].astype(np.float64)) for k in want},
                          strict=False)
    n = int(np.prod(shape))
    x = (((37 * np.arange(n, dtype=np.int64)) % 101) / 50.0 - 1.0).astype(np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x.astype(np.float64).reshape(shape)))
    return y[0, :10].tolist()


def main():
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        for name, make, shape in MODELS:
            y = logits(name, make, shape, folder)
            print("%s: static const double want[10] = {%s};" % (
                name, ", ".join("%.6f" % v for v in y)))


if __name__ == "__main__":
    main()
