#!/usr/bin/env bash
# How well SimGrid's simulation of d5's ring allreduce predicts the real one,
# on 2 ranks, with the simulated network calibrated on d5 pingpong alone.
#
#   bench/sim/bench_sim_allreduce.sh [BUILD_DIR] [TIME]
#
# 1. `d5 pingpong --exchange --fit` from 256 B to 32 MiB times a ring's step
#    on this machine (both ranks sending and receiving at once, data just
#    written) and the sum after it, and fits the piecewise model of the
#    exchange (ranges of sizes, each with alpha_k and beta_k) and a line of
#    the sum.
# 2. The platform: two hosts joined by a full-duplex link of latency 1 us and
#    bandwidth 1 GB/s each way, with SMPI's piecewise factors set from the
#    fit, so that a message of a size in range k takes alpha_k + beta_k S
#    (smpi/lat-factor k = alpha_k / 1 us, smpi/bw-factor k = 1 / (beta_k *
#    1 GB/s)).
# 3. `smpirun -np 2 ... d5-sim-allreduce --comm ring` runs d5's ring allreduce
#    (its real code, built against SMPI) on the simulated hosts from 1 KiB to
#    64 MiB, each sum costing the fitted line (--reduce-s-per-byte, with
#    smpi/simulate-computation off); `d5 allreduce --comm ring` measures the
#    real one on 2 ranks.
# 4. For each size: measured, simulated, relative error (simulated -
#    measured) / measured; then whether every size is within +-30%.
#
# TIME is d5's budget per size in seconds (default 0.5). Timings on a busy
# machine mean little: the script prints `uptime` first. D5_BENCH_KEEP=1
# keeps the raw files. Registered nowhere in CTest.
set -euo pipefail
# shellcheck source=bench/bench_common.sh
. "$(dirname "$0")/../bench_common.sh"
build=${1:-$root/build/release}
time=${2:-0.5}
d5=$build/d5
sim=$build/d5-sim-allreduce
work=$(mktemp -d)
trap bench_drop_work EXIT

bench_need_d5
bench_mpi_setup
[ -x "$sim" ] || { echo "bench_sim_allreduce.sh: no $sim (install libsimgrid-dev, rebuild)" >&2; exit 1; }
command -v smpirun >/dev/null || { echo "bench_sim_allreduce.sh: no smpirun (libsimgrid-dev)" >&2; exit 1; }

echo "# SimGrid's simulation of d5's ring allreduce against the real one: 2 ranks, float32, $(nproc) CPUs"
bench_mpi_header

"$mpirun" -n 2 "$d5" pingpong --exchange --fit -b 256 -e 32M --time "$time" \
    --json "$work/pingpong.json" >"$work/pingpong.txt" 2>"$work/pingpong.err"
"$mpirun" -n 2 "$d5" allreduce --comm ring -b 1K -e 64M --time "$time" \
    >"$work/allreduce.txt" 2>"$work/allreduce.err"

bench_sim_calibrate "$work/pingpong.json" "$work/pingpong.txt"
lat=$sim_lat bw=$sim_bw ra=$sim_reduce_alpha rb=$sim_reduce_beta

platform=$root/level3_distributed/sim/platforms/pair.xml
printf 'host0\nhost1\n' >"$work/hosts.txt"
smpirun -np 2 -platform "$platform" -hostfile "$work/hosts.txt" \
    --cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:no --cfg=network/crosstraffic:0 \
    --cfg=smpi/lat-factor:"$lat" --cfg=smpi/bw-factor:"$bw" \
    --cfg=smpi/display-timing:no --log=root.thres:warning \
    "$sim" --comm ring -b 1K -e 64M --reps 3 --reduce-alpha-s "$ra" --reduce-s-per-byte "$rb" \
    >"$work/sim.txt" 2>"$work/sim.err" ||
    { cat "$work/sim.err" >&2; exit 1; }

awk 'FNR == NR { if ($1 ~ /^[0-9]+$/) sim[$1] = $2; next }
BEGIN { printf "#\n# %10s %14s %14s %9s\n", "size(B)", "measured(us)", "simulated(us)", "rel.err"; ok = 1; worst = 0 }
!/^#/ && NF >= 4 && $1 ~ /^[0-9]+$/ && ($1 in sim) {
    t = $4; s = sim[$1]; e = (s - t) / t
    mark = (e < -0.30 || e > 0.30) ? "  outside +-30%" : ""
    if (mark != "") ok = 0
    if (e * e > worst * worst) { worst = e; wsize = $1 }
    printf "  %10d %14.3f %14.3f %+8.1f%%%s\n", $1, t, s, 100 * e, mark; n++
}
END {
    if (n == 0) { print "bench_sim_allreduce.sh: no rows to compare" > "/dev/stderr"; exit 1 }
    printf "# largest error: %+.1f%% at %d B\n# every size within +-30%%: %s\n", 100 * worst, wsize, ok ? "yes" : "NO"
}' "$work/sim.txt" "$work/allreduce.txt"
