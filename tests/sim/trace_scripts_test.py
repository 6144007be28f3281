#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Python trace library and converters (scripts/trace/): the samples in
tests/sim/trace-samples/ (written by hand from the documented formats:
Linux 6.1's iommu and intel_iommu tracepoints and kprobe output, QEMU's
trace-events of viommu-vtd) convert to the expected events; bad traces are
refused naming the file and the line; the Python reader and writer agree
with the C++ ones through the files they both read (sim-trace)."""

import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "scripts", "trace"))

import from_ftrace  # noqa: E402
import from_qemu  # noqa: E402
import vtrace  # noqa: E402

SAMPLES = os.path.join(HERE, "trace-samples")
CLI = os.path.join(TOP, "scripts", "trace", "viommu-trace")


def convert(fn, sample, *extra):
    out = io.StringIO()
    with open(os.path.join(SAMPLES, sample)) as f:
        result = fn(f, out, sample, *extra)
    r = vtrace.Reader(io.StringIO(out.getvalue()), sample + ".vtrace")
    events = list(r)
    return r.header, events, result


def lines(events):
    return [e.format() for e in events]


class Ftrace(unittest.TestCase):
    def test_trace_cmd_report_with_kprobes(self):
        h, ev, (counts, skipped, durations) = convert(from_ftrace.convert,
                                                      "trace-cmd-report.txt")
        self.assertEqual(h.source, "ftrace")
        self.assertEqual(h.side, "cpu")
        self.assertTrue(durations)
        self.assertEqual(skipped, {"sched_switch": 1})
        self.assertEqual(lines(ev), [
            # dma_map entry at 100.2 us, its return at 101.4: the tracepoint's
            # IOVA, paddr and size with the kprobe's device and duration
            "0 0 map size=4096 dev=0000:00:03.0 iova=0xfffff000 pa=0x12345000 dur=1200",
            "2800 1 unmap size=4096 dev=0000:00:03.0 iova=0xfffff000 dur=800",
            "3800 0 map size=4096 dev=0000:00:03.0 iova=0xffffe000 pa=0x12346000 dur=700",
            # the flush-queue timer, and qi_submit_sync inside it, with their
            # queued descriptors: an IOTLB global invalidation and a wait
            "9899800 1 flush dur=2500",
            "9899900 1 sync dur=2000",
            "9900000 1 inv g=global",
            "9900100 1 wait",
        ])

    def test_a_scatter_gather_list_is_one_map(self):
        # iommu_dma_map_sg() allocates one IOVA for the list and iommu:map
        # fires once per contiguous run: one map over the span, as the
        # list's one iommu:unmap
        _, ev, _ = convert(from_ftrace.convert, "dma-map-sg.txt")
        self.assertEqual(lines(ev), [
            "0 0 map size=8192 dev=0000:00:03.0 iova=0xfff00000 pa=0x10000000 dur=4000",
            "10000 0 map size=4096 dev=0000:00:03.0 iova=0xffe00000 pa=0x30000000 dur=2000",
            "20000 0 unmap size=8192 dev=0000:00:03.0 iova=0xfff00000 dur=2000",
            "30000 0 unmap size=4096 dev=0000:00:03.0 iova=0xffe00000 dur=2000",
        ])

    def test_masks_from_sysfs_list(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("# device bits\n0000:00:03.0 32\n")
        try:
            masks = from_ftrace.read_masks(f.name)
        finally:
            os.unlink(f.name)
        _, ev, _ = convert(from_ftrace.convert, "trace-cmd-report.txt", masks)
        self.assertEqual(ev[0].mask, 0xffffffff)
        self.assertIsNone(ev[1].mask)  # a mask belongs to maps only

    def test_mask_below_32_bits_refused(self):
        with self.assertRaisesRegex(from_ftrace.ConvertError,
                                    "0000:00:03.0 maps with a 24-bit DMA mask"):
            convert(from_ftrace.convert, "trace-cmd-report.txt", {"0000:00:03.0": 0xffffff})

    def test_perf_script_without_kprobes(self):
        _, ev, (counts, _, durations) = convert(from_ftrace.convert, "perf-script.txt")
        self.assertFalse(durations)
        self.assertEqual(counts, {"map": 2, "unmap": 2, "inv": 1})
        self.assertEqual(lines(ev), [
            "0 2 map size=4096 iova=0xfffff000 pa=0x12345000",
            "50000 2 map size=65536 iova=0xfff00000 pa=0x22340000",
            "300000 3 unmap size=4096 iova=0xfffff000",
            "400000 3 unmap size=4096 iova=0xeeee0000",
            # a page-selective IOTLB invalidation: address 0xfff00000, AM 4
            "800000 2 inv size=65536 iova=0xfff00000 g=page",
        ])

    def test_raw_trace_file_both_map_formats(self):
        _, ev, _ = convert(from_ftrace.convert, "raw-trace.txt")
        self.assertEqual(lines(ev), [
            "0 0 map size=4096 iova=0xfffff000 pa=0x12345000",
            "100000 0 map size=4096 iova=0xffffe000 pa=0x12346000",
            "199100 1 unmap size=4096 iova=0xfffff000",
        ])

    def test_overrun_buffer_starts_where_every_cpu_is_complete(self):
        # CPU 0's ring buffer overran: its kept events start at 2.0 s, so
        # CPU 1's map at 1.5 s may have lost its unmap (it maps the same
        # IOVA again at 2.5 s); the trace starts at the mark.
        text = ("# entries-in-buffer/entries-written: 3/5   #P:2\n"
                "  a-1 [001] 1.500000: map: IOMMU: iova=0xfffff000 - 0xfffff000 paddr=0x1000 size=4096\n"
                "##### CPU 0 buffer started ####\n"
                "  b-2 [000] 2.000000: map: IOMMU: iova=0xffffe000 - 0xfffff000 paddr=0x2000 size=4096\n"
                "  a-1 [001] 2.500000: map: IOMMU: iova=0xfffff000 - 0xfffff000 paddr=0x3000 size=4096\n")
        out = io.StringIO()
        counts, skipped, _ = from_ftrace.convert(io.StringIO(text), out, "overrun.txt")
        ev = list(vtrace.Reader(io.StringIO(out.getvalue()), "overrun.vtrace"))
        self.assertEqual(lines(ev), ["0 0 map size=4096 iova=0xffffe000 pa=0x2000",
                                     "500000000 1 map size=4096 iova=0xfffff000 pa=0x3000"])
        self.assertEqual(skipped, {from_ftrace.BEFORE_LOSS: 1})
        # trace_pipe's mark of lost events, read from a pipe (no seek)
        r, w = os.pipe()
        with os.fdopen(w, "w") as f:
            f.write(text.replace("##### CPU 0 buffer started ####", "CPU:0 [LOST 2 EVENTS]"))
        out = io.StringIO()
        with os.fdopen(r) as f:
            counts, skipped, _ = from_ftrace.convert(f, out, "pipe.txt")
        self.assertEqual(counts, {"map": 2})
        self.assertEqual(skipped, {from_ftrace.BEFORE_LOSS: 1})

    def test_no_iommu_events_is_an_error(self):
        with self.assertRaises(from_ftrace.ConvertError) as c:
            from_ftrace.convert(io.StringIO("  bash-1 [000] 1.000000: sched_switch: x=1\n"),
                                io.StringIO(), "empty.txt")
        self.assertIn("empty.txt: no iommu map or unmap events", str(c.exception))

    def test_unreadable_event_names_the_line(self):
        text = "  bash-1 [000] 1.000000: map: IOMMU: iova=0xzz paddr=0x0 size=4096\n"
        with self.assertRaises(from_ftrace.ConvertError) as c:
            from_ftrace.convert(io.StringIO(text), io.StringIO(), "bad.txt")
        self.assertTrue(str(c.exception).startswith("bad.txt:1: map: cannot read"),
                        str(c.exception))


class Qemu(unittest.TestCase):
    def test_viommu_vtd_trace_events(self):
        h, ev, (counts, timed) = convert(from_qemu.convert, "qemu-trace.log")
        self.assertEqual(h.side, "device")
        self.assertEqual(h.source, "viommu-vtd")
        self.assertTrue(timed)
        self.assertEqual(lines(ev), [
            "0 - xlate size=4096 iova=0xfffff000 pa=0x12345000 sid=0x18",
            # a leaf at level 2: a 2 MiB page; the faulting walk is no translation
            "50000 - xlate size=2097152 iova=0x200000 pa=0x40000000 sid=0x20",
            "201000 - inv size=4096 iova=0xfffff000 g=page",
            "202000 - wait",
            "300000 - inv g=domain",
            "301000 - inv sid=0x20 g=context-device",
            "302000 - inv size=2097152 iova=0x200000 sid=0x20 g=device-iotlb",
        ])

    def test_without_timestamps_events_are_numbered(self):
        text = ("viommu_vtd_qi_wait status write 1 addr 0x7e000 data 0x1 failed 0 "
                "interrupt none fence 0\n") * 2
        out = io.StringIO()
        counts, timed = from_qemu.convert(io.StringIO(text), out, "plain.log")
        self.assertFalse(timed)
        self.assertEqual(out.getvalue().splitlines()[1:],
                         ["1 - wait", "2 - wait", "end 2"])


class Format(unittest.TestCase):
    def bad(self, text):
        with self.assertRaises(vtrace.TraceError) as c:
            list(vtrace.Reader(io.StringIO(text), "t.vtrace"))
        return str(c.exception)

    def test_bad_input_names_the_file_and_the_line(self):
        # the same cases, the same messages as tests/sim/trace_test.cc
        cases = [
            ("", "t.vtrace:0: empty file"),
            ("hello\n", "t.vtrace:1: not a viommu-lab trace"),
            ("viommu-trace 2\nend 0\n", "t.vtrace:1: format version 2 is not supported"),
            ("viommu-trace 1\n0 0 map size=4096 iova=0x1000\n5 0 unm", "t.vtrace:3: truncated"),
            ("viommu-trace 1\n0 0 map size=4096 iova=0x1000\n",
             "t.vtrace:2: truncated: no end record"),
            ("viommu-trace 1\n0 0 map size=4096 iova=0x1000\nend 2\n",
             "t.vtrace:3: end record counts 2"),
            ("viommu-trace 1\n0 0 map iova=0x1000\nend 1\n", "t.vtrace:2: map without size="),
            ("viommu-trace 1\n0 0 frob\nend 1\n", "t.vtrace:2: unknown operation 'frob'"),
            ("viommu-trace 1\n0 0 map size=1 size=2\nend 1\n", "t.vtrace:2: key size given twice"),
            ("viommu-trace 1\n0 - txn\nend 1\n", "t.vtrace:2: CPU '-' (device side)"),
            ("viommu-trace 1\n10 0 txn\n5 1 txn\n9 0 txn\nend 3\n",
             "t.vtrace:4: out of order: timestamp 9 before the previous event of CPU 0 at 10"),
            ("viommu-trace 1 window=16777217\nend 0\n",
             "t.vtrace:1: header window='16777217': needs a whole number from 0 to 16777216"),
            ("viommu-trace 1\n4398046511105 0 txn\nend 1\n",
             "t.vtrace:2: timestamp 4398046511105: ends after 4398046511104 ns"),
        ]
        for text, want in cases:
            got = self.bad(text)
            self.assertTrue(got.startswith(want), "got %r, want %r" % (got, want))

    def test_round_trip(self):
        out = io.StringIO()
        w = vtrace.Writer(out, vtrace.Header(source="test", unit="transactions", window=3))
        w.write(vtrace.Event(5, 0, "map", size=4096, dev="dev0", mask=0xffffffff,
                             iova=0x1000, pa=0x2000, dur=7))
        w.write(vtrace.Event(9, 0, "txn"))
        w.finish()
        r = vtrace.Reader(io.StringIO(out.getvalue()), "rt")
        ev = list(r)
        self.assertEqual(r.header.window, 3)
        self.assertEqual(lines(ev), ["5 0 map size=4096 dev=dev0 mask=0xffffffff iova=0x1000 "
                                     "pa=0x2000 dur=7", "9 0 txn"])
        with self.assertRaises(ValueError):
            w.write(vtrace.Event(1, 0, "txn"))


class Cli(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([sys.executable, CLI] + list(args), capture_output=True,
                              text=True)

    def test_convert_check_stats(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.vtrace")
            r = self.run_cli("from-ftrace", os.path.join(SAMPLES, "trace-cmd-report.txt"), out)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = self.run_cli("check", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("7 events: ok", r.stdout)
            r = self.run_cli("stats", "--json", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            import json
            s = json.loads(r.stdout)
            self.assertEqual(s["ops"]["map"], 2)
            self.assertEqual(s["per_cpu"]["1"]["unmap"], 1)
            with open(out) as f:
                text = f.read()
            with open(out, "w") as f:
                f.write(text[:-8])  # cut short
            r = self.run_cli("check", out)
            self.assertEqual(r.returncode, 1)
            self.assertIn(out + ":", r.stderr)
            self.assertIn("truncated", r.stderr)
            # a failed conversion leaves no output file behind
            bad = os.path.join(d, "none.vtrace")
            r = self.run_cli("from-qemu", os.path.join(SAMPLES, "perf-script.txt"), bad)
            self.assertEqual(r.returncode, 1)
            self.assertFalse(os.path.exists(bad))
            self.assertFalse(os.path.exists(bad + ".part"))


class CliFiles(unittest.TestCase):
    """viommu-trace's IN, OUT and --masks: what is refused before anything is
    written, and that no OUT.part is left behind on any error."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.raw = os.path.join(self.d, "raw-trace.txt")
        with open(os.path.join(SAMPLES, "raw-trace.txt")) as f:
            self.text = f.read()
        with open(self.raw, "w") as f:
            f.write(self.text)

    def tearDown(self):
        self.tmp.cleanup()

    def run_cli(self, *args, **kw):
        return subprocess.run([sys.executable, CLI] + list(args), capture_output=True,
                              text=True, cwd=self.d, timeout=20, **kw)

    def one_line_error(self, r, want, rc=1):
        self.assertEqual(r.returncode, rc, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn(want, r.stderr)

    def no_part_files(self):
        self.assertEqual([n for n in os.listdir(self.d) if n.endswith(".part")], [])

    def test_out_that_is_in_is_refused(self):
        os.symlink("raw-trace.txt", os.path.join(self.d, "link.txt"))
        os.link(self.raw, os.path.join(self.d, "hard.txt"))
        for cmd in ("from-ftrace", "from-qemu"):
            for out in ("raw-trace.txt", "./raw-trace.txt", self.raw, "link.txt", "hard.txt"):
                r = self.run_cli(cmd, "raw-trace.txt", out)
                self.one_line_error(r, "is the same file as IN")
                with open(self.raw) as f:
                    self.assertEqual(f.read(), self.text, "%s IN %s destroyed the input" % (cmd, out))
            # standard input redirected from OUT
            with open(self.raw) as f:
                r = self.run_cli(cmd, "-", "raw-trace.txt", stdin=f)
            self.one_line_error(r, "is the same file as IN (standard input)")
            with open(self.raw) as f:
                self.assertEqual(f.read(), self.text)
        # IN that is OUT's temporary file
        os.rename(self.raw, self.raw + ".part")
        r = self.run_cli("from-ftrace", "raw-trace.txt.part", "raw-trace.txt")
        self.one_line_error(r, "OUT's temporary file would be IN")
        with open(self.raw + ".part") as f:
            self.assertEqual(f.read(), self.text)

    def test_out_that_is_a_directory_is_refused(self):
        os.mkdir(os.path.join(self.d, "dir"))
        for cmd in ("from-ftrace", "from-qemu"):
            r = self.run_cli(cmd, "raw-trace.txt", "dir")
            self.one_line_error(r, "dir: OUT is a directory")
            self.no_part_files()

    def converting_from_a_pipe(self, then):
        """from-ftrace - OUT with its standard input held open until OUT.part
        exists; @then(process) does the rest."""
        out = os.path.join(self.d, "out.vtrace")
        p = subprocess.Popen([sys.executable, CLI, "from-ftrace", "-", out], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.d)
        try:
            p.stdin.write(self.text)
            p.stdin.flush()
            for _ in range(200):
                if os.path.exists(out + ".part"):
                    break
                time.sleep(0.05)
            self.assertTrue(os.path.exists(out + ".part"))
            then(p, out)
            if not p.stdin.closed:
                p.stdin.close()
            err = p.stderr.read()
            p.wait(timeout=20)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout, p.stderr):
                f.close()
        return p.returncode, err, out

    def test_a_failed_rename_leaves_no_part(self):
        def then(p, out):
            os.mkdir(out)  # OUT is a directory by the time the conversion ends
            p.stdin.close()
        rc, err, out = self.converting_from_a_pipe(then)
        self.assertEqual(rc, 1, err)
        self.assertNotIn("Traceback", err)
        self.assertIn(out + ": Is a directory", err)
        self.no_part_files()

    def test_terminated_conversion_leaves_no_part(self):
        rc, err, out = self.converting_from_a_pipe(lambda p, out: p.terminate())
        self.assertEqual(rc, 128 + signal.SIGTERM, err)
        self.assertFalse(os.path.exists(out))
        self.no_part_files()

    def test_out_dash_is_standard_output(self):
        for args in (("raw-trace.txt", "-"), ("-", "-")):
            with open(self.raw) as f:
                r = self.run_cli("from-ftrace", *args, stdin=f)
            self.assertEqual(r.returncode, 0, r.stderr)
            ev = list(vtrace.Reader(io.StringIO(r.stdout), "<stdout>"))
            self.assertEqual(len(ev), 3)
            self.assertIn("viommu-trace: <stdout>: 2 map, 1 unmap", r.stderr)  # not in the trace
            self.assertFalse(os.path.exists(os.path.join(self.d, "-")))
        # a failed conversion writes nothing there
        r = self.run_cli("from-qemu", "raw-trace.txt", "-")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn("no viommu_vtd_page_walk", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.d, "-")))

    def test_masks_file_that_cannot_be_read(self):
        os.mkdir(os.path.join(self.d, "dir"))
        with open(os.path.join(self.d, "bin.dat"), "wb") as f:
            f.write(b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00\x00")
        with open(os.path.join(self.d, "nul.dat"), "wb") as f:
            f.write(b"\x00" * 64)
        with open(os.path.join(self.d, "digits.txt"), "w") as f:
            f.write("0000:00:03.0 \u00b3\u00b2\n")  # superscript digits: isdigit(), no int()
        for masks, want in (("nope", "nope: No such file or directory"),
                            ("dir", "dir: Is a directory"),
                            ("bin.dat", "bin.dat: not a text file"),
                            ("nul.dat", "nul.dat:1: not a text file"),
                            ("digits.txt", "digits.txt:1: needs 'DEVICE BITS'")):
            r = self.run_cli("from-ftrace", "--masks", masks, "raw-trace.txt", "out.vtrace")
            self.one_line_error(r, "viommu-trace: " + want)
            self.assertFalse(os.path.exists(os.path.join(self.d, "out.vtrace")))
            self.no_part_files()
            with self.assertRaises(from_ftrace.ConvertError):
                from_ftrace.read_masks(os.path.join(self.d, masks))


class CliArguments(unittest.TestCase):
    def run_cli(self, *args):
        with tempfile.TemporaryDirectory() as d:
            return subprocess.run([sys.executable, CLI] + list(args), capture_output=True,
                                  text=True, cwd=d, timeout=20)

    def test_each_command_has_its_help(self):
        for cmd in ("from-ftrace", "from-qemu", "masks", "check", "stats"):
            for opt in ("--help", "-h"):
                for args in ((opt,), (opt, "a", "b"), ("a", opt)):
                    r = self.run_cli(cmd, *args)
                    self.assertEqual(r.returncode, 0, "%s %s: %s" % (cmd, args, r.stderr))
                    self.assertTrue(r.stdout.startswith("usage: viommu-trace " + cmd),
                                    "%s %s: %r" % (cmd, args, r.stdout))
                    self.assertEqual(r.stderr, "")
        # after '--' it is a file name
        r = self.run_cli("check", "--", "--help")
        self.assertEqual(r.returncode, 1)
        self.assertIn("--help: cannot open the trace", r.stderr)

    def test_wrong_arguments_are_one_line_naming_what_is_wrong(self):
        cases = [
            (("from-ftrace", "IN", "OUT", "--masks"), "from-ftrace: --masks needs a value"),
            (("from-ftrace", "IN"), "from-ftrace: needs OUT"),
            (("from-ftrace",), "from-ftrace: needs IN OUT"),
            (("from-ftrace", "IN", "OUT", "X"), "from-ftrace: unexpected argument 'X' (takes IN OUT)"),
            (("from-ftrace", "--masks"), "from-ftrace: --masks needs a value"),
            (("from-ftrace", "--masks", "a", "--masks", "b", "IN", "OUT"), "--masks given twice"),
            (("from-ftrace", "--mask", "a", "IN", "OUT"), "from-ftrace: unknown option '--mask'"),
            (("from-ftrace", "IN", ""), "from-ftrace: OUT is empty"),
            (("from-qemu", "--masks", "F", "IN", "OUT"), "from-qemu: unknown option '--masks'"),
            (("from-qemu", "IN", "OUT", "X", "Y"), "from-qemu: unexpected arguments 'X' 'Y'"),
            (("masks", "extra"), "masks: unexpected argument 'extra' (takes none)"),
            (("masks", "extra", "--help"), None),  # help wins: rc 0
            (("check",), "check: needs FILE"),
            (("check", "a", "b"), "check: unexpected argument 'b' (takes FILE)"),
            (("check", "--json", "a"), "check: unknown option '--json'"),
            (("stats", "a", "--json=yes"), "stats: --json takes no value"),
            (("stats", "--json=yes", "a"), "stats: --json takes no value"),
            (("frob",), "unknown command 'frob'"),
        ]
        for args, want in cases:
            r = self.run_cli(*args)
            if want is None:
                self.assertEqual(r.returncode, 0, args)
                continue
            self.assertEqual(r.returncode, 2, "%s: %s" % (args, r.stderr))
            self.assertEqual(len(r.stderr.splitlines()), 1, "%s: %s" % (args, r.stderr))
            self.assertTrue(r.stderr.startswith("viommu-trace: "), r.stderr)
            self.assertIn(want, r.stderr, args)
            self.assertEqual(r.stdout, "", args)


@unittest.skipUnless(os.environ.get("VIOMMU_SIM"), "needs VIOMMU_SIM (meson sets it)")
class Replay(unittest.TestCase):
    def test_converted_traces_replay_in_the_simulator(self):
        sim = os.environ["VIOMMU_SIM"]
        with tempfile.TemporaryDirectory() as d:
            for sample in ("trace-cmd-report.txt", "perf-script.txt", "raw-trace.txt"):
                out = os.path.join(d, sample + ".vtrace")
                with open(os.path.join(SAMPLES, sample)) as f, open(out, "w") as o:
                    from_ftrace.convert(f, o, sample)
                for cpus in ("1", "3", "8"):
                    r = subprocess.run([sim, "--workload", "trace", "--trace", out, "--cpus", cpus,
                                        "--json"], capture_output=True, text=True)
                    self.assertEqual(r.returncode, 0, sample + ": " + r.stderr)
                    import json
                    res = json.loads(r.stdout)
                    self.assertEqual(res["unit"], "maps")
                    self.assertGreater(res["transactions"], 0)
                    self.assertGreater(res["maps"], 0)
            # the device side is refused with a reason, naming the file
            out = os.path.join(d, "qemu.vtrace")
            with open(os.path.join(SAMPLES, "qemu-trace.log")) as f, open(out, "w") as o:
                from_qemu.convert(f, o, "qemu-trace.log")
            r = subprocess.run([sim, "--workload", "trace", "--trace", out], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn(out + ": a device-side trace", r.stderr)

    def test_record_and_trace_options_say_what_is_wrong(self):
        sim = os.environ["VIOMMU_SIM"]

        def run(*args):
            return subprocess.run([sim] + list(args), capture_output=True, text=True)
        with tempfile.TemporaryDirectory() as d:
            r = run("--workload", "trace", "--trace", os.path.join(d, "none.vtrace"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("none.vtrace: cannot open the trace", r.stderr)
            r = run("--workload", "trace")
            self.assertIn("--workload trace: needs --trace FILE", r.stderr)
            r = run("--workload", "nic", "--cpus", "2,4", "--record", os.path.join(d, "x"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("no sweep", r.stderr)
            r = run("--workload", "nic", "--cpus", "2", "--record", os.path.join(d, "no", "x"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("cannot write the file", r.stderr)
            r = run("--record")
            self.assertIn("--record: needs a file name", r.stderr)
            # a recording of a small run replays, and all of it reads back
            rec = os.path.join(d, "nic.vtrace")
            r = run("--workload", "nic", "--cpus", "2", "--ops-per-cpu", "50", "--record", rec)
            self.assertEqual(r.returncode, 0, r.stderr)
            header, events = vtrace.read(rec)
            self.assertEqual(header.source, "sim")
            self.assertEqual(header.unit, "packets")
            self.assertGreater(sum(e.op == "txn" for e in events), 100)
            r = run("--workload", "trace", "--trace", rec, "--cpus", "6")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("trace on 6 CPUs", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
