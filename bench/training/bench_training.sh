#!/usr/bin/env bash
# LeNet-5 on MNIST, d5 against PyTorch (Debian's python3-torch, CPU), in one
# run: SGD with momentum 0.9, learning rate 0.05, batch 64, one epoch, the same
# number of threads on both sides. Prints each side's epoch time and test
# accuracy, the ratio of epoch times, and the ratio of median training-step
# times (d5's BATCH region against PyTorch's timed steps).
#
#   bench/training/bench_training.sh [D5_BINARY] [THREADS] [SEEDS]
#
# MNIST comes from scripts/setup_data.sh (data/mnist, or $D5_DATA_DIR/mnist).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
d5=${1:-$root/build/release/d5}
threads=${2:-2}
seeds=${3:-1 2 3}
mnist=${D5_DATA_DIR:-$root/data}/mnist
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -x "$d5" ] || { echo "bench_training.sh: no d5 binary at $d5" >&2; exit 2; }
[ -e "$mnist/train-images-idx3-ubyte" ] || [ -e "$mnist/train-images-idx3-ubyte.gz" ] ||
    { echo "bench_training.sh: MNIST not found in $mnist (run scripts/setup_data.sh)" >&2; exit 2; }

echo "# LeNet-5 / MNIST, SGD momentum 0.9, lr 0.05, batch 64, 1 epoch, $threads threads"
for seed in $seeds; do
    "$d5" train --model lenet --dataset "mnist:$mnist" --optimizer momentum --lr 0.05 \
        --batch 64 --epochs 1 --threads "$threads" --seed "$seed" \
        --json "$work/d5-$seed.json" >/dev/null 2>&1
    $python "$here/pytorch_lenet.py" "$mnist" --threads "$threads" --seed "$seed" \
        --steps 300 >"$work/torch-$seed.json"
done
$python - "$work" $seeds <<'PY'
import json, statistics, sys
work, seeds = sys.argv[1], sys.argv[2:]
print("%-5s %12s %10s %12s %10s %10s %14s %14s %10s" % (
    "seed", "d5 epoch s", "d5 acc", "torch epoch", "torch acc", "epoch d5/pt",
    "d5 step", "torch step", "step d5/pt"))
ratios, step_ratios = [], []
for s in seeds:
    d = json.load(open("%s/d5-%s.json" % (work, s)))
    t = json.load(open("%s/torch-%s.json" % (work, s)))
    de, te = d["epochs"][0], t["epochs"][0]
    dstep = d["regions"]["BATCH"]["median_ns"]
    tstep = statistics.median(t["step_ns"])
    ratios.append(de["seconds"] / te["seconds"])
    step_ratios.append(dstep / tstep)
    print("%-5s %12.2f %9.2f%% %12.2f %9.2f%% %10.3f %12.2f ms %12.2f ms %10.3f" % (
        s, de["seconds"], 100 * de["test_accuracy"], te["seconds"], 100 * te["test_accuracy"],
        ratios[-1], dstep / 1e6, tstep / 1e6, step_ratios[-1]))
print("median ratio: epoch %.3f, step %.3f (torch %s)" % (
    statistics.median(ratios), statistics.median(step_ratios), t["torch"]))
PY
