# SPDX-License-Identifier: GPL-2.0-or-later
"""Linux ftrace text (the tracefs 'trace' file, `trace-cmd report`,
`perf script`) of the iommu and intel_iommu tracepoints and of the kprobes
in docs/trace-format.rst's recipe, converted to a viommu-lab trace.

Events understood (by name, with or without their system prefix):
  map, unmap            iommu:map / iommu:unmap (Linux 6.1 include/trace/
                        events/iommu.h): iova, paddr, size
  qi_submit             intel_iommu:qi_submit: one descriptor queued
                        (inv_wait -> wait, the others -> inv; 6.1 traces
                        the caller's descriptors only, not the wait
                        descriptor qi_submit_sync appends)
  dma_map, dma_unmap, dma_map_sg, dma_unmap_sg, fq_flush, qi_sync
                        kprobes on iommu_dma_map_page, iommu_dma_unmap_page,
                        iommu_dma_map_sg, iommu_dma_unmap_sg,
                        fq_flush_iotlb (the flush queue's flush, from its
                        timer or a full ring), qi_submit_sync (sync: submit
                        and wait); NAME_ret: the
                        return probes.  Their pairs give each map and unmap
                        its device and its duration, flushes and queued
                        invalidations theirs.
Everything else is skipped and counted.

A ring buffer that overran (ftrace's overwrite mode keeps each CPU's
newest events) leaves the CPUs' streams starting at different times: the
tracefs ``trace`` file marks where a CPU's kept events begin with
"##### CPU N buffer started ####", trace_pipe a gap with
"CPU:N [LOST M EVENTS]".  Before the last such mark some CPU's events are
missing (an unmap of an IOVA that another CPU then maps again, say), so
the conversion starts at the first event after it and counts what it left
out.
"""

import re
import sys
import tempfile

from vtrace import Event, Header, Writer

# [CPU] [flags] SECONDS.FRACTION: [system:]event: rest
_LINE = re.compile(r"\[(?P<cpu>\d{1,4})\]\s+(?:[^\s:]{1,8}\s+)?(?P<s>\d+)\.(?P<f>\d{1,9}):"
                   r"\s+(?:(?P<sys>[\w-]+):)?(?P<ev>[\w-]+):\s*(?P<rest>.*)$")
_KV = re.compile(r"(\w+)=(\S+)")
_LOSS_MARK = re.compile(r"^#{5} CPU \d+ buffer started #{4}\s*$|^CPU:\d+ \[LOST \d+ EVENTS\]\s*$")
BEFORE_LOSS = "events before the last CPU's buffer start or lost events"
_FRAMES = {"dma_map": "map", "dma_map_sg": "map", "dma_unmap": "unmap",
           "dma_unmap_sg": "unmap", "fq_flush": "flush", "qi_sync": "sync"}
DMA_ERROR = (1 << 64) - 1


class ConvertError(Exception):
    pass


def _num(v):
    v = v.strip('"')
    return int(v, 16) if v.lower().startswith("0x") else int(v)


def _dev_name(v):
    v = v.strip('"')
    v = re.sub(r"[^A-Za-z0-9:._/-]", "_", v)[:64]
    return v or None


class _Cpu:
    def __init__(self):
        self.stack = []    # open frames: [kind, ts, dev, size, events]
        self.pending = []  # events waiting for the stack to empty


class Converter:
    def __init__(self, out, name, masks=None):
        self.name = name
        self.masks = masks or {}
        self.w = Writer(out, Header(source="ftrace"))
        self.cpus = {}
        self.skipped = {}
        self.counts = {}
        self.durations = False
        self.t0 = None

    def _fail(self, lineno, what):
        raise ConvertError("%s:%d: %s" % (self.name, lineno, what))

    def _emit(self, cpu, e):
        c = self.cpus[cpu]
        if c.stack:
            c.stack[-1][4].append(e)
        else:
            c.pending.append(e)
            self._flush(cpu)

    def _flush(self, cpu):
        c = self.cpus[cpu]
        if c.stack:
            return
        for e in sorted(c.pending, key=lambda e: e.ts):
            if e.dev and e.op == "map" and e.dev in self.masks and e.mask is None:
                e.mask = self.masks[e.dev]
                if e.mask < 0xffffffff:
                    raise ConvertError("%s maps with a %d-bit DMA mask: the simulator models "
                                       "32 to 64 bits (drop its line from the masks file to "
                                       "replay it as 64-bit)" % (e.dev, e.mask.bit_length()))
            self.w.write(e)
            self.counts[e.op] = self.counts.get(e.op, 0) + 1
        c.pending = []

    def line(self, lineno, text):
        m = _LINE.search(text)
        if not m:
            return
        cpu = int(m.group("cpu"))
        frac = m.group("f")
        ts = int(m.group("s")) * 10**9 + int(frac.ljust(9, "0"))
        if self.t0 is None:
            self.t0 = ts
        if ts < self.t0:
            self._fail(lineno, "out of order: timestamp before the first event's")
        ts -= self.t0
        ev, rest = m.group("ev"), m.group("rest")
        kv = dict(_KV.findall(rest))
        c = self.cpus.setdefault(cpu, _Cpu())
        try:
            if ev in ("map", "unmap") and "iova" in kv and "size" in kv:
                size = _num(kv["size"])
                if size == 0:
                    return  # nothing mapped (a failed or empty call)
                e = Event(ts, cpu, ev, size=size, iova=_num(kv["iova"]))
                if ev == "map" and "paddr" in kv:
                    e.pa = _num(kv["paddr"])
                top = c.stack[-1] if c.stack else None
                if top and _FRAMES[top[0]] == ev:
                    e.dev = top[2]
                self._emit(cpu, e)
            elif ev == "qi_submit":
                words = rest.split()
                kind = words[0] if words else "?"
                if kind == "inv_wait":
                    e = Event(ts, cpu, "wait")
                else:
                    e = Event(ts, cpu, "inv", g=_dev_name(kind))
                    vals = re.findall(r"0x[0-9a-fA-F]+", rest)
                    if kind == "iotlb_inv" and len(vals) >= 2:
                        qw0, qw1 = int(vals[0], 16), int(vals[1], 16)
                        g = (qw0 >> 4) & 3
                        e.g = {1: "global", 2: "domain", 3: "page"}.get(g, "iotlb")
                        if g == 3:
                            e.iova = qw1 & ~0xfff
                            e.size = 4096 << (qw1 & 0x3f)
                self._emit(cpu, e)
            elif ev in _FRAMES:
                size = _num(kv["size"]) if "size" in kv else None
                c.stack.append([ev, ts, _dev_name(kv["dev"]) if "dev" in kv else None,
                                size, []])
            elif ev.endswith("_ret") and ev[:-4] in _FRAMES:
                base = ev[:-4]
                for i in range(len(c.stack) - 1, -1, -1):
                    if c.stack[i][0] == base:
                        break
                else:
                    self.skipped["%s without its entry" % ev] = \
                        self.skipped.get("%s without its entry" % ev, 0) + 1
                    return
                kind, t_in, dev, size, inner = c.stack.pop(i)
                del c.stack[i:]  # frames left open inside (a lost return)
                self.durations = True
                op = _FRAMES[base]
                mine = [e for e in inner if e.op == op]
                if op in ("map", "unmap"):
                    ret = _num(kv["ret"]) if "ret" in kv else None
                    if not mine and op == "map" and ret not in (None, 0, DMA_ERROR) and size:
                        # no iommu:map tracepoint: the returned handle and the size asked
                        mine = [Event(t_in, cpu, "map", size=size, iova=ret, dev=dev)]
                        inner.append(mine[0])
                    if base == "dma_map_sg" and len(mine) > 1:
                        # iommu_dma_map_sg() allocates one IOVA for the list and maps
                        # it a contiguous run at a time: one map over the span, as
                        # its unmap is one
                        first = min(mine, key=lambda e: e.iova)
                        merged = Event(t_in, cpu, "map", iova=first.iova, dev=first.dev,
                                       size=max(e.iova + e.size for e in mine) - first.iova)
                        merged.pa = first.pa
                        ids = {id(e) for e in mine}
                        at = next(k for k, e in enumerate(inner) if id(e) in ids)
                        inner = [e for e in inner if id(e) not in ids]
                        inner.insert(at, merged)
                        mine = [merged]
                    if mine:
                        mine[0].ts = t_in
                        mine[0].dur = ts - t_in
                        for e in mine[1:]:
                            e.ts, e.dur = t_in, 0
                        for e in mine:
                            e.dev = e.dev or dev
                else:
                    inner.append(Event(t_in, cpu, op, dur=ts - t_in))
                if c.stack:
                    c.stack[-1][4].extend(inner)
                else:
                    c.pending.extend(inner)
                    self._flush(cpu)
            else:
                self.skipped[ev] = self.skipped.get(ev, 0) + 1
        except (ValueError, KeyError) as err:
            self._fail(lineno, "%s: cannot read %s (%s)" % (ev, _shown(rest), err))

    def finish(self):
        for cpu, c in self.cpus.items():
            # frames still open at the end: their inner events as they are
            while c.stack:
                frame = c.stack.pop()
                if c.stack:
                    c.stack[-1][4].extend(frame[4])
                else:
                    c.pending.extend(frame[4])
            self._flush(cpu)
        self.w.finish()
        return self.counts, self.skipped


def _shown(s):
    return "'" + s[:40] + ("..." if len(s) > 40 else "") + "'"


def read_masks(path):
    """'DEVICE BITS' per line (scripts/trace/viommu-trace masks writes it).
    Raises ConvertError, naming @path, for a file that cannot be read (a
    missing file, a directory) or is no text."""
    masks = {}
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if "\0" in line:
                    raise ConvertError("%s:%d: not a text file (a NUL byte)" % (path, n))
                w = line.split()
                if not w or w[0].startswith("#"):
                    continue
                if len(w) != 2 or not (w[1].isascii() and w[1].isdigit()) or not 1 <= int(w[1]) <= 64:
                    raise ConvertError("%s:%d: needs 'DEVICE BITS' (bits 1..64)" % (path, n))
                masks[w[0]] = (1 << int(w[1])) - 1
    except OSError as e:
        raise ConvertError("%s: %s" % (path, e.strerror)) from None
    except UnicodeDecodeError:
        raise ConvertError("%s: not a text file (not UTF-8)" % path) from None
    return masks


def complete_from(lines):
    """The number of the last line marking a CPU's buffer start or lost
    events, 0 if none: the lines after it are complete on every CPU."""
    last = 0
    for n, line in enumerate(lines, 1):
        if line.startswith(("#####", "CPU:")) and _LOSS_MARK.match(line):
            last = n
    return last


def convert(inp, out, name, masks=None):
    try:
        seekable = inp.seekable()
    except (AttributeError, OSError):
        seekable = False
    spool = None
    if not seekable:  # a pipe: kept in a file for the two passes
        spool = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        for line in inp:
            spool.write(line)
        spool.seek(0)
        inp = spool
    try:
        start = inp.tell()
        last = complete_from(inp)
        inp.seek(start)
        conv = Converter(out, name, masks)
        for n, line in enumerate(inp, 1):
            if n > last:
                conv.line(n, line.rstrip("\n"))
            elif _LINE.search(line):
                conv.skipped[BEFORE_LOSS] = conv.skipped.get(BEFORE_LOSS, 0) + 1
        counts, skipped = conv.finish()
    finally:
        if spool:
            spool.close()
    if not counts.get("map") and not counts.get("unmap"):
        raise ConvertError("%s: no iommu map or unmap events (is events/iommu enabled?)" % name)
    return counts, skipped, conv.durations


if __name__ == "__main__":
    convert(sys.stdin, sys.stdout, "<stdin>")
