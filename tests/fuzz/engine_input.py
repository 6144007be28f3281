#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write engine-fuzz inputs from a readable list of operations.

The byte format is the one tests/fuzz/engine_fuzz.cc decodes (docs/fuzzing.rst):
two configuration bytes, then operations, each an opcode byte (the switch
value modulo 20) and its operands, little-endian.

    engine_input.py stale-pde OUT_FILE    the paging-structure case below
    engine_input.py stats OUT_FILE        statistics reset, notify count, JSON
"""
import struct
import sys


class Input:
    def __init__(self, c0, c1):
        self.b = bytearray([c0, c1])

    def u8(self, v):
        self.b += struct.pack('<B', v)

    def u16(self, v):
        self.b += struct.pack('<H', v)

    def u64(self, v):
        self.b += struct.pack('<Q', v)

    def ram(self, gpa, value):
        """op 4: eight raw bytes at gpa (page < 32, 8-byte aligned offset)."""
        self.u8(4)
        self.u8(gpa >> 12)
        self.u16(gpa & 0xff8)
        self.u8(7)  # 1 + 7 bytes
        self.u64(value)

    def root_table(self, page, te):
        """op 7: RTADDR, SRTP, then TE on or off."""
        self.u8(7)
        self.u8(page)
        self.u16(0)
        self.u8(1 if te else 0)

    def queue(self, page):
        """op 8: 256-entry queue at page, 128-bit descriptors, QIE."""
        self.u8(8)
        self.u8(page)
        self.u16(0)
        self.u8(0)  # QS 0
        self.u8(0)  # DW 0

    def descriptor(self, lo, hi):
        """op 9: one descriptor at the tail, tail bumped."""
        self.u8(9)
        self.u64(lo)
        self.u64(hi)
        self.u8(0)

    def translate(self, sid, addr, access=1):
        """op 12: translate sid (< 256) at addr (below 2^28)."""
        self.u8(12)
        self.u8(0)
        self.u8(sid)
        self.u8(0)
        self.u16(addr >> 12)
        self.u16(addr & 0xfff)
        self.u8(access)
        self.u8(0)


def stale_pde():
    """A 4-level domain maps A=0x0, B1=0x200000 and B2=0x201000, all under
    one level-3 entry; A and B1 are translated (never B2).  The level-3
    entry is then pointed at a new level-2 table that maps B2 elsewhere, a
    page-selective invalidation of A with IH=0 and a wait are queued, and
    B2 is translated: a fresh walk gives the new mapping.  IH=0 drops the
    domain's cached non-leaf entries, so the engine must too."""
    sid, did = 8, 1
    root, ctx, l4, l3, l2, l1a, l1b, l2new, l1new, queue = 1, 2, 3, 4, 5, 6, 7, 8, 9, 16
    P = 0x1000
    x = Input(0x21, 0x00)  # 48-bit, 1 GiB pages, 256-entry IOTLB
    x.ram(root * P, ctx * P | 1)
    x.ram(ctx * P + (sid & 0xff) * 16, l4 * P | 1)            # present, translated
    x.ram(ctx * P + (sid & 0xff) * 16 + 8, 2 | did << 8)      # AW 2: 4 levels
    x.ram(l4 * P, l3 * P | 3)
    x.ram(l3 * P, l2 * P | 3)
    x.ram(l2 * P, l1a * P | 3)
    x.ram(l2 * P + 8, l1b * P | 3)
    x.ram(l1a * P, 0x14000 | 3)                               # A  -> 0x14000
    x.ram(l1b * P, 0x15000 | 3)                               # B1 -> 0x15000
    x.ram(l1b * P + 8, 0x16000 | 3)                           # B2 -> 0x16000
    x.ram(l2new * P, l1a * P | 3)
    x.ram(l2new * P + 8, l1new * P | 3)
    x.ram(l1new * P + 8, 0x17000 | 3)                         # B2 -> 0x17000 (new)
    x.root_table(root, te=True)
    x.queue(queue)
    x.translate(sid, 0x0)
    x.translate(sid, 0x200000)
    x.ram(l3 * P, l2new * P | 3)                              # re-point the level-3 entry
    x.descriptor(2 | 3 << 4 | did << 16, 0x0)                 # PSI: DID 1, addr A, AM 0, IH 0
    x.descriptor(5 | 1 << 5 | 0x1234 << 32, 31 * P)           # wait, status write to page 31
    x.translate(sid, 0x201000)                                # must be 0x17000
    return bytes(x.b)


def stats():
    """A translation with translation off, then the statistics calls: reset,
    a notifier count, the JSON (op 19 with a zero selector byte), reset
    again after an engine reset (op 18 0x5a)."""
    x = Input(0x01, 0x00)
    x.translate(8, 0x1000)
    for sel in (0x5b, 0x5c):
        x.u8(18)
        x.u8(sel)
    x.u8(19)
    x.u8(0)             # the JSON this time
    x.u8(0)             # FECTL ...
    x.u8(0)
    x.b += bytes(4)     # ... written with 0
    for sel in (0x5a, 0x5b):
        x.u8(18)
        x.u8(sel)
    return bytes(x.b)


CASES = {'stale-pde': stale_pde, 'stats': stats}

if __name__ == '__main__':
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit(__doc__)
    with open(sys.argv[2], 'wb') as f:
        f.write(CASES[sys.argv[1]]())
