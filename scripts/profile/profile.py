#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Profile a guest workload behind an IOMMU, in one command.

  profile.py [--workload memcached|nginx] [--iommu none|intel-iommu|viommu-vtd]
             [--policy lazy|strict] [--vcpus N] [--duration S] [--kernel PATH]
  profile.py --compare [CONFIG,...]   several configurations, one table + SVG

A CONFIG is IOMMU:POLICY, e.g. none:lazy,intel-iommu:strict,viommu-vtd:lazy.

The guest (scripts/profile/build-image.sh) has two virtio-net NICs with
iommu_platform=on joined back to back (--link: by default a pair of unix
datagram sockets; or a QEMU hub, or taps); the server runs in one network
namespace, the load generator in another, so each packet is DMA-mapped twice
by the guest's IOMMU driver.  Reported: throughput and latency from
memcaslap/wrk, the viommu-vtd statistics over QMP (scripts/viommu-stats
--json) during the load, the guest kernel's perf profile with the share of
samples in IOVA allocation, unmap/flush and invalidation paths, and with
--events the guest-side iommu:map/unmap counts.

Results: build/profile/<run>/ (report.txt, result.json, console.log,
data.log); a comparison adds compare.txt and compare.svg.  Every wait is
bounded; on failure one sentence names the cause and the logs are kept.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD", os.path.join(TOP, "build"))
sys.path.insert(0, os.path.join(TOP, "scripts", "report"))
import svgplot  # noqa: E402  (the one SVG plotter, shared with make report)
sys.path.insert(0, os.path.join(TOP, "scripts", "trace"))
from from_ftrace import complete_from  # noqa: E402  (where an overrun ring buffer's complete part starts)
WORKLOADS = ("memcached", "nginx")
IOMMUS = ("none", "intel-iommu", "viommu-vtd")
POLICIES = ("lazy", "strict")
DEFAULT_COMPARE = "none:lazy,intel-iommu:lazy,intel-iommu:strict,viommu-vtd:lazy,viommu-vtd:strict"
# The default load (docs/profiling.rst, "Saturating the guest").
DEFAULT_CONNS = 256
DEFAULT_LINK = "dgram"
DEFAULT_IRQS = "default"
FIRMWARE = ["-L", "/usr/share/seabios", "-L", "/usr/lib/ipxe/qemu", "-L", "/usr/share/qemu"]

# Kernel symbols by path (matched as prefixes / exact names).
PATHS = {
    "iova_alloc": ("alloc_iova", "__alloc_and_insert_iova_range", "iova_rcache",
                   "__iova_rcache", "iommu_dma_alloc_iova", "free_iova", "__free_iova",
                   "iova_magazine", "remove_iova", "iova_insert_rbtree", "iommu_dma_free_iova"),
    "unmap_flush": ("iommu_dma_unmap", "__iommu_dma_unmap", "fq_ring", "fq_flush", "fq_full", "queue_iova",
                    "iommu_dma_flush", "iommu_iotlb_sync", "intel_iommu_tlb_sync",
                    "intel_flush_iotlb", "iommu_unmap", "__iommu_unmap", "intel_iommu_unmap",
                    "dma_pte_clear", "domain_unmap"),
    "invalidation": ("qi_submit_sync", "qi_flush", "qi_check_fault", "__iommu_flush_iotlb",
                     "iommu_flush_iotlb_psi", "__iommu_flush_context", "iommu_flush_dev_iotlb"),
}
PATH_LABELS = {"iova_alloc": "IOVA allocation", "unmap_flush": "unmap/flush",
               "invalidation": "invalidation"}


class Failure(Exception):
    """One sentence naming the cause."""


def say(msg):
    print("[viommu-lab] profile: " + msg, flush=True)


# ---------------------------------------------------------------- helpers

def qemu_binary():
    q = os.environ.get("QEMU", os.path.join(BUILD, "qemu-system-x86_64"))
    if not os.access(q, os.X_OK):
        raise Failure("no QEMU at %s; run 'bash scripts/fetch-qemu.sh && "
                      "bash scripts/build-qemu.sh' first" % q)
    return q


_devices = None


def qemu_has_device(qemu, name):
    global _devices
    if _devices is None:
        try:
            _devices = subprocess.run([qemu, "-device", "help"], capture_output=True,
                                      text=True, timeout=60).stdout + ""
        except (OSError, subprocess.TimeoutExpired) as e:
            raise Failure("'%s -device help' failed: %s" % (qemu, e))
    return ('name "%s"' % name) in _devices


def build_image():
    try:
        r = subprocess.run(["bash", os.path.join(HERE, "build-image.sh"), "--print"],
                           stdout=subprocess.PIPE, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        raise Failure("building the profiling guest image took over an hour; see "
                      "/var/cache/viommu-lab/profile/debootstrap.log")
    if r.returncode != 0 or not r.stdout.strip():
        raise Failure("building the profiling guest image failed (messages above)")
    return r.stdout.strip().splitlines()[-1]


def flatten(doc, prefix="", out=None):
    """{'a': {'b': 1}} -> {'a.b': 1}; lists of numbers keep their index."""
    if out is None:
        out = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            flatten(v, prefix + k + ".", out)
    elif isinstance(doc, list):
        if all(isinstance(e, (int, float)) and not isinstance(e, bool) for e in doc):
            for i, e in enumerate(doc):
                out["%s%d" % (prefix, i)] = e
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        out[prefix[:-1]] = doc
    return out


def viommu_stats(sock, path_hint=None):
    """The device's statistics document via scripts/viommu-stats --json."""
    tool = os.path.join(TOP, "scripts", "viommu-stats")
    if not os.path.exists(tool):
        return None, "scripts/viommu-stats is missing"
    try:
        r = subprocess.run([sys.executable, tool, "--qmp", sock, "--json", "--timeout", "20"],
                           capture_output=True, text=True, timeout=40)
    except subprocess.TimeoutExpired:
        return None, "viommu-stats did not answer within 40 s"
    if r.returncode != 0:
        return None, (r.stderr.strip() or "viommu-stats exited with %d" % r.returncode)
    try:
        return json.loads(r.stdout), None
    except ValueError as e:
        return None, "viommu-stats printed invalid JSON: %s" % e


# ---------------------------------------------------------------- parsing

def sections(text):
    """@@BEGIN name ... @@END name blocks of the data channel."""
    out, cur, buf = {}, None, []
    for line in text.splitlines():
        line = line.rstrip("\r")
        if cur is None and line.startswith("@@BEGIN "):
            cur, buf = line[8:].strip(), []
        elif cur is not None and line == "@@END " + cur:
            out[cur] = "\n".join(buf)
            cur = None
        elif cur is not None:
            buf.append(line)
    return out


def _num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def log2_percentiles(hist, pcts=(50, 90, 99, 99.9), most=None):
    """hist: {exponent: count} of memaslap's log2 buckets -> {p: upper bound}.

    memaslap files a time t under the smallest e with 2^e >= t (ms_local_log2),
    so bucket e holds (2^(e-1), 2^e] us and its upper bound is 2^e, capped at
    the largest time seen (@most) when known."""
    total = sum(hist.values())
    res = {}
    if not total:
        return res
    for p in pcts:
        need, acc = total * p / 100.0, 0
        for e in sorted(hist):
            acc += hist[e]
            if acc >= need:
                res[p] = float(2 ** e if most is None else min(2 ** e, most))
                break
    return res


def parse_memcaslap(text):
    """memcaslap (libmemcached's memaslap) output -> metrics (latency in us)."""
    r = {"tool": "memcaslap"}
    m = re.search(r"Run time:\s*([\d.]+)s\s+Ops:\s*(\d+)\s+TPS:\s*(\d+)", text)
    if m:
        r["seconds"], r["ops"], r["ops_per_s"] = float(m.group(1)), int(m.group(2)), float(m.group(3))
    for key in ("cmd_get", "cmd_set", "get_misses"):
        m = re.search(r"^\s*%s:\s*(\d+)" % key, text, re.M)
        if m:
            r[key] = int(m.group(1))
    # "Total Statistics" table, Global row: Time Ops TPS Net Get_miss Min Max Avg Std Geo
    m = re.search(r"Total Statistics.*?\n\s*Global\s+(.*)", text, re.S)
    if m:
        f = m.group(1).split()
        if len(f) >= 9:
            r["lat_min_us"], r["lat_max_us"], r["lat_avg_us"] = _num(f[5]), _num(f[6]), _num(f[7])
            r.setdefault("ops", int(_num(f[1]) or 0))
    # Log2 distribution of the whole run (printed with -S): "Total Statistics (N events)"
    m = re.search(r"Total Statistics \((\d+) events\)(.*?)(?:\n\s*\n|\Z)", text, re.S)
    if m:
        body = m.group(2)
        for key, name in (("Min", "lat_min_us"), ("Max", "lat_max_us"), ("Avg", "lat_avg_us")):
            mm = re.search(r"%s:\s*([\d.]+)" % key, body)
            if mm:
                r[name] = float(mm.group(1))
        hist = {}
        dm = re.search(r"Log2 Dist:(.*)", body, re.S)
        if dm:
            for line in dm.group(1).splitlines():
                mm = re.match(r"\s*(\d+):\s+([\d\s]+)$", line)
                if mm:
                    e0 = int(mm.group(1))
                    for i, c in enumerate(mm.group(2).split()):
                        hist[e0 + i] = hist.get(e0 + i, 0) + int(c)
        for p, v in log2_percentiles(hist, most=r.get("lat_max_us")).items():
            r["lat_p%s_us" % ("%g" % p).replace(".", "_")] = v
        if hist:
            r["lat_percentiles_note"] = "upper bound of the log2 bucket, at most the maximum"
    return r


_UNITS = {"us": 1.0, "ms": 1000.0, "s": 1e6, "ns": 0.001}


def _dur_us(s):
    m = re.match(r"([\d.]+)(us|ms|s|ns)$", s)
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def parse_wrk(text):
    r = {"tool": "wrk"}
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
    if m:
        r["ops"] = int(m.group(1))
        r["seconds"] = _dur_us(m.group(2) + m.group(3)) / 1e6 if _dur_us(m.group(2) + m.group(3)) else None
    m = re.search(r"Requests/sec:\s*([\d.]+)", text)
    if m:
        r["ops_per_s"] = float(m.group(1))
    m = re.search(r"Latency\s+([\d.]+\w+)\s+([\d.]+\w+)\s+([\d.]+\w+)", text)
    if m:
        r["lat_avg_us"], r["lat_max_us"] = _dur_us(m.group(1)), _dur_us(m.group(3))
    for p in ("50", "75", "90", "99"):
        m = re.search(r"^\s*%s%%\s+([\d.]+\w+)" % p, text, re.M)
        if m:
            r["lat_p%s_us" % p] = _dur_us(m.group(1))
    m = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", text)
    r["errors_non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors:(.*)", text)
    if m:
        r["socket_errors"] = m.group(1).strip()
    return r


def parse_server(workload, before, after):
    """Requests the server saw during the measurement (after - before)."""
    def memc(t):
        d = {}
        for line in (t or "").splitlines():
            f = line.split()
            if len(f) == 3 and f[0] == "STAT":
                d[f[1]] = f[2]
        return d

    def ngx(t):
        m = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s*$", t or "", re.M)
        return int(m.group(3)) if m else None

    if workload == "memcached":
        b, a = memc(before), memc(after)
        try:
            return {"requests": (int(a["cmd_get"]) + int(a["cmd_set"]))
                    - (int(b["cmd_get"]) + int(b["cmd_set"])),
                    "connections": int(a.get("total_connections", 0))}
        except (KeyError, ValueError):
            return {"requests": None}
    b, a = ngx(before), ngx(after)
    if a is None or b is None:
        return {"requests": None}
    return {"requests": a - b - 1}  # the status probe itself is one request


def parse_iommu_events(text):
    """'map N' / 'unmap N' / 'overrun N' lines of the guest's ftrace count."""
    r = {}
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) == 2 and f[0] in ("map", "unmap", "overrun") and f[1].isdigit():
            r[f[0]] = int(f[1])
    return r


def parse_cpu_idle(before, after):
    """The guest's idle share over the load window, from two snapshots of
    /proc/stat and /proc/uptime taken in the guest.

    /proc/stat's idle and iowait fields come from the kernel's nohz idle
    clock (ktime, complete), but user, system, irq and softirq are counted
    one tick per timer interrupt the vCPU handled: a tick that fell while
    QEMU's vCPU thread was not running on the host is never counted
    (no steal time under TCG).  Dividing by the ticks therefore overstates
    idle on a starved host.  "idle" divides by the guest's own elapsed time
    (/proc/uptime, times USER_HZ per vCPU) when the snapshots carry it;
    "idle_ticks" is the share of the ticks, and "tick_coverage" the ticks
    counted over the ticks elapsed (1.0 when none were lost).
    Returns {"idle", "per_cpu", "idle_ticks", "per_cpu_ticks", "tick_coverage",
    "elapsed_s"} or None (idle, idle_ticks: idle plus iowait; guest time is
    inside user)."""
    user_hz = 100  # /proc/stat's unit, USER_HZ, on every Linux architecture

    def parse(text):
        out, up = {}, None
        for line in (text or "").splitlines():
            f = line.split()
            if len(f) >= 5 and f[0].startswith("cpu") and all(x.isdigit() for x in f[1:]):
                ticks = [int(x) for x in f[1:9]]
                out[f[0]] = (ticks[3] + ticks[4], sum(ticks))
            elif len(f) == 3 and f[0] == "uptime" and _num(f[1]) is not None:
                up = _num(f[1])
        return out, up
    (b, up0), (e, up1) = parse(before), parse(after)
    share = {}
    for cpu in e:
        if cpu in b and e[cpu][1] > b[cpu][1]:
            share[cpu] = (e[cpu][0] - b[cpu][0]) / (e[cpu][1] - b[cpu][1])
    if "cpu" not in share:
        return None
    res = {"idle_ticks": share.pop("cpu"), "per_cpu_ticks": share}
    ncpu = len(share)
    if up0 is not None and up1 is not None and up1 > up0 and ncpu:
        wall = (up1 - up0) * user_hz
        res["elapsed_s"] = round(up1 - up0, 2)
        res["per_cpu"] = {c: min(1.0, (e[c][0] - b[c][0]) / wall) for c in share}
        res["idle"] = min(1.0, (e["cpu"][0] - b["cpu"][0]) / (wall * ncpu))
        res["tick_coverage"] = (e["cpu"][1] - b["cpu"][1]) / (wall * ncpu)
    else:  # older guest images: the share of the ticks only
        res["idle"], res["per_cpu"] = res["idle_ticks"], dict(share)
    return res


def parse_cpu_idle_measured(before, samples, after, run_s):
    """The idle share over the load generator's own measured time: from the
    once-a-second sample nearest before (end - run_s) to the snapshot right
    after the generator exited; the whole window (from the snapshot before
    it started, including its connection set-up and key preloading) goes
    into "whole".  Without samples or a run time: the whole window."""
    whole = parse_cpu_idle(before, after)
    if not whole or "elapsed_s" not in whole or not run_s:
        return whole

    def uptime(text):
        for line in text.splitlines():
            f = line.split()
            if len(f) == 3 and f[0] == "uptime" and _num(f[1]) is not None:
                return _num(f[1])
        return None
    end = uptime(after)
    start_text = None
    for chunk in (samples or "").split("\n@"):
        up = uptime(chunk)
        if up is not None and end is not None and up <= end - run_s:
            start_text = chunk  # the latest sample at or before the start
    if start_text is None:
        return whole
    res = parse_cpu_idle(start_text, after)
    if not res or "elapsed_s" not in res:
        return whole
    res["whole"] = {k: whole[k] for k in ("idle", "per_cpu", "elapsed_s", "tick_coverage")}
    return res


def parse_interrupts(text):
    """Section interrupts (the NICs' IRQ numbers, then /proc/interrupts at the
    end of the load) -> {"server": [count per CPU], "client": [...]}, counted
    since boot over the NIC's vectors."""
    lines = (text or "").splitlines()
    nics, cpus, out = {}, None, {}
    for line in lines:
        f = line.split()
        if len(f) >= 2 and f[0] in ("server", "client") and f[1].endswith(":"):
            nics[f[0]] = set(f[2:])
        elif f and all(x.startswith("CPU") for x in f):
            cpus = len(f)
        elif cpus and f and f[0].rstrip(":") and f[0].endswith(":"):
            irq = f[0][:-1]
            for side, irqs in nics.items():
                if irq in irqs and len(f) > cpus and all(x.isdigit() for x in f[1:cpus + 1]):
                    acc = out.setdefault(side, [0] * cpus)
                    for i in range(cpus):
                        acc[i] += int(f[1 + i])
    return out


def parse_perf_report(text):
    """perf report --children --sort symbol -g none: [(children%, self%, sym)]."""
    rows, samples = [], None
    for line in (text or "").splitlines():
        m = re.search(r"# Samples: (\d+)(K?)", line)
        if m:
            samples = int(m.group(1)) * (1000 if m.group(2) else 1)
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+\[([k.])\]\s+(\S+)", line)
        if m:
            rows.append((float(m.group(1)), float(m.group(2)), m.group(3) == "k", m.group(4)))
    return rows, samples


def classify(rows):
    out = {}
    for path, prefixes in PATHS.items():
        selfp, incl, top = 0.0, 0.0, None
        for children, selfpct, kernel, sym in rows:
            if any(sym == p or sym.startswith(p) for p in prefixes):
                selfp += selfpct
                if children > incl:
                    incl, top = children, sym
        out[path] = {"self_pct": round(selfp, 2), "incl_pct": round(incl, 2), "entry": top}
    return out


CONSOLE_TROUBLE = re.compile(r"DMAR: \[(DMA|INTR)|DMAR: DRHD|Kernel panic|soft lockup|BUG:|"
                             r"not a head|Oops|hung_task|Out of memory")


def console_hint(path):
    """The first alarming line of the guest console log, if any."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if CONSOLE_TROUBLE.search(line):
                    return line.strip()
    except OSError:
        pass
    return None


def console_has(path, needle):
    try:
        with open(path, errors="replace") as f:
            return needle in f.read()
    except OSError:
        return False


_FTRACE_LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):\s*(.*)$")


# A ramp is on its plateau where more client concurrency adds under this.
PLATEAU_GAIN = 0.05


def ramp_steps(conns, rounds):
    """The ramp's steps in the order they run: the concurrencies as given,
    then reversed, and so on for ROUNDS rounds, so that a drift of the host
    over the ramp weighs on every concurrency alike."""
    return [c for r in range(rounds) for c in (conns if r % 2 == 0 else conns[::-1])]


def ramp_by_conns(steps):
    """Per concurrency, in increasing order: (conns, median ops/s, lowest,
    highest, steps with a figure) over the ramp's rounds."""
    vals = {}
    for st in steps:
        v = vals.setdefault(st["conns"], [])
        if st.get("ops_per_s"):
            v.append(st["ops_per_s"])
    return [(c, statistics.median(v), min(v), max(v), len(v)) if v else (c, None, None, None, 0)
            for c, v in sorted(vals.items())]


def ramp_plateau(steps):
    """(C, gain): the fewest connections C of the ramp's steps from which no
    step with more connections beats the best step at or below C by
    PLATEAU_GAIN or more, and the largest such gain; None if there is none
    (or fewer than two steps with a figure).  Steps taken by concurrency,
    not in their order: single steps of a TCG guest vary by 10-15 %, so a
    step is held against the best one below it, not the one before."""
    pts = sorted((st["conns"], st["ops_per_s"]) for st in steps if st.get("ops_per_s"))
    if len(pts) < 2:
        return None
    for i in range(len(pts) - 1):
        best = max(v for _, v in pts[:i + 1])
        gain = max(v for _, v in pts[i + 1:]) / best - 1
        if gain < PLATEAU_GAIN:
            return pts[i][0], gain
    return None


def summarize_ftrace(text):
    """The guest's own counts in the ftrace text of a recording: events by name,
    by CPU, the sizes of iommu:map/unmap, and the time span they cover; from
    the last mark of an overrun or lost events on, as the converter reads it."""
    events, per_cpu, sizes, first, last = {}, {}, {}, None, None
    lines = text.splitlines()
    for line in lines[complete_from(lines):]:
        m = _FTRACE_LINE.match(line)
        if not m:
            continue
        cpu, ts, name, rest = int(m.group(3)), float(m.group(4)), m.group(5), m.group(6)
        events[name] = events.get(name, 0) + 1
        pc = per_cpu.setdefault(cpu, {})
        pc[name] = pc.get(name, 0) + 1
        if name in ("map", "unmap"):
            mm = re.search(r"size=(\d+)", rest)
            if mm:
                d = sizes.setdefault(name, {})
                d[int(mm.group(1))] = d.get(int(mm.group(1)), 0) + 1
        first = ts if first is None else min(first, ts)
        last = ts if last is None else max(last, ts)
    return {"events": events, "per_cpu": per_cpu, "sizes": sizes,
            "span_s": (last - first) if first is not None else 0.0}


def convert_recording(raw, target):
    """The trace helper's converter: ftrace text -> the trace format at target."""
    conv = os.path.join(TOP, "scripts", "trace", "viommu-trace")
    out = {}
    with open(raw, errors="replace") as f:
        out["guest_counts"] = summarize_ftrace(f.read())
    if not os.path.exists(conv):
        out["convert_error"] = "no trace converter at %s; the ftrace text is kept" % conv
        return out
    try:
        r = subprocess.run([sys.executable, conv, "from-ftrace", raw, target],
                           capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        out["convert_error"] = "the trace converter ran for over 10 minutes"
        return out
    if r.returncode != 0:
        out["convert_error"] = "the trace converter failed: %s" % (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        return out
    out["trace"] = os.path.abspath(target)
    return out


def host_snapshot(pid):
    """QEMU's threads' CPU ticks (by thread name), the host's CPU ticks and load."""
    snap = {"t": time.monotonic(), "threads": {}, "sched": {}, "host": None, "loadavg": None}
    try:
        with open("/proc/%d/comm" % pid) as f:
            snap["main"] = f.read().strip()  # the main thread keeps the process's name
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                    name = f.read().strip()
                with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                    st = f.read().rsplit(")", 1)[1].split()
                # fields 14 and 15 (utime, stime) are 12 and 13 after the comm
                snap["threads"][name] = snap["threads"].get(name, 0) + int(st[11]) + int(st[12])
                # schedstat: ns on a CPU, ns runnable but waiting for one
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    run, wait = (int(x) for x in f.read().split()[:2])
                r0, w0 = snap["sched"].get(name, (0, 0))
                snap["sched"][name] = (r0 + run, w0 + wait)
            except (OSError, IndexError, ValueError):
                pass
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
            snap["host"] = (v[3] + v[4], sum(v))
        with open("/proc/loadavg") as f:
            snap["loadavg"] = float(f.read().split()[0])
    except (OSError, ValueError):
        pass
    return snap


def host_usage(s0, s1):
    """What the host gave QEMU over the load window: each thread's share of one
    host core, the host's idle share and its load average at the end."""
    if not s0 or not s1:
        return None
    hz = os.sysconf("SC_CLK_TCK")
    dt = max(s1["t"] - s0["t"], 1e-3)
    thr = {n: (s1["threads"][n] - s0["threads"].get(n, 0)) / hz / dt for n in s1["threads"]}
    out = {"window_s": round(dt, 2), "threads": {n: round(v, 3) for n, v in thr.items() if v > 0.005},
           "qemu_cores": round(sum(thr.values()), 3),
           "vcpu_cores": round(sum(v for n, v in thr.items() if n.startswith("CPU ")), 3),
           "loadavg": s1["loadavg"], "cores": os.cpu_count()}
    # Where each vCPU thread (and the main loop, which moves every packet)
    # spent the window: on a host CPU, runnable but waiting for one, or
    # asleep (a vCPU halted or blocked in QEMU; the main loop in poll).
    sched = {}
    main = s1.get("main")
    for n, (run, wait) in s1.get("sched", {}).items():
        if (n.startswith("CPU ") or n == main) and n in s0.get("sched", {}):
            r0, w0 = s0["sched"][n]
            r, w = (run - r0) / 1e9 / dt, (wait - w0) / 1e9 / dt
            sched["main loop" if n == main else n] = {
                "run": round(r, 3), "wait": round(w, 3), "sleep": round(max(0.0, 1 - r - w), 3)}
    if sched:
        out["sched"] = sched
    if s0["host"] and s1["host"] and s1["host"][1] > s0["host"][1]:
        out["host_idle"] = round((s1["host"][0] - s0["host"][0]) / (s1["host"][1] - s0["host"][1]), 3)
    return out


def netns_setup(ns):
    """A network namespace with a bridge and two taps (vpa, vpb) for --link tap|vhost."""
    steps = [["ip", "netns", "add", ns],
             ["ip", "-n", ns, "link", "add", "vpbr", "type", "bridge"],
             ["ip", "-n", ns, "link", "set", "vpbr", "up"]]
    for t in ("vpa", "vpb"):
        steps += [["ip", "-n", ns, "tuntap", "add", "dev", t, "mode", "tap"],
                  ["ip", "-n", ns, "link", "set", t, "master", "vpbr"],
                  ["ip", "-n", ns, "link", "set", t, "up"]]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            netns_remove(ns)
            raise Failure("'%s' failed: %s (--link tap and vhost need root and network "
                          "namespaces; --link dgram needs neither)" % (" ".join(cmd), r.stderr.strip()))


def netns_remove(ns):
    subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=30)


def probe_link(link):
    """The link the host can offer: vhost needs /dev/vhost-net, tap and vhost a
    network namespace and /dev/net/tun; otherwise fall back with a message."""
    if link == "vhost" and not os.access("/dev/vhost-net", os.R_OK | os.W_OK):
        say("note: --link vhost: this host has no usable /dev/vhost-net (modprobe vhost_net); "
            "using --link tap (the same taps, QEMU's own virtio-net back end)")
        link = "tap"
    if link == "tap":
        ns = "viommu-prof-probe-%d" % os.getpid()
        r = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True, timeout=30)
        if r.returncode != 0 or not os.access("/dev/net/tun", os.R_OK | os.W_OK):
            if r.returncode == 0:
                netns_remove(ns)
            say("note: --link tap: cannot create a network namespace or open /dev/net/tun (%s); "
                "using --link dgram" % (r.stderr.strip() or "no /dev/net/tun"))
            return "dgram"
        netns_remove(ns)
    return link


# ---------------------------------------------------------------- one run

class Run:
    def __init__(self, args, iommu, policy, outdir, image):
        self.a, self.iommu, self.policy, self.dir, self.image = args, iommu, policy, outdir, image
        self.console = os.path.join(outdir, "console.log")
        self.data = os.path.join(outdir, "data.log")
        self.qmp = os.path.join(outdir, "qmp.sock")
        self.stderr = os.path.join(outdir, "qemu.stderr")
        self.sockdir = None
        # Only the IOMMU runs of a comparison record (a run without one has
        # no iommu_map() calls to trace).
        self.record = bool(args.record) and iommu != "none"
        self.disk = os.path.join(outdir, "trace.disk")

    def cmdline(self):
        a = self.a
        # no_timer_check: see scripts/guest/run.sh (a loaded TCG host can fail the check).
        k = ["console=ttyS0", "panic=-1", "no_timer_check", "quiet", "loglevel=4",
             "prof.workload=%s" % a.workload, "prof.duration=%d" % a.duration,
             "prof.conns=%d" % a.conns, "prof.perf=%d" % (0 if a.no_perf else 1),
             "prof.freq=%d" % a.freq, "prof.events=%d" % (1 if a.events else 0),
             "prof.threads=%d" % a.threads, "prof.irqs=%s" % a.irqs]
        if a.ramp:
            k += ["prof.ramp=%s" % ",".join(str(c) for c in a.ramp_steps),
                  "prof.rampdur=%d" % a.ramp_duration]
        if self.record:
            k += ["prof.record=1", "prof.tracekb=%d" % a.trace_kb]
        if self.iommu != "none":
            k.append("intel_iommu=on")
        if self.policy == "strict":
            k.append("iommu.strict=1")
        if a.append:
            k.append(a.append)
        return " ".join(k)

    def qemu_args(self, qemu):
        a = self.a
        kernel = a.kernel or os.path.join(self.image, "vmlinuz")
        args = [qemu, "-name", "viommu-prof,debug-threads=on",
                "-accel", a.accel, "-M", "q35,kernel-irqchip=split", "-m", str(a.mem),
                "-smp", str(a.vcpus), "-nodefaults", "-display", "none", "-no-reboot"] + FIRMWARE
        args += ["-kernel", kernel, "-initrd", os.path.join(self.image, "initrd.img"),
                 "-append", self.cmdline(),
                 "-chardev", "file,id=con0,path=" + self.console, "-serial", "chardev:con0",
                 "-chardev", "file,id=dat0,path=" + self.data, "-serial", "chardev:dat0",
                 "-qmp", "unix:%s,server=on,wait=off" % self.qmp]
        if self.iommu == "intel-iommu":
            args += ["-device", "intel-iommu,intremap=on,id=iommu0"]
        elif self.iommu == "viommu-vtd":
            args += ["-device", "viommu-vtd,id=viommu0"]
        # Two NICs joined back to back: what A sends, B receives.
        for nd, mac, me, peer in (("na", "52:54:00:00:aa:01", "a", "b"),
                                  ("nb", "52:54:00:00:bb:02", "b", "a")):
            if a.link == "hub":
                nd_opts = "hubport,id=%s,hubid=0" % nd
            elif a.link in ("tap", "vhost"):
                # Two taps on a bridge in this run's own network namespace.
                nd_opts = "tap,id=%s,ifname=vp%s,script=no,downscript=no%s" % (
                    nd, me, ",vhost=on" if a.link == "vhost" else "")
            else:  # a pair of unix datagram sockets, private to this run
                nd_opts = ("dgram,id=%s,local.type=unix,local.path=%s/%s.sock,"
                           "remote.type=unix,remote.path=%s/%s.sock" % (nd, self.sockdir, me,
                                                                         self.sockdir, peer))
            args += ["-netdev", nd_opts,
                     "-device", "virtio-net-pci,netdev=%s,mac=%s,iommu_platform=on,"
                     "disable-legacy=on,packed=%s,romfile=%s" % (
                         nd, mac, "on" if a.ring == "packed" else "off",
                         "," + a.nic_opts if a.nic_opts else "")]
        if self.record:
            # The recording's way out: a sparse raw disk without
            # iommu_platform (its own DMA never reaches iommu_map()).
            args += ["-drive", "if=none,id=trc0,format=raw,file=" + self.disk,
                     "-device", "virtio-blk-pci,drive=trc0,serial=trace,disable-legacy=on"]
        return args + a.qemu_arg

    def execute(self, qemu, progress=True):
        a = self.a
        os.makedirs(self.dir, exist_ok=True)
        for f in (self.console, self.data):
            open(f, "w").close()
        if os.path.exists(self.qmp):
            os.unlink(self.qmp)
        # Unix socket paths are limited to 108 bytes: keep them short.
        self.sockdir = tempfile.mkdtemp(prefix="viommu-prof-")
        if self.record:
            with open(self.disk, "wb") as f:
                f.truncate(self.a.trace_kb * 1024 * self.a.vcpus * 4 + (64 << 20))  # text is larger than the ring
        args = self.qemu_args(qemu)
        netns = None
        if a.link in ("tap", "vhost"):
            netns = "viommu-prof-%d" % os.getpid()
            args = ["ip", "netns", "exec", netns] + args
        with open(os.path.join(self.dir, "qemu.cmd"), "w") as f:
            f.write(" ".join("'%s'" % x if " " in x else x for x in args) + "\n")
        timeout = a.timeout or default_timeout(a)
        res = {"iommu": self.iommu, "policy": self.policy, "workload": a.workload, "ring": a.ring,
               "vcpus": a.vcpus, "duration": a.duration, "dir": self.dir}
        snaps, hostsnaps = {}, {}
        start = time.monotonic()
        err = open(self.stderr, "w")
        if netns:
            netns_setup(netns)
        try:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                    start_new_session=True)
        except OSError:
            if netns:
                netns_remove(netns)
            raise
        seen, pos, buf, done, error = set(), 0, "", None, None
        last_console_check = 0.0
        try:
            while True:
                if time.monotonic() - start > timeout:
                    error = ("the guest did not finish within %d s (boot, %d s of load and "
                             "perf report); console log kept in %s" % (timeout, a.duration, self.console))
                    break
                with open(self.data, errors="replace") as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos = f.tell()
                buf += chunk.replace("\r", "")
                for line in buf.splitlines():
                    if not line.startswith("@@") or line in seen:
                        continue
                    seen.add(line)
                    word = line.split()[0]
                    if word == "@@BOOTED" and progress:
                        say("  guest up after %.0f s (%s)" % (time.monotonic() - start, line[9:]))
                    elif word == "@@RAMP" and progress:
                        i, c = (line.split() + ["?", "?"])[1:3]
                        say("  ramp step %s of %d: %s connections for %d s"
                            % (int(i) + 1 if i.isdigit() else i, len(a.ramp_steps), c, a.ramp_duration))
                    elif word == "@@READY" and progress:
                        say("  server answering, warm-up done; measuring for %d s" % a.duration)
                    elif word in ("@@LOAD-START", "@@LOAD-END"):
                        hostsnaps[word] = host_snapshot(proc.pid)
                        t = time.monotonic()
                        if self.iommu == "viommu-vtd":
                            doc, why = viommu_stats(self.qmp)
                            snaps[word] = (t, doc, why)
                        else:
                            snaps[word] = (t, None, None)
                        if word == "@@LOAD-END" and progress:
                            say("  load done; collecting the guest's perf report")
                    elif word == "@@WARN":
                        res.setdefault("warnings", []).append(line[7:].strip())
                        if progress:
                            say("  warning: " + line[7:].strip())
                    elif word == "@@ERROR":
                        error = line[8:].strip()
                    elif word == "@@DONE":
                        done = line
                if done or error:
                    break
                # A soft lockup means the guest is wedged: stop now rather
                # than at the timeout (the hint below names the first trouble).
                if time.monotonic() - last_console_check > 3:
                    last_console_check = time.monotonic()
                    if console_has(self.console, "soft lockup"):
                        error = ("the guest kernel reported a soft lockup; console log kept in %s"
                                 % self.console)
                        break
                if proc.poll() is not None:
                    break
                time.sleep(0.2)
            if done and not error:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=15)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=15)
            err.close()
            shutil.rmtree(self.sockdir, ignore_errors=True)
            if netns:
                netns_remove(netns)
        res["wall_s"] = round(time.monotonic() - start, 1)
        with open(self.data, errors="replace") as f:
            text = f.read().replace("\r", "")
        sec = sections(text)
        res["sections"] = sorted(sec)
        if error is None and not done:
            rc = proc.returncode
            tail = open(self.stderr, errors="replace").read().strip().splitlines()[-3:]
            if "@@BOOTED" not in text:
                error = ("the guest never reached its /init (QEMU exit status %s%s); console log "
                         "kept in %s" % (rc, ": " + " / ".join(tail) if tail else "", self.console))
            else:
                error = ("QEMU exited (status %s) before the guest reported a result%s; console "
                         "log kept in %s" % (rc, ": " + " / ".join(tail) if tail else "", self.console))
        if error:
            hint = console_hint(self.console)
            res["error"] = error + ("; the guest kernel said: " + hint if hint else "")
        # Load generator, server, guest-side map counts.
        lg = sec.get("loadgen", "")
        res["load"] = parse_memcaslap(lg) if a.workload == "memcached" else parse_wrk(lg)
        res["server"] = parse_server(a.workload, sec.get("server-stats-before"),
                                     sec.get("server-stats-after"))
        res["guest_iommu_events"] = parse_iommu_events(sec.get("iommu-events"))
        res["guest_cpu"] = parse_cpu_idle_measured(sec.get("cpu-stat-before"), sec.get("cpu-samples"),
                                                   sec.get("cpu-stat-after"), res["load"].get("seconds"))
        res["interrupts"] = parse_interrupts(sec.get("interrupts"))
        res["load"]["irqs"] = a.irqs
        res["load"]["conns"], res["load"]["threads"] = a.conns, min(a.threads, a.conns)
        res["load"]["link"] = a.link
        res["host"] = host_usage(hostsnaps.get("@@LOAD-START"), hostsnaps.get("@@LOAD-END"))
        res["ramp"] = []
        for i, c in enumerate(a.ramp_steps):
            if "ramp-%d-loadgen" % i not in sec:
                continue
            lg = sec["ramp-%d-loadgen" % i]
            ld = parse_memcaslap(lg) if a.workload == "memcached" else parse_wrk(lg)
            cpu = parse_cpu_idle_measured(sec.get("ramp-%d-cpu-before" % i), sec.get("ramp-%d-cpu-samples" % i),
                                          sec.get("ramp-%d-cpu-after" % i), ld.get("seconds"))
            res["ramp"].append({"step": i, "round": i // len(a.ramp), "conns": c,
                                "ops_per_s": ld.get("ops_per_s"), "lat_avg_us": ld.get("lat_avg_us"),
                                "idle": cpu["idle"] if cpu else None})
        if self.record:
            res["record"] = self.fetch_recording(sec, error)
        res["iommu_setup"] = sec.get("iommu", "").splitlines()
        rows, samples = parse_perf_report(sec.get("perf-report"))
        res["perf"] = {"samples": samples, "paths": classify(rows) if rows else None,
                       "top": [{"children": c, "self": s, "symbol": y, "kernel": k}
                               for c, s, k, y in sorted(rows, key=lambda r: -r[1])[:a.top]]}
        # vIOMMU statistics: deltas over the load window.
        res["viommu"] = self.viommu_delta(snaps)
        return res

    def fetch_recording(self, sec, error):
        """The ftrace text the guest wrote to the trace disk -> <record>.ftrace.txt,
        then converted to the trace format; returns what the report shows."""
        out = {"setup": sec.get("trace-setup", "").splitlines(), "per_cpu": {}}
        for line in sec.get("trace-stats", "").splitlines():
            f = line.split()
            if f and f[0].startswith("cpu"):
                kv = dict(zip(f[1::2], f[2::2]))
                out["per_cpu"][f[0]] = {k.rstrip(":"): int(v) for k, v in kv.items() if v.isdigit()}
        out["overrun"] = sum(v.get("overrun", 0) for v in out["per_cpu"].values())
        try:
            with open(self.disk, "rb") as f:
                head = f.readline(64)
                m = re.match(rb"@@TRACE (\d+)\n$", head)
                if not m:
                    out["error"] = "the guest wrote no recording to %s%s" % (
                        self.disk, "" if error else " (no @@TRACE header)")
                    return out
                n = int(m.group(1))
                text = f.read(n)
        except OSError as e:
            out["error"] = "cannot read the recording disk %s: %s" % (self.disk, e)
            return out
        if len(text) != n:
            out["error"] = "the recording on %s is truncated (%d of %d bytes)" % (self.disk, len(text), n)
            return out
        os.unlink(self.disk)
        # (absolute, from parse_args(); --record with --repeat is refused)
        target = self.a.record
        if len(self.a.configs) > 1:
            base, ext = os.path.splitext(target)
            target = "%s-%s-%s%s" % (base, self.iommu, self.policy, ext)
        raw = target + ".ftrace.txt"
        os.makedirs(os.path.dirname(os.path.abspath(raw)), exist_ok=True)
        with open(raw, "wb") as f:
            f.write(text)
        out["ftrace"] = raw
        out["ftrace_bytes"] = n
        out.update(convert_recording(raw, target))
        return out

    @staticmethod
    def viommu_delta(snaps):
        if "@@LOAD-START" not in snaps or "@@LOAD-END" not in snaps:
            return None
        t0, d0, why0 = snaps["@@LOAD-START"]
        t1, d1, why1 = snaps["@@LOAD-END"]
        if d0 is None or d1 is None:
            return {"error": why0 or why1} if (why0 or why1) else None
        f0, f1 = flatten(d0), flatten(d1)
        dt = max(t1 - t0, 1e-3)
        delta = {k: f1[k] - f0.get(k, 0) for k in f1}
        return {"seconds": round(dt, 2), "delta": delta, "end": f1}


# ---------------------------------------------------------------- report

def fmt(v, unit="", digits=1):
    if v is None:
        return "n/a"
    if isinstance(v, float):
        s = ("%%.%df" % digits) % v
    else:
        s = "{:,}".format(v)
    return s + unit


def viommu_summary(v):
    """Derived figures from the viommu-vtd statistics delta; 'n/a' when absent."""
    if not v or "delta" not in v:
        return None
    d, e, dt = v["delta"], v["end"], v["seconds"]

    def g(*keys):
        for k in keys:
            if k in d:
                return d[k]
        return None

    def rate(x):
        return None if x is None else x / dt

    hits, misses = g("iotlb.hits"), g("iotlb.misses")
    hit = (100.0 * hits / (hits + misses)) if hits is not None and misses is not None and hits + misses else None
    walks_lo, walks_hi = g("iova.walks_below_4g"), g("iova.walks_above_4g")
    below = (100.0 * walks_lo / (walks_lo + walks_hi)) \
        if walks_lo is not None and walks_hi is not None and walks_lo + walks_hi else None
    s = {
        "window_s": dt,
        "translations_per_s": rate(g("translate.requests")),
        # counted from page-selective invalidations: with none (lazy mode's
        # domain-wide flushes) there is nothing to count
        "pages_mapped_per_s": rate(g("pages.mapped")) if g("invalidations.iotlb.page") else None,
        "pages_unmapped_per_s": rate(g("pages.unmapped")) if g("invalidations.iotlb.page") else None,
        "inv_iotlb_global": g("invalidations.iotlb.global"),
        "inv_iotlb_domain": g("invalidations.iotlb.domain"),
        "inv_iotlb_page": g("invalidations.iotlb.page"),
        "inv_iotlb_pages": g("invalidations.iotlb.pages"),
        "inv_context": sum(x for x in (g("invalidations.context.global"), g("invalidations.context.domain"),
                                      g("invalidations.context.device")) if x is not None)
        if g("invalidations.context.global") is not None else None,
        "inv_device_iotlb": g("invalidations.device_iotlb"),
        "inv_iec": g("invalidations.interrupt_entry_cache"),
        "qi_iotlb_descriptors": g("invalidations.queue.descriptors.iotlb", "queue.descriptors.iotlb"),
        "wait_descriptors": g("invalidations.queue.waits.total", "queue.waits.total",
                              "invalidations.queue.descriptors.wait"),
        "iotlb_hit_pct": hit,
        "iova_below_4g": below,
    }
    s["inv_per_s"] = rate(sum(x for x in (s["inv_iotlb_global"], s["inv_iotlb_domain"],
                                           s["inv_iotlb_page"]) if x is not None)) \
        if s["inv_iotlb_page"] is not None else None
    return s


def report(res):
    L = []
    a = res
    L.append("== %s behind %s (%s), %d vCPU, %d s of load" % (a["workload"], a["iommu"], a["policy"],
                                                              a["vcpus"], a["duration"]))
    if a.get("error"):
        L.append("   FAILED: " + a["error"])
    for w in a.get("warnings", []):
        L.append("   warning: " + w)
    for line in a.get("iommu_setup", [])[:6]:
        L.append("   guest: " + line.strip())
    ld = a["load"]
    L.append("-- load (%s, client in netns cli -> server in netns srv)" % ld.get("tool"))
    L.append("   transactions     %s in %s s" % (fmt(ld.get("ops")), fmt(ld.get("seconds"))))
    L.append("   throughput       %s ops/s" % fmt(ld.get("ops_per_s")))
    lat = "   latency (us)     avg %s" % fmt(ld.get("lat_avg_us"))
    for p in ("50", "75", "90", "99", "99_9"):
        if "lat_p%s_us" % p in ld:
            lat += "  p%s %s" % (p.replace("_", "."), fmt(ld["lat_p%s_us" % p]))
    lat += "  max %s" % fmt(ld.get("lat_max_us"))
    L.append(lat)
    if ld.get("lat_percentiles_note"):
        L.append("   (percentiles: %s)" % ld["lat_percentiles_note"])
    L.append("   server saw       %s requests" % fmt(a["server"].get("requests")))
    if ld.get("conns"):
        L.append("   load             %d connections, %d client thread(s)" % (ld["conns"], ld.get("threads") or 1))
    gc = a.get("guest_cpu")
    if gc:
        L.append("   guest idle       %s of the vCPUs' time during the load (%s)" % (
            fmt(100 * gc["idle"], "%"), ", ".join("%s %s" % (c, fmt(100 * v, "%"))
                                                 for c, v in sorted(gc["per_cpu"].items()))))
        if "tick_coverage" in gc:
            L.append("                    over the load generator's last %s s of guest time; the busy ticks "
                     "cover %s of it, so the share of the ticks would say %s idle" % (
                         fmt(gc["elapsed_s"], "", 1), fmt(100 * gc["tick_coverage"], "%"),
                         fmt(100 * gc["idle_ticks"], "%")))
        if gc.get("whole"):
            w = gc["whole"]
            L.append("                    whole run of the load generator (with its start-up): %s idle "
                     "over %s s (%s)" % (fmt(100 * w["idle"], "%"), fmt(w["elapsed_s"], "", 1),
                                         ", ".join("%s %s" % (c, fmt(100 * v, "%"))
                                                   for c, v in sorted(w["per_cpu"].items()))))
    else:
        L.append("   guest idle       n/a (no /proc/stat snapshots)")
    irq = a.get("interrupts")
    if irq:
        L.append("   NIC interrupts   %s (per vCPU since boot; --irqs %s)" % ("; ".join(
            "%s %s" % (side, " ".join("cpu%d %s" % (i, fmt(n)) for i, n in enumerate(irq[side])))
            for side in ("server", "client") if side in irq), ld.get("irqs", "default")))
    h = a.get("host")
    if h:
        L.append("   host             load average %s on %d cores, host idle %s; QEMU used %.2f cores "
                 "(vCPU threads %.2f: %s)" % (
                     fmt(h.get("loadavg"), "", 1), h["cores"], fmt(100 * h["host_idle"], "%")
                     if "host_idle" in h else "n/a", h["qemu_cores"], h["vcpu_cores"],
                     ", ".join("%s %.0f%%" % (n, 100 * v) for n, v in sorted(h["threads"].items()))))
        if h.get("sched"):
            L.append("   QEMU threads     on a host CPU / runnable, waiting for one / asleep: %s" % ", ".join("%s %.0f/%.0f/%.0f%%" % (n, 100 * v["run"], 100 * v["wait"],
                                                                      100 * v["sleep"])
                                               for n, v in sorted(h["sched"].items())))
    if a.get("ramp"):
        rounds = max(st.get("round", 0) for st in a["ramp"]) + 1
        L.append("-- concurrency ramp (%s), each step alone%s:" % (
            ld.get("tool"), ", %d rounds, every other one in reverse" % rounds if rounds > 1 else ""))
        prev = None
        for st in a["ramp"]:
            gain = ""
            if prev and st["ops_per_s"] and prev:
                gain = "  %+.1f%% over the step before" % (100.0 * (st["ops_per_s"] / prev - 1))
            L.append("   %s%5d conns  %10s ops/s  avg %10s us  idle %s%s" % (
                "round %d " % (st.get("round", 0) + 1) if rounds > 1 else "",
                st["conns"], fmt(st["ops_per_s"]), fmt(st["lat_avg_us"]),
                fmt(100 * st["idle"], "%") if st["idle"] is not None else "n/a", gain))
            prev = st["ops_per_s"]
        per = ramp_by_conns(a["ramp"])
        if rounds > 1:
            L.append("   per concurrency, median of the rounds (lowest..highest):")
            for c, med, lo, hi, n in per:
                L.append("   %5d conns  %10s ops/s  (%s..%s, %d steps%s)" % (
                    c, fmt(med), fmt(lo), fmt(hi), n,
                    ", spread %.0f%%" % (100.0 * (hi / lo - 1)) if n > 1 else ""))
        pl = ramp_plateau([{"conns": c, "ops_per_s": med} for c, med, _, _, _ in per])
        unit = "median" if rounds > 1 else "step"
        if pl:
            L.append("   plateau from %d conns: no %s with more adds %.0f%% or more over the best %s "
                     "at or below it (at most %+.1f%%)" % (pl[0], unit, 100 * PLATEAU_GAIN, unit, 100 * pl[1]))
        elif any(st["ops_per_s"] for st in a["ramp"]):
            L.append("   no plateau: the %s with the most connections still adds %.0f%% or more"
                     % (unit, 100 * PLATEAU_GAIN))
    rec = a.get("record")
    if rec:
        L.append("-- recording (ftrace over the load window)")
        for line in rec.get("setup", []):
            L.append("   " + line)
        if rec.get("error"):
            L.append("   FAILED: " + rec["error"])
        else:
            gc = rec.get("guest_counts") or {}
            L.append("   %s bytes of ftrace text in %s; ring-buffer overruns %d" % (
                fmt(rec.get("ftrace_bytes")), rec.get("ftrace"), rec.get("overrun", 0)))
            if rec.get("overrun"):
                L.append("   (a CPU's oldest events were overwritten: the counts and the trace start "
                         "where every CPU's are complete; record with a larger --trace-kb)")
            L.append("   events: %s over %.2f s" % (", ".join("%s %d" % kv for kv in sorted(
                gc.get("events", {}).items())), gc.get("span_s", 0.0)))
            if rec.get("trace"):
                L.append("   trace: %s" % rec["trace"])
            if rec.get("convert_error"):
                L.append("   not converted: " + rec["convert_error"])
    ev = a.get("guest_iommu_events") or {}
    if ev:
        L.append("-- guest DMA API (ftrace, tracepoints iommu:map/unmap)")
        L.append("   iommu:map %s   iommu:unmap %s" % (fmt(ev.get("map")), fmt(ev.get("unmap"))))
    # the instances count the load generator's whole run (start-up included)
    run_s = ((a.get("guest_cpu") or {}).get("whole") or {}).get("elapsed_s") or a["duration"]
    if ev.get("map") is not None and run_s:
        L.append("   maps/s %s   unmaps/s %s  (over the load generator's %.1f s)" % (
            fmt(ev["map"] / run_s), fmt((ev.get("unmap") or 0) / run_s), run_s))
    if a["iommu"] == "viommu-vtd":
        L.append("-- viommu-vtd statistics over the load window (QMP, scripts/viommu-stats --json)")
        v = a.get("viommu")
        s = viommu_summary(v)
        if not s:
            L.append("   n/a (%s)" % ((v or {}).get("error") or "no snapshot"))
        else:
            L.append("   window %.1f s" % s["window_s"])
            L.append("   translations/s %s   pages mapped/s %s   pages unmapped/s %s  (from invalidations)" % (
                fmt(s["translations_per_s"]), fmt(s["pages_mapped_per_s"]), fmt(s["pages_unmapped_per_s"])))
            L.append("   IOTLB invalidations: global %s  domain %s  page-selective %s (%s pages)  per s %s" % (
                fmt(s["inv_iotlb_global"]), fmt(s["inv_iotlb_domain"]), fmt(s["inv_iotlb_page"]),
                fmt(s["inv_iotlb_pages"]), fmt(s["inv_per_s"])))
            L.append("   context-cache %s  device-IOTLB %s  interrupt-entry-cache %s" % (
                fmt(s["inv_context"]), fmt(s["inv_device_iotlb"]), fmt(s["inv_iec"])))
            L.append("   wait descriptors %s   IOTLB hit rate %s" % (
                fmt(s["wait_descriptors"]), fmt(s["iotlb_hit_pct"], "%")))
            L.append("   IOVAs below 4 GiB: %s of the page walks during the load" %
                     fmt(s["iova_below_4g"], "%", 1))
    p = a["perf"]
    L.append("-- guest kernel profile (perf record -a -g, cpu-clock, samples %s)" % fmt(p.get("samples")))
    if p.get("paths"):
        for k, v in p["paths"].items():
            L.append("   %-16s self %5.2f%%   incl. %5.2f%% (largest entry: %s)" % (
                PATH_LABELS[k], v["self_pct"], v["incl_pct"], v["entry"] or "-"))
        L.append("   top symbols (self%, children%):")
        for r in p["top"]:
            L.append("     %6.2f%% %6.2f%%  %s%s" % (r["self"], r["children"], r["symbol"],
                                                    "" if r["kernel"] else " [user]"))
    else:
        L.append("   n/a (no perf report)")
    L.append("-- logs: %s (console.log, data.log, qemu.stderr)" % a["dir"])
    return "\n".join(L)


def aggregate(results):
    """One result per configuration: the run with the median throughput among
    the successful repetitions (all its columns come from that one run), with
    'runs', 'ok_runs' and 'spread' (max-min throughput / median) added."""
    groups, order = {}, []
    for r in results:
        k = (r["iommu"], r["policy"])
        if k not in groups:
            groups[k] = []
            order.append(k)
        groups[k].append(r)
    out = []
    for k in order:
        g = groups[k]
        ok = sorted([r for r in g if not r.get("error") and r["load"].get("ops_per_s") is not None],
                    key=lambda r: r["load"]["ops_per_s"])
        pick = dict(ok[(len(ok) - 1) // 2]) if ok else dict(g[0])
        pick["runs"], pick["ok_runs"] = len(g), len(ok)
        if len(ok) > 1 and pick["load"]["ops_per_s"]:
            v = [r["load"]["ops_per_s"] for r in ok]
            pick["spread"] = (max(v) - min(v)) / pick["load"]["ops_per_s"]
        out.append(pick)
    return out


def compare_table(results):
    base = next((r for r in results if r["iommu"] == "none" and not r.get("error")), None)
    hdr = ["config", "conns", "ops/s", "ratio", "avg us", "p99 us", "p99 ratio", "idle%", "vCPU thr",
           "hostload",
           "iova%", "unmap%", "inval%", "xlat/s", "inv/s", "waits/s", "IOTLB hit", "<4GiB"]
    rows = []
    for r in results:
        ld = r["load"]
        ops = ld.get("ops_per_s")
        p99 = ld.get("lat_p99_us")
        ratio = ops / base["load"]["ops_per_s"] if base and ops and base["load"].get("ops_per_s") else None
        bp99 = base["load"].get("lat_p99_us") if base else None
        pr = p99 / bp99 if p99 and bp99 else None
        paths = (r["perf"] or {}).get("paths") or {}
        s = viommu_summary(r.get("viommu")) if r["iommu"] == "viommu-vtd" else None
        name = "%s:%s" % (r["iommu"], r["policy"])
        if r.get("runs", 1) > 1:
            name += " (%d/%d ok%s)" % (r["ok_runs"], r["runs"],
                                       ", spread %.0f%%" % (100 * r["spread"]) if "spread" in r else "")
        if r.get("error"):
            rows.append([name, "FAILED"] + [""] * (len(hdr) - 2))
            continue
        idle = (r.get("guest_cpu") or {}).get("idle")
        h = r.get("host") or {}
        rows.append([name, fmt(ld.get("conns")), fmt(ops), fmt(ratio, "x", 2), fmt(ld.get("lat_avg_us")), fmt(p99),
                     fmt(pr, "x", 2), fmt(100 * idle, "%", 1) if idle is not None else "n/a",
                     "%.0f%%" % (100 * h["vcpu_cores"] / r["vcpus"]) if h else "n/a",
                     fmt(h.get("loadavg"), "", 1)]
                    + [fmt(paths[k]["incl_pct"], "%", 1) if k in paths else "n/a"
                       for k in ("iova_alloc", "unmap_flush", "invalidation")]
                    + [fmt(s["translations_per_s"], "", 0) if s else "n/a",
                       fmt(s["inv_per_s"], "", 0) if s else "n/a",
                       fmt(s["wait_descriptors"] / s["window_s"], "", 0)
                       if s and s["wait_descriptors"] is not None else "n/a",
                       fmt(s["iotlb_hit_pct"], "%", 1) if s else "n/a",
                       fmt(s["iova_below_4g"], "%", 1) if s else "n/a"])
    w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(hdr)]
    out = ["  ".join(h.rjust(x) if i else h.ljust(x) for i, (h, x) in enumerate(zip(hdr, w)))]
    for r in rows:
        out.append("  ".join(c.rjust(x) if i else c.ljust(x) for i, (c, x) in enumerate(zip(r, w))))
    out.append("ratio = throughput / throughput of none:lazy; p99 ratio likewise (lower is better);"
               " idle% = the guest's idle share of its vCPUs' elapsed time over the load generator's measured time"
               " (/proc/stat's idle over /proc/uptime);"
               " vCPU thr = host CPU time QEMU's vCPU threads got over the load window, per vCPU"
               " (100% = each a host core of its own); hostload = the host's load average then;"
               " iova/unmap/inval% = share of guest perf samples under those kernel paths "
               "(inclusive, largest entry point); xlat/s (DMA translations), inv/s (IOTLB "
               "invalidations), waits/s (wait descriptors), IOTLB hit and <4GiB (share of page walks at IOVAs below 4 GiB) from viommu-vtd's statistics.")
    for r in results:
        idle = (r.get("guest_cpu") or {}).get("idle")
        h = r.get("host") or {}
        if not r.get("error") and idle is not None and idle >= 0.10:
            out.append("note: %s:%s: the guest was %.0f%% idle during the load, not saturated%s; "
                       "see docs/profiling.rst, 'Saturating the guest'" % (
                           r["iommu"], r["policy"], 100 * idle,
                           " (the host gave its vCPU threads %.0f%% of a core each at a load average "
                           "of %.1f on %d cores%s)" % (100 * h["vcpu_cores"] / r["vcpus"], h.get("loadavg") or 0,
                                                       h.get("cores") or 0,
                                                       "; the main loop waited for a host CPU %.0f%% of the window"
                                                       % (100 * h["sched"]["main loop"]["wait"])
                                                       if "main loop" in h.get("sched", {}) else "")
                           if h else ""))
    if not base:
        out.append("(no successful 'none' run: ratios are n/a)")
    for r in results:
        if r.get("error"):
            out.append("FAILED %s:%s: %s" % (r["iommu"], r["policy"], r["error"]))
    return "\n".join(out)


def svg_plot(results, path, title):
    """Two bar panels: throughput relative to none, and guest profile shares."""
    base = next((r for r in results if r["iommu"] == "none" and not r.get("error")), None)
    ok = [r for r in results if not r.get("error")]
    thr = []
    for r in ok:
        v = r["load"].get("ops_per_s")
        b = base["load"].get("ops_per_s") if base else None
        thr.append(("%s:%s" % (r["iommu"], r["policy"]), [("throughput", v / b if v and b else None)]))
    ymax = max([ser[0][1] for _, ser in thr if ser[0][1]] + [1.0]) * 1.1
    shares = []
    for r in ok:
        paths = (r.get("perf") or {}).get("paths") or {}
        shares.append(("%s:%s" % (r["iommu"], r["policy"]),
                       [(PATH_LABELS[k], paths[k]["incl_pct"] if k in paths else None) for k in PATHS]))
    ymax2 = max([v for _, s in shares for _, v in s if v] + [1.0]) * 1.1
    svgplot.bar_chart(path, title,
                      [("throughput relative to none (higher is better)", thr, ymax, lambda v: "%.2fx" % v),
                       ("guest samples under IOMMU paths (%)", shares, ymax2, lambda v: "%.1f%%" % v)],
                      legend=[PATH_LABELS[k] for k in PATHS])


# ---------------------------------------------------------------- main

# Kernel command-line parameters that profile.py sets itself, and the option
# that sets each: the guest's /init takes the last one, so a copy in --append
# would override it behind the report's back.
APPEND_OWN = {"prof.workload": "--workload", "prof.duration": "--duration", "prof.conns": "--conns",
              "prof.perf": "--no-perf", "prof.freq": "--freq", "prof.events": "--events",
              "prof.threads": "--threads", "prof.irqs": "--irqs", "prof.ramp": "--ramp",
              "prof.rampdur": "--ramp-duration", "prof.record": "--record",
              "prof.tracekb": "--trace-kb", "iommu.strict": "--policy"}
# virtio-net-pci properties profile.py sets on both NICs itself (QEMU takes
# the last one), and what sets each.
NIC_OWN = {"iommu_platform": "the NICs sit behind the IOMMU of --iommu; for a run without one "
                             "use --iommu none",
           "packed": "use --ring packed|split",
           "netdev": "each NIC's own, from --link", "mac": "each NIC's own",
           "disable_legacy": "modern virtio only", "romfile": "no option ROM"}
# What the progress lines and docs/profiling.rst know: QEMU's TCG, or KVM
# where a boot shows guests run (scripts/accel.sh), each with -accel's
# properties after a comma.
ACCELS = ("tcg", "kvm")


def default_timeout(a):
    """The per-run limit without --timeout: boot, load, perf report, ramp."""
    return 420 + 3 * a.duration + len(a.ramp_steps) * (2 * a.ramp_duration + 60)


def dir_problem(path):
    """None when @path is a writable directory or could be created (its nearest
    existing ancestor is a writable directory); else why not, in words."""
    p = os.path.abspath(path)
    if os.path.exists(p):
        if not os.path.isdir(p):
            return "exists and is not a directory"
        if not os.access(p, os.W_OK | os.X_OK):
            return "is not writable"
        return None
    anc = os.path.dirname(p)
    while not os.path.exists(anc):
        anc = os.path.dirname(anc)
    if not os.path.isdir(anc):
        return "cannot be created: %s is not a directory" % anc
    if not os.access(anc, os.W_OK | os.X_OK):
        return "cannot be created: %s is not writable" % anc
    return None


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="profile.py", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See docs/profiling.rst.")
    ap.add_argument("--workload", default="memcached", help="memcached (memcaslap) or nginx (wrk)")
    ap.add_argument("--iommu", help="none, intel-iommu or viommu-vtd (default viommu-vtd; "
                    "not with --compare)")
    ap.add_argument("--policy", help="lazy (default) or strict (iommu.strict=1); not with --compare")
    ap.add_argument("--vcpus", type=int, default=2,
                    help="guest vCPUs, 1 to 64 (default 2; the load generator runs one "
                    "thread per vCPU unless --threads)")
    ap.add_argument("--mem", type=int, default=2048, help="guest RAM in MiB (default 2048)")
    ap.add_argument("--duration", type=int, default=10,
                    help="seconds of measured load, 1 to 3600 (default 10)")
    ap.add_argument("--conns", type=int, default=DEFAULT_CONNS,
                    help="client connections (default %d; see docs/profiling.rst, 'Saturating the guest')" % DEFAULT_CONNS)
    ap.add_argument("--threads", type=int, default=0,
                    help="load generator threads (default: the vCPU count)")
    ap.add_argument("--ramp", metavar="C1,C2,...",
                    help="before the measured load, run the load at each of these client "
                    "concurrencies (--ramp-duration s each) and report throughput and idle share")
    ap.add_argument("--ramp-duration", type=int,
                    help="seconds per ramp step (default 3; only with --ramp)")
    ap.add_argument("--ramp-rounds", type=int,
                    help="run the ramp N times, every other round in reverse, and find the plateau "
                    "from each concurrency's median (default 1; only with --ramp)")
    ap.add_argument("--record", metavar="FILE",
                    help="record the guest kernel's iommu map/unmap tracepoints and dma-iommu/"
                    "flush-queue kprobe events with ftrace over the load window into FILE "
                    "(the trace format; the ftrace text stays in FILE.ftrace.txt; not with --repeat)")
    ap.add_argument("--trace-kb", type=int,
                    help="ftrace buffer per vCPU in KiB (default 16384; only with --record)")
    ap.add_argument("--kernel", help="another guest kernel (bzImage) to boot; it needs "
                    "virtio_pci/virtio_net built in or modules matching the image")
    ap.add_argument("--link", default=DEFAULT_LINK, choices=("dgram", "hub", "tap", "vhost"),
                    help="how the two NICs are joined: dgram (a pair of unix datagram "
                    "sockets), hub (a QEMU hub), tap (two taps on a bridge in a network "
                    "namespace of the run's own) or vhost (the same with vhost-net); "
                    "default %s (docs/profiling.rst, 'Saturating the guest')" % DEFAULT_LINK)
    ap.add_argument("--irqs", default=DEFAULT_IRQS, choices=("default", "split"),
                    help="interrupt placement in the guest: split (the server NIC's on the first "
                    "vCPU, the client NIC's on the last) or default (where the kernel puts them); "
                    "default %s (docs/profiling.rst, 'Saturating the guest')" % DEFAULT_IRQS)
    ap.add_argument("--ring", default="split", choices=("packed", "split"),
                    help="virtqueue layout of the NICs (default split, as Linux drivers use)")
    ap.add_argument("--nic-opts", default="", help="extra virtio-net-pci properties for both NICs "
                    "(e.g. csum=off,guest_csum=off; not those profile.py sets: iommu_platform, "
                    "packed, netdev, mac, disable-legacy, romfile)")
    ap.add_argument("--accel", default="tcg", help="QEMU -accel value: tcg or kvm, with -accel's "
                    "properties after a comma (default tcg; e.g. tcg,thread=single, or kvm where "
                    "a probe shows guests run)")
    ap.add_argument("--freq", type=int, default=250, help="perf sampling frequency in Hz (default 250)")
    ap.add_argument("--no-perf", action="store_true", help="no perf record in the guest")
    ap.add_argument("--events", action="store_true",
                    help="count the guest's iommu:map/unmap tracepoints with ftrace "
                    "(experimental: under TCG, enabling them stalled the load in our runs)")
    ap.add_argument("--top", type=int, default=15, help="top symbols to print (default 15)")
    ap.add_argument("--compare", nargs="?", const=DEFAULT_COMPARE, metavar="CONFIGS",
                    help="run several IOMMU:POLICY configurations, each once (default: %s)"
                    % DEFAULT_COMPARE)
    ap.add_argument("--repeat", type=int, default=1, help="run every configuration N times (1 to "
                    "20), interleaved; the table shows the median-throughput run of each (default 1)")
    ap.add_argument("--out", help="result directory, created if need be (default build/profile/<time>-...)")
    ap.add_argument("--timeout", type=int, default=0, help="per-run limit in s (default 420 + 3 x duration, plus "
                    "2 x ramp duration + 60 per ramp step and round)")
    ap.add_argument("--append", default="", help="extra guest kernel command line (not the prof.* "
                    "parameters or iommu.strict, which profile.py sets from its options)")
    ap.add_argument("--qemu-arg", action="append", default=[],
                    help="extra QEMU argument (repeatable; not -smp: use --vcpus)")
    ap.add_argument("--json", action="store_true", help="also print the result as JSON")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress lines from inside each run (guest up, warm-up, ramp steps, "
                    "load done, guest warnings); the plan, the reports and errors still print")
    ap.add_argument("--check-args", action="store_true",
                    help="check the arguments and exit: 0 when they are accepted, 2 with the "
                    "reason when not (builds and boots nothing)")
    a = ap.parse_args(argv)
    # An empty value is never "not given".
    for opt, v, what in (("--out", a.out, "a directory"), ("--kernel", a.kernel, "a bzImage"),
                         ("--record", a.record, "a file name"),
                         ("--compare", a.compare, "IOMMU:POLICY,...; --compare alone runs the default list"),
                         ("--ramp", a.ramp, "C1,C2,..."), ("--accel", a.accel, "tcg or kvm"),
                         ("--iommu", a.iommu, "none, intel-iommu or viommu-vtd"),
                         ("--policy", a.policy, "lazy or strict")):
        if v is not None and not v.strip():
            ap.error("%s: an empty value (give %s)" % (opt, what))
    if a.workload not in WORKLOADS:
        ap.error("unknown workload '%s' (use memcached or nginx)" % a.workload)
    if a.iommu is not None and a.iommu not in IOMMUS:
        ap.error("unknown IOMMU '%s' (use none, intel-iommu or viommu-vtd)" % a.iommu)
    if a.policy is not None and a.policy not in POLICIES:
        ap.error("unknown policy '%s' (use lazy or strict)" % a.policy)
    # Options that would be ignored: refused, so that a run never differs
    # from its command line.
    if a.compare is not None:
        for opt, v in (("--iommu", a.iommu), ("--policy", a.policy)):
            if v is not None:
                ap.error("%s has no effect with --compare: name the configurations there "
                         "(e.g. --compare none:lazy,viommu-vtd:strict)" % opt)
    for opt, v in (("--ramp-duration", a.ramp_duration), ("--ramp-rounds", a.ramp_rounds)):
        if v is not None and a.ramp is None:
            ap.error("%s has no effect without --ramp C1,C2,..." % opt)
    if a.trace_kb is not None and a.record is None:
        ap.error("--trace-kb has no effect without --record FILE (it sizes the recording's "
                 "ftrace buffer)")
    a.iommu = a.iommu or "viommu-vtd"
    a.policy = a.policy or "lazy"
    a.ramp_duration = 3 if a.ramp_duration is None else a.ramp_duration
    a.ramp_rounds = 1 if a.ramp_rounds is None else a.ramp_rounds
    a.trace_kb = 16384 if a.trace_kb is None else a.trace_kb
    for name, v, lo, hi in (("--vcpus", a.vcpus, 1, 64), ("--duration", a.duration, 1, 3600),
                            ("--conns", a.conns, 1, 4096), ("--mem", a.mem, 768, 65536),
                            ("--freq", a.freq, 1, 10000), ("--repeat", a.repeat, 1, 20),
                            ("--threads", a.threads, 0, 256), ("--ramp-duration", a.ramp_duration, 1, 600),
                            ("--ramp-rounds", a.ramp_rounds, 1, 20),
                            ("--trace-kb", a.trace_kb, 1024, 1 << 20), ("--top", a.top, 0, 1000),
                            ("--timeout", a.timeout, 0, 86400)):
        if not lo <= v <= hi:
            ap.error("%s must be between %d and %d" % (name, lo, hi))
    if not a.threads:
        a.threads = a.vcpus
    m = re.fullmatch(r"(\w+)((?:,[A-Za-z][\w-]*=[^,=\s]+)*)", a.accel)
    if not m or m.group(1) not in ACCELS:
        ap.error("--accel %s: use tcg or kvm, optionally with -accel properties after a comma "
                 "(e.g. tcg,thread=single)" % a.accel)
    if m.group(1) == "kvm" and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        ap.error("--accel kvm: /dev/kvm is missing or not readable and writable here (use --accel tcg)")
    # QEMU takes the last -smp: the guest would get other vCPUs than the
    # figures, labels, load-generator threads and replay assume (--vcpus).
    for q in a.qemu_arg:
        if not q.strip():
            ap.error("--qemu-arg: an empty argument")
        if re.match(r"\s*--?smp(\s|=|$)", q):
            ap.error("--qemu-arg %s: set the guest's vCPUs with --vcpus N (make run: VCPUS=N); "
                     "the report, the load generator and the replay follow --vcpus" % q)
    # QEMU and the guest's /init take the last of a property or parameter:
    # one that profile.py sets would override it while the report claims it.
    for kv in a.nic_opts.split(",") if a.nic_opts else []:
        key = kv.split("=", 1)[0].strip()
        if not key:
            ap.error("--nic-opts: an empty entry in '%s' (PROP=VALUE,...)" % a.nic_opts)
        if key.replace("-", "_") in NIC_OWN:
            ap.error("--nic-opts %s: profile.py sets %s itself (%s)"
                     % (kv, key, NIC_OWN[key.replace("-", "_")]))
    for w in a.append.split():
        key = w.split("=", 1)[0]
        if key in APPEND_OWN:
            ap.error("--append %s: profile.py sets %s itself; use %s" % (w, key, APPEND_OWN[key]))
        if key.startswith("prof."):
            ap.error("--append %s: the prof.* parameters are profile.py's own (its options set them)" % w)
    ramp = []
    for c in (a.ramp.split(",") if a.ramp is not None else []):
        if not c.strip():
            ap.error("--ramp: an empty entry in '%s' (a list of numbers of connections, e.g. 64,128,256)"
                     % a.ramp)
        if not c.strip().isdigit() or not 1 <= int(c) <= 4096:
            ap.error("--ramp: '%s' is not a number of connections between 1 and 4096" % c.strip())
        if int(c) in ramp:
            ap.error("--ramp: %d connections twice; give each concurrency once and repeat "
                     "the ramp with --ramp-rounds" % int(c))
        ramp.append(int(c))
    a.ramp = ramp
    a.ramp_steps = ramp_steps(ramp, a.ramp_rounds)
    if len(",".join(str(c) for c in a.ramp_steps)) > 1024:
        ap.error("--ramp with --ramp-rounds %d: %d steps do not fit on the guest's kernel command line; "
                 "give fewer concurrencies or rounds" % (a.ramp_rounds, len(a.ramp_steps)))
    load = a.duration + len(a.ramp_steps) * a.ramp_duration
    if a.timeout and a.timeout <= load:
        ap.error("--timeout %d: no longer than the load itself (%d s, before boot and perf report); "
                 "give more, or 0 for the default (%d s)" % (a.timeout, load, default_timeout(a)))
    # Paths: checked here, before the guest image is built; main() creates
    # them before that too.
    if a.out is not None:
        why = dir_problem(a.out)
        if why:
            ap.error("--out %s: %s" % (a.out, why))
    if a.record is not None:
        if os.path.isdir(a.record):
            ap.error("--record %s: is a directory; give a file name" % a.record)
        # Its directory exists, or --out (checked above) is it or lies in it
        # and creates it.
        rdir = os.path.dirname(os.path.abspath(a.record))
        out = os.path.abspath(a.out) if a.out is not None else None
        if not (os.path.isdir(rdir) and os.access(rdir, os.W_OK | os.X_OK)) and \
                not (out and (out == rdir or out.startswith(rdir.rstrip(os.sep) + os.sep))):
            ap.error("--record %s: its directory does not exist or is not writable" % a.record)
        if a.repeat > 1:
            ap.error("--record with --repeat %d: every round would overwrite the recording; "
                     "record in a run of its own (--repeat 1)" % a.repeat)
        # result.json names the trace: replay.py --check reads it from anywhere.
        a.record = os.path.abspath(a.record)
    if a.kernel is not None and not os.path.isfile(a.kernel):
        ap.error("--kernel %s: no such file" % a.kernel)
    configs = [(a.iommu, a.policy)]
    if a.compare is not None:
        configs = []
        for c in a.compare.split(","):
            i, _, p = c.strip().partition(":")
            p = p or "lazy"
            if i not in IOMMUS or p not in POLICIES:
                ap.error("bad configuration '%s' in --compare (IOMMU:POLICY, IOMMU one of %s, "
                         "POLICY lazy or strict)" % (c, ", ".join(IOMMUS)))
            if (i, p) in configs:
                ap.error("bad configuration '%s:%s' twice in --compare (use --repeat N to run "
                         "every configuration N times)" % (i, p))
            configs.append((i, p))
    a.configs = configs
    if a.record and all(i == "none" for i, _ in configs):
        ap.error("--record needs a run behind an IOMMU (without one the guest never calls "
                 "iommu_map(), so there is nothing to record)")
    if not a.check_args:  # the probe may make a network namespace
        a.link = probe_link(a.link)
    return a


def interrupted(signum, frame):
    raise KeyboardInterrupt


def main(argv):
    a = parse_args(argv)
    if a.check_args:
        return 0
    # Killed (timeout, a CI job's end): unwind like Ctrl-C, so that each
    # run's cleanup stops its QEMU, which has a process group of its own.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    try:
        qemu = qemu_binary()
        runs = []
        for i, p in a.configs:
            if i != "none" and not qemu_has_device(qemu, i):
                if a.compare:
                    say("note: %s has no '-device %s' yet; skipping %s:%s" % (qemu, i, i, p))
                    continue
                raise Failure("%s has no '-device %s'; rebuild QEMU (scripts/build-qemu.sh) or "
                              "pick another --iommu" % (qemu, i))
            runs.append((i, p))
        if not runs:
            raise Failure("no configuration left to run")
        if a.kernel:
            say("note: --kernel %s: the image's modules are for the Debian kernel; virtio_pci and "
                "virtio_net must be built in otherwise" % a.kernel)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        top = a.out or os.path.join(BUILD, "profile", "%s-%s%s" % (
            stamp, a.workload, "-compare" if a.compare else "-%s-%s" % runs[0]))
        # The result directories before the image: a path that cannot be
        # created fails now, not after a build of minutes.
        made = not os.path.isdir(top)
        try:
            os.makedirs(top, exist_ok=True)
        except OSError as e:
            raise Failure("--out %s: cannot create it: %s" % (top, e.strerror))
        if a.record:
            try:
                os.makedirs(os.path.dirname(a.record), exist_ok=True)
            except OSError as e:
                raise Failure("--record %s: cannot create its directory: %s" % (a.record, e.strerror))
        say("guest image: scripts/profile/build-image.sh (first time: a few minutes)")
        try:
            image = build_image()
        except BaseException:
            if made:
                try:
                    os.rmdir(top)  # only when still empty
                except OSError:
                    pass
            raise
        per = 60 + a.duration + 40
        say("%d run(s): %s; about %d s each under %s (boot ~60 s, %d s load, perf report), "
            "about %d min in all; results in %s" % (
                len(runs) * a.repeat, ", ".join("%s:%s" % r for r in runs), per,
                a.accel.split(",")[0].upper(), a.duration,
                (per * len(runs) * a.repeat + 59) // 60, top))
        results = []
        # Rounds interleave the configurations, so that a change of host load
        # hits all of them rather than one.
        plan = [(rnd, i, p) for rnd in range(a.repeat) for i, p in runs]
        for n, (rnd, i, p) in enumerate(plan, 1):
            sub = "%s-%s" % (i, p) if a.compare else ""
            if a.repeat > 1:
                sub = (sub + "-" if sub else "") + "r%d" % (rnd + 1)
            d = os.path.join(top, sub) if sub else top
            say("[%d/%d] %s with %s, %s policy, %d vCPU (console log %s)" % (
                n, len(plan), a.workload, i, p, a.vcpus, os.path.join(d, "console.log")))
            res = Run(a, i, p, d, image).execute(qemu, progress=not a.quiet)
            text = report(res)
            with open(os.path.join(d, "report.txt"), "w") as f:
                f.write(text + "\n")
            with open(os.path.join(d, "result.json"), "w") as f:
                json.dump(res, f, indent=1)
            if not a.compare:
                print(text, flush=True)
            elif not res.get("error"):
                say("  %s ops/s, avg latency %s us; full report: %s" % (
                    fmt(res["load"].get("ops_per_s")), fmt(res["load"].get("lat_avg_us")),
                    os.path.join(d, "report.txt")))
            if res.get("error"):
                say("error: %s:%s: %s" % (i, p, res["error"]))
            results.append(res)
        # Every round counts, not only the one aggregate() shows per configuration.
        failed = [r for r in results if r.get("error")]
        runs_done = len(results)
        if a.compare:
            results = aggregate(results)
            table = compare_table(results)
            title = ("%s, %d vCPU, %d connections from %d client thread(s) over --link %s, %d s per run "
                     "(%s: compare ratios, not absolute numbers)" % (
                         a.workload, a.vcpus, a.conns, min(a.threads, a.conns), a.link, a.duration,
                         a.accel.split(",")[0].upper()))
            with open(os.path.join(top, "compare.txt"), "w") as f:
                f.write(title + "\n" + table + "\n")
            svg = os.path.join(top, "compare.svg")
            svg_plot(results, svg, title)
            latest = os.path.join(BUILD, "profile", "latest")
            try:
                if os.path.islink(latest) or os.path.exists(latest):
                    os.unlink(latest)
                os.symlink(os.path.abspath(top), latest)
            except OSError:
                pass
            print("\n" + title + "\n" + table, flush=True)
            say("table: %s  plot: %s" % (os.path.join(top, "compare.txt"), svg))
        if a.json:
            print(json.dumps(results if a.compare else results[0], indent=1))
        if failed:
            raise Failure("%d of %d run(s) failed; first: %s" % (len(failed), runs_done, failed[0]["error"]))
        return 0
    except Failure as e:
        print("[viommu-lab] profile: error: %s." % str(e).rstrip("."), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("[viommu-lab] profile: interrupted.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
