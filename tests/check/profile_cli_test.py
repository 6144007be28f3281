#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The guest-profiling scripts' command line (scripts/profile/profile.py,
replay.py, run-default.sh): bad arguments are refused with one line and the
right exit status, before anything is built or booted.

Nothing boots here: QEMU is a stub that answers '-device help' and exits 1
otherwise, VIOMMU_SIM a stub simulator, BUILD a temporary directory.  As a
guard, every Python the tests start loads a sitecustomize that stops the
process (exit status 97, "GUARD: ...") before it could run the guest-image
build, the standalone build or the stub QEMU for a boot; a test that reaches
it fails.  Run: python3 tests/check/profile_cli_test.py
"""
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE = os.path.join(TOP, "scripts", "profile", "profile.py")
REPLAY = os.path.join(TOP, "scripts", "profile", "replay.py")
RUN_DEFAULT = os.path.join(TOP, "scripts", "profile", "run-default.sh")
GUARD_RC = 97

STUB_QEMU = """#!/bin/sh
if [ "$1" = -device ] && [ "$2" = help ]; then
    echo 'name "virtio-net-pci", bus PCI'
    echo 'name "intel-iommu", bus System'
    echo 'name "viommu-vtd", bus System'
    exit 0
fi
exit 1
"""

STUB_SIM = """#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
if a == ["--help"]:
    print("viommu-sim [--workload trace --trace FILE] ...")
elif a == ["--list"]:
    print("allocators: linux-5.13 linux-4.7 viommu-lab")
elif "--workload" in a:
    with open(os.environ["STUB_SIM_LOG"], "a") as f:
        f.write(" ".join(a) + "\\n")
    print(json.dumps({"ops_per_s": 100.0, "relative_to_no_iommu": 1.0, "unit": "maps/s",
                      "maps": 1, "elapsed_ns": 10000000}))
else:
    sys.exit(1)
"""

# Loaded by every Python a test starts (PYTHONPATH): no image build, no
# standalone build, no boot, whatever the code under test does.
GUARD = """import os, subprocess, sys
_Popen = subprocess.Popen
class _Guarded(_Popen):
    def __init__(self, args, *a, **kw):
        words = [str(x) for x in (args if isinstance(args, (list, tuple)) else [args])]
        qemu = os.environ.get("QEMU")
        bad = [w for w in words if w.endswith(("build-image.sh", "build-standalone.sh"))]
        if qemu and words and words[0] == qemu and words[1:] != ["-device", "help"]:
            bad.append("a boot")
        if bad:
            sys.stderr.write("GUARD: the test reached %s\\n" % bad[0])
            sys.stderr.flush()
            os._exit(GUARD_RC)
        super().__init__(args, *a, **kw)
subprocess.Popen = _Guarded
""".replace("GUARD_RC", str(GUARD_RC))

TRACE = "viommu-trace 1 source=ftrace\n100 0 map size=4096 iova=0x1000\n200 0 unmap size=4096 iova=0x1000\nend 2\n"


def _exe(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="profile-cli-")
        t = cls.tmp
        for d in ("bin", "guard", "build", "cache", "work", "adir"):
            os.mkdir(os.path.join(t, d))
        _exe(os.path.join(t, "bin", "qemu"), STUB_QEMU)
        _exe(os.path.join(t, "bin", "viommu-sim"), STUB_SIM)
        # run-default.sh asks for debootstrap; never run.
        _exe(os.path.join(t, "bin", "debootstrap"), "#!/bin/sh\nexit 1\n")
        with open(os.path.join(t, "guard", "sitecustomize.py"), "w") as f:
            f.write(GUARD)
        with open(os.path.join(t, "afile"), "w") as f:
            f.write("a file\n")
        with open(os.path.join(t, "work", "t.vtrace"), "w") as f:
            f.write(TRACE)
        cls.sim_log = os.path.join(t, "sim.log")
        cls.env = dict(os.environ, QEMU=os.path.join(t, "bin", "qemu"), BUILD=os.path.join(t, "build"),
                       VIOMMU_ACCEL="tcg", VIOMMU_CACHE=os.path.join(t, "cache"),
                       VIOMMU_SIM=os.path.join(t, "bin", "viommu-sim"), STUB_SIM_LOG=cls.sim_log,
                       PYTHONPATH=os.path.join(t, "guard"),
                       PATH=os.path.join(t, "bin") + os.pathsep + os.environ.get("PATH", ""))
        cls.env.pop("DURATION", None)
        cls.env.pop("VCPUS", None)
        cls.env.pop("IOMMU", None)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_cmd(self, cmd, env=None, cwd=None):
        e = dict(self.env, **(env or {}))
        r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=60,
                           cwd=cwd or os.path.join(self.tmp, "work"))
        self.assertNotEqual(r.returncode, GUARD_RC, "reached a build or a boot:\n" + r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        return r

    def refused(self, cmd, rc, prefix, pattern, env=None):
        """cmd exits rc and its last stderr line is one line starting with
        prefix and holding pattern."""
        r = self.run_cmd(cmd, env)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(r.returncode, rc, "exit status %d, stderr:\n%s" % (r.returncode, r.stderr))
        self.assertTrue(lines, "no message")
        self.assertTrue(lines[-1].startswith(prefix), lines[-1])
        self.assertIn(pattern, lines[-1])
        return r


class ProfileRefusals(Base):
    def prof(self, pattern, *args, rc=2, prefix="profile.py: error: "):
        return self.refused([sys.executable, PROFILE] + list(args), rc, prefix, pattern)

    def test_empty_values(self):
        for opt, pat in (("--out", "--out: an empty value"), ("--kernel", "--kernel: an empty value"),
                         ("--record", "--record: an empty value"),
                         ("--compare", "--compare: an empty value"), ("--accel", "--accel: an empty value")):
            with self.subTest(opt):
                self.prof(pat, opt, "")

    def test_empty_ramp_entries(self):
        for v in (",", "1,,2", ""):
            with self.subTest(v):
                self.prof("--ramp: an empty", "--ramp", v)

    def test_compare_twice(self):
        self.prof("bad configuration 'none:lazy' twice in --compare (use --repeat", "--compare", "none:lazy,none:lazy")
        self.prof("bad configuration 'none:lazy' twice in --compare", "--compare", "none,none:lazy")

    def test_record_with_repeat(self):
        self.prof("--record with --repeat 2", "--record", "x.trace", "--repeat", "2")

    def test_nic_opts_owned(self):
        self.prof("sets iommu_platform itself", "--nic-opts", "iommu_platform=off")
        self.prof("use --ring", "--nic-opts", "csum=off,packed=on")

    def test_append_owned(self):
        self.prof("sets prof.duration itself; use --duration", "--append", "quiet prof.duration=999")
        self.prof("sets prof.tracekb itself; use --trace-kb", "--append", "prof.tracekb=1")
        self.prof("sets iommu.strict itself; use --policy", "--append", "iommu.strict=0")
        self.prof("prof.* parameters are profile.py's own", "--append", "prof.other=1")

    def test_ignored_options(self):
        for args, pat in ((["--trace-kb", "65536"], "--trace-kb has no effect without --record"),
                          (["--ramp-duration", "5"], "--ramp-duration has no effect without --ramp"),
                          (["--ramp-rounds", "2"], "--ramp-rounds has no effect without --ramp"),
                          (["--compare", "--iommu", "none"], "--iommu has no effect with --compare"),
                          (["--policy", "strict", "--compare", "none"], "--policy has no effect with --compare")):
            with self.subTest(args):
                self.prof(pat, *args)

    def test_accel(self):
        self.prof("--accel foo: use tcg or kvm", "--accel", "foo")
        self.prof("--accel tcg;x: use tcg or kvm", "--accel", "tcg;x")
        r = self.run_cmd([sys.executable, PROFILE, "--accel", "tcg,thread=single", "--check-args"])
        self.assertEqual(r.returncode, 0, r.stderr)
        if not os.access("/dev/kvm", os.R_OK | os.W_OK):
            self.prof("--accel kvm: /dev/kvm", "--accel", "kvm")

    def test_timeout_shorter_than_load(self):
        self.prof("--timeout 5: no longer than the load", "--timeout", "5", "--duration", "10")

    def test_out_under_a_file(self):
        # refused while parsing, long before the image step
        self.prof("cannot be created", "--out", os.path.join(self.tmp, "afile", "sub"))

    def test_out_that_cannot_be_created(self):
        # root passes the access checks: then main() creates it before the
        # image step (the guard stops a run that gets further).
        d = "/proc/viommu-lab-profile-cli-test"
        r = self.run_cmd([sys.executable, PROFILE, "--out", d])
        self.assertIn(r.returncode, (1, 2), r.stderr)
        self.assertIn("--out %s" % d, r.stderr.strip().splitlines()[-1])
        self.assertNotIn("guest image", r.stdout)

    def test_record_directory_missing(self):
        self.prof("its directory does not exist", "--record", "/nonexistent/dir/f.trace")

    def test_check_args_creates_nothing(self):
        out = os.path.join(self.tmp, "never")
        r = self.run_cmd([sys.executable, PROFILE, "--out", out, "--record", os.path.join(out, "x.trace"),
                          "--check-args"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_help_texts(self):
        r = self.run_cmd([sys.executable, PROFILE, "--help"])
        self.assertEqual(r.returncode, 0)
        h = " ".join(r.stdout.split())
        self.assertIn("guest vCPUs, 1 to 64 (default 2", h)
        self.assertIn("--quiet no progress lines", h)
        with open(PROFILE) as f:
            doc = f.read().split('"""')[1]
        self.assertNotIn("by a QEMU hub;", doc)
        self.assertIn("datagram", doc)


def load_profile():
    spec = importlib.util.spec_from_file_location("viommu_profile", PROFILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class ProfileInProcess(Base):
    """main() and a recording's fetch with Run and the image replaced."""

    def setUp(self):
        self.old = dict(os.environ)
        os.environ.update(QEMU=self.env["QEMU"], BUILD=self.env["BUILD"])
        self.cwd = os.getcwd()
        os.chdir(os.path.join(self.tmp, "work"))
        self.p = load_profile()
        self.p.build_image = lambda: "/nonexistent-image"

    def tearDown(self):
        os.chdir(self.cwd)
        os.environ.clear()
        os.environ.update(self.old)

    def test_failed_rounds_are_counted(self):
        fail_rounds = {("none", "r1"), ("viommu-vtd", "r1"), ("viommu-vtd", "r2")}

        class FakeRun:
            def __init__(s, a, i, p, d, image):
                s.i, s.d = i, d

            def execute(s, qemu, progress=True):
                os.makedirs(s.d, exist_ok=True)
                r = {"iommu": s.i, "policy": "lazy", "workload": "memcached", "vcpus": 2, "duration": 1,
                     "dir": s.d, "load": {"ops_per_s": 10.0}, "server": {}, "perf": {}}
                if (s.i, s.d[-2:]) in fail_rounds:
                    r["error"] = "boom"
                return r
        self.p.Run = FakeRun
        self.p.report = lambda res: "report"
        self.p.compare_table = lambda res: "table"
        self.p.svg_plot = lambda *a: None
        out = os.path.join(self.tmp, "agg")
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = self.p.main(["--compare", "none:lazy,viommu-vtd:lazy", "--repeat", "2", "--duration", "1",
                              "--out", out])
        self.assertEqual(rc, 1)
        self.assertIn("3 of 4 run(s) failed", err.getvalue())

    def test_recording_path_is_absolute(self):
        sample = os.path.join(TOP, "tests", "sim", "trace-samples", "raw-trace.txt")
        if not os.path.exists(sample):
            self.skipTest("no ftrace sample")
        a = self.p.parse_args(["--record", "rel.trace", "--out", "res"])
        run = self.p.Run(a, "viommu-vtd", "lazy", os.path.join(self.tmp, "work", "res"), "/x")
        os.makedirs(run.dir, exist_ok=True)
        with open(sample, "rb") as f:
            text = f.read()
        with open(run.disk, "wb") as f:
            f.write(b"@@TRACE %d\n" % len(text) + text)
        rec = run.fetch_recording({}, None)
        self.assertNotIn("convert_error", rec, rec)
        self.assertTrue(os.path.isabs(rec["trace"]), rec["trace"])
        self.assertTrue(os.path.isabs(rec["ftrace"]), rec["ftrace"])
        self.assertTrue(os.path.exists(rec["trace"]))


class ReplayRefusals(Base):
    def setUp(self):
        if os.path.exists(self.sim_log):
            os.unlink(self.sim_log)

    def replays(self):
        return open(self.sim_log).read().splitlines() if os.path.exists(self.sim_log) else []

    def rp(self, pattern, *args):
        r = self.refused([sys.executable, REPLAY] + list(args), 2, "replay.py: error: ", pattern)
        self.assertEqual(self.replays(), [], "replayed before refusing")
        return r

    def test_output_paths_before_the_replay(self):
        base = ["t.vtrace", "--cpus", "2", "--allocators", "linux-5.13"]
        self.rp("--json /nonexistent/x.json: no directory /nonexistent", *base, "--json", "/nonexistent/x.json")
        self.rp("--json %s: is a directory" % os.path.join(self.tmp, "adir"), *base, "--json",
                os.path.join(self.tmp, "adir"))
        self.rp("--svg /nonexistent/x.svg: no directory", *base, "--svg", "/nonexistent/x.svg")
        self.rp("--json /nonexistent/x.json", "--check", "r.json", "--json", "/nonexistent/x.json")

    def test_check_refuses_what_it_does_not_use(self):
        for extra, what in ((["t.vtrace"], "TRACE t.vtrace"), (["--cpus", "2"], "--cpus"),
                            (["--allocators", "linux-4.7"], "--allocators"), (["--svg", "x.svg"], "--svg"),
                            (["--title", "x"], "--title")):
            with self.subTest(what):
                self.rp("--check does not use %s" % what, "--check", "r.json", *extra)

    def test_title_without_svg(self):
        self.rp("--title is the SVG's", "t.vtrace", "--title", "x")

    def test_check_finds_a_relative_trace_beside_its_result(self):
        d = os.path.join(self.tmp, "rec")
        os.makedirs(d, exist_ok=True)
        shutil.copy(os.path.join(self.tmp, "work", "t.vtrace"), os.path.join(d, "rel.vtrace"))
        res = {"vcpus": 1, "viommu": {"delta": {"queue.waits.total": 0}},
               "record": {"trace": "rel.vtrace", "overrun": 0,
                          "guest_counts": {"events": {"map": 1, "unmap": 1, "qi_sync": 0},
                                           "per_cpu": {"0": {"map": 1, "unmap": 1}},
                                           "sizes": {"map": {"4096": 1}}, "span_s": 0.01}}}
        with open(os.path.join(d, "result.json"), "w") as f:
            json.dump(res, f)
        r = self.run_cmd([sys.executable, REPLAY, "--check", os.path.join(d, "result.json")], cwd="/")
        self.assertNotIn("cannot open", r.stderr)
        self.assertIn("maps: the trace holds the guest's iommu:map events", r.stdout)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class RunDefaultRefusals(Base):
    def rd(self, pattern, *args, rc=1, env=None, prefix="[viommu-lab] error: "):
        r = self.refused(["bash", RUN_DEFAULT] + list(args), rc, prefix, pattern, env)
        self.assertNotIn("DMA stream: memcached", r.stdout)
        self.assertNotIn("record.log", r.stderr)
        return r

    def test_duration_upper_bound(self):
        self.rd("DURATION must be a whole number of seconds from 1 to 3600, not '3601'", env={"DURATION": "3601"})
        self.rd("DURATION must be", env={"DURATION": "99999999999999999999"})

    def test_own_options_refused(self):
        for args, pat in ((["--out", "x"], "--out: run-default.sh sets it"),
                          (["--out=x"], "--out: run-default.sh sets it"),
                          (["--compare"], "set IOMMU="), (["--record", "x"], "--record: run-default.sh sets it"),
                          (["--repeat", "2"], "--repeat: not with run-default.sh"),
                          (["--iommu", "none"], "set IOMMU="), (["--duration", "5"], "set DURATION=S"),
                          (["--dur", "5"], "--dur (--duration)"), (["--vcpus", "4"], "set VCPUS=N"),
                          (["--accel", "kvm"], "set VIOMMU_ACCEL=tcg|kvm"),
                          (["--workload", "nginx"], "--workload: run-default.sh sets it")):
            with self.subTest(args):
                self.rd(pat, *args)

    def test_stops_when_profile_refuses(self):
        self.rd("--conns must be between 1 and 4096", "--conns", "0", rc=2, prefix="profile.py: error: ")
        self.rd("--trace-kb must be between", "--trace-kb", "5", rc=2, prefix="profile.py: error: ")

    def test_stops_when_the_comparison_fails(self):
        # profile.py cannot create the run directory: exit 1 and no table
        # (as root; otherwise --check-args refuses it, exit 2).
        env = {"BUILD": "/proc/viommu-lab-profile-cli-test"}
        if os.access("/proc", os.W_OK):
            self.rd("cannot create it", env=env, prefix="[viommu-lab] profile: error: ")
        else:
            self.rd("cannot be created", env=env, rc=2, prefix="profile.py: error: ")

    def test_help(self):
        r = self.run_cmd(["bash", RUN_DEFAULT, "--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("DURATION=S", r.stdout)
        self.assertNotIn("DMA stream: memcached", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
