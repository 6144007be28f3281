// SPDX-License-Identifier: GPL-2.0-or-later
// A fake host for engine tests: guest RAM as a bounded vector, logs of the
// interrupts and invalidation notifications the engine sends, and helpers
// to build root/context/second-level tables and to drive the registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "viommu/vtd.h"

namespace vtdtest {

constexpr uint64_t PAGE = 4096;

// Register offsets as the tests see them (spec values; IRO/FRO from CAP).
enum : uint32_t {
    VER = 0x00,
    CAP = 0x08,
    ECAP = 0x10,
    GCMD = 0x18,
    GSTS = 0x1c,
    RTADDR = 0x20,
    CCMD = 0x28,
    FSTS = 0x34,
    FECTL = 0x38,
    FEDATA = 0x3c,
    FEADDR = 0x40,
    FEUADDR = 0x44,
    PMEN = 0x64,
    IQH = 0x80,
    IQT = 0x88,
    IQA = 0x90,
    ICS = 0x9c,
    IECTL = 0xa0,
    IEDATA = 0xa4,
    IEADDR = 0xa8,
    IEUADDR = 0xac,
};
constexpr uint32_t TE = 1u << 31, SRTP = 1u << 30, WBF = 1u << 27, QIE = 1u << 26, IRE = 1u << 25,
                   SIRTP = 1u << 24;

struct Msi {
    uint64_t addr;
    uint32_t data;
};
struct Inval {
    bool all;
    uint16_t did;
    uint64_t iova, size;
};
struct CtxInval {
    bool all;
    uint16_t sid, mask;
};
struct IrInval {
    bool global;
    uint16_t index;
    uint8_t mask;
};
struct PasidCacheInval {
    uint8_t granularity;  // VtdGranularity
    uint16_t did;
    uint32_t pasid;
};
struct DevTlbInval {
    uint16_t sid, pfsid;
    uint8_t mip;
    uint64_t first, last;
};

class FakeHost {
public:
    // `pasid_cache_hook`: install VtdHostOps.pasid_cache_invalidated
    // (without it the engine reports PASID-cache invalidations as context
    // invalidations of every source-id).
    explicit FakeHost(size_t ram_bytes = 8 << 20, VtdConfig cfg = default_config(),
                      bool pasid_cache_hook = true)
        : ram(ram_bytes), cfg_(cfg)
    {
        ops_.mem_read = [](void *o, uint64_t gpa, void *buf, size_t len) {
            return static_cast<FakeHost *>(o)->read(gpa, buf, len);
        };
        ops_.mem_write = [](void *o, uint64_t gpa, const void *buf, size_t len) {
            return static_cast<FakeHost *>(o)->write(gpa, buf, len);
        };
        ops_.msi = [](void *o, uint64_t addr, uint32_t data) {
            auto *h = static_cast<FakeHost *>(o);
            std::lock_guard g(h->log_lock);
            h->msis.push_back({addr, data});
        };
        ops_.invalidated = [](void *o, bool all, uint16_t did, uint64_t iova, uint64_t size) {
            auto *h = static_cast<FakeHost *>(o);
            std::lock_guard g(h->log_lock);
            h->invals.push_back({all, did, iova, size});
        };
        ops_.context_invalidated = [](void *o, bool all, uint16_t sid, uint16_t mask) {
            auto *h = static_cast<FakeHost *>(o);
            std::lock_guard g(h->log_lock);
            h->ctx_invals.push_back({all, sid, mask});
        };
        if (pasid_cache_hook)
            ops_.pasid_cache_invalidated = [](void *o, uint8_t g, uint16_t did, uint32_t pasid) {
                auto *h = static_cast<FakeHost *>(o);
                std::lock_guard guard(h->log_lock);
                h->pc_invals.push_back({g, did, pasid});
            };
        ops_.now_ns = [](void *o) { return static_cast<FakeHost *>(o)->clock += 7; };
        ops_.device_iotlb_invalidated = [](void *o, uint16_t sid, uint16_t pfsid, uint8_t mip,
                                           uint64_t first, uint64_t last) {
            auto *h = static_cast<FakeHost *>(o);
            std::lock_guard g(h->log_lock);
            h->dev_invals.push_back({sid, pfsid, mip, first, last});
        };
        ops_.interrupts_invalidated = [](void *o, bool global, uint16_t index, uint8_t mask) {
            auto *h = static_cast<FakeHost *>(o);
            std::lock_guard g(h->log_lock);
            h->ir_invals.push_back({global, index, mask});
        };
        ops_.sync = [](void *o) {
            auto *h = static_cast<FakeHost *>(o);
            std::lock_guard g(h->log_lock);
            h->syncs.push_back({h->invals.size() + h->ctx_invals.size() + h->dev_invals.size() +
                                    h->pc_invals.size() + h->ir_invals.size(),
                                h->sync_probe ? h->get32(h->sync_probe) : 0});
        };
        ops_.prefetch = [](void *o, uint64_t gpa) {
            auto *h = static_cast<FakeHost *>(o);
            std::lock_guard g(h->log_lock);
            h->prefetches.push_back(gpa);
        };
        ops_.event = [](void *o, const VtdEvent *ev) {
            auto *h = static_cast<FakeHost *>(o);
            std::lock_guard g(h->log_lock);
            if (h->record_events)
                h->events.push_back(*ev);
        };
        ops_.mem_cmpxchg64 = [](void *o, uint64_t gpa, uint64_t expected, uint64_t desired,
                                uint64_t *found) {
            auto *h = static_cast<FakeHost *>(o);
            if (h->before_cmpxchg)
                h->before_cmpxchg(gpa);
            std::lock_guard g(h->ram_lock);
            if (gpa > h->ram.size() || 8 > h->ram.size() - gpa)
                return -1;
            std::memcpy(found, h->ram.data() + gpa, 8);
            if (*found == expected)
                std::memcpy(h->ram.data() + gpa, &desired, 8);
            return 0;
        };
        char err[128] = "";
        e = vtd_engine_new(&cfg_, &ops_, this, err, sizeof(err));
        EXPECT_NE(e, nullptr) << err;
        cap = mmio64(CAP);
        ecap = mmio64(ECAP);
        frcd = ((cap >> 24) & 0x3ff) * 16;
        iva = ((ecap >> 8) & 0x3ff) * 16;
        iotlb = iva + 8;
    }
    ~FakeHost() { vtd_engine_free(e); }
    FakeHost(const FakeHost &) = delete;
    FakeHost &operator=(const FakeHost &) = delete;

    static VtdConfig default_config()
    {
        VtdConfig c;
        vtd_config_default(&c);
        return c;
    }

    // --- guest memory ---
    // Tests edit guest memory while other threads translate; the lock keeps
    // the fake's own memcpys race-free (a real guest's are racy by design).
    int read(uint64_t gpa, void *buf, size_t len)
    {
        {
            std::lock_guard g(ram_lock);
            if (gpa > ram.size() || len > ram.size() - gpa)
                return -1;
            std::memcpy(buf, ram.data() + gpa, len);
        }
        if (after_read)
            after_read(gpa, len);
        return 0;
    }
    // Called after each successful engine read, outside the RAM lock: a
    // test puts the guest's next step between the engine's read and its use.
    std::function<void(uint64_t gpa, size_t len)> after_read;
    // Called before each compare-and-swap (A/D flag updates), outside the
    // RAM lock: a test puts a guest CPU's racing write there.
    std::function<void(uint64_t gpa)> before_cmpxchg;
    int write(uint64_t gpa, const void *buf, size_t len)
    {
        std::lock_guard g(ram_lock);
        if (gpa > ram.size() || len > ram.size() - gpa)
            return -1;
        std::memcpy(ram.data() + gpa, buf, len);
        return 0;
    }
    void put64(uint64_t gpa, uint64_t v) { ASSERT_EQ(write(gpa, &v, 8), 0); }
    uint64_t get64(uint64_t gpa)
    {
        uint64_t v = 0;
        EXPECT_EQ(read(gpa, &v, 8), 0);
        return v;
    }
    uint32_t get32(uint64_t gpa)
    {
        uint32_t v = 0;
        EXPECT_EQ(read(gpa, &v, 4), 0);
        return v;
    }
    uint64_t alloc_page()
    {
        uint64_t p = next_page_;
        next_page_ += PAGE;
        EXPECT_LE(next_page_, ram.size());
        std::memset(ram.data() + p, 0, PAGE);
        return p;
    }

    // --- registers ---
    uint32_t mmio32(uint64_t off) { return vtd_engine_mmio_read(e, off, 4); }
    uint64_t mmio64(uint64_t off) { return vtd_engine_mmio_read(e, off, 8); }
    void w32(uint64_t off, uint32_t v) { vtd_engine_mmio_write(e, off, v, 4); }
    void w64(uint64_t off, uint64_t v) { vtd_engine_mmio_write(e, off, v, 8); }

    // --- tables ---
    uint64_t root = 0;
    void ensure_root()
    {
        if (!root)
            root = alloc_page();
    }
    // Context entry for `sid`; returns the context table address.
    void set_context(uint16_t sid, uint64_t slptptr, uint16_t did, unsigned levels = 4,
                     unsigned tt = 0, bool fpd = false, uint64_t extra_lo = 0,
                     uint64_t extra_hi = 0)
    {
        ensure_root();
        uint64_t re = root + (sid >> 8) * 16;
        uint64_t ctp = get64(re) & ~0xfffull;
        if (!(get64(re) & 1)) {
            ctp = alloc_page();
            put64(re, ctp | 1);
            put64(re + 8, 0);
        }
        uint64_t ce = ctp + (sid & 0xff) * 16;
        put64(ce, slptptr | (uint64_t{tt} << 2) | (fpd ? 2 : 0) | 1 | extra_lo);
        put64(ce + 8, uint64_t{did} << 8 | (levels - 2) | extra_hi);
    }
    uint64_t context_addr(uint16_t sid)
    {
        return (get64(root + (sid >> 8) * 16) & ~0xfffull) + (sid & 0xff) * 16;
    }

    // Map `iova` -> `phys` with a leaf at `leaf_level` (1: 4K, 2: 2M, 3: 1G)
    // in the `levels`-level table at `top`.
    void map(uint64_t top, unsigned levels, uint64_t iova, uint64_t phys, unsigned perm,
             unsigned leaf_level = 1)
    {
        uint64_t table = top;
        for (unsigned level = levels; level > leaf_level; level--) {
            uint64_t pte_addr = table + ((iova >> (12 + 9 * (level - 1))) & 511) * 8;
            uint64_t pte = get64(pte_addr);
            if (!(pte & 3)) {
                pte = alloc_page() | 3;
                put64(pte_addr, pte);
            }
            table = pte & 0x000ffffffffff000ull;
        }
        uint64_t pte_addr = table + ((iova >> (12 + 9 * (leaf_level - 1))) & 511) * 8;
        put64(pte_addr, phys | perm | (leaf_level > 1 ? 0x80 : 0));
    }
    // Map 4K pages [0, pages) read-write to [phys, phys + pages * 4K) in
    // the 4-level table at `top`.
    void map_run(uint64_t top, uint64_t pages, uint64_t phys)
    {
        for (uint64_t p = 0; p < pages; p++)
            map(top, 4, p * 4096, phys + p * 4096, 3);
    }
    // A 4-level domain `did` for `sid` mapping pages [0, pages) to `phys`
    // on, translation enabled; returns its top table.
    uint64_t domain_with_run(uint16_t sid, uint16_t did, uint64_t pages, uint64_t phys)
    {
        uint64_t pt = alloc_page();
        set_context(sid, pt, did, 4);
        map_run(pt, pages, phys);
        enable_translation();
        return pt;
    }
    // Address of the PTE for `iova` at `level` (tables must exist).
    uint64_t pte_addr(uint64_t top, unsigned levels, uint64_t iova, unsigned level)
    {
        uint64_t table = top;
        for (unsigned l = levels; l > level; l--)
            table = get64(table + ((iova >> (12 + 9 * (l - 1))) & 511) * 8) & 0x000ffffffffff000ull;
        return table + ((iova >> (12 + 9 * (level - 1))) & 511) * 8;
    }

    void enable_translation()
    {
        ensure_root();
        w64(RTADDR, root);
        w32(GCMD, gcmd_shadow | SRTP);
        gcmd_shadow |= TE;
        w32(GCMD, gcmd_shadow);
    }

    // --- queued invalidation ---
    uint64_t queue = 0;
    unsigned queue_qs = 0;
    uint64_t tail = 0;
    uint32_t gcmd_shadow = 0;
    bool queue_dw = false;  // 256-bit descriptors
    void enable_qi(unsigned qs = 0, bool dw = false)
    {
        if (gcmd_shadow & QIE) {  // off first: IQA must not change under a live queue
            gcmd_shadow &= ~QIE;
            w32(GCMD, gcmd_shadow);
        }
        queue_qs = qs;
        queue_dw = dw;
        queue = next_page_;
        next_page_ += PAGE << qs;
        std::memset(ram.data() + queue, 0, PAGE << qs);
        w32(IQT, 0);
        tail = 0;
        w64(IQA, queue | qs | (dw ? uint64_t{1} << 11 : 0));
        gcmd_shadow |= QIE;
        w32(GCMD, gcmd_shadow);
    }
    uint64_t queue_entries() const { return (uint64_t{256} << queue_qs) >> queue_dw; }
    unsigned desc_shift() const { return queue_dw ? 5 : 4; }
    // A descriptor; in a 256-bit queue its upper half is qw2, qw3.
    void push(uint64_t lo, uint64_t hi, uint64_t qw2 = 0, uint64_t qw3 = 0)
    {
        const uint64_t at = queue + (tail << desc_shift());
        put64(at, lo);
        put64(at + 8, hi);
        if (queue_dw) {
            put64(at + 16, qw2);
            put64(at + 24, qw3);
        }
        tail = (tail + 1) % queue_entries();
    }
    void kick() { w32(IQT, tail << desc_shift()); }
    void submit(uint64_t lo, uint64_t hi)
    {
        push(lo, hi);
        kick();
    }
    // Descriptor encodings (VT-d spec 6.5.2).
    static uint64_t cc_desc(unsigned g, uint16_t did = 0, uint16_t sid = 0, unsigned fm = 0)
    {
        return 1 | uint64_t{g} << 4 | uint64_t{did} << 16 | uint64_t{sid} << 32 |
               uint64_t{fm} << 48;
    }
    static uint64_t iotlb_desc(unsigned g, uint16_t did = 0)
    {
        return 2 | uint64_t{g} << 4 | uint64_t{did} << 16;
    }
    static uint64_t iotlb_addr(uint64_t addr, unsigned am = 0, bool ih = false)
    {
        return addr | am | (ih ? 64 : 0);
    }
    // Scalable mode (256-bit descriptors).
    static uint64_t piotlb_desc(unsigned g, uint16_t did, uint32_t pasid)
    {
        return 6 | uint64_t{g} << 4 | uint64_t{did} << 16 | uint64_t{pasid} << 32;
    }
    static uint64_t pc_desc(unsigned g, uint16_t did, uint32_t pasid)
    {
        return 7 | uint64_t{g} << 4 | uint64_t{did} << 16 | uint64_t{pasid} << 32;
    }
    static uint64_t pdtlb_desc(uint16_t sid, uint32_t pasid, uint16_t pfsid = 0, unsigned mip = 0)
    {
        return 8 | uint64_t{mip} << 4 | static_cast<uint64_t>(pfsid & 0xfu) << 12 |
               uint64_t{sid} << 16 | uint64_t{pasid} << 32 |
               static_cast<uint64_t>(pfsid >> 4) << 52;
    }
    static uint64_t wait_desc(bool sw, bool intr, bool fence, uint32_t data)
    {
        return 5 | (intr ? 16 : 0) | (sw ? 32 : 0) | (fence ? 64 : 0) | uint64_t{data} << 32;
    }

    VtdFaultReason translate(uint16_t sid, uint64_t addr, unsigned access,
                             VtdTranslation *t = nullptr, bool record = true)
    {
        VtdTranslation tmp{};
        return vtd_engine_translate(e, sid, addr, access, record, t ? t : &tmp);
    }

    std::string stats()
    {
        char *s = vtd_engine_stats_json(e);
        std::string r = s ? s : "";
        free(s);
        return r;
    }

    std::vector<uint8_t> ram;
    std::mutex ram_lock;
    std::mutex log_lock;
    std::vector<Msi> msis;
    std::vector<Inval> invals;
    std::vector<CtxInval> ctx_invals;
    std::vector<DevTlbInval> dev_invals;
    std::vector<PasidCacheInval> pc_invals;  // pasid_cache_invalidated calls, in order
    std::vector<IrInval> ir_invals;          // interrupts_invalidated calls, in order
    // sync calls: the invalidation hooks that had run by then, and the
    // word at sync_probe (a wait's status address) then
    struct Sync {
        size_t hooks_before;
        uint32_t probe;
    };
    std::vector<Sync> syncs;
    uint64_t sync_probe = 0;
    std::vector<uint64_t> prefetches;  // the engine's prefetch hints, in order
    // The engine's events, in order, while record_events is set (the hook
    // is always installed, so every test runs the event builders).
    bool record_events = false;
    std::vector<VtdEvent> events;
    uint64_t clock = 0;
    uint64_t cap = 0, ecap = 0;
    uint32_t frcd = 0, iva = 0, iotlb = 0;
    VtdEngine *e = nullptr;

private:
    VtdConfig cfg_;
    VtdHostOps ops_{};
    uint64_t next_page_ = 1 << 20;
};

// Value of counter `key` inside the JSON object that follows `section`.
inline uint64_t json_counter(const std::string &json, const std::string &section,
                             const std::string &key)
{
    size_t pos = section.empty() ? 0 : json.find("\"" + section + "\":");
    if (pos == std::string::npos)
        return UINT64_MAX;
    pos = json.find("\"" + key + "\":", pos);
    if (pos == std::string::npos)
        return UINT64_MAX;
    return std::stoull(json.substr(pos + key.size() + 3));
}

}  // namespace vtdtest
