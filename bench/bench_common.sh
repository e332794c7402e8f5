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
