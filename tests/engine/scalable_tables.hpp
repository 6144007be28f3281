// SPDX-License-Identifier: GPL-2.0-or-later
// Scalable-mode tables for engine tests, built in a FakeHost's RAM as a
// guest driver lays them out: scalable-mode root and context entries, the
// PASID directory and PASID tables, and first-stage (x86-64 format) page
// tables.
#pragma once

#include <array>
#include <cstdint>

#include "fake_host.hpp"
#include "pasid_entries.hpp"

namespace vtdtest {

// First-stage entry flags.
constexpr uint64_t FS_P = 1, FS_RW = 2, FS_US = 4, FS_A = 1 << 5, FS_D = 1 << 6, FS_PS = 1 << 7,
                   FS_EA = 1 << 10;

inline VtdConfig scalable_config()
{
    VtdConfig c = FakeHost::default_config();
    c.scalable_mode = true;
    c.first_stage = true;
    c.second_stage = true;
    c.fs1gp = true;
    c.pasid_bits = 20;
    return c;
}

// The PASID-entry builders are PasidEntries' (pasid_entries.hpp), named
// here as ScalableTables::first_stage() and so on.
struct ScalableTables : PasidEntries {
    FakeHost &h;
    uint64_t root = 0;

    explicit ScalableTables(FakeHost &host) : h(host) { root = h.alloc_page(); }

    // The 32-byte context entry of `sid` (allocating its context table).
    uint64_t context_entry(uint16_t sid)
    {
        const unsigned devfn = sid & 0xff;
        const uint64_t re = root + (sid >> 8) * 16 + (devfn >= 128 ? 8 : 0);
        uint64_t half = h.get64(re);
        if (!(half & 1)) {
            half = h.alloc_page() | 1;
            h.put64(re, half);
        }
        return (half & ~0xfffull) + (devfn % 128) * 32;
    }
    // A context entry with a PASID directory of 2^(pdts + 7) entries
    // (allocated here when `dir` is 0); returns the directory.
    uint64_t set_context(uint16_t sid, uint64_t dir = 0, unsigned pdts = 0, uint32_t rid_pasid = 0,
                         bool paside = true, bool fpd = false, uint64_t extra_lo = 0,
                         uint64_t extra_hi = 0)
    {
        if (!dir) {
            dir = h.alloc_page();
            for (unsigned p = 1; p < (1u << pdts) / 4; p++)
                h.alloc_page();  // directories above 512 entries span pages
        }
        const uint64_t ce = context_entry(sid);
        h.put64(ce, dir | uint64_t{pdts} << 9 | (paside ? 8 : 0) | (fpd ? 2 : 0) | 1 | extra_lo);
        h.put64(ce + 8, rid_pasid | extra_hi);
        h.put64(ce + 16, 0);
        h.put64(ce + 24, 0);
        return dir;
    }
    // Address of the 64-byte PASID-table entry of `pasid` (allocating the
    // directory entry's table).
    uint64_t pasid_entry(uint64_t dir, uint32_t pasid)
    {
        const uint64_t de = dir + (pasid >> 6) * 8;
        uint64_t v = h.get64(de);
        if (!(v & 1)) {
            v = h.alloc_page() | 1;
            h.put64(de, v);
        }
        return (v & ~0xfffull) + (pasid & 63) * 64;
    }
    void set_pasid(uint64_t dir, uint32_t pasid, const std::array<uint64_t, 8> &w)
    {
        const uint64_t pe = pasid_entry(dir, pasid);
        for (unsigned i = 0; i < 8; i++)
            h.put64(pe + i * 8, w[i]);
    }
    // Map `iova` -> `phys` in the first-stage table at `top` (`levels` 4 or
    // 5) with a leaf at `leaf_level` carrying `flags` (P added); the tables
    // above get P, R/W and U/S.
    void map_fs(uint64_t top, uint64_t iova, uint64_t phys, uint64_t flags, unsigned leaf_level = 1,
                unsigned levels = 4)
    {
        uint64_t table = top;
        for (unsigned level = levels; level > leaf_level; level--) {
            const uint64_t pa = table + ((iova >> (12 + 9 * (level - 1))) & 511) * 8;
            uint64_t pte = h.get64(pa);
            if (!(pte & FS_P)) {
                pte = h.alloc_page() | FS_P | FS_RW | FS_US;
                h.put64(pa, pte);
            }
            table = pte & 0x000ffffffffff000ull;
        }
        h.put64(fs_pte(top, iova, leaf_level, levels),
                phys | flags | FS_P | (leaf_level > 1 ? FS_PS : 0));
    }
    // Address of the first-stage entry for `iova` at `level`.
    uint64_t fs_pte(uint64_t top, uint64_t iova, unsigned level, unsigned levels = 4)
    {
        uint64_t table = top;
        for (unsigned l = levels; l > level; l--)
            table =
                h.get64(table + ((iova >> (12 + 9 * (l - 1))) & 511) * 8) & 0x000ffffffffff000ull;
        return table + ((iova >> (12 + 9 * (level - 1))) & 511) * 8;
    }

    void enable()
    {
        h.w64(RTADDR, root | 1u << 10);
        h.w32(GCMD, h.gcmd_shadow | SRTP);
        h.gcmd_shadow |= TE;
        h.w32(GCMD, h.gcmd_shadow);
    }
    // The global context-cache and IOTLB invalidations software issues
    // after changing entries: queued, as scalable mode has no
    // register-based invalidation (the queue is enabled here if it is not).
    void invalidate_all()
    {
        if (!(h.gcmd_shadow & QIE))
            h.enable_qi(0, true);
        h.submit(FakeHost::cc_desc(1), 0);
        h.submit(FakeHost::iotlb_desc(1), 0);
    }
};

}  // namespace vtdtest
