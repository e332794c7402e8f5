#!/usr/bin/env bash
# dsgd on 2 ranks: gradients allreduced in buckets while backpropagation goes
# on, against one allreduce of every gradient after backpropagation, side by
# side (the two take turns, ROUNDS times).
#
#   bench/distributed/bench_overlap.sh [BUILD_DIR] [ROUNDS] [STEPS] [BUCKET_MB] [MODEL]
#
# Defaults: build/release, 3 rounds, 60 steps, 0.25 MiB buckets, resnet20 on
# synthetic CIFAR-shaped data, batch 32 per rank, one thread per rank. Prints
# per round the medians of the step and of its exposed communication for both,
# then the medians over rounds and their ratio. Goal: buckets expose less
# communication than one allreduce after backpropagation. Timings on a busy or
# oversubscribed machine mean little: the script prints `uptime` first.
set -euo pipefail
# shellcheck source=bench/bench_common.sh
. "$(dirname "$0")/../bench_common.sh"
build=${1:-$root/build/release}
rounds=${2:-3}
steps=${3:-60}
bucket=${4:-0.25}
model=${5:-resnet20}
d5=$build/d5
bench_need_d5
bench_mpi_setup
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "# dsgd on 2 ranks, $model, batch 32 per rank, $steps steps, 1 thread per rank, $(nproc) CPUs"
bench_mpi_header
printf '%-6s %-22s %12s %14s\n' round mode "step(ms)" "exposed(ms)"
for r in $(seq "$rounds"); do
    for mb in 0 "$bucket"; do
        "$mpirun" -n 2 "$d5" train --model "$model" --dataset synthetic --batch 32 \
            --max-batches "$steps" --threads 1 --distributed dsgd --bucket-mb "$mb" \
            >"$work/out-$mb-$r.txt" 2>"$work/err-$mb-$r.txt" ||
            { cat "$work/err-$mb-$r.txt" >&2; exit 1; }
        step=$(awk '$1 == "step" { print $2; exit }' "$work/out-$mb-$r.txt")
        exposed=$(awk '$1 == "exposed" { print $3; exit }' "$work/out-$mb-$r.txt")
        mode=$([ "$mb" = 0 ] && echo "after backprop" || echo "buckets $mb MiB")
        printf '%-6s %-22s %12s %14s\n' "$r" "$mode" "$step" "$exposed"
        echo "$mb $step $exposed" >>"$work/all.txt"
    done
    grep -h "oversubscribed" "$work"/out-*-"$r".txt | head -1 || true
done
awk -v bucket="$bucket" "$bench_awk_median"'
{ st[$1] = st[$1] " " $2; ex[$1] = ex[$1] " " $3 }
END {
    s0 = median(st[0]); e0 = median(ex[0]); s1 = median(st[bucket]); e1 = median(ex[bucket])
    printf "# medians over rounds: after backprop step %.3f ms, exposed %.3f ms; buckets step %.3f ms, exposed %.3f ms\n", s0, e0, s1, e1
    printf "# exposed communication, buckets / after backprop: %.2f (goal < 1: %s)\n", e1 / e0, e1 < e0 ? "yes" : "no"
}' "$work/all.txt"
