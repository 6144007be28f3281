// SPDX-License-Identifier: GPL-2.0-or-later
// Replaying a recorded DMA stream (docs/trace-format.rst, "Replay").
//
// Each recorded CPU's events become a stream of transactions; simulated
// CPU k replays stream k mod R (R: recorded CPUs that map or unmap) as
// replica k div R.  Between two operations a CPU works for the time the
// recording spent outside every map, unmap, flush, invalidation and idle
// period of that CPU, so the recording's own IOMMU time is not replayed
// as work.  A stream runs its first transaction once (a recording from
// the simulator holds the ring fills there), then the rest over and over;
// replica j of J enters that rest j/J of the way through, so replicas do
// not repeat each other's operations in step.
#include "trace_workload.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <queue>
#include <tuple>

namespace viommu::sim {

namespace {

using trace::Event;
using trace::Op;

constexpr uint64_t mask_bits(unsigned bits)
{
    return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// One mapping of the recording: mapped on one stream, unmapped (or not) on one.
struct Mapping {
    unsigned map_stream = 0;
    int unmap_stream = -1;  // -1: still mapped when the recording ended
    uint64_t unmap_ts = 0;
    uint64_t bytes = 0;
    uint8_t dev = 0;
};

// One operation of a recorded stream.
struct Item {
    enum Kind : uint8_t { map, unmap, txn, work } kind;
    uint32_t mapping = 0;  // map, unmap
    Nanos gap = 0;         // the recording's non-IOMMU time before it
    uint64_t ts = 0;
};

// One replayable step, before the replica is known.
struct Entry {
    Step step;
    Nanos gap = 0;
    int post_stream = -1;  // MAP_POST: the stream (of this replica) that completes it
};
using Txn = std::vector<Entry>;

struct Stream {
    std::vector<Txn> txns;
};

class TraceReplay final : public Workload {
public:
    TraceReplay(WorkloadInfo info, unsigned recorded, unsigned prefix, std::vector<Stream> full,
                std::vector<Stream> partial)
        : Workload(std::move(info)), r_(recorded), prefix_(prefix), full_(std::move(full)),
          partial_(std::move(partial)), pos_(info_.cpus, 0),
          live_(info_.cpus, std::vector<bool>(info_.slots_per_cpu, false))
    {
        replicas_ = (info_.cpus + r_ - 1) / r_;
    }

    void setup(unsigned, std::vector<Step> &) override {}

    void next(unsigned cpu, std::vector<Step> &out) override
    {
        unsigned r = cpu % r_, j = cpu / r_;
        bool whole = (j + 1) * r_ <= info_.cpus;
        const Stream &s = whole ? full_[r] : partial_[r];
        const size_t len = s.txns.size();
        // the first transaction once, then the rest over and over, replica
        // j from j/J of the way through it
        size_t pre = prefix_ < len ? prefix_ : 0, body = len - pre;
        uint64_t n = pos_[cpu]++;
        size_t i = n < pre ? size_t(n) : pre + size_t((n - pre + (j * body) / replicas_) % body);
        std::vector<bool> &live = live_[cpu];
        for (const Entry &e : s.txns[i]) {
            if (e.gap)
                out.push_back(work_step(e.gap));
            Step st = e.step;
            switch (st.kind) {
            case VIOMMU_SIM_WORK:
                continue;
            case VIOMMU_SIM_MAP_POST:
                st.arg = j * r_ + unsigned(e.post_stream);
                break;
            case VIOMMU_SIM_MAP:
                // a slot still mapped where the stream starts over (or
                // where a replica joins it) is completed first
                if (live[st.arg])
                    out.push_back(unmap_step(st.arg));
                live[st.arg] = true;
                break;
            case VIOMMU_SIM_UNMAP:
                if (!live[st.arg])
                    continue;  // mapped before this replica's start
                live[st.arg] = false;
                break;
            }
            out.push_back(st);
        }
        if (out.empty())
            out.push_back(work_step(0));
    }

private:
    unsigned r_, prefix_, replicas_ = 1;
    std::vector<Stream> full_, partial_;
    std::vector<uint64_t> pos_;
    std::vector<std::vector<bool>> live_;
};

std::string at(const std::string &name, const Event &e)
{
    return name + ":" + std::to_string(e.line) + ": ";
}

}  // namespace

std::unique_ptr<Workload> create_trace_workload(const Params &p, std::string *error)
{
    if (p.trace.empty()) {
        if (error)
            *error = "--workload trace: needs --trace FILE";
        return nullptr;
    }
    // A run creates its workload more than once (the checks, the no-IOMMU
    // baseline, the run): a file is read each time, but what is not a
    // regular file (a pipe) can be read only once, so that is kept.
    std::error_code ec;
    if (std::filesystem::is_regular_file(p.trace, ec)) {
        auto t = trace::read_file(p.trace, error);
        return t ? create_trace_workload(p, *t, p.trace, error) : nullptr;
    }
    static std::mutex lock;
    static std::map<std::string, trace::Trace> read;
    std::lock_guard g(lock);
    auto it = read.find(p.trace);
    if (it == read.end()) {
        auto t = trace::read_file(p.trace, error);
        if (!t)
            return nullptr;
        it = read.emplace(p.trace, std::move(*t)).first;
    }
    return create_trace_workload(p, it->second, p.trace, error);
}

std::unique_ptr<Workload> create_trace_workload(const Params &p, const trace::Trace &t,
                                                const std::string &name, std::string *error)
{
    auto fail = [&](std::string m) -> std::unique_ptr<Workload> {
        if (error)
            *error = std::move(m);
        return nullptr;
    };
    if (t.header.side != "cpu")
        return fail(name + ": a device-side trace (side=" + t.header.side +
                    ") holds no CPU's map and unmap stream to replay; "
                    "scripts/trace/viommu-trace stats counts what it holds");
    const bool by_txn = !t.header.unit.empty();

    // the recorded CPUs that map or unmap, numbered densely in CPU order
    std::map<int32_t, unsigned> stream_of;
    for (const Event &e : t.events)
        if (trace::is_mapping_op(e.op))
            stream_of.emplace(e.cpu, 0);
    if (stream_of.empty())
        return fail(name + ": no map or unmap records: nothing to replay");
    unsigned nstreams = 0;
    for (auto &[cpu, s] : stream_of)
        s = nstreams++;

    // devices, in order of first appearance
    WorkloadInfo info;
    std::map<std::string, uint8_t> dev_of;
    auto device = [&](const Event &e, std::string *err) -> int {
        auto it = dev_of.find(e.dev);
        if (it == dev_of.end()) {
            if (dev_of.size() == 255) {
                *err = at(name, e) + "more than 255 devices";
                return -1;
            }
            it = dev_of.emplace(e.dev, uint8_t(dev_of.size())).first;
            unsigned idx = it->second;
            info.devices.push_back({e.dev.empty() ? "unknown" : e.dev,
                                    e.has_mask ? e.mask : mask_bits(p.dma_mask_bits),
                                    p.bus == "pci", idx, idx});
        } else if (e.has_mask && e.op == Op::map) {
            info.devices[it->second].dma_mask = e.mask;  // the latest dma_set_mask wins
        }
        return it->second;
    };

    // Per stream: its items with their gaps; mappings paired by (device,
    // IOVA range) in timestamp order over all CPUs.
    std::vector<std::vector<Item>> items(nstreams);
    std::vector<Mapping> maps;
    // Each CPU's events in their order, the CPUs merged by when a map took
    // its IOVA (by its end) and an unmap gave one back (from its start;
    // unmaps first on ties), so an IOVA freed on one CPU and taken on
    // another pairs as it happened.
    std::vector<size_t> order;
    {
        std::map<int32_t, std::vector<size_t>> per_cpu;
        for (size_t i = 0; i < t.events.size(); i++)
            per_cpu[t.events[i].cpu].push_back(i);
        auto key = [&](size_t i) {
            const Event &e = t.events[i];
            return std::tuple{e.op == Op::map ? e.ts + (e.has_dur ? e.dur : 0) : e.ts,
                              e.op == Op::unmap ? 0 : 1, e.cpu};
        };
        using Head = std::pair<std::tuple<uint64_t, int, int32_t>, std::pair<int32_t, size_t>>;
        std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
        for (auto &[cpu, list] : per_cpu)
            heads.push({key(list[0]), {cpu, 0}});
        while (!heads.empty()) {
            auto [k, where] = heads.top();
            heads.pop();
            const auto &list = per_cpu[where.first];
            order.push_back(list[where.second]);
            if (where.second + 1 < list.size())
                heads.push({key(list[where.second + 1]), {where.first, where.second + 1}});
        }
    }
    std::map<int32_t, uint64_t> busy_until;                 // per recorded CPU
    std::map<std::pair<uint8_t, uint64_t>, uint32_t> live;  // (device, iova) -> mapping
    std::map<uint32_t, uint64_t> mapped_line;
    uint64_t before_recording = 0;
    std::string err;
    for (size_t oi : order) {
        const Event &e = t.events[oi];
        if (e.cpu < 0)
            continue;
        auto bu = busy_until.find(e.cpu);
        Nanos gap = 0;
        if (bu == busy_until.end())
            bu = busy_until.emplace(e.cpu, e.ts).first;
        else if (e.ts > bu->second)
            gap = e.ts - bu->second;
        bu->second = std::max(bu->second, e.ts + (e.has_dur ? e.dur : 0));
        auto st = stream_of.find(e.cpu);
        std::vector<Item> *list = st == stream_of.end() ? nullptr : &items[st->second];
        if (!list)
            continue;  // a CPU that never maps: its flushes are not replayed
        if (e.op == Op::txn) {
            if (by_txn)
                list->push_back({Item::txn, 0, gap, e.ts});
            else if (gap)
                list->push_back({Item::work, 0, gap, e.ts});
            continue;
        }
        if (!trace::is_mapping_op(e.op)) {
            if (gap)
                list->push_back({Item::work, 0, gap, e.ts});
            continue;
        }
        if (!e.has_iova)
            return fail(at(name, e) + std::string(trace::op_name(e.op)) +
                        " without iova=: the replay pairs each unmap with its map by IOVA");
        int dev = device(e, &err);
        if (dev < 0)
            return fail(err);
        const uint64_t lo = e.iova, hi = e.iova + e.size;
        if (hi < lo)
            return fail(at(name, e) + "iova + size wraps around");
        if (e.op == Op::map) {
            auto next = live.lower_bound({uint8_t(dev), lo});
            if (next != live.end() && next->first.first == dev && next->first.second < hi)
                return fail(at(name, e) + "map of IOVA " + std::to_string(lo) +
                            " overlaps a live mapping (line " +
                            std::to_string(mapped_line[next->second]) +
                            ", not unmapped): an IOVA live twice");
            if (next != live.begin()) {
                auto prev = std::prev(next);
                if (prev->first.first == dev && prev->first.second + maps[prev->second].bytes > lo)
                    return fail(at(name, e) + "map overlaps a live mapping (line " +
                                std::to_string(mapped_line[prev->second]) +
                                ", not unmapped): an IOVA live twice");
            }
            uint32_t id = uint32_t(maps.size());
            maps.push_back({st->second, -1, 0, e.size, uint8_t(dev)});
            live.emplace(std::pair{uint8_t(dev), lo}, id);
            mapped_line[id] = e.line;
            list->push_back({Item::map, id, gap, e.ts});
            continue;
        }
        // unmap: every live mapping that starts inside [lo, hi)
        auto it = live.lower_bound({uint8_t(dev), lo});
        if (it != live.begin()) {
            auto prev = std::prev(it);
            if (prev->first.first == dev && prev->first.second + maps[prev->second].bytes > lo)
                return fail(at(name, e) + "unmap cuts a mapping (line " +
                            std::to_string(mapped_line[prev->second]) + ") in two");
        }
        bool any = false;
        while (it != live.end() && it->first.first == dev && it->first.second < hi) {
            Mapping &m = maps[it->second];
            if (it->first.second + m.bytes > hi)
                return fail(at(name, e) + "unmap cuts a mapping (line " +
                            std::to_string(mapped_line[it->second]) + ") in two");
            m.unmap_stream = int(st->second);
            m.unmap_ts = e.ts;
            list->push_back({Item::unmap, it->second, any ? 0 : gap, e.ts});
            any = true;
            it = live.erase(it);
        }
        if (!any) {
            before_recording++;  // mapped before the recording began
            if (gap)
                list->push_back({Item::work, 0, gap, e.ts});
        }
    }
    if (maps.empty())
        return fail(name + ": no map records (each of its " + std::to_string(before_recording) +
                    " unmaps is of a mapping made before the recording): nothing to replay");

    const unsigned ncpus = p.cpus;
    const unsigned partial_n = ncpus % nstreams;  // streams of the last, partial replica

    // One variant: the streams of a replica in which only streams < present
    // exist.  A mapping whose completing stream is absent is unmapped by its
    // own stream at the recorded time of the unmap.
    unsigned max_slots = 1;
    auto build = [&](unsigned present) {
        std::vector<Stream> out(nstreams);
        for (unsigned r = 0; r < present; r++) {
            std::vector<Item> list;
            // the unmaps moved here from absent streams, by timestamp
            std::vector<Item> moved;
            for (const Item &it : items[r])
                if (it.kind == Item::map) {
                    const Mapping &m = maps[it.mapping];
                    if (m.unmap_stream >= 0 && unsigned(m.unmap_stream) >= present)
                        moved.push_back({Item::unmap, it.mapping, 0, m.unmap_ts});
                }
            std::stable_sort(moved.begin(), moved.end(),
                             [](const Item &a, const Item &b) { return a.ts < b.ts; });
            size_t mi = 0;
            for (const Item &it : items[r]) {
                while (mi < moved.size() && moved[mi].ts < it.ts)
                    list.push_back(moved[mi++]);
                list.push_back(it);
            }
            while (mi < moved.size())
                list.push_back(moved[mi++]);

            std::vector<uint32_t> slot_of(maps.size(), ~0u);
            std::vector<uint32_t> free_slots;
            uint32_t next_slot = 0;
            Stream &s = out[r];
            Txn cur;
            auto end_txn = [&] {
                s.txns.push_back(std::move(cur));
                cur.clear();
            };
            for (const Item &it : list) {
                const Mapping *m = it.kind <= Item::unmap ? &maps[it.mapping] : nullptr;
                bool local = m && (m->unmap_stream < 0 || unsigned(m->unmap_stream) == r ||
                                   unsigned(m->unmap_stream) >= present);
                switch (it.kind) {
                case Item::work:
                    cur.push_back({work_step(0), it.gap, -1});
                    break;
                case Item::txn:
                    if (it.gap)
                        cur.push_back({work_step(0), it.gap, -1});
                    end_txn();
                    break;
                case Item::map:
                    if (local) {
                        uint32_t slot;
                        if (!free_slots.empty()) {
                            slot = free_slots.back();
                            free_slots.pop_back();
                        } else {
                            slot = next_slot++;
                        }
                        slot_of[it.mapping] = slot;
                        cur.push_back({map_step(slot, m->bytes, m->dev), it.gap, -1});
                    } else {
                        cur.push_back(
                            {map_post_step(0, m->bytes, m->dev), it.gap, m->unmap_stream});
                    }
                    if (!by_txn)
                        end_txn();
                    break;
                case Item::unmap:
                    if (m->map_stream == r) {
                        uint32_t slot = slot_of[it.mapping];
                        free_slots.push_back(slot);
                        cur.push_back({unmap_step(slot), it.gap, -1});
                    } else if (m->map_stream < present) {
                        cur.push_back({unmap_mailbox_step(1), it.gap, -1});
                    } else if (it.gap) {
                        cur.push_back({work_step(0), it.gap, -1});  // its map was not replayed
                    }
                    break;
                }
            }
            if (!cur.empty() || s.txns.empty()) {
                if (s.txns.empty() || cur.empty())
                    end_txn();
                else
                    for (Entry &e : cur)
                        s.txns.back().push_back(e);
            }
            max_slots = std::max(max_slots, next_slot);
        }
        return out;
    };
    std::vector<Stream> full = build(nstreams);
    std::vector<Stream> partial = partial_n ? build(partial_n) : std::vector<Stream>{};
    if (ncpus < nstreams)
        full = partial;  // one partial replica only

    info.name = "trace";
    info.unit = by_txn ? t.header.unit : "maps";
    info.cpus = ncpus;
    info.granule_shift = p.page_size == 65536 ? 16 : p.page_size == 16384 ? 14 : 12;
    info.slots_per_cpu = max_slots;
    info.largest_ring = max_slots;
    info.device_ns = p.device_ns_per_op;
    info.once_ns = p.cpu_ns_once;
    info.physical_devices = unsigned(info.devices.size());
    // the measured window: after the recording's own warm-up (or --warmup),
    // as many transactions per CPU as the streams hold after it on average
    // (or --ops-per-cpu)
    unsigned warmup = p.warmup >= 0 ? unsigned(p.warmup) : unsigned(t.header.window);
    Nanos work = 0;
    uint64_t ops = 0, after = 0;
    const unsigned replayed = std::min(nstreams, ncpus);
    for (unsigned r = 0; r < replayed; r++) {
        size_t len = full[r].txns.size();
        after += len > warmup ? len - warmup : len;
        for (const Txn &tx : full[r].txns) {
            for (const Entry &e : tx)
                work += e.gap;
            ops++;
        }
    }
    if (p.given.count("duration") && work == 0)
        return fail(name + ": no time passes between the operations of any stream, so "
                           "--duration would never end: give --ops-per-cpu");
    info.warmup_per_cpu = warmup;
    if (p.given.count("ops-per-cpu") || p.given.count("duration")) {
        info.measure_per_cpu = p.ops_per_cpu;
    } else {
        info.measure_per_cpu = unsigned(std::max<uint64_t>(1, (after + replayed / 2) / replayed));
        // At no more CPUs than recorded, each replays one pass of its own
        // stream: the recording's window.  A count shared by all CPUs
        // would let the CPU whose stream ends first start it over (often
        // with the recording's idle lead-in, seconds long) while another
        // CPU's stream is cut short, so the window ran past the span.
        // Replicas enter their stream part way and start it over anyway;
        // they share the count, as the modelled workloads do.
        for (unsigned cpu = 0; ncpus <= nstreams && cpu < ncpus; cpu++) {
            size_t len = full[cpu].txns.size();
            info.measure_each.push_back(
                unsigned(std::max<size_t>(1, len > warmup ? len - warmup : len)));
        }
    }
    info.work_ns = ops ? work / ops : 0;
    // every CPU's clock stays far from wrapping: its warm-up and window at
    // the longest transaction of any stream (a shared count may all go to one CPU)
    Nanos longest = 0;
    for (const auto *streams : {&full, &partial})
        for (const Stream &s : *streams)
            for (const Txn &tx : s.txns) {
                Nanos w = 0;
                for (const Entry &e : tx)
                    w += e.gap;
                longest = std::max(longest, w);
            }
    uint64_t window_ops = p.given.count("duration")   ? kMaxOpsPerCpu
                          : info.measure_each.empty() ? uint64_t{info.measure_per_cpu} * ncpus
                                                      : *std::max_element(info.measure_each.begin(),
                                                                          info.measure_each.end());
    constexpr Nanos max_clock = Nanos{1} << 62;
    if (longest && (uint64_t{warmup} + window_ops) > max_clock / longest)
        return fail(name + ": a transaction of " + std::to_string(longest) + " ns, run " +
                    std::to_string(uint64_t{warmup} + window_ops) +
                    " times by one CPU (warm-up and window), takes the virtual clock past 2^62 "
                    "ns: give a smaller --warmup or --ops-per-cpu");
    return std::make_unique<TraceReplay>(std::move(info), nstreams, 1, std::move(full),
                                         std::move(partial));
}

}  // namespace viommu::sim
