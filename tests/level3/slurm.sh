#!/bin/sh
# d5 under Slurm on a one-node cluster that the test starts and stops
# (scripts/slurm_local.sh):
#   - srun -n 2 d5 allreduce --check;
#   - d5 scaling --launcher "srun -n {n}": a strong series of real d5 train
#     --distributed dsgd runs on 1 and 2 ranks, both rows measured;
#   - the commands of d5 scaling --print-only submitted with sbatch --wait,
#     each job writing its run's JSON with the ranks it asked for.
#
#   slurm.sh D5 SOURCE_DIR
#
# Exit status 77 (a skipped test) without root or Slurm's programs.
set -u
d5=$1 src=$2
export PATH="$PATH:/usr/sbin"
skip() {
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root: slurmd runs jobs as their users"
for tool in munged slurmctld slurmd srun sbatch sinfo; do
    command -v $tool >/dev/null 2>&1 || skip "no $tool (Debian: slurmctld slurmd slurm-client munge)"
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/d5-slurm-test.XXXXXX")
rmdir "$dir"
export D5_SLURM_PORT=$((20000 + ($$ % 20000) * 2))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cluster="$src/scripts/slurm_local.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/d5-slurm-work.XXXXXX")
cleanup() {
    "$cluster" stop "$dir" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
"$cluster" start "$dir" || exit 1
export SLURM_CONF="$dir/slurm.conf"
failures=0
fail() {
    echo "FAIL $*"
    failures=$((failures + 1))
}
json() {
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"
}

# ---- srun ----
if srun -n 2 "$d5" allreduce --check --time 0.05 -e 65536 >"$work/ar.out" 2>&1 &&
    grep -q '65536' "$work/ar.out"; then
    echo "ok   srun -n 2 d5 allreduce --check"
else
    fail "srun -n 2 d5 allreduce --check:"
    tail -n 20 "$work/ar.out"
fi

# ---- d5 scaling with srun as its launcher ----
train="d5 train --model lenet --dataset synthetic --distributed dsgd --sampler sharded-batch
    --batch 32 --max-batches 10 --threads 1"
# shellcheck disable=SC2086
if "$d5" scaling --ranks 1,2 --mode strong --launcher "srun -n {n}" \
    --json "$work/series.json" -- $train >"$work/scaling.out" 2>&1; then
    rows=$(json "$work/series.json" "len(d['series'])")
    measured=$(json "$work/series.json" "sum(1 for r in d['series'] if not r['modelled'] and r['samples_per_second'] > 0)")
    if [ "$rows" = 2 ] && [ "$measured" = 2 ]; then
        echo "ok   d5 scaling --launcher 'srun -n {n}': 2 measured rows"
    else
        fail "d5 scaling under srun: $rows rows, $measured measured"
    fi
else
    fail "d5 scaling under srun:"
    tail -n 20 "$work/scaling.out"
fi

# ---- d5 scaling --print-only's commands through sbatch ----
# shellcheck disable=SC2086
"$d5" scaling --ranks 1,2 --mode strong --launcher "srun -n {n}" --print-only -- $train \
    >"$work/commands" 2>"$work/print.err" || fail "d5 scaling --print-only: $(cat "$work/print.err")"
n=0
while IFS= read -r cmd; do
    case $cmd in srun*) ;; *) continue ;; esac
    ranks=$(echo "$cmd" | sed -n 's/^srun -n \([0-9]*\) .*/\1/p')
    n=$((n + 1))
    if (cd "$work" && sbatch --wait -n "$ranks" -o "job-$ranks.out" --wrap "$cmd" >/dev/null 2>&1); then
        got=$(json "$work/d5-scaling-$ranks.json" "d['distributed']['ranks']" 2>/dev/null)
        if [ "$got" = "$ranks" ]; then
            echo "ok   sbatch -n $ranks --wrap '$(echo "$cmd" | cut -c1-40)...': $got ranks in its JSON"
        else
            fail "sbatch -n $ranks: the run's JSON says ranks '$got'"
            tail -n 20 "$work/job-$ranks.out"
        fi
    else
        fail "sbatch -n $ranks --wrap '$cmd' failed:"
        tail -n 20 "$work/job-$ranks.out" 2>/dev/null
    fi
done <"$work/commands"
[ $n = 2 ] || fail "d5 scaling --print-only gave $n srun commands, expected 2"
echo "$failures failed"
[ $failures = 0 ]
