// SPDX-License-Identifier: GPL-2.0-or-later
// What every variant shares: argument checking, the live-range registry
// that turns bad frees into an error instead of cache corruption, the
// per-operation counters and the JSON export.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cstddef>

#include "live_set.hpp"
#include "variants.hpp"

namespace viommu::iova {

const char *status_name(Status s)
{
    switch (s) {
    case Status::ok:
        return "ok";
    case Status::no_space:
        return "no_space";
    case Status::bad_size:
        return "bad_size";
    case Status::bad_limit:
        return "bad_limit";
    case Status::not_allocated:
        return "not_allocated";
    case Status::bad_variant:
        return "bad_variant";
    case Status::busy:
        return "busy";
    }
    return "unknown";
}

Allocator::Allocator(std::string_view name, Env &env, const Config &cfg)
    : name_(name), env_(env), cfg_(cfg), ncpus_(cfg.ncpus), dma32_(pfn_32bit(cfg.granule_shift)),
      stats_(cfg.ncpus, cfg.stats)
{
    if (cfg_.check_frees)
        live_ = std::make_unique<LiveSet>(ncpus_);
}

Allocator::~Allocator() = default;

void Allocator::note_alloc(unsigned c, Pfn pfn)
{
    if (stats_.enabled())
        stats_.hist(c).alloc_addr.add(pfn << cfg_.granule_shift);
}

AllocResult Allocator::alloc(uint64_t pages, Pfn limit, bool flush_rcache)
{
    unsigned c = cpu();
    stats_.add(c, Counter::alloc_calls);
    if (!pages || pages > cfg_.end_pfn - cfg_.start_pfn) {
        stats_.add_always(c, Counter::bad_size);
        return {Status::bad_size, 0};
    }
    if (limit < cfg_.start_pfn) {
        stats_.add_always(c, Counter::bad_limit);
        return {Status::bad_limit, 0};
    }
    limit = std::min(limit, cfg_.end_pfn - 1);
    AllocResult r = do_alloc(pages, limit, flush_rcache);
    if (!r.ok()) {
        stats_.add(c, Counter::alloc_failed);
        return r;
    }
    if (live_ && !live_->insert(r.pfn, pages)) {
        // Handing out a live range twice is an allocator bug: fail loudly
        // in tests rather than corrupt the caller.
        __builtin_trap();
    }
    note_alloc(c, r.pfn);
    return r;
}

bool Allocator::accept_free(unsigned c, Pfn pfn, uint64_t pages)
{
    stats_.add(c, Counter::free_calls);
    if (!pages || pfn < cfg_.start_pfn || pfn >= cfg_.end_pfn ||
        (live_ && !live_->erase(pfn, pages))) {
        stats_.add_always(c, Counter::bad_free);
        return false;
    }
    return true;
}

Status Allocator::free(Pfn pfn, uint64_t pages)
{
    if (!accept_free(cpu(), pfn, pages))
        return Status::not_allocated;
    do_free(pfn, pages);
    return Status::ok;
}

size_t Allocator::free_accepted(std::span<const Range> ranges, bool found)
{
    unsigned c = cpu();
    size_t refused = 0;
    std::vector<Range> accepted;  // only once one was refused
    for (size_t i = 0; i < ranges.size(); i++) {
        if (!accept_free(c, ranges[i].pfn, ranges[i].pages)) {
            if (!refused++)
                accepted.assign(ranges.begin(), ranges.begin() + i);
        } else if (refused) {
            accepted.push_back(ranges[i]);
        }
    }
    std::span<const Range> ok = refused ? std::span<const Range>(accepted) : ranges;
    if (found)
        do_free_found_batch(ok);
    else
        do_free_batch(ok);
    return refused;
}

size_t Allocator::free_batch(std::span<const Range> ranges)
{
    return free_accepted(ranges, false);
}

size_t Allocator::free_found_batch(std::span<const Range> ranges)
{
    return free_accepted(ranges, true);
}

Status Allocator::lookup(Pfn pfn, uint64_t pages)
{
    if (pages && pfn >= cfg_.start_pfn && pfn < cfg_.end_pfn && do_lookup(pfn))
        return Status::ok;
    stats_.add_always(cpu(), Counter::bad_free);
    return Status::not_allocated;
}

Status Allocator::reserve(Pfn lo, Pfn hi)
{
    unsigned c = cpu();
    if (hi < lo) {
        stats_.add_always(c, Counter::bad_size);
        return Status::bad_size;
    }
    if (lo < cfg_.start_pfn || hi >= cfg_.end_pfn) {
        stats_.add_always(c, Counter::bad_limit);
        return Status::bad_limit;
    }
    if (!do_reserve(lo, hi)) {
        stats_.add_always(c, Counter::bad_reserve);
        return Status::busy;
    }
    stats_.add(c, Counter::reserves);
    return Status::ok;
}

void Allocator::flush_caches()
{
    stats_.add(cpu(), Counter::cache_flushes);
    do_flush_caches();
}

void Allocator::extra_json(std::string &) const {}

void Allocator::reset_stats()
{
    stats_.reset();
    for (const InstrumentedLock *l : locks())
        const_cast<InstrumentedLock *>(l)->reset_stats();
}

namespace {

void append_number(std::string &out, uint64_t v)
{
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, r.ptr);
}

}  // namespace

void json_member(std::string &out, std::string_view key, uint64_t v)
{
    out += '"';
    out += key;
    out += "\":";
    append_number(out, v);
    out += ',';
}

namespace {

template <unsigned N>
void json_hist(std::string &out, std::string_view key, const Log2Histogram<N> &h)
{
    out += '"';
    out += key;
    out += "\":{";
    json_member(out, "count", h.count);
    json_member(out, "sum", h.sum);
    json_member(out, "max", h.max);
    // Trailing empty buckets are left out.
    unsigned last = N;
    while (last && !h.buckets[last - 1])
        last--;
    out += "\"log2_buckets\":[";
    for (unsigned i = 0; i < last; i++) {
        if (i)
            out += ',';
        append_number(out, h.buckets[i]);
    }
    out += "]},";
}

void close_object(std::string &out)
{
    if (out.back() == ',')
        out.back() = '}';
    else
        out += '}';
}

}  // namespace

std::string Allocator::stats_json() const
{
    std::string out;
    stats_json(out);
    return out;
}

void Allocator::stats_json(std::string &out) const
{
    out.clear();
    out += "{\"schema\":\"viommu-iova-stats/1\",\"variant\":\"";
    out += name_;
    out += "\",";
    json_member(out, "ncpus", ncpus_);
    json_member(out, "granule_shift", cfg_.granule_shift);
    json_member(out, "stats_enabled", stats_.enabled());

    out += "\"counters\":{";
    for (unsigned i = 0; i < static_cast<unsigned>(Counter::count_); i++)
        json_member(out, counter_name(static_cast<Counter>(i)),
                    stats_.total(static_cast<Counter>(i)));
    close_object(out);
    out += ',';

    OpHistograms h = stats_.merged_hist();
    out += "\"histograms\":{";
    json_hist(out, "nodes_per_alloc", h.nodes_per_alloc);
    json_hist(out, "nodes_per_free", h.nodes_per_free);
    json_hist(out, "alloc_addr_bytes", h.alloc_addr);
    close_object(out);
    out += ',';

    // Locks of one class (e.g. every CPU's cpu_rcache) are merged, in name
    // order.  A site no lock of the class was taken at has empty
    // histograms: nothing to merge, and it is left out.
    std::vector<const InstrumentedLock *> locks = this->locks();
    std::stable_sort(locks.begin(), locks.end(),
                     [](auto *a, auto *b) { return a->name() < b->name(); });
    out += "\"locks\":{";
    for (size_t first = 0, end; first < locks.size(); first = end) {
        const std::string &name = locks[first]->name();
        end = first + 1;
        while (end < locks.size() && locks[end]->name() == name)
            end++;
        out += '"';
        out += name;
        out += "\":{";
        json_member(out, "instances", end - first);
        out += "\"sites\":{";
        for (unsigned s = 0; s < static_cast<unsigned>(Site::count_); s++) {
            SiteLockStats st;
            for (size_t i = first; i < end; i++)
                locks[i]->add_to(st, static_cast<Site>(s));
            if (!st.acquisitions)
                continue;
            out += '"';
            out += site_name(static_cast<Site>(s));
            out += "\":{";
            json_member(out, "acquisitions", st.acquisitions);
            json_member(out, "contended", st.contended);
            json_hist(out, "wait_ns", st.wait_ns);
            json_hist(out, "hold_ns", st.hold_ns);
            close_object(out);
            out += ',';
        }
        close_object(out);
        out += ',';
        close_object(out);
        out += ',';
    }
    close_object(out);
    out += ',';

    out += "\"variant_state\":{";
    extra_json(out);
    close_object(out);
    out += '}';
}

}  // namespace viommu::iova
