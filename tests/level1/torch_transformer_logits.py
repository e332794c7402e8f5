#!/usr/bin/python3
"""The logits that tests/level1/test_models.c checks d5's built-in transformers
against ("..._computes_what_torch_computes").

    /usr/bin/python3 tests/level1/torch_transformer_logits.py [D5_BINARY]

Writes each model with `d5 model NAME --seed 3 --batch 1 OPTIONS -o FILE` (the
weights the test's build makes), computes the model in PyTorch in float64 from
its definition (BERT as Hugging Face's BertModel with a classifier on the
pooled first token, GPT-2 as GPT2LMHeadModel with the tied output projection,
ViT as torchvision's vit_b_16), reading every parameter from the ONNX file by
name (each must be read, and nothing else but d5's constants "const.*" may be
left), and prints ten logits as the C initializers of the test: the first ten
for BERT and ViT; for GPT-2 five of the first token (which sees only itself
through the causal mask) and five of the last.

Inputs: token ids ids[i] = (37 i) mod 1000, images x[i] = ((37 i) mod 101) / 50 - 1
(i over the flattened input). Needs Debian's python3-torch and python3-onnx
(/usr/bin/python3).
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
D5 = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "../../build/release/d5")


class Params:
    """The file's float initializers, each marked when the model reads it."""

    def __init__(self, path):
        self.inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        return torch.from_numpy(self.inits[name].astype(np.float64))

    def check_all_read(self, model):
        left = {k for k in self.inits if k not in self.read and not k.startswith("const.")}
        if left:
            sys.exit("%s: parameters the definition does not read: %s" % (model, sorted(left)[:5]))


def linear(P, name, x):
    """A projection stored [in, out], as exporters write nn.Linear for MatMul."""
    return x @ P[name + ".weight"] + P[name + ".bias"]


def gemm(P, name, x):
    """nn.Linear as Gemm: weight [out, in]."""
    return x @ P[name + ".weight"].t() + P[name + ".bias"]


def norm(P, name, x, eps):
    return F.layer_norm(x, x.shape[-1:], P[name + ".weight"], P[name + ".bias"], eps)


def attend(q, k, v, heads, causal):
    b, s, h = q.shape
    d = h // heads

    def split(t):
        return t.view(b, s, heads, d).transpose(1, 2)

    w = split(q) @ split(k).transpose(-1, -2) / math.sqrt(d)
    if causal:
        w = w.masked_fill(~torch.tril(torch.ones(s, s, dtype=torch.bool)), -torch.inf)
    return (torch.softmax(w, dim=-1) @ split(v)).transpose(1, 2).reshape(b, s, h)


def bert(P, ids, heads):
    s = ids.shape[1]
    x = (P["embeddings.word_embeddings.weight"][ids] +
         P["embeddings.position_embeddings.weight"][:s] +
         P["embeddings.token_type_embeddings.weight"][0])
    x = norm(P, "embeddings.LayerNorm", x, 1e-12)
    layer = 0
    while "encoder.layer.%d.attention.self.query.weight" % layer in P.inits:
        p = "encoder.layer.%d" % layer
        q, k, v = (linear(P, "%s.attention.self.%s" % (p, n), x) for n in ("query", "key", "value"))
        a = linear(P, p + ".attention.output.dense", attend(q, k, v, heads, False))
        x = norm(P, p + ".attention.output.LayerNorm", a + x, 1e-12)
        f = linear(P, p + ".output.dense", F.gelu(linear(P, p + ".intermediate.dense", x)))
        x = norm(P, p + ".output.LayerNorm", f + x, 1e-12)
        layer += 1
    pooled = torch.tanh(gemm(P, "pooler.dense", x[:, 0]))
    return gemm(P, "classifier", pooled)


def blocks(P, x, prefix, names, heads, causal, eps, approximate):
    """Pre-LN blocks; names: ln_1, qkv, out, ln_2, fc1, fc2 under each block."""
    layer = 0
    while (prefix % layer) + "." + names[0] + ".weight" in P.inits:
        p = (prefix % layer) + "."
        q, k, v = linear(P, p + names[1], norm(P, p + names[0], x, eps)).chunk(3, dim=-1)
        x = x + linear(P, p + names[2], attend(q, k, v, heads, causal))
        h = F.gelu(linear(P, p + names[4], norm(P, p + names[3], x, eps)), approximate=approximate)
        x = x + linear(P, p + names[5], h)
        layer += 1
    return x


def gpt2(P, ids, heads):
    s = ids.shape[1]
    x = P["transformer.wte.weight"][ids] + P["transformer.wpe.weight"][:s]
    x = blocks(P, x, "transformer.h.%d", ("ln_1", "attn.c_attn", "attn.c_proj", "ln_2",
                                           "mlp.c_fc", "mlp.c_proj"), heads, True, 1e-5, "tanh")
    x = norm(P, "transformer.ln_f", x, 1e-5)
    return x @ P["transformer.wte.weight"].t()


def vit(P, img, heads):
    w = P["conv_proj.weight"]
    x = F.conv2d(img, w, P["conv_proj.bias"], stride=w.shape[-1]).flatten(2).transpose(1, 2)
    cls = P["class_token.weight"].expand(x.shape[0], -1, -1)
    x = torch.cat([cls, x], dim=1) + P["encoder.pos_embedding.weight"]
    x = blocks(P, x, "encoder.layers.encoder_layer_%d", ("ln_1", "self_attention.in_proj",
                                                          "self_attention.out_proj", "ln_2",
                                                          "mlp.0", "mlp.3"), heads, False, 1e-6,
               "none")
    return gemm(P, "heads.head", norm(P, "encoder.ln", x, 1e-6)[:, 0])


# name, d5 model options, heads, function, input shape, token ids (else an image)
MODELS = [
    ("bert-tiny", [], 2, bert, (1, 128), True),
    ("gpt2-small", ["--layers", "1", "--hidden", "64", "--heads", "4", "--sequence", "16",
                    "--classes", "1000"], 4, gpt2, (1, 16), True),
    ("vit-tiny", ["--layers", "1"], 3, vit, (1, 3, 224, 224), False),
]


def logits(name, options, heads, model, shape, tokens, folder):
    path = os.path.join(folder, name + ".onnx")
    subprocess.run([D5, "model", name, "--seed", "3", "--batch", "1"] + options + ["-o", path],
                   check=True, stdout=subprocess.DEVNULL)
    P = Params(path)
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    if tokens:
        x = torch.from_numpy(((37 * i) % 1000).reshape(shape))
    else:
        x = ((37 * i) % 101 / 50.0 - 1.0).astype(np.float32).astype(np.float64)
        x = torch.from_numpy(x.reshape(shape))
    with torch.no_grad():
        y = model(P, x, heads)
    P.check_all_read(name)
    if y.dim() == 3:  # GPT-2: the first token's and the last token's logits
        return y[0, 0, :5].tolist() + y[0, -1, :5].tolist()
    return y[0, :10].tolist()


def main():
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        for name, options, heads, model, shape, tokens in MODELS:
            y = logits(name, options, heads, model, shape, tokens, folder)
            print("%s: static const double want[10] = {%s};" % (
                name, ", ".join("%.6f" % v for v in y)))


if __name__ == "__main__":
    main()
