#!/usr/bin/env bash
# How well the alpha-beta model predicts d5's ring allreduce, on 2 ranks.
#
#   bench/allreduce/bench_alpha_beta.sh [BUILD_DIR] [TIME]
#
# 1. `d5 pingpong --fit` from 1 KiB to 4 MiB (doubling) fits t(S) = alpha +
#    beta S to the one-way message times.
# 2. `d5 allreduce --comm ring` from 1 KiB to 64 MiB (doubling, float32)
#    measures the median time of each size.
# 3. For each size it prints the measured time, the time the model predicts
#    for a ring allreduce on P ranks, 2(P-1) alpha + 2(P-1)/P S beta (what
#    `d5 scaling --model-ranks` uses; d5_alpha_beta_ring_allreduce_s), and the
#    relative error (predicted - measured) / measured, then whether every size
#    is within +-30%.
#
# The model counts latency and bandwidth only: the reduction's arithmetic (one
# add per received float, through the cache), the copies of the allgather and
# the cache hierarchy (beta fitted up to 4 MiB, used up to 64 MiB) are not in
# it. TIME is d5's budget per size in seconds (default 0.5). Timings on a busy
# or oversubscribed machine mean little: the script prints `uptime` first.
# D5_BENCH_KEEP=1 keeps the raw files. Registered nowhere in CTest.
set -euo pipefail
# shellcheck source=bench/bench_common.sh
. "$(dirname "$0")/../bench_common.sh"
build=${1:-$root/build/release}
time=${2:-0.5}
d5=$build/d5
P=2
work=$(mktemp -d)
trap bench_drop_work EXIT

bench_need_d5
bench_mpi_setup

echo "# the alpha-beta model against d5's ring allreduce: $P ranks, float32, $(nproc) CPUs"
bench_mpi_header

"$mpirun" -n $P "$d5" pingpong --fit -b 1K -e 4M --time "$time" --json "$work/pingpong.json" \
    >"$work/pingpong.txt" 2>"$work/pingpong.err"
"$mpirun" -n $P "$d5" allreduce --comm ring -b 1K -e 64M --time "$time" \
    >"$work/allreduce.txt" 2>"$work/allreduce.err"
grep -h "oversubscribed" "$work/pingpong.txt" "$work/allreduce.txt" | head -1 || true

number() { sed -n "s/^ *\"$1\": *\\([-0-9.eE+]*\\).*/\\1/p" "$work/pingpong.json" | head -1; }
alpha=$(number alpha_s)
beta=$(number beta_s_per_byte)
r2=$(number fit_r2)
[ -n "$alpha" ] && [ -n "$beta" ] || { echo "bench_alpha_beta.sh: no fit in pingpong.json" >&2; exit 1; }

# The allreduce table: size, count, type, median (us) [CI], algbw, busbw, #wrong.
awk -v P="$P" -v a="$alpha" -v b="$beta" -v r2="$r2" '
BEGIN {
    printf "# fit (d5 pingpong --fit -b 1K -e 4M): alpha = %.3f us, beta = %.5f ns/B (1/beta = %.2f GB/s), R^2 = %s\n", a * 1e6, b * 1e9, 1e-9 / b, r2
    printf "# predicted = 2(P-1) alpha + 2(P-1)/P S beta, P = %d\n#\n", P
    printf "# %10s %14s %14s %9s\n", "size(B)", "measured(us)", "predicted(us)", "rel.err"
    ok = 1; n = 0; worst = 0
}
!/^#/ && NF >= 4 && $1 ~ /^[0-9]+$/ {
    S = $1; t = $4 * 1e-6
    p = 2 * (P - 1) * a + 2 * (P - 1) / P * S * b
    e = (p - t) / t
    mark = (e < -0.30 || e > 0.30) ? "  outside +-30%" : ""
    if (mark != "") ok = 0
    if (e * e > worst * worst) { worst = e; wsize = S }
    printf "  %10d %14.3f %14.3f %+8.1f%%%s\n", S, t * 1e6, p * 1e6, 100 * e, mark
    n++
}
END {
    if (n == 0) { print "bench_alpha_beta.sh: no allreduce rows" > "/dev/stderr"; exit 1 }
    printf "# largest error: %+.1f%% at %d B\n", 100 * worst, wsize
    printf "# every size within +-30%%: %s\n", ok ? "yes" : "NO"
}' "$work/allreduce.txt"
