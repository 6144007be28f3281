// SPDX-License-Identifier: GPL-2.0-or-later
// One VT-d remapping unit: ties the register file, the caches, page walks,
// invalidation and fault recording together behind the C ABI in
// include/viommu/vtd.h.
//
// Threading: translate(), walk(), is_pass_through() and device_context() run on any number of
// threads concurrently with one MMIO thread.  State they share with MMIO is
// either atomic (TES, the active root table address), in the caches (own
// sharded locks) or in the fault recorder (own lock).  The remaining
// registers belong to the MMIO thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "context_cache.hpp"
#include "fault_recording.hpp"
#include "features.hpp"
#include "host.hpp"
#include "interrupt_remapping.hpp"
#include "invalidation_queue.hpp"
#include "iotlb.hpp"
#include "pasid_cache.hpp"
#include "stats.hpp"

namespace viommu::vtd {

// RTADDR's writable bits: the table address below the host address width
// (bits from it up read 0, as intel-iommu masks them), and TTM with
// scalable mode.
uint64_t rtaddr_writable(const Features &f);

class Engine final : private Invalidator {
public:
    static std::unique_ptr<Engine> create(const VtdConfig &cfg, const VtdHostOps &ops, void *opaque,
                                          std::string &err);
    Engine(const Features &f, const VtdHostOps &ops, void *opaque);

    void reset();

    uint64_t mmio_read(uint64_t offset, unsigned size);
    void mmio_write(uint64_t offset, uint64_t value, unsigned size);
    // Queued invalidation left for later slices (see vtd.h).
    bool queue_pending() const { return queue_.pending(); }
    bool process_queue() { return queue_.process(); }

    VtdFaultReason translate(uint16_t sid, uint64_t addr, unsigned access, bool record_fault,
                             VtdTranslation &out);
    // A request with PASID (scalable mode; see vtd.h).
    VtdFaultReason translate_pasid(uint16_t sid, uint32_t pasid, bool privileged, uint64_t addr,
                                   unsigned access, bool record_fault, VtdTranslation &out);
    bool translation_enabled() const { return te_.load(std::memory_order_acquire); }
    bool is_pass_through(uint16_t sid);
    bool device_context(uint16_t sid, VtdDeviceContext &out);
    int walk(uint16_t sid, uint64_t start, uint64_t end, VtdWalkFn cb, void *ctx);
    VtdIrResult remap_interrupt(uint16_t sid, uint64_t addr, uint32_t data, bool record_fault,
                                VtdInterrupt &out)
    {
        return ir_.remap(sid, addr, data, record_fault, out);
    }

    std::string stats_json();
    // Also ends the per-thread memos, which skip the domain lookup that
    // marks a domain as seen.
    void stats_reset()
    {
        stats_.reset();
        translations_changed();
    }
    void count_notify(VtdNotifyKind kind, uint64_t events);
    const Stats &stats() const { return stats_; }
    // Host memory held for per-domain state: statistics and the caches'
    // domain epochs, allocated as domain-ids come into use.
    size_t domain_state_bytes() const
    {
        return stats_.domain_bytes() + iotlb_.domain_bytes() + contexts_.domain_bytes() +
               pasids_.domain_bytes();
    }

    // Architectural state for migration (migration.cc).
    void get_state(VtdState &st) const;
    VtdStateError set_state(const VtdState &st);  // refused: nothing changed

    // Entries one replay walk may read: 64 GiB of 4 KiB mappings.
    static constexpr uint64_t REPLAY_ENTRY_BUDGET = uint64_t{1} << 24;

private:
    uint32_t read32(uint32_t offset);
    void write32(uint32_t offset, uint32_t value);
    void global_command(uint32_t value);
    void run_context_command();
    void run_iotlb_command();

    ContextLookup resolve_context(uint16_t sid);
    // Scalable mode (scalable_translate.cc): the PASID-table entry through
    // the PASID cache.
    ContextLookup resolve_scalable(uint16_t sid, std::optional<uint32_t> pasid, uint64_t rta,
                                   unsigned shard);
    VtdFaultReason fault(uint16_t sid, uint64_t addr, unsigned access, bool record,
                         VtdFaultReason reason, bool fpd, DomainStats *ds,
                         std::optional<FaultPasid> pasid = std::nullopt);
    // Scalable mode (engine.cc): translations through a PASID-table entry
    // other than the legacy-mode fast path.
    void count_pgtt(Pgtt pgtt, unsigned shard);
    VtdFaultReason translate_first_stage(uint16_t sid, std::optional<FaultPasid> pasid,
                                         bool supervisor, uint64_t addr, unsigned access,
                                         bool record, const Context &ctx, DomainStats &ds,
                                         uint64_t epoch, unsigned shard, VtdTranslation &out);
    VtdFaultReason translate_second_stage(uint16_t sid, std::optional<FaultPasid> pasid,
                                          uint64_t addr, unsigned access, bool record,
                                          const Context &ctx, DomainStats &ds, uint64_t epoch,
                                          unsigned shard, VtdTranslation &out);
    // `supervisor`: the address space of supervisor requests (SPACE_SUPERVISOR).
    Iotlb::Space sm_space(const Context &ctx, bool supervisor);
    Iotlb::FillToken sm_prepare_fill(const Context &ctx, bool supervisor = false);
    std::optional<Leaf> sm_lookup(const Context &ctx, uint64_t addr, Iotlb::Slot *stale,
                                  bool supervisor = false);
    Iotlb::InsertResult sm_insert(const Context &ctx, uint64_t addr, const Leaf &leaf,
                                  const Iotlb::FillToken &token, const Iotlb::Slot &stale,
                                  bool supervisor = false);
    void flush_caches(VtdCacheResetReason why);

    void invalidate_context(const ContextInvalidation &req) override;
    uint64_t invalidate_iotlb(const IotlbInvalidation &req) override;
    void invalidate_device_tlb(uint16_t sid, uint16_t pfsid, uint8_t mip, uint64_t first,
                               uint64_t last) override
    {
        // Nothing the engine caches is a device-TLB: the host's devices hold them.
        host_.device_iotlb_invalidated(sid, pfsid, mip, first, last);
    }
    void invalidate_interrupt_entries(const IecInvalidation &req) override { ir_.invalidate(req); }
    // Scalable mode (scalable_invalidation.cc).
    uint64_t invalidate_pasid_iotlb(const PasidIotlbInvalidation &req) override;
    void invalidate_pasid_cache(const PasidCacheInvalidation &req) override;
    void invalidate_pasid_device_tlb(const PasidDeviceTlbInvalidation &req) override;
    void classify_pages(uint16_t did, uint64_t addr, uint64_t pages);

    // Recent translations, per thread (see engine.cc): valid while
    // xlat_epoch_ is unchanged.  Whatever removes or changes an entry of
    // the context cache or the IOTLB (invalidation, eviction, a new root
    // table, TE, reset, load) bumps the epoch once it is done, so the
    // recent-translation cache never holds what those caches no longer do.
    void translations_changed() { xlat_epoch_.fetch_add(1); }
    bool translate_recent(uint16_t sid, uint64_t addr, unsigned access, uint64_t epoch,
                          unsigned shard, VtdTranslation &out);
    void remember(uint16_t sid, uint64_t addr, uint64_t epoch, const VtdTranslation &t,
                  DomainStats &ds, Pgtt pgtt);
    void count_fill(const Iotlb::InsertResult &ins, unsigned shard);
    // Every translate path's IOTLB statistics: a lookup's hit or miss, and
    // the page walk after a miss.  Defined here so that they inline into
    // translate() and the scalable-mode paths: they run on every request.
    void count_lookup(bool hit, DomainStats::Hot &hot, unsigned shard)
    {
        stats_.add(hit ? Counter::IotlbHits : Counter::IotlbMisses, 1, shard);
        hot.bump(hit ? DomainStats::Hot::IotlbHits : DomainStats::Hot::IotlbMisses, shard);
    }
    void count_walk(uint64_t addr, unsigned levels_read, DomainStats::Hot &hot, unsigned shard)
    {
        stats_.add(Counter::PageWalks, 1, shard);
        stats_.add(Counter::WalkLevelsRead, levels_read, shard);
        stats_.add(addr >> 32 ? Counter::WalksAbove4G : Counter::WalksBelow4G, 1, shard);
        hot.bump(DomainStats::Hot::PageWalks, shard);
    }
    VtdFaultReason map_leaf(uint16_t sid, uint64_t addr, unsigned access, bool record,
                            const Leaf &leaf, const Context &ctx, DomainStats &ds,
                            std::optional<FaultPasid> pasid, bool recent, uint64_t epoch,
                            VtdTranslation &out);
    VtdFaultReason map_leaf_scalable(uint16_t sid, uint64_t addr, unsigned access, bool record,
                                     const Leaf &leaf, const Context &ctx, DomainStats &ds,
                                     std::optional<FaultPasid> pasid, bool recent, uint64_t epoch,
                                     VtdTranslation &out);
    void remember_scalable(uint16_t sid, uint64_t addr, uint64_t epoch, const VtdTranslation &t,
                           DomainStats &ds, Pgtt pgtt);
    static void identity(uint64_t addr, uint16_t did, VtdTranslation &out);

    const Features f_;
    const Host host_;
    Stats stats_;
    FaultRecorder faults_;
    InvalidationQueue queue_;
    Iotlb iotlb_;
    ContextCache contexts_;
    PasidCache pasids_;  // scalable mode: PASID-table entries by (source-id, PASID)
    InterruptRemapping ir_;

    const uint64_t id_;  // this engine among all, for the per-thread cache
    std::atomic<uint64_t> xlat_epoch_{1};
    std::atomic<bool> te_{false};
    std::atomic<uint64_t> root_table_{0};  // latched by GCMD.SRTP
    uint32_t gsts_ = 0;
    uint64_t rtaddr_ = 0, ccmd_ = 0, iva_ = 0, iotlb_reg_ = 0;
    bool last_pages_as_domain_ = false;  // the last page-selective request went domain-wide
};

}  // namespace viommu::vtd
