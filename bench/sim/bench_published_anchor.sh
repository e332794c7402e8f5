#!/usr/bin/env bash
# A published anchor for the simulator: the weak scaling of ResNet-50 data-
# parallel training in Goyal et al. 2017 ("Accurate, Large Minibatch SGD:
# Training ImageNet in 1 Hour"), 8 to 256 GPUs at 32 images per GPU, which
# the paper reports at about 90% efficiency (8 GPUs of one server as the
# base).
#
#   bench/sim/bench_published_anchor.sh [BUILD_DIR]
#
# Inputs, as the paper gives them or derived from it:
#   - 25.56 M float32 parameters (ResNet-50): S = 102.2 MB of gradients a step;
#   - a step's computation C = 32 images at about 140 images/s on a P100 in
#     float32 (assumed: a typical figure of 2017's frameworks) = 0.229 s;
#   - servers of 8 GPUs, 50 Gb/s Ethernet between them;
#   - to compare with: about 90% efficiency from 8 to 256 GPUs, and a step of
#     about 0.256 s at 256 GPUs (90 epochs of 1.28 M images in about an hour
#     at a batch of 8192: 14,063 steps).
# Assumed (the paper does not say): the platform's latencies, a non-blocking
# switch, NVLink within a server at 20 GB/s a GPU
# (level3_distributed/sim/platforms/goyal2017_50g.xml), and a sum costing 3
# bytes of P100 memory traffic (732 GB/s) per byte. SMPI's default factors,
# which scale latency and bandwidth by message size as one cluster's MPI
# measured them, are set to 1: the links are taken as stated.
#
# For each P, d5-sim-allreduce runs d5's ring allreduce and its recursive
# doubling of S bytes on P simulated ranks (8 a server); the step is C plus
# the allreduce, not overlapped with the backward pass (the paper overlaps
# part of it: the simulated efficiency is a lower bound of what d5's
# algorithms would give), and the efficiency is step(8) / step(P).
# Then the same steps with the allreduce overlapped as DistributedDataParallel
# (and d5's dsgd) overlap it: d5-sim-train replays dsgd with buckets of 25 MiB
# over d5's ring on a step of ResNet-50 whose parameter table and the moments
# its gradients become ready come from `d5 train --model resnet50
# --step-profile` on this machine (batch 8, 4 steps), scaled to C
# (--time-scale C / the measured step): how the backward pass spreads over
# the step is d5's on this CPU, assumed to hold on the paper's GPUs; a copy
# into a bucket costs 2 bytes of P100 memory traffic per byte.
# Registered nowhere in CTest: each row simulates hundreds of ranks.
set -euo pipefail
# shellcheck source=bench/bench_common.sh
. "$(dirname "$0")/../bench_common.sh"
build=${1:-$root/build/release}
sim=$build/d5-sim-allreduce
train=$build/d5-sim-train
d5=$build/d5
platform=$root/level3_distributed/sim/platforms/goyal2017_50g.xml
work=$(mktemp -d)
trap bench_drop_work EXIT
[ -x "$sim" ] || { echo "bench_published_anchor.sh: no $sim (install libsimgrid-dev, rebuild)" >&2; exit 1; }
command -v smpirun >/dev/null || { echo "bench_published_anchor.sh: no smpirun (libsimgrid-dev)" >&2; exit 1; }

bytes=102240000
compute=0.229
reduce=$(awk 'BEGIN { printf "%.4g", 3 / 732e9 }')
for node in $(seq 0 31); do for _ in 1 2 3 4 5 6 7 8; do echo "node-$node"; done; done >"$work/hosts.txt"

echo "# published anchor: Goyal et al. 2017, ResNet-50 on 8 to 256 GPUs (8 a server, 50 Gb/s): ~90% efficiency and ~0.256 s a step at 256 reported"
echo "# S = $bytes B of gradients, compute C = $compute s a step, no overlap; efficiency = step(8) / step(P)"
printf "%6s %12s %12s %12s %12s\n" P step_ring_s eff_ring step_recdbl_s eff_recdbl
for p in 8 16 32 64 128 256; do
    for comm in ring recdbl; do
        start=$(date +%s)
        smpirun -np "$p" -platform "$platform" -hostfile "$work/hosts.txt" \
            --cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:no \
            --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1 \
            --cfg=smpi/shared-malloc-blocksize:134217728 \
            --cfg=smpi/display-timing:no --log=root.thres:warning \
            "$sim" --comm "$comm" -b "$bytes" -e "$bytes" --reps 1 \
            --reduce-s-per-byte "$reduce" >"$work/$comm.$p.txt" 2>"$work/$comm.$p.err" ||
            { cat "$work/$comm.$p.err" >&2; exit 1; }
        echo "$p $comm $(awk -v b="$bytes" '$1 == b { print $2 * 1e-6 }' "$work/$comm.$p.txt") $(($(date +%s) - start))" >>"$work/rows.txt"
    done
done
awk -v c="$compute" '
    { t[$1, $2] = $3; secs += $4; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
    END {
        base_r = c + t[8, "ring"]; base_d = c + t[8, "recdbl"]
        for (i = 1; i <= n; i++) {
            p = order[i]; r = c + t[p, "ring"]; d = c + t[p, "recdbl"]
            printf "%6d %12.4f %11.1f%% %12.4f %11.1f%%\n", p, r, 100 * base_r / r, d, 100 * base_d / d
        }
        printf "# allreduce alone at 256: ring %.1f ms, recursive doubling %.1f ms; %d s of simulation in all\n",
            1e3 * t[256, "ring"], 1e3 * t[256, "recdbl"], secs
    }' "$work/rows.txt"

"$d5" train --model resnet50 --dataset synthetic --batch 8 --max-batches 4 --system-hz 0 \
    --step-profile "$work/resnet50.json" >"$work/profile.txt" 2>&1 || { cat "$work/profile.txt" >&2; exit 1; }
step=$(bench_json_number "$work/resnet50.json" step_s)
scale=$(awk -v c="$compute" -v s="$step" 'BEGIN { printf "%.6g", c / s }')
copy=$(awk 'BEGIN { printf "%.4g", 2 / 732e9 }')
echo "#"
echo "# dsgd replayed (d5-sim-train): buckets of 25 MiB overlapping the backward pass, d5's ring; ResNet-50's step as d5 measured it here ($step s), times x $scale"
printf "%6s %12s %12s %12s\n" P step_s exposed_s eff_overlap
start=$(date +%s)
for p in 8 16 64 256; do
    smpirun -np "$p" -platform "$platform" -hostfile "$work/hosts.txt" \
        --cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:no \
        --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1 --cfg=smpi/test:0 --cfg=smpi/iprobe:1e-6 \
        --cfg=smpi/shared-malloc-blocksize:134217728 \
        --cfg=smpi/display-timing:no --log=root.thres:warning \
        "$train" --profile "$work/resnet50.json" --scheme dsgd --comm ring --steps 4 \
        --time-scale "$scale" --variation none --sum-s-per-byte "$reduce" --copy-s-per-byte "$copy" \
        >"$work/replay.$p.txt" 2>"$work/replay.$p.err" || { cat "$work/replay.$p.err" >&2; exit 1; }
    awk -v p="$p" '$1 == "step" { s = $2 / 1e3 } $1 == "exposed" { e = $2 / 1e3 }
        END { print p, s, e }' "$work/replay.$p.txt" >>"$work/replay.txt"
done
awk '{ if (NR == 1) base = $2; printf "%6d %12.4f %12.4f %11.1f%%\n", $1, $2, $3, 100 * base / $2 }' "$work/replay.txt"
echo "# $(($(date +%s) - start)) s of simulation"
