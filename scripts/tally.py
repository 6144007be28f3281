#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Count test cases for make check's summary line.

  tally.py junit FILE...   count <testcase> results in meson's JUnit logs
  tally.py tap FILE...     count TAP result lines ("ok", "not ok", "# SKIP")

Prints "passed failed skipped" on one line.  A file that is missing or
unreadable counts as one failure: a suite that produced no results failed.
A TAP stream's cases that its plan ("1..N") announced and it never reported
count as failed (a suite that died partway), as does a stream without a
plan, one reporting more cases than planned, and a "Bail out!".

A test program can fail after all its cases passed (a sanitizer report at
exit, a crash in teardown), and meson then still copies the cases' passes
into the JUnit log: for FILE ending in .junit.xml, meson's .json log beside
it is read too, and each test it says failed adds one failure unless one of
its cases already failed.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


FAILED_RESULTS = {"FAIL", "ERROR", "TIMEOUT", "INTERRUPT", "UNEXPECTEDPASS"}


def junit(path):
    p = f = s = 0
    root = ET.parse(path).getroot()
    failed_in = set()  # suite and case names holding a failed case
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            kinds = {child.tag for child in case}
            if case.get("status") == "notrun":  # a DISABLED_ GoogleTest case
                kinds.add("skipped")
            if kinds & {"failure", "error"}:
                f += 1
                failed_in.add(suite.get("name", ""))
                failed_in.add(case.get("name", ""))
            elif "skipped" in kinds:
                s += 1
            else:
                p += 1
    log = path[: -len(".junit.xml")] + ".json" if path.endswith(".junit.xml") else None
    if log and os.path.exists(log):
        with open(log, errors="replace") as fh:
            for line in fh:
                try:
                    t = json.loads(line)
                except ValueError:
                    continue
                name = t.get("name", "")
                if t.get("result") not in FAILED_RESULTS:
                    continue
                # gtest suites are named "<project>.<test name>.<case suite>"
                if not any(n == name or f".{name}." in n or n.endswith("." + name)
                           for n in failed_in):
                    f += 1
    return p, f, s


TAP_RESULT = re.compile(r"^\s*(not ok|ok)\b(.*)$")
TAP_PLAN = re.compile(r"^\s*1\.\.(\d+)\s*$")


def tap(path):
    p = f = s = 0
    plan, bailed = None, False
    with open(path, errors="replace") as fh:
        for line in fh:
            m = TAP_PLAN.match(line)
            if m and plan is None:
                plan = int(m.group(1))
                continue
            if line.lstrip().startswith("Bail out!"):
                bailed = True
                continue
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
    seen = p + f + s
    if plan is not None and seen < plan:
        f += plan - seen
    elif plan is None or seen > plan:
        f += 1
    if bailed and not f:
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
