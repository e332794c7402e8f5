#!/usr/bin/python3
"""The PyTorch side of bench/training's step comparison: CIFAR ResNet-20 on
Debian's python3-torch (CPU).

    pytorch_resnet.py [--threads 2] [--batch 32] [--lr 0.05] [--momentum 0.9]
                      [--seed 1] [--warmup 10] [--steps 100] [--classes 10]

Prints one JSON line: the wall time of single training steps (zero the
gradients, forward, cross-entropy loss, backward, SGD step with momentum) on
one fixed random batch after `--warmup` untimed steps, in nanoseconds, so that
d5's step times can be compared with them sample by sample.

The network is the one d5's model builder writes (d5 model resnet20,
level1_network/models/resnet.c): a 3x3 convolution with 16 channels, batch
normalization and ReLU; three stages of three BasicBlocks (conv 3x3, BN, ReLU,
conv 3x3, BN, add the shortcut, ReLU) with 16, 32 and 64 channels, the first
block of the second and third stage with stride 2 and a shortcut of a 1x1
convolution with the stride and batch normalization; global average pooling
and a linear layer 64 -> 10. Convolutions have no bias; batch normalization
has epsilon 1e-5 and torch's momentum 0.1 (ONNX's 0.9) and trains with batch
statistics. The initialization follows d5's (convolutions normal with standard
deviation sqrt(2 / (out channels * k * k)), BN scale 1 and shift 0, the linear
layer uniform in +-1/sqrt(64)); it does not affect the step time. The script
refuses to time a network whose parameter count is not d5's 272,474.
"""
import argparse
import sys

import torch
import torch.nn as nn
from torch_steps import print_steps, time_steps

D5_RESNET20_PARAMETERS = 272474


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return torch.relu(y + shortcut)


class ResNetCifar(nn.Module):
    """The 6n+2-layer CIFAR ResNet with option-B shortcuts (n = 3: ResNet-20)."""

    def __init__(self, n=3, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        blocks, cin = [], 16
        for stage, width in enumerate((16, 32, 64)):
            for k in range(n):
                blocks.append(BasicBlock(cin, width, 2 if k == 0 and stage > 0 else 1))
                cin = width
        self.blocks = nn.Sequential(*blocks)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.avgpool(self.blocks(x))
        return self.fc(torch.flatten(x, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--classes", type=int, default=10)
    a = ap.parse_args()
    if a.threads < 1 or a.batch < 1 or a.steps < 1 or a.warmup < 0:
        sys.exit("pytorch_resnet.py: --threads, --batch and --steps must be >= 1, --warmup >= 0")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    model = ResNetCifar(3, a.classes)
    params = sum(p.numel() for p in model.parameters())
    if a.classes == 10 and params != D5_RESNET20_PARAMETERS:
        sys.exit("pytorch_resnet.py: the network has %d parameters, d5's resnet20 has %d"
                 % (params, D5_RESNET20_PARAMETERS))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(a.batch, 3, 32, 32)
    y = torch.randint(0, a.classes, (a.batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    samples = time_steps(step, a.warmup, a.steps)
    print_steps(samples, threads=a.threads, batch=a.batch, parameters=params,
                mkldnn=torch.backends.mkldnn.is_available(), warmup=a.warmup)


if __name__ == "__main__":
    main()
