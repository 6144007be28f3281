// SPDX-License-Identifier: GPL-2.0-or-later
#include "stats.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <new>
#include <string_view>

namespace viommu::vtd {

Stats::Stats() = default;

constinit thread_local unsigned Stats::shard_index_ = Stats::NO_SHARD;

std::atomic<uint64_t> Stats::threads_{0};

unsigned Stats::assign_shard()
{
    uint64_t n = threads_.fetch_add(1, std::memory_order_acq_rel);
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
        // Called on the translate path: an allocation failure must not
        // leave the engine, so the domain then counts into a sink.
        try {
            if (!block_owner_[b]) {
                block_owner_[b] = std::make_unique<DomainBlock>();
                blocks_allocated_.fetch_add(1, std::memory_order_relaxed);
            }
            block = block_owner_[b].get();
            blocks_[b].store(block, std::memory_order_release);
            if (!block->owner[i]) {
                block->owner[i] = std::make_unique<DomainStats>();
                domains_allocated_.fetch_add(1, std::memory_order_relaxed);
                mark_seen(block->seen, i);  // before the entry is published
            }
        } catch (const std::bad_alloc &) {
            return unaccounted_domain_;
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
        if (!source_owner_[c]) {
            try {  // on the interrupt path, as domain_slow() on translate's
                source_owner_[c] = std::make_unique<SourceChunk>();
            } catch (const std::bad_alloc &) {
                return unaccounted_source_;
            }
        }
        chunk = source_owner_[c].get();
        sources_[c].store(chunk, std::memory_order_release);
    }
    SourceStats &s = chunk->s[sid % SOURCE_CHUNK];
    if (!s.seen.load(std::memory_order_relaxed)) {
        mark_seen(chunk->seen, sid % SOURCE_CHUNK);
        s.seen.store(true, std::memory_order_relaxed);
    }
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
        // The mask holds every allocated domain (domain_slow).
        for_each_seen(block->seen, [&](unsigned i) {
            DomainStats *d = block->d[i].load(std::memory_order_acquire);
            if (!d)
                return;
            for (auto &h : d->hot) {
                for (unsigned c = 0; c < DomainStats::Hot::N; c++)
                    h.base[c].store(h.v[c].load(std::memory_order_relaxed),
                                    std::memory_order_relaxed);
            }
            for (auto *v :
                 {&d->faults, &d->inv_domain, &d->inv_page, &d->pages_mapped, &d->pages_unmapped})
                v->store(0, std::memory_order_relaxed);
            d->seen.store(false, std::memory_order_relaxed);
        });
    }
    for (auto &c : sources_) {
        SourceChunk *chunk = c.load(std::memory_order_acquire);
        if (!chunk)
            continue;
        // A source's counters move only through source(), which marks it.
        for_each_seen(chunk->seen, [&](unsigned i) {
            SourceStats &s = chunk->s[i];
            for (auto *v : {&s.remapped, &s.passed, &s.blocked})
                v->store(0, std::memory_order_relaxed);
            s.seen.store(false, std::memory_order_relaxed);
        });
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
    case VTD_FR_INTERRUPT_ADDR:
        return "interrupt_address";
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

// The report's objects that hold counters, in the order the report writes
// them; section() gives an object's place at compile time (an object the
// list lacks does not compile).
constexpr std::string_view SECTIONS[] = {
    "translate",
    "iotlb",
    "iova",
    "context_cache",
    "faults",
    "invalidations/context",
    "invalidations/iotlb",
    "invalidations/pasid_iotlb",
    "invalidations/pasid_cache",
    "invalidations",
    "invalidations/register_based",
    "queue",
    "queue/waits",
    "scalable",
    "scalable/pgtt",
    "scalable/first_stage",
    "replay",
    "pages",
    "device_tlb",
    "notifications",
    "pasid_cache",
    "interrupt_remapping",
    "interrupt_remapping/remappable",
    "interrupt_remapping/compatibility",
    "interrupt_remapping/iec",
};
constexpr unsigned NSECTIONS = std::size(SECTIONS);

consteval unsigned section(std::string_view name)
{
    for (unsigned i = 0; i < NSECTIONS; i++)
        if (SECTIONS[i] == name)
            return i;
    throw "not a section of the report";  // not a constant expression: no build
}

// COUNTER_NAMES' indexes grouped by section (in SECTIONS' order), each
// group in the table's order: what a search of the table for each section
// would give, computed once, at compile time.
struct SectionIndex {
    std::array<uint8_t, std::size(COUNTER_NAMES)> counter{};
    std::array<uint8_t, NSECTIONS + 1> start{};
};

consteval SectionIndex make_section_index()
{
    SectionIndex x;
    unsigned n = 0;
    for (unsigned sec = 0; sec < NSECTIONS; sec++) {
        x.start[sec] = static_cast<uint8_t>(n);
        for (unsigned i = 0; i < std::size(COUNTER_NAMES); i++)
            if (SECTIONS[sec] == COUNTER_NAMES[i].section)
                x.counter[n++] = static_cast<uint8_t>(i);
    }
    x.start[NSECTIONS] = static_cast<uint8_t>(n);
    if (n != std::size(COUNTER_NAMES))
        throw "a counter's section is not in SECTIONS";
    return x;
}
constexpr SectionIndex SECTION_INDEX = make_section_index();

// The scalable-mode reasons' slots follow their list (what lets the report
// read them without a search).
consteval bool sm_slots_in_list_order()
{
    for (unsigned i = 0; i < std::size(SM_FAULT_REASONS); i++)
        if (fault_slot(SM_FAULT_REASONS[i]) != SM_FAULT_SLOT0 + i)
            return false;
    return true;
}
static_assert(sm_slots_in_list_order());
static_assert(std::size(COUNTER_NAMES) < 256);

// Writes into one buffer through a pointer, growing it only when an item
// might not fit: no temporary strings, no per-character appends, numbers
// by std::to_chars (the same digits as printf's %llu).
class Json {
public:
    explicit Json(std::string &out) : out_(out)
    {
        out_.resize(std::max<size_t>(out_.capacity(), 8192));
    }
    ~Json() { out_.resize(pos_); }

    void open(const char *key, char bracket)
    {
        item(key, 1);
        buf_()[pos_++] = bracket;
        first_ = true;
    }
    void close(char bracket)
    {
        room(1);
        buf_()[pos_++] = bracket;
        first_ = false;
    }
    void num(const char *key, uint64_t v)
    {
        item(key, 20);
        auto r = std::to_chars(buf_() + pos_, buf_() + out_.size(), v);
        pos_ = static_cast<size_t>(r.ptr - buf_());
    }
    void boolean(const char *key, bool v) { raw(key, v ? "true" : "false"); }
    void str(const char *key, const char *v)
    {
        const size_t n = std::strlen(v);
        item(key, n + 2);
        char *p = buf_() + pos_;
        *p++ = '"';
        std::memcpy(p, v, n);
        p[n] = '"';
        pos_ += n + 2;
    }

private:
    std::string &out_;
    size_t pos_ = 0;
    bool first_ = true;

    char *buf_() { return out_.data(); }
    void room(size_t n)
    {
        if (n > out_.size() - pos_)
            out_.resize(std::max(2 * out_.size(), pos_ + n));
    }
    // The separator and `"key":` (if any), with room for `value` more bytes.
    void item(const char *key, size_t value)
    {
        const size_t k = key ? std::strlen(key) : 0;
        room(k + value + 4);
        char *p = buf_() + pos_;
        if (!first_)
            *p++ = ',';
        first_ = false;
        if (key) {
            *p++ = '"';
            std::memcpy(p, key, k);
            p += k;
            *p++ = '"';
            *p++ = ':';
        }
        pos_ = static_cast<size_t>(p - buf_());
    }
    void raw(const char *key, const char *v)
    {
        const size_t n = std::strlen(v);
        item(key, n);
        std::memcpy(buf_() + pos_, v, n);
        pos_ += n;
    }
};

}  // namespace

std::string Stats::to_json(const Gauges &g) const
{
    std::string out;
    to_json(g, out);
    return out;
}

void Stats::to_json(const Gauges &g, std::string &out) const
{
    // Every counter and fault slot summed once, over the shards a thread
    // was given (the others were never written).
    std::array<uint64_t, COUNTERS> total{};
    std::array<uint64_t, FAULT_SLOTS> fault_total{};
    const unsigned shards =
        static_cast<unsigned>(std::min<uint64_t>(threads_.load(std::memory_order_acquire), SHARDS));
    for (unsigned sh = 0; sh < shards; sh++) {
        for (unsigned c = 0; c < COUNTERS; c++)
            total[c] += since_reset(shards_[sh], base_[sh], c, false);
        for (unsigned r = 0; r < FAULT_SLOTS; r++)
            fault_total[r] += since_reset(shards_[sh], base_[sh], r, true);
    }

    out.clear();
    Json j(out);
    // The counters COUNTER_NAMES places in section `sec`.
    auto counters = [&](unsigned sec) {
        for (unsigned k = SECTION_INDEX.start[sec]; k < SECTION_INDEX.start[sec + 1]; k++) {
            const unsigned i = SECTION_INDEX.counter[k];
            j.num(COUNTER_NAMES[i].key, total[i]);
        }
    };
    // An object `key` holding section `sec`'s counters.
    auto counter_object = [&](const char *key, unsigned sec) {
        j.open(key, '{');
        counters(sec);
        j.close('}');
    };
    // A cache's object: its gauge `entries`, then section `sec`'s counters.
    auto cache_object = [&](const char *key, unsigned sec, uint64_t entries) {
        j.open(key, '{');
        j.num("entries", entries);
        counters(sec);
        j.close('}');
    };
    // The fault counts of reasons first..last, named.
    auto reason_range = [&](VtdFaultReason first, VtdFaultReason last) {
        for (unsigned r = first; r <= last; r++) {
            const auto reason = static_cast<VtdFaultReason>(r);
            j.num(fault_reason_name(reason), fault_total[fault_slot(reason)]);
        }
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

    counter_object("translate", section("translate"));
    cache_object("iotlb", section("iotlb"), g.iotlb_entries);
    counter_object("iova", section("iova"));
    cache_object("context_cache", section("context_cache"), g.context_entries);

    j.open("faults", '{');
    counters(section("faults"));
    j.open("by_reason", '{');
    reason_range(VTD_FR_ROOT_ENTRY_P, VTD_FR_INTERRUPT_ADDR);
    reason_range(VTD_FR_IR_REQ_RSVD, VTD_FR_IR_PID_INV);
    for (unsigned i = 0; i < std::size(SM_FAULT_REASONS); i++)
        j.num(fault_reason_name(SM_FAULT_REASONS[i]), fault_total[SM_FAULT_SLOT0 + i]);
    j.close('}');
    j.close('}');

    j.open("invalidations", '{');
    counter_object("context", section("invalidations/context"));
    counter_object("iotlb", section("invalidations/iotlb"));
    counter_object("pasid_iotlb", section("invalidations/pasid_iotlb"));
    counter_object("pasid_cache", section("invalidations/pasid_cache"));
    counters(section("invalidations"));
    counter_object("register_based", section("invalidations/register_based"));
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
    counters(section("queue"));
    counter_object("waits", section("queue/waits"));
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
    counters(section("scalable"));
    counter_object("pgtt", section("scalable/pgtt"));
    counter_object("first_stage", section("scalable/first_stage"));
    j.close('}');

    counter_object("replay", section("replay"));
    counter_object("pages", section("pages"));
    counter_object("device_tlb", section("device_tlb"));
    counter_object("notifications", section("notifications"));
    counter_object("pasid_cache", section("pasid_cache"));

    j.open("interrupt_remapping", '{');
    counters(section("interrupt_remapping"));
    counter_object("remappable", section("interrupt_remapping/remappable"));
    counter_object("compatibility", section("interrupt_remapping/compatibility"));
    j.open("blocked_by_reason", '{');
    reason_range(VTD_FR_IR_REQ_RSVD, VTD_FR_IR_PID_INV);
    j.close('}');
    j.open("iec", '{');
    j.num("capacity", g.iec_capacity);
    j.num("entries", g.iec_entries);
    counters(section("interrupt_remapping/iec"));
    j.close('}');
    j.open("sources", '[');
    for (unsigned ci = 0; ci < sources_.size(); ci++) {
        SourceChunk *chunk = sources_[ci].load(std::memory_order_acquire);
        if (!chunk)
            continue;
        const SourceStats *all = chunk->s.data();     // no checked operator[] per entry
        for_each_seen(chunk->seen, [&](unsigned i) {  // in source-id order
            const SourceStats &s = all[i];
            if (!s.seen.load(std::memory_order_relaxed))
                return;
            j.open(nullptr, '{');
            j.num("sid", ci * SOURCE_CHUNK + i);
            j.num("remapped", s.remapped.load());
            j.num("passed_through", s.passed.load());
            j.num("blocked", s.blocked.load());
            j.close('}');
        });
    }
    j.close(']');
    j.close('}');

    j.open("domains", '[');
    for (unsigned bi = 0; bi < blocks_.size(); bi++) {
        const DomainBlock *block = blocks_[bi].load(std::memory_order_acquire);
        if (!block)
            continue;
        const std::atomic<DomainStats *> *all = block->d.data();
        for_each_seen(block->seen, [&](unsigned i) {  // in domain-id order
            const DomainStats *p = all[i].load(std::memory_order_acquire);
            if (!p || !p->seen.load(std::memory_order_relaxed))
                return;
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
        });
    }
    j.close(']');
    j.close('}');
}

}  // namespace viommu::vtd
