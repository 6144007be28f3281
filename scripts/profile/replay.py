#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Replay a DMA trace recorded in a guest (profile.py --record) at more CPUs.

  replay.py TRACE [--cpus 2,16,64] [--allocators linux-5.13,linux-4.7,viommu-lab]
            [--svg FILE] [--json FILE] [--title TEXT]
  replay.py --check RESULT.json [--json FILE]

The first form runs viommu-sim --workload trace --trace TRACE for every
allocator (viommu-sim --list) and CPU count (1 to 256) and prints one table: replayed throughput (maps/s)
and its ratio to the same replay without an IOMMU; --svg draws it with
scripts/report/svgplot.py.  linux-5.13 is the allocator variant whose logic
the profiling guest's Debian 6.1 kernel runs (docs/profiling.rst,
"Replaying the recording").

--check compares a recording (the result.json of a profile.py --record run)
with its replay at the guest's vCPU count: maps and unmaps (count and per
second), their sizes, their spread over CPUs, and the invalidations the
recording saw against viommu-vtd's own statistics.  It prints one line per
comparison and writes them as JSON ({"checks": [{"name", "ok", "guest",
"trace", ...}]}); the exit status is 0 when all agree.  A relative trace
name in RESULT.json that does not exist from the current directory is taken
from RESULT.json's directory.

Output paths (--json, --svg) are checked before the first replay.  The
simulator is VIOMMU_SIM when set; otherwise this tree's viommu-sim, which
scripts/build-standalone.sh builds or brings up to date first (under
build/standalone/).
"""

import argparse
import functools
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD", os.path.join(TOP, "build"))
sys.path.insert(0, os.path.join(TOP, "scripts", "report"))
import svgplot  # noqa: E402

# The variant whose logic Linux 6.1 runs: 6.1's drivers/iommu/iova.c is the
# 5.13 allocator (restart from iova_find_limit(), rcache with depot flush on
# failure); 6.7 changed the depot.  See docs/iova.rst for each variant.
GUEST_61 = "linux-5.13"
DEFAULT_ALLOCATORS = (GUEST_61, "linux-4.7", "viommu-lab")
# Counts agree when they differ by at most this share: the recording and the
# device's statistics close their windows a few operations apart.
TOLERANCE = 0.05
# viommu-sim's --cpus range (guest/sim/params.cc).
MAX_CPUS = 256


class Failure(Exception):
    pass


def say(msg):
    print("[viommu-lab] replay: " + msg, flush=True)


@functools.lru_cache(maxsize=None)
def sim_binary():
    """VIOMMU_SIM as given, or this tree's viommu-sim, built or brought up
    to date first (ninja does nothing when it is)."""
    sim = os.environ.get("VIOMMU_SIM")
    if not sim:
        sim = os.path.join(BUILD, "standalone", "guest", "sim", "viommu-sim")
        print("[viommu-lab] replay: building viommu-sim in %s (scripts/build-standalone.sh; "
              "VIOMMU_SIM=PATH uses another)" % os.path.dirname(sim), file=sys.stderr, flush=True)
        r = subprocess.run(["bash", os.path.join(TOP, "scripts", "build-standalone.sh")],
                           stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0:
            raise Failure("scripts/build-standalone.sh failed: no up-to-date viommu-sim")
    if not os.access(sim, os.X_OK):
        raise Failure("no viommu-sim at %s" % sim)
    r = subprocess.run([sim, "--help"], capture_output=True, text=True, timeout=60)
    if "--trace" not in r.stdout + r.stderr:
        raise Failure("%s cannot replay traces (no --workload trace)" % sim)
    return sim


def replay(sim, trace, cpus, allocator):
    """One viommu-sim replay -> its JSON object."""
    cmd = [sim, "--workload", "trace", "--trace", trace, "--cpus", str(cpus),
           "--allocator", allocator, "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise Failure("'%s' failed: %s" % (" ".join(cmd), (r.stderr.strip().splitlines() or
                                                         ["exit %d" % r.returncode])[-1]))
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        raise Failure("'%s' printed invalid JSON: %s" % (" ".join(cmd), e))


def trace_stats(trace):
    tool = os.path.join(TOP, "scripts", "trace", "viommu-trace")
    r = subprocess.run([sys.executable, tool, "stats", "--json", "--", trace], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise Failure("viommu-trace stats %s failed: %s" % (trace, r.stderr.strip()))
    return json.loads(r.stdout)


def table(trace, cpus, allocators, svg=None, title=None):
    sim = sim_binary()
    rows = []
    for al in allocators:
        for n in cpus:
            j = replay(sim, trace, n, al)
            rows.append({"allocator": al, "cpus": n, "ops_per_s": j.get("ops_per_s"),
                         "relative": j.get("relative_to_no_iommu"), "unit": j.get("unit"),
                         "spin_share": j.get("spin_share")})
    unit = next((r["unit"] for r in rows if r.get("unit")), "ops")
    L = ["%-12s %s" % ("allocator", "".join("%22s" % ("%d CPUs" % n) for n in cpus))]
    for al in allocators:
        cells = []
        for n in cpus:
            r = next(x for x in rows if x["allocator"] == al and x["cpus"] == n)
            cells.append("%22s" % ("%.0f %s/s (%.1f%%)" % (r["ops_per_s"], unit.split("/")[0],
                                                           100 * r["relative"])
                                   if r["ops_per_s"] is not None and r["relative"] is not None else "n/a"))
        L.append("%-12s %s" % (al + ("*" if al == GUEST_61 else ""), "".join(cells)))
    L.append("replayed throughput of %s with viommu-sim --workload trace (percent: against the same "
             "replay without an IOMMU); * = the variant whose logic the guest's 6.1 kernel runs"
             % os.path.basename(trace))
    if svg:
        groups = [("%d CPUs" % n, [(al, next(x["relative"] for x in rows
                                              if x["allocator"] == al and x["cpus"] == n))
                                    for al in allocators]) for n in cpus]
        svgplot.bar_chart(svg, title or "replay of %s" % os.path.basename(trace),
                          [("replayed throughput relative to no IOMMU (higher is better)", groups,
                            1.1, lambda v: "%.0f%%" % (100 * v))], legend=list(allocators))
    return rows, "\n".join(L)


def per_cpu_outside(trace):
    """Nanoseconds each mapping CPU of a trace spent outside every event with
    a duration, from its first record to its last one's end; the replay's
    work (docs/trace-format.rst, "Replay")."""
    busy_until, outside, maps = {}, {}, set()
    with open(trace) as f:
        for line in f:
            w = line.split()
            if len(w) < 3 or not w[0].isdigit():
                continue
            ts, cpu, dur = int(w[0]), w[1], 0
            for kv in w[3:]:
                if kv.startswith("dur="):
                    dur = int(kv[4:])
            if w[2] in ("map", "unmap"):
                maps.add(cpu)
            if cpu in busy_until:
                outside[cpu] += max(0, ts - busy_until[cpu])
                busy_until[cpu] = max(busy_until[cpu], ts + dur)
            else:
                busy_until[cpu], outside[cpu] = ts + dur, 0
    return {c: v for c, v in outside.items() if c in maps}


def _share(d):
    tot = sum(d.values())
    return {k: v / tot for k, v in d.items()} if tot else {}


def sim_allocators(sim):
    """The allocator names viommu-sim --list gives, and "none"; None when it
    lists none (the caller then leaves the check to viommu-sim)."""
    r = subprocess.run([sim, "--list"], capture_output=True, text=True, timeout=60)
    for line in r.stdout.splitlines():
        if line.startswith("allocators:"):
            return line.split()[1:] + ["none"]
    return None


def _json_kind(v):
    return ("true/false" if isinstance(v, bool) else "a number" if isinstance(v, (int, float))
            else "null" if v is None else "a string" if isinstance(v, str)
            else "an array" if isinstance(v, list) else "an object")


def load_result(path):
    """A profile.py --record run's result.json -> (result, its "record"); else
    Failure, one sentence naming the first part that is missing or of another
    kind.  check() turns a malformed part deeper down into the same Failure."""
    with open(path) as f:
        try:
            res = json.load(f)
        except ValueError as e:
            raise Failure("%s is not JSON (%s)" % (path, e))

    def bad(what):
        return Failure("%s is not the result.json of a profile.py --record run: %s" % (path, what))
    if not isinstance(res, dict):
        raise bad("it holds %s, not an object" % _json_kind(res))
    rec = res.get("record")
    if rec is None:
        raise Failure("%s holds no recording (no \"record\" object: run profile.py with --record)" % path)
    if not isinstance(rec, dict):
        raise bad("its \"record\" is %s, not an object" % _json_kind(rec))
    if rec.get("error") or not rec.get("trace"):
        raise Failure("%s holds no converted recording (%s)" % (
            path, rec.get("error") or rec.get("convert_error") or "no \"trace\" in its \"record\""))
    if not isinstance(rec["trace"], str):
        raise bad("its \"record\" \"trace\" is %s, not a file name" % _json_kind(rec["trace"]))
    if "vcpus" not in res:
        raise bad("no \"vcpus\" (the guest's vCPU count)")
    v = res["vcpus"]
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_CPUS:
        raise bad("\"vcpus\" is %s, not a whole number from 1 to %d" % (json.dumps(v), MAX_CPUS))
    if not isinstance(rec.get("guest_counts"), dict):
        raise bad("no \"guest_counts\" object in its \"record\"")
    return res, rec


def trace_path(result_path, trace):
    """The recording's trace as result.json names it: a relative name that
    does not exist from here is taken from result.json's directory (a
    result.json written by hand, or moved with its trace)."""
    if os.path.isabs(trace) or os.path.exists(trace):
        return trace
    beside = os.path.join(os.path.dirname(os.path.abspath(result_path)), trace)
    return beside if os.path.exists(beside) else trace


def check(result_path):
    """The recording against the guest's own counts and viommu-vtd's."""
    res, rec = load_result(result_path)
    rec = dict(rec, trace=trace_path(result_path, rec["trace"]))
    try:
        return _check(res, rec)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise Failure("%s is not the result.json of a profile.py --record run: its \"record\" "
                      "\"guest_counts\" or \"viommu\" is malformed (%s: %s)"
                      % (result_path, type(e).__name__, e))


def _check(res, rec):
    g = rec["guest_counts"]
    trace = rec["trace"]
    ts = trace_stats(trace)
    sim = sim_binary()
    vcpus = res["vcpus"]
    rp = replay(sim, trace, vcpus, GUEST_61)
    checks = []

    def close(a, b, tol=TOLERANCE):
        return (all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
                and abs(a - b) <= tol * max(abs(a), abs(b), 1))

    def add(name, ok, **kv):
        checks.append(dict(name=name, ok=bool(ok), **kv))

    # An overrun ring buffer lost some CPU's oldest events: the trace and the
    # guest's counts start where every CPU's are complete, the device's
    # statistics cover the whole window.
    add("recording: the guest's ring buffers lost no events (--trace-kb)", rec.get("overrun", 0) == 0,
        overrun=rec.get("overrun"))
    gm, gu = g["events"].get("map", 0), g["events"].get("unmap", 0)
    tm, tu = ts["ops"].get("map", 0), ts["ops"].get("unmap", 0)
    add("maps: the trace holds the guest's iommu:map events", gm > 0 and tm == gm, guest=gm, trace=tm)
    add("unmaps: the trace holds the guest's iommu:unmap events", gu > 0 and tu == gu, guest=gu, trace=tu)
    # The replay at the guest's vCPU count maps what the guest mapped, at its rate.
    add("replay at %d CPUs maps as many times as the guest, within 1%%" % vcpus,
        close(gm, rp.get("maps"), 0.01), guest=gm, replay=rp.get("maps"))
    span = g.get("span_s") or 0
    g_rate = gm / span if span else None
    r_rate = rp.get("ops_per_s") if (rp.get("unit") or "").startswith("map") else None
    if r_rate is None and rp.get("elapsed_ns"):
        r_rate = rp.get("maps", 0) / (rp["elapsed_ns"] / 1e9)
    # The replay runs each CPU's recorded time outside map, unmap, flush,
    # sync and idle (nested ones once) plus the model's costs, and its window
    # lasts until the last CPU is done: no shorter than the longest of those
    # times, so it maps at most maps / that.  Under TCG the recorded IOMMU
    # time dwarfs the model's, so it maps at least at the guest's rate.
    outside = per_cpu_outside(trace)
    longest = max(outside.values(), default=0) / 1e9
    hi = rp.get("maps", 0) / longest if longest else None
    # (the simulator prints six significant digits)
    ok = (g_rate is not None and r_rate is not None and hi is not None
          and g_rate * (1 - TOLERANCE) <= r_rate <= hi * (1 + 1e-5))
    add("replay at %d CPUs: maps per second at least the guest's (less %d%%) and at most the "
        "maps over the longest CPU's recorded time outside the IOMMU" % (vcpus, 100 * TOLERANCE),
        ok, guest=g_rate, maps_over_longest_outside=hi, replay=r_rate)
    gs = {int(k): v for k, v in g["sizes"].get("map", {}).items()}
    tsz = {int(k): v for k, v in ts.get("sizes", {}).items()}
    add("map sizes: the trace's distribution is the guest's", gs and gs == tsz, guest=gs, trace=tsz)
    gcpu = {int(c): v.get("map", 0) for c, v in g["per_cpu"].items()}
    tcpu = {int(c): v.get("map", 0) for c, v in ts.get("per_cpu", {}).items()}
    add("spread over CPUs: the trace's maps per CPU are the guest's", gcpu and gcpu == tcpu,
        guest=gcpu, trace=tcpu)
    # Invalidations: each flush-queue flush or strict unmap ends in one
    # qi_submit_sync with a wait descriptor; viommu-vtd counts the waits.
    v = (res.get("viommu") or {}).get("delta") or {}
    waits = v.get("queue.waits.total")
    syncs = g["events"].get("qi_sync")
    add("invalidation waits: the recording's qi_submit_sync calls match viommu-vtd's wait "
        "descriptors within %d%%" % (100 * TOLERANCE), close(syncs, waits), guest=syncs, viommu=waits)
    return checks, rp


def output_problem(path):
    """None when @path can be written as a file; else why not, in words."""
    if not path.strip():
        return "an empty file name"
    if os.path.isdir(path):
        return "is a directory; give a file name"
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        return "no directory %s" % d
    if not os.access(d, os.W_OK | os.X_OK):
        return "directory %s is not writable" % d
    return None


def main(argv):
    ap = argparse.ArgumentParser(prog="replay.py", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="VIOMMU_SIM=PATH: the viommu-sim to run (default: this tree's, "
                                 "built first by scripts/build-standalone.sh).  See docs/profiling.rst.")
    ap.add_argument("trace", nargs="?", help="the trace to replay (profile.py --record FILE; "
                    "docs/trace-format.rst)")
    ap.add_argument("--cpus", help="simulated CPU counts, each 1 to %d, each once (default 2,16,64)"
                    % MAX_CPUS)
    ap.add_argument("--allocators", help="viommu-sim allocators (viommu-sim --list), each once "
                    "(default %s)" % ",".join(DEFAULT_ALLOCATORS))
    ap.add_argument("--svg", metavar="FILE", help="also draw the table as an SVG bar chart")
    ap.add_argument("--title", help="the SVG's title (default: replay of TRACE)")
    ap.add_argument("--json", metavar="FILE", help="also write the rows (with --check: the "
                    "comparisons and the replay) as JSON")
    ap.add_argument("--check", metavar="RESULT.json",
                    help="compare a profile.py --record run's recording with its replay at the "
                    "guest's vCPU count (takes --json only)")
    a = ap.parse_args(argv)
    # Output paths before anything runs: a typo must not cost the replays.
    for opt, v in (("--json", a.json), ("--svg", a.svg)):
        why = output_problem(v) if v is not None else None
        if why:
            ap.error("%s %s: %s" % (opt, v, why))
    if a.check is not None:
        if not a.check.strip():
            ap.error("--check: an empty value (give a profile.py --record run's result.json)")
        unused = [("TRACE %s" % a.trace, a.trace), ("--cpus", a.cpus), ("--allocators", a.allocators),
                  ("--svg", a.svg), ("--title", a.title)]
        for what, v in unused:
            if v is not None:
                ap.error("--check does not use %s (it replays the recording named in RESULT.json "
                         "at the guest's vCPU count with %s, and writes only --json)" % (what, GUEST_61))
    a.cpus = "2,16,64" if a.cpus is None else a.cpus
    a.allocators = ",".join(DEFAULT_ALLOCATORS) if a.allocators is None else a.allocators
    try:
        if a.check:
            checks, rp = check(a.check)
            for c in checks:
                print("%s %s  (%s)" % ("agree   " if c["ok"] else "DISAGREE", c["name"],
                                       ", ".join("%s %s" % (k, v) for k, v in c.items()
                                                 if k not in ("name", "ok"))))
            if a.json:
                with open(a.json, "w") as f:
                    json.dump({"checks": checks, "replay": rp}, f, indent=1)
            return 0 if all(c["ok"] for c in checks) else 1
        if a.trace is None:
            ap.error("give a TRACE or --check RESULT.json")
        if a.title is not None and a.svg is None:
            ap.error("--title is the SVG's: give --svg FILE with it")
        # Everything checked before the first replay.
        cpus = []
        for c in a.cpus.split(","):
            c = c.strip()
            if not c:
                ap.error("--cpus: an empty entry in '%s' (a list of whole numbers from 1 to %d, "
                         "e.g. 2,16,64)" % (a.cpus, MAX_CPUS))
            if not (c.isascii() and c.isdigit()) or not 1 <= int(c) <= MAX_CPUS:
                ap.error("--cpus: '%s' is not a CPU count (a list of whole numbers from 1 to %d, "
                         "e.g. 2,16,64)" % (c, MAX_CPUS))
            if int(c) in cpus:
                ap.error("--cpus: %s CPUs twice" % c)
            cpus.append(int(c))
        allocators = []
        for al in a.allocators.split(","):
            al = al.strip()
            if not al:
                ap.error("--allocators: an empty name in '%s' (a list of viommu-sim allocators, "
                         "e.g. %s)" % (a.allocators, ",".join(DEFAULT_ALLOCATORS)))
            if al in allocators:
                ap.error("--allocators: %s twice" % al)
            allocators.append(al)
        if not os.path.isfile(a.trace):
            ap.error("%s: no such trace file" % a.trace)
        known = sim_allocators(sim_binary())
        for al in allocators:
            if known is not None and al not in known:
                ap.error("--allocators: unknown allocator '%s' (viommu-sim knows %s)" % (al, ", ".join(known)))
        rows, text = table(a.trace, cpus, allocators, a.svg, a.title)
        print(text, flush=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
        return 0
    except Failure as e:
        print("[viommu-lab] replay: error: %s." % str(e).rstrip("."), file=sys.stderr)
        return 1
    except OSError as e:
        print("[viommu-lab] replay: error: %s." % ("%s: %s" % (e.filename, e.strerror) if e.filename else e),
              file=sys.stderr)
        return 1
    except (ValueError, KeyError) as e:
        print("[viommu-lab] replay: error: %s." % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
