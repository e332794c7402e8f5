#!/usr/bin/python3
"""bench/network/transformers.py: three small transformer models exported from
PyTorch (1.13, Debian's python3-torch) to ONNX (opset 17, fixed shapes), for
d5-bench-network's transformer cases and for `d5 onnx-test`.

    /usr/bin/python3 bench/network/transformers.py build/transformers
    d5 onnx-test build/transformers                 # d5 against PyTorch's outputs
    d5-bench-network --transformers-dir build/transformers --cases bert,gpt2,vit

Writes one folder per case, in the layout of ONNX's node tests:

    OUT/test_bert_b1/model.onnx        BERT-style encoder, batch 1
    OUT/test_bert_b8/model.onnx        the same at batch 8
    OUT/test_gpt2_b4/model.onnx        GPT-2-style decoder, causal mask, batch 4
    OUT/test_gpt2_s1024_b1/model.onnx  the same decoder on 1024 tokens, batch 1
    OUT/test_vit_b16/model.onnx        ViT-style classifier, batch 16
    OUT/test_*/test_data_set_0/input_0.pb, output_0.pb   PyTorch's input and output

The models are written out module by module, as the usual PyTorch code of
such models reads (no torch.nn.MultiheadAttention, whose export differs
between versions), so that the graph holds the operators those models
export: Gather (embeddings), LayerNormalization, MatMul with Add (Linear),
Split (fused query/key/value projection), Reshape and Transpose to and from
heads, Transpose of the keys, Div by sqrt(d), Softmax, Where (causal mask),
the Erf form of GELU, Conv (patches), Concat (class token).

    BERT  ids [B, 128] int64 (vocabulary 1000); hidden 256, 4 layers, 4 heads,
          feed-forward 1024, post-LN; output the last hidden state [B, 128, 256]
    GPT-2 ids [4, 64] int64 (vocabulary 1000); hidden 256, 4 layers, 4 heads,
          feed-forward 1024, pre-LN, causal mask; output logits [4, 64, 1000]
          (and ids [1, 1024]: logits [1, 1024, 1000], where d5 fuses attention)
    ViT   images [16, 3, 32, 32] float32, patch 4 (64 patches and a class
          token); hidden 256, 4 layers, 4 heads, feed-forward 1024, pre-LN;
          output logits [16, 10]

Weights are seeded (torch.manual_seed(1) before each model); the inputs of the
test data sets too. The expected outputs are computed in float64 from the same
weights and rounded to float32. Running it again rewrites the files with the same bytes.
"""
import copy
import math
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

OPSET = 17
VOCAB = 1000


class Attention(nn.Module):
    def __init__(self, hidden, heads, causal_len=0):
        super().__init__()
        self.heads = heads
        self.head = hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        if causal_len:
            mask = torch.tril(torch.ones(causal_len, causal_len, dtype=torch.bool))
            self.register_buffer("mask", mask.view(1, 1, causal_len, causal_len))
        else:
            self.mask = None

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head).transpose(1, 2)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=-1)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head)
        if self.mask is not None:
            w = torch.where(self.mask[:, :, :s, :s], w, torch.tensor(-1e4, dtype=w.dtype))
        p = torch.softmax(w, dim=-1)
        ctx = torch.matmul(p, v).transpose(1, 2).reshape(b, s, h)
        return self.proj(ctx)


class MLP(nn.Module):
    def __init__(self, hidden, ff):
        super().__init__()
        self.fc1 = nn.Linear(hidden, ff)
        self.act = nn.GELU()  # erf form: x * 0.5 * (1 + erf(x / sqrt(2)))
        self.fc2 = nn.Linear(ff, hidden)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class PostLNLayer(nn.Module):  # BERT
    def __init__(self, hidden, heads, ff):
        super().__init__()
        self.attn = Attention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.mlp = MLP(hidden, ff)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class PreLNLayer(nn.Module):  # GPT-2, ViT
    def __init__(self, hidden, heads, ff, causal_len=0):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = Attention(hidden, heads, causal_len)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-5)
        self.mlp = MLP(hidden, ff)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Bert(nn.Module):
    def __init__(self, seq, hidden=256, layers=4, heads=4, ff=1024):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, hidden)
        self.pos = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(PostLNLayer(hidden, heads, ff) for _ in range(layers))

    def forward(self, ids):
        x = self.ln(self.tok(ids) + self.pos)
        for layer in self.layers:
            x = layer(x)
        return x


class Gpt2(nn.Module):
    def __init__(self, seq, hidden=256, layers=4, heads=4, ff=1024):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, hidden)
        self.pos = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
        self.layers = nn.ModuleList(PreLNLayer(hidden, heads, ff, seq) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, ids):
        x = self.tok(ids) + self.pos
        for layer in self.layers:
            x = layer(x)
        return torch.matmul(self.ln(x), self.tok.weight.t())  # tied output projection


class Vit(nn.Module):
    def __init__(self, image=32, patch=4, hidden=256, layers=4, heads=4, ff=1024, classes=10):
        super().__init__()
        n = (image // patch) ** 2
        self.patch = nn.Conv2d(3, hidden, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, hidden) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, hidden) * 0.02)
        self.layers = nn.ModuleList(PreLNLayer(hidden, heads, ff) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln(x)[:, 0])


def cases():
    """(name, model builder, input builder) of each case."""

    def ids(batch, seq):
        return lambda g: torch.randint(0, VOCAB, (batch, seq), generator=g, dtype=torch.int64)

    return [
        ("bert_b1", lambda: Bert(128), ids(1, 128)),
        ("bert_b8", lambda: Bert(128), ids(8, 128)),
        ("gpt2_b4", lambda: Gpt2(64), ids(4, 64)),
        ("gpt2_s1024_b1", lambda: Gpt2(1024), ids(1, 1024)),
        ("vit_b16", lambda: Vit(), lambda g: torch.rand(16, 3, 32, 32, generator=g) * 2 - 1),
    ]


def write_tensor(path, array):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())


def export(out, name, build, make_input):
    folder = os.path.join(out, "test_" + name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    torch.manual_seed(1)
    model = build().eval()
    g = torch.Generator().manual_seed(2)
    x = make_input(g)
    with torch.no_grad():
        # The expected outputs in float64: PyTorch's float32 products round
        # differently from one CPU to another, by more than the test's
        # tolerance on the smallest logits.
        exact = copy.deepcopy(model).double()
        y = exact(x.double() if x.is_floating_point() else x)
    path = os.path.join(folder, "model.onnx")
    torch.onnx.export(model, (x,), path, opset_version=OPSET, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    write_tensor(os.path.join(data, "input_0.pb"), x.numpy())
    write_tensor(os.path.join(data, "output_0.pb"), y.numpy().astype(np.float32))
    ops = {}
    for node in onnx.load(path).graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))
    print(f"{path}: input {list(x.shape)} {x.dtype}, output {list(y.shape)}; {summary}")


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} OUT_DIR", file=sys.stderr)
        return 2
    torch.set_num_threads(2)
    for name, build, make_input in cases():
        export(sys.argv[1], name, build, make_input)
    return 0


if __name__ == "__main__":
    sys.exit(main())
