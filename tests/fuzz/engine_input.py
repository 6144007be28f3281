#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write engine-fuzz inputs from a readable list of operations.

The byte format is the one tests/fuzz/engine_fuzz.cc decodes (docs/fuzzing.rst):
two configuration bytes, then operations, each an opcode byte (the switch
value modulo 20, or 25 in scalable-mode configurations) and its operands,
little-endian.

    engine_input.py stale-pde OUT_FILE    the paging-structure case below
    engine_input.py stats OUT_FILE        statistics reset, notify count, JSON
    engine_input.py sm-MODE OUT_FILE      scalable mode (MODE: ss, fs, nested;
                                          see scalable() below)
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

    def sm_root(self, page, te):
        """op 20: RTADDR with TTM 01b (scalable mode), SRTP, TE on or off."""
        self.u8(20)
        self.u8(page)
        self.u16(0)
        self.u8(1 if te else 0)

    def queue_dw(self, page):
        """op 8: 128 256-bit descriptors at page, QIE."""
        self.u8(8)
        self.u8(page)
        self.u16(0)
        self.u8(0)  # QS 0
        self.u8(1)  # DW 1

    def desc256(self, how, *operands):
        """op 23: a 256-bit descriptor (sm_op case 3): `how` selects the
        type; DID 0 (a u8), PASID 0, then the type's operands (u8/u16/u32
        values given as (size, value) pairs)."""
        self.u8(23)
        self.u8(how)
        self.u8(0)  # DID (how bit 7 clear: a u8)
        self.u8(0)  # PASID: flag clear
        self.u8(0)  # ... a u8
        for size, v in operands:
            self.b += v.to_bytes(size, 'little')

    def wait256(self, page, data=0x1234):
        """A wait descriptor with a status write to page."""
        self.desc256(5, (4, data), (1, page), (2, 0))

    def translate_pasid(self, sid, pasid, addr, access=1, priv=False):
        """op 24: a request with PASID (< 64) at addr (below 2^28)."""
        self.u8(24)
        self.u8(0)
        self.u8(sid)
        self.u8(access << 2 | (0x20 if priv else 0))
        self.u8(pasid)
        self.u16(addr >> 12)
        self.u16(addr & 0xfff)

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


def scalable(mode):
    """Scalable mode, 48-bit, PT, both stages, 10 PASID bits: root table
    (page 1), context table (2), PASID directory (3) and table (4) of
    source-id 8, a second-stage domain (pages 5-8) mapping guest pages
    0..31 to themselves, a first-stage table (9-12) mapping IOVA
    0x0-0x3fff to 0x14000-0x17fff.  RID_PASID is 0; PASID 0 is
    second-stage (DID 1), 1 first-stage (DID 2), 2 pass-through (DID 3),
    3 nested (DID 4: the first stage above through the second).  Each
    PASID is translated; then a leaf of the mode's tables is changed, the
    invalidations the specification asks for are queued (context-cache,
    PASID-cache and IOTLB, all global, then a wait), and the address is
    translated again: the reference walk must see the new leaf."""
    P = 0x1000
    sid = 8
    x = Input(0x05, 0x88)
    x.ram(1 * P, 2 * P | 1)                                   # root: LCTP, LP
    x.ram(2 * P + sid * 32, 3 * P | 1 | 8)                    # context: P, PASIDE, PDTS 0
    x.ram(3 * P, 4 * P | 1)                                   # PASID directory entry 0
    pe = 4 * P
    x.ram(pe + 0, 5 * P | 1 | 2 << 2 | 2 << 6)                # PASID 0: SS, AW 2 (4 levels)
    x.ram(pe + 8, 1)
    x.ram(pe + 64, 1 | 1 << 6)                                # PASID 1: FS
    x.ram(pe + 72, 2)
    x.ram(pe + 80, 9 * P | 1)                                 # FSPTPTR, SRE
    x.ram(pe + 128, 1 | 4 << 6)                               # PASID 2: pass-through
    x.ram(pe + 136, 3)
    x.ram(pe + 192, 5 * P | 1 | 2 << 2 | 3 << 6)              # PASID 3: nested
    x.ram(pe + 200, 4)
    x.ram(pe + 208, 9 * P | 1)
    x.ram(5 * P, 6 * P | 3)                                   # SS L4 -> L3 -> L2 -> L1
    x.ram(6 * P, 7 * P | 3)
    x.ram(7 * P, 8 * P | 3)
    for i in range(32):
        x.ram(8 * P + i * 8, i * P | 3)                       # guest page i -> i
    x.ram(9 * P, 10 * P | 7)                                  # FS PML4 -> PDPT -> PD -> PT
    x.ram(10 * P, 11 * P | 7)
    x.ram(11 * P, 12 * P | 7)
    for i in range(4):
        x.ram(12 * P + i * 8, (0x14 + i) * P | 7)             # 0x0-0x3fff -> 0x14000-
    x.sm_root(1, True)
    x.queue_dw(16)
    x.translate(sid, 0x3000)                                  # RID_PASID: SS, 0x3000
    x.translate_pasid(sid, 1, 0x1000, access=3)               # FS: 0x15000, A and D set
    x.translate_pasid(sid, 1, 0x2000, priv=True)              # supervisor, SRE
    x.translate_pasid(sid, 2, 0x7000)                         # pass-through
    x.translate_pasid(sid, 3, 0x2000)                         # nested: 0x16000
    x.translate_pasid(sid, 5, 0x2000)                         # PASID 5 not present
    if mode == 'ss':
        x.ram(8 * P + 3 * 8, 0x1f * P | 3)                    # guest page 3 -> 0x1f000
        addr, pasid = 0x3000, None
    elif mode == 'fs':
        x.ram(12 * P + 1 * 8, 0x1e * P | 7)                   # FS 0x1000 -> 0x1e000
        addr, pasid = 0x1000, 1
    else:
        x.ram(12 * P + 2 * 8, 0x1d * P | 7)                   # FS 0x2000 -> 0x1d000
        addr, pasid = 0x2000, 3
    x.desc256(3)                                              # context-cache global
    x.desc256(1 | 3 << 3)                                     # PASID-cache global
    x.desc256(4)                                              # IOTLB global
    x.wait256(31)
    if pasid is None:
        x.translate(sid, addr)
    else:
        x.translate_pasid(sid, pasid, addr)
    return bytes(x.b)


CASES = {'stale-pde': stale_pde, 'stats': stats,
         'sm-ss': lambda: scalable('ss'), 'sm-fs': lambda: scalable('fs'),
         'sm-nested': lambda: scalable('nested')}

if __name__ == '__main__':
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit(__doc__)
    with open(sys.argv[2], 'wb') as f:
        f.write(CASES[sys.argv[1]]())
