# shellcheck shell=bash disable=SC2034,SC2154 # the variables are the scripts'
# What the benchmark scripts share; each sources it from its folder:
#
#   . "$(dirname "$0")/../bench_common.sh"
#
# The functions read the script's `d5` (the d5 binary) and `work`.

here=$(cd "$(dirname "$0")" && pwd) # the script's folder
root=$(cd "$here/../.." && pwd)     # the repository

# Exits 2, naming the script, when $d5 is not an executable.
bench_need_d5() {
    [ -x "$d5" ] || { echo "$(basename "$0"): no d5 binary at $d5" >&2; exit 2; }
}

# mpirun: $MPIRUN, or mpirun. Open MPI refuses to run as root unless told.
bench_mpi_setup() {
    mpirun=${MPIRUN:-mpirun}
    if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
}

# The lines after a script's first: the machine's load (timings on a busy
# machine mean little), then the versions of MPI and of d5.
bench_mpi_header() {
    echo "# $(uptime)"
    echo "# $("$mpirun" --version 2>/dev/null | head -1); $("$d5" version | head -1)"
}

# Removes $work at the end, or with D5_BENCH_KEEP=1 keeps it and says where.
bench_drop_work() {
    if [ -n "${D5_BENCH_KEEP:-}" ]; then echo "# raw results kept in $work" >&2; else rm -rf "$work"; fi
}

# An awk function for the programs' text: median(list), the median of the
# numbers in a list separated by spaces.
bench_awk_median='
function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}'

# A JSON file's first number of a key (d5's files: one key a line).
bench_json_number() { sed -n "s/^ *\"$2\": *\\([-0-9.eE+]*\\).*/\\1/p" "$1" | head -1; }

# SMPI's network model calibrated on `d5 pingpong --exchange --fit` alone:
# bench_sim_calibrate PINGPONG.json PINGPONG.txt sets sim_lat and sim_bw
# (smpi/lat-factor and smpi/bw-factor, "size:factor;size:factor", each from
# the start of a range of the piecewise fit, for a platform whose links have
# 1 us and 1 GB/s: a message of a size in range k then takes alpha_k +
# beta_k S), and sim_reduce_alpha, sim_reduce_beta (the fitted sum, seconds
# and seconds a byte). A range whose line has a negative alpha (the slope of
# large messages that leave the caches) cannot be a latency: it is cut into
# ranges of a doubling of size, each with no latency and the bandwidth of the
# line at the middle of its range (the geometric mean of its ends), up to
# 1 GiB. Prints the fit and the factors.
bench_sim_calibrate() {
    local json=$1 txt=$2 nseg k from a b next f l w
    nseg=$(bench_json_number "$json" exchange_segments)
    nseg=${nseg%.*}
    [ -n "$nseg" ] || { echo "$(basename "$0"): no piecewise fit in $json" >&2; exit 1; }
    sim_lat="" sim_bw=""
    for ((k = 0; k < nseg; k++)); do
        from=$(bench_json_number "$json" "exchange_${k}_from_bytes")
        a=$(bench_json_number "$json" "exchange_${k}_alpha_s")
        b=$(bench_json_number "$json" "exchange_${k}_beta_s_per_byte")
        next=$(bench_json_number "$json" "exchange_$((k + 1))_from_bytes")
        while read -r f l w; do
            sim_lat="$sim_lat${sim_lat:+;}$f:$l"
            sim_bw="$sim_bw${sim_bw:+;}$f:$w"
        done < <(awk -v f="$from" -v a="$a" -v b="$b" -v n="${next:-1073741824}" 'BEGIN {
            if (a >= 0) { printf "%d %.6g %.6g\n", f, a / 1e-6, 1 / (b * 1e9); exit }
            for (lo = f; lo < n; lo = hi) {
                hi = 2 * (lo > 1 ? lo : 1); if (hi > n) hi = n
                m = sqrt(lo * hi); t = a + b * m
                printf "%d 0 %.6g\n", lo, m / t / 1e9
            }
        }')
    done
    sim_reduce_alpha=$(bench_json_number "$json" reduce_alpha_s)
    sim_reduce_beta=$(bench_json_number "$json" reduce_s_per_byte)
    [ -n "$sim_reduce_beta" ] || { echo "$(basename "$0"): no reduce_s_per_byte in $json" >&2; exit 1; }
    sim_reduce_alpha=$(awk -v a="$sim_reduce_alpha" 'BEGIN { print a < 0 ? 0 : a }')
    sed -n '/^# piecewise fit/,/^# reduction/p' "$txt"
    echo "# SMPI: smpi/lat-factor:$sim_lat smpi/bw-factor:$sim_bw; a sum: $sim_reduce_alpha s + $sim_reduce_beta s/B"
}
