#!/bin/sh
# Two ranks on two "hosts" joined by TCP (scripts/netns_hosts.sh: two
# network namespaces and a veth pair; Open MPI's TCP transport only, no
# shared memory):
#   - d5 pingpong and d5 allreduce --check run across the link;
#   - d5 train --distributed dsgd ends with the parameters of the same job on
#     one host (shared memory): the same parameter hash, the same losses;
#   - with 1 ms more latency and 1% of packets lost each way (tc netem; where
#     the kernel has no netem, a 20 Mbit/s tbf link) it still does, every
#     rank agreeing;
#   - with the link cut mid-run, the job ends non-zero within --comm-timeout
#     + 5 s, a rank naming what it waited for, and nothing is left running
#     in either namespace.
#
#   two_hosts.sh D5 SOURCE_DIR
#
# Exit status 77 (a skipped test) where network namespaces cannot be made:
# not root, no iproute2, tc or mpirun.
set -u
d5=$1 src=$2
hosts="$src/scripts/netns_hosts.sh"
export D5_NETNS_PREFIX="d5t$$"
export D5_NETNS_NET="10.79.$(($$ % 200 + 20))"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failures=0
timeout_s=3
limit_ms=$(((timeout_s + 5) * 1000))

skip() {
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "not root: network namespaces need CAP_NET_ADMIN"
for tool in ip tc mpirun; do
    command -v $tool >/dev/null 2>&1 || skip "no $tool"
done
ip netns add "${D5_NETNS_PREFIX}probe" 2>/dev/null || skip "ip netns add failed here"
ip netns delete "${D5_NETNS_PREFIX}probe"

work=$(mktemp -d "${TMPDIR:-/tmp}/d5-two-hosts.XXXXXX")
cleanup() {
    "$hosts" down >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
"$hosts" up || exit 1

now_ns() { date +%s%N; }
fail() {
    echo "FAIL $*"
    failures=$((failures + 1))
}

# The JSON field of a d5 train --json file, through Python or grep.
field() {
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"
}

train_args="train --distributed dsgd --model lenet --dataset synthetic --epochs 1 --threads 1
    --comm-timeout 30"

# ---- pingpong, allreduce --check ----
if "$hosts" run -- "$d5" pingpong --time 0.05 -e 65536 >"$work/pp.out" 2>&1 &&
    grep -q '65536' "$work/pp.out"; then
    echo "ok   pingpong across the link"
else
    fail "pingpong across the link:"
    tail -n 20 "$work/pp.out"
fi
if "$hosts" run -- "$d5" allreduce --check --time 0.05 -e 1048576 >"$work/ar.out" 2>&1; then
    echo "ok   allreduce --check across the link"
else
    fail "allreduce --check across the link:"
    tail -n 20 "$work/ar.out"
fi

# ---- dsgd: one host against two, then over a slow and lossy link ----
# shellcheck disable=SC2086
mpirun -n 2 "$d5" $train_args --json "$work/one.json" >"$work/one.out" 2>&1 ||
    fail "dsgd on one host:" "$(tail -n 20 "$work/one.out")"
for link in clean slow_lossy; do
    if [ $link = slow_lossy ]; then
        if ! "$hosts" fault netem delay 1ms loss 1% 2>"$work/netem.err"; then
            # Kernels built without sch_netem: a slow link (tc tbf) instead.
            echo "note netem is not available here ($(head -c 80 "$work/netem.err")):" \
                "a 20 Mbit/s tbf link instead of 1 ms delay and 1% loss"
            link=slow
            "$hosts" fault rate 20mbit || fail "tc tbf"
        fi
    fi
    # shellcheck disable=SC2086
    if ! "$hosts" run -- "$d5" $train_args --json "$work/$link.json" >"$work/$link.out" 2>&1; then
        fail "dsgd across the $link link:"
        tail -n 20 "$work/$link.out"
        continue
    fi
    h1=$(field "$work/one.json" "d['distributed']['parameter_hash']")
    h2=$(field "$work/$link.json" "d['distributed']['parameter_hash']")
    l1=$(field "$work/one.json" "d['losses']")
    l2=$(field "$work/$link.json" "d['losses']")
    checks=$(field "$work/$link.json" "d['distributed']['hash_checks']")
    comm=$(field "$work/$link.json" "d['distributed']['comm']")
    if [ "$h1" = "$h2" ] && [ "$l1" = "$l2" ] && [ "$checks" -ge 1 ]; then
        echo "ok   dsgd across the $link link: parameter hash $h2 as on one host," \
            "the same losses, ranks agreeing ($checks hash checks, comm $comm)"
    else
        fail "dsgd across the $link link: hash $h2 (one host $h1), losses equal:" \
            "$([ "$l1" = "$l2" ] && echo yes || echo no), hash checks $checks"
    fi
done
"$hosts" fault clear

# ---- the link cut mid-run ----
out="$work/cut.out"
"$hosts" run -- "$d5" train --distributed dsgd --model lenet --dataset synthetic --epochs 50 \
    --threads 1 --comm-timeout $timeout_s >"$out" 2>&1 &
mp=$!
i=0
while ! grep -q '^sampler:' "$out" && kill -0 $mp 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1
    i=$((i + 1))
done
sleep 1
t0=$(now_ns)
"$hosts" fault cut
while kill -0 $mp 2>/dev/null && [ $(($(now_ns) - t0)) -lt 30000000000 ]; do sleep 0.05; done
t1=$(now_ns)
running=0
kill -0 $mp 2>/dev/null && running=1 && kill -KILL $mp 2>/dev/null
wait $mp
rc=$?
# Every process of either host gone (ranks, and Open MPI's daemon, which
# notices the dead link by its keepalives) within the same limit.
in_hosts() { ip netns pids "${D5_NETNS_PREFIX}0" 2>/dev/null; ip netns pids "${D5_NETNS_PREFIX}1" 2>/dev/null; }
while [ -n "$(in_hosts)" ] && [ $(($(now_ns) - t0)) -lt $((limit_ms * 1000000)) ]; do sleep 0.05; done
t2=$(now_ns)
left=""
for p in $(in_hosts); do
    left="$left $(ps -o pid=,comm= -p "$p" 2>/dev/null)"
    kill -KILL "$p" 2>/dev/null
done
ms=$(((t1 - t0) / 1000000))
all_ms=$(((t2 - t0) / 1000000))
if [ $running = 1 ] || [ $rc = 0 ] || [ $ms -ge $limit_ms ] || [ -n "$left" ]; then
    fail "link cut: exit status $rc after $ms ms (expected non-zero within $limit_ms ms)," \
        "left running after $all_ms ms:${left:- none}"
    tail -n 30 "$out"
elif ! grep -q "rank [01] of 2: .*did not complete within $timeout_s s" "$out"; then
    fail "link cut: no message naming the rank and the operation:"
    tail -n 30 "$out"
else
    echo "ok   link cut: the job ended with exit status $rc after $ms ms, its last process" \
        "after $all_ms ms: $(grep -m1 "did not complete" "$out")"
fi
echo "$failures failed"
[ $failures = 0 ]
