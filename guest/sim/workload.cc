// SPDX-License-Identifier: GPL-2.0-or-later
// The workload kinds.  Every figure of a setup is a parameter (params.hpp);
// docs/workloads.rst says what each kind maps per operation.
#include "workload.hpp"

#include <algorithm>
#include <array>

#include "trace_workload.hpp"

namespace viommu::sim {

namespace {

constexpr uint64_t mask_bits(unsigned bits)
{
    return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// A ring of slots [base, base + size) used round-robin.  A slot still
// mapped when the ring comes back to it is unmapped first: that is the
// completion (TX clean-up, I/O completion) of the oldest request, on this
// CPU or posted to the CPU that takes the completion interrupt.
class Ring {
public:
    Ring(uint32_t base, uint32_t size) : base_(base), used_(size, false) {}
    uint32_t size() const { return static_cast<uint32_t>(used_.size()); }

    void cycle(std::vector<Step> &out, uint64_t bytes, uint8_t dev, unsigned self,
               unsigned completion_cpu)
    {
        uint32_t slot = base_ + pos_;
        if (used_[pos_])
            out.push_back(completion(slot, self, completion_cpu));
        out.push_back(map_step(slot, bytes, dev));
        used_[pos_] = true;
        pos_ = (pos_ + 1) % size();
    }

    // Unmaps every mapped slot, oldest first: a NAPI poll's TX clean-up.
    void complete_all(std::vector<Step> &out, unsigned self, unsigned completion_cpu)
    {
        for (uint32_t i = 0; i < size(); i++) {
            uint32_t p = (pos_ + i) % size();
            if (!used_[p])
                continue;
            out.push_back(completion(base_ + p, self, completion_cpu));
            used_[p] = false;
        }
    }

private:
    static Step completion(uint32_t slot, unsigned self, unsigned completion_cpu)
    {
        return completion_cpu == self ? unmap_step(slot) : unmap_post_step(slot, completion_cpu);
    }

    uint32_t base_;
    uint32_t pos_ = 0;
    std::vector<bool> used_;
};

// Non-IOMMU work of one operation: the whole ns in [mean/2, 3*mean/2), so
// CPUs do not march in lock-step, and their mean is @mean for an odd one
// too (1 ns is always 1 ns).
Step jittered_work(Rng &rng, Nanos mean)
{
    return work_step((mean + 1) / 2 + (mean ? rng.next() % mean : 0));
}

const SizeMix::Alt &pick(const SizeMix &mix, Rng &rng)
{
    if (mix.alts.size() == 1)
        return mix.alts[0];
    uint64_t r = rng.next() % mix.total_weight();
    for (const SizeMix::Alt &a : mix.alts) {
        if (r < a.weight)
            return a;
        r -= a.weight;
    }
    return mix.alts.back();
}

// A queue a CPU submits to: its ring of outstanding mappings, the
// (device, domain) pair they go to and the CPU that completes them.
struct Queue {
    Ring ring;
    uint8_t endpoint;
    unsigned completion_cpu;
};

struct CpuState {
    Rng rng;
    Ring rx;
    uint8_t rx_endpoint = 0;
    std::vector<Queue> queues;  // nic: the TX queue; block: the queues this CPU owns
    uint64_t ops = 0;
};

class Generic final : public Workload {
public:
    Generic(const Params &p, WorkloadInfo info, std::vector<unsigned> irq_cpus)
        : Workload(std::move(info)), p_(p), tx_(p.effective_tx_bytes()), irq_(std::move(irq_cpus))
    {
        const unsigned n = info_.cpus;
        const unsigned doms = p.domains_per_device;
        auto endpoint = [&](unsigned dev, unsigned queue) {
            return uint8_t(dev * doms + queue % doms);
        };
        auto completion = [&](unsigned self, unsigned queue) {
            if (p.irq_affinity == "same")
                return self;
            if (p.irq_affinity == "single")
                return irq_[0];
            return irq_[queue % irq_.size()];
        };
        for (unsigned c = 0; c < n; c++) {
            CpuState s{Rng(p.seed * 0x100000001b3ull + c), Ring(0, 0), 0, {}, 0};
            if (p.workload == "block") {
                // every (device, queue) pair; a CPU owns those with index
                // = its number mod CPUs, or shares one when there are fewer
                unsigned qpd = p.queues_per_device ? std::min(p.queues_per_device, n) : n;
                unsigned total = p.devices * qpd;
                uint32_t base = 0;
                auto add = [&](unsigned g, unsigned depth) {
                    unsigned dev = g / qpd, q = g % qpd;
                    s.queues.push_back({Ring(base, depth), endpoint(dev, q), completion(c, q)});
                    base += depth;
                };
                if (total >= n) {
                    for (unsigned g = c; g < total; g += n)
                        add(g, p.iodepth);
                } else {
                    unsigned g = c % total;
                    unsigned sharers = n / total + (g < n % total ? 1 : 0);
                    add(g, std::max(1u, p.iodepth / sharers));
                }
                info_.slots_per_cpu = std::max(info_.slots_per_cpu, base);
                info_.largest_ring = std::max(info_.largest_ring, base);
            } else if (p.workload == "map-bench") {
                unsigned dev = c % p.devices;
                s.queues.push_back({Ring(0, 1), endpoint(dev, c), c});
                info_.slots_per_cpu = 1;
            } else {
                unsigned qpd = p.queues_per_device ? std::min(p.queues_per_device, n) : n;
                unsigned q = c % qpd;
                unsigned rx_dev, tx_dev;
                if (p.workload == "forward") {
                    unsigned pair = c % (p.devices / 2);
                    rx_dev = 2 * pair;
                    tx_dev = 2 * pair + 1;
                } else {
                    rx_dev = tx_dev = c % p.devices;
                }
                s.rx = Ring(0, p.ring_entries);
                s.rx_endpoint = endpoint(rx_dev, q);
                unsigned cc = completion(c, q);
                s.queues.push_back({Ring(p.ring_entries, p.tx_window), endpoint(tx_dev, q), cc});
                if (p.tx_window == 0)
                    mailbox_ = true;
                info_.slots_per_cpu = p.ring_entries + p.tx_window;
                info_.largest_ring = std::max(p.ring_entries, p.tx_window);
            }
            for (const Queue &qu : s.queues)
                if (qu.completion_cpu != c)
                    mailbox_ = true;
            cpus_.push_back(std::move(s));
        }
        if (info_.warmup_per_cpu == ~0u)
            info_.warmup_per_cpu = info_.largest_ring;
    }

    void setup(unsigned cpu, std::vector<Step> &out) override
    {
        if (!p_.setup_fill || p_.workload == "map-bench")
            return;
        CpuState &s = cpus_[cpu];
        if (p_.workload == "block") {
            for (Queue &q : s.queues)
                for (uint32_t i = 0; i < q.ring.size(); i++)
                    q.ring.cycle(out, pick(p_.block_size, s.rng).bytes[0], q.endpoint, cpu,
                                 q.completion_cpu);
            return;
        }
        for (uint32_t i = 0; i < s.rx.size(); i++)
            s.rx.cycle(out, p_.rx_buffer_bytes, s.rx_endpoint, cpu, cpu);
    }

    void next(unsigned cpu, std::vector<Step> &out) override
    {
        CpuState &s = cpus_[cpu];
        if (mailbox_)
            out.push_back(unmap_mailbox_step());  // completions queued for this CPU
        if (p_.workload == "map-bench") {
            Queue &q = s.queues[0];
            for (uint64_t b : pick(p_.block_size, s.rng).bytes) {
                out.push_back(map_step(0, b, q.endpoint));
                out.push_back(jittered_work(s.rng, info_.work_ns));
                out.push_back(unmap_step(0));
            }
            return;
        }
        if (p_.workload == "block") {
            Queue &q = s.queues[s.ops++ % s.queues.size()];
            for (uint64_t b : pick(p_.block_size, s.rng).bytes)
                q.ring.cycle(out, b, q.endpoint, cpu, q.completion_cpu);
            out.push_back(jittered_work(s.rng, info_.work_ns));
            return;
        }
        Queue &tx = s.queues[0];
        if (p_.napi_budget && s.ops++ % p_.napi_budget == 0)
            tx.ring.complete_all(out, cpu, tx.completion_cpu);
        // forward: the frame received is the one sent on; a small one is
        // copied and its RX buffer reused in place, still mapped
        const SizeMix::Alt *frame = p_.rx_copy_bytes ? &pick(tx_, s.rng) : nullptr;
        if (s.rx.size() && !(frame && frame->total() <= p_.rx_copy_bytes))
            s.rx.cycle(out, p_.rx_buffer_bytes, s.rx_endpoint, cpu, cpu);  // buffer refilled
        out.push_back(jittered_work(s.rng, info_.work_ns));
        for (uint64_t b : (frame ? *frame : pick(tx_, s.rng)).bytes) {
            if (tx.ring.size())
                tx.ring.cycle(out, b, tx.endpoint, cpu, tx.completion_cpu);
            else
                out.push_back(map_post_step(tx.completion_cpu, b, tx.endpoint));
        }
    }

private:
    Params p_;
    SizeMix tx_;
    std::vector<unsigned> irq_;
    std::vector<CpuState> cpus_;
    bool mailbox_ = false;
};

// the modelled kinds; "trace" (a replay, trace_workload.hpp) needs a file
constexpr std::array<std::string_view, 6> workload_names{"block",     "nic",       "forward",
                                                         "map-bench", "memcached", "nginx"};

std::string unit_of(std::string_view w)
{
    if (w == "block")
        return "IOs";
    if (w == "map-bench")
        return "map+unmaps";
    if (w == "memcached")
        return "transactions";
    if (w == "nginx")
        return "requests";
    return "packets";
}

}  // namespace

std::span<const std::string_view> Workload::names()
{
    return workload_names;
}

std::unique_ptr<Workload> Workload::create(const Params &p, std::string *error)
{
    std::string e;
    if (!p.validate(&e)) {
        if (error)
            *error = e;
        return nullptr;
    }
    if (p.workload == "trace")
        return create_trace_workload(p, error);
    WorkloadInfo info;
    info.name = p.workload;
    info.unit = unit_of(p.workload);
    info.cpus = p.active_cpus();
    info.granule_shift = p.page_size == 65536 ? 16 : p.page_size == 16384 ? 14 : 12;
    info.warmup_per_cpu = p.warmup >= 0 ? unsigned(p.warmup) : ~0u;
    info.measure_per_cpu = p.ops_per_cpu;
    info.work_ns = p.cpu_ns_per_op;
    info.once_ns = p.cpu_ns_once;
    info.device_ns = p.device_ns_per_op;
    info.physical_devices = p.devices;
    for (unsigned d = 0; d < p.devices; d++)
        for (unsigned k = 0; k < p.domains_per_device; k++)
            info.devices.push_back({"dev" + std::to_string(d) +
                                        (p.domains_per_device > 1 ? "." + std::to_string(k) : ""),
                                    mask_bits(p.dma_mask_bits), p.bus == "pci",
                                    d * p.domains_per_device + k, d});
    auto irq = p.irq_cpu_list(&e);
    if (irq.empty()) {
        if (error)
            *error = e;
        return nullptr;
    }
    return std::make_unique<Generic>(p, std::move(info), std::move(irq));
}

std::unique_ptr<Workload> Workload::create(std::string_view name, unsigned ncpus, uint64_t seed)
{
    Params p;
    if (!p.set("workload", name, nullptr))
        return nullptr;
    if (ncpus && !p.set("cpus", std::to_string(ncpus), nullptr))
        return nullptr;
    p.seed = seed;
    return create(p);
}

}  // namespace viommu::sim
