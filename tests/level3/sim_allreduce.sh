#!/bin/sh
# d5-sim-allreduce: d5's allreduces on hosts SimGrid simulates.
#
#   sim_allreduce.sh D5_SIM_ALLREDUCE SOURCE_DIR
#
# 1. On the two hosts of platforms/pair.xml (1 us, 1 GB/s each way, SMPI's
#    factors 1, no cross traffic) with a sum costing 0.01 ns/B, the ring's
#    arithmetic is exact: 2 steps of S/2 bytes and one sum of S/2,
#    2 (1 us + S/2 / 1 GB/s) + S/2 * 1e-11 s. Every size must be within 0.5%
#    and 0.1 us (MPI_Wtime's and SMPI's own small costs).
# 2. On the fat tree (2 nodes of 8 ranks), ring and recursive doubling run
#    and give one row a size, slower for larger sizes.
# Exit 77 (skipped) without smpirun or the program.
set -eu
sim=$1
src=$2
plat=$src/level3_distributed/sim/platforms
if ! command -v smpirun >/dev/null 2>&1 || [ ! -x "$sim" ]; then
    echo "sim_allreduce: no smpirun or $sim (libsimgrid-dev): skipped"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common="--cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:no --cfg=network/crosstraffic:0
    --cfg=smpi/display-timing:no --log=root.thres:warning"
fail=0

printf 'host0\nhost1\n' >"$work/pair.txt"
# shellcheck disable=SC2086
smpirun -np 2 -platform "$plat/pair.xml" -hostfile "$work/pair.txt" $common \
    --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1 \
    "$sim" --comm ring -b 1K -e 4M -f 8 --reps 3 --reduce-s-per-byte 1e-11 >"$work/pair.out" 2>&1 ||
    { cat "$work/pair.out"; exit 1; }
if awk '!/^#/ && $1 ~ /^[0-9]+$/ {
        m = $1 / 2; want = 2 * (1e-6 + m / 1e9) + m * 1e-11; got = $2 * 1e-6; n++
        e = (got - want) / want
        printf "ring on pair.xml: %d B simulated %.3f us, arithmetic %.3f us (%+.3f%%)\n", $1, got * 1e6, want * 1e6, 100 * e
        d = got - want; if (d < 0) d = -d
        if (d > 0.005 * want + 1e-7) bad++
    }
    END { exit (n == 5 && bad == 0) ? 0 : 1 }' "$work/pair.out"; then
    echo "ok   the ring on two simulated hosts is its arithmetic"
else
    echo "FAIL the ring on two simulated hosts:"; cat "$work/pair.out"; fail=1
fi

for i in 0 1 2 3 4 5 6 7; do echo node-0; done >"$work/tree.txt"
for i in 0 1 2 3 4 5 6 7; do echo node-127; done >>"$work/tree.txt"
for comm in ring recdbl; do
    # shellcheck disable=SC2086
    if smpirun -np 16 -platform "$plat/fat_tree_100g.xml" -hostfile "$work/tree.txt" $common \
        "$sim" --comm $comm -b 4K -e 1M -f 16 --reps 1 --reduce-s-per-byte 2e-11 \
        >"$work/$comm.out" 2>&1 &&
        grep -q "16 simulated ranks, backend $comm" "$work/$comm.out" &&
        awk '!/^#/ && $1 ~ /^[0-9]+$/ { n++; if (!($2 > prev)) bad++; prev = $2 }
             END { exit (n == 3 && bad == 0) ? 0 : 1 }' "$work/$comm.out"; then
        echo "ok   $comm on 16 ranks of the fat tree"
    else
        echo "FAIL $comm on 16 ranks of the fat tree:"; cat "$work/$comm.out"; fail=1
    fi
done
exit $fail
