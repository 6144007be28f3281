#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""viommu-lab against every other variant in the contention simulator.

    tests/iova/lab-vs-kernel.py [build/standalone/guest/sim/viommu-sim] [workload...]

Prints, per contention workload and CPU count, each variant's throughput
relative to no IOMMU and viommu-lab's margin over the best other variant
(docs/iova.rst, "Evidence").  Every variant runs under the same flush
policy; the 64 KiB NIC gives each variant the best of its dma modes.
Figures, not pass/fail.
"""
import json
import subprocess
import sys

VARIANTS = ["linux-4.4", "percpu-batch", "linux-4.7", "linux-4.15", "linux-5.0",
            "linux-5.11", "linux-5.13", "linux-6.7", "viommu-lab"]
# workload, flush policy, invalidation queue, dma modes, drain (us), CPU counts,
# other parameters
LONG = ["--warmup", "1000", "--ops-per-cpu", "1000"]
CASES = [
    ("memcached", "flush-queue", "vtd", ["sac"], 0, "1,2,4,8,16,32,64", []),
    ("forwarding", "flush-queue", "vtd", ["sac"], 0, "1,2,4,8,16,32,64", []),
    ("nginx", "flush-queue", "vtd", ["sac"], 0, "4,16,64", []),
    ("nginx", "flush-queue", "vtd", ["sac"], 1000, "4,16,64", []),
    ("nvme", "strict", "smmu-lockfree", ["sac"], 0, "4,16,32", []),
    # the case's window is short against the flush queues of its three
    # drives: a CPU's 255-entry ring per domain fills once in ~750 I/Os
    ("nvme", "flush-queue", "vtd", ["sac"], 0, "4,16,32", LONG),
    ("nic64k", "flush-queue", "vtd", ["sac", "sac-once", "forcedac"], 0, "32", []),
]


# the simulator's case files (cases/*.json) of these workloads
CASE_FILES = {"memcached": "memcached-16cpu-xl710", "forwarding": "ovs-forward-64b",
              "nginx": "nginx-rbtree-regression", "nvme": "nvme-smmuv3-cmdq",
              "nic64k": "cx4-64k-32bit-exhausted"}


def run(sim, wl, variant, flush, invq, dma, drain, cpus, extra):
    args = [sim, "--json", "--case", CASE_FILES[wl], "--sockets", "1", "--allocator", variant,
            "--flush", flush, "--dma", dma, "--cpus", cpus] + extra
    args += ["--iommu", "vtd"] if invq == "vtd" else ["--iommu", "smmuv3", "--cmdq", "cmpxchg"]
    if drain:
        args += ["--rcache-drain", f"{drain}us"]
    out = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return {r["config"]["cpus"]: r["relative"] for r in (out if isinstance(out, list) else [out])}


def main():
    sim = sys.argv[1] if len(sys.argv) > 1 else "build/standalone/guest/sim/viommu-sim"
    only = set(sys.argv[2:])
    for wl, flush, invq, dmas, drain, cpus, extra in CASES:
        if only and wl not in only:
            continue
        rel = {}
        for v in VARIANTS:
            per_dma = [run(sim, wl, v, flush, invq, d, drain, cpus, extra) for d in dmas]
            rel[v] = {n: max(r[n] for r in per_dma) for n in per_dma[0]}
        ns = sorted(rel["viommu-lab"])
        print(f"== {wl}, {flush}, {invq}, dma {'/'.join(dmas)}"
              + (f", caches drained every {drain} us" if drain else "")
              + (" " + " ".join(extra) if extra else ""))
        print("%-13s" % "CPUs" + "".join("%9d" % n for n in ns))
        for v in VARIANTS:
            print("%-13s" % v + "".join("%8.2f%%" % (100 * rel[v][n]) for n in ns))
        margin = [rel["viommu-lab"][n] - max(rel[v][n] for v in VARIANTS if v != "viommu-lab")
                  for n in ns]
        print("%-13s" % "lab - best" + "".join("%+8.2f " % (100 * m) for m in margin))
        print()


if __name__ == "__main__":
    main()
