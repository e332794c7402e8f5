#!/usr/bin/env bash
# Fuzzes the ONNX loader (onnx/fuzz/fuzz_load.c) with libFuzzer for
# D5_FUZZ_SECONDS seconds (default 60), starting from the node test models of
# libonnx-testdata. Exits non-zero when the fuzzer finds a crash, a leak, a
# sanitizer report or a timeout; the input that caused it is left in
# build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/fuzz
seconds=${D5_FUZZ_SECONDS:-60}
testdata=/usr/share/libonnx-testdata/data/node

# The d5 libraries are instrumented for coverage and the sanitizers
# (D5_SANITIZE applies to everything); the fuzzer target adds libFuzzer itself.
# The loader needs only the reference operators: no CUDA, no oneDNN (a
# cached DNNL_LIBRARY of OFF keeps find_library from looking for it).
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DD5_FUZZ=ON \
    -DD5_BUILD_TESTS=OFF -DD5_WITH_CUDA=OFF -DBUILD_SHARED_LIBS=OFF \
    -DDNNL_LIBRARY=OFF \
    -DD5_SANITIZE=fuzzer-no-link,address,undefined >/dev/null
cmake --build "$build" --target fuzz_load -j "$(nproc)"

# The seed corpus: one file per node test model.
corpus=$build/corpus
rm -rf "$corpus" "$build/artifacts"
mkdir -p "$corpus" "$build/artifacts"
for model in "$testdata"/*/model.onnx; do
    name=$(basename "$(dirname "$model")")
    cp "$model" "$corpus/$name.onnx"
done
echo "fuzz.sh: $(ls "$corpus" | wc -l) seed models, ${seconds}s"

# The corpus is a scratch copy: new inputs found along the way go to it.
if ! "$build/onnx/fuzz_load" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$corpus"; then
    echo "fuzz.sh: failure found; reproduce with $build/onnx/fuzz_load $build/artifacts/FILE" >&2
    ls -l "$build/artifacts" >&2
    exit 1
fi
