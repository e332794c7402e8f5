#!/usr/bin/env bash
# Two "hosts" on this machine: two network namespaces joined by a veth pair,
# each with an address of its own, so that an MPI job crosses a real TCP
# link (no shared memory) and the link can be slowed, made lossy or cut.
# Needs root (CAP_NET_ADMIN), iproute2 and, for faults, tc with netem.
#
#   scripts/netns_hosts.sh up                 # make the hosts d5h0 (10.77.0.1), d5h1 (10.77.0.2)
#   scripts/netns_hosts.sh run -- d5 pingpong # one rank on each, through Open MPI over TCP
#   scripts/netns_hosts.sh fault delay 1      # 1 ms more each way (tc netem)
#   scripts/netns_hosts.sh fault loss 1       # 1% of packets lost each way
#   scripts/netns_hosts.sh fault netem delay 1ms loss 1%   # any netem options
#   scripts/netns_hosts.sh fault rate 20mbit  # a slow link (tc tbf), for kernels without netem
#   scripts/netns_hosts.sh fault cut          # the link down
#   scripts/netns_hosts.sh fault clear        # the link up, without netem
#   scripts/netns_hosts.sh down               # remove both
#
# D5_NETNS_PREFIX (default d5h) names the namespaces PREFIX0 and PREFIX1 and
# the veth ends PREFIXv0 and PREFIXv1; D5_NETNS_NET (default 10.77.0) is the
# /24 they share. `run` starts mpirun in PREFIX0 with the hosts NET.1 and
# NET.2, one slot each, Open MPI's TCP transport only (btl tcp,self) on that
# network, and this script as its remote shell: Open MPI "logs in" to NET.2
# by running its daemon under `ip netns exec PREFIX1`. Its launcher's own
# links (oob) send TCP keepalives after 1 s idle, so that a cut link ends the
# job in seconds rather than the default 5 minutes and 3 (Linux's defaults:
# hours). Extra mpirun options go before the `--`.
set -euo pipefail

prefix=${D5_NETNS_PREFIX:-d5h}
net=${D5_NETNS_NET:-10.77.0}
self=$(readlink -f "$0")

die() {
    echo "netns_hosts.sh: $*" >&2
    exit 1
}

ns() { echo "${prefix}$1"; }

up() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
    for k in 0 1; do
        ip netns list | grep -qw "$(ns $k)" && die "namespace $(ns $k) exists: run '$0 down' first"
    done
    ip netns add "$(ns 0)"
    ip netns add "$(ns 1)"
    ip link add "${prefix}v0" type veth peer name "${prefix}v1"
    for k in 0 1; do
        ip link set "${prefix}v$k" netns "$(ns $k)"
        ip -n "$(ns $k)" addr add "$net.$((k + 1))/24" dev "${prefix}v$k"
        ip -n "$(ns $k)" link set "${prefix}v$k" up
        ip -n "$(ns $k)" link set lo up
    done
    echo "hosts: $(ns 0) $net.1, $(ns 1) $net.2 (veth ${prefix}v0 - ${prefix}v1)"
}

down() {
    for k in 0 1; do
        ip netns list | grep -qw "$(ns $k)" && ip netns delete "$(ns $k)"
    done
    return 0
}

# Open MPI's remote shell: rsh HOST COMMAND... runs COMMAND in HOST's namespace.
rsh() {
    local host=$1 k
    shift
    case $host in
    "$net.1") k=0 ;;
    "$net.2") k=1 ;;
    *) die "rsh: unknown host '$host' (expected $net.1 or $net.2)" ;;
    esac
    exec ip netns exec "$(ns $k)" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        /bin/sh -c "$*"
}

run() {
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        opts+=("$1")
        shift
    done
    [ $# -gt 1 ] || die "run: expected [MPIRUN OPTIONS] -- COMMAND..."
    shift
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    exec ip netns exec "$(ns 0)" mpirun --host "$net.1:1,$net.2:1" -np 2 \
        --mca plm_rsh_agent "$self rsh" --mca btl tcp,self \
        --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" \
        --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 \
        --mca oob_tcp_keepalive_probes 2 "${opts[@]}" "$@"
}

fault() {
    local what=${1:-} value=${2:-}
    for k in 0 1; do
        local dev="${prefix}v$k" n
        n=$(ns $k)
        case $what in
        delay) tc -n "$n" qdisc replace dev "$dev" root netem delay "${value}ms" ;;
        loss) tc -n "$n" qdisc replace dev "$dev" root netem loss "${value}%" ;;
        netem) tc -n "$n" qdisc replace dev "$dev" root netem "${@:2}" ;;
        rate) tc -n "$n" qdisc replace dev "$dev" root tbf rate "$value" burst 32kbit latency 400ms ;;
        cut) ip -n "$n" link set "$dev" down ;;
        clear)
            tc -n "$n" qdisc del dev "$dev" root 2>/dev/null || true
            ip -n "$n" link set "$dev" up
            ;;
        *) die "fault: expected delay MS, loss PERCENT, netem OPTIONS..., rate RATE, cut or clear" ;;
        esac
    done
}

case ${1:-} in
up) up ;;
down) down ;;
rsh) shift && rsh "$@" ;;
run) shift && run "$@" ;;
fault) shift && fault "$@" ;;
*)
    sed -n '2,23p' "$self" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
