#!/usr/bin/env bash
# Sets up a fresh machine, then builds and runs the whole test suite twice: the
# release build, and the AddressSanitizer + UndefinedBehaviorSanitizer build.
# Ends with the skipped tests of both stages and why (scripts/skipped_tests.py,
# from ctest's JUnit file; Criterion prints its skips with verbosity 1). A
# stage whose tests fail still prints its skips, then stops the script with
# ctest's status.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
jobs=$(nproc)
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# skipped: the lists of the stages run so far.
skipped() {
    local stage
    for stage in release asan; do
        if [ -e "$results/$stage.skipped" ]; then cat "$results/$stage.skipped"; fi
    done
}

for preset in release asan; do
    echo "== $preset: configure and build"
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" -j "$jobs"
    echo "== $preset: tests"
    rc=0
    CRITERION_VERBOSITY_LEVEL=1 ctest --preset "$preset" -j "$jobs" \
        --output-junit "$results/$preset.xml" --test-output-size-passed 4000000 || rc=$?
    if ! /usr/bin/python3 scripts/skipped_tests.py "$preset" "$results/$preset.xml" \
        >"$results/$preset.skipped"; then
        [ "$rc" -ne 0 ] || rc=1
    fi
    if [ "$rc" -ne 0 ]; then
        skipped
        echo "== $preset: tests failed (status $rc)" >&2
        exit "$rc"
    fi
done

# The file readers and parsers under libFuzzer, for a bounded time each
# (D5_FUZZ_SECONDS, 60 by default), from their seed corpora (docs/guide.md).
echo "== fuzz: the file readers and parsers"
./scripts/fuzz.sh

skipped
# One closing line over both builds' ctest entries (a ctest entry that did
# not run counts as skipped; Criterion's skips inside an entry are listed above).
/usr/bin/python3 - "$results/release.xml" "$results/asan.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET
counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status")
        key = "skipped" if status == "notrun" else "failed" if status == "fail" else "passed"
        counts[key] += 1
print("suite: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % counts)
EOF
