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

# The file readers and parsers under libFuzzer, for a bounded time each
# (D5_FUZZ_SECONDS, 60 by default), from their seed corpora (docs/guide.md).
echo "== fuzz: the file readers and parsers"
./scripts/fuzz.sh
