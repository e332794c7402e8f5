#!/usr/bin/env bash
# How well d5-sim-train predicts a real distributed training step: 2 ranks
# on this machine, the simulated network calibrated on d5 pingpong alone.
#
#   bench/sim/bench_sim_train.sh [BUILD_DIR] [MODEL] [BATCH] [STEPS]
#
# (defaults: build/release, resnet20, 32 a worker, 40 steps; one thread a
# rank, synthetic data of the model's input shape)
#
# 1. `d5 pingpong --exchange --fit` on 2 ranks: the piecewise model of a
#    message and the line of a sum (bench_sim_calibrate, bench_common.sh).
# 2. The compute of a step: `mpirun -n 2 d5 train --distributed local
#    --step-profile` (both ranks training at once, as under dsgd, without
#    communicating), rank 0's profile: when each gradient was ready, the
#    optimizer, the step.
# 3. The real steps: `mpirun -n 2 d5 train --distributed dsgd --comm ring`,
#    with gradient buckets of 25 MiB overlapping the backward pass and with
#    --bucket-mb 0 (one allreduce after it), and pssgd (rank 0 serves).
# 4. The same three on two simulated hosts (platforms/pair.xml with the
#    factors of step 1, sums at the fitted line, copies measured by
#    d5-sim-train, MPI_Test free and MPI_Iprobe at 1 us, each rank's steps
#    drawn from the profile's recorded variation): `smpirun -np 2
#    d5-sim-train --profile ...`.
# 5. For each: measured and simulated step and exposed communication
#    (medians, the first step left out), the step's relative error, and
#    whether every step is within +-15%.
#
# Timings on a busy machine mean little: the script prints `uptime` first.
# D5_BENCH_KEEP=1 keeps the raw files. Registered nowhere in CTest.
set -euo pipefail
# shellcheck source=bench/bench_common.sh
. "$(dirname "$0")/../bench_common.sh"
build=${1:-$root/build/release}
model=${2:-resnet20}
batch=${3:-32}
steps=${4:-40}
d5=$build/d5
sim=$build/d5-sim-train
work=$(mktemp -d)
trap bench_drop_work EXIT

bench_need_d5
bench_mpi_setup
[ -x "$sim" ] || { echo "bench_sim_train.sh: no $sim (install libsimgrid-dev, rebuild)" >&2; exit 1; }
command -v smpirun >/dev/null || { echo "bench_sim_train.sh: no smpirun (libsimgrid-dev)" >&2; exit 1; }

echo "# d5-sim-train against real training: $model, batch $batch a rank, 2 ranks of 1 thread, $(nproc) CPUs"
bench_mpi_header

"$mpirun" -n 2 "$d5" pingpong --exchange --fit -b 256 -e 32M --time 0.3 \
    --json "$work/pingpong.json" >"$work/pingpong.txt" 2>"$work/pingpong.err"
bench_sim_calibrate "$work/pingpong.json" "$work/pingpong.txt"

train=(train --model "$model" --dataset synthetic --batch "$batch" --threads 1 --max-batches "$steps"
    --system-hz 0 --sampler partitioned)
"$mpirun" -n 2 "$d5" "${train[@]}" --distributed local --step-profile "$work/profile.json" \
    >"$work/local.txt" 2>&1 || { cat "$work/local.txt" >&2; exit 1; }

# "name|d5 train options|d5-sim-train options"
cases=("dsgd, buckets of 25 MiB|--distributed dsgd --comm ring|--scheme dsgd --comm ring"
    "dsgd, one allreduce|--distributed dsgd --comm ring --bucket-mb 0|--scheme dsgd --comm ring --bucket-mb 0"
    "pssgd, rank 0 serves|--distributed pssgd --comm ring|--scheme pssgd --comm ring")
printf 'host0\nhost1\n' >"$work/hosts.txt"
platform=$root/level3_distributed/sim/platforms/pair.xml
# "step 12.3 ms" or "exposed communication 1.2 ms" of d5 train; "step 12.3 ms" of d5-sim-train.
figure() { awk -v key="$2" '$1 == key && $3 == "ms" { print $2; exit } $1 == key && $2 == "communication" { print $3; exit }' "$1"; }
printf '#\n# %-28s %13s %13s %8s %15s %15s\n' case "measured(ms)" "simulated(ms)" rel.err \
    "exposed m.(ms)" "exposed s.(ms)"
ok=1 n=0
for c in "${cases[@]}"; do
    IFS='|' read -r name real simopts <<<"$c"
    n=$((n + 1))
    # shellcheck disable=SC2086 # the options are words
    "$mpirun" -n 2 "$d5" "${train[@]}" $real >"$work/real$n.txt" 2>&1 ||
        { cat "$work/real$n.txt" >&2; exit 1; }
    # shellcheck disable=SC2086
    smpirun -np 2 -platform "$platform" -hostfile "$work/hosts.txt" \
        --cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:no --cfg=network/crosstraffic:0 \
        --cfg=smpi/lat-factor:"$sim_lat" --cfg=smpi/bw-factor:"$sim_bw" \
        --cfg=smpi/test:0 --cfg=smpi/iprobe:1e-6 --cfg=smpi/display-timing:no \
        --log=root.thres:warning "$sim" --profile "$work/profile.json" --steps "$steps" --sum-s-per-byte "$sim_reduce_beta" $simopts \
        >"$work/sim$n.txt" 2>"$work/sim$n.err" || { cat "$work/sim$n.err" >&2; exit 1; }
    m=$(figure "$work/real$n.txt" step) s=$(figure "$work/sim$n.txt" step)
    me=$(figure "$work/real$n.txt" exposed) se=$(figure "$work/sim$n.txt" exposed)
    [ -n "$m" ] && [ -n "$s" ] || { echo "bench_sim_train.sh: no step figure for $name" >&2; exit 1; }
    line=$(awk -v name="$name" -v m="$m" -v s="$s" -v me="${me:-0}" -v se="${se:-0}" 'BEGIN {
        e = (s - m) / m; mark = (e < -0.15 || e > 0.15) ? "  outside +-15%" : ""
        printf "  %-28s %13.3f %13.3f %+7.1f%% %15.3f %15.3f%s", name, m, s, 100 * e, me, se, mark }')
    echo "$line"
    case $line in *outside*) ok=0 ;; esac
done
echo "# the compute profile: $(sed -n 's/^ *step *\([0-9.]* ms\).*/step \1/p' "$work/local.txt" | head -1) under --distributed local"
echo "# every step within +-15%: $([ "$ok" = 1 ] && echo yes || echo NO)"
