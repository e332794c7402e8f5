#!/usr/bin/python3
"""Replays a `d5 train` run of LeNet on MNIST in PyTorch, step for step, and
compares the two loss curves: the same initial weights (the ONNX file of
`d5 model lenet --seed S`), the same batches in the same order (d5's shuffle,
a Fisher-Yates pass driven by xoshiro256** seeded through splitmix64 with
seed + epoch, epochs counted from 1, reproduced here), SGD with momentum.

    torch_trajectory.py D5_JSON MODEL.onnx MNIST_DIR [--seed S] [--lr 0.05]
                        [--momentum 0.9] [--batch 64] [--threads 2]

D5_JSON is the file of `d5 train --json` for the same seed (one epoch). Prints
the relative loss difference at chosen steps, the first step where it exceeds
1e-3, and both test accuracies. Float32 sums are not associative, so the two
runs agree to rounding at first and then drift apart as any two
implementations do; the first steps show whether d5 computes the same
forward, backward and update as PyTorch.
"""
import argparse
import json
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

import pytorch_lenet as P

MASK = (1 << 64) - 1


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & MASK


class Xoshiro256ss:
    """d5_rng (core/rng.c): xoshiro256** seeded with four splitmix64 outputs."""

    def __init__(self, seed):
        self.s = []
        x = seed & MASK
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & MASK
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
            self.s.append(z ^ (z >> 31))

    def next(self):
        s = self.s
        result = (rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        limit = MASK - MASK % n
        while True:
            x = self.next()
            if x < limit:
                return x % n


def d5_permutation(n, seed, epoch):
    """The order of d5's shuffled sampler (datasets/sampler.c) in an epoch."""
    rng = Xoshiro256ss(seed + epoch)
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("d5_json")
    ap.add_argument("model")
    ap.add_argument("mnist_dir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    d5 = json.load(open(a.d5_json))
    weights = {i.name: numpy_helper.to_array(i).copy() for i in onnx.load(a.model).graph.initializer}
    net = P.LeNet()
    layers = {"conv1": net.features[0], "conv2": net.features[3], "fc1": net.classifier[1],
              "fc2": net.classifier[3], "fc3": net.classifier[5]}
    with torch.no_grad():
        for name, layer in layers.items():
            layer.weight.copy_(torch.from_numpy(weights[name + ".weight"]))
            layer.bias.copy_(torch.from_numpy(weights[name + ".bias"]))

    x = P.read_idx(P.find(a.mnist_dir, "train-images-idx3-ubyte"))
    y = P.read_idx(P.find(a.mnist_dir, "train-labels-idx1-ubyte")).astype(np.int64)
    xt = torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)
    yt = torch.from_numpy(y)
    perm = torch.tensor(d5_permutation(len(x), a.seed, 1))
    opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for b in range(min(len(x) // a.batch, len(d5["losses"]))):
        idx = perm[b * a.batch:(b + 1) * a.batch]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(xt[idx]), yt[idx])
        loss.backward()
        opt.step()
        losses.append(loss.item())

    rel = [abs(p - q) / max(abs(q), 1e-12) for p, q in zip(losses, d5["losses"])]
    first = next((i for i, r in enumerate(rel) if r > 1e-3), None)
    print("%6s %14s %14s %12s" % ("step", "torch loss", "d5 loss", "rel diff"))
    for i in [0, 1, 2, 5, 10, 20, 50, 100, 200, 400, 800]:
        if i < len(rel):
            print("%6d %14.7f %14.7f %12.3g" % (i, losses[i], d5["losses"][i], rel[i]))
    print("first step with a relative difference above 1e-3: %s" %
          (first if first is not None else "none"))
    xs = P.read_idx(P.find(a.mnist_dir, "t10k-images-idx3-ubyte"))
    ys = P.read_idx(P.find(a.mnist_dir, "t10k-labels-idx1-ubyte")).astype(np.int64)
    correct = 0
    with torch.no_grad():
        for i in range(0, len(xs), 1000):
            out = net(torch.from_numpy(xs[i:i + 1000].astype(np.float32) / 255.0).unsqueeze(1))
            correct += int((out.argmax(1) == torch.from_numpy(ys[i:i + 1000])).sum())
    print("test accuracy after %d steps: torch %.2f%%, d5 %.2f%%" % (
        len(losses), 100.0 * correct / len(xs), 100.0 * d5["final_test_accuracy"]))


if __name__ == "__main__":
    sys.exit(main())
