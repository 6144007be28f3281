// SPDX-License-Identifier: GPL-2.0-or-later
// The workload models.  Every figure below is explained, with its source,
// in docs/workloads.rst; keep the two in step.
#include "workload.hpp"

#include <algorithm>
#include <array>

namespace viommu::sim {

namespace {

constexpr uint64_t mask_bits(unsigned bits)
{
    return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// A ring of slots [base, base + size) used round-robin.  A slot still
// mapped when the ring comes back to it is unmapped first: that is the
// completion (TX clean-up, I/O completion) of the oldest request.
class Ring {
public:
    Ring(uint32_t base, uint32_t size) : base_(base), used_(size, false) {}
    uint32_t size() const { return static_cast<uint32_t>(used_.size()); }

    // Recycle the oldest slot and map @bytes into it.
    void cycle(std::vector<Step> &out, uint64_t bytes, uint8_t dev)
    {
        uint32_t slot = base_ + pos_;
        if (used_[pos_])
            out.push_back(unmap_step(slot));
        out.push_back(map_step(slot, bytes, dev));
        used_[pos_] = true;
        pos_ = (pos_ + 1) % size();
    }
    // Map every slot (the ring filled at interface up).
    void fill(std::vector<Step> &out, uint64_t bytes, uint8_t dev)
    {
        for (uint32_t i = 0; i < size(); i++)
            cycle(out, bytes, dev);
    }

private:
    uint32_t base_;
    uint32_t pos_ = 0;
    std::vector<bool> used_;
};

struct CpuState {
    Rng rng;
    Ring rx, tx;
};

// Non-IOMMU work of one transaction: uniform in [mean/2, 3*mean/2), so
// CPUs do not march in lock-step (the mean is the calibrated figure).
Step jittered_work(Rng &rng, Nanos mean)
{
    return work_step(mean / 2 + (mean ? rng.next() % mean : 0));
}

// The common shape: an RX ring refilled once per transaction, and TX (or
// I/O) mappings completed through a ring.  Subclasses say what one
// transaction maps.
class RingWorkload : public Workload {
protected:
    RingWorkload(WorkloadInfo info, uint64_t seed, uint32_t rx_slots, uint32_t tx_slots)
        : Workload(std::move(info))
    {
        info_.slots_per_cpu = rx_slots + tx_slots;
        info_.largest_ring = std::max(rx_slots, tx_slots);
        for (unsigned c = 0; c < info_.cpus; c++)
            cpus_.push_back(
                {Rng(seed * 0x100000001b3ull + c), Ring(0, rx_slots), Ring(rx_slots, tx_slots)});
    }
    std::vector<CpuState> cpus_;
};

// seed 000: memcached over an XL710, memslap defaults.
class Memcached final : public RingWorkload {
public:
    Memcached(unsigned ncpus, uint64_t seed)
        : RingWorkload({.name = "memcached",
                        .unit = "transactions",
                        .default_cpus = 16,
                        .cpus = ncpus ? ncpus : 16,
                        .granule_shift = 12,
                        .slots_per_cpu = 0,
                        .warmup_per_cpu = 600,
                        .work_ns = 14'692,
                        .devices = {{"xl710", mask_bits(64), true}}},
                       seed, 512, 7)
    {
    }

    void setup(unsigned cpu, std::vector<Step> &out) override { cpus_[cpu].rx.fill(out, 2048, 0); }
    void next(unsigned cpu, std::vector<Step> &out) override
    {
        CpuState &s = cpus_[cpu];
        s.rx.cycle(out, 2048, 0);  // request received, buffer refilled
        out.push_back(jittered_work(s.rng, info_.work_ns));
        if (s.rng.chance(10)) {
            s.tx.cycle(out, 64, 0);  // SET: "STORED" reply
        } else {
            s.tx.cycle(out, 128, 0);   // GET: headers + key
            s.tx.cycle(out, 1024, 0);  // the 1024-byte value
        }
    }
};

// seed 004: OVS forwarding 64-byte packets between two X540 ports.
class Forwarding final : public RingWorkload {
public:
    Forwarding(unsigned ncpus, uint64_t seed)
        : RingWorkload({.name = "forwarding",
                        .unit = "packets",
                        .default_cpus = 16,
                        .cpus = ncpus ? ncpus : 16,
                        .granule_shift = 12,
                        .slots_per_cpu = 0,
                        .warmup_per_cpu = 1500,
                        .measure_per_cpu = 2000,
                        .work_ns = 1'600,
                        .devices = {{"x540-in", mask_bits(64), true, 0},
                                    {"x540-out", mask_bits(64), true, 1}}},
                       seed, 512, 64)
    {
    }

    void setup(unsigned cpu, std::vector<Step> &out) override { cpus_[cpu].rx.fill(out, 2048, 0); }
    void next(unsigned cpu, std::vector<Step> &out) override
    {
        CpuState &s = cpus_[cpu];
        s.rx.cycle(out, 2048, 0);
        out.push_back(jittered_work(s.rng, info_.work_ns));
        s.tx.cycle(out, 64, 1);
    }
};

// seed 002: nginx, 16 workers, 1 KB responses; TX completions handled on
// the CPUs that own the NIC queue interrupts.
class Nginx final : public RingWorkload {
public:
    Nginx(unsigned ncpus, uint64_t seed)
        : RingWorkload({.name = "nginx",
                        .unit = "requests",
                        .default_cpus = 16,
                        .cpus = ncpus ? ncpus : 16,
                        .granule_shift = 12,
                        .slots_per_cpu = 0,
                        .warmup_per_cpu = 1000,
                        .work_ns = 20'000,
                        .devices = {{"ice", mask_bits(64), true}}},
                       seed, 512, 0),
          irq_cpus_(info_.cpus >= 4 ? info_.cpus / 4 : 1)
    {
    }

    void setup(unsigned cpu, std::vector<Step> &out) override { cpus_[cpu].rx.fill(out, 2048, 0); }
    void next(unsigned cpu, std::vector<Step> &out) override
    {
        CpuState &s = cpus_[cpu];
        out.push_back(unmap_mailbox_step());  // TX completions queued for this CPU
        s.rx.cycle(out, 2048, 0);
        out.push_back(jittered_work(s.rng, info_.work_ns));
        uint32_t irq_cpu = cpu % irq_cpus_;
        out.push_back(map_post_step(irq_cpu, 256, 0));   // skb head: HTTP headers
        out.push_back(map_post_step(irq_cpu, 1024, 0));  // the 1 KB body
    }

private:
    unsigned irq_cpus_;
};

// seed 003: NVMe 4 KiB I/O at queue depth 128 per CPU.
class Nvme final : public RingWorkload {
public:
    Nvme(unsigned ncpus, uint64_t seed)
        : RingWorkload({.name = "nvme",
                        .unit = "IOs",
                        .default_cpus = 16,
                        .cpus = ncpus ? ncpus : 16,
                        .granule_shift = 12,
                        .slots_per_cpu = 0,
                        .warmup_per_cpu = 300,
                        .work_ns = 4'000,
                        .devices = {{"nvme", mask_bits(64), true}}},
                       seed, 0, 128)
    {
    }

    void setup(unsigned cpu, std::vector<Step> &out) override { cpus_[cpu].tx.fill(out, 4096, 0); }
    void next(unsigned cpu, std::vector<Step> &out) override
    {
        CpuState &s = cpus_[cpu];
        s.tx.cycle(out, 4096, 0);  // oldest I/O completes, a new one is queued
        out.push_back(jittered_work(s.rng, info_.work_ns));
    }
};

// seed 001 (Nate Watterson): 64 KiB pages, a CX4 whose per-CPU RX rings
// fill the 32-bit IOVA space at interface up.
class Nic64k final : public RingWorkload {
public:
    Nic64k(unsigned ncpus, uint64_t seed)
        : RingWorkload({.name = "nic64k",
                        .unit = "packets",
                        .default_cpus = 32,
                        .cpus = ncpus ? ncpus : 32,
                        .granule_shift = 16,
                        .slots_per_cpu = 0,
                        .warmup_per_cpu = 2560,
                        .work_ns = 2'000,
                        .devices = {{"cx4", mask_bits(64), true}}},
                       seed, 2048, 64)
    {
    }

    void setup(unsigned cpu, std::vector<Step> &out) override { cpus_[cpu].rx.fill(out, 65536, 0); }
    void next(unsigned cpu, std::vector<Step> &out) override
    {
        CpuState &s = cpus_[cpu];
        s.rx.cycle(out, 65536, 0);
        out.push_back(jittered_work(s.rng, info_.work_ns));
        s.tx.cycle(out, 1514, 0);
    }
};

// seed 001 (hns_dsaf): a driver mapping thousands of buffers at probe,
// above 32 bits (a platform device: no 32-bit-first attempt).
class Probe final : public RingWorkload {
public:
    Probe(unsigned ncpus, uint64_t seed)
        : RingWorkload({.name = "probe",
                        .unit = "maps",
                        .default_cpus = 1,
                        .cpus = ncpus ? ncpus : 1,
                        .granule_shift = 12,
                        .slots_per_cpu = 0,
                        .warmup_per_cpu = 0,
                        .measure_per_cpu = 8192,
                        .work_ns = 100,
                        .devices = {{"hns-dsaf", mask_bits(48), false}}},
                       seed, 0, 8192)
    {
    }

    void setup(unsigned, std::vector<Step> &) override {}
    void next(unsigned cpu, std::vector<Step> &out) override
    {
        CpuState &s = cpus_[cpu];
        s.tx.cycle(out, 4096, 0);
        out.push_back(jittered_work(s.rng, info_.work_ns));
    }
};

constexpr std::array<std::string_view, 6> workload_names{"memcached", "forwarding", "nginx",
                                                         "nvme",      "nic64k",     "probe"};

}  // namespace

std::span<const std::string_view> Workload::names()
{
    return workload_names;
}

std::unique_ptr<Workload> Workload::create(std::string_view name, unsigned ncpus, uint64_t seed)
{
    if (ncpus > 256)
        return nullptr;
    if (name == "memcached")
        return std::make_unique<Memcached>(ncpus, seed);
    if (name == "forwarding")
        return std::make_unique<Forwarding>(ncpus, seed);
    if (name == "nginx")
        return std::make_unique<Nginx>(ncpus, seed);
    if (name == "nvme")
        return std::make_unique<Nvme>(ncpus, seed);
    if (name == "nic64k")
        return std::make_unique<Nic64k>(ncpus, seed);
    if (name == "probe")
        return std::make_unique<Probe>(ncpus, seed);
    return nullptr;
}

}  // namespace viommu::sim
