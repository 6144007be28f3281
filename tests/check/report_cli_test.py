#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""make report's script (scripts/report/make-report.sh) refuses bad input
in one line, and a report that fails partway leaves the last one whole.
No simulation runs: VIOMMU_SIM is a stub."""
import os
import subprocess
import tempfile
import unittest

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(TOP, "scripts", "report", "make-report.sh")

# Answers --cost-model and --list-configs as viommu-sim does; every run fails.
STUB = """#!/bin/sh
case "$1" in
--cost-model) echo '{"node_visit":15}' ;;
--list-configs) echo a ;;
*) echo "stub: no runs here" >&2; exit 3 ;;
esac
"""


class MakeReport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.stub = os.path.join(self.tmp.name, "sim")
        with open(self.stub, "w") as f:
            f.write(STUB)
        os.chmod(self.stub, 0o755)

    def run_script(self, *args, **env):
        e = dict(os.environ, BUILD=self.tmp.name, VIOMMU_SIM=self.stub)
        e.pop("REPORT_FULL", None)
        e.update(env)
        return subprocess.run(["bash", SCRIPT] + list(args), capture_output=True, text=True,
                              env=e, timeout=60)

    def assertRefused(self, p, rc, message):
        self.assertEqual(p.returncode, rc, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(p.stderr.strip().splitlines(), [message])

    def test_help_and_arguments(self):
        p = self.run_script("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("REPORT_FULL=1", p.stdout)
        self.assertRefused(self.run_script("--full"), 2,
                           "make-report: takes no arguments ('--full'; --help)")

    def test_report_full_is_1_or_unset(self):
        self.assertRefused(self.run_script(REPORT_FULL="yes"), 2,
                           "make-report: REPORT_FULL must be 1 (or 0, or unset), not 'yes'")

    def test_not_a_simulator(self):
        self.assertRefused(self.run_script(VIOMMU_SIM="/bin/false"), 1,
                           "make-report: /bin/false --cost-model failed: exit status 1")
        self.assertRefused(self.run_script(VIOMMU_SIM="/bin/true"), 1,
                           "make-report: /bin/true --cost-model printed no JSON: "
                           "is /bin/true a viommu-sim?")
        self.assertRefused(self.run_script(VIOMMU_SIM=self.tmp.name), 1,
                           "make-report: no viommu-sim at %s" % self.tmp.name)

    def test_a_failed_run_keeps_the_last_report(self):
        out = os.path.join(self.tmp.name, "report")
        os.mkdir(out)
        with open(os.path.join(out, "report.md"), "w") as f:
            f.write("the last report\n")
        p = self.run_script()
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        last = p.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith("make-report: %s --json --case " % self.stub), last)
        self.assertTrue(last.endswith("failed: stub: no runs here"), last)
        with open(os.path.join(out, "report.md")) as f:
            self.assertEqual(f.read(), "the last report\n")
        self.assertEqual(sorted(os.listdir(self.tmp.name)), ["report", "sim"])


    def test_out_holding_more_than_a_report_is_refused(self):
        out = os.path.join(self.tmp.name, "mine.part")
        os.mkdir(out)
        with open(os.path.join(out, "important"), "w") as f:
            f.write("keep\n")
        p = subprocess.run(["python3", os.path.join(TOP, "scripts", "report", "make_report.py"),
                            "--sim", "/bin/false", "--out", out], capture_output=True, text=True,
                           timeout=60)
        self.assertRefused(p, 1, "make-report: --out %s holds more than a report (important): "
                           "give a new directory or a report's" % out)
        self.assertEqual(os.listdir(out), ["important"])


if __name__ == "__main__":
    unittest.main()
