#!/usr/bin/env bash
# How well two models predict d5's ring allreduce, on 2 ranks, both
# calibrated on d5 pingpong alone (never on the allreduce they predict).
#
#   bench/allreduce/bench_alpha_beta.sh [BUILD_DIR] [TIME]
#
# 1. `d5 pingpong --fit` from 1 KiB to 4 MiB (doubling) fits t(S) = alpha +
#    beta S to the one-way message times: the alpha-beta model.
# 2. `d5 pingpong --exchange --fit` from 256 B to 32 MiB (doubling) times a
#    ring step, both ranks sending and receiving at once, and the float32 sum
#    both then do, and fits the piecewise model of the exchange (a line per
#    range of sizes) and a line of the sum: the piecewise model.
# 3. `d5 allreduce --comm ring` from 1 KiB to 64 MiB (doubling, float32)
#    measures the median time of each size.
# 4. For each size it prints the measured time and each model's prediction
#    for a ring allreduce on P ranks with its relative error (predicted -
#    measured) / measured: alpha-beta 2(P-1) alpha + 2(P-1)/P S beta (what
#    `d5 scaling --model-ranks` uses; d5_alpha_beta_ring_allreduce_s), and
#    piecewise 2(P-1) exchange(S/P) + (P-1) sum(S/P)
#    (d5_piecewise_ring_allreduce_s); then whether every size is within
#    +-30% for each.
#
# The alpha-beta model counts latency and bandwidth only: the reduction's
# arithmetic, both directions of a step in use at once and the cache
# hierarchy (beta fitted up to 4 MiB, used up to 64 MiB) are not in it; the
# piecewise model has each of them from its own measurement. TIME is d5's budget per size in seconds (default 0.5). Timings on a busy
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
"$mpirun" -n $P "$d5" pingpong --exchange --fit -b 256 -e 32M --time "$time" \
    --json "$work/exchange.json" >"$work/exchange.txt" 2>"$work/exchange.err"
"$mpirun" -n $P "$d5" allreduce --comm ring -b 1K -e 64M --time "$time" \
    >"$work/allreduce.txt" 2>"$work/allreduce.err"
grep -h "oversubscribed" "$work/pingpong.txt" "$work/allreduce.txt" | head -1 || true

number() { bench_json_number "${2:-$work/pingpong.json}" "$1"; }
alpha=$(number alpha_s)
beta=$(number beta_s_per_byte)
r2=$(number fit_r2)
[ -n "$alpha" ] && [ -n "$beta" ] || { echo "bench_alpha_beta.sh: no fit in pingpong.json" >&2; exit 1; }
# The piecewise model: "from alpha beta" per segment, then the sum's line.
x=$work/exchange.json
nseg=$(number exchange_segments "$x")
nseg=${nseg%.*}
[ -n "$nseg" ] || { echo "bench_alpha_beta.sh: no piecewise fit in exchange.json" >&2; exit 1; }
segs=""
for ((k = 0; k < nseg; k++)); do
    segs="$segs $(number "exchange_${k}_from_bytes" "$x") $(number "exchange_${k}_alpha_s" "$x") $(number "exchange_${k}_beta_s_per_byte" "$x")"
done
ra=$(number reduce_alpha_s "$x")
rb=$(number reduce_s_per_byte "$x")
sed -n '/^# piecewise fit/,/^# reduction/p' "$work/exchange.txt"

# The allreduce table: size, count, type, median (us) [CI], algbw, busbw, #wrong.
awk -v P="$P" -v a="$alpha" -v b="$beta" -v r2="$r2" -v segs="$segs" -v ra="$ra" -v rb="$rb" '
function piecewise(m,   k, t) {
    k = 0
    while (k + 1 < nseg && m >= from[k + 1]) k++
    t = al[k] + be[k] * m
    return t > 0 ? t : 0
}
BEGIN {
    ns = split(segs, f, " "); nseg = ns / 3
    for (k = 0; k < nseg; k++) { from[k] = f[3 * k + 1]; al[k] = f[3 * k + 2]; be[k] = f[3 * k + 3] }
    printf "# fit (d5 pingpong --fit -b 1K -e 4M): alpha = %.3f us, beta = %.5f ns/B (1/beta = %.2f GB/s), R^2 = %s\n", a * 1e6, b * 1e9, 1e-9 / b, r2
    printf "# alpha-beta = 2(P-1) alpha + 2(P-1)/P S beta; piecewise = 2(P-1) exchange(S/P) + (P-1) sum(S/P); P = %d\n#\n", P
    printf "# %10s %14s %14s %9s %14s %9s\n", "size(B)", "measured(us)", "alpha-beta(us)", "rel.err", "piecewise(us)", "rel.err"
    ok = 1; okp = 1; n = 0; worst = 0; worstp = 0
}
!/^#/ && NF >= 4 && $1 ~ /^[0-9]+$/ {
    S = $1; t = $4 * 1e-6
    p = 2 * (P - 1) * a + 2 * (P - 1) / P * S * b
    c = S / P; r = ra + rb * c; if (r < 0) r = 0
    q = 2 * (P - 1) * piecewise(c) + (P - 1) * r
    e = (p - t) / t; ep = (q - t) / t
    mark = (e < -0.30 || e > 0.30) ? " *" : "  "
    markp = (ep < -0.30 || ep > 0.30) ? " *" : "  "
    if (mark == " *") ok = 0
    if (markp == " *") okp = 0
    if (e * e > worst * worst) { worst = e; wsize = S }
    if (ep * ep > worstp * worstp) { worstp = ep; wsizep = S }
    printf "  %10d %14.3f %14.3f %+8.1f%%%s %12.3f %+8.1f%%%s\n", S, t * 1e6, p * 1e6, 100 * e, mark, q * 1e6, 100 * ep, markp
    n++
}
END {
    if (n == 0) { print "bench_alpha_beta.sh: no allreduce rows" > "/dev/stderr"; exit 1 }
    printf "# (* outside +-30%%)\n"
    printf "# alpha-beta: largest error %+.1f%% at %d B; every size within +-30%%: %s\n", 100 * worst, wsize, ok ? "yes" : "NO"
    printf "# piecewise:  largest error %+.1f%% at %d B; every size within +-30%%: %s\n", 100 * worstp, wsizep, okp ? "yes" : "NO"
}' "$work/allreduce.txt"
