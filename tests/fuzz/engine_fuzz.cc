// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzz target: the viommu-vtd engine driven the way a hostile guest can.
//
// The input is a configuration byte block followed by a sequence of
// operations: 32/64-bit register reads and writes at any offset and size
// (out-of-range and misaligned ones included), writes of guest RAM (root
// and context tables, page tables, queue descriptors: all input bytes),
// translations and replay walks of arbitrary source-ids, addresses and
// permissions, queue tail bumps, reset and migration states.  Besides the
// sanitizers, oracles check (docs/fuzzing.rst):
//  - a translation asked twice gives the same answer twice;
//  - a successful translation is page-, 2M- or 1G-sized and aligned, grants
//    at least what was asked, and is either the identity (translation off,
//    or a pass-through context the engine read) or the address of a leaf
//    PTE the engine read from guest RAM, with no permission the PTE lacks;
//  - reference walk: once every change to the entries a fresh walk of the
//    guest's tables reads is covered by the invalidations the VT-d
//    specification asks for (completed: register-based, or queued and
//    followed by a wait descriptor whose status write happened), the
//    translation is the one the fresh walk gives;
//  - the engine writes guest RAM only during a register write, only the
//    4-byte status of a wait descriptor it just fetched from inside the
//    queue the guest programmed, at that descriptor's address and value;
//  - one register write fetches at most one queue's worth of descriptors;
//  - invalid register accesses read 0 and change nothing; GSTS has only
//    TES/RTPS/QIES; migration state round-trips; a damaged state is
//    refused with nothing changed, or accepted and reads back as given.
//
// Speed: the host, its guest RAM and one engine per configuration live
// across inputs; each input starts with vtd_engine_reset() and zeroed RAM,
// so an input behaves the same whether it runs first or after others.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "fuzz_input.hpp"
#include "viommu/vtd.h"

namespace {

constexpr uint64_t PAGE = 4096;
constexpr unsigned RAM_PAGES = 32;
constexpr uint64_t RAM_SIZE = RAM_PAGES * PAGE;
constexpr uint64_t RAM_WORDS = RAM_SIZE / 8;
constexpr uint64_t ADDR_51_12 = 0x000ffffffffff000ull;
constexpr unsigned MAX_OPS = 4096;

enum : uint32_t {
    CAP = 0x08,
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
    IRTA = 0xb8,
    IVA = 0x100,
    IOTLB = 0x108,
};
constexpr uint32_t TE = 1u << 31, SRTP = 1u << 30, QIE = 1u << 26;
constexpr uint32_t IRE = 1u << 25, SIRTP = 1u << 24,
                   CFI = 1u << 23;  // GCMD; GSTS: IRES, IRTPS, CFIS
constexpr uint64_t IRTA_EIME = 1u << 11;
constexpr uint32_t FSTS_QUEUE_ERRORS = 0x70;  // IQE, ICE, ITE

// What a walk of the guest's tables as they are now gives (the reference
// the engine's answer is compared against), and which 8-byte words of
// guest RAM it read.
struct Reference {
    bool clean = false;  // every entry read is well-formed: the outcome is certain
    bool ok = false;     // the translation succeeds for the access asked
    bool pt = false;     // pass-through context
    bool ctx = false;    // a present context entry was reached
    bool leaf = false;   // a leaf was reached (ok, or a permission fault)
    uint64_t page = 0;   // ok: the 4 KiB frame the address translates to
    uint8_t perm = 0;
    uint16_t did = 0;
    uint64_t key = 0;         // the context's page-table root, levels and type
    uint64_t lo = 0, hi = 0;  // IOVA range of the leaf, or of the entry that is not present
    unsigned nctx = 0, nlvl = 0;
    bool sm = false;              // a scalable-mode walk (root table with TTM = 01b)
    bool fs = false;              // through first-stage tables: permissions may be fewer
    uint32_t ctx_words[16] = {};  // root, context (and PASID directory and table) entries
    uint32_t lvl_words[5] = {};
    uint8_t lvl_level[5] = {};
};

// The reference-walk oracle's model of what the engine may still have
// cached.  Time is a counter (`now`); every guest-RAM word remembers when it
// was last written.  A write the engine could have cached the old value of
// (made after the first translation since the last reset) is covered
//  - for a root or context entry: by a global context-cache invalidation
//    after it;
//  - for a level-1 leaf: by the IOTLB no longer holding any leaf that
//    contains the address and was filled before the write;
//  - for any other entry (non-leaf, or a superpage leaf that may have been
//    a non-leaf): by a flush of the domain's paging-structure caches after
//    it (global or domain-selective IOTLB invalidation, or a page-selective
//    one with IH=0 anywhere in the domain, which the specification says
//    drops the domain's non-leaf entries), and by the IOTLB holding no leaf
//    that contains the address and was filled before that flush.
// The IOTLB's possible contents are modelled as the leaf ranges the engine
// answered (or, for a failed translation, what it may have cached), tagged
// with the domain and the time; invalidations remove the ones they cover
// that were filled before them.  Queued invalidations count from when they
// were fetched, once a later wait descriptor has written its status.  When
// a domain id is seen behind two different page tables since its last
// domain flush (a guest error the specification leaves undefined), nothing
// is asserted for it.
struct Model {
    struct Leaf {
        int32_t did;  // -1: any domain
        uint64_t lo, hi, fill;
        std::vector<uint64_t> later = {};  // the later fills of the same translation, in order
    };
    struct CtxRec {
        int32_t did;  // -1: unknown context
        uint64_t key, seq;
    };
    struct Dom {
        uint16_t did;
        uint64_t dsi, psi0;
    };
    struct Inv {
        uint8_t kind;  // 1 context global, 2 IOTLB global, 3 domain, 4 page, 5 IEC global,
                       // 6 PASID cache global
        bool ih;
        uint16_t did;
        uint64_t lo, hi, seq;
    };
    static constexpr size_t MAX_LEAVES = 512, MAX_RECS = 256;

    uint64_t now = 0, first_activity = 0, srtp = 0, gcc = 0, giotlb = 0;
    // Scalable mode: when the PASID cache was last emptied (a completed
    // global PASID-cache invalidation), and whether the latched root table
    // is a scalable-mode one (RTADDR.TTM = 01b).
    uint64_t gpc = 0;
    bool root_sm = false;
    // Interrupt remapping: the table latched by the last SIRTP (unknown
    // after a damaged migration state) and when the interrupt entry cache
    // was last emptied (SIRTP, reset, a completed global IEC invalidation).
    bool ir_known = true;
    uint64_t irt_base = 0, irt_entries = 0, iec = 0;
    uint64_t root = 0;
    bool root_clean = true, root_known = true, overflow = false;
    std::vector<uint32_t> mod = std::vector<uint32_t>(RAM_WORDS);
    // Pages of guest RAM written since the last clear(): only they are
    // zeroed for the next input (instrumented loops over all of RAM were a
    // third of the harness's time).
    uint32_t dirty = 0;
    static_assert(RAM_PAGES <= 32);
    std::vector<Leaf> leaves;
    std::vector<CtxRec> recs;
    std::vector<Dom> doms;
    std::vector<Inv> pending;
    uint64_t compared = 0, translations = 0;

    void clear()
    {
        now = first_activity = srtp = gcc = giotlb = gpc = root = 0;
        root_sm = false;
        root_clean = root_known = true;
        ir_known = true;
        irt_base = irt_entries = iec = 0;
        overflow = false;
        for (uint32_t d = dirty; d; d &= d - 1)
            std::memset(mod.data() + std::countr_zero(d) * (PAGE / 8), 0,
                        PAGE / 8 * sizeof(mod[0]));
        dirty = 0;
        leaves.clear();
        recs.clear();
        doms.clear();
        pending.clear();
    }
    uint64_t tick() { return ++now; }
    void written(uint64_t gpa, size_t len)
    {
        if (!len || gpa >= RAM_SIZE)
            return;
        uint64_t last = std::min(gpa + len - 1, RAM_SIZE - 1);
        uint32_t t = static_cast<uint32_t>(tick());
        for (uint64_t w = gpa / 8; w <= last / 8; w++)
            mod[w] = t;
        for (uint64_t pg = gpa / PAGE; pg <= last / PAGE; pg++)
            dirty |= 1u << pg;
    }
    void activity()
    {
        if (!first_activity)
            first_activity = tick();
    }
    // A full flush: reset, as the device does.
    void flushed_all()
    {
        gcc = giotlb = iec = gpc = tick();
        leaves.clear();
        overflow = false;
        pending.clear();
        first_activity = 0;
    }
    Dom &dom(uint16_t did)
    {
        for (auto &d : doms)
            if (d.did == did)
                return d;
        doms.push_back({did, 0, 0});
        return doms.back();
    }
    uint64_t dflush(uint16_t did) { return std::max(giotlb, dom(did).dsi); }
    uint64_t psflush(uint16_t did) { return std::max(dflush(did), dom(did).psi0); }

    void credit(const Inv &v)
    {
        // An invalidation runs when it is fetched (the wait that completes
        // it may come later): a fill after that stays cached, and the
        // earliest such fill becomes the leaf's, so that a change after it
        // is not taken as covered.
        auto drop = [&](auto pred) {
            std::erase_if(leaves, [&](Leaf &l) {
                if (l.fill >= v.seq || !pred(l))
                    return false;
                auto next = std::lower_bound(l.later.begin(), l.later.end(), v.seq);
                if (next == l.later.end())
                    return true;
                l.fill = *next;
                l.later.erase(l.later.begin(), next + 1);
                return false;
            });
        };
        switch (v.kind) {
        case 1:
            gcc = std::max(gcc, v.seq);
            break;
        case 5:
            iec = std::max(iec, v.seq);
            break;
        case 6:
            gpc = std::max(gpc, v.seq);
            break;
        case 2:
            giotlb = std::max(giotlb, v.seq);
            drop([](const Leaf &) { return true; });
            if (leaves.empty())
                overflow = false;
            break;
        case 3:
            dom(v.did).dsi = std::max(dom(v.did).dsi, v.seq);
            drop([&](const Leaf &l) { return l.did == v.did; });
            break;
        case 4:
            if (!v.ih)
                dom(v.did).psi0 = std::max(dom(v.did).psi0, v.seq);
            drop([&](const Leaf &l) { return l.did == v.did && l.lo >= v.lo && l.hi <= v.hi; });
            break;
        }
    }
    void cached(int32_t did, uint64_t lo, uint64_t hi, uint64_t fill)
    {
        for (auto &l : leaves)
            if (l.did == did && l.lo == lo && l.hi == hi) {
                // the older fill stays: it is the one that matters until an
                // invalidation drops it
                if (fill > l.fill && (l.later.empty() || fill > l.later.back()))
                    l.later.push_back(fill);
                return;
            }
        if (leaves.size() >= MAX_LEAVES) {
            overflow = true;
            return;
        }
        leaves.push_back({did, lo, hi, fill});
    }
    void seen(int32_t did, uint64_t key, uint64_t seq)
    {
        for (auto &r : recs)
            if (r.did == did && r.key == key) {
                r.seq = seq;
                return;
            }
        if (recs.size() >= MAX_RECS)
            recs.erase(recs.begin());  // the oldest; keep a wildcard so nothing is missed
        recs.push_back({did, key, seq});
        if (recs.size() == MAX_RECS)
            recs.push_back({-1, 0, seq});
    }
    bool leaf_cached(uint16_t did, uint64_t addr, uint64_t before)
    {
        if (overflow)
            return true;
        for (auto &l : leaves)
            if ((l.did == did || l.did == -1) && l.lo <= addr && addr <= l.hi && l.fill <= before)
                return true;
        return false;
    }
    bool conflict(uint16_t did, uint64_t key)
    {
        uint64_t f = dflush(did);
        for (auto &r : recs)
            if ((r.did == -1 || (r.did == did && r.key != key)) && r.seq > f)
                return true;
        return false;
    }
    bool after_activity(uint64_t m) const { return first_activity && m >= first_activity; }
    bool context_fresh(const Reference &ref) const
    {
        if (after_activity(srtp) && gcc <= srtp)
            return false;
        for (unsigned i = 0; i < ref.nctx; i++) {
            uint64_t m = mod[ref.ctx_words[i]];
            if (after_activity(m) && gcc <= m)
                return false;
        }
        return true;
    }
    // Scalable mode: a change is covered only by the whole sequence the
    // specification's guidance asks for, each step completed after the one
    // before: a global context-cache invalidation after the change, a global
    // PASID-cache invalidation after that, a global IOTLB invalidation
    // (which drops every cached translation and paging-structure entry of
    // every PASID) after that.  Finer invalidations are not modelled here:
    // nothing is asserted until such a sequence has completed.
    bool sm_covered(const Reference &ref) const
    {
        auto fresh = [&](uint64_t m) {
            return !after_activity(m) || (gcc > m && gpc > gcc && giotlb > gpc && !overflow);
        };
        if (!fresh(srtp))
            return false;
        for (unsigned i = 0; i < ref.nctx; i++)
            if (!fresh(mod[ref.ctx_words[i]]))
                return false;
        for (unsigned i = 0; i < ref.nlvl; i++)
            if (!fresh(mod[ref.lvl_words[i]]))
                return false;
        return true;
    }
    // Whether the specification lets the engine answer anything but `ref`.
    bool covered(const Reference &ref, uint64_t addr)
    {
        if (!root_known || !ref.clean)
            return false;
        if (ref.sm) {
            if (!sm_covered(ref))
                return false;
            return !ref.ctx || ref.pt || !conflict(ref.did, ref.key);
        }
        if (!context_fresh(ref))
            return false;
        if (!ref.ctx || ref.pt)
            return true;
        if (conflict(ref.did, ref.key))
            return false;
        uint64_t psf = psflush(ref.did);
        for (unsigned i = 0; i < ref.nlvl; i++) {
            uint64_t m = mod[ref.lvl_words[i]];
            if (!after_activity(m))
                continue;
            uint64_t before = m;
            if (ref.lvl_level[i] > 1) {
                if (psf <= m)
                    return false;
                before = psf;
            }
            if (leaf_cached(ref.did, addr, before))
                return false;
        }
        return true;
    }
};

// The leaf candidates the engine read: address bits 51:12 of an entry with
// R or W set -> the union of the R/W bits seen with it.  Open addressing
// with an epoch per slot, so that clearing it for the next input costs
// nothing (a node-based map allocated on every new entry).
class SeenEntries {
public:
    void clear()
    {
        if (++epoch_ == 0) {  // wrapped: make every slot stale for real
            std::fill(slots_.begin(), slots_.end(), Slot{});
            epoch_ = 1;
        }
        used_ = 0;
    }
    void add(uint64_t addr, uint8_t perm)
    {
        if (used_ * 4 >= slots_.size() * 3)
            grow();
        Slot &s = find(addr);
        if (s.epoch != epoch_) {
            s = {addr, epoch_, 0};
            used_++;
        }
        s.perm |= perm;
    }
    // The R/W bits seen with `addr`; 0: never seen.
    uint8_t perm(uint64_t addr) const
    {
        const Slot &s = const_cast<SeenEntries *>(this)->find(addr);
        return s.epoch == epoch_ ? s.perm : 0;
    }

private:
    struct Slot {
        uint64_t addr = 0;
        uint32_t epoch = 0;
        uint8_t perm = 0;
    };
    Slot &find(uint64_t addr)
    {
        size_t mask = slots_.size() - 1;
        for (size_t i = (addr >> 12) * 0x9e3779b97f4a7c15ull >> 40 & mask;; i = (i + 1) & mask)
            if (slots_[i].epoch != epoch_ || slots_[i].addr == addr)
                return slots_[i];
    }
    void grow()
    {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        used_ = 0;
        for (const Slot &s : old)
            if (s.epoch == epoch_) {
                find(s.addr) = s;
                used_++;
            }
    }
    std::vector<Slot> slots_ = std::vector<Slot>(4096);
    uint32_t epoch_ = 1;
    size_t used_ = 0;
};

struct Host {
    std::vector<uint8_t> ram = std::vector<uint8_t>(RAM_SIZE);
    VtdEngine *e = nullptr;
    VtdConfig cfg{};
    Model m;

    // What the engine read: leaf candidates (address bits 51:12 -> the
    // union of R/W bits seen with it), whether a pass-through context was
    // seen, the last 16-byte read (descriptor candidate).
    SeenEntries pte_seen;
    bool saw_pass_through = false;
    uint64_t clock = 0;
    uint64_t last16_gpa = UINT64_MAX, last16_lo = 0, last16_hi = 0;

    // The register write in progress, and the queue the guest programmed.
    // IQA as the engine reads it back, read again only after what can
    // change it (a write that may touch IQA or any invalid one, a reset, a
    // migration state, another engine): the guest alone writes IQA.
    bool in_mmio_write = false;
    bool iqa_known = false;
    uint64_t iqa = 0;
    uint64_t queue_base = 0, queue_entries = 0, reads16 = 0;
    bool queue_dw = false;
    unsigned sagaw = 0;  // CAP.SAGAW of the engine in use
    // Invalidation callbacks during the register write in progress.
    struct Notified {
        bool global;
        uint16_t did;
        uint64_t addr, size;
    };
    std::vector<Notified> notified;
    bool context_notified_global = false;
    // First-stage A/D updates the engine made (they change guest RAM).
    uint64_t flag_updates = 0;

    void begin()
    {
        // Only what the previous input wrote (the model's dirty pages; every
        // write of guest RAM goes through Model::written).
        for (uint32_t d = m.dirty; d; d &= d - 1)
            std::memset(ram.data() + std::countr_zero(d) * PAGE, 0, PAGE);
        pte_seen.clear();
        saw_pass_through = false;
        clock = 0;
        last16_gpa = UINT64_MAX;
        last16_lo = last16_hi = 0;
        in_mmio_write = false;
        iqa_known = false;
        queue_base = queue_entries = reads16 = 0;
        m.clear();
    }

    int read(uint64_t gpa, void *buf, size_t len)
    {
        if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
            return -1;
        std::memcpy(buf, ram.data() + gpa, len);
        uint64_t v[2] = {0, 0};
        std::memcpy(v, buf, len < 16 ? len : 16);
        if (len == 8 && (v[0] & 3)) {
            pte_seen.add(v[0] & ADDR_51_12, v[0] & 3);
        } else if (len == 64) {
            // A scalable-mode PASID-table entry: PGTT pass-through.
            if ((v[0] & 1) && ((v[0] >> 6) & 7) == 4)
                saw_pass_through = true;
        } else if (len == 32 && queue_dw) {
            uint64_t w[4];
            std::memcpy(w, buf, 32);
            reads16++;
            last16_gpa = gpa;
            last16_lo = w[0];
            last16_hi = w[1];
            if (in_mmio_write && gpa >= queue_base && gpa - queue_base < queue_entries * 32 &&
                gpa % 32 == 0 && !w[2] && !w[3])
                fetched(w[0], w[1]);
        } else if (len == 16) {
            reads16++;
            last16_gpa = gpa;
            last16_lo = v[0];
            last16_hi = v[1];
            if ((v[0] & 1) && ((v[0] >> 2) & 3) == 2)
                saw_pass_through = true;
            if (in_mmio_write && !queue_dw && gpa >= queue_base &&
                gpa - queue_base < queue_entries * 16 && gpa % 16 == 0)
                fetched(v[0], v[1]);
        }
        return 0;
    }

    // A descriptor the engine fetched: a well-formed context-cache or
    // IOTLB invalidation is credited once a later wait completes.
    void fetched(uint64_t lo, uint64_t hi)
    {
        unsigned type = lo & 0xf, g = (lo >> 4) & 3;
        uint16_t did = (lo >> 16) & 0xffff;
        Model::Inv v{0, false, did, 0, 0, 0};
        if (type == 1 && g == 1 && !(lo & 0xfffc'0000'0000'ffc0ull) && !hi) {
            v.kind = 1;
        } else if (lo == 4 && !hi) {
            v.kind = 5;  // global interrupt entry cache invalidation
        } else if (queue_dw && lo == (7 | 3 << 4) && !hi) {
            v.kind = 6;  // global PASID-cache invalidation
        } else if (type == 2 && g && !(lo & 0xffff'ffff'0000'ff00ull) && !(hi & 0xf80)) {
            if (g == 1) {
                v.kind = 2;
            } else if (g == 2) {
                v.kind = 3;
            } else {
                unsigned am = hi & 0x3f;
                uint64_t span = uint64_t{1} << (12 + (am > 18 ? 0 : am));
                v.lo = hi & ~0xfffull;
                v.hi = v.lo + span - 1;
                v.ih = hi & 0x40;
                if (am <= 18 && !(v.lo & (span - 1)))
                    v.kind = 4;
            }
        }
        if (v.kind) {
            v.seq = m.tick();
            m.pending.push_back(v);
        }
    }

    int write(uint64_t gpa, const void *buf, size_t len)
    {
        FUZZ_CHECK(in_mmio_write, gpa, len);
        FUZZ_CHECK(len == 4, gpa, len);
        const uint64_t slot = queue_dw ? 32 : 16;
        FUZZ_CHECK(last16_gpa >= queue_base && last16_gpa - queue_base < queue_entries * slot &&
                       (last16_gpa - queue_base) % slot == 0,
                   last16_gpa, queue_base);
        FUZZ_CHECK((last16_lo & 0xf) == 5 && (last16_lo & 0x20), last16_lo, gpa);
        FUZZ_CHECK(gpa == (last16_hi & ~3ull), gpa, last16_hi);
        uint32_t v;
        std::memcpy(&v, buf, 4);
        FUZZ_CHECK(v == static_cast<uint32_t>(last16_lo >> 32), v, last16_lo);
        // A wait descriptor completed: everything fetched before it is done.
        for (auto &inv : m.pending)
            m.credit(inv);
        m.pending.clear();
        if (gpa > RAM_SIZE || len > RAM_SIZE - gpa)
            return -1;
        std::memcpy(ram.data() + gpa, buf, len);
        m.written(gpa, len);
        return 0;
    }

    // The first stage's accessed/dirty updates.  Oracles: only outside a
    // register write (a translation does them), only on an 8-byte entry in
    // RAM whose value the engine expects as it is, and only setting A, D
    // and EA (bits 5, 6, 10) of a present entry.
    int cmpxchg(uint64_t gpa, uint64_t expected, uint64_t desired, uint64_t *found)
    {
        FUZZ_CHECK(!in_mmio_write, gpa);
        FUZZ_CHECK(cfg.first_stage, gpa);
        if (gpa % 8 || gpa > RAM_SIZE - 8)
            return -1;
        uint64_t cur;
        std::memcpy(&cur, ram.data() + gpa, 8);
        *found = cur;
        if (cur != expected)
            return 0;
        FUZZ_CHECK((expected & 1) && !(expected & ~desired) &&
                       !((desired & ~expected) & ~uint64_t{0x460}),
                   expected, desired);
        std::memcpy(ram.data() + gpa, &desired, 8);
        m.dirty |= 1u << (gpa / PAGE);
        if (desired != expected) {
            // To the model a write like any other: the word may also be
            // another structure the engine caches (bit 6, D, is a PASID-table
            // entry's PGTT; bit 5, A, is reserved in a PASID directory entry).
            m.written(gpa, 8);
            flag_updates++;
            if (std::getenv("FUZZ_TRACE_AD"))
                std::fprintf(stderr, "A/D update at %#llx: %#llx -> %#llx\n",
                             (unsigned long long)gpa, (unsigned long long)expected,
                             (unsigned long long)desired);
        }
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
        o.invalidated = [](void *h, bool global, uint16_t did, uint64_t addr, uint64_t size) {
            FUZZ_CHECK(size != 0);
            static_cast<Host *>(h)->notified.push_back({global, did, addr, size});
        };
        o.context_invalidated = [](void *h, bool global, uint16_t, uint16_t) {
            if (global)
                static_cast<Host *>(h)->context_notified_global = true;
        };
        o.now_ns = [](void *h) { return static_cast<Host *>(h)->clock += 3; };
        o.mem_cmpxchg64 = [](void *h, uint64_t gpa, uint64_t expected, uint64_t desired,
                             uint64_t *found) {
            return static_cast<Host *>(h)->cmpxchg(gpa, expected, desired, found);
        };
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

    // The rest of the invalidation queue, a bounded slice at a time, as
    // QEMU's bottom half runs it (after a register write or a migration).
    void settle()
    {
        bool was = in_mmio_write;
        in_mmio_write = true;  // its wait status writes are the queue's own
        while (vtd_engine_queue_pending(e))
            vtd_engine_process_queue(e);
        in_mmio_write = was;
    }

    void wr(uint64_t off, uint64_t value, unsigned size)
    {
        if (!iqa_known) {
            iqa = rd(IQA, 8);
            iqa_known = true;
        }
        queue_base = iqa & ~0xfffull;
        queue_dw = iqa & 0x800;
        queue_entries = uint64_t{1} << ((iqa & 7) + (queue_dw ? 7 : 8));
        reads16 = 0;
        last16_gpa = UINT64_MAX;
        notified.clear();
        context_notified_global = false;
        in_mmio_write = true;
        const bool te_before = vtd_engine_translation_enabled(e);
        vtd_engine_mmio_write(e, off, value, size);
        settle();
        in_mmio_write = false;
        bool valid = (size == 4 || size == 8) && off < 0x1000 && off % size == 0;
        if (!valid || (off & 0xff8) == IQA)
            iqa_known = false;
        // Descriptor fetches of one write: at most the queue's size (a
        // wrap-around stops at the tail); no context entry is read here.
        FUZZ_CHECK(reads16 <= queue_entries, reads16, queue_entries);
        if (reads16) {
            uint64_t iqh = rd(IQH, 8);
            const uint64_t slot = queue_dw ? 32 : 16;
            FUZZ_CHECK(iqh % slot == 0 && iqh / slot < queue_entries, iqh, queue_entries);
        }
        uint32_t gsts = rd(GSTS, 4);
        FUZZ_CHECK(!(gsts & ~(TE | SRTP | QIE | (cfg.intremap ? IRE | SIRTP | CFI : 0))), gsts);
        registered(off, value, size, te_before);
    }

    // What a register write did to the reference-walk model.
    void registered(uint64_t off, uint64_t value, unsigned size, bool te_before)
    {
        bool valid = (size == 4 || size == 8) && off < 0x1000 && off % size == 0;
        if (!valid)
            return;
        if (off == GCMD && (value & SIRTP) && cfg.intremap) {
            uint64_t irta = rd(IRTA, 8);
            m.irt_base = irta & ~0xfffull;
            m.irt_entries = uint64_t{2} << (irta & 0xf);
            m.iec = m.tick();
        }
        if (off == GCMD && (value & SRTP)) {
            uint64_t rta = rd(RTADDR, 8);
            m.root = rta & ~0xfffull;
            // TTM (bits 11:10): 00b legacy, 01b scalable mode.  While
            // translation is enabled the unit keeps its mode (the format
            // is latched only by an SRTP with TES clear: docs/viommu-vtd.rst).
            if (!te_before)
                m.root_sm = ((rta >> 10) & 3) == 1;
            m.root_clean = !(rta & 0x3ff) && ((rta >> 10) & 3) <= (cfg.scalable_mode ? 1 : 0);
            m.srtp = m.tick();
        }
        // A fetched descriptor the queue stopped at did not complete.
        if (!m.pending.empty() && (rd(FSTS, 4) & FSTS_QUEUE_ERRORS))
            m.pending.clear();
        if ((off & ~7ull) == CCMD) {
            uint64_t v = rd(CCMD, 8);
            if (!(v >> 63) && ((v >> 61) & 3) == 1 && ((v >> 59) & 3) == 1 &&
                context_notified_global)
                m.credit({1, false, 0, 0, 0, m.tick()});
        }
        if ((off & ~7ull) == IOTLB && !notified.empty()) {
            uint64_t v = rd(IOTLB, 8), iva = rd(IVA, 8);
            unsigned g = (v >> 60) & 3;
            uint16_t did = (v >> 32) & 0xffff;
            unsigned am = iva & 0x3f;
            uint64_t span = uint64_t{1} << (12 + (am > 18 ? 0 : am));
            uint64_t lo = iva & ~0xfffull;
            const Notified &n = notified.back();
            if (v >> 63) {
                // still busy: not done
            } else if (g == 1 && n.global) {
                m.credit({2, false, 0, 0, 0, m.tick()});
            } else if (g == 2 && !n.global && n.did == did && n.addr == 0 &&
                       n.size == uint64_t{1} << cfg.aw_bits) {
                m.credit({3, false, did, 0, 0, m.tick()});
            } else if (g == 3 && am <= 18 && !(lo & (span - 1)) && !n.global && n.did == did &&
                       n.addr == lo && n.size == span) {
                m.credit({4, bool(iva & 0x40), did, lo, lo + span - 1, m.tick()});
            }
        }
    }

    bool word(uint64_t gpa, uint64_t &v) const
    {
        if (gpa % 8 || gpa > RAM_SIZE - 8)
            return false;
        std::memcpy(&v, ram.data() + gpa, 8);
        return true;
    }

    // A fresh walk of the guest's tables, read straight from RAM.  Only
    // well-formed entries make it `clean`; anything this walk does not
    // model exactly (reserved or ignored bits, tables outside RAM) leaves
    // the outcome open.
    Reference reference(uint16_t sid, uint64_t addr, unsigned access) const
    {
        Reference r;
        if (!m.root_known || !m.root_clean)
            return r;
        const uint64_t above_haw = ~uint64_t{0} << (cfg.aw_bits < 52 ? cfg.aw_bits : 52);
        const uint64_t addr_bits = ADDR_51_12 & ~above_haw;
        uint64_t re = m.root + (sid >> 8) * 16, lo, hi;
        if (!word(re, lo) || !word(re + 8, hi))
            return r;
        r.ctx_words[r.nctx++] = re / 8;
        r.ctx_words[r.nctx++] = re / 8 + 1;
        if (!(lo & 1)) {
            r.clean = hi == 0 && !(lo & ~uint64_t{1} & ~addr_bits);
            return r;
        }
        if (hi || (lo & ~uint64_t{1} & ~addr_bits))
            return r;
        uint64_t ce = (lo & addr_bits) + (sid & 0xff) * 16;
        if (!word(ce, lo) || !word(ce + 8, hi))
            return r;
        r.ctx_words[r.nctx++] = ce / 8;
        r.ctx_words[r.nctx++] = ce / 8 + 1;
        if (!(lo & 1)) {
            r.clean = true;
            return r;
        }
        unsigned tt = (lo >> 2) & 3, aw = hi & 7;
        if ((lo & ~uint64_t{0xf} & ~addr_bits) || (hi & ~0xffff07ull) || tt == 3 ||
            (tt == 1 && !cfg.device_iotlb) || (tt == 2 && !cfg.pass_through))
            return r;
        if (!((sagaw >> aw) & 1))
            return r;
        r.ctx = true;
        r.did = (hi >> 8) & 0xffff;
        if (tt == 2) {
            if (addr >> (12 + 9 * (aw + 2))) {
                r.clean = true;  // beyond the entry's address width: a fault
                return r;
            }
            r.pt = r.ok = r.clean = true;
            r.page = addr & ~(PAGE - 1);
            r.perm = 3;
            return r;
        }
        unsigned levels = aw + 2;
        uint64_t table = lo & addr_bits;
        r.key = table | levels << 1 | tt;
        ss_walk(r, table, levels, addr, access);
        return r;
    }

    // The second-level (second-stage) walk from `table` with `levels`
    // levels, into `r`.
    void ss_walk(Reference &r, uint64_t table, unsigned levels, uint64_t addr,
                 unsigned access) const
    {
        const uint64_t above_haw = ~uint64_t{0} << (cfg.aw_bits < 52 ? cfg.aw_bits : 52);
        const uint64_t addr_bits = ADDR_51_12 & ~above_haw;
        if (addr >> (12 + 9 * levels)) {
            r.clean = true;  // beyond the domain's address width: a fault
            return;
        }
        uint8_t perm = 3;
        for (unsigned level = levels; level >= 1; level--) {
            unsigned shift = 12 + 9 * (level - 1);
            uint64_t gpa = table + ((addr >> shift) & 511) * 8, e;
            if (!word(gpa, e))
                return;
            r.lvl_words[r.nlvl] = gpa / 8;
            r.lvl_level[r.nlvl++] = level;
            uint64_t size = uint64_t{1} << shift;
            r.lo = addr & ~(size - 1);
            r.hi = r.lo + size - 1;
            if (!(e & 3)) {
                r.clean = true;  // not present
                return;
            }
            bool leaf =
                level == 1 || ((e & 0x80) && (level == 2 || (level == 3 && cfg.superpage_1g)));
            // SNP in a leaf with ECAP.SC, or on a unit that offers scalable
            // mode (Linux 5.13-5.18 set it there whatever ECAP.SC says).
            uint64_t allowed = 3 | addr_bits | (leaf && level > 1 ? 0x80 : 0) |
                               (leaf && (cfg.snoop_control || cfg.scalable_mode) ? 0x800 : 0);
            if (e & ~allowed)
                return;
            perm &= e & 3;
            if (leaf) {
                uint64_t phys = e & addr_bits;
                if ((phys & (size - 1)) || !perm)
                    return;
                r.clean = r.leaf = true;
                r.ok = !(access & ~perm);
                r.page = phys + (addr & (size - 1) & ~(PAGE - 1));
                r.perm = perm;
                return;
            }
            table = e & addr_bits;
        }
    }

    // A fresh scalable-mode walk (RTADDR.TTM = 01b): the root entry's
    // half for the device function, the 256-bit context entry, the PASID
    // directory and 512-bit PASID-table entry of the request's PASID (or
    // of RID_PASID: `pasid` < 0), and the tables the entry's PGTT selects:
    // pass-through, second-stage, or first-stage (x86-64 format, U/S, R/W,
    // WPE, SRE).  Nested entries, EAFE, and anything with a reserved or
    // ignored bit leave the outcome open.
    Reference sm_reference(uint16_t sid, int64_t pasid, bool priv, uint64_t addr,
                           unsigned access) const
    {
        Reference r;
        r.sm = true;
        if (!m.root_known || !m.root_clean)
            return r;
        const uint64_t above_haw = ~uint64_t{0} << (cfg.aw_bits < 52 ? cfg.aw_bits : 52);
        const uint64_t addr_bits = ADDR_51_12 & ~above_haw;
        unsigned devfn = sid & 0xff;
        uint64_t re = m.root + (sid >> 8) * 16 + (devfn >= 128 ? 8 : 0), v;
        if (!word(re, v))
            return r;
        r.ctx_words[r.nctx++] = re / 8;
        if (!(v & 1)) {
            r.clean = !(v & ~addr_bits);
            return r;
        }
        if (v & ~uint64_t{1} & ~addr_bits)
            return r;
        uint64_t ce = (v & addr_bits) + (devfn & 127) * 32, c[4];
        for (unsigned i = 0; i < 4; i++) {
            if (!word(ce + 8 * i, c[i]))
                return r;
            r.ctx_words[r.nctx++] = ce / 8 + i;
        }
        if (!(c[0] & 1)) {
            r.clean = true;
            return r;
        }
        // FPD (bit 1) only changes recording; DTE, PASIDE as the unit offers.
        uint64_t ok_lo =
            1 | 2 | (cfg.device_iotlb ? 4 : 0) | (cfg.pasid_bits ? 8 : 0) | 0xe00 | addr_bits;
        if ((c[0] & ~ok_lo) || (c[1] >> 20) || c[2] || c[3])
            return r;
        uint32_t rid_pasid = c[1] & 0xfffff;
        if (rid_pasid >> cfg.pasid_bits)
            return r;
        unsigned pdts = (c[0] >> 9) & 7;
        if (pasid >= 0 && !(c[0] & 8)) {
            r.clean = true;  // a request with PASID, PASIDE clear
            return r;
        }
        uint32_t p = pasid >= 0 ? uint32_t(pasid) : rid_pasid;
        if ((p >> 6) >= (uint64_t{1} << (pdts + 7)) || (p >> cfg.pasid_bits)) {
            r.clean = true;  // beyond the PASID directory
            return r;
        }
        uint64_t de = (c[0] & addr_bits) + uint64_t(p >> 6) * 8;
        if (!word(de, v))
            return r;
        r.ctx_words[r.nctx++] = de / 8;
        if (!(v & 1)) {
            r.clean = true;
            return r;
        }
        if (v & ~uint64_t{3} & ~addr_bits)
            return r;
        uint64_t pe = (v & addr_bits) + uint64_t(p & 63) * 64, w[8];
        for (unsigned i = 0; i < 8; i++) {
            if (!word(pe + 8 * i, w[i]))
                return r;
            r.ctx_words[r.nctx++] = pe / 8 + i;
        }
        if (!(w[0] & 1)) {
            r.clean = true;
            return r;
        }
        unsigned pgtt = (w[0] >> 6) & 7, aw = (w[0] >> 2) & 7;
        bool srs = cfg.first_stage && cfg.pasid_bits;
        // Word 0: P, FPD, AW, PGTT, SSPTPTR; word 1: DID; word 2: SRE,
        // FSPM, WPE, FSPTPTR; the rest zero.
        if ((w[0] & ~(0x1df | addr_bits)) || (w[1] & ~0xffffull) ||
            (w[2] & ~(uint64_t{srs} | 0xc | 0x10 | addr_bits)) || w[3] || w[4] || w[5] || w[6] ||
            w[7])
            return r;
        bool sup = pasid >= 0 && priv;
        // The other stage's fields, and supervisor requests through
        // anything but the first stage, leave it open.
        if ((pgtt != 1 && w[2]) || (pgtt == 1 && (w[0] & (addr_bits | 0x1c))) ||
            (pgtt == 4 && (w[0] & (addr_bits | 0x1c))) || (sup && pgtt != 1))
            return r;
        r.ctx = true;
        r.did = w[1] & 0xffff;
        if (pgtt == 4 && cfg.pass_through) {
            r.pt = r.ok = r.clean = true;
            r.page = addr & ~(PAGE - 1);
            r.perm = 3;
            return r;
        }
        if (pgtt == 2 && cfg.second_stage) {
            if (!((sagaw >> aw) & 1))
                return r;
            uint64_t table = w[0] & addr_bits;
            r.key = table | uint64_t(aw + 2) << 1 | uint64_t{pgtt} << 56;
            ss_walk(r, table, aw + 2, addr, access);
            return r;
        }
        if (pgtt != 1 || !cfg.first_stage)
            return r;  // nested, or a PGTT the unit does not offer
        unsigned fspm = (w[2] >> 2) & 3;
        if (fspm > 1 || (fspm == 1 && cfg.aw_bits != 57))
            return r;
        if (sup && !(w[2] & 1)) {
            r.clean = true;  // a supervisor request, SRE clear
            return r;
        }
        bool wpe = w[2] & 0x10;
        unsigned levels = fspm ? 5 : 4;
        uint64_t table = w[2] & addr_bits;
        // Keyed by the PASID too: first-stage translations are tagged with it.
        r.key = table | uint64_t{levels} << 1 | uint64_t{pgtt} << 56 | uint64_t{p} << 4;
        r.fs = true;
        unsigned in_bits = 12 + 9 * levels;
        uint64_t top = addr >> (in_bits - 1);
        if (top != 0 && top != (~uint64_t{0} >> (in_bits - 1))) {
            r.clean = true;  // not canonical
            return r;
        }
        bool w_ok = true, u_ok = true;
        for (unsigned level = levels; level >= 1; level--) {
            unsigned shift = 12 + 9 * (level - 1);
            uint64_t gpa = table + ((addr >> shift) & 511) * 8, e;
            if (!word(gpa, e))
                return r;
            r.lvl_words[r.nlvl] = gpa / 8;
            r.lvl_level[r.nlvl++] = level;
            uint64_t size = uint64_t{1} << shift;
            r.lo = addr & ~(size - 1);
            r.hi = r.lo + size - 1;
            if (!(e & 1)) {
                r.clean = true;  // not present
                return r;
            }
            bool ps = e & 0x80;
            bool leaf = level == 1 || (ps && (level == 2 || (level == 3 && cfg.fs1gp)));
            if ((ps && !leaf) || (ps && level == 1))
                return r;  // PS where it is reserved; PAT in a 4 KiB leaf
            // P, R/W, U/S, PWT, PCD, A, D, PS, XD; G in a leaf.
            uint64_t allowed = 0xff | uint64_t{1} << 63 | addr_bits | (leaf ? 0x100 : 0);
            if (e & ~allowed)
                return r;
            w_ok = w_ok && (e & 2);
            u_ok = u_ok && (e & 4);
            if (leaf) {
                // Bit 12 of a large page is PAT, not address; the bits
                // between it and the page size are reserved.
                uint64_t phys = e & addr_bits & ~(level > 1 ? uint64_t{PAGE} : 0);
                if (phys & (size - 1))
                    return r;
                r.clean = r.leaf = true;
                if (!sup && !u_ok) {
                    r.ok = false;  // a user request to a supervisor page
                    return r;
                }
                uint8_t perm = 1 | ((w_ok || (sup && !wpe)) ? 2 : 0);
                r.ok = !(access & ~perm);
                r.page = phys + (addr & (size - 1) & ~(PAGE - 1));
                r.perm = perm;
                return r;
            }
            table = e & addr_bits;
        }
        return r;
    }

    void check_leaf(const VtdTranslation &t, const char *what, bool any_perm = false)
    {
        uint64_t size = t.addr_mask + 1;
        FUZZ_CHECK(size == PAGE || size == (2ull << 20) ||
                       (size == (1ull << 30) && cfg.superpage_1g),
                   t.addr_mask);
        FUZZ_CHECK(!(t.iova_base & t.addr_mask) && !(t.phys_base & t.addr_mask), t.iova_base,
                   t.phys_base);
        // Each candidate entry on its own: another entry that merely shares
        // an address with the leaf (a table pointer whose bits 1:0 read as
        // R or W) must not hide the one that backs it.
        auto backs = [&](uint8_t seen) { return seen && (any_perm || !(t.perm & ~seen)); };
        bool backed = backs(pte_seen.perm(t.phys_base));
        // A first-stage large page's address field holds PAT in bit 12;
        // the page starts at the address without it.
        if (!backed && cfg.first_stage && size > PAGE)
            backed = backs(pte_seen.perm(t.phys_base | PAGE));
        // Nested: the smaller of the two stages' pages, inside a larger
        // second-stage leaf (and permissions the AND of both).
        if (!backed && cfg.first_stage && cfg.second_stage)
            backed = backs(pte_seen.perm(t.phys_base & ~((2ull << 20) - 1)) |
                           pte_seen.perm(t.phys_base & ~((1ull << 30) - 1)));
        if (!backed)
            fuzz::fail(what, t.phys_base, t.perm);
    }

    VtdFaultReason request(uint16_t sid, int64_t pasid, bool priv, uint64_t addr, unsigned access,
                           bool record, VtdTranslation *t)
    {
        if (pasid < 0)
            return vtd_engine_translate(e, sid, addr, access, record, t);
        return vtd_engine_translate_pasid(e, sid, uint32_t(pasid), priv, addr, access, record, t);
    }
    static bool known_reason(VtdFaultReason r)
    {
        return (r >= VTD_FR_NONE && r <= VTD_FR_CONTEXT_ENTRY_TT) ||
               (r >= VTD_FR_SM_RTADDR_INV && r <= VTD_FR_SM_FS_AD_NO_SNOOP);
    }

    // A request without PASID (`pasid` < 0) or with one (`priv`: the
    // privileged-mode-requested bit).
    void translate(uint16_t sid, uint64_t addr, unsigned access, bool record, int64_t pasid = -1,
                   bool priv = false)
    {
        bool te_before = vtd_engine_translation_enabled(e);
        Reference ref;
        bool assert_ref = false;
        if (te_before) {
            if (m.root_sm)
                ref = sm_reference(sid, pasid, priv, addr, access & 3);
            else if (pasid < 0)
                ref = reference(sid, addr, access & 3);
            else
                ref.clean = true;  // a request with PASID in legacy mode: a fault
            // An output in the interrupt range is blocked, except the
            // identity of a request without PASID (such a request is an
            // interrupt; the engine is not asked to translate it).
            if (ref.ok && (ref.page >> 20) == 0xfee && !(ref.pt && pasid < 0))
                ref.ok = false;
            assert_ref = m.covered(ref, addr);
            m.activity();
        }
        bool pt = pasid < 0 && vtd_engine_is_pass_through(e, sid);
        uint64_t updates = flag_updates;
        VtdTranslation t{};
        VtdFaultReason r = request(sid, pasid, priv, addr, access, record, &t);
        // The walk's A/D updates changed guest RAM: a table that is also
        // another structure (a first-stage table aliasing the PASID
        // directory, say) can now read differently, so asking again may
        // rightly get another answer.
        bool changed = flag_updates != updates;
        // Nothing changed in between: a pass-through source-id gets the
        // identity for any address below its context's AW (at least 39
        // bits: AW must be in SAGAW), 0x4 above it.
        if (pt)
            FUZZ_CHECK((r == VTD_FR_NONE && t.phys_base == (addr & ~(PAGE - 1))) ||
                           (r == VTD_FR_ADDR_BEYOND_MGAW && addr >> 39),
                       r, addr);
        bool te_after = vtd_engine_translation_enabled(e);
        FUZZ_CHECK(known_reason(r), r);
        if (!cfg.scalable_mode)
            FUZZ_CHECK(r <= VTD_FR_CONTEXT_ENTRY_TT || r == VTD_FR_SM_TTM0_PASID, r);
        m.translations++;
        if (assert_ref) {
            m.compared++;
            // The stale-translation check: every change is covered, so the
            // engine answers what the tables say now.
            if (ref.ok) {
                uint64_t page = r == VTD_FR_NONE ? t.phys_base + (addr & t.addr_mask & ~(PAGE - 1))
                                                 : UINT64_MAX;
                if (page != ref.page)
                    fuzz::fail("translation differs from a fresh walk", page, ref.page);
                // A first-stage leaf grants write only once its D flag is
                // set: fewer permissions, never more, never less than asked.
                if (ref.fs)
                    FUZZ_CHECK(!(t.perm & ~ref.perm) && !(access & 3 & ~t.perm), t.perm, ref.perm);
                else
                    FUZZ_CHECK(t.perm == ref.perm, t.perm, ref.perm);
            } else if (r == VTD_FR_NONE) {
                fuzz::fail("translation where a fresh walk faults", addr, t.phys_base);
            }
        }
        // Nothing changed: asking again (from the caches, or a walk of
        // the same memory) gives the same answer.
        VtdTranslation t2{};
        VtdFaultReason r2 = request(sid, pasid, priv, addr, access, false, &t2);
        if (!changed)
            FUZZ_CHECK(r2 == r, r, r2);
        if (te_before)
            model_after(ref, assert_ref, r, t);
        if (r != VTD_FR_NONE)
            return;
        if (!changed)
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
        // A supervisor request with WPE clear writes where R/W is clear.
        check_leaf(t, "translation not backed by a PTE the engine read", pasid >= 0 && priv);
    }

    // What the engine may have cached from a translation.
    void model_after(const Reference &ref, bool known, VtdFaultReason r, const VtdTranslation &t)
    {
        uint64_t s = m.tick();
        bool fresh_ctx = ref.clean && (ref.sm ? m.sm_covered(ref) : m.context_fresh(ref));
        if (!fresh_ctx)
            m.seen(-1, 0, s);
        else if (ref.ctx && !ref.pt)
            m.seen(ref.did, ref.key, s);
        if (r == VTD_FR_NONE)
            m.cached(t.domain_id, t.iova_base, t.iova_base + t.addr_mask, s);
        else if (!known)
            m.cached(-1, 0, UINT64_MAX, s);
        else if (ref.ctx && !ref.pt && (ref.leaf || cfg.caching_mode))
            m.cached(ref.did, ref.lo, ref.hi, s);  // a leaf that denied the access; CM: not-present
    }

    // An interrupt request.  Oracles: the outcome is one of the four and
    // a fault comes only with BLOCKED; an address outside 0xFEExxxxx is
    // not an interrupt and every other is; without ECAP.IR or with
    // GSTS.IRES clear the request passes through unchanged; asking again
    // gives the same answer; and a remappable request remapped through a
    // remapped-format IRTE of the latched table that was not written since
    // the cache was last emptied gets that IRTE's vector (what the guest
    // reads in its table is what the unit uses, once it has invalidated).
    void remap(uint16_t sid, uint64_t addr, uint32_t data, bool record)
    {
        bool ires = rd(GSTS, 4) & IRE;
        VtdInterrupt o{};
        VtdIrResult r = vtd_engine_remap_interrupt(e, sid, addr, data, record, &o);
        FUZZ_CHECK(r >= VTD_IR_REMAPPED && r <= VTD_IR_NOT_INTERRUPT, r);
        FUZZ_CHECK((r == VTD_IR_BLOCKED) == (o.fault != VTD_FR_NONE), r, o.fault);
        bool interrupt = (addr >> 20) == 0xfee;
        FUZZ_CHECK((r == VTD_IR_NOT_INTERRUPT) == !interrupt, r, addr);
        if (interrupt && (!cfg.intremap || !ires))
            FUZZ_CHECK(r == VTD_IR_PASS_THROUGH, r, addr);
        if (r == VTD_IR_PASS_THROUGH)
            FUZZ_CHECK(o.addr == addr && o.data == data, o.addr, o.data);
        VtdInterrupt o2{};
        VtdIrResult r2 = vtd_engine_remap_interrupt(e, sid, addr, data, false, &o2);
        FUZZ_CHECK(r2 == r && o2.addr == o.addr && o2.data == o.data && o2.vector == o.vector &&
                       o2.dest == o.dest && o2.fault == o.fault,
                   r, r2);
        if (r != VTD_IR_REMAPPED || !(addr & 0x10) || !m.ir_known)
            return;
        uint64_t index = ((addr >> 5) & 0x7fff) | ((addr >> 2) & 1) << 15;
        if (addr & 8)
            index += data & 0xffff;  // SHV: the subhandle is added
        if (index >= m.irt_entries || m.irt_base >= RAM_SIZE ||
            index * 16 > RAM_SIZE - 16 - m.irt_base)
            return;
        uint64_t a = m.irt_base + index * 16, lo = 0;
        word(a, lo);
        uint64_t w0 = m.mod[a / 8], w1 = m.mod[a / 8 + 1];
        if ((lo & 0x8000) || (w0 && w0 >= m.iec) || (w1 && w1 >= m.iec))
            return;  // posted format, or written since the cache was emptied
        FUZZ_CHECK(o.vector == ((lo >> 16) & 0xff), o.vector, lo);
    }

    struct WalkCtx {
        Host *h;
        uint64_t start, end, leaves;
        uint64_t next;  // where the next leaf may start: they come in IOVA order
        bool wrapped;   // a leaf ended at 2^64
    };
    void walk(uint16_t sid, uint64_t start, uint64_t end)
    {
        WalkCtx c{this, start, end, 0, 0, false};
        int r = vtd_engine_walk(
            e, sid, start, end,
            [](void *p, const VtdTranslation *t) {
                auto *c = static_cast<WalkCtx *>(p);
                c->leaves++;
                FUZZ_CHECK(t->iova_base < c->end && t->iova_base + t->addr_mask >= c->start,
                           t->iova_base, c->start);
                FUZZ_CHECK(t->perm != VTD_PERM_NONE && t->perm <= VTD_PERM_RW, t->perm);
                FUZZ_CHECK(!c->wrapped && t->iova_base >= c->next, t->iova_base, c->next);
                c->next = t->iova_base + t->addr_mask + 1;
                c->wrapped = c->next == 0;
                c->h->check_leaf(*t, "replayed leaf not backed by a PTE the engine read");
            },
            &c);
        FUZZ_CHECK(r == VTD_WALK_TRUNCATED || (r >= 0 && known_reason(VtdFaultReason(r))), r);
        if (!cfg.scalable_mode)
            FUZZ_CHECK(r <= VTD_FR_CONTEXT_ENTRY_TT, r);
    }

    void migrate(fuzz::Input &in)
    {
        iqa_known = false;  // whatever state is loaded
        VtdState st;
        vtd_engine_get_state(e, &st);
        unsigned flips = in.u8() % 4;
        if (!flips) {
            FUZZ_CHECK(vtd_engine_set_state(e, &st) == VTD_STATE_OK);
            VtdState again;
            vtd_engine_get_state(e, &again);
            FUZZ_CHECK(!std::memcmp(&again, &st, sizeof(st)));
        } else {
            // Damage: flipped bytes, and maybe a zeroed tail (a state
            // cut short by a broken stream).
            auto *bytes = reinterpret_cast<unsigned char *>(&st);
            for (unsigned i = 0; i < flips; i++) {
                size_t at = in.u16() % sizeof(st);
                bytes[at] ^= in.u8() | 1;
            }
            if (in.flag()) {
                size_t cut = in.u8() % sizeof(st);
                std::memset(bytes + cut, 0, sizeof(st) - cut);
            }
            VtdState before;
            vtd_engine_get_state(e, &before);
            VtdStateError r = vtd_engine_set_state(e, &st);
            VtdState after;
            vtd_engine_get_state(e, &after);
            FUZZ_CHECK(r >= VTD_STATE_OK && r <= VTD_STATE_BAD_INTERRUPT_REMAPPING, r);
            // Accepted: read back as given; refused: nothing changed.
            FUZZ_CHECK(!std::memcmp(&after, r == VTD_STATE_OK ? &st : &before, sizeof(st)), r);
            uint64_t iqh = rd(IQH, 8);
            FUZZ_CHECK(iqh % 16 == 0 && iqh <= 0x7fff0, iqh);
            // Whatever root table the damaged state named: the model stops.
            m.root_known = false;
            m.ir_known = false;
            m.pending.clear();
        }
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
    // A table pointer with low flag bits from the input; rarely a page of
    // the interrupt range, which no translation may output.
    static uint64_t pointer(fuzz::Input &in)
    {
        uint8_t b = in.u8();
        uint64_t v = (b % RAM_PAGES) * PAGE | (in.u16() & 0xfff);
        if ((b & 0x7f) == 0x7f)
            v = 0xfee00000 | (v & 0xfffff);
        if (b & 0x80)
            v |= uint64_t{in.u16()} << 48;  // high flag/reserved bits
        return v;
    }
    void poke(uint64_t a, const void *p, size_t n)
    {
        if (a >= RAM_SIZE)
            return;
        n = std::min<uint64_t>(n, RAM_SIZE - a);
        std::memcpy(ram.data() + a, p, n);
        m.written(a, n);
    }
    void put64(uint64_t a, uint64_t v)
    {
        if (a <= RAM_SIZE - 8)
            poke(a, &v, 8);
    }
};

// Engines are kept across inputs, one per configuration (128 at most; a
// new one then replaces one of them), and reset at the start of each
// input.  Creating one costs far more than a reset, and inputs often differ
// only in a configuration byte.  Those with a
// one-entry IOTLB are created and freed by each input, so creation and
// destruction stay covered.
struct Engines : std::unordered_map<uint64_t, VtdEngine *> {
    ~Engines()
    {
        for (auto &[k, e] : *this)
            vtd_engine_free(e);
    }
};
Engines engines;

uint64_t config_key(const VtdConfig &c)
{
    return uint64_t{c.aw_bits} | uint64_t{c.pass_through} << 8 | uint64_t{c.caching_mode} << 9 |
           uint64_t{c.device_iotlb} << 10 | uint64_t{c.superpage_1g} << 11 |
           uint64_t{c.fault_records} << 12 | uint64_t{c.scalable_mode} << 20 |
           uint64_t{c.first_stage} << 21 | uint64_t{c.second_stage} << 22 |
           uint64_t{c.fs1gp} << 23 | uint64_t{c.context_entries} << 24 |
           uint64_t{c.pasid_bits} << 36 | uint64_t{c.iotlb_entries} << 44 |
           uint64_t{c.intremap} << 62 | uint64_t{c.eim} << 63;
}

VtdEngine *engine_for(Host &h)
{
    uint64_t key = config_key(h.cfg);
    auto it = engines.find(key);
    if (it != engines.end()) {
        if (it->second)
            vtd_engine_reset(it->second);
        return it->second;
    }
    if (engines.size() >= 128) {
        auto victim = engines.begin();
        vtd_engine_free(victim->second);
        engines.erase(victim);
    }
    static const VtdHostOps ops = Host::ops();
    VtdEngine *e = vtd_engine_new(&h.cfg, &ops, &h, nullptr, 0);
    engines.emplace(key, e);
    return e;
}

void engine_done(Host &h)
{
    if (h.cfg.iotlb_entries != 1)
        return;
    vtd_engine_free(h.e);
    engines.erase(config_key(h.cfg));
}

Host &host()
{
    static Host h;
    static bool report = [] {
        if (std::getenv("FUZZ_ORACLE_STATS"))
            std::atexit([] {
                std::fprintf(stderr, "reference walk: %llu of %llu translations compared\n",
                             static_cast<unsigned long long>(host().m.compared),
                             static_cast<unsigned long long>(host().m.translations));
            });
        return true;
    }();
    (void)report;
    return h;
}

// Interrupt remapping, behind opcode 18: the table pointer and its latch,
// IRE and CFI, IRTEs in guest RAM, IEC invalidation descriptors, and
// interrupt requests in remappable, compatibility and arbitrary formats.
void ir_op(Host &h, fuzz::Input &in, uint32_t &gcmd, uint64_t q_base, uint64_t &q_tail,
           unsigned q_qs)
{
    switch (in.u8() % 8) {
    case 0: {  // IRTA: table, size, EIME, reserved bits now and then
        uint64_t v = h.pointer(in) & ~0xfffull;
        uint8_t b = in.u8();
        v |= (b & 0xf) | (b & 0x10 ? IRTA_EIME : 0) | (b & 0x20 ? uint64_t{b} << 4 : 0);
        h.wr(IRTA, v, 8);
        break;
    }
    case 1:  // latch it
        h.wr(GCMD, gcmd | SIRTP, 4);
        break;
    case 2: {  // IRE and CFI on or off
        uint8_t b = in.u8();
        gcmd = (b & 1) ? gcmd | IRE : gcmd & ~IRE;
        gcmd = (b & 2) ? gcmd | CFI : gcmd & ~CFI;
        h.wr(GCMD, gcmd, 4);
        break;
    }
    case 3: {  // an IRTE in the latched (or the programmed) table
        uint64_t base = in.flag() ? h.m.irt_base : h.rd(IRTA, 8) & ~0xfffull;
        uint64_t a = base + uint64_t(in.u16() & 0x3ff) * 16;
        uint8_t how = in.u8();
        uint64_t lo, hi;
        if (how & 1) {
            lo = in.u64();
            hi = in.u64();
        } else {
            // One read per statement: g++ and clang must see the same.
            uint64_t dest = (how & 2) ? uint64_t{in.u32()} : uint64_t{in.u8()} << 8;
            lo = 1 | (in.u8() & 0x3e);         // P, FPD, DM, RH, TM
            lo |= uint64_t(in.u8() & 7) << 5;  // DLM
            lo |= uint64_t{in.u8()} << 16;     // vector
            lo |= dest << 32;
            hi = 0;
            if (how & 4) {
                hi = in.u16();                        // SID
                hi |= uint64_t(in.u8() & 0xf) << 16;  // SQ, SVT
            }
        }
        h.put64(a, lo);
        h.put64(a + 8, hi);
        break;
    }
    case 4: {  // an IEC invalidation at the queue's tail: global or by index
        uint64_t lo = 4;
        if (in.flag()) {
            lo |= 16 | uint64_t(in.u8() & 0x1f) << 27;  // IM
            lo |= uint64_t{in.u16()} << 32;             // IIDX
        }
        uint64_t n = uint64_t{256} << q_qs;
        h.put64(q_base + q_tail * 16, lo);
        h.put64(q_base + q_tail * 16 + 8, 0);
        q_tail = (q_tail + 1) % n;
        h.wr(IQT, q_tail << 4, 4);
        break;
    }
    default: {  // an interrupt request
        uint16_t sid = in.flag() ? in.u16() : in.u8();
        uint8_t how = in.u8();
        uint64_t addr;
        uint32_t data;
        if ((how & 3) == 0) {
            addr = in.u64();
            data = in.u32();
        } else if ((how & 3) == 1) {  // compatibility format
            addr = 0xfee00000 | uint64_t{in.u8()} << 12;
            addr |= in.u8() & 0xc;
            data = in.u16();
        } else {  // remappable format, handle in bits 19:5 and 2, SHV in 3
            uint16_t handle = in.u16() & 0x3ff;
            addr = 0xfee00000 | uint64_t(handle & 0x7fff) << 5 | 0x10 | (how & 4 ? 8 : 0) |
                   ((handle >> 15) & 1) << 2;
            data = (how & 8) ? in.u32() : in.u8() & 3;
        }
        h.remap(sid, addr, data, how & 0x10);
        break;
    }
    }
}

// Scalable mode (opcodes 20..24 with VtdConfig.scalable_mode): the root
// table with RTADDR.TTM = 01b, 256-bit context entries, 512-bit PASID-table
// entries (any PGTT), 256-bit descriptors (PASID-cache, PASID-based IOTLB
// and device-TLB, and the legacy types), and requests with PASID.  PASID
// directory entries, scalable root entries and first-stage entries are
// 8-byte words: opcode 5's table entries.
void sm_op(Host &h, fuzz::Input &in, unsigned op, uint32_t &gcmd, uint64_t q_base, uint64_t &q_tail,
           unsigned q_qs)
{
    switch (op - 20) {
    case 0: {  // a scalable-mode root table (TTM 01b; now and then a reserved TTM)
        uint64_t v = h.pointer(in) & ~0xfffull;
        uint8_t b = in.u8();
        v |= (b & 0x30) == 0x30 ? uint64_t(b & 0xc) << 8 : 1u << 10;
        h.wr(RTADDR, v, 8);
        gcmd = (b & 1) ? gcmd | TE : gcmd & ~TE;
        h.wr(GCMD, gcmd | SRTP, 4);
        h.wr(GCMD, gcmd, 4);
        break;
    }
    case 1: {  // a 256-bit context entry: P, FPD, DTE, PASIDE, PRE, PDTS, PASIDDIRPTR, RID_PASID
        uint64_t a = h.gpa(in) & ~31ull;
        uint8_t b = in.u8();
        uint64_t lo = (h.pointer(in) & ~0xfffull) | (b & 0x1f);  // one read per statement
        lo |= uint64_t(in.u8() & 7) << 9;
        uint64_t hi = (b & 0x20) ? in.u32() : in.u8() & 0x3f;
        h.put64(a, lo);
        h.put64(a + 8, hi);
        if (b & 0x40) {  // the reserved upper half
            h.put64(a + 16, in.u64());
            h.put64(a + 24, in.u64());
        }
        break;
    }
    case 2: {  // a 512-bit PASID-table entry
        uint64_t a = h.gpa(in) & ~63ull;
        uint8_t b = in.u8();
        uint64_t w0 = 1 | (h.pointer(in) & ~0xfffull);      // P, SSPTPTR
        w0 |= uint64_t(b & 7) << 6;                         // PGTT
        w0 |= uint64_t(in.u8() & 7) << 2;                   // AW
        w0 |= (b & 8) ? 2 : 0;                              // FPD
        uint64_t w1 = (b & 0x10) ? in.u16() : in.u8() & 7;  // DID
        uint8_t f = in.u8();
        uint64_t w2 =
            (h.pointer(in) & ~0xfffull) | (f & 1) | (f & 0x0c) | (f & 0x10);  // SRE FSPM WPE
        if (b & 0x20) {  // anything in the flag bits
            w0 ^= in.u16() & 0xfff;
            w1 |= uint64_t{in.u32()} << 16;
            w2 ^= in.u16() & 0xfff;
        }
        h.put64(a, w0);
        h.put64(a + 8, w1);
        h.put64(a + 16, w2);
        for (unsigned i = 3; i < 8; i++)
            h.put64(a + 8 * i, (b & 0x40) && i == 3 ? in.u64() : 0);
        break;
    }
    case 3: {  // a 256-bit descriptor at the tail of a 256-bit queue
        uint8_t how = in.u8();
        uint64_t lo, hi = 0, q2 = 0, q3 = 0;
        uint16_t did = (how & 0x80) ? in.u16() : in.u8() & 7;
        uint64_t pasid = in.flag() ? in.u32() & 0xfffff : in.u8() & 0x3f;
        switch (how & 7) {
        case 0:
            lo = in.u64();
            hi = in.u64();
            q2 = in.flag() ? in.u64() : 0;
            q3 = 0;
            break;
        case 1:  // PASID-cache: G 00b domain, 01b PASID, 11b global
            lo = 7 | uint64_t((how >> 3) & 3) << 4 | uint64_t{did} << 16 | pasid << 32;
            break;
        case 2: {  // PASID-based IOTLB: G 10b (DID, PASID), 11b pages
            lo = 6 | uint64_t(2 | ((how >> 3) & 1)) << 4 | uint64_t{did} << 16 | pasid << 32;
            uint64_t addr = uint64_t{in.u16()} << 12;
            hi = addr | (in.u8() & 0x7f);  // IH, AM
            break;
        }
        case 3:  // context-cache global
            lo = 1 | 1 << 4;
            break;
        case 4:  // IOTLB global, domain
            lo = 2 | uint64_t(1 + ((how >> 3) & 1)) << 4 | uint64_t{did} << 16;
            break;
        case 5: {  // wait with a status write into RAM
            lo = 5 | 1 << 5 | uint64_t{in.u32()} << 32;
            hi = (h.gpa(in) % RAM_SIZE) & ~3ull;
            break;
        }
        case 6:  // IOTLB page-selective
            lo = 2 | 3 << 4 | uint64_t{did} << 16;
            hi = uint64_t{in.u16()} << 12;
            hi |= in.u8() & 0x7f;
            break;
        default:  // PASID-based device-TLB
            lo = 8 | uint64_t{in.u16()} << 16 | pasid << 32 | ((how >> 3) & 1) << 4;
            hi = uint64_t{in.u16()} << 12;
            hi |= (in.u8() & 1) << 11;
            break;
        }
        uint64_t n = uint64_t{128} << q_qs;
        uint64_t at = q_base + q_tail * 32;
        h.put64(at, lo);
        h.put64(at + 8, hi);
        h.put64(at + 16, q2);
        h.put64(at + 24, q3);
        q_tail = (q_tail + 1) % n;
        if (!(how & 0x40))
            h.wr(IQT, q_tail << 5, 4);
        break;
    }
    default: {  // a request with PASID
        uint16_t sid = in.flag() ? in.u16() : in.u8();
        uint8_t how = in.u8();
        uint32_t pasid = (how & 1) ? in.u32() & 0xfffff : in.u8() & 0x3f;
        uint64_t addr;
        if (how & 2) {
            addr = in.u64();
        } else {
            addr = uint64_t{in.u16()} << 12;
            addr |= in.u16() & 0xfff;
        }
        h.translate(sid, addr, (how >> 2) & 3, how & 0x10, pasid, how & 0x20);
        break;
    }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz::Input in(data, size);
    Host &h = host();
    h.begin();
    uint8_t c0 = in.u8(), c1 = in.u8();
    vtd_config_default(&h.cfg);
    h.cfg.aw_bits = (c0 & 3) == 0 ? 39 : (c0 & 3) == 1 ? 48 : (c0 & 3) == 2 ? 57 : 48;
    // Interrupt remapping with the fourth address-width value (48 again),
    // x2APIC destinations with half of those.
    h.cfg.intremap = (c0 & 3) == 3;
    h.cfg.eim = h.cfg.intremap && (c1 & 0x80);
    h.cfg.pass_through = c0 & 4;
    h.cfg.caching_mode = c0 & 8;
    h.cfg.device_iotlb = c0 & 16;
    h.cfg.superpage_1g = c0 & 32;
    h.cfg.snoop_control = c1 & 0x10;
    // Small tables: every IOTLB path (sets, ways, eviction) is reached with
    // a few entries, and resetting them is cheap.  The defaults (131072
    // IOTLB entries, 1024 context entries) only cost time here; the context
    // cache's default is still taken now and then.
    h.cfg.iotlb_entries = (c0 & 64) ? 1 + c1 % 64 : 256;
    h.cfg.context_entries = (c0 & 128) ? 1 + (c1 >> 4) : (c1 & 0xe) == 0xe ? 0 : 64;
    h.cfg.fault_records = c1 & 1 ? in.u8() : 0;
    // Scalable mode (without interrupt remapping: c1 bit 7 is EIM there):
    // second stage, first stage or both (nested), and 0..20 PASID bits.
    if (!h.cfg.intremap && (c1 & 0x80)) {
        unsigned stages = (c1 >> 5) & 3;
        h.cfg.scalable_mode = true;
        h.cfg.first_stage = stages != 2;
        h.cfg.second_stage = stages != 1;
        h.cfg.fs1gp = h.cfg.first_stage && h.cfg.superpage_1g;
        static constexpr uint8_t pasid_bits[] = {0, 6, 10, 20};
        h.cfg.pasid_bits = pasid_bits[(c1 >> 2) & 3];
    }
    h.e = engine_for(h);
    if (!h.e)
        return 0;
    h.sagaw = (h.rd(CAP, 8) >> 8) & 0x1f;
    // The costliest operations (a save and load, the statistics JSON, a
    // register snapshot, a reset: each some hundred times a translation)
    // run a few times per input; more would add time and no coverage.
    unsigned migrations = 0, jsons = 0, snapshots = 0, resets = 0;
    uint64_t q_base = 0, q_tail = 0;
    unsigned q_qs = 0;
    uint32_t gcmd = 0;
    const unsigned nops = h.cfg.scalable_mode ? 25 : 20;
    for (unsigned op = 0; op < MAX_OPS && !in.empty(); op++) {
        unsigned opcode = in.u8() % nops;
        switch (opcode) {
        case 0: {  // any access, any size: invalid ones read 0 and do nothing
            uint64_t off = in.flag() ? in.u64() : in.u16() & 0x1fff;
            unsigned size = in.u8() % 9;
            uint64_t v = in.u64();
            bool valid = (size == 4 || size == 8) && off < 0x1000 && off % size == 0;
            if (!valid)
                FUZZ_CHECK(h.rd(off, size) == 0, off, size);
            if (!valid && snapshots++ < 8) {
                // Changes nothing: the registers (0x000-0x0bf, IVA/IOTLB,
                // the first 16 fault records) read the same after.
                static constexpr struct {
                    uint32_t from, to;
                } spans[] = {{0x000, 0x0c0}, {0x100, 0x110}, {0x200, 0x300}};
                uint64_t before[0x300 / 8];
                h.settle();  // a queue a migration left half-done moves on its own
                for (auto [from, to] : spans)
                    for (uint32_t r = from; r < to; r += 8)
                        before[r / 8] = h.rd(r, 8);
                h.wr(off, v, size);
                for (auto [from, to] : spans)
                    for (uint32_t r = from; r < to; r += 8)
                        FUZZ_CHECK(h.rd(r, 8) == before[r / 8], off, r);
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
            h.poke(a, p, n);
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
            if (migrations++ < 2)
                h.migrate(in);
            break;
        case 18:
            switch (in.u8()) {
            case 0x5a:
                if (resets++ >= 4)
                    break;
                vtd_engine_reset(h.e);
                h.iqa_known = false;
                h.m.flushed_all();
                h.m.root = 0;
                h.m.root_sm = false;
                h.m.root_clean = h.m.root_known = true;
                h.m.ir_known = true;
                h.m.irt_base = h.m.irt_entries = 0;
                gcmd = 0;
                break;
            case 0x5b:
                vtd_engine_stats_reset(h.e);
                break;
            case 0x5c:
                vtd_engine_count_notify(h.e, VTD_NOTIFY_UNMAP, 1);
                break;
            default:
                ir_op(h, in, gcmd, q_base, q_tail, q_qs);
                break;
            }
            break;
        case 19: {
            // The statistics JSON: one in 256 of these, once per input (one
            // costs as much as a hundred register writes; at one in 32 it
            // was a tenth of the target's time in a perf profile).
            if (!in.u8() && jsons++ < 1) {
                char *s = vtd_engine_stats_json(h.e);
                FUZZ_CHECK(s && s[0] == '{' && std::strrchr(s, '}'));
                free(s);
            }
            uint32_t reg = in.flag() ? ICS : in.flag() ? IECTL : FECTL;
            h.wr(reg, in.u32(), 4);
            break;
        }
        default:
            sm_op(h, in, opcode, gcmd, q_base, q_tail, q_qs);
            break;
        }
    }
    engine_done(h);
    return 0;
}
