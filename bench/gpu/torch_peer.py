#!/usr/bin/env python3
"""PyTorch eager on the GPU: the peer of `d5 run MODEL --backend cuda,ref` in
scripts/gpu_check.sh.

Times inference of torchvision's ResNet-50 (or ResNet-18) at a batch size, and
optionally one training step (forward, cross-entropy, backward, SGD), in
float32 with TF32 off (d5's cuda backend computes in float32 FMA math) and
cudnn.benchmark on, or in bfloat16 under autocast. Each repetition is timed
alone with CUDA events after warm-up; the median, its 95% confidence interval
(order statistics, as d5's) and the repetitions are printed as one JSON line,
and written to --json.

    python3 bench/gpu/torch_peer.py --model resnet50 --batch 64 [--train]
        [--precision f32|bf16] [--compile] [--time S] [--json FILE]

--model bert-base is a BERT-base-sized encoder written here in plain torch
(hidden 768, 12 heads, 12 layers, GELU in its erf form, post-LayerNorm) on
token embeddings of --sequence positions (default 128); --onnx FILE exports
it first (opset 17, the weights the eager model times) for `d5 run`.

With --peaks it times instead what `d5 machine` measures: an 8192^3 bfloat16
product (torch.mm on random data) and a 1 GiB device-to-device copy (bytes
read plus written), for d5's GPU peaks to be checked against.
"""
import argparse
import json
import math
import sys
import time


def median_ci(xs):
    """Median and the 95% interval of order statistics around it."""
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)) - 1)
    hi = min(n - 1, int(math.ceil(n / 2 + half)))
    return med, xs[lo], xs[hi]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50", choices=["resnet18", "resnet50", "bert-base"])
    p.add_argument("--sequence", type=int, default=128, help="bert-base: tokens per sample")
    p.add_argument("--onnx", help="bert-base: export the model to this ONNX file first")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--train", action="store_true", help="time a training step instead")
    p.add_argument("--precision", default="f32", choices=["f32", "bf16"])
    p.add_argument("--compile", action="store_true", help="torch.compile the model first")
    p.add_argument("--time", type=float, default=3.0, help="seconds of timed repetitions")
    p.add_argument("--json", help="write the result here too")
    p.add_argument("--peaks", action="store_true", help="time a bf16 product and a copy instead")
    a = p.parse_args()

    import torch
    import torchvision

    if not torch.cuda.is_available():
        print("torch_peer.py: no CUDA device", file=sys.stderr)
        return 1
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    dev = torch.device("cuda")
    if a.peaks:
        return peaks(torch, dev, a)
    if a.model == "bert-base":
        model = encoder(torch).to(dev)
        x = torch.randint(0, 30522, (a.batch, a.sequence), device=dev)
        a.classes = 2
    else:
        model = getattr(torchvision.models, a.model)(weights=None, num_classes=a.classes).to(dev)
        x = torch.randn(a.batch, 3, 224, 224, device=dev)
    model.train(a.train)
    if a.onnx:
        export(torch, model, x, a.onnx)
    y = torch.randint(0, a.classes, (a.batch,), device=dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01) if a.train else None
    run = torch.compile(model) if a.compile else model
    dtype = torch.bfloat16 if a.precision == "bf16" else None

    def step():
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            if a.train:
                loss = torch.nn.functional.cross_entropy(run(x), y)
        if a.train:
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        else:
            with torch.no_grad(), torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                run(x)

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.monotonic()
    while (time.monotonic() - t0 < a.time or len(times) < 10) and len(times) < 100000:
        start.record()
        step()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e6)  # ns
    med, lo, hi = median_ci(times)
    out = {
        "peer": "pytorch %s eager%s" % (torch.__version__, " + torch.compile" if a.compile else ""),
        "model": a.model, "batch": a.batch, "mode": "train_step" if a.train else "inference",
        "precision": a.precision, "median_ns": med, "ci_low_ns": lo, "ci_high_ns": hi,
        "reps": len(times), "device": torch.cuda.get_device_name(0),
    }
    print(json.dumps(out))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)
    return 0


def encoder(torch, hidden=768, heads=12, layers=12, vocab=30522, classes=2):
    """A BERT-base-sized encoder: embeddings, post-LN layers, a classifier."""
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(3))
            self.out = nn.Linear(hidden, hidden)
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.up, self.down = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

        def forward(self, h):
            b, t, _ = h.shape
            q, k, v = (m(h).reshape(b, t, heads, hidden // heads).transpose(1, 2) for m in self.qkv)
            w = torch.softmax(q @ k.transpose(-1, -2) / (hidden // heads) ** 0.5, dim=-1)
            att = (w @ v).transpose(1, 2).reshape(b, t, hidden)
            h = self.ln1(h + self.out(att))
            return self.ln2(h + self.down(torch.nn.functional.gelu(self.up(h))))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))
            self.head = nn.Linear(hidden, classes)

        def forward(self, tokens):
            h = self.embed(tokens)
            for layer in self.layers:
                h = layer(h)
            return self.head(h[:, 0])

    return Encoder()


def export(torch, model, x, path):
    """Exports with the TorchScript exporter where this PyTorch has it."""
    model.eval()
    with torch.no_grad():
        try:
            torch.onnx.export(model, (x,), path, opset_version=17, dynamo=False,
                              input_names=["input"], output_names=["logits"])
        except TypeError:
            torch.onnx.export(model, (x,), path, opset_version=17,
                              input_names=["input"], output_names=["logits"])


def timed(torch, fn, seconds):
    """Median and best seconds of fn, each run timed alone with CUDA events."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times, t0 = [], time.monotonic()
    while time.monotonic() - t0 < seconds or len(times) < 5:
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e-3)
    return median_ci(times)[0], min(times)


def peaks(torch, dev, a):
    n = 8192
    x = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    y = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    med, best = timed(torch, lambda: torch.mm(x, y), a.time)
    del x, y
    src = torch.ones(1 << 28, device=dev, dtype=torch.float32)  # 1 GiB
    dst = torch.empty_like(src)
    cmed, cbest = timed(torch, lambda: dst.copy_(src), a.time)
    out = {
        "peer": "pytorch %s" % torch.__version__, "device": torch.cuda.get_device_name(0),
        "bf16_matmul_8192_median_per_s": 2.0 * n ** 3 / med,
        "bf16_matmul_8192_best_per_s": 2.0 * n ** 3 / best,
        "copy_bytes": 1 << 30, "copy_median_bytes_per_s": 2.0 * (1 << 30) / cmed,
        "copy_best_bytes_per_s": 2.0 * (1 << 30) / cbest,
    }
    print(json.dumps(out))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
