#!/usr/bin/env bash
# Compiles every ```c block of README.md and docs/*.md with the project's
# warnings as errors, so that no example in the documentation goes stale.
#   check_snippets.sh SOURCE_DIR CC
set -euo pipefail
src=$1
cc=${2:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
failed=0
for md in "$src"/README.md "$src"/docs/*.md; do
    awk -v dir="$work" -v base="$(basename "$md" .md)" '
        /^```c$/ { k++; f = sprintf("%s/%s_%d.c", dir, base, k); p = 1; next }
        /^```$/  { p = 0; next }
        p        { print > f }' "$md"
done
for f in "$work"/*.c; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    if "$cc" -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Werror \
        -I "$src/include" -c "$f" -o "$f.o" 2>"$f.err"; then
        echo "pass  $(basename "$f")"
    else
        failed=$((failed + 1))
        echo "FAIL  $(basename "$f")"
        sed 's/^/      /' "$f.err"
    fi
done
echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$n" -gt 0 ]
