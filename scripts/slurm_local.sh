#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for trying d5's Slurm job
# scripts and for the tests: munged, slurmctld and slurmd started by hand
# (no systemd), every file under one folder, ports of its own, one partition
# `d5` of this machine's CPUs. Needs root and Debian's slurmctld, slurmd,
# slurm-client and munge (scripts/setup.sh installs them).
#
#   scripts/slurm_local.sh start [DIR]   # default DIR: /tmp/d5-slurm
#   eval "$(scripts/slurm_local.sh env [DIR])"   # SLURM_CONF for srun, sbatch, sinfo
#   srun -n 2 --mpi=pmix d5 allreduce --check
#   scripts/slurm_local.sh stop [DIR]
#
# start waits until the node is idle (30 s at most) and says where the logs
# are when it is not; stop ends the three daemons and removes DIR.
set -euo pipefail

dir=${2:-/tmp/d5-slurm}
node=$(hostname -s)
port=${D5_SLURM_PORT:-6917} # slurmctld; slurmd one above

die() {
    echo "slurm_local.sh: $*" >&2
    exit 1
}

env_line() { echo "export SLURM_CONF=$dir/slurm.conf"; }

pid_of() { [ -s "$1" ] && cat "$1" 2>/dev/null || true; }

stop() {
    for f in slurmd slurmctld munged; do
        p=$(pid_of "$dir/$f.pid")
        if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
            kill "$p" 2>/dev/null || true
            for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$p" 2>/dev/null || true
        fi
    done
    rm -rf "$dir"
}

start() {
    [ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as their users)"
    for t in munged mungekey slurmctld slurmd srun sinfo; do
        command -v $t >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v $t >/dev/null 2>&1 ||
            die "no $t: install slurmctld slurmd slurm-client munge (scripts/setup.sh)"
    done
    export PATH=$PATH:/usr/sbin
    [ -e "$dir/slurm.conf" ] && die "$dir holds a cluster already: '$0 stop $dir' first"
    mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
    chmod 700 "$dir/munge"
    mungekey -c -k "$dir/munge/munge.key" -b 1024 >/dev/null 2>&1 ||
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$dir/munge/munge.key"
    munged --force --key-file "$dir/munge/munge.key" --socket "$dir/munge/munge.socket" \
        --pid-file "$dir/munged.pid" --log-file "$dir/munged.log" --seed-file "$dir/munge/seed"
    local cpus
    cpus=$(nproc)
    cat >"$dir/slurm.conf" <<EOF
# Written by scripts/slurm_local.sh: a one-node cluster under $dir.
ClusterName=d5local
SlurmctldHost=$node
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName=$node CPUs=$cpus State=UNKNOWN
PartitionName=d5 Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    export SLURM_CONF="$dir/slurm.conf"
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF"
    for _ in $(seq 60); do
        if sinfo -h -o '%t' 2>/dev/null | grep -q '^idle'; then
            echo "slurm: node $node idle, partition d5 ($cpus CPUs); $(env_line)"
            return 0
        fi
        sleep 0.5
    done
    echo "slurm_local.sh: the node did not come up; logs: $dir/slurmctld.log $dir/slurmd.log" >&2
    sinfo 2>&1 | head -5 >&2 || true
    tail -n 5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
    return 1
}

case ${1:-} in
start) start ;;
stop) stop ;;
env) env_line ;;
*)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
