#!/bin/sh
# d5-sim-train: a training step's timeline replayed on simulated hosts with
# the schemes' real communication.
#
#   sim_train.sh D5_SIM_TRAIN D5 SOURCE_DIR
#
# On the two hosts of platforms/pair.xml (1 us, 1 GB/s each way, SMPI's
# factors 1, no cross traffic), copies at 1e-12 s/B and sums at 1e-11 s/B, a
# profile of two parameters of 1 MiB (ready at 10 and 20 ms, the backward
# pass ends at 21 ms, the optimizer runs from 22 to 24 ms, the step ends at
# 25 ms):
# 1. local: the step is the profile's, 25 ms (and a loss agreed: < 50 us).
# 2. dsgd, one allreduce after the backward pass (--bucket-mb 0): the step is
#    25 ms plus the ring's arithmetic, 2 (1 us + 1 MiB / 1 GB/s) + 1 MiB x
#    1e-11 s, plus two copies of 2 MiB (pack, unpack): 27.114 ms, and that
#    much more is exposed communication.
# 3. dsgd with a bucket of 1 MiB a parameter overlaps the first bucket with
#    the 10 ms before the second gradient: less exposed than 2.
# 4. pssgd with a server rank runs; its step is longer than the profile's.
# 5. A profile that `d5 train --step-profile` wrote replays.
# 6. A missing profile is refused (exit 3, the file named); so is an unknown
#    scheme (exit 1, the schemes listed).
# MPI_Test costs no simulated time and MPI_Iprobe 1 us (smpi/test,
# smpi/iprobe; SMPI's default, 100 us each, would count dsgd's progress calls
# as communication; d5-sim-train's waits block, they never poll with
# MPI_Test). Exit 77 (skipped) without smpirun or the program.
set -eu
sim=$1
d5=$2
src=$3
plat=$src/level3_distributed/sim/platforms
if ! command -v smpirun >/dev/null 2>&1 || [ ! -x "$sim" ]; then
    echo "sim_train: no smpirun or $sim (libsimgrid-dev): skipped"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
printf 'host0\nhost1\nhost0\n' >"$work/hosts.txt"
cat >"$work/profile.json" <<'EOF'
{"schema": "d5-step-profile", "version": 1, "model": "two", "batch": 8, "threads": 1,
 "steps": 3, "parameters": [{"name": "w0", "elements": 262144}, {"name": "w1", "elements": 262144}],
 "ready": [{"parameter": 1, "s": 0.010}, {"parameter": 0, "s": 0.020}],
 "backward_end_s": 0.021, "update_begin_s": 0.022, "update_end_s": 0.024, "step_s": 0.025}
EOF

# simulate NP OUT D5-SIM-TRAIN-OPTIONS...
simulate() {
    np=$1 out=$2
    shift 2
    smpirun -np "$np" -platform "$plat/pair.xml" -hostfile "$work/hosts.txt" \
        --cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:no --cfg=network/crosstraffic:0 \
        --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1 --cfg=smpi/test:0 \
        --cfg=smpi/iprobe:1e-6 --cfg=smpi/display-timing:no --log=root.thres:warning "$sim" --steps 4 --copy-s-per-byte 1e-12 --sum-s-per-byte 1e-11 \
        "$@" >"$work/$out" 2>&1
}
# figure FILE NAME: the median in ms of row NAME ("step", "exposed").
figure() { awk -v k="$2" '$1 == k && $3 == "ms" { print $2; exit }' "$1"; }
# within X LO HI: LO <= X <= HI.
within() { awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x >= lo && x <= hi) }'; }
# check STATUS WHAT OUTPUT: ok, or FAIL with the program's output.
check() {
    if [ "$1" = 0 ]; then echo "ok   $2"; else
        echo "FAIL $2:"
        cat "$work/$3"
        fail=1
    fi
}

rc=0
{ simulate 2 local.out --profile "$work/profile.json" --scheme local --comm ring &&
    within "$(figure "$work/local.out" step)" 25 25.05; } || rc=$?
check $rc "local: the step is the profile's 25 ms ($(figure "$work/local.out" step) ms)" local.out

rc=0
{ simulate 2 once.out --profile "$work/profile.json" --scheme dsgd --comm ring --bucket-mb 0 &&
    within "$(figure "$work/once.out" step)" 27.10 27.17 &&
    within "$(figure "$work/once.out" exposed)" 2.10 2.17; } || rc=$?
check $rc "dsgd, one allreduce: 25 ms + the ring's 2.114 ms ($(figure "$work/once.out" step) ms, exposed $(figure "$work/once.out" exposed) ms)" once.out

rc=0
{ simulate 2 bucket.out --profile "$work/profile.json" --scheme dsgd --comm ring --bucket-mb 1 &&
    awk -v a="$(figure "$work/bucket.out" exposed)" -v b="$(figure "$work/once.out" exposed)" \
        'BEGIN { exit !(a != "" && a > 0 && a < b - 0.2) }'; } || rc=$?
check $rc "dsgd, buckets of 1 MiB overlap the backward pass (exposed $(figure "$work/bucket.out" exposed) ms)" bucket.out

rc=0
{ simulate 3 ps.out --profile "$work/profile.json" --scheme pssgd --servers 1 --comm ring &&
    grep -q "2 workers, 1 servers" "$work/ps.out" &&
    within "$(figure "$work/ps.out" step)" 25.01 1000; } || rc=$?
check $rc "pssgd with a server rank ($(figure "$work/ps.out" step) ms)" ps.out

if "$d5" train --model lenet --dataset synthetic --batch 16 --max-batches 4 --threads 1 --system-hz 0 \
    --step-profile "$work/lenet.json" >"$work/train.out" 2>&1; then
    rc=0
    { simulate 2 lenet.out --profile "$work/lenet.json" --scheme dsgd --comm ring &&
        grep -q "profile lenet: batch 16 a worker, 61706 parameters" "$work/lenet.out"; } || rc=$?
    check $rc "a profile of d5 train --step-profile replays" lenet.out
else
    check 1 "d5 train --step-profile" train.out
fi

rc=0
simulate 2 missing.out --profile "$work/none.json" || rc=$?
ok=1
[ "$rc" = 3 ] && grep -q "none.json" "$work/missing.out" && ok=0
check $ok "a missing profile: exit 3 naming it" missing.out
rc=0
simulate 2 scheme.out --profile "$work/profile.json" --scheme gossip || rc=$?
ok=1
[ "$rc" = 1 ] && grep -q "unknown distributed scheme 'gossip'" "$work/scheme.out" && ok=0
check $ok "an unknown scheme: exit 1 listing the schemes" scheme.out
exit $fail
