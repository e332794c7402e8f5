#!/usr/bin/env bash
# The device check of d5's GPU parts, for a machine with an NVIDIA GPU: unpacks
# the bundle that scripts/gpu_bundle.sh made (or uses D5_GPU_PREFIX, an
# install of d5 built with CUDA), then, each step under its own time limit and
# the whole inside 8 minutes:
#   1. the GPU as d5 sees it (d5 machine: its peaks and bandwidth) beside an
#      8192^3 bf16 product and a copy timed by PyTorch, and nvidia-smi;
#   2. the device tests: test_level0_cuda (every cuda operator against ref),
#      the executor's device and backend tests, the CLI's backend tests;
#   3. every operator on the cuda backend against ref, forward and gradients
#      (d5 test-operator --all --backend cuda --gradient);
#   4. Gemm 8192^3 float32: d5 test-operator against a bare cuBLAS loop
#      (d5-bench-cublas-gemm), the ratio of the medians;
#   5. networks with every node on the GPU (d5 run --backend cuda,ref): CIFAR
#      ResNet-20 batch 128 and ResNet-50 batch 64 inference, copies and
#      FrameworkOverhead, beside PyTorch eager on the same GPU
#      (bench/gpu/torch_peer.py, float32 without TF32, cudnn.benchmark on);
#      a BERT-base-sized encoder (batch 32 x 128 tokens) exported by PyTorch
#      there, on d5 and on PyTorch eager;
#   6. LeNet on MNIST for one epoch on the GPU and on the CPU, same seed: the
#      test accuracies (the bundle carries MNIST).
# Everything is printed and kept in OUT (default /tmp/d5-gpu-check): the log,
# the JSON of every step and a summary table, summary.md.
#
#     scripts/gpu_check.sh [BUNDLE.tar.xz]    (default build/gpu-bundle/d5-gpu.tar.xz)
#
# Exit status: 0 every step ran and passed; 1 a step failed (the others still
# run); 2 no bundle and no D5_GPU_PREFIX.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/d5-gpu-check}
mkdir -p "$out"
log=$out/gpu_check.log
: >"$log"
say() { echo "$*" | tee -a "$log"; }
failed=0

bundle=${1:-$here/build/gpu-bundle/d5-gpu.tar.xz}
if [ -n "${D5_GPU_PREFIX:-}" ]; then
    prefix=$D5_GPU_PREFIX
elif [ -f "$bundle" ]; then
    prefix=/tmp/d5-gpu
    rm -rf "$prefix" && mkdir -p "$prefix" && tar -C "$prefix" -xJf "$bundle"
else
    echo "gpu_check.sh: no bundle at $bundle (make one with scripts/gpu_bundle.sh) and no" \
        "D5_GPU_PREFIX" >&2
    exit 2
fi

# CUDA's libraries: the toolkit's, then those of Python's nvidia-* packages
# (PyTorch's cuDNN, cuBLAS and NCCL), then the bundle's own.
cuda_libs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
    if [ -d "$d" ]; then cuda_libs="$cuda_libs:$d"; fi
done
py=$(command -v python3 || true)
if [ -n "$py" ]; then
    nv=$("$py" -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]) + "/nvidia")' \
        2>/dev/null || true)
    for d in "$nv"/*/lib; do
        if [ -d "$d" ]; then cuda_libs="$cuda_libs:$d"; fi
    done
fi
# Only d5's programs see the bundle's libraries: Python (PyTorch) keeps its own.
d5_path="$prefix/lib${cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run_d5=(env LD_LIBRARY_PATH="$d5_path" D5_PLUGIN_DIR="$prefix/lib/d5")
d5=$prefix/bin/d5
start=$(date +%s)

# step NAME SECONDS COMMAND...: runs it with its output in the log.
step() {
    local name=$1 limit=$2
    shift 2
    say ""
    say "== $name ($(($(date +%s) - start)) s in; limit ${limit} s)"
    timeout -k 5 "$limit" "$@" 2>&1 | tee -a "$log"
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        say "== $name: FAILED (exit $rc)"
        failed=1
    fi
    return 0
}

step "machine" 90 "${run_d5[@]}" "$d5" machine --time 0.5 --json "$out/machine.json"
if [ -n "$py" ]; then
    step "PyTorch bf16 8192^3 product and copy" 60 "$py" "$here/bench/gpu/torch_peer.py" --peaks \
        --time 1 --json "$out/torch_peaks.json"
fi
step "nvidia-smi" 20 nvidia-smi
for t in "$prefix"/tests/test_*; do
    [ -x "$t" ] || continue
    step "$(basename "$t")" 120 "${run_d5[@]}" D5_SIMDEV_LIB="$prefix/tests/libtest_simdev.so" "$t" \
        --jobs 1
done
step "operators on cuda against ref" 150 "${run_d5[@]}" "$d5" test-operator --all --backend cuda --gradient \
    --no-peak

step "Gemm 8192^3: d5" 60 "${run_d5[@]}" "$d5" test-operator Gemm --backend cuda --sizes M=8192,N=8192,K=8192 \
    --max-time 3 --no-peak --json "$out/gemm_d5.json"
step "Gemm 8192^3: bare cuBLAS loop" 60 "${run_d5[@]}" "$prefix/bin/d5-bench-cublas-gemm" 8192 8192 8192 \
    --reps 50 --json "$out/gemm_cublas.json"

models=$out/models
mkdir -p "$models"
step "model resnet20" 30 "${run_d5[@]}" "$d5" model resnet20 --batch 128 \
    -o "$models/resnet20.onnx"
step "model resnet50" 30 "${run_d5[@]}" "$d5" model resnet50 --batch 64 -o "$models/resnet50.onnx"
step "ResNet-20 b128 inference on cuda" 60 "${run_d5[@]}" "$d5" run "$models/resnet20.onnx" --backend cuda,ref \
    --time 3 --json "$out/run_resnet20.json"
step "ResNet-50 b64 inference on cuda" 90 "${run_d5[@]}" "$d5" run "$models/resnet50.onnx" --backend cuda,ref \
    --time 5 --json "$out/run_resnet50.json"
mnist=$prefix/share/d5/mnist
if [ -f "$mnist/train-images-idx3-ubyte" ]; then
    step "LeNet on MNIST, one epoch, on cuda" 120 "${run_d5[@]}" "$d5" train --model lenet \
        --dataset "mnist:$mnist" --epochs 1 --seed 1 --backend cuda,ref --json "$out/train_gpu.json"
    step "LeNet on MNIST, one epoch, on the CPU" 120 "${run_d5[@]}" "$d5" train --model lenet \
        --dataset "mnist:$mnist" --epochs 1 --seed 1 --json "$out/train_cpu.json"
fi
if [ -n "$py" ]; then
    step "PyTorch ResNet-50 b64 inference" 90 "$py" "$here/bench/gpu/torch_peer.py" \
        --model resnet50 --batch 64 --time 5 --json "$out/torch_resnet50.json"
    step "PyTorch BERT-base encoder b32 x 128 inference (and its export)" 150 "$py" \
        "$here/bench/gpu/torch_peer.py" --model bert-base --batch 32 --sequence 128 --time 5 \
        --onnx "$models/bert-base.onnx" --json "$out/torch_bert.json"
    if [ -f "$models/bert-base.onnx" ]; then
        step "BERT-base encoder b32 x 128 inference on cuda" 120 "${run_d5[@]}" "$d5" run \
            "$models/bert-base.onnx" --backend cuda,ref --time 5 --json "$out/run_bert.json"
    fi
fi

# The summary: ratios of medians from the JSON files (absent ones say so).
if [ -n "$py" ]; then
    "$py" - "$out" <<'EOF' | tee -a "$log" >"$out/summary.md"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
def median(doc, test):
    """The median (ns) of the first benchmark of a d5 JSON whose run_name passes test."""
    for b in (doc or {}).get("benchmarks", []):
        if b.get("aggregate_name") == "median" and test(b.get("run_name", "")):
            return b.get("real_time")
    return None
rows = []
gm = median(load("gemm_d5.json"), lambda n: n.startswith("Gemm/") and n.endswith("/cuda"))
c = load("gemm_cublas.json")
if gm and c:
    rows.append(("Gemm 8192^3 f32: d5 / bare cuBLAS", "%.3f" % (gm / c["median_ns"]), "<= 1.02"))
rm = median(load("run_resnet50.json"), lambda n: n == "run/inference")
t = load("torch_resnet50.json")
if rm and t:
    rows.append(("ResNet-50 b64 inference f32: d5 / PyTorch eager",
                 "%.3f (%.2f ms / %.2f ms)" % (rm / t["median_ns"], rm / 1e6, t["median_ns"] / 1e6),
                 "<= 1.0"))
m, tp = load("machine.json"), load("torch_peaks.json")
gp = (m or {}).get("gpu_peaks")
if gp and tp:
    bf = gp["products"]["BF16"]
    if bf.get("measured"):
        rows.append(("d5 machine BF16 peak / PyTorch bf16 8192^3",
                     "%.3f (%.0f / %.0f TFLOP/s)" % (bf["median_per_s"] / tp["bf16_matmul_8192_median_per_s"],
                                                     bf["median_per_s"] / 1e12,
                                                     tp["bf16_matmul_8192_median_per_s"] / 1e12),
                     "within 10%"))
    rows.append(("d5 machine copy bandwidth / PyTorch copy",
                 "%.3f (%.2f / %.2f TB/s)" % (gp["bandwidth_median_bytes_per_s"] / tp["copy_median_bytes_per_s"],
                                             gp["bandwidth_median_bytes_per_s"] / 1e12,
                                             tp["copy_median_bytes_per_s"] / 1e12),
                 "within 10%"))
rb, tb = median(load("run_bert.json"), lambda n: n == "run/inference"), load("torch_bert.json")
if rb and tb:
    rows.append(("BERT-base encoder b32 x 128 inference f32: d5 / PyTorch eager",
                 "%.3f (%.2f ms / %.2f ms)" % (rb / tb["median_ns"], rb / 1e6, tb["median_ns"] / 1e6),
                 "<= 1.1"))
tg, tc = load("train_gpu.json"), load("train_cpu.json")
if tg and tc and "final_test_accuracy" in tg and "final_test_accuracy" in tc:
    a, b = tg["final_test_accuracy"], tc["final_test_accuracy"]
    rows.append(("LeNet MNIST 1 epoch seed 1: test accuracy GPU - CPU",
                 "%+.2f points (%.2f%% / %.2f%%)" % (100 * (a - b), 100 * a, 100 * b),
                 "within 0.3 points"))
print("\n| check | measured | goal |\n| --- | --- | --- |")
for row in rows:
    print("| %s | %s | %s |" % row)
if not rows:
    print("| (no ratio: a step failed, see gpu_check.log) | | |")
EOF
fi
say ""
say "gpu_check.sh: $(($(date +%s) - start)) s; $([ $failed -eq 0 ] && echo "every step passed" || echo "some steps FAILED")"
exit $failed
