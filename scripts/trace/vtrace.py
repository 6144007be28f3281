# SPDX-License-Identifier: GPL-2.0-or-later
"""The viommu-lab DMA trace format, version 1 (docs/trace-format.rst).

The Python twin of guest/sim/trace_format.{hpp,cc}: the same line format,
the same checks, the same messages ("FILE:LINE: what").  Reader streams a
file event by event; Writer writes events as they come and closes the file
with the end record that counts them.
"""

import re

VERSION = 1
MAX_LINE = 4096
OPS = ("map", "unmap", "sync", "flush", "inv", "wait", "txn", "xlate", "idle")
KEYS = ("size", "dev", "mask", "iova", "pa", "dur", "sid", "g")
HEADER_KEYS = ("source", "side", "unit", "window")
MAX_CPU = 4095
_WORD = re.compile(r"^[A-Za-z0-9:._/-]{1,64}$")
_DEC = re.compile(r"^[0-9]{1,20}$")
_HEX = re.compile(r"^0[xX][0-9a-fA-F]{1,16}$")
U64 = (1 << 64) - 1
MAX_WINDOW = 1 << 24  # as viommu-sim's --warmup
MAX_TS = 1 << 42      # ns, 73 minutes: where viommu-sim's reader stops


class TraceError(Exception):
    """A bad trace: str() is 'FILE:LINE: what'."""


class Event:
    __slots__ = ("ts", "cpu", "op", "size", "dev", "mask", "iova", "pa",
                 "dur", "sid", "g", "line")

    def __init__(self, ts, cpu, op, size=None, dev=None, mask=None, iova=None,
                 pa=None, dur=None, sid=None, g=None, line=0):
        self.ts, self.cpu, self.op = ts, cpu, op
        self.size, self.dev, self.mask, self.iova, self.pa = size, dev, mask, iova, pa
        self.dur, self.sid, self.g, self.line = dur, sid, g, line

    def format(self):
        s = "%d %s %s" % (self.ts, "-" if self.cpu is None else self.cpu, self.op)
        if self.size is not None:
            s += " size=%d" % self.size
        if self.dev:
            s += " dev=" + self.dev
        for k in ("mask", "iova", "pa"):
            v = getattr(self, k)
            if v is not None:
                s += " %s=0x%x" % (k, v)
        if self.dur is not None:
            s += " dur=%d" % self.dur
        if self.sid is not None:
            s += " sid=0x%x" % self.sid
        if self.g:
            s += " g=" + self.g
        return s

    def __repr__(self):
        return "Event(%s)" % self.format()


class Header:
    def __init__(self, source="unknown", side="cpu", unit="", window=0):
        self.version = VERSION
        self.source, self.side, self.unit, self.window = source, side, unit, window

    def format(self):
        s = "viommu-trace %d source=%s side=%s" % (VERSION, self.source, self.side)
        if self.unit:
            s += " unit=" + self.unit
        if self.window:
            s += " window=%d" % self.window
        return s


def _shown(s):
    t = "".join(c if " " <= c < "\x7f" else "?" for c in s[:40])
    return "'" + t + ("..." if len(s) > 40 else "") + "'"


class Reader:
    """Iterates the events of a trace; raises TraceError on the first bad line.

    After the iteration ends, the whole file (end record included) was checked.
    """

    def __init__(self, f, name):
        self.f, self.name = f, name
        self.header = None
        self.lineno = 0
        self._last = {}
        self._events = 0
        self._ended = False

    def _fail(self, what):
        raise TraceError("%s:%d: %s" % (self.name, self.lineno, what))

    def _read_header(self, text):
        f = text.split()
        if not f or f[0] != "viommu-trace":
            self._fail("not a viommu-lab trace: the first line must be "
                       "'viommu-trace VERSION ...', got " + _shown(text))
        if len(f) < 2 or not _DEC.match(f[1]):
            self._fail("header: needs a version number after 'viommu-trace'")
        if int(f[1]) != VERSION:
            self._fail("format version %s is not supported (this reader knows version %d)"
                       % (f[1], VERSION))
        h = Header()
        for kv in f[2:]:
            k, eq, v = kv.partition("=")
            if not eq:
                self._fail("header field %s: needs KEY=VALUE" % _shown(kv))
            if not _WORD.match(v):
                self._fail("header %s=%s: not a word" % (k, _shown(v)))
            if k == "source":
                h.source = v
            elif k == "side":
                if v not in ("cpu", "device"):
                    self._fail("header side=%s: needs cpu or device" % _shown(v))
                h.side = v
            elif k == "unit":
                h.unit = v
            elif k == "window":
                if not _DEC.match(v) or int(v) > MAX_WINDOW:
                    self._fail("header window=%s: needs a whole number from 0 to %d (as --warmup)"
                               % (_shown(v), MAX_WINDOW))
                h.window = int(v)
            else:
                self._fail("unknown header key %s (source side unit window)" % _shown(k))
        self.header = h

    def _event(self, text):
        f = text.split()
        if len(f) < 3:
            self._fail("an event needs TIMESTAMP CPU OP, got " + _shown(text))
        if not _DEC.match(f[0]) or int(f[0]) > U64:
            self._fail("timestamp %s: needs whole nanoseconds" % _shown(f[0]))
        device = self.header.side == "device"
        if f[1] == "-":
            if not device:
                self._fail("CPU '-' (device side) in a trace of side=cpu")
            cpu = None
        else:
            if not _DEC.match(f[1]) or int(f[1]) > MAX_CPU:
                self._fail("CPU %s: needs 0..%d%s" % (_shown(f[1]), MAX_CPU,
                                                      " or '-'" if device else ""))
            cpu = int(f[1])
        op = f[2]
        if op not in OPS:
            self._fail("unknown operation %s (%s)" % (_shown(op), " ".join(OPS)))
        if device and op in ("map", "unmap"):
            self._fail("%s in a device-side trace (the device sees no map or unmap)" % op)
        if not device and op == "xlate":
            self._fail("xlate in a trace of side=cpu")
        e = Event(int(f[0]), cpu, op, line=self.lineno)
        seen = set()
        for kv in f[3:]:
            k, eq, v = kv.partition("=")
            if not eq or not k:
                self._fail("field %s: needs KEY=VALUE" % _shown(kv))
            if k not in KEYS:
                self._fail("unknown key %s (%s)" % (_shown(k), " ".join(KEYS)))
            if k in seen:
                self._fail("key %s given twice" % k)
            seen.add(k)
            if k in ("size", "dur"):
                if not _DEC.match(v) or int(v) > U64 or (k == "size" and int(v) == 0):
                    self._fail("%s=%s: needs a decimal number%s"
                               % (k, _shown(v), " above 0" if k == "size" else ""))
                setattr(e, k, int(v))
            elif k in ("dev", "g"):
                if not _WORD.match(v):
                    self._fail("%s=%s: needs a word of [A-Za-z0-9:._/-], 64 at most"
                               % (k, _shown(v)))
                setattr(e, k, v)
            elif k == "mask":  # DMA_BIT_MASK(n), n from 32 to 64, as the simulator's reader
                m = int(v, 16) if _HEX.match(v) else -1
                if not 0xffffffff <= m <= U64 or m & (m + 1):
                    self._fail("mask=%s: needs a DMA mask of 32 to 64 bits, 2^n - 1 in hex "
                               "(0xffffffff)" % _shown(v))
                e.mask = m
            else:
                if not _HEX.match(v) or (k == "sid" and int(v, 16) > 0xffff):
                    self._fail("%s=%s: %s" % (k, _shown(v), "needs a hex source-id 0x0..0xffff"
                                              if k == "sid" else "needs a hex number 0x..."))
                setattr(e, k, int(v, 16))
        if op in ("map", "unmap") and e.size is None:
            self._fail("%s without size=: every map and unmap needs its size in bytes" % op)
        if e.ts + (e.dur or 0) > MAX_TS:
            self._fail("timestamp %d%s: ends after %d ns (2^42, 73 minutes; a recording's clock "
                       "starts near 0)" % (e.ts, " + dur" if e.dur is not None else "", MAX_TS))
        last = self._last.get(cpu, 0)
        if e.ts < last:
            self._fail("out of order: timestamp %d before the previous event of %s at %d"
                       % (e.ts, "the device side" if cpu is None else "CPU %d" % cpu, last))
        self._last[cpu] = e.ts
        return e

    def __iter__(self):
        for raw in self.f:
            self.lineno += 1
            if not raw.endswith("\n"):
                # the last line without its newline: the file was cut short
                self._fail("truncated: the last line has no newline")
            text = raw[:-1]
            if len(text) > MAX_LINE:
                self._fail("line longer than %d bytes" % MAX_LINE)
            if "\0" in text:
                self._fail("NUL byte in a line")
            if "\r" in text:
                self._fail("carriage return in a line")
            if self.header is None:
                self._read_header(text)
                continue
            s = text.strip(" \t")
            if not s or s.startswith("#"):
                continue
            if self._ended:
                self._fail("record after the end record")
            if s == "end" or s.startswith("end "):
                f = s.split()
                if len(f) != 2 or not _DEC.match(f[1]):
                    self._fail("end record: needs 'end COUNT'")
                if int(f[1]) != self._events:
                    self._fail("end record counts %s events, the file has %d "
                               "(records lost or added)" % (f[1], self._events))
                self._ended = True
                continue
            e = self._event(text)
            self._events += 1
            yield e
        if self.header is None:
            self._fail("empty file: no 'viommu-trace VERSION' header")
        if not self._ended:
            self._fail("truncated: no end record after the last event (line %d)" % self.lineno)


def read(path):
    """(header, [events]) of the trace at @path; raises TraceError."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
            r = Reader(f, path)
            events = list(r)
            return r.header, events
    except OSError as e:
        raise TraceError("%s: cannot open the trace: %s" % (path, e.strerror)) from None


class Writer:
    """Writes a trace to the text file @f: the header now, finish() the end."""

    def __init__(self, f, header):
        self.f = f
        self.n = 0
        self.side = header.side
        self._last = {}
        f.write(header.format() + "\n")

    def write(self, e):
        last = self._last.get(e.cpu, 0)
        if e.ts < last:
            raise ValueError("event %r before the previous one of its CPU (%d)" % (e, last))
        self._last[e.cpu] = e.ts
        self.f.write(e.format() + "\n")
        self.n += 1

    def finish(self):
        self.f.write("end %d\n" % self.n)
        self.f.flush()
