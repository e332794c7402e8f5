#!/usr/bin/python3
"""The PyTorch side of bench/training: LeNet-5 on MNIST with the setting of
d5's training benchmark, on Debian's python3-torch (CPU).

    pytorch_lenet.py MNIST_DIR [--threads 2] [--epochs 1] [--batch 64] [--lr 0.05]
                     [--momentum 0.9] [--seed 1] [--steps 200]

Prints one JSON line: the epoch's wall time (batches gathered from the
training set converted to one float tensor beforehand; evaluation excluded), the test accuracy after each epoch, and the wall time of single
training steps (forward, loss, backward, optimizer) on one fixed batch after a
warm-up, so that d5 can compare the step time sample by sample.

The network is the one d5's model builder writes (d5 model lenet): Conv(1->6,
5x5, pad 2), ReLU, MaxPool 2, Conv(6->16, 5x5), ReLU, MaxPool 2, Flatten,
Linear 400->120, ReLU, Linear 120->84, ReLU, Linear 84->10. Images are scaled
to [0, 1] like d5's MNIST reader; batches are shuffled, the last partial batch
is dropped (d5 does the same).
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(dirname, stem):
    for name in (stem, stem + ".gz"):
        path = os.path.join(dirname, name)
        if os.path.exists(path):
            return path
    sys.exit("pytorch_lenet.py: %s not found in %s" % (stem, dirname))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mnist_dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)

    x_train = read_idx(find(a.mnist_dir, "train-images-idx3-ubyte"))
    y_train = read_idx(find(a.mnist_dir, "train-labels-idx1-ubyte")).astype(np.int64)
    x_test = read_idx(find(a.mnist_dir, "t10k-images-idx3-ubyte"))
    y_test = read_idx(find(a.mnist_dir, "t10k-labels-idx1-ubyte")).astype(np.int64)
    to_tensor = lambda x: torch.from_numpy(x.astype(np.float32) / 255.0).unsqueeze(1)

    model = LeNet()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    # The whole training set as one float tensor, converted once (d5's reader
    # converts bytes per batch, which costs it more, not less).
    xt, yt = to_tensor(x_train), torch.from_numpy(y_train)
    epochs = []
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        perm = torch.from_numpy(rng.permutation(len(x_train)))
        nb = len(x_train) // a.batch
        for b in range(nb):
            idx = perm[b * a.batch:(b + 1) * a.batch]
            step(xt[idx], yt[idx])
        seconds = time.perf_counter() - t0
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(x_test), 1000):
                out = model(to_tensor(x_test[i:i + 1000]))
                correct += int((out.argmax(1) == torch.from_numpy(y_test[i:i + 1000])).sum())
        model.train()
        epochs.append({"epoch": epoch + 1, "seconds": seconds,
                       "test_accuracy": correct / len(x_test)})

    # Single steps on one fixed batch (the batch conversion excluded).
    x = to_tensor(x_train[:a.batch])
    y = torch.from_numpy(y_train[:a.batch])
    for _ in range(20):
        step(x, y)
    samples = []
    for _ in range(a.steps):
        t0 = time.perf_counter_ns()
        step(x, y)
        samples.append(time.perf_counter_ns() - t0)
    print(json.dumps({"torch": torch.__version__, "threads": a.threads, "epochs": epochs,
                      "step_ns": samples}))


if __name__ == "__main__":
    main()
