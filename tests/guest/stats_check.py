#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Judge viommu-vtd's statistics (docs/statistics.rst) after a guest boot.

  stats_check.py KIND STATS.json [GUEST.log]

KIND: dma, dma-xapic, dma-x2apic, dma-cm, dma-pt, dma-sm-first,
dma-sm-second, fault, vfio-aw57, vfio-sm-first-aw57, vhost-ats0, vhost-ats1,
hotplug, hotplug-sm or reinit.

Prints one line per check, "ok NAME - detail" or "fail NAME - detail".
dma:   translations went through page walks, invalidations arrived (through
       the invalidation queue), and no fault was recorded.
dma-xapic, dma-x2apic: dma, and the guest ran with interrupt remapping
       (eim off / on): the engine remapped interrupts and blocked none; for
       each source the guest names in GUEST.log (VIOMMU-DATA blk_bdf and
       blk_irqs, net_bdf and net_irqs, ioapic_irqs: the IO-APIC, source-id
       ff:00.0) the engine remapped at least as many interrupts as the guest
       had counted, and more than none (every interrupt the guest counts was
       one remapped request; the engine may count more, those that came
       after the guest looked or that the APIC merged); interrupt-entry-cache
       invalidations arrived through the queue and the cache was used.
dma-cm: dma-xapic, and stats_cm_maps: the unit in caching mode (config
       caching_mode true) classified page invalidations of the guest's
       domains both as following a map (pages_mapped: only a caching-mode
       guest invalidates after mapping) and as following an unmap.
dma-sm-first, dma-sm-second: dma in scalable mode, the guest mapping DMA
       with first-stage or second-stage tables: its invalidations arrived as
       PASID-based-IOTLB descriptors (first) or IOTLB descriptors and no
       PASID-based ones (second),
       and stats_sm_stage: every translation went through RID_PASID's PASID
       entry (requests without PASID, none with one) and the PGTT counters
       show that stage alone; first-stage walks happened with first-stage
       tables only.
dma-pt: pass-through default domains: stats_pt_bypass (context entries
       read, nothing walked, translated or faulted) and the checks of
       dma-xapic's interrupt remapping.
fault: at least one fault was recorded, with reason "read" (0x6).
vfio-aw57, vfio-sm-first-aw57: a user-space driver through VFIO on a
       57-bit unit (legacy, or scalable mode with first-stage tables, then
       also stats_sm_stage): stats_vfio_domain (exactly one domain both
       translated and faulted, with a page invalidation; two fault records;
       walks above 4 GiB) and stats_vfio_msi (edu's source-id, VIOMMU-DATA
       edu_bdf, had interrupts remapped).
hotplug: dma, and stats_hotplug_context: the guest removed a hot-added
       device once per round (VIOMMU-DATA hpN_read_sha256 lines in GUEST.log)
       and, each time, cleared its context entry and told the unit with a
       device-selective context-cache invalidation; the context cache missed
       for each new device.
reinit: dma, and stats_reinit: at least two global context-cache
       invalidations (each boot's driver, and the driver resuming from S3,
       sets the root table and invalidates every context; counters survive a
       reset).  For the reboot and suspend boots.
hotplug-sm: the same in scalable mode with first-stage tables (invalidations
       as for dma-sm-first), and each removal also invalidated the PASID
       cache for the device's RID_PASID entry.
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


IOAPIC_SID = 0xFF00  # the DMAR table's IO-APIC scope on q35: bus 0xff, devfn 0


def guest_data(path):
    """The guest's VIOMMU-DATA key=value lines (the last of each key)."""
    data = {}
    if not path:
        return data
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("VIOMMU-DATA: ") and "=" in line:
                    k, v = line[len("VIOMMU-DATA: "):].rstrip("\r\n").split("=", 1)
                    data[k] = v
    except OSError:
        pass
    return data


def sid_of_bdf(bdf):
    """'0000:00:03.0' -> 0x0018 (bus << 8 | device << 3 | function)."""
    try:
        _, bus, devfn = bdf.split(":")
        dev, fn = devfn.split(".")
        return int(bus, 16) << 8 | int(dev, 16) << 3 | int(fn, 16)
    except (AttributeError, ValueError):
        return None


def as_int(v):
    if isinstance(v, int):
        return v
    try:
        return int(v, 0)
    except (TypeError, ValueError):
        return None


def ir_sources(s):
    """interrupt_remapping.sources by source-id."""
    sources = {}
    for e in get(s, "interrupt_remapping.sources") or []:
        sid = as_int(e.get("sid"))
        if sid is not None:
            sources[sid] = e
    return sources


def ir_checks(s, eim, gdata, check):
    cfg_ir, cfg_eim = get(s, "config.intremap"), get(s, "config.eim")
    check("stats_ir_config", cfg_ir is True and cfg_eim is eim,
          "config.intremap %s, config.eim %s (want true, %s)"
          % (cfg_ir, cfg_eim, "true" if eim else "false"))
    ir = get(s, "interrupt_remapping") or {}
    remapped = get(ir, "remappable.remapped") or 0
    blocked = (get(ir, "remappable.blocked") or 0) + (get(ir, "compatibility.blocked") or 0)
    compat = get(ir, "compatibility.passed_through") or 0
    reasons = {k: v for k, v in (get(ir, "blocked_by_reason") or {}).items() if v}
    check("stats_ir_remapped", remapped > 0 and blocked == 0 and not reasons,
          "interrupt_remapping: requests %d, remapped %d, blocked %d%s, compatibility "
          "passed through %d, before IRES %d"
          % (get(ir, "requests") or 0, remapped, blocked,
             " %s" % reasons if reasons else "", compat,
             get(ir, "disabled_pass_through") or 0))
    sources = ir_sources(s)
    ok, parts = True, []
    for label, sid, key in (("virtio-blk", sid_of_bdf(gdata.get("blk_bdf")), "blk_irqs"),
                            ("virtio-net", sid_of_bdf(gdata.get("net_bdf")), "net_irqs"),
                            ("IO-APIC", IOAPIC_SID, "ioapic_irqs")):
        guest = as_int(gdata.get(key))
        if sid is None or guest is None:
            ok = False
            parts.append("%s: the guest reported no %s" % (label, "source" if sid is None else key))
            continue
        e = sources.get(sid, {})
        n = as_int(e.get("remapped")) or 0
        if not (n > 0 and n >= guest):
            ok = False
        parts.append("%s sid %02x:%02x.%d remapped %d (guest counted %d)"
                     % (label, sid >> 8, (sid >> 3) & 0x1F, sid & 7, n, guest))
    check("stats_ir_sources", ok, "; ".join(parts))
    desc = get(s, "queue.descriptors.interrupt_entry_cache") or 0
    inv = (get(ir, "iec.invalidations_global") or 0) + (get(ir, "iec.invalidations_index") or 0)
    hits, misses = get(ir, "iec.hits") or 0, get(ir, "iec.misses") or 0
    check("stats_ir_iec", desc > 0 and inv > 0 and hits > 0 and misses > 0,
          "%d interrupt-entry-cache descriptors (%d global, %d index invalidations); "
          "IEC hits %d, misses %d" % (desc, get(ir, "iec.invalidations_global") or 0,
                                      get(ir, "iec.invalidations_index") or 0, hits, misses))


PGTTS = ("first_stage", "second_stage", "nested", "pass_through")


def sm_checks(s, stage, check):
    """Scalable mode: requests without PASID through RID_PASID's entry, whose
    PGTT is the stage the guest picked; no other PGTT translated."""
    without = get(s, "scalable.requests_without_pasid") or 0
    with_pasid = get(s, "scalable.requests_with_pasid") or 0
    pgtt = {p: get(s, "scalable.pgtt.%s" % p) or 0 for p in PGTTS}
    fs_walks = get(s, "scalable.first_stage.walks") or 0
    fs_read = get(s, "scalable.first_stage.entries_read") or 0
    want = "%s_stage" % stage
    others = sum(v for p, v in pgtt.items() if p != want)
    ok = without > 0 and with_pasid == 0 and pgtt[want] > 0 and others == 0
    ok = ok and ((fs_walks > 0 and fs_read > 0) if stage == "first" else fs_walks == 0)
    check("stats_sm_stage", ok,
          "scalable: requests without PASID %d, with PASID %d; by PGTT %s (want %s only); "
          "first-stage walks %d reading %d entries, accessed set %d, dirty set %d; "
          "PASID cache hits %d, misses %d"
          % (without, with_pasid, " ".join("%s %d" % kv for kv in pgtt.items()), want,
             fs_walks, fs_read, get(s, "scalable.first_stage.accessed_set") or 0,
             get(s, "scalable.first_stage.dirty_set") or 0,
             get(s, "pasid_cache.hits") or 0, get(s, "pasid_cache.misses") or 0))


def main():
    kind, path = sys.argv[1], sys.argv[2]
    gdata = guest_data(sys.argv[3] if len(sys.argv) > 3 else None)
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
    if kind in ("dma", "dma-xapic", "dma-x2apic", "dma-cm", "dma-sm-first", "dma-sm-second", "hotplug",
                "hotplug-sm", "reinit"):
        req = get(s, "translate.requests") or 0
        walks = get(s, "translate.page_walks") or 0
        hits = get(s, "iotlb.hits") or 0
        check("stats_translations", req > 0 and walks > 0,
              "translate.requests %d, page_walks %d, iotlb.hits %d" % (req, walks, hits))
        waits = get(s, "queue.waits.total") or 0
        if kind in ("dma-sm-first", "hotplug-sm"):
            # 6.1 invalidates first-stage domains with P_IOTLB descriptors
            # (PASID RID_PASID), by page or the whole PASID.
            inv = sum(get(s, "invalidations.pasid_iotlb.%s" % g) or 0 for g in ("pasid", "page"))
            qi = get(s, "queue.descriptors.pasid_iotlb") or 0
            check("stats_invalidations", inv > 0 and qi > 0 and waits > 0,
                  "PASID-based-IOTLB invalidations %d (pasid %d, page %d; %d queued P_IOTLB "
                  "descriptors, %d IOTLB descriptors), %d wait descriptors"
                  % (inv, get(s, "invalidations.pasid_iotlb.pasid") or 0,
                     get(s, "invalidations.pasid_iotlb.page") or 0, qi,
                     get(s, "queue.descriptors.iotlb") or 0, waits))
        elif kind == "dma-sm-second":
            # Second-stage domains: IOTLB descriptors only (6.1 sends P_IOTLB
            # ones for first-stage domains alone).
            inv = sum(get(s, "invalidations.iotlb.%s" % g) or 0 for g in ("global", "domain", "page"))
            qi = get(s, "queue.descriptors.iotlb") or 0
            pqi = get(s, "queue.descriptors.pasid_iotlb") or 0
            check("stats_invalidations", inv > 0 and qi > 0 and pqi == 0 and waits > 0,
                  "IOTLB invalidations %d (%d queued IOTLB descriptors, %d P_IOTLB descriptors), "
                  "%d wait descriptors" % (inv, qi, pqi, waits))
        else:
            inv = sum(get(s, "invalidations.iotlb.%s" % g) or 0 for g in ("global", "domain", "page"))
            qi = get(s, "queue.descriptors.iotlb") or 0
            check("stats_invalidations", inv > 0 and qi > 0 and waits > 0,
                  "IOTLB invalidations %d (%d queued IOTLB descriptors), %d wait descriptors" % (inv, qi, waits))
        rec = get(s, "faults.recorded")
        check("stats_no_faults", rec == 0, "faults.recorded %s" % rec)
        if kind in ("dma-sm-first", "dma-sm-second"):
            sm_checks(s, kind[len("dma-sm-"):], check)
        elif kind == "reinit":
            glob = get(s, "invalidations.context.global") or 0
            check("stats_reinit", glob >= 2,
                  "%d global context-cache invalidations (want one per boot or resume, 2 at least); "
                  "translate.requests %d" % (glob, get(s, "translate.requests") or 0))
        elif kind in ("hotplug", "hotplug-sm"):
            rounds = sum(1 for k in gdata if k.startswith("hp") and k.endswith("_read_sha256"))
            dev = get(s, "invalidations.context.device") or 0
            misses = get(s, "context_cache.misses") or 0
            pc = sum(get(s, "invalidations.pasid_cache.%s" % g) or 0
                     for g in ("domain", "pasid", "global"))
            ok = rounds > 0 and dev >= rounds and misses >= rounds
            if kind == "hotplug-sm":
                ok = ok and pc >= rounds
            check("stats_hotplug_context", ok,
                  "%d hot-added disks used; context-cache invalidations: device %d, domain %d, "
                  "global %d; context-cache misses %d; PASID-cache invalidations %d"
                  % (rounds, dev, get(s, "invalidations.context.domain") or 0,
                     get(s, "invalidations.context.global") or 0, misses, pc))
        elif kind == "dma-cm":
            ir_checks(s, False, gdata, check)
            doms = s.get("domains") or []
            mapped = sum(d.get("pages_mapped") or 0 for d in doms)
            unmapped = sum(d.get("pages_unmapped") or 0 for d in doms)
            cm = get(s, "config.caching_mode")
            check("stats_cm_maps", cm is True and mapped > 0 and unmapped > 0,
                  "config.caching_mode %s; page invalidations of %d domains: %d pages after a map, "
                  "%d after an unmap" % (cm, len(doms), mapped, unmapped))
        elif kind != "dma":
            ir_checks(s, kind == "dma-x2apic", gdata, check)
    elif kind == "dma-pt":
        # Pass-through contexts: DMA bypasses translation (the glue maps
        # such a device's address space straight to memory once it has read
        # the context entry), so nothing is walked or faulted.
        req = get(s, "translate.requests") or 0
        bypass = (get(s, "translate.pass_through") or 0) + \
            (get(s, "translate.translation_disabled") or 0)
        walks = get(s, "translate.page_walks") or 0
        ctx = get(s, "translate.context_entries_read") or 0
        rec = get(s, "faults.recorded")
        check("stats_pt_bypass", req == bypass and walks == 0 and ctx > 0 and rec == 0,
              "translate.requests %d (pass-through or disabled %d), page_walks %d, context "
              "entries read %d, faults.recorded %s" % (req, bypass, walks, ctx, rec))
        ir_checks(s, False, gdata, check)
    elif kind == "fault":
        rec = get(s, "faults.recorded") or 0
        read = get(s, "faults.by_reason.read") or 0
        check("stats_fault_recorded", rec > 0 and read > 0,
              "faults.recorded %d, faults.by_reason.read %d" % (rec, read))
    elif kind in ("vfio-aw57", "vfio-sm-first-aw57"):
        # The unmanaged domain VFIO attached edu to: the only one that both
        # translated and faulted (a write to the read-only IOVA, one after
        # the unmap, two fault records); its unmap is a page-selective
        # invalidation (IOTLB, or PASID-based IOTLB with first-stage tables).
        doms = [d for d in s.get("domains") or []
                if (d.get("translations") or 0) > 0 and (d.get("faults") or 0) >= 2]
        high = get(s, "iova.walks_above_4g") or 0
        recorded = get(s, "faults.recorded") or 0
        d = doms[0] if doms else {}
        aw = get(s, "config.aw_bits")
        dom = (" (id %s: %d translations, %d faults, %d page invalidations)"
               % (d.get("id"), d.get("translations") or 0, d.get("faults") or 0,
                  d.get("page_invalidations") or 0)) if d else ""
        check("stats_vfio_domain",
              len(doms) == 1 and (d.get("page_invalidations") or 0) >= 1 and high > 0
              and recorded >= 2 and aw == 57,
              "config.aw_bits %s (want 57); %d domain(s) with translations and faults%s; "
              "walks above 4 GiB %d, fault records %d" % (aw, len(doms), dom, high, recorded))
        if kind == "vfio-sm-first-aw57":
            sm_checks(s, "first", check)
        sid = sid_of_bdf(gdata.get("edu_bdf"))
        n = as_int(ir_sources(s).get(sid, {}).get("remapped")) or 0
        check("stats_vfio_msi", sid is not None and n > 0,
              "edu (%s) remapped interrupts: %d" % (gdata.get("edu_bdf") or "no bdf reported", n))
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
