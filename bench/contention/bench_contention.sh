#!/usr/bin/env bash
# d5 on a quiet machine and beside one busy process, side by side in one run.
#
#   bench/contention/bench_contention.sh [D5_BINARY] [ROUNDS]
#
# Three workloads: 300 training steps of LeNet-5 on MNIST (batch 64; the
# epoch's training seconds, evaluation excluded), LeNet inference (batch 64,
# d5 run's median latency) and one convolution (N=8, C=K=64, 28x28, 3x3; d5
# test-operator's median on dnnl and on blas). Each runs quiet with the
# automatic thread count and with --threads 1, and beside one process that
# busy-loops (python3 -c "while True: pass") with the automatic count and with
# --threads 2 fixed. Rounds alternate quiet and busy so that drift spreads over
# both; the figures are medians over rounds. Printed: each time, the ratio of
# the busy automatic run to the quiet --threads 1 run (goal: at most 1.1), and
# how many runs printed the contention warning (goal: every busy run, no quiet
# one). With PyTorch (Debian's python3-torch), its LeNet step beside d5's in the
# quiet runs (goal: d5 at most 0.7x). A run that fails or gives no figure is
# listed as FAILED, its workload meets no goal, and the script exits 1.
# D5_BENCH_KEEP=1 keeps the raw files.
set -euo pipefail
# shellcheck source=bench/bench_common.sh
. "$(dirname "$0")/../bench_common.sh"
d5=${1:-$root/build/release/d5}
rounds=${2:-3}
mnist=${D5_DATA_DIR:-$root/data}/mnist
python=/usr/bin/python3
work=$(mktemp -d)
busy_pid=
cleanup() {
    [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null || true
    bench_drop_work
}
trap cleanup EXIT

bench_need_d5
[ -e "$mnist/train-images-idx3-ubyte" ] || [ -e "$mnist/train-images-idx3-ubyte.gz" ] ||
    { echo "bench_contention.sh: MNIST not found in $mnist (run scripts/setup_data.sh)" >&2; exit 2; }
conv="W=28,H=28,C=64,N=8,K=64,S=3,R=3,pad_w=1,pad_h=1,wstride=1,hstride=1"
"$d5" model lenet --batch 64 -o "$work/lenet.onnx" >/dev/null
have_torch=0
$python -c "import torch" 2>/dev/null && have_torch=1

echo "# d5 quiet and beside one busy process: $rounds rounds, $(nproc) CPUs, $(uptime)"
"$d5" version | head -3 | sed 's/^/# /'

# attempt TAG ERRFILE COMMAND...: runs one workload; a failure (non-zero exit)
# is recorded in $work/failed with the end of its error output, and the
# summary then reports the workload as failed and the script exits non-zero.
attempt() {
    local tag=$1 err=$2 rc=0
    shift 2
    "$@" >/dev/null 2>"$err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "$tag: exit $rc: $(tail -n 2 "$err" | tr '\n' ' ')" >>"$work/failed"
        echo "# FAILED: $tag (exit $rc)" >&2
    fi
}

# run_all STATE THREADS ROUND: one run of every workload; results into $work/NAME-STATE-THREADS-ROUND.*
run_all() {
    local state=$1 threads=$2 round=$3 tag="$1-$2-$3" targ=()
    [ "$threads" != auto ] && targ=(--threads "$threads")
    attempt "train-$tag" "$work/train-$tag.err" "$d5" train --model lenet --dataset "mnist:$mnist" \
        --batch 64 --max-batches 300 "${targ[@]}" --json "$work/train-$tag.json"
    attempt "run-$tag" "$work/run-$tag.err" "$d5" run "$work/lenet.onnx" --no-overhead --time 3 \
        "${targ[@]}" --json "$work/run-$tag.json"
    for b in dnnl blas; do
        attempt "conv$b-$tag" "$work/conv$b-$tag.err" "$d5" test-operator Conv --sizes "$conv" \
            --backend "$b" --no-peak --max-time 3 "${targ[@]}" --json "$work/conv$b-$tag.json"
    done
    if [ "$have_torch" = 1 ] && [ "$state" = quiet ] && [ "$threads" = auto ]; then
        $python "$root/bench/training/pytorch_lenet.py" "$mnist" --threads "$(nproc)" \
            --steps 300 --epochs 0 >"$work/torch-$tag.json" 2>"$work/torch-$tag.err" || {
            echo "torch-$tag: exit $?: $(tail -n 2 "$work/torch-$tag.err" | tr '\n' ' ')" >>"$work/failed"
            echo "# FAILED: torch-$tag" >&2
        }
    fi
}

for r in $(seq 1 "$rounds"); do
    echo "# round $r: quiet" >&2
    run_all quiet auto "$r"
    run_all quiet 1 "$r"
    echo "# round $r: beside a busy process" >&2
    $python -c "while True: pass" &
    busy_pid=$!
    sleep 1
    run_all busy auto "$r"
    run_all busy 2 "$r"
    kill "$busy_pid"
    wait "$busy_pid" 2>/dev/null || true
    busy_pid=
    sleep 1
done

# The summary exits 1 when any run failed or gave no figure: a failed workload
# is printed as FAILED and never counts as meeting a goal (NaN compares false).
$python - "$work" "$rounds" "$have_torch" <<'PY'
import glob, json, math, os, statistics, sys
work, rounds, have_torch = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
failures = []
try:
    failures = open(os.path.join(work, "failed")).read().splitlines()
except OSError:
    pass

def figure(kind, path):
    try:
        d = json.load(open(path))
    except Exception:
        return None
    if kind == "train":
        return d["epochs"][0]["seconds"] * 1e3 if d.get("epochs") else None
    if kind == "step":
        return d["regions"]["BATCH"]["median_ns"] / 1e6
    for b in d.get("benchmarks", []):
        if b.get("aggregate_name") == "median" and not b.get("error_occurred"):
            return b["real_time"] / 1e6  # ns
    return None

def median(kind, name, state, threads):
    """The median over rounds; NaN, with the failure recorded, when a round gave no figure."""
    xs = []
    for r in range(1, rounds + 1):
        path = "%s/%s-%s-%s-%d.json" % (work, name, state, threads, r)
        x = figure(kind, path)
        if x is None or not math.isfinite(x):
            failures.append("%s: no figure in %s" % (name, os.path.basename(path)))
            return float("nan")
        xs.append(x)
    return statistics.median(xs)

def warned(name, state, threads):
    n = 0
    for r in range(1, rounds + 1):
        try:
            n += "competed for the cores" in open("%s/%s-%s-%s-%d.err" % (work, name, state, threads, r)).read()
        except OSError:
            pass
    return n

rows = [("train", "train", "d5 train 300 LeNet steps (ms)"),
        ("run", "run", "d5 run LeNet b64 latency (ms)"),
        ("convdnnl", "conv", "Conv N8 C=K=64 28x28 3x3, dnnl (ms)"),
        ("convblas", "conv", "Conv same, blas (ms)")]
print("%-38s %10s %10s %10s %10s %8s %8s %8s" % ("work", "quiet", "quiet t1", "busy", "busy t2",
      "busy/t1", "warn busy", "warn quiet"))
ratios = []
all_warned = True
none_quiet = True
failed_rows = []
for name, kind, label in rows:
    k = "train" if kind == "train" else "bench"
    q, q1 = median(k, name, "quiet", "auto"), median(k, name, "quiet", "1")
    b, b2 = median(k, name, "busy", "auto"), median(k, name, "busy", "2")
    wb = warned(name, "busy", "auto")
    wq = warned(name, "quiet", "auto") + warned(name, "quiet", "1")
    ratio = b / q1
    ratios.append(ratio)
    if any(not math.isfinite(x) for x in (q, q1, b, b2)) or any(f.startswith(name + "-") for f in failures):
        failed_rows.append(label)
    all_warned &= wb == rounds
    none_quiet &= wq == 0
    print("%-38s %10.2f %10.2f %10.2f %10.2f %8.3f %5d/%d %6d/%d%s" % (label, q, q1, b, b2, ratio, wb,
          rounds, wq, 2 * rounds, "  FAILED" if label in failed_rows else ""))
# A NaN ratio (a failed workload) is never within the goal: max() would skip it.
met = all(math.isfinite(x) and x <= 1.1 for x in ratios)
finite = [x for x in ratios if math.isfinite(x)]
print("goal busy/t1 <= 1.1: %s (worst %s); warning in every busy run: %s; in no quiet run: %s" % (
    "met" if met else "NOT met",
    "%.3f" % max(finite) if len(finite) == len(ratios) else "unknown: a workload failed",
    "yes" if all_warned else "NO", "yes" if none_quiet else "NO"))
step = median("step", "train", "quiet", "auto")
if have_torch:
    ts = []
    for r in range(1, rounds + 1):
        try:
            t = json.loads(open("%s/torch-quiet-auto-%d.json" % (work, r)).read().strip().splitlines()[-1])
            ts.append(statistics.median(t["step_ns"]) / 1e6)
        except Exception:
            failures.append("torch-quiet-auto-%d: no step times" % r)
    if len(ts) == rounds:
        t = statistics.median(ts)
        print("PyTorch step per round (ms): %s" % ", ".join("%.3f" % x for x in ts))
        ok = math.isfinite(step / t) and step / t <= 0.7
        print("training step, quiet: d5 %.3f ms, PyTorch %.3f ms: d5/PyTorch %.3f (goal <= 0.7: %s)" % (
            step, t, step / t, "met" if ok else "NOT met"))
    else:
        print("training step, quiet: PyTorch failed: no comparison (goal <= 0.7: NOT met)")
else:
    print("training step, quiet: d5 %.3f ms (PyTorch not installed: no comparison)" % step)
if failures:
    print("FAILED: %d run(s) failed or gave no figure%s:" % (
        len(failures), " (" + ", ".join(failed_rows) + ")" if failed_rows else ""))
    for f in sorted(set(failures)):
        print("  " + f)
    sys.exit(1)
PY
