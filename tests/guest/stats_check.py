#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Judge viommu-vtd's statistics (docs/statistics.rst) after a guest boot.

  stats_check.py dma|fault|vhost-ats0|vhost-ats1 STATS.json

Prints one line per check, "ok NAME - detail" or "fail NAME - detail".
dma:   translations went through page walks, invalidations arrived (through
       the invalidation queue), and no fault was recorded.
fault: at least one fault was recorded, with reason "read" (0x6).
vhost-ats0, vhost-ats1: the vhost-user scenario without / with ATS: page
       walks for the backend's IOTLB misses, no fault, and the backend's
       IOTLB invalidated through UNMAP notifications (without ATS) or through
       device-IOTLB descriptors and DEVIOTLB_UNMAP notifications (with ATS).
"""
import json
import sys


def get(d, path):
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def main():
    kind, path = sys.argv[1], sys.argv[2]
    try:
        with open(path) as f:
            s = json.load(f)
    except (OSError, ValueError) as e:
        print("fail stats_read - cannot read the statistics document %s: %s" % (path, e))
        return 0
    checks = []

    def check(name, cond, detail):
        checks.append(("ok" if cond else "fail", name, detail))

    schema = s.get("schema")
    check("stats_schema", schema == "viommu-vtd-stats/1", "schema %r" % schema)
    if kind == "dma":
        req = get(s, "translate.requests") or 0
        walks = get(s, "translate.page_walks") or 0
        hits = get(s, "iotlb.hits") or 0
        check("stats_translations", req > 0 and walks > 0,
              "translate.requests %d, page_walks %d, iotlb.hits %d" % (req, walks, hits))
        inv = sum(get(s, "invalidations.iotlb.%s" % g) or 0 for g in ("global", "domain", "page"))
        qi = get(s, "queue.descriptors.iotlb") or 0
        waits = get(s, "queue.waits.total") or 0
        check("stats_invalidations", inv > 0 and qi > 0 and waits > 0,
              "IOTLB invalidations %d (%d queued IOTLB descriptors), %d wait descriptors" % (inv, qi, waits))
        rec = get(s, "faults.recorded")
        check("stats_no_faults", rec == 0, "faults.recorded %s" % rec)
    elif kind == "fault":
        rec = get(s, "faults.recorded") or 0
        read = get(s, "faults.by_reason.read") or 0
        check("stats_fault_recorded", rec > 0 and read > 0,
              "faults.recorded %d, faults.by_reason.read %d" % (rec, read))
    elif kind in ("vhost-ats0", "vhost-ats1"):
        ats = kind == "vhost-ats1"
        rec = get(s, "faults.recorded")
        check("stats_no_faults", rec == 0, "faults.recorded %s" % rec)
        req = get(s, "translate.requests") or 0
        walks = get(s, "translate.page_walks") or 0
        check("stats_vhost_translations", req > 0 and walks > 0,
              "translate.requests %d, page_walks %d" % (req, walks))
        unmap = get(s, "notifications.unmap") or 0
        dev = get(s, "notifications.deviotlb_unmap") or 0
        desc = get(s, "queue.descriptors.device_iotlb") or 0
        sizes = " ".join("%s %d" % (k, get(s, "device_tlb.%s" % k) or 0)
                         for k in ("page", "range", "all", "pages"))
        detail = ("notifications: unmap %d, deviotlb_unmap %d; device-IOTLB descriptors %d (%s)"
                  % (unmap, dev, desc, sizes))
        if ats:
            check("stats_vhost_notifications", dev > 0 and desc > 0, detail)
        else:
            check("stats_vhost_notifications", unmap > 0 and dev == 0 and desc == 0, detail)
    else:
        print("fail stats_kind - unknown kind %r" % kind)
        return 0
    for st, name, detail in checks:
        print("%s %s - %s" % (st, name, detail))
    return 0


if __name__ == "__main__":
    sys.exit(main())
