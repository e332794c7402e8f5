#!/usr/bin/env bash
# Runs the whole test suite under valgrind's memcheck on the release build
# (optimised as benchmarks use it, with -g for readable stacks), in
# build/valgrind. Every test executable runs under valgrind, and so does every
# program it starts (d5 itself, in the command-line tests), except the MPI
# launchers and compilers; tests driven by CMake scripts (cmake -P) run their
# programs without it. A test fails on any memcheck error or definite leak
# (exit status 99). Time limits are multiplied by D5_VALGRIND_TIMEOUT_SCALE
# (default 20). Extra arguments go to ctest (e.g. -R core_ to run a subset).
# tests/valgrind.supp holds the suppressions, each with its reason.
# D5_VALGRIND_BUILD sets the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh # packages (valgrind among them) and the datasets, as scripts/test.sh
build=${D5_VALGRIND_BUILD:-build/valgrind}
scale=${D5_VALGRIND_TIMEOUT_SCALE:-20}
command -v valgrind >/dev/null || {
    echo "valgrind.sh: valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
}
memcheck="valgrind;--error-exitcode=99;--trace-children=yes"
memcheck+=";--trace-children-skip=*/mpiexec,*/mpirun,*/orterun,*/orted,*/cc,*/gcc,*/c++,*/g++,*/nvcc,*/ld,*/as,*/collect2"
memcheck+=";--leak-check=full;--errors-for-leak-kinds=definite;--show-leak-kinds=definite"
memcheck+=";--suppressions=$PWD/tests/valgrind.supp;--num-callers=30;--quiet"
# Without the CUDA parts: nothing of them runs without a GPU, and loading the
# CUDA libraries under valgrind costs seconds in every process.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-g -DD5_WITH_CUDA=OFF \
    -DD5_TEST_TIMEOUT_SCALE="$scale" "-DCMAKE_CROSSCOMPILING_EMULATOR=$memcheck" >/dev/null
cmake --build "$build" -j"$(nproc)"
# The accuracy run trains for minutes natively: hours under valgrind.
cd "$build"
GOMP_SPINCOUNT=20000 ctest -j"$(nproc)" -E '^dist_accuracy$' --output-on-failure "$@"
