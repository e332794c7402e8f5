#!/usr/bin/python3
"""The PyTorch side of bench/training's transformer step: bert-tiny on Debian's
python3-torch (CPU).

    pytorch_bert.py [--threads 2] [--batch 8] [--sequence 128] [--lr 0.05]
                    [--momentum 0.9] [--seed 1] [--warmup 10] [--steps 60]

Prints one JSON line: the wall time of single training steps (zero the
gradients, forward, cross-entropy loss, backward, SGD step with momentum) on
one fixed batch of random token ids after `--warmup` untimed steps, in
nanoseconds.

The network is the one `d5 model bert-tiny` writes
(level1_network/models/transformer.c), module by module: word, position and
token type embeddings (token type 0) added and normalized (LayerNorm, epsilon
1e-12); two post-LN layers of width 128 with 2 heads (query, key and value
projections, scores divided by sqrt(64), softmax, the output projection, the
residual and LayerNorm; a feed-forward block of width 512 with GELU in its Erf
form, the residual and LayerNorm); the pooler (first token, dense, tanh) and a
classifier of 2 outputs. The script refuses to time a network whose parameter
count is not d5's 4,386,178.
"""
import argparse
import math
import sys

import torch
import torch.nn as nn
from torch_steps import print_steps, time_steps

D5_BERT_TINY_PARAMETERS = 4386178
VOCAB, POSITIONS, HIDDEN, LAYERS, HEADS, FF, CLASSES = 30522, 512, 128, 2, 2, 512, 2


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(HIDDEN, HIDDEN)
        self.key = nn.Linear(HIDDEN, HIDDEN)
        self.value = nn.Linear(HIDDEN, HIDDEN)
        self.attention_output = nn.Linear(HIDDEN, HIDDEN)
        self.attention_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.intermediate = nn.Linear(HIDDEN, FF)
        self.output = nn.Linear(FF, HIDDEN)
        self.output_norm = nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, x):
        b, s, h = x.shape
        d = h // HEADS

        def heads(t):
            return t.view(b, s, HEADS, d).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        ctx = (w @ v).transpose(1, 2).reshape(b, s, h)
        x = self.attention_norm(self.attention_output(ctx) + x)
        return self.output_norm(self.output(nn.functional.gelu(self.intermediate(x))) + x)


class BertTiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, HIDDEN)
        self.position = nn.Embedding(POSITIONS, HIDDEN)
        self.token_type = nn.Embedding(2, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.pooler = nn.Linear(HIDDEN, HIDDEN)
        self.classifier = nn.Linear(HIDDEN, CLASSES)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.word(ids) + self.position.weight[:s] + self.token_type.weight[0]
        x = self.norm(x)
        for layer in self.layers:
            x = layer(x)
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--sequence", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=60)
    a = ap.parse_args()
    if a.threads < 1 or a.batch < 1 or a.steps < 1 or a.warmup < 0 or not 1 <= a.sequence <= 512:
        sys.exit("pytorch_bert.py: --threads, --batch and --steps must be >= 1, --warmup >= 0, "
                 "--sequence in 1..512")
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = BertTiny()
    params = sum(p.numel() for p in model.parameters())
    if params != D5_BERT_TINY_PARAMETERS:
        sys.exit("pytorch_bert.py: the network has %d parameters, d5's bert-tiny has %d"
                 % (params, D5_BERT_TINY_PARAMETERS))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = nn.CrossEntropyLoss()
    ids = torch.randint(0, VOCAB, (a.batch, a.sequence))
    y = torch.randint(0, CLASSES, (a.batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(ids), y)
        loss.backward()
        opt.step()
        return loss

    samples = time_steps(step, a.warmup, a.steps)
    print_steps(samples, threads=a.threads, batch=a.batch, parameters=params, warmup=a.warmup)


if __name__ == "__main__":
    main()
