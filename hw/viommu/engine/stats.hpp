// SPDX-License-Identifier: GPL-2.0-or-later
// Engine statistics, device-wide and per domain.  Counters bumped on the
// translate path live in per-thread shards (device counters, and the
// per-domain counters of the translate path), never under a lock.  The
// first STAT_OWNED_SHARDS threads own a shard each and bump it with a
// plain add: no locked read-modify-write, which on x86 also stalls the
// translation's outstanding cache misses.  Later threads share the last
// shard and add atomically.  A reset records a baseline that readers
// subtract, so it never writes to a shard another thread owns.  The JSON
// schema is in docs/statistics.rst.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>

#include "viommu/vtd.h"

namespace viommu::vtd {

enum class Counter : unsigned {
    Translations,
    TranslationDisabled,  // answered with the identity map: GSTS.TES clear
    PassThrough,
    IotlbHits,
    IotlbMisses,
    IotlbInserts,
    IotlbEvictions,
    ContextHits,
    ContextMisses,
    ContextEvictions,
    PageWalks,
    WalkLevelsRead,
    ContextEntriesRead,
    FaultsRecorded,
    FaultsSuppressedFpd,
    FaultsNotRecorded,  // record_fault was false
    FaultsOverflowed,   // dropped: PFO set or next record busy
    FaultsCollapsed,    // same source-id, page, type and reason as a pending record
    WalksBelow4G,
    WalksAbove4G,  // page walks by IOVA: where the guest puts its DMA
    PagesInvalidatedBelow4G,
    PagesInvalidatedAbove4G,
    FaultEvents,  // fault-event messages sent
    CcGlobal,
    CcDomain,
    CcDevice,
    IotlbGlobal,
    IotlbDomain,
    IotlbPage,
    IotlbPagesInvalidated,
    IotlbEntriesDropped,
    IotlbPageAsDomain,  // page ranges too large to probe: whole domain dropped
    ContextEntriesDropped,
    DeviceIotlb,
    InterruptEntryCache,
    RegCcmd,
    RegIotlb,
    RegIgnoredQi,
    RegInvalid,
    Waits,
    WaitStatusWrite,
    WaitInterrupt,
    WaitFence,
    WaitStatusWriteFailed,
    InvalidationEvents,  // invalidation-event messages sent
    QiInvalidDescriptors,
    QiTailErrors,
    QiSlicesDeferred,  // slices that ended with descriptors left for the next
    WalksForReplay,
    ReplayLeaves,
    ReplayTruncated,
    PagesMapped,
    PagesUnmapped,
    DeviceTlbPage,   // device-IOTLB descriptors by size: S clear (one page),
    DeviceTlbRange,  // S set, a range below 2^64,
    DeviceTlbAll,    // S set, the whole address space
    DeviceTlbPages,  // 4 KiB pages the ranged and single-page ones named
    NotifyUnmap,
    NotifyMap,
    NotifyDeviotlbUnmap,  // notifier events the host delivered
    // Interrupt remapping: requests by outcome and format.
    IrRequests,
    IrNotInterrupt,       // outside the interrupt address range
    IrDisabled,           // passed through: GSTS.IRES clear
    IrRemapped,           // remappable format, remapped
    IrRemappableBlocked,  // remappable format, blocked
    IrCompatPassed,       // compatibility format, passed through (CFIS)
    IrCompatBlocked,      // compatibility format, blocked
    IecHits,
    IecMisses,
    IecInserts,
    IecEvictions,
    IecGlobal,  // invalidations: global descriptors,
    IecIndex,   // index-selective descriptors,
    IecSirtp,   // and GCMD.SIRTP
    IecEntriesDropped,
    // Scalable mode: translations by how they were requested and by the
    // PGTT of the PASID-table entry that translated them, and what the
    // first-stage walks did.
    SmWithoutPasid,
    SmWithPasid,
    SmFirstStage,
    SmSecondStage,
    SmNested,
    SmPassThrough,
    SmFsWalks,
    SmFsEntriesRead,
    SmNestedWalks,  // second-stage walks of nested translation
    SmAccessedSet,
    SmDirtySet,
    SmAdRetries,         // A/D swaps that found the entry changed by the guest
    SmPasidEntriesRead,  // context, PASID directory and PASID-table entries
    // Scalable mode: 256-bit descriptors and the PASID-tagged caches.
    QiWidthErrors,             // a PASID-based descriptor in a 128-bit queue
    PasidIotlbPasid,           // P_IOTLB descriptors: PASID-selective,
    PasidIotlbPage,            // page-selective within PASID,
    PasidIotlbPages,           // 4 KiB pages those named,
    PasidIotlbPageAsPasid,     // page ranges too large to probe: whole PASID dropped
    PasidIotlbEntriesDropped,  // leaf entries the page-selective ones dropped
    PasidCacheDomain,          // PASID-cache descriptors: domain-selective,
    PasidCachePasid,           // PASID-selective,
    PasidCacheGlobal,          // global
    PasidDeviceTlb,            // PASID-based device-TLB descriptors,
    PasidDeviceTlbGlobal,      // ... with G (every PASID)
    PasidCacheHits,
    PasidCacheMisses,
    PasidCacheInserts,
    PasidCacheEvictions,
    IotlbSpacesRecycled,  // (DID, PASID) tags reassigned: their entries dropped
    Count_
};

// Where each counter appears in the JSON report (docs/statistics.rst): the
// object path below the top level ("/" between levels) and its key.  In the
// enum's order; the static_asserts keep the two in step.
struct CounterName {
    Counter counter;
    const char *section;
    const char *key;
};

inline constexpr CounterName COUNTER_NAMES[] = {
    {Counter::Translations, "translate", "requests"},
    {Counter::TranslationDisabled, "translate", "translation_disabled"},
    {Counter::PassThrough, "translate", "pass_through"},
    {Counter::IotlbHits, "iotlb", "hits"},
    {Counter::IotlbMisses, "iotlb", "misses"},
    {Counter::IotlbInserts, "iotlb", "inserts"},
    {Counter::IotlbEvictions, "iotlb", "evictions"},
    {Counter::ContextHits, "context_cache", "hits"},
    {Counter::ContextMisses, "context_cache", "misses"},
    {Counter::ContextEvictions, "context_cache", "evictions"},
    {Counter::PageWalks, "translate", "page_walks"},
    {Counter::WalkLevelsRead, "translate", "paging_entries_read"},
    {Counter::ContextEntriesRead, "translate", "context_entries_read"},
    {Counter::FaultsRecorded, "faults", "recorded"},
    {Counter::FaultsSuppressedFpd, "faults", "suppressed_fpd"},
    {Counter::FaultsNotRecorded, "faults", "not_recorded"},
    {Counter::FaultsOverflowed, "faults", "overflowed"},
    {Counter::FaultsCollapsed, "faults", "collapsed"},
    {Counter::WalksBelow4G, "iova", "walks_below_4g"},
    {Counter::WalksAbove4G, "iova", "walks_above_4g"},
    {Counter::PagesInvalidatedBelow4G, "iova", "pages_invalidated_below_4g"},
    {Counter::PagesInvalidatedAbove4G, "iova", "pages_invalidated_above_4g"},
    {Counter::FaultEvents, "faults", "events"},
    {Counter::CcGlobal, "invalidations/context", "global"},
    {Counter::CcDomain, "invalidations/context", "domain"},
    {Counter::CcDevice, "invalidations/context", "device"},
    {Counter::IotlbGlobal, "invalidations/iotlb", "global"},
    {Counter::IotlbDomain, "invalidations/iotlb", "domain"},
    {Counter::IotlbPage, "invalidations/iotlb", "page"},
    {Counter::IotlbPagesInvalidated, "invalidations/iotlb", "pages"},
    {Counter::IotlbEntriesDropped, "invalidations/iotlb", "entries_dropped"},
    {Counter::IotlbPageAsDomain, "invalidations/iotlb", "page_as_domain"},
    {Counter::ContextEntriesDropped, "invalidations/context", "entries_dropped"},
    {Counter::DeviceIotlb, "invalidations", "device_iotlb"},
    {Counter::InterruptEntryCache, "invalidations", "interrupt_entry_cache"},
    {Counter::RegCcmd, "invalidations/register_based", "context"},
    {Counter::RegIotlb, "invalidations/register_based", "iotlb"},
    {Counter::RegIgnoredQi, "invalidations/register_based", "ignored_qi_enabled"},
    {Counter::RegInvalid, "invalidations/register_based", "invalid"},
    {Counter::Waits, "queue/waits", "total"},
    {Counter::WaitStatusWrite, "queue/waits", "status_write"},
    {Counter::WaitInterrupt, "queue/waits", "interrupt"},
    {Counter::WaitFence, "queue/waits", "fence"},
    {Counter::WaitStatusWriteFailed, "queue/waits", "status_write_failed"},
    {Counter::InvalidationEvents, "queue/waits", "events"},
    {Counter::QiInvalidDescriptors, "queue", "invalid_descriptors"},
    {Counter::QiTailErrors, "queue", "tail_errors"},
    {Counter::QiSlicesDeferred, "queue", "slices_deferred"},
    {Counter::WalksForReplay, "replay", "walks"},
    {Counter::ReplayLeaves, "replay", "leaves"},
    {Counter::ReplayTruncated, "replay", "truncated"},
    {Counter::PagesMapped, "pages", "mapped"},
    {Counter::PagesUnmapped, "pages", "unmapped"},
    {Counter::DeviceTlbPage, "device_tlb", "page"},
    {Counter::DeviceTlbRange, "device_tlb", "range"},
    {Counter::DeviceTlbAll, "device_tlb", "all"},
    {Counter::DeviceTlbPages, "device_tlb", "pages"},
    {Counter::NotifyUnmap, "notifications", "unmap"},
    {Counter::NotifyMap, "notifications", "map"},
    {Counter::NotifyDeviotlbUnmap, "notifications", "deviotlb_unmap"},
    {Counter::IrRequests, "interrupt_remapping", "requests"},
    {Counter::IrNotInterrupt, "interrupt_remapping", "not_interrupt"},
    {Counter::IrDisabled, "interrupt_remapping", "disabled_pass_through"},
    {Counter::IrRemapped, "interrupt_remapping/remappable", "remapped"},
    {Counter::IrRemappableBlocked, "interrupt_remapping/remappable", "blocked"},
    {Counter::IrCompatPassed, "interrupt_remapping/compatibility", "passed_through"},
    {Counter::IrCompatBlocked, "interrupt_remapping/compatibility", "blocked"},
    {Counter::IecHits, "interrupt_remapping/iec", "hits"},
    {Counter::IecMisses, "interrupt_remapping/iec", "misses"},
    {Counter::IecInserts, "interrupt_remapping/iec", "inserts"},
    {Counter::IecEvictions, "interrupt_remapping/iec", "evictions"},
    {Counter::IecGlobal, "interrupt_remapping/iec", "invalidations_global"},
    {Counter::IecIndex, "interrupt_remapping/iec", "invalidations_index"},
    {Counter::IecSirtp, "interrupt_remapping/iec", "invalidations_sirtp"},
    {Counter::IecEntriesDropped, "interrupt_remapping/iec", "entries_dropped"},
    {Counter::SmWithoutPasid, "scalable", "requests_without_pasid"},
    {Counter::SmWithPasid, "scalable", "requests_with_pasid"},
    {Counter::SmFirstStage, "scalable/pgtt", "first_stage"},
    {Counter::SmSecondStage, "scalable/pgtt", "second_stage"},
    {Counter::SmNested, "scalable/pgtt", "nested"},
    {Counter::SmPassThrough, "scalable/pgtt", "pass_through"},
    {Counter::SmFsWalks, "scalable/first_stage", "walks"},
    {Counter::SmFsEntriesRead, "scalable/first_stage", "entries_read"},
    {Counter::SmNestedWalks, "scalable/first_stage", "nested_second_stage_walks"},
    {Counter::SmAccessedSet, "scalable/first_stage", "accessed_set"},
    {Counter::SmDirtySet, "scalable/first_stage", "dirty_set"},
    {Counter::SmAdRetries, "scalable/first_stage", "ad_update_retries"},
    {Counter::SmPasidEntriesRead, "scalable", "context_and_pasid_entries_read"},
    {Counter::QiWidthErrors, "queue", "width_errors"},
    {Counter::PasidIotlbPasid, "invalidations/pasid_iotlb", "pasid"},
    {Counter::PasidIotlbPage, "invalidations/pasid_iotlb", "page"},
    {Counter::PasidIotlbPages, "invalidations/pasid_iotlb", "pages"},
    {Counter::PasidIotlbPageAsPasid, "invalidations/pasid_iotlb", "page_as_pasid"},
    {Counter::PasidIotlbEntriesDropped, "invalidations/pasid_iotlb", "entries_dropped"},
    {Counter::PasidCacheDomain, "invalidations/pasid_cache", "domain"},
    {Counter::PasidCachePasid, "invalidations/pasid_cache", "pasid"},
    {Counter::PasidCacheGlobal, "invalidations/pasid_cache", "global"},
    {Counter::PasidDeviceTlb, "invalidations", "pasid_device_iotlb"},
    {Counter::PasidDeviceTlbGlobal, "device_tlb", "pasid_global"},
    {Counter::PasidCacheHits, "pasid_cache", "hits"},
    {Counter::PasidCacheMisses, "pasid_cache", "misses"},
    {Counter::PasidCacheInserts, "pasid_cache", "inserts"},
    {Counter::PasidCacheEvictions, "pasid_cache", "evictions"},
    {Counter::IotlbSpacesRecycled, "iotlb", "pasid_spaces_recycled"},
};

static_assert(std::size(COUNTER_NAMES) == static_cast<size_t>(Counter::Count_),
              "every counter needs its place in the report");

consteval bool counter_names_in_enum_order()
{
    for (size_t i = 0; i < std::size(COUNTER_NAMES); i++)
        if (COUNTER_NAMES[i].counter != static_cast<Counter>(i))
            return false;
    return true;
}
static_assert(counter_names_in_enum_order());

constexpr unsigned STAT_OWNED_SHARDS = 8;
constexpr unsigned STAT_SHARDS = STAT_OWNED_SHARDS + 1;  // the last one is shared

// Adds n to a counter in shard `shard` of the calling thread.
inline void stat_bump(std::atomic<uint64_t> &c, uint64_t n, unsigned shard)
{
    if (shard < STAT_OWNED_SHARDS)
        c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    else
        c.fetch_add(n, std::memory_order_relaxed);
}

struct DomainStats {
    // The translate path's counters: one cache line per thread shard, so
    // threads translating for the same domain do not share a line.  `base`
    // holds the values at the last reset.
    struct alignas(64) Hot {
        enum : unsigned { Translations, IotlbHits, IotlbMisses, PageWalks, N };
        std::array<std::atomic<uint64_t>, N> v{}, base{};
        void bump(unsigned c, unsigned shard) { stat_bump(v[c], 1, shard); }
    };
    std::array<Hot, STAT_SHARDS> hot;
    uint64_t hot_sum(unsigned c) const;
    std::atomic<uint64_t> faults{0}, inv_domain{0}, inv_page{0}, pages_mapped{0}, pages_unmapped{0};
    // The page tables this domain was last seen using (for classifying
    // page-selective invalidations as map or unmap).
    std::atomic<uint64_t> slptptr{0};
    std::atomic<uint8_t> levels{0};
    std::atomic<bool> seen{false};
};

// Interrupt requests of one source-id, by outcome.
struct SourceStats {
    std::atomic<uint64_t> remapped{0}, passed{0}, blocked{0};
    std::atomic<bool> seen{false};
};

// The scalable-mode fault reasons, in the order the report lists them.
inline constexpr VtdFaultReason SM_FAULT_REASONS[] = {
    VTD_FR_SM_RTADDR_INV,
    VTD_FR_SM_TTM0_PASID,
    VTD_FR_SM_TTM0_PAGE_REQ,
    VTD_FR_SM_ROOT_ENTRY_INV,
    VTD_FR_SM_ROOT_ENTRY_P,
    VTD_FR_SM_ROOT_ENTRY_RSVD,
    VTD_FR_SM_CONTEXT_ENTRY_INV_ACCESS,
    VTD_FR_SM_CONTEXT_ENTRY_P,
    VTD_FR_SM_CONTEXT_ENTRY_RSVD,
    VTD_FR_SM_CONTEXT_ENTRY_INV,
    VTD_FR_SM_CONTEXT_DTE,
    VTD_FR_SM_CONTEXT_PASIDE,
    VTD_FR_SM_PASID_BEYOND_PDTS,
    VTD_FR_SM_CONTEXT_PRE,
    VTD_FR_SM_RID_PASID_INV,
    VTD_FR_SM_PASID_DIR_INV,
    VTD_FR_SM_PASID_DIR_P,
    VTD_FR_SM_PASID_DIR_RSVD,
    VTD_FR_SM_PASID_ENTRY_INV_ACCESS,
    VTD_FR_SM_PASID_ENTRY_P,
    VTD_FR_SM_PASID_ENTRY_RSVD,
    VTD_FR_SM_PASID_ENTRY_INV,
    VTD_FR_SM_PASID_ENTRY_ERE,
    VTD_FR_SM_PASID_ENTRY_SRE,
    VTD_FR_SM_FS_ENTRY_INV,
    VTD_FR_SM_FS_ENTRY_P,
    VTD_FR_SM_FS_ENTRY_RSVD,
    VTD_FR_SM_FS_TOP_INV,
    VTD_FR_SM_NESTED_FS_BEYOND_AW,
    VTD_FR_SM_NESTED_FS_TOP_READ,
    VTD_FR_SM_NESTED_FS_READ,
    VTD_FR_SM_NESTED_FS_WRITE,
    VTD_FR_SM_SS_ENTRY_INV,
    VTD_FR_SM_SS_ENTRY_P,
    VTD_FR_SM_SS_ENTRY_RSVD,
    VTD_FR_SM_SS_TOP_INV,
    VTD_FR_SM_SS_AD_NO_SNOOP,
    VTD_FR_SM_FS_NON_CANONICAL,
    VTD_FR_SM_FS_USER,
    VTD_FR_SM_EXECUTE,
    VTD_FR_SM_ADDR_BEYOND_AW,
    VTD_FR_SM_SS_OUTPUT_BEYOND,
    VTD_FR_SM_WRITE,
    VTD_FR_SM_READ,
    VTD_FR_SM_INTERRUPT_ADDR,
    VTD_FR_SM_FS_AD_NO_SNOOP,
};

// Slots of the per-reason fault counters: DMA-remapping reasons 0..15,
// then the interrupt-remapping ones 20h..27h, then SM_FAULT_REASONS.
constexpr unsigned SM_FAULT_SLOT0 = 16 + 8;
constexpr unsigned FAULT_SLOTS = SM_FAULT_SLOT0 + std::size(SM_FAULT_REASONS);
constexpr unsigned fault_slot(VtdFaultReason r)
{
    if (r >= VTD_FR_IR_REQ_RSVD && r <= VTD_FR_IR_PID_INV)
        return 16 + (r - VTD_FR_IR_REQ_RSVD);
    if (r >= VTD_FR_SM_RTADDR_INV) {
        for (unsigned i = 0; i < std::size(SM_FAULT_REASONS); i++)
            if (SM_FAULT_REASONS[i] == r)
                return SM_FAULT_SLOT0 + i;
        return 0;
    }
    return r < 16 ? r : 0;
}

class Stats {
public:
    static constexpr unsigned DESC_TYPES = 16;
    static constexpr unsigned LATENCY_BUCKETS = 32;

    Stats();

    // The calling thread's shard (see the top of this file).  Inline and
    // constant-initialized: no TLS wrapper call on the translate path.
    static unsigned thread_shard()
    {
        unsigned s = shard_index_;
        return s != NO_SHARD ? s : assign_shard();
    }

    void add(Counter c, uint64_t n, unsigned shard)
    {
        stat_bump(shards_[shard].v[static_cast<unsigned>(c)], n, shard);
    }
    void add(Counter c, uint64_t n = 1) { add(c, n, thread_shard()); }
    void fault(VtdFaultReason r)
    {
        unsigned shard = thread_shard();
        stat_bump(shards_[shard].faults[fault_slot(r)], 1, shard);
    }
    void descriptor(unsigned type)
    {
        descriptors_[type % DESC_TYPES].fetch_add(1, std::memory_order_relaxed);
    }
    void latency(uint64_t ns);
    // A domain's statistics, allocated on first use and marked as seen.
    // For domains a context names: a guest has one per device it
    // translates for, and that is what per-domain memory may cost.
    DomainStats &domain(uint16_t did)
    {
        DomainBlock *block = blocks_[did / DOMAIN_BLOCK].load(std::memory_order_acquire);
        if (block) [[likely]] {
            DomainStats *d = block->d[did % DOMAIN_BLOCK].load(std::memory_order_acquire);
            if (d && d->seen.load(std::memory_order_relaxed)) [[likely]]
                return *d;
        }
        return domain_slow(did);
    }
    SourceStats &source(uint16_t sid);
    // The statistics of a domain that has them (marked as seen), else
    // nullptr: what an invalidation of a domain-id uses, so that naming
    // domain-ids in descriptors allocates nothing.
    DomainStats *find_domain(uint16_t did);
    // Host memory held for per-domain statistics.
    size_t domain_bytes() const;

    uint64_t get(Counter c) const;
    uint64_t faults_by_reason(VtdFaultReason r) const;
    uint64_t descriptors(unsigned type) const { return descriptors_[type % DESC_TYPES].load(); }
    uint64_t latency_count() const { return latency_count_.load(); }

    struct Gauges {  // instantaneous values the engine adds to the report
        unsigned aw_bits;
        bool caching_mode;
        size_t iotlb_capacity, iotlb_entries, context_capacity, context_entries;
        unsigned fault_records;
        bool intremap = false, eim = false;
        size_t iec_capacity = 0, iec_entries = 0;
    };
    std::string to_json(const Gauges &g) const;
    // The same into `out` (cleared first): a caller that keeps the string
    // reuses its memory.
    void to_json(const Gauges &g, std::string &out) const;
    void reset();

private:
    static constexpr unsigned COUNTERS = static_cast<unsigned>(Counter::Count_);
    static constexpr unsigned SHARDS = STAT_SHARDS;
    static constexpr unsigned DOMAIN_BLOCK = 256;
    static constexpr unsigned SOURCE_CHUNK = 256;

    struct alignas(64) Shard {
        std::array<std::atomic<uint64_t>, COUNTERS> v{};
        std::array<std::atomic<uint64_t>, FAULT_SLOTS> faults{};
    };
    static uint64_t since_reset(const Shard &s, const Shard &base, unsigned i, bool fault);
    // One bit per entry of a block or chunk that may be seen, never cleared:
    // a domain's when it is allocated, a source's when it is first seen
    // (before its own flag).  The report and reset visit those entries
    // instead of every slot of every block.
    using SeenMask = std::array<std::atomic<uint64_t>, 4>;
    static void mark_seen(SeenMask &m, unsigned i)
    {
        m[i / 64].fetch_or(uint64_t{1} << (i % 64), std::memory_order_relaxed);
    }
    template <typename F>
    static void for_each_seen(const SeenMask &m, F &&f)
    {
        for (unsigned w = 0; w < m.size(); w++)
            for (uint64_t bits = m[w].load(std::memory_order_relaxed); bits; bits &= bits - 1)
                f(w * 64 + static_cast<unsigned>(std::countr_zero(bits)));
    }
    struct DomainBlock {
        std::array<std::atomic<DomainStats *>, DOMAIN_BLOCK> d{};
        std::array<std::unique_ptr<DomainStats>, DOMAIN_BLOCK> owner;
        SeenMask seen{};
    };

    static unsigned assign_shard();
    DomainStats &domain_slow(uint16_t did);

    static constexpr unsigned NO_SHARD = ~0u;
    // Threads given a shard so far (process-wide): shards from
    // min(threads_, SHARDS) on were never written.
    static std::atomic<uint64_t> threads_;
    static constinit thread_local unsigned shard_index_;

    std::array<Shard, SHARDS> shards_;
    std::array<Shard, SHARDS> base_;  // the shards' values at the last reset
    std::array<std::atomic<uint64_t>, DESC_TYPES> descriptors_{};
    std::array<std::atomic<uint64_t>, LATENCY_BUCKETS> latency_hist_{};
    std::atomic<uint64_t> latency_count_{0}, latency_sum_{0}, latency_max_{0};

    // Domain statistics are allocated one domain at a time on first use,
    // found through blocks of pointers for 256 domain-ids (allocated with
    // their first domain); published through atomics, owned by
    // `block_owner_` and the blocks.
    std::mutex domain_lock_;
    std::array<std::unique_ptr<DomainBlock>, 65536 / DOMAIN_BLOCK> block_owner_;
    std::array<std::atomic<DomainBlock *>, 65536 / DOMAIN_BLOCK> blocks_{};
    std::atomic<size_t> blocks_allocated_{0}, domains_allocated_{0};
    // What domains and sources count into when their statistics could not
    // be allocated; never reported.
    DomainStats unaccounted_domain_;
    SourceStats unaccounted_source_;

    // Source-id statistics of interrupt requests, allocated a chunk of 256
    // source-ids at a time on first use; published through atomics, owned
    // by `source_owner_`.
    std::mutex chunk_lock_;
    struct SourceChunk {
        std::array<SourceStats, SOURCE_CHUNK> s;
        SeenMask seen{};
    };
    std::array<std::unique_ptr<SourceChunk>, 65536 / SOURCE_CHUNK> source_owner_;
    std::array<std::atomic<SourceChunk *>, 65536 / SOURCE_CHUNK> sources_{};
};

const char *fault_reason_name(VtdFaultReason r);

}  // namespace viommu::vtd
