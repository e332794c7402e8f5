#!/usr/bin/env bash
# Sets up a fresh machine, then builds and runs the whole test suite twice: the
# release build, and the AddressSanitizer + UndefinedBehaviorSanitizer build.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
jobs=$(nproc)
for preset in release asan; do
    echo "== $preset: configure and build"
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" -j "$jobs"
    echo "== $preset: tests"
    ctest --preset "$preset" -j "$jobs"
done

# The ONNX loader under libFuzzer, for a bounded time (D5_FUZZ_SECONDS, 60 by
# default), from the seed corpus of ONNX's node tests.
echo "== fuzz: the ONNX loader"
./scripts/fuzz.sh
