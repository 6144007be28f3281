#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Count test cases for make check's summary line.

  tally.py junit FILE...   count <testcase> results in meson's JUnit logs
  tally.py tap FILE...     count TAP result lines ("ok", "not ok", "# SKIP")

Prints "passed failed skipped" on one line.  A file that is missing or
unreadable counts as one failure: a suite that produced no results failed.
"""
import re
import sys
import xml.etree.ElementTree as ET


def junit(path):
    p = f = s = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            f += 1
        elif "skipped" in kinds:
            s += 1
        else:
            p += 1
    return p, f, s


TAP_RESULT = re.compile(r"^\s*(not ok|ok)\b(.*)$")


def tap(path):
    p = f = s = 0
    with open(path, errors="replace") as fh:
        for line in fh:
            m = TAP_RESULT.match(line)
            if not m:
                continue
            directive = m.group(2).upper()
            if "# SKIP" in directive or "#SKIP" in directive:
                s += 1
            elif m.group(1) == "ok":
                p += 1
            else:
                f += 1
    return p, f, s


def main():
    kind, paths = sys.argv[1], sys.argv[2:]
    total = [0, 0, 0]
    for path in paths:
        try:
            counts = junit(path) if kind == "junit" else tap(path)
        except (OSError, ET.ParseError):
            counts = (0, 1, 0)
        if sum(counts) == 0:
            counts = (0, 1, 0)
        total = [a + b for a, b in zip(total, counts)]
    print(*total)


if __name__ == "__main__":
    main()
