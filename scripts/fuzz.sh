#!/usr/bin/env bash
# Fuzzes d5's readers and parsers with libFuzzer, D5_FUZZ_SECONDS seconds
# (default 60) per target, one target after the other:
#   fuzz_load     the ONNX loader (onnx/fuzz/), from the node test models of
#                 libonnx-testdata
#   fuzz_tensor   TensorProto files (onnx/fuzz/)
#   fuzz_idx      IDX files, plain and gzip (datasets/fuzz/)
#   fuzz_cifar    CIFAR-10 and CIFAR-100 binary files (datasets/fuzz/)
#   fuzz_sizes    the sizes of `d5 test-operator` (cli/fuzz/)
#   fuzz_options  the option parser of every command (cli/fuzz/)
# The other targets start from the seeds in tests/fuzz/corpus/<target>/
# (tests/fuzz/make_corpus.py). D5_FUZZ_TARGETS="fuzz_idx fuzz_cifar" runs a
# subset. Each target's output is in build/fuzz/logs/<target>.log; its final
# statistics and a summary line are printed. Exits non-zero when a target finds
# a crash, a leak, a sanitizer report, an out-of-memory or a timeout, naming
# the target and the input that caused it, which is left in
# build/fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/fuzz
seconds=${D5_FUZZ_SECONDS:-60}
testdata=/usr/share/libonnx-testdata/data/node
all="fuzz_load fuzz_tensor fuzz_idx fuzz_cifar fuzz_sizes fuzz_options"
targets=${D5_FUZZ_TARGETS:-$all}

# The d5 libraries are instrumented for coverage and the sanitizers
# (D5_SANITIZE applies to everything); the fuzzer targets add libFuzzer itself.
# They need only the reference operators: no CUDA, no oneDNN (a cached
# DNNL_LIBRARY of OFF keeps find_library from looking for it).
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DD5_FUZZ=ON \
    -DD5_BUILD_TESTS=OFF -DD5_WITH_CUDA=OFF -DBUILD_SHARED_LIBS=OFF \
    -DDNNL_LIBRARY=OFF \
    -DD5_SANITIZE=fuzzer-no-link,address,undefined >/dev/null
# shellcheck disable=SC2086 # a list of targets
cmake --build "$build" -j "$(nproc)" --target $targets

# The folder of each target's binary.
folder() {
    case $1 in
    fuzz_load | fuzz_tensor) echo onnx ;;
    fuzz_idx | fuzz_cifar) echo datasets ;;
    fuzz_sizes | fuzz_options) echo cli ;;
    *) echo "fuzz.sh: unknown target '$1' (targets: $all)" >&2 && return 1 ;;
    esac
}

# The seed corpus, as a scratch copy: new inputs found along the way go to it.
seed() {
    local corpus=$build/corpus/$1
    rm -rf "$corpus"
    mkdir -p "$corpus"
    if [ "$1" = fuzz_load ]; then # one file per node test model
        for model in "$testdata"/*/model.onnx; do
            cp "$model" "$corpus/$(basename "$(dirname "$model")").onnx"
        done
    else
        cp tests/fuzz/corpus/"$1"/* "$corpus"/
    fi
}

# The value of libFuzzer's -print_final_stats line "stat::NAME: VALUE" in a log.
final_stat() {
    sed -n "s/^stat::$2: *//p" "$1" | tail -n 1
}

mkdir -p "$build/logs"
failed=0
summary=()
for target in $targets; do
    bin=$build/$(folder "$target")/$target
    seed "$target"
    artifacts=$build/artifacts/$target
    log=$build/logs/$target.log
    rm -rf "$artifacts"
    mkdir -p "$artifacts"
    echo "fuzz.sh: $target: $(find "$build/corpus/$target" -type f | wc -l) seeds, ${seconds}s"
    status=ok
    rc=0
    "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$build/corpus/$target" >"$log" 2>&1 &
    pid=$!
    wait "$pid" || rc=$?
    # The target's temporary folder, left behind when it stops on a failure.
    rm -rf /tmp/d5-fuzz-*-"$pid"-*
    if [ "$rc" -ne 0 ]; then
        found=$(find "$artifacts" -type f ! -name 'slow-unit-*' | head -n 1)
        status="FAILED: ${found:-no input saved, see $log}"
        failed=1
        echo "fuzz.sh: $target failed; reproduce with $bin ${found:-ARTIFACT}" >&2
        grep -E '^(==[0-9]+==|SUMMARY|.*runtime error)' "$log" | head -n 20 >&2 || true
    fi
    grep '^stat::' "$log" || true
    runs=$(final_stat "$log" number_of_executed_units)
    speed=$(final_stat "$log" average_exec_per_sec)
    summary+=("$(printf '%-13s %12s executions %8s exec/s  %s' "$target" "${runs:-?}" \
        "${speed:-?}" "$status")")
done

echo "fuzz.sh: summary (${seconds}s per target; logs in $build/logs)"
printf '  %s\n' "${summary[@]}"
exit "$failed"
