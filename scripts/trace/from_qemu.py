# SPDX-License-Identifier: GPL-2.0-or-later
"""viommu-vtd's own view, from QEMU's `-trace 'viommu_vtd_*'` log output
(hw/viommu/trace-events), converted to a device-side viommu-lab trace.

The device sees no map or unmap: what it sees is the first translation of
an IOVA after the IOTLB lost it (an IOTLB miss and its page walk: xlate),
the invalidations the guest queued (inv, by granularity) and the wait
descriptors (wait).  Each event carries the requester's source-id (sid)
where the device knows it.  Lines look like

    1234@1700000000.123456:viommu_vtd_page_walk sid 0x0018 domain 1 ...
    viommu_vtd_page_walk sid 0x0018 domain 1 ...        (no -msg timestamp=on)

Without timestamps the events are numbered in order (1 ns apart): counts
and order hold, times do not.
"""

import re
import sys

from vtrace import Event, Header, Writer

_LINE = re.compile(r"^(?:(?P<pid>\d+)@(?P<s>\d+)\.(?P<us>\d{6}):)?viommu_vtd_(?P<ev>\w+)\s?(?P<rest>.*)$")
_WALK = re.compile(r"sid 0x(?P<sid>[0-9a-f]+) domain (?P<did>\d+) iova 0x(?P<iova>[0-9a-f]+) "
                   r"from level -?\d+, \d+ levels read, leaf level (?P<leaf>-?\d+) "
                   r"fault 0x(?P<fault>[0-9a-f]+) -> 0x(?P<pa>[0-9a-f]+)")
_IOTLB = re.compile(r"(?P<src>\w+) (?P<g>[\w-]+) domain (?P<did>\d+) addr 0x(?P<addr>[0-9a-f]+) "
                    r"am (?P<am>\d+)")
_CC = re.compile(r"(?P<src>\w+) (?P<g>[\w-]+) domain (?P<did>\d+) sid 0x(?P<sid>[0-9a-f]+)")
_DIOTLB = re.compile(r"sid 0x(?P<sid>[0-9a-f]+) pfsid 0x[0-9a-f]+ mip \d+ "
                     r"\[0x(?P<first>[0-9a-f]+), 0x(?P<last>[0-9a-f]+)\]")


class ConvertError(Exception):
    pass


def convert(inp, out, name):
    w = Writer(out, Header(source="viommu-vtd", side="device"))
    counts, seq, t0, last = {}, 0, None, 0
    timed = None
    for n, raw in enumerate(inp, 1):
        m = _LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        ev, rest = m.group("ev"), m.group("rest")
        if m.group("s") is not None:
            ts = int(m.group("s")) * 10**9 + int(m.group("us")) * 1000
            if t0 is None:
                t0 = ts
            # QEMU's threads log in their own order: hold time to the
            # latest seen, so the device side stays in order
            ts = max(ts - t0, last) if ts >= t0 else last
            timed = True
        else:
            seq += 1
            ts = seq
            timed = timed or False
        e = None
        if ev == "page_walk":
            g = _WALK.match(rest)
            if not g:
                raise ConvertError("%s:%d: viommu_vtd_page_walk: cannot read '%s'"
                                   % (name, n, rest[:60]))
            if int(g.group("fault"), 16):
                continue  # a fault, not a translation
            leaf = int(g.group("leaf"))
            size = 4096 << (9 * (leaf - 1)) if 1 <= leaf <= 3 else 4096
            e = Event(ts, None, "xlate", size=size, iova=int(g.group("iova"), 16),
                      pa=int(g.group("pa"), 16), sid=int(g.group("sid"), 16))
        elif ev == "iotlb_inv":
            g = _IOTLB.match(rest)
            if not g:
                raise ConvertError("%s:%d: viommu_vtd_iotlb_inv: cannot read '%s'"
                                   % (name, n, rest[:60]))
            e = Event(ts, None, "inv", g=g.group("g"))
            if g.group("g") == "page":
                e.iova = int(g.group("addr"), 16)
                e.size = 4096 << int(g.group("am"))
        elif ev == "cc_inv":
            g = _CC.match(rest)
            if not g:
                raise ConvertError("%s:%d: viommu_vtd_cc_inv: cannot read '%s'"
                                   % (name, n, rest[:60]))
            e = Event(ts, None, "inv", g="context-" + g.group("g"))
            if g.group("g") == "device":
                e.sid = int(g.group("sid"), 16)
        elif ev == "device_iotlb_invalidated":
            g = _DIOTLB.match(rest)
            if not g:
                raise ConvertError("%s:%d: viommu_vtd_device_iotlb_invalidated: cannot read "
                                   "'%s'" % (name, n, rest[:60]))
            first, lastb = int(g.group("first"), 16), int(g.group("last"), 16)
            e = Event(ts, None, "inv", g="device-iotlb", sid=int(g.group("sid"), 16),
                      iova=first, size=lastb - first + 1 if lastb >= first else None)
        elif ev == "qi_wait":
            e = Event(ts, None, "wait")
        if e is None:
            continue
        last = ts
        w.write(e)
        counts[e.op] = counts.get(e.op, 0) + 1
    w.finish()
    if not counts:
        raise ConvertError("%s: no viommu_vtd_page_walk, _iotlb_inv, _cc_inv, "
                           "_device_iotlb_invalidated or _qi_wait lines (was QEMU run with "
                           "-trace 'viommu_vtd_*'?)" % name)
    return counts, bool(timed)


if __name__ == "__main__":
    convert(sys.stdin, sys.stdout, "<stdin>")
