// SPDX-License-Identifier: GPL-2.0-or-later
#include "stats.hpp"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <string_view>

namespace viommu::vtd {

Stats::Stats() = default;

constinit thread_local unsigned Stats::shard_index_ = Stats::NO_SHARD;

unsigned Stats::assign_shard()
{
    static std::atomic<uint64_t> next_thread{0};
    uint64_t n = next_thread.fetch_add(1, std::memory_order_relaxed);
    shard_index_ = n < STAT_OWNED_SHARDS ? static_cast<unsigned>(n) : STAT_OWNED_SHARDS;
    return shard_index_;
}

uint64_t DomainStats::hot_sum(unsigned c) const
{
    uint64_t n = 0;
    for (auto &h : hot)
        n += h.v[c].load(std::memory_order_relaxed) - h.base[c].load(std::memory_order_relaxed);
    return n;
}

uint64_t Stats::since_reset(const Shard &s, const Shard &base, unsigned i, bool fault)
{
    auto &v = fault ? s.faults[i] : s.v[i];
    auto &b = fault ? base.faults[i] : base.v[i];
    return v.load(std::memory_order_relaxed) - b.load(std::memory_order_relaxed);
}

void Stats::latency(uint64_t ns)
{
    unsigned bucket = ns ? std::bit_width(ns) - 1 : 0;  // [2^b, 2^(b+1))
    if (bucket >= LATENCY_BUCKETS)
        bucket = LATENCY_BUCKETS - 1;
    latency_hist_[bucket].fetch_add(1, std::memory_order_relaxed);
    latency_count_.fetch_add(1, std::memory_order_relaxed);
    latency_sum_.fetch_add(ns, std::memory_order_relaxed);
    uint64_t max = latency_max_.load(std::memory_order_relaxed);
    while (ns > max && !latency_max_.compare_exchange_weak(max, ns, std::memory_order_relaxed)) {
    }
}

DomainStats &Stats::domain_slow(uint16_t did)
{
    unsigned b = did / DOMAIN_BLOCK, i = did % DOMAIN_BLOCK;
    DomainBlock *block = blocks_[b].load(std::memory_order_acquire);
    DomainStats *d = block ? block->d[i].load(std::memory_order_acquire) : nullptr;
    if (!d) {
        std::lock_guard guard(domain_lock_);
        if (!block_owner_[b]) {
            block_owner_[b] = std::make_unique<DomainBlock>();
            blocks_allocated_.fetch_add(1, std::memory_order_relaxed);
        }
        block = block_owner_[b].get();
        blocks_[b].store(block, std::memory_order_release);
        if (!block->owner[i]) {
            block->owner[i] = std::make_unique<DomainStats>();
            domains_allocated_.fetch_add(1, std::memory_order_relaxed);
        }
        d = block->owner[i].get();
        block->d[i].store(d, std::memory_order_release);
    }
    if (!d->seen.load(std::memory_order_relaxed))
        d->seen.store(true, std::memory_order_relaxed);
    return *d;
}

DomainStats *Stats::find_domain(uint16_t did)
{
    DomainBlock *block = blocks_[did / DOMAIN_BLOCK].load(std::memory_order_acquire);
    if (!block)
        return nullptr;
    DomainStats *d = block->d[did % DOMAIN_BLOCK].load(std::memory_order_acquire);
    if (d && !d->seen.load(std::memory_order_relaxed))
        d->seen.store(true, std::memory_order_relaxed);
    return d;
}

SourceStats &Stats::source(uint16_t sid)
{
    unsigned c = sid / SOURCE_CHUNK;
    SourceChunk *chunk = sources_[c].load(std::memory_order_acquire);
    if (!chunk) [[unlikely]] {
        std::lock_guard guard(chunk_lock_);
        if (!source_owner_[c])
            source_owner_[c] = std::make_unique<SourceChunk>();
        chunk = source_owner_[c].get();
        sources_[c].store(chunk, std::memory_order_release);
    }
    SourceStats &s = chunk->s[sid % SOURCE_CHUNK];
    if (!s.seen.load(std::memory_order_relaxed))
        s.seen.store(true, std::memory_order_relaxed);
    return s;
}

size_t Stats::domain_bytes() const
{
    return sizeof(blocks_) + sizeof(block_owner_) +
           blocks_allocated_.load(std::memory_order_relaxed) * sizeof(DomainBlock) +
           domains_allocated_.load(std::memory_order_relaxed) * sizeof(DomainStats);
}

uint64_t Stats::get(Counter c) const
{
    uint64_t n = 0;
    for (unsigned i = 0; i < SHARDS; i++)
        n += since_reset(shards_[i], base_[i], static_cast<unsigned>(c), false);
    return n;
}

uint64_t Stats::faults_by_reason(VtdFaultReason r) const
{
    uint64_t n = 0;
    for (unsigned i = 0; i < SHARDS; i++)
        n += since_reset(shards_[i], base_[i], fault_slot(r), true);
    return n;
}

void Stats::reset()
{
    for (unsigned i = 0; i < SHARDS; i++) {
        for (unsigned c = 0; c < COUNTERS; c++)
            base_[i].v[c].store(shards_[i].v[c].load(std::memory_order_relaxed),
                                std::memory_order_relaxed);
        for (unsigned r = 0; r < FAULT_SLOTS; r++)
            base_[i].faults[r].store(shards_[i].faults[r].load(std::memory_order_relaxed),
                                     std::memory_order_relaxed);
    }
    for (auto &v : descriptors_)
        v.store(0);
    for (auto &v : latency_hist_)
        v.store(0);
    latency_count_ = 0;
    latency_sum_ = 0;
    latency_max_ = 0;
    for (auto &b : blocks_) {
        DomainBlock *block = b.load(std::memory_order_acquire);
        if (!block)
            continue;
        for (auto &p : block->d) {
            DomainStats *d = p.load(std::memory_order_acquire);
            if (!d)
                continue;
            for (auto &h : d->hot) {
                for (unsigned c = 0; c < DomainStats::Hot::N; c++)
                    h.base[c].store(h.v[c].load(std::memory_order_relaxed),
                                    std::memory_order_relaxed);
            }
            for (auto *v :
                 {&d->faults, &d->inv_domain, &d->inv_page, &d->pages_mapped, &d->pages_unmapped})
                v->store(0, std::memory_order_relaxed);
            d->seen.store(false, std::memory_order_relaxed);
        }
    }
    for (auto &c : sources_) {
        SourceChunk *chunk = c.load(std::memory_order_acquire);
        if (!chunk)
            continue;
        for (auto &s : chunk->s) {
            for (auto *v : {&s.remapped, &s.passed, &s.blocked})
                v->store(0, std::memory_order_relaxed);
            s.seen.store(false, std::memory_order_relaxed);
        }
    }
}

const char *fault_reason_name(VtdFaultReason r)
{
    switch (r) {
    case VTD_FR_NONE:
        return "none";
    case VTD_FR_ROOT_ENTRY_P:
        return "root_entry_not_present";
    case VTD_FR_CONTEXT_ENTRY_P:
        return "context_entry_not_present";
    case VTD_FR_CONTEXT_ENTRY_INV:
        return "context_entry_invalid";
    case VTD_FR_ADDR_BEYOND_MGAW:
        return "address_beyond_mgaw";
    case VTD_FR_WRITE:
        return "write";
    case VTD_FR_READ:
        return "read";
    case VTD_FR_PAGING_ENTRY_INV:
        return "paging_entry_invalid";
    case VTD_FR_ROOT_TABLE_INV:
        return "root_table_invalid";
    case VTD_FR_CONTEXT_TABLE_INV:
        return "context_table_invalid";
    case VTD_FR_ROOT_ENTRY_RSVD:
        return "root_entry_reserved";
    case VTD_FR_CONTEXT_ENTRY_RSVD:
        return "context_entry_reserved";
    case VTD_FR_PAGING_ENTRY_RSVD:
        return "paging_entry_reserved";
    case VTD_FR_CONTEXT_ENTRY_TT:
        return "context_entry_tt";
    case VTD_FR_IR_REQ_RSVD:
        return "ir_request_reserved";
    case VTD_FR_IR_INDEX_OVER:
        return "ir_index_beyond_table";
    case VTD_FR_IR_ENTRY_P:
        return "ir_entry_not_present";
    case VTD_FR_IR_ROOT_INV:
        return "ir_table_invalid";
    case VTD_FR_IR_IRTE_RSVD:
        return "ir_entry_reserved";
    case VTD_FR_IR_REQ_COMPAT:
        return "ir_compatibility_blocked";
    case VTD_FR_IR_SID_ERR:
        return "ir_source_id";
    case VTD_FR_IR_PID_INV:
        return "ir_posted_descriptor_invalid";
    case VTD_FR_SM_RTADDR_INV:
        return "sm_root_table_address_invalid";
    case VTD_FR_SM_TTM0_PASID:
        return "sm_ttm_legacy_request_with_pasid";
    case VTD_FR_SM_TTM0_PAGE_REQ:
        return "sm_ttm_legacy_page_request";
    case VTD_FR_SM_ROOT_ENTRY_INV:
        return "sm_root_entry_access";
    case VTD_FR_SM_ROOT_ENTRY_P:
        return "sm_root_entry_not_present";
    case VTD_FR_SM_ROOT_ENTRY_RSVD:
        return "sm_root_entry_reserved";
    case VTD_FR_SM_CONTEXT_ENTRY_INV_ACCESS:
        return "sm_context_entry_access";
    case VTD_FR_SM_CONTEXT_ENTRY_P:
        return "sm_context_entry_not_present";
    case VTD_FR_SM_CONTEXT_ENTRY_RSVD:
        return "sm_context_entry_reserved";
    case VTD_FR_SM_CONTEXT_ENTRY_INV:
        return "sm_context_entry_invalid";
    case VTD_FR_SM_CONTEXT_DTE:
        return "sm_context_dte_clear";
    case VTD_FR_SM_CONTEXT_PASIDE:
        return "sm_context_paside_clear";
    case VTD_FR_SM_PASID_BEYOND_PDTS:
        return "sm_pasid_beyond_pdts";
    case VTD_FR_SM_CONTEXT_PRE:
        return "sm_context_pre_clear";
    case VTD_FR_SM_RID_PASID_INV:
        return "sm_rid_pasid_invalid";
    case VTD_FR_SM_PASID_DIR_INV:
        return "sm_pasid_directory_access";
    case VTD_FR_SM_PASID_DIR_P:
        return "sm_pasid_directory_not_present";
    case VTD_FR_SM_PASID_DIR_RSVD:
        return "sm_pasid_directory_reserved";
    case VTD_FR_SM_PASID_ENTRY_INV_ACCESS:
        return "sm_pasid_entry_access";
    case VTD_FR_SM_PASID_ENTRY_P:
        return "sm_pasid_entry_not_present";
    case VTD_FR_SM_PASID_ENTRY_RSVD:
        return "sm_pasid_entry_reserved";
    case VTD_FR_SM_PASID_ENTRY_INV:
        return "sm_pasid_entry_invalid";
    case VTD_FR_SM_PASID_ENTRY_ERE:
        return "sm_pasid_entry_ere_clear";
    case VTD_FR_SM_PASID_ENTRY_SRE:
        return "sm_pasid_entry_sre_clear";
    case VTD_FR_SM_FS_ENTRY_INV:
        return "sm_first_stage_entry_access";
    case VTD_FR_SM_FS_ENTRY_P:
        return "sm_first_stage_entry_not_present";
    case VTD_FR_SM_FS_ENTRY_RSVD:
        return "sm_first_stage_entry_reserved";
    case VTD_FR_SM_FS_TOP_INV:
        return "sm_first_stage_top_access";
    case VTD_FR_SM_NESTED_FS_BEYOND_AW:
        return "sm_nested_first_stage_beyond_aw";
    case VTD_FR_SM_NESTED_FS_TOP_READ:
        return "sm_nested_first_stage_top_read";
    case VTD_FR_SM_NESTED_FS_READ:
        return "sm_nested_first_stage_read";
    case VTD_FR_SM_NESTED_FS_WRITE:
        return "sm_nested_first_stage_write";
    case VTD_FR_SM_SS_ENTRY_INV:
        return "sm_second_stage_entry_access";
    case VTD_FR_SM_SS_ENTRY_P:
        return "sm_second_stage_entry_not_present";
    case VTD_FR_SM_SS_ENTRY_RSVD:
        return "sm_second_stage_entry_reserved";
    case VTD_FR_SM_SS_TOP_INV:
        return "sm_second_stage_top_access";
    case VTD_FR_SM_SS_AD_NO_SNOOP:
        return "sm_second_stage_ad_no_snoop";
    case VTD_FR_SM_FS_NON_CANONICAL:
        return "sm_first_stage_non_canonical";
    case VTD_FR_SM_FS_USER:
        return "sm_first_stage_user";
    case VTD_FR_SM_EXECUTE:
        return "sm_execute";
    case VTD_FR_SM_ADDR_BEYOND_AW:
        return "sm_address_beyond_aw";
    case VTD_FR_SM_SS_OUTPUT_BEYOND:
        return "sm_second_stage_output_beyond_aw";
    case VTD_FR_SM_WRITE:
        return "sm_write";
    case VTD_FR_SM_READ:
        return "sm_read";
    case VTD_FR_SM_INTERRUPT_ADDR:
        return "sm_interrupt_address";
    case VTD_FR_SM_FS_AD_NO_SNOOP:
        return "sm_first_stage_ad_no_snoop";
    }
    return "unknown";
}

namespace {

class Json {
public:
    std::string out;

    void open(const char *key, char bracket)
    {
        sep();
        if (key)
            out += std::string("\"") + key + "\":";
        out += bracket;
        first_ = true;
    }
    void close(char bracket)
    {
        out += bracket;
        first_ = false;
    }
    void num(const char *key, uint64_t v)
    {
        sep();
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%" PRIu64, v);
        if (key)
            out += std::string("\"") + key + "\":";
        out += buf;
    }
    void boolean(const char *key, bool v)
    {
        sep();
        out += std::string("\"") + key + "\":" + (v ? "true" : "false");
    }
    void str(const char *key, const char *v)
    {
        sep();
        out += std::string("\"") + key + "\":\"" + v + "\"";
    }

private:
    bool first_ = true;
    void sep()
    {
        if (!first_)
            out += ',';
        first_ = false;
    }
};

}  // namespace

std::string Stats::to_json(const Gauges &g) const
{
    Json j;
    // The counters COUNTER_NAMES places in `section`.
    auto counters = [&](std::string_view section) {
        for (const CounterName &n : COUNTER_NAMES)
            if (section == n.section)
                j.num(n.key, get(n.counter));
    };
    j.open(nullptr, '{');
    j.str("schema", "viommu-vtd-stats/1");

    j.open("config", '{');
    j.num("aw_bits", g.aw_bits);
    j.boolean("caching_mode", g.caching_mode);
    j.num("iotlb_capacity", g.iotlb_capacity);
    j.num("context_cache_capacity", g.context_capacity);
    j.num("fault_records", g.fault_records);
    j.boolean("intremap", g.intremap);
    j.boolean("eim", g.eim);
    j.close('}');

    j.open("translate", '{');
    counters("translate");
    j.close('}');

    j.open("iotlb", '{');
    j.num("entries", g.iotlb_entries);
    counters("iotlb");
    j.close('}');

    j.open("iova", '{');
    counters("iova");
    j.close('}');

    j.open("context_cache", '{');
    j.num("entries", g.context_entries);
    counters("context_cache");
    j.close('}');

    j.open("faults", '{');
    counters("faults");
    j.open("by_reason", '{');
    for (unsigned r = 1; r <= VTD_FR_CONTEXT_ENTRY_TT; r++)
        j.num(fault_reason_name(static_cast<VtdFaultReason>(r)),
              faults_by_reason(static_cast<VtdFaultReason>(r)));
    for (unsigned r = VTD_FR_IR_REQ_RSVD; r <= VTD_FR_IR_PID_INV; r++)
        j.num(fault_reason_name(static_cast<VtdFaultReason>(r)),
              faults_by_reason(static_cast<VtdFaultReason>(r)));
    for (VtdFaultReason r : SM_FAULT_REASONS)
        j.num(fault_reason_name(r), faults_by_reason(r));
    j.close('}');
    j.close('}');

    j.open("invalidations", '{');
    for (const char *sub : {"context", "iotlb", "pasid_iotlb", "pasid_cache"}) {
        j.open(sub, '{');
        counters(std::string("invalidations/") + sub);
        j.close('}');
    }
    counters("invalidations");
    j.open("register_based", '{');
    counters("invalidations/register_based");
    j.close('}');
    j.close('}');

    j.open("queue", '{');
    j.open("descriptors", '{');
    static constexpr const char *type_names[DESC_TYPES] = {"type_0",
                                                           "context_cache",
                                                           "iotlb",
                                                           "device_iotlb",
                                                           "interrupt_entry_cache",
                                                           "wait",
                                                           "pasid_iotlb",
                                                           "pasid_cache",
                                                           "pasid_device_iotlb",
                                                           "type_9",
                                                           "type_10",
                                                           "type_11",
                                                           "type_12",
                                                           "type_13",
                                                           "type_14",
                                                           "type_15"};
    for (unsigned t = 0; t < DESC_TYPES; t++)
        j.num(type_names[t], descriptors(t));
    j.close('}');
    counters("queue");
    j.open("waits", '{');
    counters("queue/waits");
    j.close('}');
    j.open("latency_ns", '{');
    j.num("count", latency_count_.load());
    j.num("sum", latency_sum_.load());
    j.num("max", latency_max_.load());
    j.open("log2_histogram", '[');
    for (unsigned b = 0; b < LATENCY_BUCKETS; b++)
        j.num(nullptr, latency_hist_[b].load());
    j.close(']');
    j.close('}');
    j.close('}');

    j.open("scalable", '{');
    counters("scalable");
    for (const char *sub : {"pgtt", "first_stage"}) {
        j.open(sub, '{');
        counters(std::string("scalable/") + sub);
        j.close('}');
    }
    j.close('}');

    for (const char *section : {"replay", "pages", "device_tlb", "notifications", "pasid_cache"}) {
        j.open(section, '{');
        counters(section);
        j.close('}');
    }

    j.open("interrupt_remapping", '{');
    counters("interrupt_remapping");
    for (const char *sub : {"remappable", "compatibility"}) {
        j.open(sub, '{');
        counters(std::string("interrupt_remapping/") + sub);
        j.close('}');
    }
    j.open("blocked_by_reason", '{');
    for (unsigned r = VTD_FR_IR_REQ_RSVD; r <= VTD_FR_IR_PID_INV; r++)
        j.num(fault_reason_name(static_cast<VtdFaultReason>(r)),
              faults_by_reason(static_cast<VtdFaultReason>(r)));
    j.close('}');
    j.open("iec", '{');
    j.num("capacity", g.iec_capacity);
    j.num("entries", g.iec_entries);
    counters("interrupt_remapping/iec");
    j.close('}');
    j.open("sources", '[');
    for (unsigned ci = 0; ci < sources_.size(); ci++) {
        SourceChunk *chunk = sources_[ci].load(std::memory_order_acquire);
        if (!chunk)
            continue;
        for (unsigned i = 0; i < SOURCE_CHUNK; i++) {
            const SourceStats &s = chunk->s[i];
            if (!s.seen.load(std::memory_order_relaxed))
                continue;
            j.open(nullptr, '{');
            j.num("sid", ci * SOURCE_CHUNK + i);
            j.num("remapped", s.remapped.load());
            j.num("passed_through", s.passed.load());
            j.num("blocked", s.blocked.load());
            j.close('}');
        }
    }
    j.close(']');
    j.close('}');

    j.open("domains", '[');
    for (unsigned bi = 0; bi < blocks_.size(); bi++) {
        const DomainBlock *block = blocks_[bi].load(std::memory_order_acquire);
        if (!block)
            continue;
        for (unsigned i = 0; i < DOMAIN_BLOCK; i++) {
            const DomainStats *p = block->d[i].load(std::memory_order_acquire);
            if (!p || !p->seen.load(std::memory_order_relaxed))
                continue;
            const DomainStats &d = *p;
            j.open(nullptr, '{');
            j.num("id", bi * DOMAIN_BLOCK + i);
            j.num("translations", d.hot_sum(DomainStats::Hot::Translations));
            j.num("iotlb_hits", d.hot_sum(DomainStats::Hot::IotlbHits));
            j.num("iotlb_misses", d.hot_sum(DomainStats::Hot::IotlbMisses));
            j.num("page_walks", d.hot_sum(DomainStats::Hot::PageWalks));
            j.num("faults", d.faults.load());
            j.num("domain_invalidations", d.inv_domain.load());
            j.num("page_invalidations", d.inv_page.load());
            j.num("pages_mapped", d.pages_mapped.load());
            j.num("pages_unmapped", d.pages_unmapped.load());
            j.close('}');
        }
    }
    j.close(']');
    j.close('}');
    return j.out;
}

}  // namespace viommu::vtd
