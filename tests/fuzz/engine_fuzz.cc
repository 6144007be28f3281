// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: the viommu-vtd engine driven the way a hostile guest can.
//
// The input is a configuration byte block followed by a sequence of
// operations: 32/64-bit register reads and writes at any offset and size
// (out-of-range and misaligned ones included), writes of guest RAM (root
// and context tables, page tables, queue descriptors: all input bytes),
// translations and replay walks of arbitrary source-ids, addresses and
// permissions, queue tail bumps, reset and migration blobs.  Besides the
// sanitizers, oracles check (docs/fuzzing.rst):
//  - a translation asked twice gives the same answer twice;
//  - a successful translation is page-, 2M- or 1G-sized and aligned, grants
//    at least what was asked, and is either the identity (translation off,
//    or a pass-through context the engine read) or the address of a leaf
//    PTE the engine read from guest RAM, with no permission the PTE lacks;
//  - the engine writes guest RAM only during a register write, only the
//    4-byte status of a wait descriptor it just fetched from inside the
//    queue the guest programmed, at that descriptor's address and value;
//  - one register write fetches at most one queue's worth of descriptors;
//  - invalid register accesses read 0 and change nothing; GSTS has only
//    TES/RTPS/QIES; migration round-trips; load of a damaged blob fails
//    cleanly or leaves a consistent device.
#include <cstddef>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "fuzz_input.hpp"
#include "viommu/vtd.h"

namespace {

constexpr uint64_t PAGE = 4096;
constexpr unsigned RAM_PAGES = 32;
constexpr uint64_t RAM_SIZE = RAM_PAGES * PAGE;
constexpr uint64_t ADDR_51_12 = 0x000ffffffffff000ull;
constexpr unsigned MAX_OPS = 4096;

enum : uint32_t {
    GCMD = 0x18,
    GSTS = 0x1c,
    RTADDR = 0x20,
    CCMD = 0x28,
    FSTS = 0x34,
    FECTL = 0x38,
    IQH = 0x80,
    IQT = 0x88,
    IQA = 0x90,
    ICS = 0x9c,
    IECTL = 0xa0,
    IVA = 0x100,
    IOTLB = 0x108,
};
constexpr uint32_t TE = 1u << 31, SRTP = 1u << 30, QIE = 1u << 26;

struct Host {
    std::vector<uint8_t> ram = std::vector<uint8_t>(RAM_SIZE);
    VtdEngine *e = nullptr;
    VtdConfig cfg{};

    // What the engine read: leaf candidates (address bits 51:12 -> the
    // union of R/W bits seen with it), whether a pass-through context was
    // seen, the last 16-byte read (descriptor candidate).
    std::unordered_map<uint64_t, uint8_t> pte_seen;
    bool saw_pass_through = false;
    uint64_t clock = 0;
    uint64_t last16_gpa = UINT64_MAX, last16_lo = 0, last16_hi = 0;

    // The register write in progress, and the queue the guest programmed.
    bool in_mmio_write = false;
    uint64_t queue_base = 0, queue_entries = 0, reads16 = 0;

    int read(uint64_t gpa, void *buf, size_t len)
    {
        if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
            return -1;
        std::memcpy(buf, ram.data() + gpa, len);
        uint64_t v[2] = {0, 0};
        std::memcpy(v, buf, len < 16 ? len : 16);
        if (len == 8 && (v[0] & 3)) {
            pte_seen[v[0] & ADDR_51_12] |= v[0] & 3;
        } else if (len == 16) {
            reads16++;
            last16_gpa = gpa;
            last16_lo = v[0];
            last16_hi = v[1];
            if ((v[0] & 1) && ((v[0] >> 2) & 3) == 2)
                saw_pass_through = true;
        }
        return 0;
    }

    int write(uint64_t gpa, const void *buf, size_t len)
    {
        FUZZ_CHECK(in_mmio_write, gpa, len);
        FUZZ_CHECK(len == 4, gpa, len);
        FUZZ_CHECK(last16_gpa >= queue_base && last16_gpa - queue_base < queue_entries * 16 &&
                       (last16_gpa - queue_base) % 16 == 0,
                   last16_gpa, queue_base);
        FUZZ_CHECK((last16_lo & 0xf) == 5 && (last16_lo & 0x20), last16_lo, gpa);
        FUZZ_CHECK(gpa == (last16_hi & ~3ull), gpa, last16_hi);
        uint32_t v;
        std::memcpy(&v, buf, 4);
        FUZZ_CHECK(v == static_cast<uint32_t>(last16_lo >> 32), v, last16_lo);
        if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
            return -1;
        std::memcpy(ram.data() + gpa, buf, len);
        return 0;
    }

    static VtdHostOps ops()
    {
        VtdHostOps o{};
        o.mem_read = [](void *h, uint64_t gpa, void *buf, size_t len) {
            return static_cast<Host *>(h)->read(gpa, buf, len);
        };
        o.mem_write = [](void *h, uint64_t gpa, const void *buf, size_t len) {
            return static_cast<Host *>(h)->write(gpa, buf, len);
        };
        o.msi = [](void *, uint64_t, uint32_t) {};
        o.invalidated = [](void *, bool, uint16_t, uint64_t, uint64_t size) {
            FUZZ_CHECK(size != 0);
        };
        o.context_invalidated = [](void *, bool, uint16_t, uint16_t) {};
        o.now_ns = [](void *h) { return static_cast<Host *>(h)->clock += 3; };
        o.device_iotlb_invalidated = [](void *h, uint16_t, uint16_t, uint8_t, uint64_t first,
                                        uint64_t last) {
            FUZZ_CHECK(first <= last, first, last);
            FUZZ_CHECK(static_cast<Host *>(h)->cfg.device_iotlb);
        };
        // A hint for a page-table entry: entries are 8-byte aligned, and a
        // hint must not be taken for an access (nothing is read here).
        o.prefetch = [](void *, uint64_t gpa) { FUZZ_CHECK((gpa & 7) == 0, gpa); };
        return o;
    }

    uint64_t rd(uint64_t off, unsigned size) { return vtd_engine_mmio_read(e, off, size); }

    void wr(uint64_t off, uint64_t value, unsigned size)
    {
        uint64_t iqa = rd(IQA, 8);
        queue_base = iqa & ~0xfffull;
        queue_entries = uint64_t{1} << ((iqa & 7) + 8);
        reads16 = 0;
        last16_gpa = UINT64_MAX;
        in_mmio_write = true;
        vtd_engine_mmio_write(e, off, value, size);
        in_mmio_write = false;
        // Descriptor fetches of one write: at most the queue's size (a
        // wrap-around stops at the tail); no context entry is read here.
        FUZZ_CHECK(reads16 <= queue_entries, reads16, queue_entries);
        if (reads16) {
            uint64_t iqh = rd(IQH, 8);
            FUZZ_CHECK(iqh % 16 == 0 && iqh / 16 < queue_entries, iqh, queue_entries);
        }
        uint32_t gsts = rd(GSTS, 4);
        FUZZ_CHECK(!(gsts & ~(TE | SRTP | QIE)), gsts);
    }

    void check_leaf(const VtdTranslation &t, const char *what)
    {
        uint64_t size = t.addr_mask + 1;
        FUZZ_CHECK(size == PAGE || size == (2ull << 20) ||
                       (size == (1ull << 30) && cfg.superpage_1g),
                   t.addr_mask);
        FUZZ_CHECK(!(t.iova_base & t.addr_mask) && !(t.phys_base & t.addr_mask), t.iova_base,
                   t.phys_base);
        auto it = pte_seen.find(t.phys_base);
        if (it == pte_seen.end() || (t.perm & ~it->second))
            fuzz::fail(what, t.phys_base, t.perm);
    }

    void translate(uint16_t sid, uint64_t addr, unsigned access, bool record)
    {
        bool te_before = vtd_engine_translation_enabled(e);
        bool pt = vtd_engine_is_pass_through(e, sid);
        VtdTranslation t{};
        VtdFaultReason r = vtd_engine_translate(e, sid, addr, access, record, &t);
        // Nothing changed in between: a pass-through source-id gets the
        // identity for any address.
        if (pt)
            FUZZ_CHECK(r == VTD_FR_NONE && t.phys_base == (addr & ~(PAGE - 1)), r, addr);
        bool te_after = vtd_engine_translation_enabled(e);
        FUZZ_CHECK(r >= VTD_FR_NONE && r <= VTD_FR_CONTEXT_ENTRY_TT, r);
        // Nothing changed: asking again (from the caches, or a walk of
        // the same memory) gives the same answer.
        VtdTranslation t2{};
        VtdFaultReason r2 = vtd_engine_translate(e, sid, addr, access, false, &t2);
        FUZZ_CHECK(r2 == r, r, r2);
        if (r != VTD_FR_NONE)
            return;
        FUZZ_CHECK(t2.phys_base == t.phys_base && t2.addr_mask == t.addr_mask &&
                       t2.perm == t.perm && t2.domain_id == t.domain_id,
                   t.phys_base, t2.phys_base);
        FUZZ_CHECK(t.iova_base == (addr & ~t.addr_mask), t.iova_base, addr);
        FUZZ_CHECK(!(access & ~t.perm & VTD_PERM_RW), access, t.perm);
        FUZZ_CHECK(t.perm != VTD_PERM_NONE && t.perm <= VTD_PERM_RW, t.perm);
        bool identity =
            t.phys_base == t.iova_base && t.addr_mask == PAGE - 1 && t.perm == VTD_PERM_RW;
        if (!te_before && !te_after) {
            FUZZ_CHECK(identity, t.phys_base, addr);
            return;
        }
        if (identity && saw_pass_through && cfg.pass_through)
            return;
        check_leaf(t, "translation not backed by a PTE the engine read");
    }

    struct WalkCtx {
        Host *h;
        uint64_t start, end, leaves;
    };
    void walk(uint16_t sid, uint64_t start, uint64_t end)
    {
        WalkCtx c{this, start, end, 0};
        int r = vtd_engine_walk(
            e, sid, start, end,
            [](void *p, const VtdTranslation *t) {
                auto *c = static_cast<WalkCtx *>(p);
                c->leaves++;
                FUZZ_CHECK(t->iova_base < c->end && t->iova_base + t->addr_mask >= c->start,
                           t->iova_base, c->start);
                FUZZ_CHECK(t->perm != VTD_PERM_NONE && t->perm <= VTD_PERM_RW, t->perm);
                c->h->check_leaf(*t, "replayed leaf not backed by a PTE the engine read");
            },
            &c);
        FUZZ_CHECK(r >= 0 && r <= VTD_FR_CONTEXT_ENTRY_TT, r);
    }

    void migrate(fuzz::Input &in)
    {
        size_t len = 0;
        uint8_t *blob = vtd_engine_save(e, &len);
        FUZZ_CHECK(blob && len > 0);
        unsigned flips = in.u8() % 4;
        if (!flips) {
            FUZZ_CHECK(vtd_engine_load(e, blob, len) == 0);
            size_t len2 = 0;
            uint8_t *again = vtd_engine_save(e, &len2);
            FUZZ_CHECK(len2 == len && !std::memcmp(again, blob, len), len, len2);
            free(again);
        } else {
            for (unsigned i = 0; i < flips; i++) {
                size_t at = in.u16() % len;
                blob[at] ^= in.u8() | 1;
            }
            size_t cut = in.flag() ? in.u8() % len : len;
            int r = vtd_engine_load(e, blob, cut);
            FUZZ_CHECK(r == 0 || r == -1, r);
            uint64_t iqh = rd(IQH, 8);
            FUZZ_CHECK(iqh % 16 == 0 && iqh <= 0x7fff0, iqh);
        }
        free(blob);
    }

    // An address inside guest RAM (page and 8-byte aligned offset), or,
    // rarely, any 64-bit value.
    static uint64_t gpa(fuzz::Input &in)
    {
        uint8_t b = in.u8();
        if (b == 0xff)
            return in.u64();
        return (b % RAM_PAGES) * PAGE + (in.u16() & 0xff8);
    }
    // A table pointer with low flag bits from the input.
    static uint64_t pointer(fuzz::Input &in)
    {
        uint8_t b = in.u8();
        uint64_t v = (b % RAM_PAGES) * PAGE | (in.u16() & 0xfff);
        if (b & 0x80)
            v |= uint64_t{in.u16()} << 48;  // high flag/reserved bits
        return v;
    }
    void put64(uint64_t a, uint64_t v)
    {
        if (a <= RAM_SIZE - 8)
            std::memcpy(ram.data() + a, &v, 8);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz::Input in(data, size);
    Host h;
    uint8_t c0 = in.u8(), c1 = in.u8();
    vtd_config_default(&h.cfg);
    h.cfg.aw_bits = (c0 & 3) == 0 ? 39 : (c0 & 3) == 1 ? 48 : (c0 & 3) == 2 ? 57 : 48;
    h.cfg.pass_through = c0 & 4;
    h.cfg.caching_mode = c0 & 8;
    h.cfg.device_iotlb = c0 & 16;
    h.cfg.superpage_1g = c0 & 32;
    // The default IOTLB (131072 entries) costs more to create than most
    // inputs take to run: small ones (eviction paths) or 1024.
    h.cfg.iotlb_entries = (c0 & 64) ? 1 + c1 % 64 : 1024;
    h.cfg.context_entries = (c0 & 128) ? 1 + (c1 >> 4) : 0;
    h.cfg.fault_records = c1 & 1 ? in.u8() : 0;
    VtdHostOps ops = Host::ops();
    h.e = vtd_engine_new(&h.cfg, &ops, &h, nullptr, 0);
    if (!h.e)
        return 0;

    uint64_t q_base = 0, q_tail = 0;
    unsigned q_qs = 0;
    uint32_t gcmd = 0;
    for (unsigned op = 0; op < MAX_OPS && !in.empty(); op++) {
        switch (in.u8() % 20) {
        case 0: {  // any access, any size: invalid ones read 0 and do nothing
            uint64_t off = in.flag() ? in.u64() : in.u16() & 0x1fff;
            unsigned size = in.u8() % 9;
            uint64_t v = in.u64();
            bool valid = (size == 4 || size == 8) && off < 0x1000 && off % size == 0;
            if (!valid) {
                FUZZ_CHECK(h.rd(off, size) == 0, off, size);
                uint64_t before[0x300 / 8];
                for (unsigned i = 0; i < 0x300 / 8; i++)
                    before[i] = h.rd(i * 8, 8);
                h.wr(off, v, size);
                for (unsigned i = 0; i < 0x300 / 8; i++)
                    FUZZ_CHECK(h.rd(i * 8, 8) == before[i], off, i * 8);
            } else {
                h.wr(off, v, size);
            }
            break;
        }
        case 1:
        case 2: {
            uint64_t off = in.u16() & 0xffc;
            uint64_t v = in.u64();
            if (in.flag())
                h.wr(off & ~7ull, v, 8);
            else
                h.wr(off, v, 4);
            break;
        }
        case 3: {
            uint64_t off = in.u16() & 0xffc;
            h.rd(off, in.flag() ? 8 : 4);
            break;
        }
        case 4: {  // raw bytes into guest RAM
            uint64_t a = h.gpa(in) % RAM_SIZE;
            size_t n = 1 + in.u8() % 64;
            const uint8_t *p = in.bytes(n);
            if (n > RAM_SIZE - a)
                n = RAM_SIZE - a;
            std::memcpy(h.ram.data() + a, p, n);
            break;
        }
        case 5: {  // a table entry: pointer into RAM with flag bits
            uint64_t a = h.gpa(in);
            h.put64(a, h.pointer(in));
            break;
        }
        case 6: {  // a context entry's high half: AW, DID, junk
            uint64_t a = h.gpa(in) | 8;
            uint64_t v = in.u8() & 7;
            v |= uint64_t{in.u16()} << 8;
            if (in.flag())
                v |= in.u64();
            h.put64(a, v);
            break;
        }
        case 7: {  // root table pointer, latch it, translation on/off
            h.wr(RTADDR, h.pointer(in) & ~0xfffull, 8);
            uint8_t b = in.u8();
            gcmd = (b & 1) ? gcmd | TE : gcmd & ~TE;
            h.wr(GCMD, gcmd | SRTP, 4);
            h.wr(GCMD, gcmd, 4);
            break;
        }
        case 8: {  // program and enable the queue
            q_base = h.gpa(in) & ~0xfffull;
            q_qs = in.u8() % 8;
            q_tail = 0;
            h.wr(IQT, 0, 8);
            h.wr(IQA, q_base | q_qs | (in.flag() ? 0x800 : 0), 8);
            gcmd |= QIE;
            h.wr(GCMD, gcmd, 4);
            break;
        }
        case 9: {  // one descriptor at the tail, then bump it
            uint64_t lo = in.u64(), hi = in.u64();
            uint8_t how = in.u8();
            if (how & 1)
                lo &= 0xffff'ffff'0000'00f7ull;
            if (how & 2)
                hi = (hi & ~0xfffull) % RAM_SIZE | (hi & 0xffc);
            if (how & 4)
                lo = 5 | (lo & 0x70) | (lo & 0xffff'ffff'0000'0000ull);
            uint64_t n = uint64_t{256} << q_qs;
            h.put64(q_base + q_tail * 16, lo);
            h.put64(q_base + q_tail * 16 + 8, hi);
            q_tail = (q_tail + 1) % n;
            if (!(how & 8))
                h.wr(IQT, q_tail << 4, 4);
            break;
        }
        case 10:  // raw tail bump (wraps, out of range)
            q_tail = in.u16() & 0x7fff;
            if (in.flag())
                h.wr(IQT, q_tail << 4, 8);
            else
                h.wr(IQT, q_tail << 4, 4);
            break;
        case 11:
            h.wr(FSTS, in.u8(), 4);
            break;  // clear IQE etc.: the queue resumes
        case 12:
        case 13:
        case 14: {
            uint16_t sid = in.flag() ? in.u16() : in.u8();
            uint64_t addr;
            if (in.flag()) {
                addr = in.u64();
            } else {
                addr = uint64_t{in.u16()} << 12;
                addr |= in.u16() & 0xfff;
            }
            unsigned access = in.u8() % 4;
            h.translate(sid, addr, access, in.flag());
            break;
        }
        case 15: {
            uint16_t sid = in.flag() ? in.u16() : in.u8();
            uint64_t start = in.flag() ? in.u64() : uint64_t{in.u16()} << 12;
            uint64_t end = in.flag() ? in.u64() : start + (uint64_t{in.u16()} << 12);
            h.walk(sid, start, end);
            break;
        }
        case 16:  // register-based invalidation
            h.wr(IVA, in.u64(), 8);
            if (in.flag())
                h.wr(CCMD, in.u64() | 1ull << 63, 8);
            else
                h.wr(IOTLB, in.u64() | 1ull << 63, 8);
            break;
        case 17:
            h.migrate(in);
            break;
        case 18:
            switch (in.u8()) {
            case 0x5a:
                vtd_engine_reset(h.e);
                gcmd = 0;
                break;
            case 0x5b:
                vtd_engine_stats_reset(h.e);
                break;
            case 0x5c:
                vtd_engine_count_notify(h.e, VTD_NOTIFY_UNMAP, 1);
                break;
            }
            break;
        case 19: {
            char *s = vtd_engine_stats_json(h.e);
            FUZZ_CHECK(s && s[0] == '{' && std::strrchr(s, '}'));
            free(s);
            uint32_t reg = in.flag() ? ICS : in.flag() ? IECTL : FECTL;
            h.wr(reg, in.u32(), 4);
            break;
        }
        }
    }
    vtd_engine_free(h.e);
    return 0;
}
