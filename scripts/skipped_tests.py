#!/usr/bin/python3
"""Lists the skipped tests of a ctest run and why, from its JUnit file.

    scripts/skipped_tests.py LABEL JUNIT.xml

JUNIT.xml is what `ctest --output-junit` wrote, with the tests' whole output
(--test-output-size-passed) and Criterion's verbose lines
(CRITERION_VERBOSITY_LEVEL=1), as scripts/test.sh runs it. Two kinds of skip:
a ctest test that did not run (SKIP_REGULAR_EXPRESSION, exit code 77, a
missing executable: its status is "notrun"), with the last lines of its
output as the reason; and a Criterion test inside an executable that
cr_skip_test skipped: "[SKIP] suite::name: reason". Prints one line per
skipped test under a heading with LABEL and the count; exits 0 (skips are
reported, not failures), 2 when the file cannot be read.
"""
import re
import sys
import xml.etree.ElementTree as ET

SKIP = re.compile(r"^\[SKIP\] (\S+): (.*)$")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: skipped_tests.py LABEL JUNIT.xml")
    label, path = sys.argv[1], sys.argv[2]
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print("%s: cannot read the test results %s: %s" % (label, path, e), file=sys.stderr)
        sys.exit(2)
    rows = []
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        out = case.findtext("system-out") or ""
        if case.get("status") == "notrun":
            skipped = case.find("skipped")
            why = [l.strip(" -") for l in out.splitlines() if l.strip()
                   and "D5_TEST_SKIPPED" not in l][-2:]
            reason = "; ".join(why) or (skipped.get("message") if skipped is not None else "")
            rows.append("%s: %s" % (name, reason or "did not run"))
            continue
        for line in out.splitlines():
            m = SKIP.match(line)
            # "Test is disabled": left out by a --filter, not skipped.
            if m and m.group(2) != "Test is disabled":
                rows.append("%s (%s): %s" % (m.group(1), name, m.group(2)))
    print("== %s: %d skipped test%s" % (label, len(rows), "" if len(rows) == 1 else "s"))
    for r in rows:
        print("  " + r)


if __name__ == "__main__":
    main()
