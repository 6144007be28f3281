#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run viommu-sim on the case files (cases/*.json), score every published
figure of cases/published.json once, and write report.md + SVG plots.

Scoring (docs/simulation.rst, "Scoring"): each point value is compared
once with the run of the configuration its reporter measured, and is
within 25% or not; bounds and qualitative claims are listed and counted
apart; inputs that calibrate a case are shown and never scored; figures of
setups no case models are listed only.  Every run uses the simulator's
one cost model.  Each point value and check is also computed from runs
with twice the case's measured window: a figure that moves by more than
10% then is not a steady-state prediction and is counted as unsettled."""
import argparse
import concurrent.futures
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svgplot import line_chart  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CASES = os.path.join(TOP, "cases")


class Sim:
    """Simulated runs go to a pool of one worker per CPU (prefetch() queues
    one ahead of its use); a real-thread run waits for the pool to drain
    and runs alone, since it measures this machine."""

    def __init__(self, binary):
        self.binary = binary
        self.cache = {}
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1)

    def _args(self, case, config, flags, real):
        args = [self.binary, "--json", "--case", os.path.join(CASES, case + ".json")]
        if config:
            args += ["--config", config]
        args += [str(f) for f in flags]
        if real:
            args.append("--real-threads")
        return args

    @staticmethod
    def _exec(args):
        return sim_json(args)

    def prefetch(self, case, config=None, *flags):
        args = self._args(case, config, flags, False)
        if tuple(args) not in self.cache:
            self.cache[tuple(args)] = self.pool.submit(self._exec, args)

    def run(self, case, config=None, *flags, real=False):
        args = self._args(case, config, flags, real)
        key = tuple(args)
        if real:
            for f in list(self.cache.values()):
                f.result()
            if key not in self.cache:
                done = concurrent.futures.Future()
                done.set_result(self._exec(args))
                self.cache[key] = done
        else:
            self.prefetch(case, config, *flags)
        return self.cache[key].result()


def mix_mean_bytes(text):
    """Mean bytes per operation of a size mix such as 64:10,128+1024:90."""
    total_w = total_b = 0
    for alt in text.split(","):
        sizes, _, w = alt.partition(":")
        w = int(w) if w else 1
        total_w += w
        total_b += w * sum(int(s) for s in sizes.split("+"))
    return total_b / total_w


def lock_sum(r, field, lock, site=None):
    return sum(p[field] for p in r["profile"]
               if p["lock"] == lock and (site is None or p["site"] == site))


# Cases whose --ops-per-cpu is the experiment, not a window on a steady state
FIXED_WINDOW = {"hns-dsaf-probe": "the probe maps its 65,536 buffers once"}
SETTLED = 0.10  # a figure within 10% of itself with twice the window is settled


@functools.lru_cache(maxsize=None)
def case_file(case):
    """cases/@case.json (a case file, or "published"), read once."""
    with open(os.path.join(CASES, case + ".json")) as fh:
        return json.load(fh)


def doubled_window(case, config):
    """The flags of a run with twice the measured window of @case's @config
    (its --ops-per-cpu as the case file sets it)."""
    c = case_file(case)
    ops = c["parameters"]["ops-per-cpu"]["value"]
    ops = c["configurations"][config]["parameters"].get("ops-per-cpu", {"value": ops})["value"]
    return ("--ops-per-cpu", 2 * int(ops))


class Scorer:
    def __init__(self, sim, cost):
        self.sim = sim
        self.cost = cost

    def metric(self, m, r):
        name = m["metric"]
        cpu_time = r["cpu_time_ns"] or 1
        if name in ("relative_to_no_iommu", "spin_share", "ops_per_s", "no_iommu_ops_per_s",
                    "cmdq_owner_share"):
            return r[name]
        if name == "spin_fraction":
            total = sum(p["spin_ns"] for p in r["profile"]) or 1
            return lock_sum(r, "spin_ns", m["lock"], m.get("site")) / total
        if name == "spin_share_of":
            return lock_sum(r, "spin_ns", m["lock"], m.get("site")) / cpu_time
        if name == "held_share":
            return lock_sum(r, "hold_ns", m["lock"], m.get("site")) / cpu_time
        if name == "window_s":
            return r["elapsed_ns"] / 1e9
        if name in ("cmdq_poll_us", "cmdq_issue_us"):
            kind = "poll" if name == "cmdq_poll_us" else "issue"
            role = "owner" if m["role"] == "owner" else "nonowner"
            v = r[f"cmdq_{role}_{kind}_ns"]
            return None if v is None else v / 1000
        if name == "tx_bytes_per_s":
            return r["ops_per_s"] * mix_mean_bytes(r["config"]["tx-bytes"])
        if name == "ops_per_s_per_thread":
            return r["ops_per_s"] / r["config"]["threads"]
        if name == "cmpxchg_success_rate":
            q = r["invq"]
            tries = q["reservations"] + q["cmpxchg_retries"]
            return q["reservations"] / tries if tries else None
        if name == "cost_model_list_us":
            return 2 * self.cost["smmu_hw_desc"] / 1000
        raise ValueError(f"unknown metric {name}")

    def value(self, f, config=None, baseline=None, doubled=False):
        """The reproduced value of figure @f (a ratio of two runs where the
        figure compares two configurations); @doubled: with twice the
        measured window."""
        m = f["measure"]
        config = config or f["configuration"]
        flags = doubled_window(f["case"], config) if doubled else ()
        r = self.sim.run(f["case"], config, *flags)
        if m["metric"] in ("ratio", "ratio_within", "ratio_below"):
            baseline = baseline or f["baseline_configuration"]
            flags = doubled_window(f["case"], baseline) if doubled else ()
            b = self.sim.run(f["case"], baseline, *flags)
            x, y = r[m["of"]], b[m["of"]]
            return x / y if x is not None and y else None
        return self.metric(m, r)


def pct(x):
    return "-" if x is None else f"{100 * x:.2f}%"


def num(x):
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def shown(f, v):
    unit = f.get("unit", "")
    if v is None:
        return "-"
    return pct(v) if unit.startswith("fraction") else num(v)


def short(q, n=90):
    """A quote shortened for a table cell (its '|' escaped for markdown)."""
    q = " ".join(q.split())
    q = q if len(q) <= n else q[:n - 3] + "..."
    return q.replace("|", "\\|")


def table(md, title, columns):
    """A table's heading and header rows."""
    md.append(f"### {title}\n")
    md.append("| " + " | ".join(columns) + " |")
    md.append("|---" * len(columns) + "|")


def scoring(sim, cost, md):
    pub = case_file("published")
    sources = pub["sources"]
    sc = Scorer(sim, cost)
    figs = pub["figures"]
    md.append("## Published figures, each scored once\n")
    md.append("Sources: " + "; ".join(f"**{k}**: {v}" for k, v in sources.items()) + ".\n")

    def of_kind(kind):
        return [f for f in figs if f["kind"] == kind]

    columns = ["figure", "case / configuration", "quote", "published", "reproduced", "ratio",
               "within 25%", "2x window"]
    table(md, "Point values", columns)

    def settled(f, v):
        """The 2x-window cell and whether the figure is settled (None: not
        applicable, the case's window is the experiment)."""
        if f["case"] in FIXED_WINDOW:
            return "- (" + FIXED_WINDOW[f["case"]] + ")", None
        v2 = sc.value(f, doubled=True)
        if v is None or v2 is None:
            return shown(f, v2), False
        moved = abs(v2 / v - 1) if v else (0 if not v2 else 1)
        ok = moved <= SETTLED
        return f"{shown(f, v2)} ({'settled' if ok else f'moves {100 * moved:.0f}%'})", ok

    def point_rows(figures):
        """One row per point value; returns how many are within 25% and how
        many move more than SETTLED with twice the window."""
        within = unsettled = 0
        for f in figures:
            v = sc.value(f)
            ratio = v / f["value"] if v is not None and f["value"] else None
            ok = ratio is not None and 0.75 <= ratio <= 1.25
            within += ok
            cell, steady = settled(f, v)
            unsettled += steady is False
            conf = f["configuration"] + (f" / {f['baseline_configuration']}" if "baseline_configuration" in f else "")
            md.append(f"| {f['id']} | {f['case']} {conf} | {short(f['quote'])} | {shown(f, f['value'])} "
                      f"{'' if f.get('unit', '').startswith('fraction') else f.get('unit', '')} | {shown(f, v)} | "
                      f"{'-' if ratio is None else f'{ratio:.2f}'} | {'yes' if ok else 'no'} | {cell} |")
        md.append("")
        return within, unsettled

    points = of_kind("point")
    within, unsettled = point_rows(points)
    line = f"point values within 25%: {within} of {len(points)}"
    md.append(line + "\n")
    print(line)
    line = (f"point values that move more than {100 * SETTLED:.0f}% with twice the measured window: "
            f"{unsettled} of {len(points)}")
    md.append(line + "\n")
    print(line)

    # figures of the seed reporters' other measurements on their own hardware:
    # they test the cost model's inputs and are never part of the score
    table(md, "Checks: the reporters' other measurements (not scored)", columns)
    checks = of_kind("check")
    within, unsettled = point_rows(checks)
    line = f"checks within 25% (not scored): {within} of {len(checks)}"
    md.append(line + "\n")
    print(line)
    md.append(f"checks that move more than {100 * SETTLED:.0f}% with twice the measured window: "
              f"{unsettled} of {len(checks)}\n")

    table(md, "Bounds", ["figure", "case / configuration", "quote", "bound", "reproduced", "met"])
    bounds = of_kind("bound")
    met = 0
    for f in bounds:
        v = sc.value(f)
        ok = v is not None and (v < f["value"] if f["bound"] == "upper" else v > f["value"])
        met += ok
        sign = "<" if f["bound"] == "upper" else ">"
        md.append(f"| {f['id']} | {f['case']} {f['configuration']} | {short(f['quote'])} | "
                  f"{sign} {shown(f, f['value'])} {f['unit']} | {shown(f, v)} | {'yes' if ok else 'no'} |")
    md.append("")
    md.append(f"bounds met: {met} of {len(bounds)}\n")

    # qualitative claims: each counted once, over every configuration pair it covers
    table(md, "Qualitative claims", ["figure", "claim", "configurations", "reproduced", "holds"])
    claims = of_kind("qualitative")
    held = 0
    for f in claims:
        pairs = [(f["configuration"], f["baseline_configuration"])] + [tuple(p) for p in f.get("also", [])]
        m = f["measure"]
        vals, ok = [], True
        for c, b in pairs:
            v = sc.value(f, c, b)
            vals.append(f"{c} / {b}: {num(v)}")
            if v is None:
                ok = False
            elif m["metric"] == "ratio_within":
                ok = ok and m["low"] <= v <= m["high"]
            else:
                ok = ok and v < m["high"]
        held += ok
        md.append(f"| {f['id']} | {f['claim']} | {f['case']} | {'; '.join(vals)} | {'yes' if ok else 'no'} |")
    md.append("")
    md.append(f"qualitative claims holding: {held} of {len(claims)}\n")

    table(md, "Inputs (calibrate a case, not scored)",
          ["figure", "case", "quote", "published", "the model's", "note"])
    for f in of_kind("input"):
        v = sc.value(f)
        md.append(f"| {f['id']} | {f['case']} | {short(f['quote'])} | {num(f['value'])} {f['unit']} | "
                  f"{num(v)} | {f.get('note', '')} |")
    md.append("")
    md.append("### Not modelled (listed, not scored)\n")
    for f in of_kind("not-modelled"):
        md.append(f"- {f['id']} ({sources[f['source']]}): \"{short(f['quote'], 140)}\" = "
                  f"{f['value']} {f['unit']}: {f['note']}")
    md.append("")


def case_configs(sim, skip):
    """(case, configuration) of every case file, no-iommu and @skip left out."""
    out = []
    for fn in sorted(os.listdir(CASES)):
        if not fn.endswith(".json") or fn == "published.json":
            continue
        case = fn[:-5]
        names = sim_text([sim.binary, "--list-configs", "--case", os.path.join(CASES, fn)]).split()
        out += [(case, c) for c in names if c != "no-iommu" and (case, c) not in skip]
    return out


def configurations(sim, md, skip):
    """Every configuration of every case, the unmeasured ones included (not scored)."""
    md.append("## Every configuration of every case (not scored)\n")
    md.append("| case | configuration | throughput vs no IOMMU | spinning | allocator retries | "
              "cmdq owner share |")
    md.append("|---|---|---|---|---|---|")
    for case, c in case_configs(sim, skip):
        r = sim.run(case, c)
        md.append(f"| {case} | {c} | {pct(r['relative_to_no_iommu'])} | {pct(r['spin_share'])} | "
                  f"{pct(r['allocator_retries'])} | {num(r['cmdq_owner_share'])} |")
    md.append("")


SWEEPS = {
    "memcached-16cpu-xl710": ["stock-4.4", "percpu-batch", "magazines", "linux-4.15", "linux-6.7", "viommu-lab"],
    "ovs-forward-64b": ["intel-iommu-4.4", "magazines-4.7", "linux-6.7", "viommu-lab"],
    "nginx-rbtree-regression": ["linux-5.11", "linux-5.13", "linux-6.7", "viommu-lab"],
}


def sweeps(sim, out, cpus_list, md):
    md.append("## Sweeps over CPU count\n")
    for case, configs in SWEEPS.items():
        rel, spin = [], []
        for c in configs:
            rs = [(n, sim.run(case, c, "--cpus", n, "--sockets", 1)) for n in cpus_list]
            rel.append((c, [(n, r["relative_to_no_iommu"]) for n, r in rs]))
            spin.append((c, [(n, r["spin_share"]) for n, r in rs]))
        line_chart(os.path.join(out, f"{case}-throughput.svg"), f"{case}: throughput relative to no IOMMU",
                   "virtual CPUs", "relative throughput", rel, ymax=1.05, percent=True)
        line_chart(os.path.join(out, f"{case}-spin.svg"), f"{case}: share of CPU time in spinlocks",
                   "virtual CPUs", "spinning", spin, ymax=1.0, percent=True)
        md.append(f"### {case}\n\n![{case} throughput]({case}-throughput.svg)\n![{case} spin]({case}-spin.svg)\n")
        md.append("| configuration | " + " | ".join(f"{n} CPUs" for n in cpus_list) + " |")
        md.append("|---|" + "---|" * len(cpus_list))
        for (name, pts), (_, sp) in zip(rel, spin):
            md.append(f"| {name} | " + " | ".join(f"{pct(y)} ({pct(s)} spin)" for (_, y), (_, s) in zip(pts, sp)) + " |")
        md.append("")


def real_threads(sim, md):
    # as many threads as this machine has CPUs (at least 2, at most 16):
    # more would measure its scheduler, not its locks
    n = max(2, min(os.cpu_count() or 2, 16))
    md.append("## Real threads vs simulation (%d CPUs)\n" % n)
    load = os.getloadavg()
    md.append("Wall-clock figures from this machine (best of 3 alternated runs each); the simulated "
              "ones use the cost model.  Load average before these runs: "
              f"{load[0]:.1f} on {os.cpu_count()} CPUs; with other work running, the real figures "
              "measure the machine's load more than the locks.\n")
    md.append("| case | configuration | simulated throughput | real throughput | simulated spin | real lock wait |")
    md.append("|---|---|---|---|---|---|")
    for case, c in (("memcached-16cpu-xl710", "stock-4.4"), ("memcached-16cpu-xl710", "magazines"),
                    ("ovs-forward-64b", "intel-iommu-4.4"), ("ovs-forward-64b", "viommu-lab")):
        s = sim.run(case, c, "--cpus", n, "--sockets", 1)
        r = sim.run(case, c, "--cpus", n, "--sockets", 1, real=True)
        md.append(f"| {case} | {c} | {pct(s['relative_to_no_iommu'])} | {pct(r['relative'])} | "
                  f"{pct(s['spin_share'])} | {pct(r['spin_share'])} |")
    md.append("")


class ReportError(Exception):
    pass


def sim_text(args):
    """viommu-sim's output of @args; ReportError, in one line, if it cannot
    run or fails."""
    try:
        p = subprocess.run(args, capture_output=True, text=True)
    except OSError as e:
        raise ReportError("cannot run %s: %s" % (args[0], e.strerror)) from None
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["exit status %d" % p.returncode])[-1]
        raise ReportError("%s failed: %s" % (" ".join(args), err))
    return p.stdout


def sim_json(args):
    """viommu-sim's JSON output of @args; ReportError, in one line, if it
    cannot run, fails or prints something else."""
    out = sim_text(args)
    try:
        return json.loads(out)
    except ValueError:
        raise ReportError("%s printed no JSON: is %s a viommu-sim?" % (" ".join(args), args[0])) \
            from None


def main():
    ap = argparse.ArgumentParser(description="Write the contention-simulator report "
                                 "(report.md and SVG plots) into --out.")
    ap.add_argument("--sim", required=True, help="the viommu-sim binary")
    ap.add_argument("--out", required=True,
                    help="the report's directory: new, or a report's (replaced when done)")
    ap.add_argument("--full", action="store_true", help="sweeps over 1..64 CPUs and every configuration")
    args = ap.parse_args()
    sim = Sim(args.sim)
    part = []  # the directory being written, once made
    try:
        write_report(args, sim, part)
    except (ReportError, OSError) as e:
        sim.pool.shutdown(wait=False, cancel_futures=True)  # the runs queued behind
        for d in part:
            shutil.rmtree(d, ignore_errors=True)
        if isinstance(e, OSError):
            e = "%s: %s" % (e.filename or args.out, e.strerror)
        sys.exit("make-report: %s" % e)


def is_report(name):
    return name == "report.md" or name.endswith(".svg")


def write_report(args, sim, part):
    """Everything goes to a new directory beside OUT (appended to @part),
    which replaces OUT once whole.  An OUT that holds anything but a
    report is refused, before any run."""
    final = os.path.realpath(args.out)  # a link to the report's directory stays one
    if os.path.exists(final):
        if not os.path.isdir(final):
            raise ReportError("--out %s: not a directory" % args.out)
        other = sorted(n for n in os.listdir(final) if not is_report(n))
        if other:
            raise ReportError("--out %s holds more than a report (%s): give a new directory "
                              "or a report's" % (args.out, ", ".join(other[:3])))
    cost = sim_json([args.sim, "--cost-model"])
    cost_text = json.dumps(cost, separators=(",", ":"))
    parent, base = os.path.split(final)
    os.makedirs(parent, exist_ok=True)
    args.out = tempfile.mkdtemp(prefix=base + ".part-", dir=parent)
    part.append(args.out)
    md = ["# viommu-lab contention simulator: reproduced figures\n",
          "Every figure comes from `viommu-sim` running the case files in `cases/` with the one cost "
          "model below (docs/cost-model.rst); the published figures and their quotes are "
          "`cases/published.json`; why some are not reproduced: docs/simulation.rst.\n",
          f"Cost model (ns): `{cost_text}`\n"]
    # the slowest configurations run only with --full (the scored ones run below)
    skip = set() if args.full else {("cx4-64k-32bit-exhausted", c) for c in
                                    ("linux-5.0", "linux-6.7-forcedac", "linux-6.7-sac", "viommu-lab")}
    # queue every configuration's run, and the twice-the-window runs of the
    # scored ones, the long CX4 ones first, before scoring asks for them
    pub = case_file("published")
    doubled = {(f["case"], c) for f in pub["figures"] if f["kind"] in ("point", "check")
               and f["case"] not in FIXED_WINDOW
               for c in (f["configuration"], f.get("baseline_configuration")) if c}
    cx4_first = lambda cc: cc[0] != "cx4-64k-32bit-exhausted"  # noqa: E731
    for case, c in sorted(case_configs(sim, skip), key=cx4_first):
        sim.prefetch(case, c)
        if (case, c) in doubled:
            sim.prefetch(case, c, *doubled_window(case, c))
    scoring(sim, cost, md)
    configurations(sim, md, skip)
    sweeps(sim, args.out, [1, 2, 4, 8, 16, 32, 64] if args.full else [1, 4, 16], md)
    real_threads(sim, md)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    os.chmod(args.out, 0o755)  # mkdtemp's is 0700
    if os.path.exists(final):  # set aside until the new one is in place
        old = tempfile.mkdtemp(prefix=base + ".old-", dir=parent)
        kept = os.path.join(old, base)
        os.replace(final, kept)
        try:
            os.replace(args.out, final)
        except OSError:
            os.replace(kept, final)
            os.rmdir(old)
            raise
        shutil.rmtree(old)
    else:
        os.replace(args.out, final)
    print(f"make-report: wrote {os.path.join(final, 'report.md')} ({len(sim.cache)} runs)")


if __name__ == "__main__":
    main()
