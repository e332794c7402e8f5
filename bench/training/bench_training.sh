#!/usr/bin/env bash
# d5 against PyTorch (Debian's python3-torch, CPU) in training, the same number
# of threads on both sides, SGD with momentum 0.9 and learning rate 0.05:
#
# lenet     LeNet-5 on MNIST, batch 64, one epoch per seed: each side's epoch
#           time and test accuracy, the ratio of epoch times, and the ratio of
#           median training-step times (d5's BATCH region against PyTorch's
#           timed steps).
# resnet20  the training step of CIFAR ResNet-20, batch 32: d5 train on its
#           synthetic CIFAR-shaped dataset against pytorch_resnet.py (the same
#           network) on one fixed random batch; REPS repetitions alternating
#           d5, PyTorch, d5, PyTorch, ... each WARMUP untimed and STEPS timed
#           steps. Per repetition d5's BATCH, FORWARD, BACKWARD, OPTIMIZER and
#           IO region medians and both step medians; then the medians of all
#           timed steps of each side with the 95% confidence interval of the
#           median (order statistics, as d5 reports it) and their ratio.
# bert      the same for the training step of bert-tiny (d5 model bert-tiny:
#           2 layers of width 128, 128 tokens), batch 8, on synthetic token
#           ids, against pytorch_bert.py (the same network).
#
#   bench/training/bench_training.sh [--model lenet|resnet20|bert|all] [--reps R]
#       [--steps N] [--warmup W] [D5_BINARY] [THREADS] [SEEDS]
#
# Defaults: all (resnet20, bert, then lenet when MNIST is there), 3 repetitions
# of 10 + 60 steps, build/release/d5, 2 threads, seeds "1 2 3" (LeNet's epochs).
# MNIST comes from scripts/setup_data.sh (data/mnist, or $D5_DATA_DIR/mnist).
set -euo pipefail
# shellcheck source=bench/bench_common.sh
. "$(dirname "$0")/../bench_common.sh"
python=/usr/bin/python3

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "bench_training.sh: $*" >&2; exit 2; }
count() {
    if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ]; then die "$1 expects an integer >= $3, got '$2'"; fi
}

model=all reps=3 steps=60 warmup=10
while [ $# -gt 0 ]; do
    case $1 in
    --model) [ $# -ge 2 ] || die "--model expects lenet, resnet20, bert or all"; model=$2; shift 2 ;;
    --reps) [ $# -ge 2 ] || die "--reps expects a count"; count --reps "$2" 1; reps=$2; shift 2 ;;
    --steps) [ $# -ge 2 ] || die "--steps expects a count"; count --steps "$2" 1; steps=$2; shift 2 ;;
    --warmup) [ $# -ge 2 ] || die "--warmup expects a count"; count --warmup "$2" 0; warmup=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) break ;;
    esac
done
case $model in lenet | resnet20 | bert | all) ;; *) die "--model expects lenet, resnet20, bert or all, got '$model'" ;; esac
d5=${1:-$root/build/release/d5}
threads=${2:-2}
seeds=${3:-1 2 3}
count THREADS "$threads" 1
mnist=${D5_DATA_DIR:-$root/data}/mnist
bench_need_d5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

have_mnist() { [ -e "$mnist/train-images-idx3-ubyte" ] || [ -e "$mnist/train-images-idx3-ubyte.gz" ]; }

# step_compare NAME MODEL BATCH SCRIPT: REPS repetitions alternating d5 train
# of MODEL on its synthetic data and the PyTorch SCRIPT, then the table.
step_compare() {
    local name=$1 net=$2 batch=$3 script=$4
    for r in $(seq "$reps"); do
        "$d5" train --model "$net" --dataset synthetic --optimizer momentum --momentum 0.9 \
            --lr 0.05 --batch "$batch" --max-batches $((warmup + steps)) --threads "$threads" \
            --seed "$r" --system-hz 0 --json "$work/d5-$name-$r.json" >"$work/d5-$name-$r.log" 2>&1 ||
            { cat "$work/d5-$name-$r.log" >&2; die "d5 train failed (repetition $r)"; }
        $python "$here/$script" --threads "$threads" --batch "$batch" --lr 0.05 \
            --momentum 0.9 --seed "$r" --warmup "$warmup" --steps "$steps" \
            >"$work/torch-$name-$r.json" || die "$script failed (repetition $r)"
    done
    step_table "$name"
}

resnet20() {
    echo "# ResNet-20 training step, synthetic CIFAR-shaped batch 32, SGD momentum 0.9, lr 0.05,"
    echo "# $threads threads; $reps repetitions alternating d5 and PyTorch, $warmup warm-up + $steps timed steps each"
    step_compare r20 resnet20 32 pytorch_resnet.py
}

bert() {
    echo "# bert-tiny training step, synthetic token ids, batch 8 x 128 tokens, SGD momentum 0.9,"
    echo "# lr 0.05, $threads threads; $reps repetitions alternating d5 and PyTorch, $warmup warm-up + $steps timed steps each"
    step_compare bert bert-tiny 8 pytorch_bert.py
}

step_table() {
    $python - "$work" "$reps" "$warmup" "$1" <<'PY'
import json, math, statistics, sys
work, reps, warmup, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def ci_ranks(n, level=0.95):
    """1-based ranks of the median's CI: d5_stats_median_ci_ranks (core/stats.c)."""
    if n <= 100:
        cdf = lambda k: sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
        j = 1
        for k in range(2, (n + 1) // 2 + 1):
            if 1 - 2 * cdf(k - 1) < level:
                break
            j = k
        return j, n + 1 - j
    s = 1.959963984540054 * math.sqrt(n)
    return max(1, math.floor((n - s) / 2)), min(n, math.ceil(1 + (n + s) / 2))

def summary(x):
    v = sorted(x)
    lo, hi = ci_ranks(len(v))
    return statistics.median(v), v[lo - 1], v[hi - 1]

ms = lambda ns: ns / 1e6
print("%-4s %10s %10s %10s %10s %9s %12s %12s %8s %s" % (
    "rep", "d5 BATCH", "FORWARD", "BACKWARD", "OPTIMIZER", "IO", "d5 step", "torch step",
    "d5/pt", "contended"))
d5_all, pt_all, ratios = [], [], []
for r in range(1, reps + 1):
    d = json.load(open("%s/d5-%s-%d.json" % (work, name, r)))
    t = json.load(open("%s/torch-%s-%d.json" % (work, name, r)))
    reg = d["regions"]
    d5_steps = [s * 1e9 for s in d["step_seconds"][warmup:]]
    d5_all += d5_steps
    pt_all += t["step_ns"]
    dm, tm = statistics.median(d5_steps), statistics.median(t["step_ns"])
    ratios.append(dm / tm)
    print("%-4d %7.2f ms %7.2f ms %7.2f ms %7.3f ms %6.3f ms %9.2f ms %9.2f ms %8.3f %s" % (
        r, ms(reg["BATCH"]["median_ns"]), ms(reg["FORWARD"]["median_ns"]),
        ms(reg["BACKWARD"]["median_ns"]), ms(reg["OPTIMIZER"]["median_ns"]),
        ms(reg["IO"]["median_ns"]), ms(dm), ms(tm), ratios[-1],
        "yes" if d["config"].get("contention", {}).get("contended") else "no"))
dm, dlo, dhi = summary(d5_all)
tm, tlo, thi = summary(pt_all)
print("d5      step median %.2f ms [%.2f, %.2f] (95%% CI, %d steps)" % (ms(dm), ms(dlo), ms(dhi), len(d5_all)))
print("PyTorch step median %.2f ms [%.2f, %.2f] (95%% CI, %d steps; torch %s)" % (
    ms(tm), ms(tlo), ms(thi), len(pt_all), t["torch"]))
print("ratio d5/PyTorch %.3f (repetitions %s)" % (dm / tm, ", ".join("%.3f" % q for q in ratios)))
PY
}

lenet() {
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
}

if [ "$model" = resnet20 ] || [ "$model" = all ]; then resnet20; fi
if [ "$model" = bert ] || [ "$model" = all ]; then
    [ "$model" = bert ] || echo
    bert
fi
if [ "$model" = lenet ] || [ "$model" = all ]; then
    if have_mnist; then
        [ "$model" = lenet ] || echo
        lenet
    elif [ "$model" = lenet ]; then
        die "MNIST not found in $mnist (run scripts/setup_data.sh)"
    else
        echo "# LeNet-5 / MNIST left out: MNIST not found in $mnist (run scripts/setup_data.sh)"
    fi
fi
