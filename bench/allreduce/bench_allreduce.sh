#!/usr/bin/env bash
# d5's allreduce against MPI_Allreduce in a plain loop, on 2 ranks, side by side.
#
#   bench/allreduce/bench_allreduce.sh [BUILD_DIR] [TIME] [ROUNDS]
#
# For each size from 1 KiB to 64 MiB (doubling), float32: `d5 allreduce --comm
# mpi` (the MPI library's allreduce through d5's communicator and measurement),
# `d5 allreduce --comm ring` (d5's own ring on point-to-point messages) and
# d5-bench-mpi-allreduce (MPI_Allreduce in a plain loop: bench_mpi_allreduce.c).
# TIME is d5's budget per size in seconds (default 1). With ROUNDS > 1 (default
# 1) the three programs take turns that many times and each figure is the
# median over rounds. Printed: busbw per size and program, and the ratios to the
# plain loop. Goals: mpi at least 0.9x the plain loop at every size; ring at
# least 0.8x from 1 MiB on. Timings on a busy or oversubscribed machine mean
# little: the script prints `uptime` first. D5_BENCH_KEEP=1 keeps the raw files.
set -euo pipefail
# shellcheck source=bench/bench_common.sh
. "$(dirname "$0")/../bench_common.sh"
build=${1:-$root/build/release}
time=${2:-1}
rounds=${3:-1}
d5=$build/d5
bare=$build/d5-bench-mpi-allreduce
work=$(mktemp -d)
trap bench_drop_work EXIT

bench_need_d5
[ -x "$bare" ] || { echo "bench_allreduce.sh: no $bare (built when MPI is found)" >&2; exit 2; }
bench_mpi_setup

echo "# d5 allreduce (mpi, ring) and a plain MPI_Allreduce loop: 2 ranks, float32, $(nproc) CPUs"
bench_mpi_header

for r in $(seq "$rounds"); do
    for comm in mpi ring; do
        "$mpirun" -n 2 "$d5" allreduce -b 1K -e 64M --comm "$comm" --time "$time" \
            >"$work/$comm-$r.txt" 2>"$work/$comm-$r.err"
    done
    "$mpirun" -n 2 "$bare" 1024 $((64 << 20)) >"$work/bare-$r.txt" 2>"$work/bare-$r.err"
done
grep -h "oversubscribed" "$work"/mpi-*.txt | head -1 || true

# size busbw, one line per size and round: d5's busbw is the next-to-last
# column (#wrong is the last), the plain loop's the last.
for r in $(seq "$rounds"); do
    awk '!/^#/ && NF { print $1, $(NF-1) }' "$work/mpi-$r.txt" >>"$work/mpi.col"
    awk '!/^#/ && NF { print $1, $(NF-1) }' "$work/ring-$r.txt" >>"$work/ring.col"
    awk '!/^#/ && NF { print $1, $NF }' "$work/bare-$r.txt" >>"$work/bare.col"
done

awk -v rounds="$rounds" "$bench_awk_median"'
FNR == 1 { file++ }
{ v[file, $1] = v[file, $1] " " $2; if (file == 3) sizes[++ns] = $1 }
END {
    printf "#\n# %10s %12s %12s %12s %9s %9s  %s\n", "size(B)", "bare(GB/s)", "mpi(GB/s)", "ring(GB/s)", "mpi/bare", "ring/bare", "goals"
    okm = 1; okr = 1
    for (i = 1; i <= ns; i++) {
        s = sizes[i]; if (seen[s]++) continue
        b = median(v[3, s]); m = median(v[1, s]); g = median(v[2, s])
        rm = b > 0 ? m / b : 0; rr = b > 0 ? g / b : 0
        note = ""
        if (rm < 0.9) { note = note " mpi<0.9"; okm = 0 }
        if (s >= 1048576 && rr < 0.8) { note = note " ring<0.8"; okr = 0 }
        printf "  %10d %12.3f %12.3f %12.3f %9.2f %9.2f %s\n", s, b, m, g, rm, rr, note == "" ? " ok" : note
    }
    printf "# mpi >= 0.9x the plain loop at every size: %s\n", okm ? "yes" : "NO"
    printf "# ring >= 0.8x the plain loop from 1 MiB: %s\n", okr ? "yes" : "NO"
}' "$work/mpi.col" "$work/ring.col" "$work/bare.col"
