#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/tally.py, which make check's summary counts with: a suite that
dies partway, bails out or reports what it did not plan fails; skips are
not passes; a missing log is a failure."""
import os
import subprocess
import sys
import tempfile

TALLY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "tally.py")

CASES = [
    # (what, kind, file content, expected "passed failed skipped")
    ("all planned cases pass", "tap", "1..2\nok 1 - a\nok 2 - b\n", "2 0 0"),
    ("the plan may come last", "tap", "ok 1 - a\nok 2 - b\n1..2\n", "2 0 0"),
    ("a skip is not a pass", "tap", "1..2\nok 1 - a\nok 2 - b # SKIP no KVM\n", "1 0 1"),
    ("a failure", "tap", "1..2\nok 1 - a\nnot ok 2 - b\n", "1 1 0"),
    ("died after 2 of 40", "tap", "1..40\nok 1 - a\nok 2 - b\n", "2 38 0"),
    ("bailed out after all it planned", "tap", "1..1\nok 1 - a\nBail out! QEMU died\n", "1 1 0"),
    ("no plan", "tap", "ok 1 - a\n", "1 1 0"),
    ("more cases than planned", "tap", "1..1\nok 1 - a\nok 2 - b\n", "2 1 0"),
    ("comments are no cases", "tap", "1..1\n# ok 7 - from a guest console\nok 1 - a\n", "1 0 0"),
    ("no results at all", "tap", "", "0 1 0"),
    ("a JUnit log", "junit",
     '<testsuites><testsuite name="s"><testcase name="a"/><testcase name="b">'
     '<failure/></testcase><testcase name="c"><skipped/></testcase></testsuite></testsuites>',
     "1 1 1"),
    ("a JUnit log that is not XML", "junit", "<testsuites>", "0 1 0"),
    ("a disabled GoogleTest case is a skip", "junit",
     '<testsuites><testsuite name="s"><testcase name="a"/>'
     '<testcase name="DISABLED_b" status="notrun"/></testsuite></testsuites>', "1 0 1"),
]


def main():
    print("1..%d" % (len(CASES) + 1))
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for i, (what, kind, text, want) in enumerate(CASES, 1):
            path = os.path.join(d, "%d.log" % i)
            with open(path, "w") as f:
                f.write(text)
            got = subprocess.run([sys.executable, TALLY, kind, path], capture_output=True,
                                 text=True).stdout.strip()
            ok = got == want
            failed += not ok
            print("%s %d - %s%s" % ("ok" if ok else "not ok", i, what,
                                    "" if ok else " (got %r, want %r)" % (got, want)))
        got = subprocess.run([sys.executable, TALLY, "tap", os.path.join(d, "missing")],
                             capture_output=True, text=True).stdout.strip()
        ok = got == "0 1 0"
        failed += not ok
        print("%s %d - a missing log is one failure%s" % (
            "ok" if ok else "not ok", len(CASES) + 1, "" if ok else " (got %r)" % got))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
