#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks of viommu-vtd's QEMU glue, as TAP.  Run through tests/glue/run.sh.

Each case starts QEMU (q35, qtest accelerator: no guest code runs) and drives
it over QMP and the qtest protocol: register reads and writes reach the engine
exactly as guest MMIO would.
"""

import contextlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

QEMU = os.environ["QEMU"]
TOP = os.environ["TOP"]
sys.path.insert(0, os.path.join(TOP, "scripts"))
from qmp import QMP, QMPError  # noqa: E402  (the one QMP client)
FIRMWARE = ["-L", "/usr/share/seabios", "-L", "/usr/lib/ipxe/qemu", "-L", "/usr/share/qemu"]
TIMEOUT = 60
# Each VM's sockets, log and saved state live in a directory of its own in
# here (a migration's destination reads the state its source left, a check
# reads the log QEMU wrote before it quit); main() removes it at the end.
SCRATCH = None
BASE = 0xfed90000

# VT-d register offsets and bits (VT-d specification, chapter 11)
VER, CAP, ECAP, GCMD, GSTS, RTADDR = 0x00, 0x08, 0x10, 0x18, 0x1c, 0x20
CCMD, FSTS, FECTL, FEDATA, FEADDR = 0x28, 0x34, 0x38, 0x3c, 0x40
IQH, IQT, IQA, ICS = 0x80, 0x88, 0x90, 0x9c
IECTL, IEDATA, IEADDR, IEUADDR = 0xa0, 0xa4, 0xa8, 0xac
GCMD_QIE, FSTS_IQE = 1 << 26, 1 << 4
CCMD_ICC, CCMD_GLOBAL = 1 << 63, 1 << 61
GCMD_TE, GCMD_SRTP = 1 << 31, 1 << 30
CAP_CM = 1 << 7
ECAP_DT, ECAP_PT = 1 << 2, 1 << 6


def cap_mgaw(cap):
    return ((cap >> 16) & 0x3f) + 1


def cap_sagaw(cap):
    return (cap >> 8) & 0x1f


class Fail(Exception):
    pass


class Skip(Exception):
    """The case could not bring about what it checks: reported as a skip."""


def check(cond, msg):
    if not cond:
        raise Fail(msg)


class Line:
    """The qtest protocol: newline-delimited over a unix socket."""

    def __init__(self, path):
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.settimeout(TIMEOUT)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise Fail("cannot connect to %s" % path)
                time.sleep(0.05)
        self.buf = b""

    def readline(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise Fail("QEMU closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def send(self, text):
        self.sock.sendall(text.encode() + b"\n")


class VM:
    def __init__(self, devargs, extra=(), incoming=None):
        self.dir = tempfile.mkdtemp(prefix="vm-", dir=SCRATCH)
        self.qmp_path = os.path.join(self.dir, "qmp.sock")
        self.qtest_path = os.path.join(self.dir, "qtest.sock")
        self.tool_path = os.path.join(self.dir, "qmp-tool.sock")  # for viommu-stats
        self.log = os.path.join(self.dir, "qemu.log")
        args = [QEMU] + FIRMWARE + [
            "-M", "q35,kernel-irqchip=split", "-accel", "qtest", "-m", "128",
            "-display", "none", "-nodefaults", "-serial", "none", "-monitor", "none",
            "-qmp", "unix:%s,server=on,wait=off" % self.qmp_path,
            "-qmp", "unix:%s,server=on,wait=off" % self.tool_path,
            "-qtest", "unix:%s,server=on,wait=off" % self.qtest_path,
            "-device", devargs] + list(extra)
        if incoming:
            args += ["-incoming", incoming]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        try:
            self.qmp = QMP(self.qmp_path, timeout=TIMEOUT, wait=TIMEOUT)
            self.qt = Line(self.qtest_path)
        except (Fail, QMPError):
            self.kill()
            raise Fail("QEMU did not come up: %s" % self.output())

    def output(self):
        with open(self.log) as f:
            return f.read().strip().replace("\n", " | ")

    def cmd(self, name, **args):
        try:
            return self.qmp.cmd(name, **args)
        except QMPError as e:
            raise Fail("QMP %s" % e)

    def qtest(self, line):
        self.qt.send(line)
        while True:
            r = self.qt.readline()
            if r.startswith("IRQ"):
                continue
            check(r.startswith("OK"), "qtest '%s': %s" % (line, r))
            return r

    def readl(self, off):
        return int(self.qtest("readl 0x%x" % (BASE + off)).split()[1], 16)

    def readq(self, off):
        return int(self.qtest("readq 0x%x" % (BASE + off)).split()[1], 16)

    def writel(self, off, val):
        self.qtest("writel 0x%x 0x%x" % (BASE + off, val))

    def writeq(self, off, val):
        self.qtest("writeq 0x%x 0x%x" % (BASE + off, val))

    def quit(self):
        self.cmd("quit")
        try:
            rc = self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Fail("QEMU did not exit after quit")
        check(rc == 0, "QEMU exited with %d after quit: %s" % (rc, self.output()))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def running(devargs, extra=(), incoming=None):
    """A VM for the with block: quit cleanly when the block succeeds, killed
    whatever happened."""
    vm = VM(devargs, extra, incoming)
    try:
        yield vm
        vm.quit()
    finally:
        vm.kill()


def save_state(vm, img):
    """Stop the VM and migrate its state into the file img."""
    vm.cmd("stop")
    vm.cmd("migrate", uri="exec:cat > %s" % img)
    wait_migration(vm)


def run_fail(devargs, extra=()):
    """Start QEMU expecting it to fail (realize, an incoming migration);
    return (exit code, output)."""
    p = subprocess.run([QEMU] + FIRMWARE + [
        "-M", "q35,kernel-irqchip=split", "-accel", "qtest", "-display", "none",
        "-nodefaults", "-serial", "none", "-monitor", "none", "-qtest", "null",
        "-device", devargs] + list(extra), stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=TIMEOUT)
    return p.returncode, (p.stdout + p.stderr).strip()


def stats_tool(vm, *extra):
    p = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "viommu-stats"),
                        "--qmp", vm.tool_path] + list(extra),
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 0, "viommu-stats failed: %s" % p.stderr.strip())
    return p.stdout


# ---- cases -----------------------------------------------------------------

def t_listed():
    out = subprocess.run([QEMU, "-device", "help"], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout
    check(re.search(r'^name "viommu-vtd", bus System', out, re.M),
          "viommu-vtd missing from -device help")


def t_properties():
    out = subprocess.run([QEMU, "-device", "viommu-vtd,help"], capture_output=True,
                         text=True, timeout=TIMEOUT).stdout
    for p in ("iotlb-entries", "context-entries", "fault-records", "superpage-1g",
              "stats", "caching-mode", "device-iotlb", "pt", "aw-bits", "second-stage",
              "x-scalable-mode", "x-flts", "x-pasid-mode", "fs1gp"):
        check(re.search(r"^\s+%s=" % re.escape(p), out, re.M), "property %s not listed" % p)


REJECTED = [
    ("stale-tm=on", "transient"),
    ("x-buggy-eim=on", "machine types before 2.8"),
    ("dma-drain=off", "draining"),
    ("dma-translation=off", "DMA translation"),
    ("version=1", "VER_REG"),
    ("aw-bits=52", "supported values are 39, 48 and 57"),
]


def t_rejected(prop, why):
    def t():
        rc, out = run_fail("viommu-vtd," + prop)
        check(rc != 0, "QEMU accepted viommu-vtd,%s" % prop)
        name = prop.split("=")[0]
        check("viommu-vtd does not support %s" % prop in out and why in out,
              "unclear error for %s: %s" % (name, out))
    return t


ECAP_NEST, ECAP_PASID, ECAP_SMTS = 1 << 26, 1 << 40, 1 << 43
ECAP_SLTS, ECAP_FLTS = 1 << 46, 1 << 47
CAP_FS1GP = 1 << 56
RTADDR_TTM_SM, IQA_DW = 1 << 10, 1 << 11


ECAP_SC = 1 << 7


def t_snoop_control():
    """snoop-control=on offers ECAP.SC; off by default, as intel-iommu."""
    for devargs, want in (("viommu-vtd", 0), ("viommu-vtd,snoop-control=on", ECAP_SC),
                          ("viommu-vtd,x-scalable-mode=on,snoop-control=on", ECAP_SC)):
        with running(devargs) as vm:
            ecap = vm.readq(ECAP)
            check(ecap & ECAP_SC == want,
                  "%s: ECAP 0x%x, SC should be %d" % (devargs, ecap, want != 0))


def t_scalable_options():
    """x-scalable-mode, x-flts, x-pasid-mode, fs1gp, second-stage: ECAP/CAP."""
    for devargs, want in (
            ("viommu-vtd", 0),
            ("viommu-vtd,x-scalable-mode=on", ECAP_SMTS | ECAP_SLTS),
            ("viommu-vtd,x-scalable-mode=on,x-flts=on", ECAP_SMTS | ECAP_FLTS),
            ("viommu-vtd,x-scalable-mode=on,x-flts=on,second-stage=on",
             ECAP_SMTS | ECAP_FLTS | ECAP_SLTS | ECAP_NEST),
            ("viommu-vtd,x-scalable-mode=on,x-pasid-mode=on",
             ECAP_SMTS | ECAP_SLTS | ECAP_PASID)):
        with running(devargs) as vm:
            ecap = vm.readq(ECAP)
            mask = ECAP_SMTS | ECAP_SLTS | ECAP_FLTS | ECAP_NEST | ECAP_PASID
            check(ecap & mask == want, "%s: ECAP 0x%x, want bits 0x%x" % (devargs, ecap, want))
            if "x-pasid-mode=on" in devargs:
                pss = (ecap >> 35) & 0x1f
                check(pss == 19, "%s: ECAP.PSS %d, want 19 (20-bit PASIDs)" % (devargs, pss))
            if "x-flts=on" in devargs:
                check(vm.readq(CAP) & CAP_FS1GP, "%s: CAP.FS1GP clear" % devargs)
    with running("viommu-vtd,x-scalable-mode=on,x-flts=on,fs1gp=off") as vm:
        check(not vm.readq(CAP) & CAP_FS1GP, "fs1gp=off: CAP.FS1GP set")
    for devargs, msg in (
            ("viommu-vtd,x-flts=on", "x-flts=on needs x-scalable-mode=on"),
            ("viommu-vtd,x-pasid-mode=on", "x-pasid-mode=on needs x-scalable-mode=on"),
            ("viommu-vtd,second-stage=on", "second-stage=on needs x-scalable-mode=on"),
            ("viommu-vtd,x-scalable-mode=on,second-stage=off",
             "second-stage=off needs x-flts=on")):
        rc, out = run_fail(devargs)
        check(rc != 0, "QEMU accepted %s" % devargs)
        check(msg in out, "unclear error for %s: %s" % (devargs, out))


def t_migration_scalable():
    """RTADDR.TTM and IQA.DW reach a scalable-mode destination; a legacy one refuses."""
    devargs = "viommu-vtd,x-scalable-mode=on,x-flts=on,second-stage=on"
    with running(devargs) as src:
        img = os.path.join(src.dir, "state")
        src.writeq(RTADDR, 0x100000 | RTADDR_TTM_SM)
        src.writel(GCMD, GCMD_SRTP)
        src.writeq(IQA, 0x200000 | IQA_DW)
        regs = (src.readq(RTADDR), src.readq(IQA), src.readl(GSTS))
        check(regs[0] == 0x100000 | RTADDR_TTM_SM and regs[1] == 0x200000 | IQA_DW,
              "RTADDR 0x%x IQA 0x%x before migration" % regs[:2])
        save_state(src, img)
    with running(devargs, incoming="exec:cat %s" % img) as dst:
        wait_migration(dst)
        got = (dst.readq(RTADDR), dst.readq(IQA), dst.readl(GSTS))
        check(got == regs, "RTADDR/IQA/GSTS %s after migration, %s before" % (
            [hex(v) for v in got], [hex(v) for v in regs]))
    # a destination in legacy mode cannot hold that state
    rc, out = run_fail("viommu-vtd", ["-m", "128", "-incoming", "exec:cat %s" % img])
    check(rc != 0, "a legacy-mode destination accepted scalable-mode state")
    check("viommu-vtd: migrated state refused" in out,
          "unclear error on a legacy-mode destination: %s" % out)


def t_bad_engine_config():
    rc, out = run_fail("viommu-vtd,fault-records=300")
    check(rc != 0, "QEMU accepted fault-records=300")
    check("viommu-vtd" in out, "error does not name the device: %s" % out)
    # 224 records fill the register page from FRO 0x200; one more is refused
    rc, out = run_fail("viommu-vtd,fault-records=225")
    check(rc != 0, "QEMU accepted fault-records=225")
    check("viommu-vtd: fault-records must be 1..224" in out,
          "error does not name the property and its range: %s" % out)
    rc, out = run_fail("viommu-vtd,context-entries=65537")
    check(rc != 0 and "viommu-vtd: context-entries must be at most 65536" in out,
          "context-entries=65537: %d %s" % (rc, out))
    rc, out = run_fail("viommu-vtd,iotlb-entries=4294967295")
    check(rc != 0 and "viommu-vtd: iotlb-entries must be at most 16777216" in out,
          "iotlb-entries=4294967295: %d %s" % (rc, out))
    with running("viommu-vtd,fault-records=224") as vm:
        nfr = ((vm.readq(CAP) >> 40) & 0xff) + 1
        check(nfr == 224, "fault-records=224: CAP.NFR+1 is %d" % nfr)


def t_old_machine_types():
    """Machine types that set rejected properties through their compatibility
    properties: one refusal names each, says the machine type set it and
    how to undo it, and the machine starts once the user sets them back.
    (pc-q35-3.1 is the oldest type that sets dma-drain=off; QEMU deprecates
    old machine types, so a later QEMU may need another.)"""
    rc, out = run_fail("viommu-vtd", ["-M", "pc-q35-9.1"])
    check(rc != 0 and "viommu-vtd does not support stale-tm=on: " in out and
          "machine types before 9.2" in out and "stale-tm=off" in out and "nor" not in out,
          "-M pc-q35-9.1: %d %s" % (rc, out))
    rc, out = run_fail("viommu-vtd", ["-M", "pc-q35-3.1"])
    check(rc != 0 and "viommu-vtd does not support stale-tm=on: " in out and
          "; nor dma-drain=off: " in out and "machine types before 4.0" in out and
          "dma-drain=on" in out, "-M pc-q35-3.1: %d %s" % (rc, out))
    with running("viommu-vtd,stale-tm=off,dma-drain=on", extra=["-M", "pc-q35-3.1"]) as vm:
        check(cap_sagaw(vm.readq(CAP)), "pc-q35-3.1: the unit's CAP reads %#x" %
              vm.readq(CAP))


def t_created_before_the_unit():
    """vfio-pci and viommu-dma,x-map-notifier=on take their DMA address space
    when they are created: listed before viommu-vtd they would keep guest
    memory untranslated, so the unit refuses to start after one, naming it.
    Other devices before it are translated (they take theirs when the
    machine is ready)."""
    rc, out = run_fail("viommu-dma,id=early,x-map-notifier=on",
                       ["-device", "viommu-vtd,caching-mode=on"])
    check(rc != 0 and "viommu-dma (/machine/peripheral/early) was created before "
          "viommu-vtd" in out and "put -device viommu-vtd before it" in out,
          "a notifier device before the unit: %d %s" % (rc, out))
    with running(DMA_ARGS[1], extra=["-device", "viommu-vtd"]) as vm:
        dma_setup(vm)
        dma_push(vm, 0, DST_IOVA, 0x1122334455667788)
        dma_push(vm, 1, UNMAPPED_IOVA, 0x5a5a5a5a5a5a5a5a)
        dma_doorbell(vm, 2)
        check(dma_status(vm, 0) == ST_OK and
              phys_q(vm, MAPPING[DST_IOVA] + 0x800) == 0x1122334455667788,
              "DMA of a device listed first did not land where the tables map it")
        check(dma_status(vm, 1) == ST_WRITE_FAULT,
              "DMA of a device listed first to an unmapped IOVA did not fault")


def t_pasid_device_warned_without_pasids():
    """viommu-dma,pasid=on behind a unit without x-pasid-mode=on: a warning
    at start (a pass-through context lets its PASID requests through);
    none with PASIDs, or without pass-through (pt=off)."""
    warn = ("warning: viommu-vtd: /machine/peripheral/pd sends requests with PASID, which a "
            "pass-through context lets through untranslated without x-pasid-mode=on")
    for unit, warned in (("viommu-vtd", True),
                         ("viommu-vtd,x-scalable-mode=on,x-pasid-mode=on", False),
                         ("viommu-vtd,pt=off", False)):   # no pass-through context
        with running(unit, extra=["-device", "viommu-dma,id=pd,pasid=on"]) as vm:
            check((warn in vm.output()) == warned,
                  "%s: warning %s: %s" % (unit, "missing" if warned else "given", vm.output()))


def t_cap_reflects_config():
    for devargs, aw, cm, dt, pt in (("viommu-vtd", 48, False, False, True),
                                    ("viommu-vtd,aw-bits=39,caching-mode=on,"
                                     "device-iotlb=on,pt=off", 39, True, True, False),
                                    ("viommu-vtd,aw-bits=57", 57, False, False, True)):
        with running(devargs) as vm:
            cap, ecap = vm.readq(CAP), vm.readq(ECAP)
            check(cap_mgaw(cap) == aw, "%s: CAP.MGAW %d, want %d" % (devargs, cap_mgaw(cap), aw))
            # SAGAW bit 1: 3 levels (39 bits), bit 2: 4 (48), bit 3: 5 (57)
            want_sagaw = {39: 0x2, 48: 0x6, 57: 0xe}[aw]
            check(cap_sagaw(cap) == want_sagaw, "%s: CAP.SAGAW 0x%x, want 0x%x"
                  % (devargs, cap_sagaw(cap), want_sagaw))
            check(bool(cap & CAP_CM) == cm, "%s: CAP.CM %d" % (devargs, bool(cap & CAP_CM)))
            check(bool(ecap & ECAP_DT) == dt, "%s: ECAP.DT %d" % (devargs, bool(ecap & ECAP_DT)))
            check(bool(ecap & ECAP_PT) == pt, "%s: ECAP.PT %d" % (devargs, bool(ecap & ECAP_PT)))


def t_stats_json():
    with running("viommu-vtd,id=iommu0") as vm:
        raw = vm.cmd("qom-get", path="/machine/peripheral/iommu0", property="stats")
        doc = json.loads(raw)
        check(isinstance(doc, dict) and doc, "stats is not a JSON object: %r" % raw)
        tool = json.loads(stats_tool(vm, "--json"))
        check(set(tool) == set(doc), "viommu-stats --json differs from qom-get")
        text = stats_tool(vm)
        check("viommu-vtd statistics" in text and len(text.splitlines()) > 1,
              "viommu-stats printed no table")


def t_stats_anonymous():
    with running("viommu-vtd") as vm:
        doc = json.loads(stats_tool(vm, "--json"))
        check(isinstance(doc, dict), "stats of an anonymous device unreadable")


def t_stats_bad_timeout():
    """A --timeout out of range is one error line, not a traceback."""
    for t in ("-1", "0", "nan"):
        p = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "viommu-stats"),
                            "--qmp", "/nonexistent", "--timeout", t],
                           capture_output=True, text=True, timeout=TIMEOUT)
        err = p.stderr.strip().splitlines()
        check(p.returncode == 2 and err and "--timeout must be" in err[-1]
              and "Traceback" not in p.stderr,
              "viommu-stats --timeout %s: rc %d, %r" % (t, p.returncode, p.stderr.strip()))


def t_stats_bad_device():
    """--device: an empty path is a usage error; a path to another device
    says what it is, in one line."""
    p = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "viommu-stats"),
                        "--qmp", "/nonexistent", "--device", ""],
                       capture_output=True, text=True, timeout=TIMEOUT)
    check(p.returncode == 2 and "--device: empty QOM path" in p.stderr,
          "viommu-stats --device '': rc %d, %r" % (p.returncode, p.stderr.strip()))
    with running("viommu-vtd", extra=["-device", "viommu-dma,id=d0"]) as vm:
        p = subprocess.run([sys.executable, os.path.join(TOP, "scripts", "viommu-stats"),
                            "--qmp", vm.tool_path, "--device", "/machine/peripheral/d0"],
                           capture_output=True, text=True, timeout=TIMEOUT)
        check(p.returncode == 1 and p.stderr.strip() ==
              "viommu-stats: /machine/peripheral/d0 is of type viommu-dma, not viommu-vtd",
              "viommu-stats --device of a viommu-dma: rc %d, %r" % (p.returncode,
                                                                     p.stderr.strip()))


def t_stats_count_invalidation():
    """A register-based global context-cache invalidation is counted."""
    with running("viommu-vtd,id=iommu0") as vm:
        def count():
            doc = json.loads(vm.cmd("qom-get", path="/machine/peripheral/iommu0",
                                    property="stats"))
            return doc["invalidations"]["register_based"]["context"]
        before = count()
        vm.writeq(RTADDR, 0x100000)
        vm.writel(GCMD, GCMD_SRTP)
        vm.writeq(CCMD, CCMD_ICC | CCMD_GLOBAL)
        check(not vm.readq(CCMD) & CCMD_ICC, "CCMD.ICC still set")
        check(count() == before + 1, "context invalidations %d -> %d, want +1"
              % (before, count()))


ECAP_IR, ECAP_EIM = 1 << 3, 1 << 4
IRTA = 0xb8
GCMD_SIRTP, GCMD_IRE = 1 << 24, 1 << 25


def t_intremap_options():
    for devargs, ir, eim in (("viommu-vtd", False, False),
                             ("viommu-vtd,intremap=off", False, False),
                             ("viommu-vtd,intremap=on", True, False),
                             ("viommu-vtd,intremap=on,eim=on", True, True)):
        with running(devargs) as vm:
            ecap = vm.readq(ECAP)
            check(bool(ecap & ECAP_IR) == ir, "%s: ECAP.IR %d" % (devargs, bool(ecap & ECAP_IR)))
            check(bool(ecap & ECAP_EIM) == eim,
                  "%s: ECAP.EIM %d" % (devargs, bool(ecap & ECAP_EIM)))
    rc, out = run_fail("viommu-vtd,eim=on")
    check(rc != 0, "QEMU accepted eim=on without intremap=on")
    check("viommu-vtd: eim=on needs intremap=on" in out, "unclear error: %s" % out)


def t_stats_interrupt_remapping():
    """The IR section counts a SIRTP; viommu-stats prints it."""
    with running("viommu-vtd,intremap=on,id=iommu0") as vm:
        vm.writeq(IRTA, 0x100000 | 7)
        vm.writel(GCMD, GCMD_SIRTP)
        vm.writel(GCMD, GCMD_IRE)
        check(vm.readl(GSTS) & (GCMD_SIRTP | GCMD_IRE) == GCMD_SIRTP | GCMD_IRE,
              "GSTS 0x%x: IRTPS/IRES not set" % vm.readl(GSTS))
        doc = json.loads(vm.cmd("qom-get", path="/machine/peripheral/iommu0",
                                property="stats"))
        ir = doc["interrupt_remapping"]
        check(ir["iec"]["invalidations_sirtp"] == 1,
              "invalidations_sirtp %r, want 1" % ir["iec"]["invalidations_sirtp"])
        text = stats_tool(vm)
        check(re.search(r"^\s*interrupt_remapping$", text, re.M) and
              re.search(r"^\s*invalidations_sirtp\s+1$", text, re.M),
              "viommu-stats does not print the interrupt_remapping section")


def t_migration_interrupt_remapping():
    """IRTA (written after SIRTP) and IRTPS/IRES reach the destination."""
    devargs = "viommu-vtd,intremap=on,eim=on"
    with running(devargs) as src:
        img = os.path.join(src.dir, "state")
        src.writeq(IRTA, 0x200000 | (1 << 11) | 3)
        src.writel(GCMD, GCMD_SIRTP)
        src.writel(GCMD, GCMD_IRE)
        src.writeq(IRTA, 0x300000 | 5)
        save_state(src, img)
    with running(devargs, incoming="exec:cat %s" % img) as dst:
        wait_migration(dst)
        check(dst.readq(IRTA) == 0x300000 | 5, "IRTA 0x%x on the destination" % dst.readq(IRTA))
        gsts = dst.readl(GSTS)
        check(gsts & (GCMD_SIRTP | GCMD_IRE) == GCMD_SIRTP | GCMD_IRE,
              "GSTS 0x%x on the destination" % gsts)


def t_starts_quits():
    with running("viommu-vtd,id=iommu0", extra=["-device", "virtio-net-pci,netdev=n0",
                                                 "-netdev", "user,id=n0"]) as vm:
        check(vm.readl(VER) != 0, "VER_REG reads 0: register window not mapped")
        check(vm.cmd("query-status")["status"] in ("running", "prelaunch"), "not running")


def program(vm):
    """Architectural state the migration must carry."""
    vm.writeq(RTADDR, 0x100000)
    vm.writel(GCMD, GCMD_SRTP)
    vm.writel(GCMD, GCMD_TE)
    vm.writel(FEDATA, 0x4041)
    vm.writel(FEADDR, 0xfee00000)
    vm.writeq(IQA, 0x200000)
    regs = {name: read(off) for name, read, off in (
        ("GSTS", vm.readl, GSTS), ("RTADDR", vm.readq, RTADDR), ("FEDATA", vm.readl, FEDATA),
        ("FEADDR", vm.readl, FEADDR), ("IQA", vm.readq, IQA), ("FECTL", vm.readl, FECTL))}
    # what was written, not only what the source reads back
    want = {"RTADDR": 0x100000, "FEDATA": 0x4041, "FEADDR": 0xfee00000, "IQA": 0x200000,
            "FECTL": 1 << 31}  # FECTL: IM set at reset, nothing pending
    got = {k: regs[k] for k in want}
    check(got == want and regs["GSTS"] & (1 << 31 | 1 << 30) == 1 << 31 | 1 << 30,
          "registers as programmed %s, GSTS 0x%x" % ({k: hex(v) for k, v in got.items()},
                                                    regs["GSTS"]))
    return regs


def wait_migration(vm):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        st = vm.cmd("query-migrate").get("status")
        if st == "completed":
            return
        check(st not in ("failed", "cancelled"), "migration %s" % st)
        time.sleep(0.1)
    raise Fail("migration did not complete")


def t_migration():
    with running("viommu-vtd,id=iommu0,caching-mode=on") as src:
        img = os.path.join(src.dir, "state")
        regs = program(src)
        check(regs["GSTS"] & GCMD_TE, "GSTS.TES not set after GCMD.TE (0x%x)" % regs["GSTS"])
        save_state(src, img)
    with running("viommu-vtd,id=iommu0,caching-mode=on", incoming="exec:cat %s" % img) as dst:
        wait_migration(dst)
        got = {k: (dst.readl if k in ("GSTS", "FEDATA", "FEADDR", "FECTL") else dst.readq)(off)
               for k, off in (("GSTS", GSTS), ("RTADDR", RTADDR), ("FEDATA", FEDATA),
                              ("FEADDR", FEADDR), ("IQA", IQA), ("FECTL", FECTL))}
        check(got == regs, "registers after migration %s, before %s" % (
            {k: hex(v) for k, v in got.items()}, {k: hex(v) for k, v in regs.items()}))
        json.loads(dst.cmd("qom-get", path="/machine/peripheral/iommu0", property="stats"))


def t_migration_section():
    """The device state is in the stream (a vmstate without the device would still "migrate")."""
    with running("viommu-vtd,id=iommu0") as src:
        img = os.path.join(src.dir, "state")
        save_state(src, img)
    with open(img, "rb") as f:
        data = f.read()
    check(b"viommu-vtd" in data, "no viommu-vtd section in the migration stream")


# ---- DMA through the unit: viommu-dma at 00:04.0 behind tables in RAM ------

DMA_DEV = 4                      # -device viommu-dma,addr=04.0
DMA_SID = DMA_DEV << 3
DMA_BAR = 0xe0000000
DMA_ARGS = ["-device", "viommu-dma,addr=04.0"]
ROOT, CTX, PML4 = 0x100000, 0x101000, 0x102000
RING_IOVA, SRC_IOVA, DST_IOVA, UNMAPPED_IOVA = 0x10000, 0x20000, 0x30000, 0x40000
MAPPING = {RING_IOVA: 0x300000, SRC_IOVA: 0x310000, DST_IOVA: 0x320000,
           DST_IOVA + 0x1000: 0x321000}
Q0 = 0x100                       # VIOMMU_DMA_Q_BASE(0)
Q_RING_LO, Q_RING_HI, Q_RING_SIZE, Q_CTRL, Q_TAIL = 0x00, 0x04, 0x08, 0x0c, 0x14
OP_FILL, ST_PENDING, ST_OK, ST_WRITE_FAULT = 2, 0x00, 0x01, 0x11
FSTS_PPF = 1 << 1


def dma_queue_at(vm, ring):
    """The device's BAR and bus mastering on, queue 0 a 16-entry ring at
    ring (an address as the device sees it), no tables."""
    cfg = 0x80000000 | DMA_DEV << 11
    vm.qtest("outl 0xcf8 0x%x" % (cfg | 0x10))
    vm.qtest("outl 0xcfc 0x%x" % DMA_BAR)
    vm.qtest("outl 0xcf8 0x%x" % (cfg | 0x04))
    vm.qtest("outl 0xcfc 0x6")
    for off, val in ((Q_RING_LO, ring), (Q_RING_HI, 0), (Q_RING_SIZE, 16), (Q_CTRL, 1)):
        vm.qtest("writel 0x%x 0x%x" % (DMA_BAR + Q0 + off, val))


def dma_setup(vm):
    """Tables mapping MAPPING (4-level, domain 1) for the DMA device,
    translation on, the device's BAR and bus mastering on, its queue 0
    ring at RING_IOVA."""
    vm.qtest("writeq 0x%x 0x%x" % (ROOT, CTX | 1))
    ce = CTX + (DMA_SID & 0xff) * 16
    vm.qtest("writeq 0x%x 0x%x" % (ce, PML4 | 1))
    vm.qtest("writeq 0x%x 0x%x" % (ce + 8, 1 << 8 | 2))
    vm.qtest("writeq 0x%x 0x%x" % (PML4, 0x103000 | 3))
    vm.qtest("writeq 0x%x 0x%x" % (0x103000, 0x104000 | 3))
    vm.qtest("writeq 0x%x 0x%x" % (0x104000, 0x105000 | 3))
    for iova, pa in MAPPING.items():
        vm.qtest("writeq 0x%x 0x%x" % (0x105000 + (iova >> 12) * 8, pa | 3))
    vm.writeq(RTADDR, ROOT)
    vm.writel(GCMD, GCMD_SRTP)
    vm.writel(GCMD, GCMD_TE)
    dma_queue_at(vm, RING_IOVA)


def dma_push(vm, idx, dst, pattern, length=0x1000):
    """A FILL descriptor at ring slot idx (written through its physical
    address, as a driver would through its own mapping)."""
    d = MAPPING[RING_IOVA] + idx * 64
    vm.qtest("writeq 0x%x 0x%x" % (d, OP_FILL | length << 32))
    vm.qtest("writeq 0x%x 0x%x" % (d + 8, 0))
    vm.qtest("writeq 0x%x 0x%x" % (d + 0x10, dst))
    vm.qtest("writeq 0x%x 0x%x" % (d + 0x18, pattern))
    vm.qtest("writeq 0x%x 0x%x" % (d + 0x20, ST_PENDING))


def dma_doorbell(vm, tail):
    vm.qtest("writel 0x%x 0x%x" % (DMA_BAR + Q0 + Q_TAIL, tail))


def dma_status(vm, idx):
    """The completion status of ring slot idx, once the device wrote it."""
    addr = MAPPING[RING_IOVA] + idx * 64 + 0x20
    for _ in range(1000):
        st = int(vm.qtest("readl 0x%x" % addr).split()[1], 16)
        if st != ST_PENDING:
            return st
    raise Fail("descriptor %d not completed" % idx)


def phys_q(vm, addr):
    return int(vm.qtest("readq 0x%x" % addr).split()[1], 16)


def t_migration_dma_in_flight():
    """DMA translated before the migration; descriptors queued on the source
    run on the destination, through the migrated root table and TE."""
    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS) as src:
        img = os.path.join(src.dir, "state")
        dma_setup(src)
        dma_push(src, 0, DST_IOVA, 0x1122334455667788)
        dma_doorbell(src, 1)
        check(dma_status(src, 0) == ST_OK, "DMA before migration failed")
        check(phys_q(src, MAPPING[DST_IOVA] + 0x800) == 0x1122334455667788,
              "DMA before migration wrote elsewhere")
        # In flight: two more descriptors in the ring, the doorbell not yet
        # rung; one of them aims at an unmapped IOVA.
        dma_push(src, 1, DST_IOVA + 0x1000, 0x0102030405060708)
        dma_push(src, 2, UNMAPPED_IOVA, 0x5a5a5a5a5a5a5a5a)
        save_state(src, img)
    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS, incoming="exec:cat %s" % img) as dst:
        wait_migration(dst)
        dst.cmd("cont")
        check(dst.readl(GSTS) & GCMD_TE, "GSTS.TES lost")
        dma_doorbell(dst, 3)
        check(dma_status(dst, 1) == ST_OK, "DMA after migration failed")
        check(phys_q(dst, MAPPING[DST_IOVA + 0x1000] + 0xff8) == 0x0102030405060708,
              "DMA after migration did not land where the tables map it")
        check(dma_status(dst, 2) == ST_WRITE_FAULT,
              "DMA to an unmapped IOVA after migration did not fault")
        check(dst.readl(FSTS) & FSTS_PPF, "no fault recorded after migration")
        doc = json.loads(dst.cmd("qom-get", path="/machine/peripheral/iommu0",
                                 property="stats"))
        check(doc["translate"]["requests"] >= 3 and doc["faults"]["recorded"] >= 1,
              "destination counted %s translations, %s faults recorded" % (
                  doc["translate"]["requests"], doc["faults"]["recorded"]))


def t_migration_fault_records():
    """Pending fault records migrate with the record FRI names: three DMA
    faults fill records 0-2, the guest clears 0 and 1, and the destination
    reads the same FSTS (FRI 2) and records."""
    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS) as src:
        img = os.path.join(src.dir, "state")
        dma_setup(src)
        for i in range(3):
            dma_push(src, i, UNMAPPED_IOVA + i * 0x1000, 0x5a5a5a5a5a5a5a5a)
        dma_doorbell(src, 3)
        for i in range(3):
            check(dma_status(src, i) == ST_WRITE_FAULT, "DMA %d did not fault" % i)
        frcd = ((src.readq(CAP) >> 24) & 0x3ff) * 16
        for i in range(2):
            src.writel(frcd + i * 16 + 12, 1 << 31)
        fsts = src.readl(FSTS)
        check(fsts & FSTS_PPF and (fsts >> 8) & 0xff == 2, "FSTS 0x%x: FRI not at record 2" % fsts)
        records = [src.readq(frcd + i * 8) for i in range(6)]
        save_state(src, img)
    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS, incoming="exec:cat %s" % img) as dst:
        wait_migration(dst)
        check(dst.readl(FSTS) == fsts, "FSTS 0x%x after migration, 0x%x before" % (dst.readl(FSTS), fsts))
        got = [dst.readq(frcd + i * 8) for i in range(6)]
        check(got == records, "records %s after migration, %s before" % (
            [hex(r) for r in got], [hex(r) for r in records]))


def t_dma_waits_while_stopped():
    """viommu-dma processes its ring only while the VM runs: nothing of a
    doorbell rung in a stopped VM, nor, after an incoming migration, before
    the destination is started; all of it once the VM runs."""
    ring, dst, n = 0x300000, 0x400000, 8
    q_head = 0x10

    def head(vm):
        return int(vm.qtest("readl 0x%x" % (DMA_BAR + Q0 + q_head)).split()[1], 16)

    def push(vm, idx):
        d = ring + idx * 64
        for off, val in ((0, OP_FILL | 0x1000 << 32), (8, 0), (0x10, dst + idx * 0x1000),
                         (0x18, 0x0101010101010101 * (idx + 1)), (0x20, ST_PENDING)):
            vm.qtest("writeq 0x%x 0x%x" % (d + off, val))

    def idle_main_loop(vm):
        for _ in range(5):  # main-loop iterations, where the bottom half would run
            vm.cmd("query-status")

    def wait_head(vm, want):
        deadline = time.monotonic() + TIMEOUT
        while head(vm) != want and time.monotonic() < deadline:
            time.sleep(0.02)
        check(head(vm) == want, "HEAD %d after cont, want %d" % (head(vm), want))

    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS) as src:
        img = os.path.join(src.dir, "state")
        dma_queue_at(src, ring)
        for i in range(n):
            push(src, i)
        src.cmd("stop")
        dma_doorbell(src, n // 2)
        idle_main_loop(src)
        check(head(src) == 0, "HEAD %d while stopped" % head(src))
        src.cmd("cont")
        wait_head(src, n // 2)
        check(phys_q(src, dst + 0xff8) == 0x0101010101010101, "the first FILL did not land")
        src.cmd("stop")
        dma_doorbell(src, n)
        save_state(src, img)
        check(head(src) == n // 2, "HEAD %d after the state was saved" % head(src))
    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS, incoming="exec:cat %s" % img) as dst_vm:
        wait_migration(dst_vm)
        idle_main_loop(dst_vm)
        check(dst_vm.cmd("query-status")["status"] != "running", "destination running")
        check(head(dst_vm) == n // 2, "HEAD %d on the destination before it ran" % head(dst_vm))
        dst_vm.cmd("cont")
        wait_head(dst_vm, n)
        check(phys_q(dst_vm, dst + (n - 1) * 0x1000) == 0x0808080808080808,
              "the last FILL did not land on the destination")


def t_dma_migrated_state_checked():
    """viommu-dma refuses a migrated state its registers cannot hold, with
    a message: a next queue beyond its queues (where the bottom half would
    start), an enabled queue's ring not 64-byte aligned; the state as saved
    loads."""
    ring = 0xc0ffee00  # enabled, never rung: a pattern to find in the stream
    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS) as src:
        img = os.path.join(src.dir, "state")
        dma_queue_at(src, ring)
        save_state(src, img)
    data = open(img, "rb").read()
    # nqueues (4, VMSTATE_UINT32_EQUAL), next_queue, then queue 0's ring
    at = [m.start() for m in re.finditer(
        re.escape(struct.pack(">I", 4)) + b"(.{4})" + re.escape(struct.pack(">Q", ring)), data,
        re.S)]
    check(len(at) == 1, "queue 0's state found %d times in the stream" % len(at))
    nq = at[0] + 4
    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS, incoming="exec:cat %s" % img) as dst:
        wait_migration(dst)
    for field, where, value, why in (
            ("next queue", nq, struct.pack(">I", 0xffffffff), "next queue 4294967295 of 4"),
            ("next queue", nq, struct.pack(">I", 4), "next queue 4 of 4"),
            ("ring", nq + 4, struct.pack(">Q", ring | 8), "queue 0: enabled with a ring")):
        bad = os.path.join(SCRATCH, "bad-state")
        with open(bad, "wb") as f:
            f.write(data[:where] + value + data[where + len(value):])
        rc, out = run_fail("viommu-vtd", DMA_ARGS + ["-m", "128", "-incoming", "exec:cat %s" % bad])
        check(rc != 0, "a state with %s %s loaded" % (field, value.hex()))
        check("viommu-dma: migrated state refused: " + why in out,
              "unclear error for %s %s: %s" % (field, value.hex(), out[-300:]))


def t_dma_traces_intx_and_reset():
    """viommu-dma traces its INTx level (MSI-X off) and its resets."""
    ring = 0x300000
    with running("viommu-vtd", DMA_ARGS + ["-trace", "viommu_dma_intx",
                                           "-trace", "viommu_dma_reset"]) as vm:
        dma_queue_at(vm, ring)
        vm.qtest("writeq 0x%x 0x%x" % (ring, 1 << 8))  # NOP with the IRQ flag
        vm.qtest("writeq 0x%x 0x%x" % (ring + 0x20, ST_PENDING))
        dma_doorbell(vm, 1)
        for _ in range(1000):
            if int(vm.qtest("readl 0x%x" % (ring + 0x20)).split()[1], 16) != ST_PENDING:
                break
        vm.qtest("writel 0x%x 1" % (DMA_BAR + Q0 + 0x1c))  # ISR: write 1 to clear
        vm.qtest("writel 0x%x 1" % (DMA_BAR + 0x10))       # CTRL.RESET
        lines = [l for l in vm.output().split(" | ") if "viommu_dma_" in l]
    intx = [l.split()[-1] for l in lines if "viommu_dma_intx" in l]
    check("1" in intx and "0" in intx[intx.index("1"):], "INTx levels traced: %s" % intx)
    check(any("viommu_dma_reset" in l for l in lines), "no reset traced: %s" % lines[-4:])


def t_analyze_migration():
    """QEMU's scripts/analyze-migration.py decodes the device's state field
    by field (no opaque buffer)."""
    script = os.path.join(TOP, "build", "qemu-src", "scripts", "analyze-migration.py")
    check(os.path.exists(script), "%s missing (run scripts/fetch-qemu.sh)" % script)
    with running("viommu-vtd,id=iommu0,fault-records=4") as src:
        img = os.path.join(src.dir, "state")
        regs = program(src)
        save_state(src, img)
    p = subprocess.run([sys.executable, script, "-f", img], capture_output=True, text=True,
                       timeout=TIMEOUT)
    check(p.returncode == 0, "analyze-migration.py failed: %s" % p.stderr.strip()[-500:])
    doc = json.loads(p.stdout)
    dev = [v for k, v in doc.items() if k.startswith("viommu-vtd")]
    check(len(dev) == 1, "no viommu-vtd section in %s" % sorted(doc))
    mig = dev[0].get("mig")
    check(isinstance(mig, dict), "device state not decoded by field: %r" % dev[0])
    for name, want in (("gsts", regs["GSTS"]), ("rtaddr", regs["RTADDR"]),
                       ("fedata", regs["FEDATA"]), ("iqa", regs["IQA"]),
                       ("n_fault_records", 4)):
        check(name in mig, "field %s not in the decoded state" % name)
        check(int(mig[name], 16) == want, "%s decoded as %s, want 0x%x" % (name, mig[name], want))
    check(len(mig.get("fault_records", [])) == 4, "fault records not decoded as 4 structs")


def t_trace_engine_events():
    """-trace 'viommu_vtd_*' shows what the engine does: misses, walks,
    faults, descriptors, invalidations, commands."""
    with running("viommu-vtd,id=iommu0", extra=DMA_ARGS + ["-trace", "viommu_vtd_*"]) as vm:
        dma_setup(vm)
        dma_push(vm, 0, DST_IOVA, 1)
        dma_push(vm, 1, UNMAPPED_IOVA, 2)
        dma_doorbell(vm, 2)
        dma_status(vm, 1)
        # A queued page-selective IOTLB invalidation and a wait descriptor.
        q = 0x200000
        vm.qtest("writeq 0x%x 0x%x" % (q, 2 | 3 << 4 | 1 << 16))
        vm.qtest("writeq 0x%x 0x%x" % (q + 8, DST_IOVA))
        vm.qtest("writeq 0x%x 0x%x" % (q + 16, 5))
        vm.writeq(IQA, q)
        vm.writel(GCMD, GCMD_TE | GCMD_QIE)
        vm.writeq(IQT, 0x20)
    log = open(vm.log).read()
    for ev in ("viommu_vtd_gcmd", "viommu_vtd_root_table", "viommu_vtd_cache_reset",
               "viommu_vtd_context_miss", "viommu_vtd_iotlb_miss", "viommu_vtd_page_walk",
               "viommu_vtd_translate", "viommu_vtd_fault", "viommu_vtd_fault_record",
               "viommu_vtd_qi_enable", "viommu_vtd_qi_run", "viommu_vtd_qi_desc",
               "viommu_vtd_iotlb_inv", "viommu_vtd_qi_wait"):
        check(re.search(r"\b%s\b" % ev, log), "no %s in the trace" % ev)
    check(re.search(r"viommu_vtd_page_walk .*from level 4, 4 levels read, leaf level 1", log),
          "the first walk did not read 4 levels")
    check(re.search(r"viommu_vtd_qi_desc .*: iotlb page", log), "no page-selective descriptor")


def t_trace_scalable_descriptors():
    """The scalable-mode descriptors are traced by name and granularity:
    a page-selective P_IOTLB and a PASID-selective PASID-cache one; the
    queue's size in 256-bit descriptors (QS 0: 128)."""
    with running("viommu-vtd,id=iommu0,x-scalable-mode=on",
                 ["-trace", "viommu_vtd_qi_desc", "-trace", "viommu_vtd_qi_enable"]) as vm:
        q = 0x200000
        for off, val in ((0, 6 | 3 << 4 | 1 << 16 | 5 << 32), (8, 0x30000),
                         (32, 7 | 1 << 4 | 1 << 16 | 5 << 32)):
            vm.qtest("writeq 0x%x 0x%x" % (q + off, val))
        vm.writeq(IQA, q | IQA_DW)
        vm.writel(GCMD, GCMD_QIE)
        vm.writeq(IQT, 0x40)
        check(vm.readq(IQH) == 0x40, "IQH 0x%x: the queue stopped" % vm.readq(IQH))
    log = open(vm.log).read()
    check(re.search(r"viommu_vtd_qi_desc .*: pasid-iotlb page hi 0x30000 ", log),
          "no page-selective P_IOTLB in the trace: %s" % log[-400:])
    check(re.search(r"viommu_vtd_qi_desc .*: pasid-cache pasid ", log),
          "no PASID-selective PASID-cache descriptor in the trace")
    check(re.search(r"viommu_vtd_qi_enable queued invalidation 1 base 0x200000 entries 128\b",
                    log), "queue not traced as 128 entries of 256 bits: %s" % log[-400:])


def t_queue_on_registers():
    """Tables and queues are read from RAM only: a queue aimed at the unit's
    own register window is an invalidation queue error, not a re-entry."""
    with running("viommu-vtd,id=iommu0") as vm:
        vm.writeq(IQA, BASE)
        vm.writel(GCMD, GCMD_QIE)
        check(vm.readl(GSTS) & GCMD_QIE, "GSTS.QIES not set")
        vm.writeq(IQT, 0x10)
        check(vm.readl(FSTS) & FSTS_IQE, "FSTS 0x%x: no IQE" % vm.readl(FSTS))
        check(vm.readq(IQH) == 0, "IQH moved past an unreadable descriptor")


def t_wait_status_to_registers():
    """A wait descriptor whose status address is the register window must not
    write the registers."""
    with running("viommu-vtd,id=iommu0") as vm:
        ram = 0x100000
        vm.writel(FEDATA, 0x4041)
        # wait descriptor: type 5, SW, status data 0x1234, status address FEDATA
        vm.qtest("writeq 0x%x 0x%x" % (ram, (0x1234 << 32) | (1 << 5) | 5))
        vm.qtest("writeq 0x%x 0x%x" % (ram + 8, BASE + FEDATA))
        vm.writeq(IQA, ram)
        vm.writel(GCMD, GCMD_QIE)
        vm.writeq(IQT, 0x10)
        check(vm.readl(FEDATA) == 0x4041, "FEDATA 0x%x: the unit wrote its own "
              "registers" % vm.readl(FEDATA))
        check(vm.readq(IQH) == 0x10, "IQH 0x%x: the wait descriptor was not consumed"
              % vm.readq(IQH))


def t_queue_waits_while_stopped():
    """A queue longer than one slice goes on in the main loop only while
    the VM runs: nothing of it is processed while the VM is stopped (its
    state could be being saved), all of it once the VM runs again."""
    ram, n = 0x200000, 300  # one 4 KiB queue holds 256: use two pages
    with running("viommu-vtd,id=iommu0") as vm:
        for i in range(n):  # wait descriptors without status write or interrupt
            vm.qtest("writeq 0x%x 0x5" % (ram + 16 * i))
            vm.qtest("writeq 0x%x 0" % (ram + 16 * i + 8))
        vm.writeq(IQA, ram | 1)  # QS 1: 512 descriptors
        vm.writel(GCMD, GCMD_QIE)
        vm.cmd("stop")
        vm.writeq(IQT, 16 * n)
        first = vm.readq(IQH)
        check(0 < first < 16 * n, "IQH 0x%x: the write ran no slice, or all" % first)
        for _ in range(5):  # main-loop iterations, where the bottom half would run
            vm.cmd("query-status")
        check(vm.readq(IQH) == first, "IQH 0x%x -> 0x%x while stopped" % (first, vm.readq(IQH)))
        vm.cmd("cont")
        deadline = time.monotonic() + TIMEOUT
        while vm.readq(IQH) != 16 * n and time.monotonic() < deadline:
            time.sleep(0.02)
        check(vm.readq(IQH) == 16 * n, "IQH 0x%x after cont" % vm.readq(IQH))


def t_queue_stops_with_the_vm():
    """A queue being worked through in slices when the VM stops runs no
    slice between 'stop' and 'cont' (a slice writes guest memory and sends
    interrupts), read from the trace, whose lines the main loop writes in
    order; it finishes after 'cont'.  A skip if 'stop' came after the
    queue was done in every try (the test cannot order the two)."""
    ram, n = 0x200000, 1 << 15  # QS 7: 512 KiB of wait descriptors
    with running("viommu-vtd,id=iommu0",
                 extra=["-trace", "viommu_vtd_qi_run", "-trace", "vm_state_notify"]) as vm:
        desc = struct.pack("<QQ", 0x5, 0) * n
        for off in range(0, len(desc), 4096):
            vm.qtest("write 0x%x 0x1000 0x%s" % (ram + off, desc[off:off + 4096].hex()))
        vm.writeq(IQA, ram | 7)
        vm.writel(GCMD, GCMD_QIE)
        for _ in range(5):
            vm.writeq(IQT, 0)  # a retry: one descriptor more brings IQH round to 0
            vm.writeq(IQT, 16 * (n - 1))
            vm.cmd("stop")
            for _ in range(5):  # main-loop iterations, where the bottom half would run
                vm.cmd("query-status")
            stopped_at = vm.readq(IQH)
            vm.cmd("cont")
            deadline = time.monotonic() + TIMEOUT
            while vm.readq(IQH) != 16 * (n - 1) and time.monotonic() < deadline:
                time.sleep(0.02)
            check(vm.readq(IQH) == 16 * (n - 1), "IQH 0x%x after cont" % vm.readq(IQH))
            if stopped_at != 16 * (n - 1):
                break  # stopped with slices left, as the case asks
    runs, state = [], None
    for line in open(vm.log):
        m = re.search(r"vm_state_notify running (\d)", line)
        if m:
            state = m.group(1)
        elif "viommu_vtd_qi_run" in line:
            runs.append(state)
    check(runs.count("0") == 0, "%d slices ran while the VM was stopped" % runs.count("0"))
    if stopped_at == 16 * (n - 1):
        raise Skip("in each of 5 tries the queue was done before 'stop' came")


def t_wait_after_notifications():
    """A wait descriptor completes after the host's part of the
    invalidations ahead of it: a MAP notifier (viommu-dma
    x-map-notifier=on, as VFIO registers) hears the UNMAP of a
    page-selective invalidation before the wait's status write."""
    q, status = 0x200000, 0x250000
    with running("viommu-vtd,caching-mode=on",
                 ["-device", "viommu-dma,addr=04.0,x-map-notifier=on",
                  "-trace", "viommu_vtd_notify_unmap", "-trace", "viommu_vtd_qi_wait"]) as vm:
        dma_setup(vm)
        # the guest unmaps DST_IOVA + 0x1000, then queues a page-selective
        # IOTLB invalidation of it in domain 1 and a wait with a status write
        vm.qtest("writeq 0x%x 0" % (0x105000 + ((DST_IOVA + 0x1000) >> 12) * 8))
        for off, val in ((0, 2 | 3 << 4 | 1 << 16), (8, DST_IOVA + 0x1000),
                         (16, 0xabcd << 32 | 1 << 5 | 5), (24, status)):
            vm.qtest("writeq 0x%x 0x%x" % (q + off, val))
        vm.writeq(IQA, q)
        vm.writel(GCMD, GCMD_TE | GCMD_QIE)
        mark = len(vm.output())
        vm.writeq(IQT, 0x20)
        check(int(vm.qtest("readl 0x%x" % status).split()[1], 16) == 0xabcd,
              "the wait did not complete")
        log = [l for l in vm.output()[mark:].split(" | ")
               if "viommu_vtd_notify_unmap" in l or "viommu_vtd_qi_wait" in l]
        unmap = [i for i, l in enumerate(log) if "iova 0x%x" % (DST_IOVA + 0x1000) in l]
        wait = [i for i, l in enumerate(log) if "viommu_vtd_qi_wait" in l]
        check(unmap and wait, "traces missing: %s" % log)
        check(unmap[0] < wait[0], "the wait completed before the UNMAP: %s" % log)


def t_map_notifier_keeps_unchanged_mappings():
    """A MAP notifier (VFIO) is brought in line with the guest's tables by
    difference: an invalidation of pages the tables still map the same way
    neither unmaps nor maps them (an assigned device's DMA to them would
    fault in between); a page mapped elsewhere is unmapped and mapped
    again, an unmapped one unmapped."""
    q, status = 0x200000, 0x250000
    pte = lambda iova: 0x105000 + (iova >> 12) * 8
    with running("viommu-vtd,caching-mode=on",
                 ["-device", "viommu-dma,addr=04.0,x-map-notifier=on",
                  "-trace", "viommu_vtd_notify_*", "-trace", "viommu_vtd_replay"]) as vm:
        dma_setup(vm)
        vm.writeq(IQA, q)
        vm.writel(GCMD, GCMD_TE | GCMD_QIE)
        tail = [0]

        def invalidate(desc_lo, addr):
            """One IOTLB descriptor and a wait; the notifier events it caused."""
            mark = len(vm.output())
            for val in (desc_lo, addr, 0x1 << 32 | 1 << 5 | 5, status):
                vm.qtest("writeq 0x%x 0x%x" % (q + tail[0] % 0x1000, val))
                tail[0] += 8
            vm.writeq(IQT, tail[0] % 0x1000)
            check(vm.readq(IQH) == tail[0] % 0x1000, "the queue did not run")
            return [l for l in vm.output()[mark:].split(" | ") if "viommu_vtd_notify_" in l]

        psi = 2 | 3 << 4 | 1 << 16      # page-selective, domain 1
        dsi = 2 | 2 << 4 | 1 << 16      # domain-selective
        events = invalidate(psi, DST_IOVA + 0x1000)
        check(not events, "unchanged page: %s" % events)
        events = invalidate(dsi, 0)
        check(not events, "unchanged domain: %s" % events)
        vm.qtest("writeq 0x%x 0x%x" % (pte(DST_IOVA + 0x1000), 0x330000 | 3))
        events = invalidate(psi, DST_IOVA + 0x1000)
        check(len(events) == 2 and "notify_unmap" in events[0] and
              "iova 0x31000" in events[0] and "notify_map" in events[1] and
              "0x31000 -> 0x330000" in events[1], "remapped page: %s" % events)
        vm.qtest("writeq 0x%x 0" % pte(DST_IOVA))
        events = invalidate(dsi, 0)
        check(len(events) == 1 and "notify_unmap" in events[0] and "iova 0x30000" in events[0],
              "unmapped page: %s" % events)
        # twenty domain-selective invalidations before one wait: one walk
        mark = len(vm.output())
        for val in [dsi, 0] * 20 + [0x1 << 32 | 1 << 5 | 5, status]:
            vm.qtest("writeq 0x%x 0x%x" % (q + tail[0] % 0x1000, val))
            tail[0] += 8
        vm.writeq(IQT, tail[0] % 0x1000)
        walks = [l for l in vm.output()[mark:].split(" | ") if "viommu_vtd_replay " in l]
        check(len(walks) == 1, "%d walks for 20 domain-selective invalidations" % len(walks))


def t_map_notifier_keeps_what_a_cut_walk_did_not_reach():
    """A walk that runs out of its entry budget (2^24 entries: looping or
    shared tables) says nothing past its last leaf, so a MAP notifier
    keeps what it was told there: a page at 512 GiB stays mapped when the
    tables below it come to loop, and the walk's cut is traced."""
    q, status = 0x200000, 0x250000
    pdpt, pd, empty = 0x103000, 0x104000, 0x120000   # dma_setup's, and a zero page
    high = [0x121000, 0x122000, 0x123000]           # PDPT, PD, PT at 512 GiB
    with running("viommu-vtd,caching-mode=on",
                 ["-device", "viommu-dma,addr=04.0,x-map-notifier=on",
                  "-trace", "viommu_vtd_notify_*", "-trace", "viommu_vtd_replay*"]) as vm:
        dma_setup(vm)
        vm.qtest("writeq 0x%x 0x%x" % (PML4 + 8, high[0] | 3))
        vm.qtest("writeq 0x%x 0x%x" % (high[0], high[1] | 3))
        vm.qtest("writeq 0x%x 0x%x" % (high[1], high[2] | 3))
        vm.qtest("writeq 0x%x 0x%x" % (high[2], 0x340000 | 3))
        vm.writeq(IQA, q)
        vm.writel(GCMD, GCMD_TE | GCMD_QIE)
        tail = [0]

        def domain_invalidation():
            mark = len(vm.output())
            for val in (2 | 2 << 4 | 1 << 16, 0, 0x1 << 32 | 1 << 5 | 5, status):
                vm.qtest("writeq 0x%x 0x%x" % (q + tail[0] % 0x1000, val))
                tail[0] += 8
            vm.writeq(IQT, tail[0] % 0x1000)
            check(vm.readq(IQH) == tail[0] % 0x1000, "the queue did not run")
            return vm.output()[mark:].split(" | ")

        events = domain_invalidation()
        check(any("notify_map" in l and "iova 0x8000000000 -> 0x340000" in l for l in events),
              "the page at 512 GiB was not told: %s" % events[-6:])
        # PDPT[1..511] -> the PD, PD[1..511] -> an empty table: ~2^27 entries
        blob = lambda table: "".join(struct.pack("<Q", table | 3).hex() for _ in range(511))
        vm.qtest("write 0x%x 0x%x 0x%s" % (pdpt + 8, 511 * 8, blob(pd)))
        vm.qtest("write 0x%x 0x%x 0x%s" % (pd + 8, 511 * 8, blob(empty)))
        events = domain_invalidation()
        check(not any("notify_unmap" in l and "0x8000000000" in l for l in events),
              "the page at 512 GiB was unmapped: %s" % [l for l in events if "notify" in l][:4])
        check(any("viommu_vtd_replay_kept" in l for l in events),
              "no trace of the cut walk: %s" % events[-6:])


def t_map_notifier_leaves_are_bounded():
    """The leaves kept for MAP notifiers are bounded (2^20, unit-wide):
    tables that share their lower levels declare 2^27 leaves from four
    pages, and each 1 GiB invalidation of them would add 2^18 more.  Past
    the limit, leaves are not told, once reported and traced."""
    q, status = 0x200000, 0x250000
    pt, pd, pdpt = 0x140000, 0x141000, 0x142000
    blob = lambda entry: "".join(struct.pack("<Q", entry).hex() for _ in range(512))
    with running("viommu-vtd,id=iommu0,caching-mode=on",
                 ["-device", "viommu-dma,addr=04.0,x-map-notifier=on",
                  "-trace", "viommu_vtd_notify_map_over_limit"]) as vm:
        dma_setup(vm)
        vm.qtest("write 0x%x 0x1000 0x%s" % (pt, blob(0x400000 | 3)))
        vm.qtest("write 0x%x 0x1000 0x%s" % (pd, blob(pt | 3)))
        vm.qtest("write 0x%x 0x1000 0x%s" % (pdpt, blob(pd | 3)))
        vm.qtest("writeq 0x%x 0x%x" % (PML4 + 8, pdpt | 3))     # 512 GiB - 1 TiB
        vm.writeq(IQA, q)
        vm.writel(GCMD, GCMD_TE | GCMD_QIE)
        tail = 0
        for i in range(5):                   # 5 x 2^18 leaves, one page-selective each
            addr = (1 << 39) + (i << 30)
            for val in (2 | 3 << 4 | 1 << 16, addr | 18, 0x1 << 32 | 1 << 5 | 5, status):
                vm.qtest("writeq 0x%x 0x%x" % (q + tail % 0x1000, val))
                tail += 8
            vm.writeq(IQT, tail % 0x1000)
            check(vm.readq(IQH) == tail % 0x1000, "the queue did not run")
        doc = json.loads(vm.cmd("qom-get", path="/machine/peripheral/iommu0",
                                property="stats"))
        told = doc["notifications"]["map"]
        check(told == 1 << 20, "%d leaves told, not the limit's 2^20" % told)
        out = vm.output()
        check(out.count("those past the limit are not mapped") == 1,
              "the limit not reported once: %s" % out[-600:])
        check("viommu_vtd_notify_map_over_limit viommu-vtd-04.0-dmar [0x8100000000, "
              "0x813fffffff]: 262144 leaves not told" in out,
              "the leaves past the limit not traced: %s" % out[-600:])


def t_events_with_upper_address():
    """The unit's own events with an x2APIC destination: IEUADDR (and
    FEUADDR) hold its bits 31:8, as Linux programs them for APIC ids from
    256 on; the invalidation-completion event goes to the APIC with them,
    not dropped as an address outside the interrupt window."""
    ram = 0x100000
    with running("viommu-vtd,intremap=on,eim=on",
                 ["-trace", "viommu_vtd_msi*"]) as vm:
        for ieuaddr in (0, 0x100):
            vm.writel(IEDATA, 0x30)
            vm.writel(IEADDR, 0xfee00000)
            vm.writel(IEUADDR, ieuaddr)
            vm.writel(IECTL, 0)
            vm.writel(ICS, 1)  # IWC is write-1-to-clear
            # wait descriptor with IF
            vm.qtest("writeq 0x%x 0x%x" % (ram, (1 << 4) | 5))
            vm.qtest("writeq 0x%x 0" % (ram + 8))
            vm.writeq(IQA, ram)
            vm.writel(GCMD, GCMD_QIE)
            vm.writeq(IQT, 0x10)
            check(vm.readl(ICS) & 1, "ICS.IWC not set")
            vm.writel(GCMD, 0)  # QIE off: IQH and IQT back to 0
        out = vm.output()
        check("viommu_vtd_msi addr 0x100fee00000 data 0x30" in out,
              "no event to the x2APIC destination: %s" % out[-600:])
        check("viommu_vtd_msi_dropped" not in out, "an event was dropped: %s" % out[-600:])
        check("viommu_vtd_msi_deferred" not in out,
              "an event raised under the BQL was deferred: %s" % out[-600:])


def t_interrupt_window_refuses_other_accesses():
    """Only DWORD writes into a device's interrupt window are interrupt
    requests: an 8-byte DMA write there fails, and the trace says so
    (accesses below 4 bytes the memory core refuses before the window)."""
    ring = 0x300000
    with running("viommu-vtd,intremap=on", DMA_ARGS + ["-trace", "viommu_vtd_ir_*"]) as vm:
        dma_queue_at(vm, ring)
        for off, val in ((0, OP_FILL | 8 << 32), (8, 0), (0x10, 0xfee00000), (0x18, 0x4242),
                         (0x20, ST_PENDING)):
            vm.qtest("writeq 0x%x 0x%x" % (ring + off, val))
        dma_doorbell(vm, 1)
        for _ in range(1000):
            st = int(vm.qtest("readl 0x%x" % (ring + 0x20)).split()[1], 16)
            if st != ST_PENDING:
                break
        check(st == ST_WRITE_FAULT, "an 8-byte write into the window: status 0x%x" % st)
        out = vm.output()
        check(re.search(r"viommu_vtd_ir_bad_access sid 0x0020 addr 0xfee00000 size 8 write 1", out),
              "no trace of the refused write: %s" % out[-600:])


def t_system_reset():
    with running("viommu-vtd,id=iommu0") as vm:
        program(vm)
        check(vm.readl(GSTS) & GCMD_TE, "GSTS.TES not set")
        vm.cmd("system_reset")
        deadline = time.monotonic() + TIMEOUT
        while vm.readl(GSTS) != 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        check(vm.readl(GSTS) == 0, "GSTS 0x%x after reset" % vm.readl(GSTS))
        check(vm.readq(RTADDR) == 0, "RTADDR 0x%x after reset" % vm.readq(RTADDR))
        check(vm.readl(VER) != 0, "register window gone after reset")
        json.loads(vm.cmd("qom-get", path="/machine/peripheral/iommu0", property="stats"))


def cfg_read(vm, bus, devfn, off, width=4):
    vm.qtest("outl 0xcf8 0x%x" % (0x80000000 | bus << 16 | devfn << 8 | (off & 0xfc)))
    port = 0xcfc + (off & 3)
    return int(vm.qtest("%s 0x%x" % ("inl" if width == 4 else "inw", port)).split()[1], 16)


def cfg_write(vm, bus, devfn, off, val, width=4):
    vm.qtest("outl 0xcf8 0x%x" % (0x80000000 | bus << 16 | devfn << 8 | (off & 0xfc)))
    vm.qtest("%s 0x%x 0x%x" % ("outl" if width == 4 else "outw", 0xcfc + (off & 3), val))


def t_bridge_removed():
    """The guest powers off a PCIe slot holding a PCIe-to-PCI bridge with a
    device behind it: QEMU unplugs the bridge and frees its secondary bus.
    The unit forgets that bus's address spaces, so the invalidations,
    translation switches and reset that follow (each of which asks every
    address space its source-id) never read the freed bus."""
    extra = ["-global", "ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off",
             "-device", "pcie-root-port,id=rp,bus=pcie.0,addr=5,chassis=1,slot=1",
             "-device", "pcie-pci-bridge,id=br,bus=rp,addr=0",
             "-device", "viommu-dma,bus=br,addr=1",
             "-trace", "viommu_vtd_as_removed"]
    perturb = os.environ.get("MALLOC_PERTURB_")
    os.environ["MALLOC_PERTURB_"] = "165"  # freed memory reads as garbage
    try:
        with running("viommu-vtd,id=iommu0", extra) as vm:
            rp = 5 << 3
            cap = cfg_read(vm, 0, rp, 0x34) & 0xff
            while cap and cfg_read(vm, 0, rp, cap) & 0xff != 0x10:  # PCI Express
                cap = (cfg_read(vm, 0, rp, cap) >> 8) & 0xff
            check(cap, "no PCI Express capability on the root port")
            sltctl = cfg_read(vm, 0, rp, cap + 0x18, 2)
            cfg_write(vm, 0, rp, cap + 0x18, sltctl | 0x700, 2)  # power off, indicators off
            deadline = time.monotonic() + TIMEOUT
            names = None
            while time.monotonic() < deadline:
                names = {p["name"] for p in vm.cmd("qom-list", path="/machine/peripheral")}
                if "br" not in names:
                    break
                time.sleep(0.05)
            check("br" not in names, "the bridge was not unplugged: %s" % sorted(names))
            for _ in range(3):
                vm.writeq(CCMD, CCMD_ICC | CCMD_GLOBAL)
            program(vm)  # translation on: every address space is switched
            vm.cmd("system_reset")
            check(vm.readl(VER) != 0, "register window gone")
            check("its bus went with its bridge" in vm.output(),
                  "no viommu_vtd_as_removed: %s" % vm.output()[-500:])
    finally:
        if perturb is None:
            del os.environ["MALLOC_PERTURB_"]
        else:
            os.environ["MALLOC_PERTURB_"] = perturb


def sm_rid_pasid(vm, qw0, qw2=0):
    """Scalable-mode tables giving the DMA device the RID_PASID entry
    (qw0, domain 7, qw2), then translation on; returns the qtest writer."""
    w = lambda addr, val: vm.qtest("writeq 0x%x 0x%x" % (addr, val))
    w(ROOT, CTX | 1)                                 # scalable root entry, lower half
    ce = CTX + (DMA_SID & 0xff) * 32                 # 256-bit context entry
    w(ce, 0x106000 | 1)                              # PASID directory, PDTS 0
    w(0x106000, 0x107000 | 1)                        # PASIDs 0-63
    w(0x107000, qw0)
    w(0x107000 + 8, 7)                               # domain 7
    w(0x107000 + 16, qw2)
    return w


def enable_sm(vm):
    vm.writeq(RTADDR, ROOT | RTADDR_TTM_SM)
    vm.writel(GCMD, GCMD_SRTP)
    vm.writel(GCMD, GCMD_TE)
    check(vm.readl(GSTS) & GCMD_TE, "TE did not take effect")


def t_map_notifier_first_stage():
    """A VFIO-style MAP notifier (viommu-dma x-map-notifier=on) on a device
    behind viommu-vtd with caching-mode=on: accepted whether the unit offers
    first-stage tables (x-flts=on, which replay follows) or second-stage
    ones; refused with a clear message without caching-mode=on."""
    msg = ("viommu-dma: MAP notifier refused: viommu-vtd: /machine/peripheral/d4 "
           "(00:04.0) needs MAP notifications (device assignment); start "
           "viommu-vtd with caching-mode=on")
    for opts, refused in ((",caching-mode=on,x-flts=on", False), (",caching-mode=on", False),
                          (",x-flts=on", True)):
        vm = VM("viommu-vtd,x-scalable-mode=on" + opts,
                extra=["-device", "viommu-dma,id=d4,addr=04.0,x-map-notifier=on",
                       "-trace", "viommu_vtd_notify_flag_changed"])
        try:
            check("refused" not in vm.output(), "refused before translation: %s" % vm.output())
            enable_sm(vm)  # the IOMMU region (and the notifier with it) comes into use
            out = vm.output()
            if refused:
                check(msg in out, "no clear refusal without caching-mode=on: %s" % out)
            else:
                check("refused" not in out, "refused with %s: %s" % (opts, out))
                check("viommu_vtd_notify_flag_changed" in out,
                      "no notifier registered with %s: %s" % (opts, out))
            vm.quit()
        finally:
            vm.kill()


def t_map_notifier_replays_first_stage():
    """A MAP notifier on a device whose RID_PASID entry has PGTT first-stage
    (x-flts=on, caching-mode=on) is replayed from the first-stage tables:
    a dirty read-write leaf maps read-write, a read-only one read-only, a
    supervisor-only one not at all."""
    fs = {"pml4": 0x108000, "pdpt": 0x109000, "pd": 0x10a000, "pt": 0x10b000}
    table = 1 | 2 | 4 | 0x20            # P, R/W, U/S, A
    vm = VM("viommu-vtd,caching-mode=on,x-scalable-mode=on,x-flts=on",
            extra=["-device", "viommu-dma,addr=04.0,x-map-notifier=on",
                   "-trace", "viommu_vtd_notify_map"])
    try:
        # RID_PASID: P, PGTT first-stage, FSPTPTR 4-level
        w = sm_rid_pasid(vm, 1 | 1 << 6, fs["pml4"])
        w(fs["pml4"], fs["pdpt"] | table)
        w(fs["pdpt"], fs["pd"] | table)
        w(fs["pd"], fs["pt"] | table)
        w(fs["pt"] + (SRC_IOVA >> 12) * 8, 0x310000 | table | 0x40)   # dirty: RW
        w(fs["pt"] + (DST_IOVA >> 12) * 8, 0x320000 | 1 | 4 | 0x20)   # read-only
        w(fs["pt"] + (RING_IOVA >> 12) * 8, 0x300000 | 1 | 2 | 0x20)  # supervisor
        enable_sm(vm)
        out = vm.output()
        check("refused" not in out, "MAP notifier refused: %s" % out)
        for iova, pa, perm in ((SRC_IOVA, 0x310000, 3), (DST_IOVA, 0x320000, 1)):
            want = "iova 0x%x -> 0x%x mask 0xfff perm %d" % (iova, pa, perm)
            check(want in out, "no MAP %s in: %s" % (want, out))
        check("iova 0x%x ->" % RING_IOVA not in out,
              "a supervisor-only page was mapped: %s" % out)
        vm.quit()
    finally:
        vm.kill()


def t_map_notifier_pass_through_with_pasids():
    """With x-pasid-mode=on a device whose RID_PASID entry is pass-through
    keeps the IOMMU region (its requests with PASID are translated), so a
    MAP notifier on it is told guest RAM one to one, which is what such a
    context does to its requests without PASID."""
    vm = VM("viommu-vtd,caching-mode=on,x-scalable-mode=on,x-pasid-mode=on",
            extra=["-device", "viommu-dma,addr=04.0,x-map-notifier=on",
                   "-trace", "viommu_vtd_notify_map", "-trace", "viommu_vtd_replay*"])
    try:
        sm_rid_pasid(vm, 1 | 2 << 2 | 4 << 6)           # RID_PASID: P, AW 48, PGTT PT
        enable_sm(vm)
        out = vm.output()
        check("pass-through" in out and "ranges of guest memory one to one" in out,
              "no pass-through replay: %s" % out[-800:])
        for iova in (0x100000, 0x4000000):               # 1 MiB and 64 MiB of the 128
            want = "iova 0x%x -> 0x%x mask" % (iova, iova)
            check(want in out, "no identity MAP at 0x%x: %s" % (iova, out[-800:]))
        vm.quit()
    finally:
        vm.kill()


CASES = [
    ("device listed by -device help", t_listed),
    ("properties listed by -device viommu-vtd,help", t_properties),
] + [("rejects %s with a reason" % p, t_rejected(p, w)) for p, w in REJECTED] + [
    ("engine configuration errors fail realize, naming the property", t_bad_engine_config),
    ("old machine types: the refusal names what they set and how to undo it",
     t_old_machine_types),
    ("a device that takes its address space when created must follow the unit",
     t_created_before_the_unit),
    ("a PASID-capable viommu-dma behind a unit without PASIDs is warned about",
     t_pasid_device_warned_without_pasids),
    ("the leaves kept for MAP notifiers are bounded", t_map_notifier_leaves_are_bounded),
    ("scalable-mode options set ECAP/CAP; bad combinations fail with a reason",
     t_scalable_options),
    ("snoop-control=on offers ECAP.SC", t_snoop_control),
    ("migration keeps RTADDR.TTM and IQA.DW; a legacy destination refuses",
     t_migration_scalable),
    ("a MAP notifier is accepted with first- and second-stage tables, refused without CM",
     t_map_notifier_first_stage),
    ("a MAP notifier is replayed from first-stage tables", t_map_notifier_replays_first_stage),
    ("CAP/ECAP reflect aw-bits, caching-mode, device-iotlb, pt", t_cap_reflects_config),
    ("stats readable over QMP as a JSON object, viommu-stats agrees", t_stats_json),
    ("viommu-stats finds a device without id", t_stats_anonymous),
    ("viommu-stats refuses a --timeout out of range", t_stats_bad_timeout),
    ("viommu-stats refuses an empty --device and names another device's type",
     t_stats_bad_device),
    ("stats count a register-based context invalidation", t_stats_count_invalidation),
    ("intremap and eim set ECAP.IR/EIM; eim=on needs intremap=on", t_intremap_options),
    ("stats' interrupt_remapping section, printed by viommu-stats",
     t_stats_interrupt_remapping),
    ("machine with the device and a PCI NIC starts and quits cleanly", t_starts_quits),
    ("migration round-trip keeps the register state", t_migration),
    ("migration stream carries a viommu-vtd section", t_migration_section),
    ("migration keeps IRTA and the interrupt remapping status",
     t_migration_interrupt_remapping),
    ("migration with DMA in flight: queued DMA translates on the destination",
     t_migration_dma_in_flight),
    ("migration keeps pending fault records and the record FRI names",
     t_migration_fault_records),
    ("viommu-dma processes its ring only while the VM runs, after a migration too",
     t_dma_waits_while_stopped),
    ("viommu-dma refuses a migrated state its registers cannot hold, with a message",
     t_dma_migrated_state_checked),
    ("viommu-dma traces its INTx level and its resets", t_dma_traces_intx_and_reset),
    ("analyze-migration.py decodes the viommu-vtd state field by field", t_analyze_migration),
    ("-trace viommu_vtd_* shows the engine's events", t_trace_engine_events),
    ("scalable-mode descriptors are traced by name and granularity",
     t_trace_scalable_descriptors),
    ("queue aimed at the register window: IQE, no re-entry", t_queue_on_registers),
    ("wait status write aimed at the register window is dropped", t_wait_status_to_registers),
    ("system_reset returns the unit to its reset state", t_system_reset),
    ("the queue's later slices wait while the VM is stopped", t_queue_waits_while_stopped),
    ("a queue being worked through stops with the VM", t_queue_stops_with_the_vm),
    ("a wait descriptor completes after the notifiers heard the invalidations before it",
     t_wait_after_notifications),
    ("a MAP notifier keeps the mappings an invalidation left unchanged",
     t_map_notifier_keeps_unchanged_mappings),
    ("a MAP notifier is told guest RAM one to one through a pass-through RID_PASID",
     t_map_notifier_pass_through_with_pasids),
    ("a MAP notifier keeps what a walk cut by its entry budget did not reach",
     t_map_notifier_keeps_what_a_cut_walk_did_not_reach),
    ("an event's upper address register reaches the APIC (x2APIC destinations)",
     t_events_with_upper_address),
    ("only DWORD writes into the interrupt window are interrupts; others are traced",
     t_interrupt_window_refuses_other_accesses),
    ("a bridge unplugged by the guest leaves no address space on its freed bus",
     t_bridge_removed),
]


def main():
    global SCRATCH
    only = sys.argv[1:]
    cases = [c for c in CASES if not only or any(o in c[0] for o in only)]
    print("1..%d" % len(cases), flush=True)
    SCRATCH = tempfile.mkdtemp(prefix="viommu-glue-")
    failed = 0
    for i, (name, fn) in enumerate(cases, 1):
        try:
            fn()
            print("ok %d - %s" % (i, name), flush=True)
        except Skip as e:
            print("ok %d - %s # SKIP %s" % (i, name, e), flush=True)
        except Exception as e:  # any exception is that case's failure
            failed += 1
            print("not ok %d - %s" % (i, name), flush=True)
            print("# %s: %s" % (type(e).__name__, e), flush=True)
    if failed:
        print("# the VMs' logs and saved states are kept in %s" % SCRATCH, flush=True)
        return 1
    shutil.rmtree(SCRATCH, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
