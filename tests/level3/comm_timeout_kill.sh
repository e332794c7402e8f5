#!/bin/sh
# A rank killed (SIGKILL) or stopped (SIGSTOP) in the middle of
# `d5 pingpong`, `d5 allreduce --comm-timeout 3 --time 30` and
# `d5 train --distributed dsgd --comm-timeout 3` on two ranks:
# the job must end with a non-zero exit status within 10 s. Prints how long
# each took from the signal to mpiexec's exit.
#
#   comm_timeout_kill.sh D5 MPIEXEC NP_FLAG [MPIEXEC_FLAGS...]
#
# A killed rank is noticed by the launcher; a stopped one is not, and only
# the other rank's time-out (3 s, then d5_comm_abort) ends the job.
set -u
d5=$1 mpiexec=$2 np_flag=$3
shift 3
work=$(mktemp -d "${TMPDIR:-/tmp}/d5-comm-timeout.XXXXXX")
failures=0
limit_s=10

now_ns() { date +%s%N; }

# The pid of rank $2 among the children of mpiexec $1 (Open MPI:
# OMPI_COMM_WORLD_RANK; MPICH: PMI_RANK), or nothing.
rank_pid() {
    for p in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
        if printf '%s\n' "$env" | grep -qx "OMPI_COMM_WORLD_RANK=$2\|PMI_RANK=$2"; then
            echo "$p"
            return
        fi
    done
}

# case NAME SIGNAL MARKER D5-ARGS...: MARKER is a line of the output that
# says the run is under way.
run_case() {
    name=$1 sig=$2 marker=$3
    shift 3
    out="$work/$name.out"
    : >"$out"
    "$mpiexec" "$np_flag" 2 "$@" >"$out" 2>&1 &
    mp=$!
    # In the middle of the run: the marker is out (the table's header, the first
    # size being measured for 30 s; training started).
    i=0
    while ! grep -q "$marker" "$out" && kill -0 "$mp" 2>/dev/null && [ $i -lt 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    sleep 1
    victim=$(rank_pid "$mp" 1)
    if [ -z "$victim" ] || ! kill -0 "$mp" 2>/dev/null; then
        echo "FAIL $name: the job is not running as expected (rank 1: '${victim}')"
        cat "$out"
        kill -KILL "$mp" 2>/dev/null
        failures=$((failures + 1))
        return
    fi
    t0=$(now_ns)
    kill "-$sig" "$victim"
    # Up to 30 s, to say how long it took even when it is too long.
    while kill -0 "$mp" 2>/dev/null && [ $(($(now_ns) - t0)) -lt 30000000000 ]; do
        sleep 0.02
    done
    t1=$(now_ns)
    running=0
    if kill -0 "$mp" 2>/dev/null; then
        running=1
        for p in $(ps -o pid= --ppid "$mp" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        kill -KILL "$mp" 2>/dev/null
    fi
    wait "$mp"
    rc=$?
    kill -KILL "$victim" 2>/dev/null # a stopped rank the launcher left behind
    ms=$(((t1 - t0) / 1000000))
    secs=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
    if [ $running = 1 ] || [ $rc = 0 ] || [ $ms -ge $((limit_s * 1000)) ]; then
        echo "FAIL $name: rank 1 sent SIG$sig: exit status $rc after $secs s" \
            "(expected non-zero within $limit_s s)"
        tail -n 30 "$out"
        failures=$((failures + 1))
    else
        echo "ok   $name: rank 1 sent SIG$sig: the job ended with exit status $rc after $secs s"
    fi
    if [ "$sig" = STOP ] && ! grep -q "did not complete within 3 s" "$out"; then
        echo "FAIL $name: no time-out message:"
        tail -n 30 "$out"
        failures=$((failures + 1))
    fi
}

for sig in KILL STOP; do
    run_case "pingpong_$sig" $sig 'size(B)' "$@" "$d5" pingpong --comm-timeout 3 --time 30
    run_case "allreduce_$sig" $sig 'size(B)' "$@" "$d5" allreduce --comm-timeout 3 --time 30
    run_case "train_$sig" $sig '^sampler:' "$@" "$d5" train --distributed dsgd --comm-timeout 3 \
        --model lenet --dataset synthetic --epochs 50 --threads 1
done
rm -rf "$work"
echo "$failures failed"
[ $failures = 0 ]
